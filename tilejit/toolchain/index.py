"""The warm-start index: compiled kernels found by what produced them, without the front end.

The cubin cache (``toolchain.cache``) is keyed by bytecode, so reaching it needs the whole front
end (Numba typing, lowering, the bytecode writer): about 0.4 s per new process. The index is keyed
by everything that determines the bytecode instead (see ``compiler.index_key``) and stores what a
launch needs: the kernel symbol, its ABI slots and the key of its cubin in the cubin cache, plus
the kernel's name, signature and source line for ``python -m tilejit cache list``. A hit imports
no Numba; an entry whose cubin was evicted is a miss (and is removed).

Entries live in ``<cache dir>/index/<k[:2]>/<k>.tjx``: a magic, the SHA-256 of the payload, then
the payload (one JSON object). Writes are atomic (a temporary file renamed into place), so
processes starting together may race to write the same entry harmlessly; an entry that fails its
checksum is removed and rebuilt. ``TILEJIT_CACHE_DIR=0`` disables it with the rest of the disk
cache.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import cache as _cache

MAGIC = b"TJINDEX2"            # 2: the cubin is referenced by its key, no longer copied in
SUBDIR = "index"
_CUBIN_KEY = re.compile(r"[0-9a-f]{64}")


class Index:
    """A directory of index entries (thread- and process-safe through atomic renames)."""

    def __init__(self, directory: str):
        self.root = Path(directory)
        self.dir = self.root / SUBDIR

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.tjx"

    def get(self, key: str) -> Optional[Tuple[str, tuple, bytes]]:
        """``(symbol, slots, cubin)`` for ``key``, or None (missing, corrupted, or its cubin
        is gone)."""
        p = self._path(key)
        meta = self._read(p)
        if meta is None:
            return None
        cubin = _cache.DiskCache(str(self.root)).get(meta["cubin"])
        if cubin is None:
            _cache.discard(p)       # its cubin was evicted: the caller compiles both again
            return None
        return str(meta["symbol"]), tuple(meta["slots"]), cubin

    def put(self, key: str, symbol: str, slots, cubin_key: str, **about) -> None:
        """Store an entry pointing at the cubin cache's ``cubin_key``; ``about`` (kernel name,
        signature, target, source) is shown by ``python -m tilejit cache list``. Failures
        (read-only directory, full disk) are ignored."""
        meta = {"symbol": symbol, "slots": list(slots), "cubin": cubin_key, **about}
        _cache.write_record(self._path(key), MAGIC, json.dumps(meta).encode())

    @staticmethod
    def _read(path: Path, touch: bool = True) -> Optional[Dict]:
        payload = _cache.read_record(path, MAGIC, touch)
        if payload is None:
            return None
        try:
            meta = json.loads(payload)
            if not (isinstance(meta, dict) and isinstance(meta["symbol"], str)
                    and isinstance(meta["slots"], list)
                    and _CUBIN_KEY.fullmatch(meta["cubin"])):
                raise ValueError("malformed entry")
            return meta
        except (ValueError, KeyError, TypeError):
            _cache.discard(path)   # unreadable: drop it; the caller compiles and writes it again
            return None

    def entries(self) -> List[Tuple[Path, Dict]]:
        """``(path, metadata)`` of every readable entry."""
        out = []
        for p in sorted(self.dir.glob("*/*.tjx")):
            meta = self._read(p, touch=False)      # looking is not using (LRU)
            if meta is not None:
                out.append((p, meta))
        return out

    def drop_orphans(self) -> int:
        """Remove the entries whose cubin is no longer in the cache; returns the bytes freed."""
        freed = 0
        cubins = _cache.DiskCache(str(self.root))
        for p, meta in self.entries():
            if not cubins._path(meta["cubin"]).exists():
                try:
                    size = p.stat().st_size
                    p.unlink()
                    freed += size
                except OSError:
                    pass
        return freed


def current() -> Optional[Index]:
    """The index of the active cache directory, or None when the disk cache is disabled."""
    d = _cache.usable_dir()
    return None if d is None else Index(d)


__all__ = ["Index", "current", "MAGIC"]
