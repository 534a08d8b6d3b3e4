"""On-disk cache of cubins, keyed by everything that determines tileiras' output.

Key: sha256 over a schema tag, the full ``tileiras --version`` text, the target arch, the flags and
the bytecode. The bytecode already contains everything the front end decided, so a hit is always
valid. Entries are ``<dir>/<k[:2]>/<k>.cubin`` with a header holding the payload's sha256; a
corrupted or truncated entry is ignored, removed and rebuilt. One bound covers everything tilejit stores
there (cubins, the warm-start index, autotune results; ``toolchain.layout``): the least recently
used entries go first, and index entries whose cubin went are dropped with it. Failures to read
or write the cache never fail a compile.

A process about to run tileiras for a key holds that key's lock file (``fcntl.flock``), so
processes compiling the same kernel at once (ranks of one job) run tileiras once: the others wait
and read its cubin. A lock dies with its process; a wait longer than the tileiras timeout gives
up and compiles anyway.

``TILEJIT_CACHE_DIR`` sets the location (``0``, ``off``, ``none`` or empty disables it);
``TILEJIT_CACHE_SIZE`` the bound (default 1 GiB).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional, Tuple

from .. import envvars
from . import layout

try:
    import fcntl
except ImportError:         # Windows: no cross-process compile lock (each process compiles)
    fcntl = None

SCHEMA = b"tilejit-cubin-v1\0"
MAGIC = b"TJCUBIN1"
DEFAULT_SIZE = envvars.VARIABLES["TILEJIT_CACHE_SIZE"].default
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
    if envvars.raw("TILEJIT_CACHE_DIR") is not None:
        return envvars.get("TILEJIT_CACHE_DIR")
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
        created = not os.path.isdir(directory)
        os.makedirs(directory, exist_ok=True)
        layout.adopt(directory, created)
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
    if why:
        return f"{d} (NOT USABLE: {why}; caching is off)"
    if not layout.is_cache(d):
        return (f"{d} (it also holds other files and has no {layout.MARKER}: `cache clear` "
                f"refuses it; give TILEJIT_CACHE_DIR a directory of its own)")
    return d


def max_size() -> int:
    """``TILEJIT_CACHE_SIZE`` in bytes."""
    return envvars.get("TILEJIT_CACHE_SIZE")


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
        """``(mtime, size, path)`` of every cubin."""
        return [(e.mtime, e.size, e.path) for e in layout.scan(self.dir) if e.kind == "cubin"]

    def size(self) -> int:
        """Bytes of everything stored (cubins, index entries, autotune results)."""
        return sum(e.size for e in layout.scan(self.dir) if e.kind in layout.STORED)

    def evict(self) -> None:
        """Hold everything stored to the size bound, least recently used first."""
        with _EVICT_LOCK:
            trim(self.dir, self.limit)

    def clear(self) -> Tuple[int, int]:
        """Remove everything tilejit stored here; see :func:`clear`."""
        return clear(self.dir)

    @contextlib.contextmanager
    def compiling(self, key: str, wait: float):
        """Hold ``key``'s cross-process compile lock for the block (yields True), or yield False
        when there is none to take (no fcntl, unwritable directory) or ``wait`` seconds passed.
        The holder compiles and puts the cubin; a waiter then finds it with :meth:`get`."""
        fd = _open_lock(self._path(key).with_suffix(".lock")) if fcntl is not None else None
        if fd is None:
            yield False
            return
        held = False
        try:
            held = _flock(fd, wait)
            yield held
        finally:
            if held:                # the cubin is written (or the compile failed): let it go
                _unlink_if_same(fd, self._path(key).with_suffix(".lock"))
            os.close(fd)            # closing releases the lock


def _open_lock(path: Path) -> Optional[int]:
    try:
        return _in_own_dir(path, lambda: os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError:
        return None


def _in_own_dir(path: Path, make):
    """``make()``, a file's creation in ``path``'s folder, made first; once more if a
    :func:`trim` removed the folder, empty, in between."""
    for attempt in (0, 1):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return make()
        except FileNotFoundError:
            if attempt:
                raise


def _flock(fd: int, wait: float) -> bool:
    """Take an exclusive flock on ``fd`` within ``wait`` seconds (polling: flock itself cannot
    time out, and signals would not reach other threads)."""
    deadline = time.monotonic() + wait
    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:          # a file system without locks: compile without one
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _unlink_if_same(fd: int, path: Path) -> None:
    """Remove the lock file while still holding it, unless another process already replaced it
    (a waiter that then takes the old, unlinked file re-reads the cache and finds the cubin)."""
    try:
        if os.fstat(fd).st_ino == os.stat(path).st_ino:
            os.unlink(path)
    except OSError:
        pass


def _lock_is_free(path: Path) -> bool:
    """Whether nobody holds the lock file ``path`` now."""
    if fcntl is None:
        return True
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def trim(root, limit: int) -> int:
    """Remove the least recently used of everything stored under ``root`` (cubins, index
    entries, autotune results) until it fits in ``limit`` bytes, then the index entries whose
    cubin is gone, stale temporary files, abandoned locks and the folders left empty. Returns
    the bytes removed."""
    remove_stale_temps(Path(root))
    entries = layout.scan(root)
    stored = sorted((e for e in entries if e.kind in layout.STORED), key=lambda e: e.mtime)
    total = sum(e.size for e in stored)
    freed = 0
    cubins_gone = False
    for e in stored:
        if total - freed <= limit:
            break
        try:
            e.path.unlink()
        except OSError:
            continue
        freed += e.size
        cubins_gone |= e.kind == "cubin"
    if cubins_gone:
        from .index import Index
        freed += Index(str(root)).drop_orphans()
    now = time.time()
    for e in entries:
        if e.kind == "lock" and now - e.mtime >= STALE_TEMP_AGE and _lock_is_free(e.path):
            discard(e.path)
    layout.remove_empty_dirs(root)      # writers make their folder again (_in_own_dir)
    return freed


def clear(root) -> Tuple[int, int]:
    """Remove every file tilejit stored under ``root``: ``(files, bytes)`` removed. Other files
    stay. Raises NotACacheError, removing nothing, when ``root`` is not a tilejit cache
    (``layout.is_cache``): no marker, and files tilejit did not write at its top level."""
    root = Path(root)
    if not root.is_dir():
        return 0, 0
    foreign = layout.foreign_top_level(root)
    if foreign and not layout.has_marker(root):
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise layout.NotACacheError(
            f"{root} is not a tilejit cache directory (it has no {layout.MARKER} written by "
            f"tilejit, and holds files tilejit did not write: {shown}); nothing was deleted. "
            f"Check TILEJIT_CACHE_DIR ({_dir_origin()}): it should name a directory of its own")
    n = size = 0
    for e in layout.scan(root):
        if e.kind == "lock" and not _lock_is_free(e.path):
            continue                # a compile is running: leave its lock alone
        try:
            e.path.unlink()
        except OSError:
            continue
        n += 1
        size += e.size
    layout.remove_empty_dirs(root)
    return n, size


def _dir_origin() -> str:
    raw = envvars.raw("TILEJIT_CACHE_DIR")
    return f"set to {raw!r}" if raw is not None else "not set: this is the default directory"


# --- checksummed records, shared with the warm-start index ----------------------------------------
# A record is ``magic + sha256(payload) + payload``: a torn or foreign file fails the check.
def read_record(path: Path, magic: bytes, touch: bool = True) -> Optional[bytes]:
    """The payload of the record at ``path`` (marked as recently used unless ``touch`` is False),
    or None when it is missing; a corrupted or empty record is removed, so the caller rebuilds
    it."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    n = len(magic)
    payload = data[n + 32:]
    if data[:n] != magic or hashlib.sha256(payload).digest() != data[n:n + 32] or not payload:
        discard(path)
        return None
    if not touch:
        return payload
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


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place (readers never see
    a partial file); False, with nothing left behind, when the write fails."""
    tmp = None
    try:
        fd, tmp = _in_own_dir(path, lambda: tempfile.mkstemp(dir=path.parent, prefix=".tmp-"))
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
    """Remove tilejit's temporary files (``.tmp-*`` in its own directories) under ``root`` older
    than ``age`` seconds; returns how many."""
    now = time.time()
    n = 0
    for e in layout.scan(root):
        if e.kind == "temp" and now - e.mtime >= age:
            try:
                e.path.unlink()
                n += 1
            except OSError:
                continue
    return n


def current() -> Optional[DiskCache]:
    d = usable_dir()
    return None if d is None else DiskCache(d, max_size())
