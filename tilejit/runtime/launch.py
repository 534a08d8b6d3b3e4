"""Kernel launches: the fast path for compiled tile kernels, and raw launches as DeviceOps.

Fast path (one compiled specialization = one :class:`CudaKernel`)::

    kernel = CudaKernel(function, abi_slots(infos))     # once, on a cache miss
    kernel.launch(grid, params, stream)                 # per launch: pack + one cuLaunchKernel

:class:`ParamPacker` owns one byte buffer holding every parameter value (naturally aligned) and a
fixed array of pointers into it; a launch only rewrites the values (one ``struct.pack_into``) and
calls ``cuLaunchKernel(f, grid, block=(1,1,1), shared=0, stream, params)``: tile kernels carry
their real thread count in the cubin.

Backend-neutral entry point for the dispatcher: :func:`launch` (``compiled`` is a
:class:`CudaKernel` on CUDA, or the simulator's callable ``compiled(grid, params)``), and
:func:`launch_infos`, which also runs the argument hooks (NumPy copies, stream ordering, lease
release). ``tile.AsyncKernelLaunch`` launches any CUDA kernel (PTX / cubin) as a DeviceOp.
"""
from __future__ import annotations

import ctypes
import struct
import threading
from threading import get_ident as _get_ident
from typing import Sequence, Tuple

import numpy as np
import ml_dtypes

from ..errors import LaunchError
from ..ops.deviceop import DeviceOp
from . import driver as _d
from .argspec import normalize_grid, release_partitions

# ABI slot -> struct format character (standard sizes; alignment is added explicitly)
_FORMAT = {"u64": "Q", "i64": "q", "u32": "I", "i32": "i", "u16": "H", "i16": "h", "u8": "B",
           "i8": "b", "f64": "d", "f32": "f", "tf32": "f", "f16": "e", "b1": "i",
           "bf16": "H", "f8e4m3": "B", "f8e5m2": "B"}


def _bits_converter(np_dtype, uint_dtype):
    def convert(v):
        return int(np.asarray(v, dtype=np_dtype).view(uint_dtype))
    return convert


# Slots that struct cannot encode directly: convert the Python float to its raw bits first.
_CONVERT = {"bf16": _bits_converter(ml_dtypes.bfloat16, np.uint16),
            "f8e4m3": _bits_converter(ml_dtypes.float8_e4m3fn, np.uint8),
            "f8e5m2": _bits_converter(ml_dtypes.float8_e5m2, np.uint8)}


def _param_block(offsets: Sequence[int], size: int):
    """An 8-byte aligned, zeroed buffer of ``size`` bytes and an array of pointers to ``offsets``
    in it: ``(buffer, pointers, kernelParams address or 0 when there are no offsets)``. The caller
    keeps ``buffer`` and ``pointers`` alive while the address is in use."""
    buf = (ctypes.c_uint64 * max(1, (size + 7) // 8))()
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_void_p * max(1, len(offsets)))(*[base + o for o in offsets])
    return buf, ptrs, (ctypes.addressof(ptrs) if offsets else 0)


class ParamPacker:
    """A reusable kernel-parameter buffer for a fixed list of ABI slot types."""

    __slots__ = ("slots", "offsets", "size", "buffer", "pointers", "kernel_params", "_pack_into",
                 "_convert", "_struct")

    def __init__(self, slots: Sequence[str]):
        self.slots = tuple(slots)
        fmt = "="
        offsets = []
        off = 0
        for slot in self.slots:
            ch = _FORMAT.get(slot)
            if ch is None:
                raise ValueError(f"unknown ABI slot type {slot!r}")
            size = struct.calcsize("=" + ch)
            pad = (-off) % size
            fmt += "x" * pad + ch
            off += pad
            offsets.append(off)
            off += size
        self._struct = struct.Struct(fmt)
        self.offsets = tuple(offsets)
        self.size = off
        self.buffer, self.pointers, self.kernel_params = _param_block(offsets, off)
        self._pack_into = self._struct.pack_into
        self._convert = tuple((i, _CONVERT[s]) for i, s in enumerate(self.slots) if s in _CONVERT)

    def pack(self, values) -> int:
        """Write ``values`` into the buffer; returns the ``kernelParams`` address (void**)."""
        if self._convert:
            values = list(values)
            for i, fn in self._convert:
                values[i] = fn(values[i])
        try:
            self._pack_into(self.buffer, 0, *values)
        except struct.error as e:
            raise LaunchError(self._explain(values, e)) from None
        return self.kernel_params

    def _explain(self, values, e) -> str:
        values = tuple(values)
        if len(values) != len(self.slots):
            return (f"the kernel takes {len(self.slots)} parameter values ({', '.join(self.slots)}) "
                    f"but {len(values)} were given")
        for v, s in zip(values, self.slots):
            try:
                struct.pack("=" + _FORMAT[s], v)
            except struct.error as err:
                return f"parameter value {v!r} does not fit ABI type {s}: {err}"
        return f"cannot pack kernel parameters: {e}"

    def packed_bytes(self) -> bytes:
        """The current buffer contents (for tests)."""
        return bytes(memoryview(self.buffer).cast("B")[:self.size])


class CudaKernel:
    """A compiled kernel specialization on CUDA: function + parameter buffer; ``launch`` is the
    hot path.

    The buffer is reused for every launch. ``cuLaunchKernel`` drops the GIL while it copies the
    parameters, so a second thread must not repack the same buffer meanwhile: the thread that
    created the kernel uses the main buffer without locking, other threads get their own packer.
    """

    __slots__ = ("function", "packer", "name", "_fast", "_thread_packers", "_lock")

    def __init__(self, function, slots: Sequence[str], name: str = None):
        self.function = function
        self.name = name or getattr(function, "name", "<kernel>")
        self.packer = pk = ParamPacker(slots)
        # Everything the hot path needs, in one tuple (one attribute load). A thread id of -1
        # sends every launch through the slow path (slots that need value conversion).
        tid = -1 if pk._convert else _get_ident()
        self._fast = (tid, pk._pack_into, pk.buffer, pk.kernel_params, _d.drv.cuLaunchKernel,
                      function._cu)
        self._thread_packers = {}
        self._lock = threading.Lock()

    def launch(self, grid, params, stream) -> None:
        """Launch on ``stream`` with ``grid`` (a 3-tuple) and the C1 ``params`` values."""
        tid, pack_into, buf, kp, cu_launch, f = self._fast
        if _get_ident() == tid:
            try:
                pack_into(buf, 0, *params)
            except struct.error as e:
                raise LaunchError(self.packer._explain(params, e)) from None
        else:
            kp = self._packer_for_thread().pack(params)
        err = cu_launch(f, grid[0], grid[1], grid[2], 1, 1, 1, 0, stream._cu, kp, 0)[0]
        if err:
            raise _launch_error(err, self.name, grid)

    def _packer_for_thread(self) -> ParamPacker:
        """This thread's own packer (``launch`` calls it only off the creating thread, or for
        every thread when the slots need value conversion)."""
        tid = _get_ident()
        pk = self._thread_packers.get(tid)
        if pk is None:
            with self._lock:
                pk = self._thread_packers.setdefault(tid, ParamPacker(self.packer.slots))
        return pk

    def __repr__(self) -> str:
        return f"<CudaKernel {self.name} slots={self.packer.slots}>"


def _launch_error(err, name, grid, block=(1, 1, 1)) -> LaunchError:
    e = LaunchError(f"launching {name} with grid {tuple(grid)}, block {tuple(block)} failed: "
                    f"{_d.error_text(err)}")
    e.code = int(err)
    return e


def launch(compiled, grid, params, stream) -> None:
    """Launch ``compiled`` on ``stream``: a :class:`CudaKernel` on CUDA, or on the simulator the
    interpreter's callable ``compiled(grid, params)`` (run immediately; params are Python
    ints/floats in C1 order). A grid with a zero dimension launches nothing."""
    if not (grid[0] and grid[1] and grid[2]):
        return
    if stream._cu is None:
        compiled(grid, params)
    else:
        compiled.launch(grid, params, stream)


def launch_infos(compiled, infos, grid, stream) -> None:
    """Launch with classified arguments (``argspec.classify``): runs ``prepare`` hooks, orders
    every argument's storage on ``stream``, launches, runs ``finish`` hooks and releases partition
    leases (also when the launch fails)."""
    params = ()
    post = False
    # Inline fast path of Storage.use (same stream as the last use: only the epoch changes). It is
    # not valid while capturing a graph or on a raw borrowed stream, where use() does more.
    fast = stream._capture is None and not stream._ephemeral
    for info in infos:
        if info.prepare is not None:
            info.prepare(stream)
        st = info.storage
        if st is not None:
            h = st._h
            if fast and h.stream is stream:
                h.epoch = stream._epoch
            else:
                st.use(stream)
        if info.partition is not None or info.finish is not None:
            post = True
        params += info.params
    try:
        if grid[0] and grid[1] and grid[2]:
            if stream._cu is None:
                compiled(grid, params)
            else:
                compiled.launch(grid, params, stream)
    finally:
        if post:
            release_partitions(infos)
    if post:
        for info in infos:
            if info.finish is not None:
                info.finish(stream)


# --- raw launches ---------------------------------------------------------------------------------------
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
        from .tensor import Tensor
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

    def _execute(self, ctx):
        if self.config is None:
            raise LaunchError("AsyncKernelLaunch: call set_launch_config(tile.LaunchConfig(...)) "
                              "before running it")
        if ctx.stream._cu is None:
            raise LaunchError("AsyncKernelLaunch runs CUDA kernels and needs a GPU; the simulator "
                              "backend cannot run PTX or cubins")
        from .tensor import Tensor
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
        buf, ptrs, kp = _param_block(offsets, off)      # buf, ptrs: alive until the launch
        mv = memoryview(buf).cast("B")
        for o, raw in zip(offsets, self._values):
            mv[o:o + len(raw)] = raw
        cfg = self.config
        ctx.device.make_current()
        err = _d.drv.cuLaunchKernel(self.function._cu, *cfg.grid, *cfg.block, cfg.shared_mem_bytes,
                                    ctx.stream._cu, kp, 0)[0]
        if err != _d.SUCCESS:
            raise _launch_error(err, getattr(self.function, "name", "<kernel>"), cfg.grid, cfg.block)
        return None


__all__ = ["ParamPacker", "CudaKernel", "launch", "launch_infos", "LaunchConfig",
           "AsyncKernelLaunch", "normalize_grid"]
