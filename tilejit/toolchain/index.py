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

import hashlib
import json
import os
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
        try:
            data = p.read_bytes()
        except OSError:
            return None
        n = len(MAGIC)
        payload = data[n + 32:]
        try:
            if data[:n] != MAGIC or hashlib.sha256(payload).digest() != data[n:n + 32]:
                raise ValueError("checksum")
            head, cubin = payload.split(b"\n", 1)
            meta = json.loads(head)
            result = (str(meta["symbol"]), tuple(meta["slots"]), cubin)
            if not cubin:
                raise ValueError("empty cubin")
        except (ValueError, KeyError, TypeError):
            try:
                p.unlink()          # corrupted: drop it; the caller compiles and writes it again
            except OSError:
                pass
            return None
        try:
            os.utime(p)
        except OSError:
            pass
        return result

    def put(self, key: str, symbol: str, slots, cubin: bytes) -> None:
        """Store an entry; failures (read-only directory, full disk) are ignored."""
        payload = json.dumps({"symbol": symbol, "slots": list(slots)}).encode() + b"\n" + cubin
        _cache.write_atomic(self._path(key), MAGIC + hashlib.sha256(payload).digest() + payload)

    def entries(self):
        """``(mtime, size, path)`` of every entry."""
        out = []
        for p in self.dir.glob("*/*.tjx"):
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, p))
        return out


def current() -> Optional[Index]:
    """The index of the active cache directory, or None when the disk cache is disabled."""
    d = _cache.usable_dir()
    return None if d is None else Index(d)


__all__ = ["Index", "current", "MAGIC"]
