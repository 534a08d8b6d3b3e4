"""Tensor allocation and host transfers queued directly on a stream (not DeviceOps).

The DeviceOp forms (``empty``, ``from_numpy``, ``to_host``, ``dup``, ``memcpy``...) live in
:mod:`tilejit.deviceops.transfer` and call these; code below the ops layer (DLPack imports, ``repr``,
NumPy kernel arguments) calls them directly.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..errors import TensorError
from . import copy as _copy
from . import staging as _staging
from .. import layout as _layout
from .memory import allocate
from .tensor import Tensor


def check_shape(shape):
    """``shape`` as a tuple of non-negative ints (TensorError otherwise)."""
    shape = _layout.normalize_shape(shape)
    if any(n < 0 for n in shape):
        raise TensorError(f"negative dimension in shape {shape}")
    return shape


def new_tensor(shape, dtype, stream, alloc=allocate) -> Tensor:
    """Allocate an uninitialised contiguous tensor on ``stream`` (not an op: call inside
    ``_execute``); ``alloc(nbytes, stream)`` gives its memory."""
    dt = _dt.as_dtype(dtype)
    shape = check_shape(shape)
    return Tensor._contiguous(alloc(_layout.prod(shape) * dt.itemsize, stream), shape, dt)


def upload(arr: np.ndarray, stream, dtype=None, staged: bool = False) -> Tensor:
    """A new device tensor with the contents of host array ``arr``, queued on ``stream``.

    ``staged``: its memory comes from ``stream``'s staging pool (a kernel argument copied in per
    launch); hand it back with ``staging.give_back(t.storage, stream)`` once the work reading it
    is queued."""
    arr = np.asarray(arr)
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy(arr.dtype)
    t = new_tensor(arr.shape, dt, stream, _staging.take if staged else allocate)
    _copy.upload_into(t, arr, stream)
    return t


__all__ = ["new_tensor", "upload", "check_shape"]
