"""Reductions (``sum prod max min argmax argmin reduce``) and scans (``cumsum cumprod scan``).

Result dtypes: ``sum``/``prod``/``cumsum``/``cumprod`` accumulate bool and integers narrower than
32 bits in ``int32`` (unsigned: ``uint32``); other dtypes keep theirs (NumPy would use 64-bit
integers). ``max``/``min`` keep the dtype; ``argmax``/``argmin`` give ``int32`` indices (flat
indices when ``axis`` is None). ``axis=None`` reduces everything to a rank-0 tile. The tile methods
``t.sum(axis)`` etc. are the same operations.

``reduce``/``scan`` take a ``@tile.function`` combiner ``fn(a, b)``; it is typed separately with
two rank-0 tiles of the input dtype and must return one (see ``TypedKernel.subfunctions``).
"""
from __future__ import annotations

from numba.core import types

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import category, is_compute_only
from ..types import TileFunctionType, TileType, dtype_of, is_scalar, scalar_type
from ._base import (axis_arg, bool_arg, enum_arg, function_rule, method_rule, static_value,
                    NOT_STATIC)

REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin")
NAN_REDUCTIONS = ("max", "min", "argmax", "argmin")


def tile_input(ty, op):
    if isinstance(ty, TileType):
        if is_compute_only(ty.dtype):
            raise TileTypingError(f"{op} of a {ty.dtype} tile is not supported; convert with "
                                  f".astype(tile.float32) first")
        return ty
    if is_scalar(ty):
        raise TileTypingError(f"{op} needs a tile, got the scalar {describe_type(ty)}")
    raise TileTypingError(f"{op} needs a tile, got {describe_type(ty)}")


def accumulate_dtype(d):
    if d.is_bool or (d.is_signed and d.bits < 32):
        return dt.int32
    if d.is_unsigned and d.bits < 32:
        return dt.uint32
    return d


def reduced_shape(shape, axes, keepdims):
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, int):
        axes = (axes,)
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reduction(name):
    op = f"tile.{name}"
    is_arg = name.startswith("arg")

    def rule(b):
        t = tile_input(b.t, op)
        axes = axis_arg(b.axis, t.ndim, f"{op}: axis", allow_none=True, allow_tuple=not is_arg)
        keep = bool_arg(b.keepdims, f"{op}: keepdims")
        if name in NAN_REDUCTIONS:
            bool_arg(b.propagate_nan, f"{op}: propagate_nan")
        if name == "sum":
            _sum_rounding(b, t)
        if is_arg:
            d = dt.int32
        elif name in ("sum", "prod"):
            d = accumulate_dtype(t.dtype)
        else:
            d = t.dtype
        return TileType(d, reduced_shape(t.shape, axes, keep))
    return rule


def _sum_rounding(b, t):
    """``rounding_mode=``/``flush_to_zero=`` of ``sum``: for float tiles only."""
    from .elementwise import NAMED_ARITH_ROUNDING, rounding_arg
    mode = enum_arg(b.rounding_mode, language.RoundingMode, "tile.sum: rounding_mode")
    ftz = bool_arg(b.flush_to_zero, "tile.sum: flush_to_zero")
    if not t.dtype.is_float and (mode is not None or ftz):
        raise TileTypingError(f"tile.sum: rounding_mode and flush_to_zero apply to float tiles "
                              f"only, got a {t.dtype} tile")
    rounding_arg(b.rounding_mode, "tile.sum", NAMED_ARITH_ROUNDING)


for _name in REDUCTIONS:
    _stub = getattr(language, _name)
    function_rule(_stub)(_reduction(_name))
    method_rule(TileType, _name, _stub)(_reduction(_name))


def _scan(name):
    op = f"tile.{name}"

    def rule(b):
        t = tile_input(b.t, op)
        axis_arg(b.axis, t.ndim, f"{op}: axis")
        bool_arg(b.reverse, f"{op}: reverse")
        return TileType(accumulate_dtype(t.dtype), t.shape)
    return rule


function_rule(language.cumsum)(_scan("cumsum"))
function_rule(language.cumprod)(_scan("cumprod"))


def combiner_type(fn_ty, d, op):
    """Type the combiner ``fn(a, b)`` on rank-0 tiles of ``d``; returns its typed kernel."""
    if not isinstance(fn_ty, TileFunctionType):
        raise TileTypingError(f"{op}: fn must be a @tile.function taking two values, got "
                              f"{describe_type(fn_ty)}")
    from ..pipeline import type_subfunction
    elem = TileType(d, ())
    typed = type_subfunction(fn_ty.function, (elem, elem))
    ret = typed.return_type
    if not (ret == elem or ret == scalar_type(d) or
            (isinstance(ret, TileType) and ret.dtype is d and ret.ndim == 0)):
        raise TileTypingError(f"{op}: the combiner {fn_ty.function.name}(a, b) must return a "
                              f"{d} scalar when given two {d} scalars, but it returns "
                              f"{describe_type(ret)}")
    return typed


def _identity(ty, d, op):
    """Int/bool identities are literals; float constants are typed float64 (the lowering reads
    the value from the defining constant or global)."""
    v = static_value(ty)
    if v is NOT_STATIC and types.unliteral(ty) != types.float64:
        raise TileTypingError(f"{op}: identity must be a constant number (a literal or a global "
                              f"constant), got {describe_type(ty)}")
    if category(dtype_of(ty)) > category(d):
        raise TileTypingError(f"{op}: identity {describe_type(ty)} does not fit the tile dtype "
                              f"{d}")


@function_rule(language.reduce)
def _reduce(b):
    t = tile_input(b.t, "tile.reduce")
    axes = axis_arg(b.axis, t.ndim, "tile.reduce: axis", allow_none=True, allow_tuple=True)
    keep = bool_arg(b.keepdims, "tile.reduce: keepdims")
    combiner_type(b.fn, t.dtype, "tile.reduce")
    _identity(b.identity, t.dtype, "tile.reduce")
    return TileType(t.dtype, reduced_shape(t.shape, axes, keep))


@function_rule(language.scan)
def _scan_fn(b):
    t = tile_input(b.t, "tile.scan")
    axis_arg(b.axis, t.ndim, "tile.scan: axis")
    bool_arg(b.reverse, "tile.scan: reverse")
    combiner_type(b.fn, t.dtype, "tile.scan")
    _identity(b.identity, t.dtype, "tile.scan")
    return TileType(t.dtype, t.shape)
