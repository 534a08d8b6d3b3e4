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

Plain functions (:func:`upload`, :func:`read_prefix`) queue the same work directly on a stream for
code that is not itself an op (DLPack imports, ``repr``).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..errors import TensorError
from ..ops.deviceop import DeviceOp, execute_input
from . import copy as _copy
from .. import layout as _layout
from .memory import allocate
from .tensor import Tensor


def _check_shape(shape):
    shape = _layout.normalize_shape(shape)
    if any(n < 0 for n in shape):
        raise TensorError(f"negative dimension in shape {shape}")
    return shape


def new_tensor(shape, dtype, stream) -> Tensor:
    """Allocate an uninitialised contiguous tensor on ``stream`` (not an op: call inside ``_execute``)."""
    dt = _dt.as_dtype(dtype)
    shape = _check_shape(shape)
    return Tensor._contiguous(allocate(_layout.prod(shape) * dt.itemsize, stream), shape, dt)


def upload(arr: np.ndarray, stream, dtype=None) -> Tensor:
    """A new device tensor with the contents of host array ``arr``, queued on ``stream``."""
    arr = np.asarray(arr)
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy(arr.dtype)
    t = new_tensor(arr.shape, dt, stream)
    _copy.upload_into(t, arr, stream)
    return t


def read_prefix(t: Tensor, count: int) -> np.ndarray:
    """The first ``count`` elements of the first row of ``t`` (for ``repr``), read synchronously."""
    row = t
    while row.ndim > 1:
        row = row[0]
    if row.ndim == 1:
        row = row[:count]
    stream = t.device.internal_stream()
    return _copy.download(row, stream).reshape(-1)


# --- ops ------------------------------------------------------------------------------------------------
class Empty(DeviceOp):
    allocates = True

    def __init__(self, shape, dtype):
        self.shape = _check_shape(shape)
        self.dtype = _dt.as_dtype(dtype)

    def _execute(self, ctx):
        return new_tensor(self.shape, self.dtype, ctx.stream)


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


def from_numpy(arr, dtype=None) -> FromNumpy:
    """Host -> device: an op producing a new tensor with ``arr``'s contents (copied at call time)."""
    return FromNumpy(arr, dtype)


copy_host_to_device = from_numpy


class ToHost(DeviceOp):
    def __init__(self, tensor):
        self.tensor = tensor

    def _execute(self, ctx):
        t = execute_input(self.tensor, ctx)
        if not isinstance(t, Tensor):
            raise TypeError(f"to_host needs a tile.Tensor, got {type(t).__name__}")
        t._check_usable("copy to the host")
        return _copy.download(t, ctx.stream)


def to_host(tensor) -> ToHost:
    """Device -> host: an op producing a new NumPy array (C order) with the tensor's contents."""
    return ToHost(tensor)


to_numpy = to_host


class Dup(DeviceOp):
    allocates = True

    def __init__(self, tensor):
        self.tensor = tensor

    def _execute(self, ctx):
        src = execute_input(self.tensor, ctx)
        if not isinstance(src, Tensor):
            raise TypeError(f"dup needs a tile.Tensor, got {type(src).__name__}")
        src._check_usable("dup")
        dst = new_tensor(src.shape, src.dtype, ctx.stream)
        _copy.copy_tensor(dst, src, ctx.stream)
        return dst


def dup(tensor) -> Dup:
    """An op producing a contiguous device copy of ``tensor``."""
    return Dup(tensor)


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


def copy_from_host(dst, arr) -> CopyFromHost:
    """An op copying host array ``arr`` into the existing tensor ``dst``; output ``dst``."""
    return CopyFromHost(dst, arr)


__all__ = ["empty", "from_numpy", "copy_host_to_device", "to_host", "to_numpy", "dup", "memcpy",
           "copy_from_host", "upload", "new_tensor", "read_prefix"]
