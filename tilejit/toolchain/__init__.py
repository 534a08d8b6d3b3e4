"""tileiras and the on-disk cubin cache."""
from __future__ import annotations

from typing import Optional

from . import cache, tileiras
from .tileiras import ToolchainError, available, find_toolchain, max_bytecode_version


def compile_cubin(bytecode: bytes, arch: str, *, opt_level: int = 3, lineinfo: bool = True,
                  name: str = "kernel", use_cache: bool = True) -> tuple:
    """Bytecode -> cubin through the disk cache. Returns ``(cubin, hit)``."""
    disk: Optional[cache.DiskCache] = cache.current() if use_cache else None
    key = None
    if disk is not None:
        flags = " ".join(tileiras.tileiras_flags(opt_level, lineinfo))
        key = cache.make_key(bytecode, arch, flags, tileiras.version_text())
        hit = disk.get(key)
        if hit is not None:
            return hit, True
    cubin = tileiras.compile_bytecode(bytecode, arch, opt_level=opt_level, lineinfo=lineinfo,
                                      name=name)
    if disk is not None:
        disk.put(key, cubin)
    return cubin, False


__all__ = ["cache", "tileiras", "ToolchainError", "available", "find_toolchain",
           "max_bytecode_version", "compile_cubin"]
