"""On-disk cache of cubins, keyed by everything that determines tileiras' output.

Key: sha256 over a schema tag, the full ``tileiras --version`` text, the target arch, the flags and
the bytecode. The bytecode already contains everything the front end decided, so a hit is always
valid. Entries are ``<dir>/<k[:2]>/<k>.cubin`` with a header holding the payload's sha256; a
corrupted or truncated entry is ignored, removed and rebuilt. The directory is bounded in size
(least recently used entries are evicted). Failures to read or write the cache never fail a
compile.

``TILEJIT_CACHE_DIR`` sets the location (``0``, ``off``, ``none`` or empty disables it);
``TILEJIT_CACHE_SIZE`` the bound in bytes (default 1 GiB).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

SCHEMA = b"tilejit-cubin-v1\0"
MAGIC = b"TJCUBIN1"
DEFAULT_SIZE = 1 << 30
_DISABLED = {"0", "off", "none", "false", ""}
# One lock for every DiskCache: current() makes a new instance per compile, so a per-instance lock
# would serialize nothing.
_EVICT_LOCK = threading.Lock()


def default_dir() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "tilejit", "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/tilejit")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "tilejit")


def cache_dir() -> Optional[str]:
    """The cache directory (``~`` expanded), or None when the disk cache is disabled."""
    env = os.environ.get("TILEJIT_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in _DISABLED else os.path.expanduser(env.strip())
    return default_dir()


_probed: dict = {}          # directory -> "" when usable, else why not
_probe_lock = threading.Lock()


def problem(directory: str) -> str:
    """Why ``directory`` cannot hold the cache ("" when it can): created if missing, then a file
    is written and removed. Checked once per directory and process."""
    with _probe_lock:
        why = _probed.get(directory)
        if why is None:
            why = _probed[directory] = _probe(directory)
            if why:
                print(f"tilejit: the cache directory {directory} is not usable ({why}); "
                      f"compiled kernels will not be cached on disk. Point TILEJIT_CACHE_DIR at "
                      f"a writable directory, or set it to 0 to turn the cache off",
                      file=sys.stderr)
    return why


def _probe(directory: str) -> str:
    try:
        os.makedirs(directory, exist_ok=True)
        fd, path = tempfile.mkstemp(dir=directory, prefix=".probe-")
        os.close(fd)
        os.unlink(path)
        return ""
    except OSError as e:
        return e.strerror or str(e)


def usable_dir() -> Optional[str]:
    """The cache directory when it is enabled and usable, else None."""
    d = cache_dir()
    return d if d is not None and not problem(d) else None


def describe() -> str:
    """The cache location for ``python -m tilejit info``."""
    d = cache_dir()
    if d is None:
        return "disabled (TILEJIT_CACHE_DIR=0)"
    why = problem(d)
    return f"{d} (NOT USABLE: {why}; caching is off)" if why else d


def max_size() -> int:
    try:
        return int(os.environ.get("TILEJIT_CACHE_SIZE", DEFAULT_SIZE))
    except ValueError:
        return DEFAULT_SIZE


def make_key(bytecode: bytes, arch: str, flags: str, compiler_version: str) -> str:
    h = hashlib.sha256(SCHEMA)
    for part in (compiler_version.encode(), arch.encode(), flags.encode(), bytecode):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


class DiskCache:
    """A directory of cubins. Thread-safe; process-safe through atomic renames."""

    def __init__(self, directory: str, limit: int = DEFAULT_SIZE):
        self.dir = Path(directory)
        self.limit = limit

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.cubin"

    def get(self, key: str) -> Optional[bytes]:
        return read_record(self._path(key), MAGIC)

    def put(self, key: str, cubin: bytes) -> None:
        if write_record(self._path(key), MAGIC, cubin):
            self.evict()

    def entries(self):
        return list_entries(self.dir, "*/*.cubin")

    def size(self) -> int:
        return sum(s for _, s, _ in self.entries())

    def evict(self) -> None:
        remove_stale_temps(self.dir)
        with _EVICT_LOCK:
            entries = self.entries()
            total = sum(s for _, s, _ in entries)
            if total <= self.limit:
                return
            for _, s, p in sorted(entries):
                try:
                    p.unlink()
                except OSError:
                    continue
                total -= s
                if total <= self.limit:
                    break

    def clear(self) -> None:
        remove_stale_temps(self.dir, age=0)
        for _, _, p in self.entries():
            try:
                p.unlink()
            except OSError:
                pass


# --- checksummed records, shared with the warm-start index ----------------------------------------
# A record is ``magic + sha256(payload) + payload``: a torn or foreign file fails the check.
def read_record(path: Path, magic: bytes) -> Optional[bytes]:
    """The payload of the record at ``path`` (marked as recently used), or None when it is missing;
    a corrupted or empty record is removed, so the caller rebuilds it."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    n = len(magic)
    payload = data[n + 32:]
    if data[:n] != magic or hashlib.sha256(payload).digest() != data[n:n + 32] or not payload:
        discard(path)
        return None
    try:
        os.utime(path)                            # mark as recently used (eviction is LRU)
    except OSError:
        pass
    return payload


def write_record(path: Path, magic: bytes, payload: bytes) -> bool:
    """Write a record atomically; False when it could not be written."""
    return write_atomic(path, magic + hashlib.sha256(payload).digest() + payload)


def discard(path: Path) -> None:
    """Remove a record that turned out unusable (failures ignored: a reader may race us)."""
    try:
        path.unlink()
    except OSError:
        pass


def list_entries(directory: Path, pattern: str):
    """``(mtime, size, path)`` of every file matching ``pattern`` below ``directory``."""
    out = []
    for p in directory.glob(pattern):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((st.st_mtime, st.st_size, p))
    return out


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place (readers never see
    a partial file); False, with nothing left behind, when the write fails."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


STALE_TEMP_AGE = 600.0       # seconds: an older temporary file belongs to a process that died


def remove_stale_temps(root: Path, age: float = STALE_TEMP_AGE) -> int:
    """Remove ``.tmp-*`` files under ``root`` older than ``age`` seconds; returns how many."""
    now = time.time()
    n = 0
    for p in Path(root).glob("**/.tmp-*"):
        try:
            if now - p.stat().st_mtime >= age:
                p.unlink()
                n += 1
        except OSError:
            continue
    return n


def current() -> Optional[DiskCache]:
    d = usable_dir()
    return None if d is None else DiskCache(d, max_size())
