"""Stream-ordered copies between (possibly strided) tensors and host arrays.

Functions here queue work on a given stream and never synchronize (except that a device-to-host
copy into pageable NumPy memory returns only once the bytes have arrived, which is how the driver
treats pageable memory). They record the stream on every storage they touch, which orders them
after earlier work on other streams.

Strided device-to-device copies are decomposed into as few ``cuMemcpy2DAsync`` calls as possible
after merging dimensions that are contiguous in both tensors. Host transfers of non-contiguous
views are staged through a contiguous device buffer, so host memory is always copied in one piece.
"""
from __future__ import annotations

import itertools
from typing import List, Sequence, Tuple

import numpy as np

from ..errors import TensorError
from . import driver as _d
from .. import layout as _layout

# Refuse copies that would take more driver calls than this (a clear error beats a hang).
MAX_COPY_CALLS = 1 << 16


# --- simulator ----------------------------------------------------------------------------------------
def sim_array(t) -> np.ndarray:
    """A writable NumPy view aliasing a tensor in simulated memory (shape, strides applied)."""
    from ..simulator.memory import memory as sim
    isz = t.itemsize
    span = _layout.span_elements(t.shape, t.strides) * isz
    if span == 0:
        return np.empty(t.shape, dtype=t.dtype.np_dtype)
    raw = sim.host_view(t.device_pointer, span)
    # np.ndarray over the buffer (not as_strided: that goes through typestr, which ml_dtypes lack)
    return np.ndarray(t.shape, dtype=t.dtype.np_dtype, buffer=raw,
                      strides=tuple(s * isz for s in t.strides))


# --- dimension merging --------------------------------------------------------------------------------
def merge_dims(shape: Sequence[int], *strides_list: Sequence[int]) -> Tuple[List[int], List[list]]:
    """Drop size-1 dims and merge neighbours that are contiguous in every stride set."""
    dims = [i for i, n in enumerate(shape) if n != 1]
    out_shape: List[int] = []
    out_strides: List[list] = [[] for _ in strides_list]
    for i in dims:
        n = shape[i]
        if out_shape and all(st[-1] == s[i] * n for st, s in zip(out_strides, strides_list)):
            out_shape[-1] *= n
            for st, s in zip(out_strides, strides_list):
                st[-1] = s[i]
        else:
            out_shape.append(n)
            for st, s in zip(out_strides, strides_list):
                st.append(s[i])
    return out_shape, out_strides


# --- CUDA -----------------------------------------------------------------------------------------------
def _memcpy_d2d(dst: int, src: int, nbytes: int, stream) -> None:
    drv = _d.drv
    _d.check(drv.cuMemcpyDtoDAsync(drv.CUdeviceptr(dst), drv.CUdeviceptr(src), nbytes, stream._cu),
             "cuMemcpyDtoDAsync")


def _memcpy_2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
               stream) -> None:
    drv = _d.drv
    p = drv.CUDA_MEMCPY2D()
    p.srcMemoryType = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
    p.srcDevice = src
    p.srcPitch = spitch
    p.dstMemoryType = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
    p.dstDevice = dst
    p.dstPitch = dpitch
    p.WidthInBytes = width
    p.Height = height
    _d.check(drv.cuMemcpy2DAsync(p, stream._cu), "cuMemcpy2DAsync")


def copy_strided_d2d(dst_ptr: int, dst_strides, src_ptr: int, src_strides, shape, itemsize: int,
                     stream) -> None:
    """Copy a strided region (strides in elements, non-negative) device to device on ``stream``."""
    if _layout.prod(shape) == 0:
        return
    mshape, (dstr, sstr) = merge_dims(shape, dst_strides, src_strides)
    if not mshape:                                      # a single element
        _memcpy_d2d(dst_ptr, src_ptr, itemsize, stream)
        return
    if any(s == 0 for s in dstr):
        raise TensorError("cannot copy into a tensor with a zero stride (broadcast view): several "
                          "elements would share one address")
    isz = itemsize
    if len(mshape) == 1 and dstr[0] == 1 and sstr[0] == 1:
        _memcpy_d2d(dst_ptr, src_ptr, mshape[0] * isz, stream)
        return
    if dstr[-1] == 1 and sstr[-1] == 1:
        width = mshape[-1] * isz                        # contiguous rows
        row_dims = mshape[:-1]
        dstep, sstep = dstr[:-1], sstr[:-1]
    else:
        width = isz                                     # one element per row
        row_dims = mshape
        dstep, sstep = dstr, sstr
    if row_dims:
        height = row_dims[-1]
        dpitch, spitch = dstep[-1] * isz, sstep[-1] * isz
        outer = row_dims[:-1]
        douter, souter = dstep[:-1], sstep[:-1]
    else:
        height, dpitch, spitch, outer, douter, souter = 1, width, width, [], [], []
    use_2d = dpitch >= width and spitch >= width and height > 1
    calls = _layout.prod(outer) * (1 if use_2d else height)
    if calls > MAX_COPY_CALLS:
        raise TensorError(f"copying this non-contiguous view (shape {tuple(shape)}, strides "
                          f"{tuple(src_strides)} -> {tuple(dst_strides)}) needs {calls} copy calls; "
                          f"make the tensors contiguous first")
    for idx in itertools.product(*(range(n) for n in outer)):
        d0 = dst_ptr + sum(i * s for i, s in zip(idx, douter)) * isz
        s0 = src_ptr + sum(i * s for i, s in zip(idx, souter)) * isz
        if use_2d:
            _memcpy_2d(d0, dpitch, s0, spitch, width, height, stream)
        else:
            for r in range(height):
                _memcpy_d2d(d0 + r * dpitch, s0 + r * spitch, width, stream)


# --- tensor-level operations ---------------------------------------------------------------------------
def check_copy_compatible(dst, src) -> None:
    """TensorError unless ``dst`` and ``src`` have the same dtype and element count."""
    if dst.dtype is not src.dtype:
        raise TensorError(f"memcpy between different dtypes ({src.dtype.name} -> "
                          f"{dst.dtype.name}); convert first (api.convert)")
    if dst.size != src.size:
        raise TensorError(f"memcpy needs equal element counts: dst {dst.shape} has {dst.size}, "
                          f"src {src.shape} has {src.size}")


def copy_tensor(dst, src, stream) -> None:
    """``dst[...] = src`` element-wise (same dtype and element count) on ``stream``.

    Shapes may differ only if both are contiguous (a flat copy); otherwise they must be equal.
    """
    check_copy_compatible(dst, src)
    if dst.shape != src.shape and not (dst.is_contiguous and src.is_contiguous):
        raise TensorError(f"memcpy between different shapes ({src.shape} -> {dst.shape}) needs both "
                          f"tensors contiguous; reshape a contiguous copy instead")
    if dst.size == 0:
        return
    if dst.device is not src.device and not stream.is_simulated:
        _copy_between_devices(dst, src, stream)   # simulated devices share the host's memory
        return
    dst.storage.use(stream)
    src.storage.use(stream)
    if stream.is_simulated:
        d, s = sim_array(dst), sim_array(src)
        if d.shape != s.shape:
            d, s = d.reshape(-1), s.reshape(-1)
        np.copyto(d, s, casting="no")
        return
    if dst.shape != src.shape or (dst.is_contiguous and src.is_contiguous):
        _memcpy_d2d(dst.device_pointer, src.device_pointer, dst.nbytes, stream)
        return
    copy_strided_d2d(dst.device_pointer, dst.strides, src.device_pointer, src.strides, src.shape,
                     src.itemsize, stream)


def _copy_between_devices(dst, src, stream) -> None:
    """``dst[...] = src`` for tensors on two GPUs: one ``cuMemcpyPeerAsync`` on ``stream`` (the
    driver uses peer access where the GPUs have it and stages through the host otherwise).
    Non-contiguous sides are staged through a contiguous buffer on their own device."""
    from .stream_transfers import new_tensor
    if not src.is_contiguous:
        s_src = src.device.internal_stream()
        with src.device.current():          # a strided copy runs in its device's context
            tmp = new_tensor(src.shape, src.dtype, s_src)
            copy_tensor(tmp, src, s_src)
        src = tmp
    if not dst.is_contiguous:
        s_dst = dst.device.internal_stream()
        with dst.device.current():
            tmp = new_tensor(dst.shape, dst.dtype, s_dst)
        _copy_between_devices(tmp, src, stream)
        with dst.device.current():
            copy_tensor(dst, tmp, s_dst)
        return
    for st in (dst.storage, src.storage):
        st.use(stream)
    drv = _d.drv
    _d.check(drv.cuMemcpyPeerAsync(drv.CUdeviceptr(dst.device_pointer), dst.device._ctx,
                                   drv.CUdeviceptr(src.device_pointer), src.device._ctx,
                                   dst.nbytes, stream._cu), "cuMemcpyPeerAsync")
    # memory is freed on the stream that used it last: keep that a stream of its own device
    for st in (dst.storage, src.storage):
        if st.device is not stream.device:
            st.use(st.device.internal_stream())


def upload_into(dst, arr: np.ndarray, stream) -> None:
    """Copy a host array into the existing tensor ``dst`` (same element count, cast to its dtype)."""
    host = np.ascontiguousarray(np.asarray(arr).astype(dst.dtype.np_dtype, copy=False))
    if host.size != dst.size:
        raise TensorError(f"cannot copy a host array of {host.size} elements {host.shape} into a "
                          f"tensor of {dst.size} elements {dst.shape}")
    if host.size == 0:
        return
    dst.storage.use(stream)
    if stream.is_simulated:
        sim_array(dst)[...] = host.reshape(dst.shape)
        return
    drv = _d.drv
    target = dst
    if not dst.is_contiguous:          # stage through a contiguous buffer, then copy strided
        from .memory import allocate
        from .tensor import Tensor
        target = Tensor._contiguous(allocate(host.nbytes, stream), dst.shape, dst.dtype)
    _d.check(drv.cuMemcpyHtoDAsync(drv.CUdeviceptr(target.device_pointer), host.ctypes.data,
                                   host.nbytes, stream._cu), "cuMemcpyHtoDAsync")
    if target is not dst:
        copy_tensor(dst, target, stream)


def download(src, stream) -> np.ndarray:
    """A new C-ordered NumPy array with the contents of ``src`` (complete when this returns)."""
    out = np.empty(src.shape, dtype=src.dtype.np_dtype)
    if src.size == 0:
        return out
    src.storage.use(stream)
    if stream.is_simulated:
        out[...] = sim_array(src)
        return out
    drv = _d.drv
    if not src.is_contiguous:
        from .memory import allocate
        from .tensor import Tensor
        tmp = Tensor._contiguous(allocate(src.nbytes, stream), src.shape, src.dtype)
        copy_tensor(tmp, src, stream)
        src = tmp
    # Pageable destination: the driver returns only after the copy has completed.
    _d.check(drv.cuMemcpyDtoHAsync(out.ctypes.data, drv.CUdeviceptr(src.device_pointer), out.nbytes,
                                   stream._cu), "cuMemcpyDtoHAsync")
    # Pageable copies are synchronous already; this also marks the stream's work as complete.
    stream.synchronize()
    return out


__all__ = ["copy_tensor", "check_copy_compatible", "copy_strided_d2d", "upload_into", "download",
           "sim_array", "merge_dims"]
