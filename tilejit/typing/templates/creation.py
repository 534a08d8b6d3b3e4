"""Tile constructors: ``zeros``, ``ones``, ``full``, ``arange``."""
from __future__ import annotations

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import (INT, category, check_wide_int, cutile_rules_on, is_compute_only,
                         materialize_dtype)
from ..types import DTypeType, TileType, dtype_of, is_pow2, is_scalar
from ._base import dtype_arg, function_rule, int_arg, is_none, shape_arg


@function_rule(language.zeros)
def _zeros(b):
    d = dtype_arg(b.dtype, "tile.zeros: dtype", default=dt.float32)
    return TileType(d, shape_arg(b.shape, "tile.zeros: shape"))


@function_rule(language.ones)
def _ones(b):
    d = dtype_arg(b.dtype, "tile.ones: dtype", default=dt.float32)
    return TileType(d, shape_arg(b.shape, "tile.ones: shape"))


@function_rule(language.full)
def _full(b):
    shape = shape_arg(b.shape, "tile.full: shape")
    v = b.value
    if not (is_scalar(v) or (isinstance(v, TileType) and v.ndim == 0)):
        raise TileTypingError(f"tile.full: value must be a scalar, got {describe_type(v)}; use "
                              f"tile.broadcast_to for tiles")
    if is_none(b.dtype):
        d = materialize_dtype((v,))
    else:
        d = dtype_arg(b.dtype, "tile.full: dtype")
        # cuTile's full converts a float into an integer dtype as astype does (a constant as
        # int() does, wrapping): tilejit.cutile follows it, tilejit asks for the conversion
        cutile_cast = cutile_rules_on() and category(d) == INT
        if category(dtype_of(v)) > category(d) and not is_compute_only(d) and not cutile_cast:
            raise TileTypingError(f"tile.full: value {describe_type(v)} does not convert "
                                  f"implicitly to {d}; pass a value of that kind or convert it")
    check_wide_int(v, d, "tile.full")
    return TileType(d, shape)


def arange_range(start, stop, step):
    """``(first, step, count)`` of ``arange(start, stop=None, step=None)`` (NumPy's rules)."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise TileTypingError("tile.arange: step must not be zero")
    return start, step, len(range(start, stop, step))


@function_rule(language.arange)
def _arange(b):
    second = b.stop
    dtype_ty = b.dtype
    if isinstance(second, DTypeType) and is_none(b.step) and is_none(b.dtype):
        second, dtype_ty = None, second
    names = ("start", "stop", "step")
    vals = []
    for name, ty in zip(names, (b.start, second, b.step)):
        vals.append(None if ty is None else
                    int_arg(ty, f"tile.arange: {name}", allow_none=name != "start"))
    start, step, n = arange_range(*vals)
    if not is_pow2(n):
        raise TileTypingError(f"tile.arange({', '.join(str(v) for v in vals if v is not None)}) has {n} elements; a tile needs "
                              f"a power-of-two length (tile extents are powers of two)")
    d = dtype_arg(dtype_ty, "tile.arange: dtype", default=dt.int32)
    if not (d.is_integer or d.is_float) or is_compute_only(d):
        raise TileTypingError(f"tile.arange: dtype must be an integer or float dtype, got {d}")
    if d.is_integer and not d.is_signed and min(start, start + step * (n - 1)) < 0:
        raise TileTypingError(f"tile.arange({', '.join(str(v) for v in vals if v is not None)}) has negative elements, which "
                              f"{d} cannot hold")
    return TileType(d, (n,))
