"""What tilejit writes into its cache directory, and nothing else.

::

    CACHEDIR.TAG                    the marker (https://bford.info/cachedir/), naming tilejit
    <hh>/<key>.cubin                cubins (toolchain.cache); <hh> = the key's first two digits
    <hh>/<key>.lock                 held while one process compiles <key> (cross-process)
    index/<hh>/<key>.tjx            warm-start index entries (toolchain.index)
    autotune/<kernel>-<hash>.json   autotune results (tilejit.autotune)
    .tmp-*  .probe-*                files being written (renamed into place) / the usability probe

``clear`` and the size bound touch only files that match these names, so a directory shared with
other files (or set by mistake) never loses them. A directory counts as a tilejit cache when it
holds the marker, which tilejit writes when it creates the directory; a cache written by an
earlier tilejit (no marker) is recognized, and adopted, when everything at its top level has
these names. Anything else is refused by ``clear``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, NamedTuple, Optional

from ..errors import TileJitError

MARKER = "CACHEDIR.TAG"
MARKER_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
               "# This file is a cache directory tag created by tilejit (its compiled kernels).\n"
               "# For information about cache directory tags see https://bford.info/cachedir/\n")
_HEX2 = r"[0-9a-f]{2}"
_KEY = r"[0-9a-f]{64}"
_TEMP = r"\.tmp-[^/]*"
# kind -> pattern of the path relative to the cache root (``/``-separated)
KINDS = {
    "cubin": re.compile(rf"(?P<hh>{_HEX2})/(?P=hh)[0-9a-f]{{62}}\.cubin"),
    "lock": re.compile(rf"(?P<hh>{_HEX2})/(?P=hh)[0-9a-f]{{62}}\.lock"),
    "index": re.compile(rf"index/(?P<hh>{_HEX2})/(?P=hh)[0-9a-f]{{62}}\.tjx"),
    "autotune": re.compile(r"autotune/[A-Za-z_][A-Za-z0-9_]*-[0-9a-f]{20}\.json"),
    "temp": re.compile(rf"(?:{_HEX2}/|index/{_HEX2}/|autotune/)?{_TEMP}|\.probe-[^/]*"),
}
#: the kinds counted against TILEJIT_CACHE_SIZE and listed by ``python -m tilejit cache``
STORED = ("cubin", "index", "autotune")
_TOP_DIR = re.compile(rf"{_HEX2}|index|autotune")
_TOP_FILE = re.compile(rf"{re.escape(MARKER)}|{_TEMP}|\.probe-[^/]*")


class NotACacheError(TileJitError, ValueError):
    """A directory that is not a tilejit cache was about to be cleared."""


class Entry(NamedTuple):
    kind: str
    rel: str            # the path relative to the cache root, '/'-separated
    path: Path
    size: int
    mtime: float


def kind_of(rel: str) -> Optional[str]:
    """The kind of the file at ``rel`` (relative to the root), or None when tilejit did not
    write it."""
    if rel == MARKER:
        return "marker"
    for kind, pattern in KINDS.items():
        if pattern.fullmatch(rel):
            return kind
    return None


def has_marker(root) -> bool:
    """Whether ``root`` holds a cache directory tag written by tilejit."""
    try:
        with open(os.path.join(root, MARKER), encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith("Signature: 8a477f597d28d172789f06886806bc55") and "tilejit" in head


def foreign_top_level(root) -> List[str]:
    """Names at the top of ``root`` that tilejit's layout does not have (directories end in /)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        if os.path.isdir(os.path.join(root, n)):
            if not _TOP_DIR.fullmatch(n):
                out.append(n + "/")
        elif not _TOP_FILE.fullmatch(n):
            out.append(n)
    return out


def is_cache(root) -> bool:
    """A tilejit cache: it has the marker, or (written by an earlier tilejit) only tilejit's
    names at its top level. A missing or empty directory is one too."""
    return has_marker(root) or not foreign_top_level(root)


def adopt(root, created: bool) -> None:
    """Write the marker into ``root`` when tilejit just created it, or when it holds nothing but
    tilejit's layout (empty, or a cache of an earlier tilejit). A directory with other files is
    left unmarked, so ``clear`` refuses it. Failures are ignored (the marker is advisory)."""
    if has_marker(root) or not (created or not foreign_top_level(root)):
        return
    from .cache import write_atomic
    write_atomic(Path(root) / MARKER, MARKER_TEXT.encode())


def scan(root) -> List[Entry]:
    """Every file tilejit wrote under ``root`` (other files are skipped, and directories that
    are not tilejit's are not entered)."""
    root = Path(root)
    out = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir if rel_dir else root)
        except OSError:
            continue
        with it:
            for e in it:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                try:
                    if e.is_dir(follow_symlinks=False):
                        if _tilejit_dir(rel):
                            stack.append(rel)
                        continue
                    kind = kind_of(rel)
                    if kind is None or kind == "marker" or e.is_symlink():
                        continue
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append(Entry(kind, rel, Path(e.path), st.st_size, st.st_mtime))
    return out


_DIRS = re.compile(rf"{_HEX2}|index|index/{_HEX2}|autotune")


def _tilejit_dir(rel: str) -> bool:
    return _DIRS.fullmatch(rel) is not None


def remove_empty_dirs(root) -> None:
    """Remove tilejit's own directories under ``root`` that are now empty."""
    root = Path(root)
    for sub in sorted((p for p in root.glob("index/*") if p.is_dir()), reverse=True) + \
            [root / "index", root / "autotune"] + [p for p in root.glob("??") if p.is_dir()]:
        rel = sub.relative_to(root).as_posix()
        if _tilejit_dir(rel):
            try:
                sub.rmdir()          # only succeeds when empty
            except OSError:
                pass


__all__ = ["MARKER", "KINDS", "STORED", "Entry", "NotACacheError", "kind_of", "has_marker",
           "foreign_top_level", "is_cache", "adopt", "scan", "remove_empty_dirs"]
