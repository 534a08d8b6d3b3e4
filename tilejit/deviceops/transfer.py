"""Tensor allocation and copies as DeviceOps (the building blocks of ``tile.api``).

=====================================  ===============================================  ==========
op                                     output                                           graph-safe
=====================================  ===============================================  ==========
``empty(shape, dtype)``                new uninitialised tensor                          no
``from_numpy(arr)`` (host -> device)   new tensor with ``arr``'s contents (C order)      no
``to_host(t)`` (device -> host)        new NumPy array                                   no
``dup(t)``                             new contiguous copy of ``t``                      no
``memcpy(dst, src)``                   ``dst``, after ``dst[...] = src``                 yes
``copy_from_host(dst, arr)``           ``dst``, after ``dst[...] = arr``                 no
=====================================  ===============================================  ==========
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..runtime import copy as _copy
from ..runtime import tensor as _tensor
from ..runtime.device import Device
from ..runtime.partition import Partition
from ..runtime.tensor import Tensor
from ..runtime.stream_transfers import check_shape, new_tensor, upload
from .deviceop import DeviceOp, execute_input
from .scheduling import default_stream


# --- ops ------------------------------------------------------------------------------------------------
def stream_near(*values):
    """The default policy's stream on the device of the first tensor among ``values`` (a copy of
    a tensor on cuda:1 runs on cuda:1), else on the default device."""
    for v in values:
        t = v._tensor if type(v) is Partition else v
        if isinstance(t, Tensor):
            return default_stream(t._storage.device)
    return default_stream()


class Empty(DeviceOp):
    allocates = True

    def __init__(self, shape, dtype):
        self.shape = check_shape(shape)
        self.dtype = _dt.as_dtype(dtype)

    def _execute(self, ctx):
        return new_tensor(self.shape, self.dtype, ctx.stream)

    def describe(self, depth: int = 0) -> str:
        return f"a new uninitialised tensor {self.shape} {self.dtype.name}"


def empty(shape, dtype=_dt.float32) -> Empty:
    """An op producing an uninitialised tensor of ``shape`` and ``dtype``."""
    return Empty(shape, dtype)


class FromNumpy(DeviceOp):
    allocates = True

    def __init__(self, arr, dtype=None):
        if not isinstance(arr, np.ndarray):
            arr = np.asarray(arr)
        if arr.dtype == object:
            raise TypeError("from_numpy: object arrays cannot be copied to the device")
        # Snapshot now: the op may run later, and the caller may modify the array meanwhile.
        self.arr = np.array(arr, copy=True, order="C")
        self.dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy(self.arr.dtype)

    def _execute(self, ctx):
        return upload(self.arr, ctx.stream, self.dtype)

    def describe(self, depth: int = 0) -> str:
        return f"copy a NumPy array {self.arr.shape} to the device as {self.dtype.name}"


def from_numpy(arr, dtype=None) -> FromNumpy:
    """Host -> device: an op producing a new tensor with ``arr``'s contents (copied at call time)."""
    return FromNumpy(arr, dtype)


copy_host_to_device = from_numpy


class ToHost(DeviceOp):
    def __init__(self, tensor):
        self.tensor = tensor

    def _execute(self, ctx):
        t = execute_input(self.tensor, ctx)
        if isinstance(t, Partition):          # e.g. kernel(...).first().to_host()
            t = t.tensor
        if not isinstance(t, Tensor):
            raise TypeError(f"to_host needs a tile.Tensor or a Partition, got "
                            f"{type(t).__name__}")
        t._check_usable("copy to the host")
        return _copy.download(t, ctx.stream)

    def _default_stream(self):
        return stream_near(self.tensor)

    def describe(self, depth: int = 0) -> str:
        from .describe import value
        return f"copy {value(self.tensor, depth)} to the host (a NumPy array)"


def to_host(tensor) -> ToHost:
    """Device -> host: an op producing a new NumPy array (C order) with the tensor's contents."""
    return ToHost(tensor)


to_numpy = to_host


class Dup(DeviceOp):
    allocates = True

    def __init__(self, tensor, device=None):
        self.tensor = tensor
        self.device = None if device is None else Device(device)

    def _execute(self, ctx):
        src = execute_input(self.tensor, ctx)
        if not isinstance(src, Tensor):
            raise TypeError(f"dup needs a tile.Tensor, got {type(src).__name__}")
        src._check_usable("dup")
        dev = self.device
        if dev is None or dev is ctx.device:
            dst = new_tensor(src.shape, src.dtype, ctx.stream)
        else:               # allocated on the target device, copied on this op's stream
            dst = new_tensor(src.shape, src.dtype, dev.internal_stream())
        _copy.copy_tensor(dst, src, ctx.stream)
        return dst

    def _default_stream(self):
        return default_stream(self.device) if self.device is not None else \
            stream_near(self.tensor)

    def describe(self, depth: int = 0) -> str:
        from .describe import value
        where = f" on {self.device!r}" if self.device is not None else ""
        return f"a contiguous copy of {value(self.tensor, depth)}{where}"


def dup(tensor, device=None) -> Dup:
    """An op producing a contiguous copy of ``tensor``, on ``device`` (an ordinal or a
    ``tile.Device``) when given, else on the device the op runs on. Copies between GPUs use peer
    access where available (``cuMemcpyPeerAsync``)."""
    return Dup(tensor, device)


def to_device(tensor, device) -> Dup:
    """``t.to(device)``: a contiguous copy of ``tensor`` on ``device`` (a DeviceOp)."""
    return Dup(tensor, device)


class Memcpy(DeviceOp):
    graph_safe = True

    def __init__(self, dst, src):
        self.dst = dst
        self.src = src

    def _execute(self, ctx):
        dst = execute_input(self.dst, ctx)
        src = execute_input(self.src, ctx)
        for name, t in (("dst", dst), ("src", src)):
            if not isinstance(t, Tensor):
                raise TypeError(f"memcpy {name} must be a tile.Tensor, got {type(t).__name__}")
        dst._check_usable("memcpy into")
        src._check_usable("memcpy from")
        _copy.copy_tensor(dst, src, ctx.stream)
        return dst

    def _default_stream(self):
        return stream_near(self.dst, self.src)

    def describe(self, depth: int = 0) -> str:
        from .describe import value
        return f"copy {value(self.src, depth)} into {value(self.dst, depth)}"


def memcpy(dst, src) -> Memcpy:
    """An op copying ``src`` into the existing tensor ``dst`` (same dtype, same element count);
    its output is ``dst``. Non-contiguous views are copied correctly."""
    if isinstance(dst, Tensor) and isinstance(src, Tensor):
        _copy.check_copy_compatible(dst, src)
    return Memcpy(dst, src)


class CopyFromHost(DeviceOp):
    def __init__(self, dst, arr):
        self.dst = dst
        self.arr = np.array(arr, copy=True, order="C")

    def _execute(self, ctx):
        dst = execute_input(self.dst, ctx)
        dst._check_usable("copy into")
        _copy.upload_into(dst, self.arr, ctx.stream)
        return dst

    def _default_stream(self):
        return stream_near(self.dst)

    def describe(self, depth: int = 0) -> str:
        from .describe import value
        return f"copy a NumPy array {self.arr.shape} into {value(self.dst, depth)}"


def copy_from_host(dst, arr) -> CopyFromHost:
    """An op copying host array ``arr`` into the existing tensor ``dst``; output ``dst``."""
    return CopyFromHost(dst, arr)


# Tensor.to_host() / Tensor.dup() return these ops; runtime sits below ops and cannot import them.
_tensor.bind_ops(to_host=to_host, dup=dup, to=to_device)

__all__ = ["empty", "from_numpy", "copy_host_to_device", "to_host", "to_numpy", "dup", "to_device",
           "memcpy", "copy_from_host"]
