"""Custom CUDA kernels (PTX, cubin) launched as DeviceOps: ``tile.AsyncKernelLaunch``."""
from __future__ import annotations

import struct
from typing import Tuple

import numpy as np

from ..errors import LaunchError
from ..runtime import driver as _d
from ..runtime.cuda_executable import launch_error, param_block
from ..runtime.tensor import Tensor
from .deviceop import DeviceOp


def _dim3(v, what: str) -> Tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchError(f"{what} must be 1 to 3 positive ints, got {v}")
    return v + (1,) * (3 - len(v))


class LaunchConfig:
    """Grid, block and dynamic shared memory of a raw launch (``AsyncKernelLaunch``)."""

    __slots__ = ("grid", "block", "shared_mem_bytes")

    def __init__(self, grid=(1, 1, 1), block=(1, 1, 1), shared_mem_bytes: int = 0, *,
                 grid_dim=None, block_dim=None):
        self.grid = _dim3(grid_dim if grid_dim is not None else grid, "grid")
        self.block = _dim3(block_dim if block_dim is not None else block, "block")
        if int(shared_mem_bytes) < 0:
            raise LaunchError(f"shared_mem_bytes must be >= 0, got {shared_mem_bytes}")
        self.shared_mem_bytes = int(shared_mem_bytes)

    def __repr__(self) -> str:
        return (f"LaunchConfig(grid={self.grid}, block={self.block}, "
                f"shared_mem_bytes={self.shared_mem_bytes})")


class AsyncKernelLaunch(DeviceOp):
    """A raw CUDA kernel launch as a DeviceOp (for PTX / cubin kernels)::

        launch = tile.AsyncKernelLaunch(module.function("scale"))
        launch.push_arg(np.uint32(n)).push_arg(np.float32(2.0))
        launch.push_device_ptr(x).push_device_ptr(y)      # ints or tile.Tensors
        launch.set_launch_config(tile.LaunchConfig(grid=(n + 255) // 256, block=256))
        launch.sync()

    Tensors pushed with ``push_device_ptr`` are kept alive and ordered on the launch stream; raw
    int pointers are your responsibility. The output is None.
    """

    graph_safe = True

    def __init__(self, function):
        self.function = function
        self._values = []            # raw bytes of each parameter
        self._tensors = []
        self.config = None

    def push_arg(self, value) -> "AsyncKernelLaunch":
        """Append a scalar with an explicit type: a NumPy scalar (``np.uint32(n)``) or 0-d array."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if not isinstance(value, np.generic):
            raise TypeError(f"push_arg needs a NumPy scalar so the parameter size is explicit "
                            f"(e.g. np.int32({value!r}) or np.float32({value!r})); got "
                            f"{type(value).__name__}")
        self._values.append(value.tobytes())
        return self

    def push_device_ptr(self, ptr) -> "AsyncKernelLaunch":
        """Append a device pointer: an int address or a ``tile.Tensor`` (its ``device_pointer``)."""
        if isinstance(ptr, Tensor):
            self._tensors.append(ptr)
            addr = ptr.device_pointer
        elif hasattr(ptr, "__cuda_array_interface__") and not isinstance(ptr, int):
            addr = int(ptr.__cuda_array_interface__["data"][0])
            self._tensors.append(ptr)
        else:
            addr = int(ptr)
        self._values.append(struct.pack("=Q", addr))
        return self

    def set_launch_config(self, config: LaunchConfig) -> "AsyncKernelLaunch":
        if not isinstance(config, LaunchConfig):
            raise TypeError(f"set_launch_config needs a tile.LaunchConfig, got "
                            f"{type(config).__name__}")
        self.config = config
        return self

    def _default_stream(self):
        """``sync()`` / ``await``: the default policy of the function's device (where its module is
        loaded), not the current device."""
        from .scheduling import default_stream
        return default_stream(getattr(self.function, "device", None))

    def _execute(self, ctx):
        if self.config is None:
            raise LaunchError("AsyncKernelLaunch: call set_launch_config(tile.LaunchConfig(...)) "
                              "before running it")
        if ctx.stream._cu is None:
            raise LaunchError("AsyncKernelLaunch runs CUDA kernels and needs a GPU; the simulator "
                              "backend cannot run PTX or cubins")
        for t in self._tensors:
            if isinstance(t, Tensor):
                t._check_usable("pass to a kernel")
                t.storage.use(ctx.stream)
        # Natural alignment per value (sizes are powers of two up to 8, or 16 for vectors).
        offsets, off = [], 0
        for raw in self._values:
            align = min(len(raw), 8) or 1
            off += (-off) % align
            offsets.append(off)
            off += len(raw)
        buf, ptrs, kp = param_block(offsets, off)      # buf, ptrs: alive until the launch
        mv = memoryview(buf).cast("B")
        for o, raw in zip(offsets, self._values):
            mv[o:o + len(raw)] = raw
        cfg = self.config
        with ctx.device.current():
            err = _d.drv.cuLaunchKernel(self.function._cu, *cfg.grid, *cfg.block,
                                        cfg.shared_mem_bytes, ctx.stream._cu, kp, 0)[0]
        if err != _d.SUCCESS:
            raise launch_error(err, getattr(self.function, "name", "<kernel>"), cfg.grid, cfg.block)
        return None


__all__ = ["LaunchConfig", "AsyncKernelLaunch"]
