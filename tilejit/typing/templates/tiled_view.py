"""Tiled views: ``x.tiled_view(tile_shape, *, padding_mode=UNDETERMINED, traversal_steps=None)``.

cuTile Python's ``Array.tiled_view`` (``ct.TiledView``), on tensor parameters of both front ends:
a view of ``x`` as a grid of tiles of ``tile_shape`` whose origins lie ``traversal_steps``
elements apart along each axis (the tile shape by default: tiles side by side; smaller steps
overlap the tiles, larger ones leave gaps between them). ``tile_shape=()`` gives 0-d tiles, one
element each (steps of 1 by default).

==========================================  =====================================================
``v.dtype`` / ``v.tile_shape`` /            the array's dtype / the tile shape as given / the
``v.traversal_steps`` / ``v.ndim``          steps (all compile-time constants) / the array's rank
``v.num_tiles(axis)``                       int32: ``cdiv(x.shape[axis], traversal_steps[axis])``
``v.load(index, *, check_bounds=True,       ``Tile[x.dtype, tile_shape]``; elements past the
latency=None, allow_tma=None)``             array's end read as the padding mode's value
``v.store(index, tile, *, check_bounds,     ``tile`` broadcast to ``tile_shape`` and cast
latency, allow_tma)``                       implicitly (cuTile's rule) to the array's dtype;
                                            elements past the array's end are skipped
``v.atomic_store_add|max|min|and|or|xor     an element-wise atomic update of the tile (relaxed,
(index, update, /)``                        device scope), no result
==========================================  =====================================================

``index`` is in units of tiles: one integer scalar per axis (a bare int for rank 1). The typing
follows cuTile's checks and messages (rank of the shapes, positive steps, broadcastable stored
tiles, implicit casts, the dtypes each atomic supports).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from numba.core import types

from ... import dtypes as dt
from ... import language
from ...dtypes import DType
from ..diagnostics import TileTypingError, describe_type
from ..types import (DTypeType, TensorPartitionViewType, TensorType, TileType, dtype_of,
                     format_shape, is_pow2, is_scalar)
from . import _base
from ._base import attribute_rule, bool_arg, enum_arg, function_rule, int_arg, is_none, \
    method_rule, read_only_error
from .memory import latency_arg

PaddingMode = language.PaddingMode


class TiledViewType(TensorPartitionViewType):
    """``x.tiled_view(tile_shape, ...)``: a tile view of the tensor type ``source`` with tiles of
    ``tile_shape`` (``()``: single elements) whose origins are ``traversal_steps`` elements apart.
    ``padding`` is the PaddingMode member (UNDETERMINED: unspecified values)."""

    def __init__(self, source, tile_shape: Tuple[int, ...], padding, traversal_steps):
        self.source = source
        self.tile_shape = tuple(int(s) for s in tile_shape)
        self.padding = padding
        self.traversal_steps = tuple(int(s) for s in traversal_steps)
        pad = "" if padding in (None, PaddingMode.UNDETERMINED) else f", padding={padding.name}"
        steps = "" if not self.strided else f", steps={format_shape(self.traversal_steps)}"
        types.Type.__init__(self, name=f"TiledView[{source.dtype.name}, "
                                       f"{format_shape(self.tile_shape)}{steps}{pad}]")

    @property
    def key(self):
        return self.source, self.tile_shape, self.padding, self.traversal_steps

    @property
    def box_shape(self) -> Tuple[int, ...]:
        """The shape of the box each access touches (one element per axis for 0-d tiles)."""
        return self.tile_shape or (1,) * self.source.ndim

    @property
    def strided(self) -> bool:
        """Whether tile origins are not ``box_shape`` apart (overlapping or gapped tiles)."""
        return self.traversal_steps != self.box_shape


_base.TYPE_NOUNS[TiledViewType] = "tiled view"


# --------------------------------------------------------------------------------------------------
# Argument checks
def _static_ints(ty, what: str) -> Optional[Tuple[int, ...]]:
    """A constant int or tuple of constant ints as a tuple."""
    if isinstance(ty, types.IntegerLiteral):
        return (ty.literal_value,)
    if isinstance(ty, types.BaseTuple) and all(isinstance(t, types.IntegerLiteral)
                                               for t in ty.types):
        return tuple(t.literal_value for t in ty.types)
    raise TileTypingError(f"{what} must be a compile-time constant int or tuple of ints "
                          f"(literals or ct.Constant[int] parameters), got {describe_type(ty)}")


def _tile_shape(ty, ndim: int) -> Tuple[int, ...]:
    shape = _static_ints(ty, "tiled_view: tile_shape")
    if shape and len(shape) != ndim:
        raise TileTypingError(f"tiled_view: Expected shape length to be {ndim}, got {len(shape)} "
                              f"(tile_shape {shape} for a {ndim}-d array)")
    bad = [s for s in shape if not is_pow2(s)]
    if bad:
        raise TileTypingError(f"tiled_view: tile_shape {shape} is not valid: every tile extent "
                              f"must be a power of two, but {bad[0]} is not")
    return shape


def _traversal_steps(ty, shape: Tuple[int, ...], ndim: int) -> Tuple[int, ...]:
    if is_none(ty):
        return shape or (1,) * ndim
    steps = _static_ints(ty, "tiled_view: traversal_steps")
    if len(steps) != ndim:
        raise TileTypingError(f"tiled_view: Expected traversal_steps length to be {ndim}, got "
                              f"{len(steps)}")
    for i, s in enumerate(steps):
        if s <= 0:
            raise TileTypingError(f"tiled_view: element {i} of traversal_steps ({s}) is not "
                                  f"positive")
    return steps


def _index(ty, v: TiledViewType, what: str):
    items = tuple(ty.types) if isinstance(ty, types.BaseTuple) else (ty,)
    if len(items) != v.ndim:
        raise TileTypingError(f"{what}: Index size {len(items)} does not match the tiled view "
                              f"rank {v.ndim}")
    for t in items:
        d = dtype_of(t)
        if d is None or not d.is_integer or not (is_scalar(t) or (isinstance(t, TileType) and
                                                                   t.ndim == 0)):
            raise TileTypingError(f"{what}: the index must be integer scalars (tile coordinates, "
                                  f"one per axis), got {describe_type(ty)}")
    return items


def _broadcastable(src: Tuple[int, ...], dst: Tuple[int, ...]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(reversed(src), reversed(dst)))


_RESTRICTED = (dt.tfloat32, dt.float8_e4m3fn, dt.float8_e5m2)


def implicit_cast_ok(src: DType, dst: DType) -> bool:
    """cuTile's implicit conversion rule: ``src`` converts to ``dst`` without ``astype`` when
    their common dtype is ``dst`` (bool widens to anything; signed and unsigned integers only
    to wider ones of their own kind; integers to any float; float16 and bfloat16 only to float32
    and float64; the storage formats tf32 and float8 to nothing else)."""
    if src is dst:
        return True
    if src.is_tiny_float or dst.is_tiny_float or src in _RESTRICTED or dst in _RESTRICTED:
        return False
    if src.is_bool:
        return True
    if dst.is_bool:
        return False
    if src.is_integer and dst.is_integer:
        return src.is_unsigned == dst.is_unsigned and src.bits <= dst.bits
    if src.is_integer:
        return dst.is_float
    if dst.is_integer:
        return False
    if {src, dst} == {dt.float16, dt.bfloat16}:
        return False
    return src.bits <= dst.bits


def _category(d: DType) -> int:
    return 0 if d.is_bool else 1 if d.is_integer else 2


def check_implicit_cast(ty, dst: DType, what: str) -> None:
    """A stored tile or update ``ty`` converts to ``dst``: a tile by cuTile's rule
    (:func:`implicit_cast_ok`), a scalar (weak: a Python number, a scalar argument or result)
    when its kind (bool < int < float) is at most ``dst``'s, and an int constant must fit."""
    src = dtype_of(ty)
    if isinstance(ty, TileType):
        if not implicit_cast_ok(src, dst):
            raise TileTypingError(f"{what}: cannot implicitly cast {src} to {dst}; convert it "
                                  f"with .astype(ct.{dst.name})")
        return
    value = ty.literal_value if isinstance(ty, types.Literal) else None
    shown = src if value is None else repr(value)
    if dst.is_bool:
        ok = src.is_bool or (isinstance(value, int) and value in (0, 1))
    else:
        ok = _category(src) <= _category(dst)
    if not ok:
        raise TileTypingError(f"{what}: cannot implicitly cast {shown} to {dst}")
    if isinstance(value, int) and not isinstance(value, bool) and dst.is_integer:
        info = np.iinfo(dst.np_dtype)
        if not int(info.min) <= value <= int(info.max):
            raise TileTypingError(f"{what}: {value} is out of range of {dst} "
                                  f"[{info.min}, {info.max}]")


def _register_implicit_cast():
    from ...implicit_casts import implicit_cast

    @function_rule(implicit_cast)
    def _rule(b):
        """cuTile's implicit conversion of an operand (the ``ct`` adapters' atomics)."""
        dst = b.dtype.dtype if isinstance(b.dtype, DTypeType) else None
        what = b.what.literal_value if isinstance(b.what, types.Literal) else "value"
        if dst is None:
            raise TileTypingError(f"{what}: the target dtype must be a dtype")
        if not is_none(b.atomic):
            from .atomics import check_atomic_dtype
            check_atomic_dtype(b.atomic.literal_value, dst)
        shape = _value_shape(b.x, what)
        src = dtype_of(b.x)
        if bool_arg(b.exact, "exact") and not isinstance(b.x, types.Literal) and src is not dst:
            raise TileTypingError(f"Bitwise atomic read-modify-write operations require the "
                                  f"update dtype ({src}) to exactly match the target dtype "
                                  f"({dst})")
        check_implicit_cast(b.x, dst, what)
        return TileType(dst, shape)


def _value_shape(ty, what: str) -> Tuple[int, ...]:
    if isinstance(ty, TileType):
        return ty.shape
    if is_scalar(ty):
        return ()
    raise TileTypingError(f"{what} must be a tile or scalar, got {describe_type(ty)}")


def _hints(b) -> None:
    bool_arg(b.check_bounds, "check_bounds")
    latency_arg(b.latency)
    if not is_none(b.allow_tma):
        bool_arg(b.allow_tma, "allow_tma")


def _writable(v: TiledViewType, what: str) -> None:
    if not v.writable:
        raise read_only_error(what, v.source)


# --------------------------------------------------------------------------------------------------
# x.tiled_view(...)
def _tiled_view_sig(x, tile_shape, *, padding_mode=PaddingMode.UNDETERMINED,
                    traversal_steps=None):
    """x.tiled_view(tile_shape, *, padding_mode=UNDETERMINED, traversal_steps=None)"""


@method_rule(TensorType, "tiled_view", _tiled_view_sig, op="Tensor.tiled_view")
def _tiled_view(b):
    x = b.x
    shape = _tile_shape(b.tile_shape, x.ndim)
    padding = enum_arg(b.padding_mode, PaddingMode, "tiled_view: padding_mode")
    steps = _traversal_steps(b.traversal_steps, shape, x.ndim)
    return TiledViewType(x, shape, padding, steps)


# --------------------------------------------------------------------------------------------------
# Attributes
attribute_rule(TiledViewType, "tile_shape")(
    lambda ty: types.Tuple([types.literal(int(s)) for s in ty.tile_shape]))
attribute_rule(TiledViewType, "traversal_steps")(
    lambda ty: types.Tuple([types.literal(int(s)) for s in ty.traversal_steps]))
attribute_rule(TiledViewType, "dtype")(lambda ty: DTypeType(ty.dtype))
attribute_rule(TiledViewType, "ndim")(lambda ty: types.literal(ty.ndim))


# --------------------------------------------------------------------------------------------------
# Methods
def _num_tiles_sig(v, axis):
    """v.num_tiles(axis)"""


@method_rule(TiledViewType, "num_tiles", _num_tiles_sig, op="TiledView.num_tiles")
def _num_tiles(b):
    a = int_arg(b.axis, "num_tiles: axis")
    if not -b.v.ndim <= a < b.v.ndim:
        raise TileTypingError(f"num_tiles: axis {a} is out of bounds for a {b.v.ndim}-d tiled "
                              f"view")
    return types.int32


def _load_sig(v, index, *, check_bounds=True, latency=None, allow_tma=None):
    """v.load(index, *, check_bounds=True, latency=None, allow_tma=None)"""


@method_rule(TiledViewType, "load", _load_sig, op="TiledView.load")
def _load(b):
    v = b.v
    _index(b.index, v, "load")
    _hints(b)
    return TileType(v.dtype, v.tile_shape)


def _store_sig(v, index, tile, *, check_bounds=True, latency=None, allow_tma=None):
    """v.store(index, tile, *, check_bounds=True, latency=None, allow_tma=None)"""


@method_rule(TiledViewType, "store", _store_sig, op="TiledView.store")
def _store(b):
    v = b.v
    _writable(v, "store to a tiled view of")
    _index(b.index, v, "store")
    shape = _value_shape(b.tile, "store: the stored tile")
    if not _broadcastable(shape, v.tile_shape):
        raise TileTypingError(f"store: Tile shape {shape} is not broadcastable to the tiled "
                              f"view's tile shape {v.tile_shape}")
    check_implicit_cast(b.tile, v.dtype, "store: Stored tile is incompatible with tiled view's "
                                         "dtype")
    _hints(b)
    return types.none


#: method -> (dtypes it supports, bitwise: the update's dtype must match exactly)
_INT_32_64 = (dt.int32, dt.int64, dt.uint32, dt.uint64)
ATOMIC_STORES = {
    "atomic_store_add": (_INT_32_64 + (dt.float32, dt.float64, dt.float16, dt.bfloat16), False),
    "atomic_store_max": (_INT_32_64, False),
    "atomic_store_min": (_INT_32_64, False),
    "atomic_store_and": (_INT_32_64, True),
    "atomic_store_or": (_INT_32_64, True),
    "atomic_store_xor": (_INT_32_64, True),
}


def _atomic_sig(v, index, update, /):
    """v.atomic_store_<op>(index, update, /)"""


def _atomic_rule(name: str):
    supported, bitwise = ATOMIC_STORES[name]

    def rule(b):
        v = b.v
        if v.dtype not in supported:
            ok = ", ".join(d.name for d in supported)
            raise TileTypingError(f"{name}: Unsupported tiled view dtype: {v.dtype} (supported: "
                                  f"{ok})")
        _writable(v, f"use {name} on a tiled view of")
        _index(b.index, v, name)
        shape = _value_shape(b.update, f"{name}: the update")
        if not _broadcastable(shape, v.tile_shape):
            raise TileTypingError(f"{name}: Update shape {shape} is not broadcastable to the "
                                  f"tiled view's tile shape {v.tile_shape}")
        src = dtype_of(b.update)
        if bitwise:
            if not isinstance(b.update, types.Literal) and src is not v.dtype:
                raise TileTypingError(
                    f"{name}: Bitwise atomic read-modify-write operations require the update "
                    f"dtype ({src}) to exactly match the target dtype ({v.dtype})")
            if isinstance(b.update, types.Literal):
                check_implicit_cast(b.update, v.dtype, f"{name}: Update is incompatible with "
                                                       f"the target dtype")
        else:
            check_implicit_cast(b.update, v.dtype, f"{name}: Update is incompatible with the "
                                                   f"target dtype")
        return types.none
    return rule


for _name in ATOMIC_STORES:
    method_rule(TiledViewType, _name, _atomic_sig,
                op=f"TiledView.{_name}")(_atomic_rule(_name))


_register_implicit_cast()
