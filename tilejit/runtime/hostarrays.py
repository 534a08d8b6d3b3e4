"""Arrays in host memory as kernel outputs, as in Numba: ``tile.partition(np_array, tile)`` and
``tile.atomic(np_array)``. The array is copied to the device before the launch and the results are
copied back into it when the kernel has finished (two copies; ``runtime.argspec`` does both).

Only arrays whose memory tilejit can write back are accepted: writable NumPy arrays, and host
arrays of other libraries that NumPy views writably through DLPack (a CPU torch tensor). CPU
torch tensors of dtypes NumPy lacks (bfloat16, float8) are viewed as ml_dtypes arrays over the
same memory (:func:`lowp_view`). JAX arrays are immutable and read-only NumPy arrays cannot take
the results: both are refused here, when the output is named, with what to do instead.
"""
from __future__ import annotations

import sys
from typing import Optional

import numpy as np

from .. import dtypes as _dt
from ..errors import TensorError

_DLPACK_HOST = (1, 3)           # kDLCPU, kDLCUDAHost


def is_jax_array(obj) -> bool:
    """A JAX array (on any device): immutable, so never a kernel output."""
    return type(obj).__module__.split(".")[0] in ("jax", "jaxlib")


def in_host_memory(obj) -> bool:
    """``obj`` is a NumPy array or a DLPack array in host memory (a CPU torch tensor)."""
    if isinstance(obj, np.ndarray):
        return True
    if getattr(type(obj), "is_cpu", None) is not None and not obj.is_cpu:
        return False        # a torch GPU tensor: asked without building its interfaces (5 us)
    fn = getattr(obj, "__dlpack_device__", None)
    if fn is None or _has_cuda_array_interface(obj):
        return False
    try:
        return int(fn()[0]) in _DLPACK_HOST
    except Exception:  # noqa: BLE001  (a broken producer: the import reports it later)
        return False


def _has_cuda_array_interface(obj) -> bool:
    try:
        return hasattr(obj, "__cuda_array_interface__")
    except Exception:  # noqa: BLE001  (torch raises KeyError for dtypes it has no typestr for,
        return False   # such as float8: the DLPack device decides then)


# the torch integer dtype of each element width, to view bfloat16 / float8 storage through
_TORCH_INT_OF_WIDTH = {8: "uint8", 16: "int16"}


def lowp_view(obj) -> Optional[np.ndarray]:
    """NumPy's view (no copy) of a CPU torch tensor whose dtype NumPy has not (bfloat16,
    float8), typed with its ml_dtypes type, so writes land in the tensor; None for anything
    else. Only called once ``np.from_dlpack`` has refused ``obj``."""
    if type(obj).__module__.split(".", 1)[0] != "torch":
        return None
    try:
        dt = _dt.as_dtype(obj.dtype)
    except (TypeError, AttributeError):
        return None
    width = _TORCH_INT_OF_WIDTH.get(dt.bits)
    if width is None or not dt.is_float or dt.np_dtype.type.__module__ != "ml_dtypes":
        return None
    if obj.requires_grad:       # refused as torch's DLPack export refuses it for other dtypes
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    # NumPy's DLPack import knows no bfloat16 / float8 codes, but it takes an integer view of
    # the same storage; ml_dtypes then reinterprets the bits in place
    as_int = obj.view(getattr(sys.modules["torch"], width))
    return np.from_dlpack(as_int).view(dt.np_dtype)


def host_view(obj) -> np.ndarray:
    """NumPy's view of the host (DLPack) array ``obj``, its memory shared: ``np.from_dlpack``,
    else :func:`lowp_view`; raises what ``np.from_dlpack`` raised when neither can."""
    try:
        return np.from_dlpack(obj)
    except Exception:  # noqa: BLE001
        arr = lowp_view(obj)
        if arr is None:
            raise
        return arr


def refuse_jax(obj, what: str) -> None:
    """TensorError for a JAX array named as an output (``what``: ``tile.partition()`` ...)."""
    if is_jax_array(obj):
        raise TensorError(
            f"{what}: JAX arrays are immutable, so a kernel cannot write its results into one. "
            f"Write into a tile.Tensor (api.zeros(shape).sync()) or a NumPy array, then make the "
            f"JAX array from it (jax.numpy.from_dlpack(tensor) is zero-copy); JAX arrays are "
            f"fine as inputs")


def without_grad(obj):
    """``obj.detach()`` for a torch tensor that requires grad (the same memory, which torch's
    DLPack export refuses), else ``obj``. A kernel reads a CPU tensor that requires grad as it
    reads a CUDA one (by ``data_ptr()``, whatever autograd says); outputs stay refused here
    (``tile.partition``), and ``ct.launch`` writes into one as cuTile does (Liger's cross
    entropy writes its gradient into the logits)."""
    if getattr(obj, "requires_grad", False) and type(obj).__module__.startswith("torch"):
        return obj.detach()
    return obj


def writable_host_array(obj, what: str) -> np.ndarray:
    """The NumPy array through which results are written back into the host array ``obj``
    (``obj`` itself for NumPy); TensorError naming the problem when they cannot be."""
    refuse_jax(obj, what)
    if isinstance(obj, np.ndarray):
        arr = obj
    else:
        try:
            arr = host_view(obj)
        except Exception as e:  # noqa: BLE001
            raise TensorError(f"{what}: this {type(obj).__name__} is in host memory and NumPy "
                              f"cannot view it ({type(e).__name__}: {e}), so the results could "
                              f"not be written back into it; write into a NumPy array or a "
                              f"tile.Tensor instead") from None
    if not arr.flags.writeable:
        kind = "NumPy array" if arr is obj else type(obj).__name__
        raise TensorError(f"{what}: this {kind} is read-only, so the kernel's results could not "
                          f"be written back into it; pass a writable {kind} (e.g. a copy)")
    if _elements_overlap(arr):
        raise TensorError(f"{what}: the elements of this array overlap in memory (strides "
                          f"{arr.strides} for shape {arr.shape}, e.g. a view made by "
                          f"np.broadcast_to): results written through its elements would overwrite "
                          f"each other; write into np.zeros(shape) instead and combine the "
                          f"overlapping elements yourself (np.add.at semantics need that)")
    return arr


def _elements_overlap(arr: np.ndarray) -> bool:
    """Whether two elements of ``arr`` may share memory: with the axes of extent > 1 in order
    of stride, each stride must step over the whole extent of the axis before it."""
    dims = sorted((abs(st), n) for st, n in zip(arr.strides, arr.shape) if n > 1)
    span = arr.itemsize
    for st, n in dims:
        if st < span:
            return True
        span = st * n
    return False


def broadcast_axes(arr: np.ndarray) -> tuple:
    """The axes along which a host input repeats its elements (stride 0, as
    ``np.broadcast_to`` and ``torch.expand`` make): copied once, not expanded (2**31 float32
    ones would be 8 GiB on the device)."""
    return tuple(i for i, (st, n) in enumerate(zip(arr.strides, arr.shape)) if st == 0 and n > 1)


def one_per_run(arr: np.ndarray, axes: tuple) -> np.ndarray:
    """``arr`` with each of the broadcast ``axes`` cut to extent 1 (a view): what is copied."""
    if not axes:
        return arr
    return arr[tuple(slice(0, 1) if i in axes else slice(None) for i in range(arr.ndim))]


def run_strides(strides: tuple, axes: tuple) -> tuple:
    """The device copy's ``strides`` with 0 on the broadcast ``axes`` again."""
    return tuple(0 if i in axes else st for i, st in enumerate(strides)) if axes else strides


def broadcast_input(obj, stream):
    """A read-only device tensor for the host DLPack input ``obj`` (a CPU torch tensor) that
    has broadcast axes: one element per run copied, stride 0 kept; None for any other input."""
    if isinstance(obj, np.ndarray) or not in_host_memory(obj):
        return None
    from .dlpack import _copy_from_host, _host_array
    arr = _host_array(obj)
    axes = broadcast_axes(arr)
    if not axes:
        return None
    t = _copy_from_host(one_per_run(arr, axes), stream)
    return t._derive(arr.shape, run_strides(t.strides, axes), 0)


def output_array(obj, what: str):
    """What a host output is written back through (a writable NumPy array), or ``obj`` itself
    when it lives on a GPU; JAX arrays and read-only host arrays are refused."""
    refuse_jax(obj, what)
    if in_host_memory(obj):
        return writable_host_array(obj, what)
    return obj


def float64_hint(message: str, infos, names) -> str:
    """For a compile error about float64 (``message``): which arguments are float64 NumPy arrays
    (NumPy's default float), and that passing ``x.astype(np.float32)`` avoids changing the
    kernel; "" when that is not the story."""
    hits = [n for n, i in zip(names, infos)
            if i.host is not None and i.host.dtype == np.float64]
    if not hits or "float64" not in message:
        return ""
    which = ", ".join(f"'{n}'" for n in hits)
    return (f"\nnote: {which} {'is a' if len(hits) == 1 else 'are'} float64 NumPy "
            f"array{'s' if len(hits) > 1 else ''} (NumPy's default float). To compute in "
            f"float32, pass {hits[0]}.astype(np.float32) instead of changing the kernel")


__all__ = ["is_jax_array", "in_host_memory", "without_grad", "lowp_view", "host_view",
           "refuse_jax", "writable_host_array", "output_array", "float64_hint", "broadcast_axes",
           "one_per_run", "run_strides", "broadcast_input"]
