"""Foreign GPU arrays read from their metadata: the launch hot path's alternative to DLPack.

Exporting a DLPack capsule per call costs microseconds (``torch.Tensor.__dlpack__`` with a stream
records and waits on an event). A *reader* instead takes what a kernel argument needs straight
from the array object, as a :class:`View`: data pointer, shape, strides in elements, dtype,
device ordinal, read-only flag and the *producer stream* (the stream whose queued work the
consumer must wait for, or None when the producer has nothing pending for us).

Readers are chosen by the object's exact type, once per type, from its module name, so this
module never imports PyTorch, CuPy or JAX:

==========================================  =======================================================
``torch.Tensor`` (and subclasses)           ``data_ptr()``, ``shape``, ``stride()``, ``dtype``; producer:
                                            torch's current stream on the tensor's device
``cupy.ndarray``                            ``data.ptr``, ``shape``, ``strides``; producer: CuPy's
                                            current stream
``cuda.core`` ``StridedMemoryView``         its fields (ordered when the view was made)
anything with ``__cuda_array_interface__``  the interface (v2/v3), producer from its ``stream``
==========================================  =======================================================

Everything else (JAX arrays without the interface, other DLPack producers) goes through
:func:`tilejit.runtime.dlpack.from_dlpack`. Metadata is read on every call, so a producer that
reallocates (``resize_``, ``set_``) or an object whose id is reused is always seen as it is now.
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from .. import native
from ..errors import TensorError


class View(NamedTuple):
    """A foreign array as a kernel sees it."""

    ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]       # in elements
    dtype: _dt.DType
    device: int                    # CUDA ordinal; -1 for host memory
    readonly: bool
    stream: Optional[int]          # producer stream handle to order after, or None


_readers: Dict[type, Optional[Callable]] = {}
_lock = threading.Lock()
HOST = -1


def reader_for(tp: type) -> Optional[Callable]:
    """The metadata reader for objects of type ``tp``, or None (use DLPack)."""
    try:
        return _readers[tp]
    except KeyError:
        pass
    with _lock:
        r = _readers[tp] = _find_reader(tp)
    return r


def read(obj) -> Optional[View]:
    """``obj``'s :class:`View`, or None when no reader knows its type."""
    r = reader_for(type(obj))
    return None if r is None else r(obj)


_torch_exchange = False


def torch_exchange_active() -> bool:
    """Whether the C launcher reads torch tensors through DLPack's C exchange API (torch >= 2.10
    with the extension; set once a torch tensor has been read)."""
    return _torch_exchange


def torch_stream_of(values) -> Optional[Tuple[int, int]]:
    """``(device ordinal, torch's current stream handle there)`` for the first torch GPU tensor
    among ``values``, or None. Torch's current streams are long-lived (its default and pool
    streams are never destroyed), so work may run on them directly."""
    ext = native.ext()
    if ext is not None:                 # exact torch tensors, read in C
        found = ext.torch_stream_of(tuple(values))
        if found is not NotImplemented:
            return found
    for v in values:
        if getattr(type(v), "wraps_foreign", False):        # tile.partition(torch_tensor, ...)
            v = v.value
        r = reader_for(type(v))
        if r is not None and getattr(r, "torch_streams", False):
            view = r(v)
            if view.device >= 0 and view.stream is not None:
                return view.device, view.stream
    return None


def device_of(values) -> Optional[int]:
    """The device ordinal of the first foreign device array among ``values`` (a launch's
    arguments; ``tile.partition`` wrappers looked through), or None."""
    for v in values:
        if getattr(type(v), "wraps_foreign", False):
            v = v.value
        try:
            view = read(v)
        except Exception:       # a host array behind a device protocol (a CPU JAX array): none
            continue
        if view is not None and view.device >= 0:
            return view.device
    return None


def _find_reader(tp: type) -> Optional[Callable]:
    root = (tp.__module__ or "").split(".", 1)[0]
    if root == "tilejit":
        return None
    if root == "torch":
        import torch
        if issubclass(tp, torch.Tensor):
            return _torch_reader(torch)
    if root == "cupy":
        import cupy
        if issubclass(tp, cupy.ndarray):
            return _cupy_reader(cupy)
    if root == "cuda" and tp.__name__ == "StridedMemoryView":
        return _memory_view_reader
    if root == "numpy" or not hasattr(tp, "__cuda_array_interface__"):
        return None
    return _cai_reader


# --- PyTorch -------------------------------------------------------------------------------------
def _torch_reader(torch):
    dtypes = {}
    current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

    def dtype_of(tdt):
        d = dtypes.get(tdt)
        if d is None:
            try:
                d = dtypes[tdt] = _dt.as_dtype(tdt)
            except TypeError:
                raise TensorError(f"torch dtype {tdt} is not supported by tilejit kernels (use "
                                  f"one of: {', '.join(x.name for x in _dt.ALL_DTYPES)})") from None
        return d

    def read_torch(t) -> View:
        dev = t.get_device()
        if dev < 0:
            return View(t.data_ptr(), tuple(t.shape), t.stride(), dtype_of(t.dtype), HOST,
                        False, None)
        if t.is_conj() or t.is_neg():
            raise TensorError("this torch tensor is a lazily conjugated/negated view; "
                              "materialize it first with t.resolve_conj().resolve_neg()")
        return View(t.data_ptr(), t.shape, t.stride(), dtype_of(t.dtype), dev, False,
                    current_stream(dev) if current_stream is not None else None)
    read_torch.torch_streams = True
    ext = native.ext()
    exchange = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
    if ext is not None and (current_stream is not None or exchange is not None):
        # the C launcher reads them too
        names = {}
        for n in _TORCH_DTYPES:
            tdt = getattr(torch, n, None)
            if tdt is not None:
                names[tdt] = dtype_of(tdt).name
        ext.set_torch(torch.Tensor, names, current_stream)
        # torch >= 2.10: read tensors through DLPack's C exchange API (no Python call per tensor)
        global _torch_exchange
        codes = {(d.dlpack_code, d.bits) for d in _dt.ALL_DTYPES}
        _torch_exchange = ext.set_torch_exchange(exchange, torch.nn.Parameter,
                               {c: _dt.from_dlpack(c[0], c[1], 1).name for c in codes})
    return read_torch


_TORCH_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn", "float8_e5m2")


# --- CuPy ----------------------------------------------------------------------------------------
def _cupy_reader(cupy):
    get_stream = cupy.cuda.get_current_stream
    ext = native.ext()
    if ext is not None:         # the C launcher reads CuPy arrays the same way
        ext.set_cupy(cupy.ndarray, {npdt: (d.name, d.itemsize) for npdt, d in _dt._BY_NUMPY.items()},
                     get_stream)

    def read_cupy(a) -> View:
        dt = _dt.from_numpy(a.dtype)
        return View(a.data.ptr, a.shape, _element_strides(a.strides, dt.itemsize), dt,
                    a.device.id, False, get_stream().ptr)
    return read_cupy


# --- cuda.core -----------------------------------------------------------------------------------
def _memory_view_reader(v) -> View:
    dt = _dt.from_numpy(np.dtype(v.dtype))
    shape = tuple(v.shape)
    strides = tuple(v.strides) if v.strides is not None else _contiguous(shape)
    return View(v.ptr, shape, strides, dt, v.device_id if v.is_device_accessible else HOST,
                bool(v.readonly), None)


# --- __cuda_array_interface__ --------------------------------------------------------------------
def _cai_reader(obj) -> View:
    return view_of_cai(obj.__cuda_array_interface__)


def view_of_cai(cai: dict, device: Optional[int] = None) -> View:
    """The :class:`View` of a ``__cuda_array_interface__`` dict (v2/v3). ``device``: the ordinal
    when known (otherwise looked up from the pointer)."""
    if cai.get("mask") is not None:
        raise TensorError("masked __cuda_array_interface__ arrays are not supported")
    shape = tuple(int(n) for n in cai["shape"])
    try:
        dt = _dt.from_numpy(np.dtype(cai["typestr"]))
    except TypeError as e:
        raise TensorError(f"__cuda_array_interface__: {e}") from None
    ptr, readonly = cai["data"]
    ptr = int(ptr or 0)
    bstrides = cai.get("strides")
    strides = _contiguous(shape) if bstrides is None else _element_strides(bstrides, dt.itemsize)
    stream = cai.get("stream")
    if device is None:
        device = pointer_device(ptr)
    return View(ptr, shape, strides, dt, device, bool(readonly),
                None if stream is None else int(stream))


def pointer_device(ptr: int) -> int:
    """The CUDA ordinal (the simulated device's, on the simulator) that owns device pointer
    ``ptr`` (0 when it cannot be told)."""
    if not ptr:
        return 0
    from . import backend
    if backend.current() == backend.SIMULATOR:
        from ..simulator.memory import memory as sim
        return sim.device_of(ptr) if sim.is_live(ptr) else 0
    from . import driver as _d
    try:
        drv = _d.drv
        return int(_d.check(drv.cuPointerGetAttribute(
            drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
            "cuPointerGetAttribute"))
    except Exception:
        return 0


def _element_strides(bstrides, itemsize: int) -> Tuple[int, ...]:
    out = []
    for s in bstrides:
        s = int(s)
        if s % itemsize:
            raise TensorError(f"strides {tuple(bstrides)} (bytes) are not multiples of the "
                              f"element size {itemsize}")
        out.append(s // itemsize)
    return tuple(out)


def _contiguous(shape) -> Tuple[int, ...]:
    from ..layout import contiguous_strides
    return contiguous_strides(shape)


__all__ = ["View", "read", "reader_for", "torch_stream_of", "torch_exchange_active", "view_of_cai", "pointer_device",
           "HOST"]
