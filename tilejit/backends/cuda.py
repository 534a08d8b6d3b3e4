"""The CUDA backend: cubins loaded per device context, launched with one driver call."""
from __future__ import annotations

from ..runtime.launch import CudaKernel
from ..runtime.module import load_module_from_data


class CudaBackend:
    """Runs compiled kernels on NVIDIA GPUs."""

    name = "cuda"

    @staticmethod
    def target(device) -> str:
        """The architecture to compile for: the device's (``"sm_90"`` on an H100/H200)."""
        return device.arch

    @staticmethod
    def load(compiled, device) -> CudaKernel:
        """Load ``compiled.cubin`` into ``device``'s context and return its launcher."""
        module = load_module_from_data(compiled.cubin, device, name=compiled.name)
        return CudaKernel(module.function(compiled.name), compiled.slots, name=compiled.name)

    def __repr__(self) -> str:
        return "<tilejit CUDA backend>"


__all__ = ["CudaBackend"]
