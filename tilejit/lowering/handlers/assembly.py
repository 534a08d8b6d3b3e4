"""Tiles assembled from parts: astile, insert, pack_to_bytes, unpack_from_bytes.

All four are built from existing Tile IR ops, so tileiras and the simulator need nothing new:

* ``astile``: each leaf converted to the dtype, as a (1,) tile; pairs joined by ``cat`` (a
  balanced tree: every extent is a power of two) and the result reshaped (float4: assembled in
  float32 and converted once). A value of constants only is one dense constant.
* ``insert``: ``select(mask, tiled value, x)``; the mask compares ``iota >> log2(sub extent)``
  with the (possibly run-time) grid index along each axis, and the value is tiled over ``x`` by
  a broadcast of its interleaved reshape.
* ``pack_to_bytes``: bitcast to the unsigned integer of the width, shift right by 0, 8, 16, ...
  (a (N, bytes) broadcast), truncate to uint8, flatten: little-endian. float4 pairs two codes
  per byte (low nibble first).
* ``unpack_from_bytes``: the inverse: (M, bytes) extended to the wide unsigned type, shifted left,
  or-ed along the byte axis (the bits do not overlap), bitcast.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ... import language as L
from ...typing.templates.assembly import insert_unit
from ...tileir import TileType
from .. import narrow
from ..emit import TV, elem
from . import dt_of, handles

_UINT = {8: D.uint8, 16: D.uint16, 32: D.uint32, 64: D.uint64}


def _dense(lw, arr, dt) -> TV:
    """The NumPy array ``arr`` as a constant tile of ``dt``."""
    return TV(lw.b.constant(arr, TileType(elem(dt), arr.shape)), dt)


# --- astile ---------------------------------------------------------------------------------------
def _leaves(v):
    if isinstance(v, tuple):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def _shape_of(v):
    return (len(v),) + _shape_of(v[0]) if isinstance(v, tuple) else ()


_DENSE_OK = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64,
             D.float16, D.float32, D.float64, D.bool_)


def _leaf(lw, v, d) -> TV:
    """One element of ``astile`` as a (1,) tile of ``d``."""
    if isinstance(v, TV):
        if d is D.float8_e8m0fnu and not v.dtype.is_float:    # tileiras: no int -> e8m0
            v = lw.em.cast(v, D.float32)
        t = lw.em.cast(v, d)
    elif d.is_bool or d in _DENSE_OK:
        t = lw.em.const(v, d)
    else:                                  # narrow floats: round through the conversion
        src = D.float32 if d is D.float8_e8m0fnu else D.bool_ if isinstance(
            v, (bool, np.bool_)) else D.int64 if isinstance(v, (int, np.integer)) else D.float32
        t = lw.em.cast(lw.em.const(float(v) if src is D.float32 else v, src), d)
    return lw.em.reshape(t, (1,))


@handles(L.astile)
def _astile(lw, info, args, rty):
    d = dt_of(rty)
    value = lw.arg(args, "value")
    leaves = list(_leaves(value))
    if all(isinstance(x, (bool, int, float, np.number, np.bool_)) for x in leaves) and \
            d in _DENSE_OK:
        arr = np.array([bool(x) if d.is_bool else x for x in leaves]).astype(d.np_dtype)
        if not rty.shape:
            return lw.em.const(arr.item(), d)
        return _dense(lw, arr.reshape(rty.shape), d)
    # float4 tiles need an even number of elements (tileiras): assemble in float32, convert once
    w = D.float32 if d.is_fp4 else d
    parts = [_leaf(lw, x, w) for x in leaves]
    while len(parts) > 1:
        parts = [lw.em.cat(parts[i], parts[i + 1], 0) for i in range(0, len(parts), 2)]
    return lw.em.cast(lw.em.reshape(parts[0], rty.shape), d)


# --- insert ---------------------------------------------------------------------------------------
@handles(L.insert)
def _insert(lw, info, args, rty):
    em = lw.em
    x = lw.tv(lw.arg(args, "t"))
    v = lw.tv(lw.arg(args, "value"), x.dtype)
    shape = x.shape
    if not shape:                          # a 0-d tile: the value itself
        return em.reshape(v, ())
    unit = insert_unit(shape, v.shape)
    index = lw.arg(args, "index")
    index = index if isinstance(index, tuple) else (index,)
    i32 = D.int32
    mask = None
    for axis, (full, s, i) in enumerate(zip(shape, unit, index)):
        if s == full:                      # one sub-tile along this axis
            continue
        grid = em.iota(full, i32)
        if s > 1:
            grid = em.binary(">>", grid, em.const(s.bit_length() - 1, i32, (full,)), i32)
        hit = em.compare("==", grid, em.broadcast(lw.tv(i, i32), (full,)))
        hit = em.reshape(hit, tuple(full if a == axis else 1 for a in range(len(shape))))
        mask = hit if mask is None else em.binary("&", mask, hit, D.bool_)     # broadcasts
    if mask is None:                       # the value is the whole tile
        return em.reshape(v, shape)
    # the value tiled over x: (1, s0, 1, s1, ...) -> (n0, s0, n1, s1, ...) -> x's shape
    v = em.reshape(v, unit)
    inter = tuple(e for s in unit for e in (1, s))
    tiled = tuple(e for full, s in zip(shape, unit) for e in (full // s, s))
    v = em.reshape(em.broadcast(em.reshape(v, inter), tiled), shape)
    return em.where(em.broadcast(mask, shape), v, x, x.dtype)


# --- pack_to_bytes / unpack_from_bytes ----------------------------------------------------------
def _shift_amounts(lw, nbytes: int, dt) -> TV:
    """``0, 8, 16, ...`` (``nbytes`` of them) as a (1, nbytes) tile of ``dt``."""
    return _dense(lw, (np.arange(nbytes) * 8).astype(dt.np_dtype).reshape(1, nbytes), dt)


def _fp4_codes(lw, x: TV) -> TV:
    """float4 values -> their e2m1 codes as uint8 (through float32, exact)."""
    x32 = TV(x.value, D.float32) if narrow.carried(x.dtype) else lw.em.cast(x, D.float32)
    return narrow.fp4_to_codes(lw.em, x32)


@handles(L.pack_to_bytes)
def _pack_to_bytes(lw, info, args, rty):
    em = lw.em
    x = lw.tv(lw.arg(args, "t"))
    n = int(np.prod(x.shape))
    flat = em.reshape(x, (n,))
    u8 = D.uint8
    if x.dtype.is_fp4:                     # two codes a byte, the first in the low nibble
        codes = em.reshape(_fp4_codes(lw, flat), (n // 2, 2))
        col = (lambda j: em.reshape(TV(lw.b.extract(
            codes.value, [em.const(0, D.int32).value, em.const(j, D.int32).value],
            (n // 2, 1)), u8), (n // 2,)))
        lo, hi = col(0), col(1)
        return em.binary("|", lo, em.binary("<<", hi, em.const(4, u8, (n // 2,)), u8), u8)
    bits = x.dtype.bits
    u = em.bitcast(flat, _UINT[bits])
    if bits == 8:
        return u
    nb = bits // 8
    wide = em.broadcast(em.reshape(u, (n, 1)), (n, nb))
    shifted = em.binary(">>", wide, em.broadcast(_shift_amounts(lw, nb, u.dtype), (n, nb)),
                        u.dtype)
    return em.reshape(em.cast(shifted, u8), (n * nb,))


@handles(L.unpack_from_bytes)
def _unpack_from_bytes(lw, info, args, rty):
    em = lw.em
    x = lw.tv(lw.arg(args, "t"), D.uint8)
    d = dt_of(rty)
    m = rty.shape[0]
    u8 = D.uint8
    if d.is_fp4:
        k = x.shape[0]
        lo = em.reshape(em.binary("&", x, em.const(15, u8, (k,)), u8), (k, 1))
        hi = em.reshape(em.binary(">>", x, em.const(4, u8, (k,)), u8), (k, 1))
        v32 = narrow.fp4_from_codes(em, em.reshape(em.cat(lo, hi, 1), (m,)))
        return TV(v32.value, d) if narrow.carried(d) else em.cast(v32, d)
    bits = d.bits
    if bits == 8:
        return em.bitcast(x, d)
    nb = bits // 8
    ut = _UINT[bits]
    wide = em.cast(em.reshape(x, (m, nb)), ut)
    shifted = em.binary("<<", wide, em.broadcast(_shift_amounts(lw, nb, ut), (m, nb)), ut)
    r = em.reduce("or", shifted, 1)
    return em.bitcast(r, d)
