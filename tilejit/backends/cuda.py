"""The CUDA backend: cubins loaded per device context, launched with one driver call."""
from __future__ import annotations

from ..errors import DriverError, KernelCacheError
from ..runtime.cuda_executable import CudaExecutable
from ..runtime.module import load_module_from_data


class CudaBackend:
    """Runs compiled kernels on NVIDIA GPUs."""

    name = "cuda"

    @staticmethod
    def target(device) -> str:
        """The architecture to compile for: the device's (``"sm_90"`` on an H100/H200)."""
        return device.arch

    @staticmethod
    def load(compiled, device) -> CudaExecutable:
        """Load ``compiled.cubin`` into ``device``'s context and return its launcher; a cubin
        from the disk cache that the driver refuses is a :class:`KernelCacheError`."""
        try:
            module = load_module_from_data(compiled.cubin, device, name=compiled.name)
        except DriverError as e:
            if not compiled.disk_hit:
                raise
            raise KernelCacheError(
                f"the kernel cache holds a cubin for '{compiled.name}' ({compiled.target}) that "
                f"the driver cannot load: {e}. Remove the cache with `python -m tilejit cache "
                f"clear` (or set TILEJIT_CACHE_DIR=0 to bypass it) and run again") from e
        return CudaExecutable(module.function(compiled.name), compiled.slots, name=compiled.name)

    def __repr__(self) -> str:
        return "<tilejit CUDA backend>"


__all__ = ["CudaBackend"]
