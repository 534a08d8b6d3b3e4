"""The warm-start index: compiled kernels found by what produced them, without the front end.

The cubin cache (``toolchain.cache``) is keyed by bytecode, so reaching it needs the whole front
end (Numba typing, lowering, the bytecode writer): about 0.4 s per new process. The index is keyed
by everything that determines the bytecode instead (see ``compiler.index_key``) and stores what a
launch needs: the kernel symbol, its ABI slots and the cubin. A hit imports no Numba.

Entries live in ``<cache dir>/index/<k[:2]>/<k>.tjx``: a magic, the SHA-256 of the payload, then
the payload (a JSON header line and the cubin). Writes are atomic (a temporary file renamed into
place), so processes starting together may race to write the same entry harmlessly; an entry
that fails its checksum is removed and rebuilt. ``TILEJIT_CACHE_DIR=0`` disables it with the rest
of the disk cache.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Tuple

from . import cache as _cache

MAGIC = b"TJINDEX1"
SUBDIR = "index"


class Index:
    """A directory of index entries (thread- and process-safe through atomic renames)."""

    def __init__(self, directory: str):
        self.dir = Path(directory) / SUBDIR

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.tjx"

    def get(self, key: str) -> Optional[Tuple[str, tuple, bytes]]:
        """``(symbol, slots, cubin)`` for ``key``, or None (missing or corrupted)."""
        p = self._path(key)
        payload = _cache.read_record(p, MAGIC)
        if payload is None:
            return None
        try:
            head, cubin = payload.split(b"\n", 1)
            meta = json.loads(head)
            if not cubin:
                raise ValueError("empty cubin")
            return str(meta["symbol"]), tuple(meta["slots"]), cubin
        except (ValueError, KeyError, TypeError):
            _cache.discard(p)       # unreadable: drop it; the caller compiles and writes it again
            return None

    def put(self, key: str, symbol: str, slots, cubin: bytes) -> None:
        """Store an entry; failures (read-only directory, full disk) are ignored."""
        payload = json.dumps({"symbol": symbol, "slots": list(slots)}).encode() + b"\n" + cubin
        _cache.write_record(self._path(key), MAGIC, payload)

    def entries(self):
        """``(mtime, size, path)`` of every entry."""
        return _cache.list_entries(self.dir, "*/*.tjx")


def current() -> Optional[Index]:
    """The index of the active cache directory, or None when the disk cache is disabled."""
    d = _cache.usable_dir()
    return None if d is None else Index(d)


__all__ = ["Index", "current", "MAGIC"]
