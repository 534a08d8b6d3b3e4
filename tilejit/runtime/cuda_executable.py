"""Kernel launches: the fast path for compiled tile kernels, and raw launches as DeviceOps.

Fast path (one compiled specialization = one :class:`CudaExecutable`)::

    kernel = CudaExecutable(function, abi_slots(infos))     # once, on a cache miss
    kernel.launch(grid, params, stream)                 # per launch: pack + one cuLaunchKernel

:class:`ParamPacker` owns one byte buffer holding every parameter value (naturally aligned) and a
fixed array of pointers into it; a launch only rewrites the values (one ``struct.pack_into``) and
calls ``cuLaunchKernel(f, grid, block=(1,1,1), shared=0, stream, params)``: tile kernels carry
their real thread count in the cubin.

:func:`launch_infos` launches any executable (a :class:`CudaExecutable`, or the simulator's) with
classified arguments and runs the argument hooks (NumPy copies, stream ordering, lease release).
Custom PTX / cubin kernels launch as DeviceOps through ``tilejit.deviceops.custom.AsyncKernelLaunch``.
"""
from __future__ import annotations

import ctypes
import struct
import threading
from threading import get_ident as _get_ident
from typing import Sequence

import numpy as np
import ml_dtypes

from .. import native
from ..errors import LaunchError
from ..scalars import out_of_range, slot_abi, slot_intos, slot_range
from . import driver as _d
from .argspec import release_partitions
from .memory import use_all

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


def param_block(offsets: Sequence[int], size: int):
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
                 "_convert", "_struct", "checks")

    def __init__(self, slots: Sequence[str]):
        self.slots = tuple(slots)
        self.checks = scalar_checks(self.slots)
        fmt = "="
        offsets = []
        off = 0
        for slot in self.slots:
            ch = _FORMAT.get(slot_abi(slot))
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
        self.buffer, self.pointers, self.kernel_params = param_block(offsets, off)
        self._pack_into = self._struct.pack_into
        self._convert = tuple((i, _CONVERT[s]) for i, s in enumerate(self.slots) if s in _CONVERT)

    def pack(self, values) -> int:
        """Write ``values`` into the buffer; returns the ``kernelParams`` address (void**)."""
        if self.checks:
            check_scalars(self.checks, values)
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
                struct.pack("=" + _FORMAT[slot_abi(s)], v)
            except struct.error as err:
                return f"parameter value {v!r} does not fit ABI type {s}: {err}"
        return f"cannot pack kernel parameters: {e}"

    def packed_bytes(self) -> bytes:
        """The current buffer contents (for tests)."""
        return bytes(memoryview(self.buffer).cast("B")[:self.size])


# ABI slot -> the C launcher's packing code (tilejit/csrc/driver.c); fp8 scalars are packed in
# Python
_NATIVE_CODE = {"u64": "Q", "i64": "q", "u32": "I", "i32": "i", "u16": "H", "i16": "h", "u8": "B",
                "i8": "b", "f64": "d", "f32": "f", "tf32": "f", "f16": "e", "b1": "i", "bf16": "E"}


def native_layout(slots: Sequence[str]):
    """The C launcher's layout string for ``slots``, or None when one has no C packing."""
    codes = [_NATIVE_CODE.get(slot_abi(s)) for s in slots]
    return None if None in codes else "".join(codes).encode()


# --- weak scalars checked at the call (tilejit.scalars) ------------------------------------------
_CHECK = {1: struct.Struct("=iiqq"), 2: struct.Struct("=iidd")}


def scalar_checks(slots: Sequence[str]) -> tuple:
    """``((index, lo, hi, dtypes), ...)`` for the checked slots among ``slots``."""
    out = []
    for i, s in enumerate(slots):
        r = slot_range(s)
        if r is not None:
            out.append((i, r[1], r[2], slot_intos(s)))
    return tuple(out)


def native_checks(slots: Sequence[str]) -> bytes:
    """The same checks for the C launcher: one ``{int32 index, int32 kind, lo, hi}`` record
    each (int64 bounds for ints, doubles for floats)."""
    out = b""
    for i, s in enumerate(slots):
        r = slot_range(s)
        if r is not None:
            out += _CHECK[r[0]].pack(i, *r)
    return out


def check_scalars(checks, params) -> None:
    """Apply ``checks`` (:func:`scalar_checks`) to the parameter values: NumPy 2's error or
    warning for a weak scalar outside the range of a dtype the kernel converts it into."""
    for i, lo, hi, intos in checks:
        v = params[i]
        if not lo <= v <= hi:
            out_of_range(v, intos)


class CudaExecutable:
    """A compiled kernel specialization on CUDA: function + parameter layout; ``launch`` is the
    hot path.

    With the C extension (``tilejit.native``) a launch packs the values on the C stack and calls
    the driver directly (``_native`` holds what it needs: function, context and layout). In pure
    Python the values go into a reusable buffer; ``cuLaunchKernel`` drops the GIL while it copies
    the parameters, so the thread that created the kernel uses the main buffer without locking
    and other threads get their own packer.
    """

    __slots__ = ("function", "packer", "name", "_native", "_ext", "_fast", "_thread_packers",
                 "_lock", "_ctx", "checks", "alias_ok")

    def __init__(self, function, slots: Sequence[str], name: str = None):
        self.function = function
        self.name = name or getattr(function, "name", "<kernel>")
        # pairs of argument positions that may share memory (argspec.check_launch_aliasing's
        # judgement for this specialization), read by the C launcher
        self.alias_ok = frozenset()
        self.packer = pk = ParamPacker(slots)
        self.checks = pk.checks
        dev = function.device
        self._ctx = dev
        ext = native.ext()
        layout = native_layout(slots) if ext is not None else None
        self._ext = ext if layout is not None else None
        self._native = (int(function._cu), dev.context_handle, layout,
                        native_checks(pk.slots)) if self._ext else None
        # Everything the Python hot path needs, in one tuple (one attribute load). A thread id of
        # -1 sends every launch through the slow path (slots that need value conversion or a
        # weak scalar check).
        tid = -1 if pk._convert or pk.checks else _get_ident()
        self._fast = (tid, pk._pack_into, pk.buffer, pk.kernel_params, _d.drv.cuLaunchKernel,
                      function._cu)
        self._thread_packers = {}
        self._lock = threading.Lock()

    def launch(self, grid, params, stream) -> None:
        """Launch on ``stream`` with ``grid`` (a 3-tuple) and the C1 ``params`` values."""
        ext = self._ext
        if ext is not None:
            fn, ctx, layout, _ = self._native
            if self.packer.checks:
                check_scalars(self.packer.checks, params)
            try:
                err = ext.launch(fn, ctx, grid[0], grid[1], grid[2], stream.handle, layout,
                                 tuple(params))
            except (ValueError, OverflowError, TypeError) as e:
                raise LaunchError(self.packer._explain(params, e)) from None
            if err:
                self.raise_launch_error(err, grid)
            return
        tid, pack_into, buf, kp, cu_launch, f = self._fast
        if _get_ident() == tid:
            try:
                pack_into(buf, 0, *params)
            except struct.error as e:
                raise LaunchError(self.packer._explain(params, e)) from None
        else:
            kp = self._packer_for_thread().pack(params)
        with self._ctx.current():
            err = cu_launch(f, grid[0], grid[1], grid[2], 1, 1, 1, 0, stream._cu, kp, 0)[0]
        if err:
            self.raise_launch_error(err, grid)

    def scalar_out_of_range(self, index: int, value) -> None:
        """NumPy 2's error or warning for parameter ``index``, a weak scalar the C launcher found
        outside the range its checked slot allows (``tilejit.scalars``)."""
        out_of_range(value, slot_intos(self.packer.slots[index]))

    def raise_launch_error(self, err, grid) -> None:
        """Raise the LaunchError for driver result ``err`` (also called from C)."""
        raise launch_error(_d.drv.CUresult(int(err)), self.name, grid)

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
        return f"<CudaExecutable {self.name} slots={self.packer.slots}>"


def launch_error(err, name, grid, block=(1, 1, 1)) -> LaunchError:
    e = LaunchError(f"launching {name} with grid {tuple(grid)}, block {tuple(block)} failed: "
                    f"{_d.error_text(err)}")
    e.code = int(err)
    return e


def launch_infos(executable, infos, grid, stream, values=()) -> None:
    """Launch with classified arguments (``argspec.classify``): runs ``prepare`` hooks, orders
    every argument's storage on ``stream``, launches ``executable`` (anything with
    ``launch(grid, params, stream)``: a :class:`CudaExecutable`, or a simulator kernel) unless the grid
    is empty, runs ``finish`` hooks and releases the leases of the partitions among ``values``
    (the arguments; also when the launch fails)."""
    params = ()
    post = False
    storages = []
    for info in infos:
        if info.prepare is not None:
            info.prepare(stream)
        st = info.storage
        if st is not None:
            storages.append(st)
        if info.kind == "partition" or info.finish is not None:
            post = True
        params += info.params
    try:
        use_all(storages, stream)
        if grid[0] and grid[1] and grid[2]:
            executable.launch(grid, params, stream)
    finally:
        if post:
            release_partitions(values)
    if post:
        for info in infos:
            if info.finish is not None:
                info.finish(stream)


__all__ = ["ParamPacker", "CudaExecutable", "launch_infos", "param_block", "launch_error"]
