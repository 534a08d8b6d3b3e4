"""tileiras and the on-disk cache (cubins, the warm-start index, autotune results)."""
from __future__ import annotations

from typing import NamedTuple, Optional

from . import cache, tileiras
from .tileiras import ToolchainError, available, find_toolchain, max_bytecode_version


class Cubin(NamedTuple):
    """A compiled cubin, whether it came from the disk cache, and its key there (None when the
    disk cache is off)."""

    cubin: bytes
    hit: bool
    key: Optional[str]


def compile_cubin(bytecode: bytes, arch: str, *, opt_level: int = 3, lineinfo: bool = True,
                  name: str = "kernel", use_cache: bool = True) -> Cubin:
    """Bytecode -> cubin through the disk cache. On a miss the key's cross-process lock is held
    while tileiras runs, so processes compiling the same kernel at once run it once: the others
    wait, then read the cubin it wrote."""
    disk: Optional[cache.DiskCache] = cache.current() if use_cache else None
    if disk is None:
        return Cubin(_run(bytecode, arch, opt_level, lineinfo, name), False, None)
    flags = " ".join(tileiras.tileiras_flags(opt_level, lineinfo))
    key = cache.make_key(bytecode, arch, flags, tileiras.version_text())
    hit = disk.get(key)
    if hit is not None:
        return Cubin(hit, True, key)
    # wait at most as long as the holder's tileiras may run; then compile anyway
    with disk.compiling(key, wait=tileiras.time_limit() + 5.0):
        hit = disk.get(key)
        if hit is not None:
            return Cubin(hit, True, key)           # another process compiled it meanwhile
        cubin = _run(bytecode, arch, opt_level, lineinfo, name)
        disk.put(key, cubin)
    return Cubin(cubin, False, key)


def _run(bytecode, arch, opt_level, lineinfo, name) -> bytes:
    return tileiras.compile_bytecode(bytecode, arch, opt_level=opt_level, lineinfo=lineinfo,
                                     name=name)


__all__ = ["cache", "tileiras", "ToolchainError", "available", "find_toolchain",
           "max_bytecode_version", "compile_cubin", "Cubin"]
