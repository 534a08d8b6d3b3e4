"""DLPack and CUDA Array Interface, both directions, zero-copy.

Export: ``Tensor.__dlpack__`` builds a ``DLManagedTensor`` (or ``DLManagedTensorVersioned`` when
the consumer asks for DLPack >= 1.0) with ctypes and wraps it in a PyCapsule; the capsule keeps the
tensor alive until the consumer calls the deleter. On the simulator backend the device is
``kDLCPU`` and the data pointer is the host address of the simulated buffer, so
``np.from_dlpack(t)`` aliases simulated device memory.

Import: :func:`from_dlpack` accepts tilejit tensors, any ``__dlpack__`` producer (PyTorch, CuPy, JAX,
NumPy) and ``__cuda_array_interface__`` objects (Numba, CuPy...). Device memory is wrapped without a
copy and the producer is kept alive; host (``kDLCPU``) data is copied to the device.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from .. import dtypes as _dt
from .. import layout as _layout
from ..errors import TensorError
from . import backend as _backend
from . import foreign as _foreign
from .device import Device
from .hostarrays import host_view, without_grad
from .memory import Storage
from .partition import Partition
from .stream import Stream
from .tensor import Tensor

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
_FLAG_READ_ONLY = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# --- Python C-API entry points (private prototypes: never touch ctypes.pythonapi's shared ones) ---
_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_void_p)(("PyCapsule_New", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api))
_PyCapsule_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _api))
_PyCapsule_IsValidObj = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _api))
_Py_IncRef = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))
_Py_DecRef = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_DecRef", _api))

# Capsule names must outlive every capsule: module-level buffers that are never freed.
_NAME = ctypes.create_string_buffer(b"dltensor")
_NAME_V = ctypes.create_string_buffer(b"dltensor_versioned")
_USED = ctypes.create_string_buffer(b"used_dltensor")
_USED_V = ctypes.create_string_buffer(b"used_dltensor_versioned")
_P_NAME, _P_NAME_V = ctypes.addressof(_NAME), ctypes.addressof(_NAME_V)
_P_USED, _P_USED_V = ctypes.addressof(_USED), ctypes.addressof(_USED_V)


class _Export:
    """Keeps one export alive: the managed struct, its shape/strides arrays and the tensor.

    Owned by a manual reference (``manager_ctx``) that the native deleter or capsule destructor
    drops (see ``_dlpack_native``)."""

    __slots__ = ("managed", "shape", "strides", "tensor", "__weakref__")

    def __init__(self, managed, shape, strides, tensor):
        self.managed = managed
        self.shape = shape
        self.strides = strides
        self.tensor = tensor


_exports = weakref.WeakSet()        # live exports (introspection and tests)


def live_exports() -> int:
    """Number of exported DLPack tensors not yet released by their consumer."""
    return len(_exports)


# --- export ----------------------------------------------------------------------------------------
def device_tuple(t) -> tuple:
    """``(device_type, device_id)`` per DLPack: kDLCUDA on a GPU, kDLCPU on the simulator."""
    dev = t.device
    return (kDLCPU, 0) if dev.is_simulated else (kDLCUDA, dev.ordinal)


def _host_pointer(t) -> int:
    """Data pointer to hand to consumers: the real address (simulated memory lives on the host)."""
    if not t.device.is_simulated:
        return t.device_pointer
    from ..simulator.memory import memory as sim
    span = _layout.span_elements(t.shape, t.strides) * t.itemsize
    ptr = t.device_pointer
    if span == 0:
        base, _ = sim.allocation_of(t.storage.ptr)
        return sim.host_view(base, 0).ctypes.data + (ptr - base)
    return sim.host_view(ptr, span).ctypes.data


def export_capsule(t, stream=None, max_version=None, dl_device=None, copy=None):
    t._check_usable("export (DLPack)")
    if t.dtype.dlpack_code < 0:
        raise BufferError(f"{t.dtype} tensors (one value per byte, as ml_dtypes stores them) "
                          f"have no DLPack form; use t.to_numpy(), or export the bytes: "
                          f"t.reinterpret(tile.uint8, t.shape)")
    dev = device_tuple(t)
    if dl_device is not None and tuple(dl_device) != dev:
        raise BufferError(f"tile.Tensor lives on DLPack device {dev}, not {tuple(dl_device)}; "
                          f"copy it with t.to_numpy() for the host")
    if copy:
        from .copy import copy_tensor
        from .stream_transfers import new_tensor
        s = t.device.internal_stream()
        with t.device.current():
            c = new_tensor(t.shape, t.dtype, s)
            copy_tensor(c, t, s)
        t = c
    if stream is not None and not t.device.is_simulated and stream != -1:
        _make_stream_wait(t, stream)
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    from ._dlpack_native import addresses
    deleter, deleter_v, destructor = addresses()
    ndim = t.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*t.strides)
    m = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    dl = m.dl_tensor
    dl.data = _host_pointer(t)
    dl.device = DLDevice(*dev)
    dl.ndim = ndim
    dl.dtype = DLDataType(t.dtype.dlpack_code, t.dtype.bits, 1)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = 0
    keep = _Export(m, shape, strides, t)
    m.manager_ctx = id(keep)            # CPython: id() is the object's address
    m.deleter = _Deleter(deleter_v if versioned else deleter)
    if versioned:
        m.version = DLPackVersion(1, 0)
        m.flags = 0
    _Py_IncRef(keep)                    # dropped by the native deleter / capsule destructor
    _exports.add(keep)
    try:
        return _PyCapsule_New(ctypes.addressof(m), _P_NAME_V if versioned else _P_NAME, destructor)
    except BaseException:
        _Py_DecRef(keep)
        raise


def _make_stream_wait(t, stream) -> None:
    """Make the consumer's stream wait for work still queued on the tensor (DLPack ``stream``)."""
    st = t.storage
    if not st.is_pending():
        return
    st.order_before(Stream.borrow_raw(int(stream), t.device))


def cuda_array_interface(t) -> dict:
    """``__cuda_array_interface__`` v3. On the simulator the pointer is a simulated address."""
    t._check_usable("export (__cuda_array_interface__)")
    isz = t.itemsize
    typestr = t.dtype.np_dtype.str
    st = t.storage
    ready = st.ready_stream()
    stream = None if ready is None else (ready.handle or 1)
    return {
        "shape": t.shape,
        "typestr": typestr,
        "descr": [("", typestr)],
        "data": (t.device_pointer, False),
        "strides": None if t.is_contiguous else tuple(s * isz for s in t.strides),
        "stream": stream,
        "version": 3,
    }


# --- import ----------------------------------------------------------------------------------------
class _DLPackOwner:
    """Keeps a consumed DLPack capsule's memory alive; calls its deleter when collected."""

    __slots__ = ("capsule", "managed", "deleter", "__weakref__")

    def __init__(self, capsule, managed: int, deleter):
        self.capsule = capsule
        self.managed = managed
        self.deleter = deleter

    def __del__(self):
        d, self.deleter = self.deleter, None
        if d:
            try:
                d(self.managed)
            except Exception:
                pass


def from_dlpack(obj, *, stream=None, device=None):
    """Wrap ``obj`` as a ``tile.Tensor``: zero-copy for device memory, a copy for host memory.

    ``obj``: a tile.Tensor (returned as is), anything with ``__dlpack__`` (PyTorch, CuPy, JAX,
    NumPy), or anything with ``__cuda_array_interface__``. GPU arrays of known producers (PyTorch,
    CuPy, ``__cuda_array_interface__`` objects) are read from their metadata, without exporting a
    capsule.

    Args:
        obj: The array to wrap.
        stream: The stream tilejit will first use the data on (a ``tile.Stream`` or anything
            ``Stream.borrow_raw`` accepts); by default the first use, on whatever stream, waits
            for the producer's pending work.
        device: The device of the result (an ordinal or ``tile.Device``): a host array is
            copied there; a GPU array must already be on it. Default: the producer's device.
    """
    tp = type(obj)
    reader = _foreign.reader_for(tp)
    if reader is not None and _backend.current() == _backend.CUDA:
        view = reader(obj)
        if view.device >= 0:
            return _tensor_from_view(view, obj, stream, device)
    if isinstance(obj, Tensor):
        obj._check_usable("import")
        return obj
    if isinstance(obj, Partition):
        raise TensorError("from_dlpack got a Partition; use p.tensor or p.unpartition()")
    if isinstance(obj, np.ndarray):
        return _copy_from_host(obj, stream, device)
    if hasattr(obj, "__dlpack__"):
        return _import_dlpack(obj, stream, device)
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj, stream=stream)
    raise TypeError(f"cannot convert {tp.__name__} to a tile.Tensor: it implements neither "
                    f"__dlpack__ nor __cuda_array_interface__ (NumPy arrays are copied)")


def _tensor_from_view(view, obj, stream, device):
    """A Tensor over a foreign GPU array read from its metadata (no capsule). The producer's
    stream is waited for at the first use (``Storage.use``), on whatever stream that is."""
    dev = Device(view.device)
    if device is not None and Device(device) is not dev:
        raise TensorError(f"from_dlpack: the array is on cuda:{view.device}, not on "
                          f"{Device(device)!r}; copy it to that device first")
    shape, strides = tuple(view.shape), tuple(view.strides)
    for s in strides:
        if s < 0:
            raise TensorError(f"from_dlpack: negative strides {strides} are not supported; make "
                              f"the array contiguous first")
    nbytes = _layout.span_elements(shape, strides) * view.dtype.itemsize
    st = Storage(view.ptr, nbytes, dev, None, obj, view.stream)
    if stream is not None:
        st.use(Stream.borrow_raw(stream, dev))
    return Tensor._wrap(st, shape, strides, 0, view.dtype)


def _import_stream(dev, stream):
    if stream is None:
        return dev.internal_stream()
    return Stream.borrow_raw(stream, dev)


def _import_dlpack(obj, stream, device):
    dev_type, dev_id = _dlpack_device(obj)
    if dev_type in (kDLCPU, kDLCUDAHost) or _backend.current() == _backend.SIMULATOR:
        if dev_type not in (kDLCPU, kDLCUDAHost):
            raise TensorError(f"cannot import a GPU array (DLPack device {dev_type}) on the "
                              f"simulator backend; copy it to the host first")
        return _copy_from_host(_host_array(obj), stream, device)
    if dev_type not in (kDLCUDA, kDLCUDAManaged):
        raise TensorError(f"from_dlpack: unsupported DLPack device type {dev_type} (CUDA and CPU "
                          f"arrays are supported)")
    dev = Device(dev_id) if device is None else Device(device)
    s = _import_stream(dev, stream)
    with dev.current():         # DLPack: the producer's device is current during the export
        capsule = _call_dlpack(obj, s.handle or 1)
        return _tensor_from_capsule(capsule, dev, s, obj)


def _dlpack_device(obj):
    fn = getattr(obj, "__dlpack_device__", None)
    if fn is None:
        return (kDLCPU, 0)
    dev_type, dev_id = fn()
    return int(dev_type), int(dev_id)


def _call_dlpack(obj, stream_handle: int):
    try:
        return obj.__dlpack__(stream=stream_handle, max_version=(1, 0))
    except TypeError:        # producers older than DLPack 1.0 do not take max_version
        return obj.__dlpack__(stream=stream_handle)


def _open_capsule(capsule):
    """Consume a DLPack capsule: ``(owner, data pointer, shape, strides, DType)``. The owner
    runs the producer's deleter (exactly once) when collected."""
    if _PyCapsule_IsValidObj(capsule, _P_NAME_V):
        ptr = _PyCapsule_GetPointer(capsule, _P_NAME_V)
        m = DLManagedTensorVersioned.from_address(ptr)
        used = _P_USED_V
    elif _PyCapsule_IsValidObj(capsule, _P_NAME):
        ptr = _PyCapsule_GetPointer(capsule, _P_NAME)
        m = DLManagedTensor.from_address(ptr)
        used = _P_USED
    else:
        raise TensorError("__dlpack__ returned something that is not an unconsumed DLPack capsule")
    dl = m.dl_tensor
    ndim = dl.ndim
    shape = tuple(dl.shape[i] for i in range(ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(ndim))
    else:
        strides = _layout.contiguous_strides(shape)
    try:
        dtype = _dt.from_dlpack(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    except TypeError as e:
        raise TensorError(f"from_dlpack: {e}") from None
    # Take ownership now: from here on the deleter must run exactly once.
    _PyCapsule_SetName(capsule, used)
    deleter = m.deleter
    owner = _DLPackOwner(capsule, ptr, deleter if ctypes.cast(deleter, ctypes.c_void_p).value
                         else None)
    if any(s < 0 for s in strides):
        raise TensorError(f"from_dlpack: negative strides {strides} are not supported; make the "
                          f"array contiguous first")
    return owner, (dl.data or 0) + dl.byte_offset, shape, strides, dtype


def _tensor_from_capsule(capsule, dev, stream, producer):
    owner, data, shape, strides, dtype = _open_capsule(capsule)
    nbytes = _layout.span_elements(shape, strides) * dtype.itemsize
    st = Storage(data, nbytes, dev, stream, (owner, producer))
    return Tensor._new(st, shape, strides, 0, dtype)


def _host_array(obj) -> np.ndarray:
    """NumPy's view of a host DLPack array, or a copy of it for dtypes NumPy's own DLPack
    import refuses (bfloat16, float8: read through their ml_dtypes types; a CPU torch tensor of
    those is viewed, not copied)."""
    obj = without_grad(obj)
    try:
        return host_view(obj)
    except (BufferError, RuntimeError, TypeError):
        pass
    owner, data, shape, strides, dtype = _open_capsule(_call_dlpack(obj, None))
    span = _layout.span_elements(shape, strides) * dtype.itemsize
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(data)) if span else \
        np.empty(0, np.uint8)
    flat = raw.view(dtype.np_dtype)
    item = dtype.itemsize
    arr = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * item for s in strides))
    out = arr.copy()
    del owner                               # the producer's memory may go now: we copied it
    return out


def from_cuda_array_interface(obj, stream=None):
    """Wrap an object exposing ``__cuda_array_interface__`` (v2/v3) without copying."""
    simulated = _backend.current() == _backend.SIMULATOR
    view = _foreign.view_of_cai(obj.__cuda_array_interface__)   # the device owning the pointer
    if not simulated:
        return _tensor_from_view(view, obj, stream, None)
    from ..simulator.memory import memory as sim
    if any(s < 0 for s in view.strides):
        raise TensorError(f"negative strides {view.strides} are not supported")
    if _layout.prod(view.shape) and not sim.is_live(view.ptr):
        raise TensorError(f"__cuda_array_interface__ pointer 0x{view.ptr:x} is not simulated "
                          f"device memory (on the simulator backend only tilejit memory can be "
                          f"wrapped)")
    nbytes = _layout.span_elements(view.shape, view.strides) * view.dtype.itemsize
    st = Storage(view.ptr, nbytes, Device(view.device), None, obj)
    return Tensor._new(st, view.shape, view.strides, 0, view.dtype)


def _copy_from_host(arr: np.ndarray, stream=None, device=None):
    """A device copy of a host array on ``device``, else on ``stream``'s device (a kernel's
    launch: host arguments go to the launch's device), else on the calling thread's current
    device; queued on that device's internal stream (no sync needed)."""
    from .stream_transfers import upload
    if device is not None:
        dev = Device(device)
    else:
        dev = stream.device if isinstance(stream, Stream) else Device()
    with dev.current():
        return upload(np.asarray(arr), dev.internal_stream())


__all__ = ["from_dlpack", "from_cuda_array_interface", "export_capsule", "device_tuple",
           "cuda_array_interface", "kDLCPU", "kDLCUDA"]
