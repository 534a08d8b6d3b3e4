"""Reductions (``sum prod max min argmax argmin reduce``) and scans (``cumsum cumprod scan``).

Result dtypes: ``sum``/``prod``/``cumsum``/``cumprod`` accumulate bool and integers narrower than
32 bits in ``int32`` (unsigned: ``uint32``); other dtypes keep theirs (NumPy would use 64-bit
integers). ``max``/``min`` keep the dtype; ``argmax``/``argmin`` give ``int32`` indices (flat
indices when ``axis`` is None). ``axis=None`` reduces everything to a rank-0 tile. The tile methods
``t.sum(axis)`` etc. are the same operations.

``reduce``/``scan`` take a combiner: a function (lambda, nested def, ``@tile.function``) typed
separately on rank-0 tiles (``2N`` of them for a tuple of ``N`` tiles, returning ``N``; see
``TypedKernel.subfunctions``), or a builtin of ``language.BUILTIN_COMBINERS``.
"""
from __future__ import annotations

from numba.core import types

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import broadcast_shapes, category, is_compute_only, result_dtype
from ..types import TileFunctionType, TileType, dtype_of, is_scalar, scalar_type
from ._base import (axis_arg, bool_arg, enum_arg, function_rule, is_none, method_rule,
                    static_value, NOT_STATIC)

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
        if name in ("sum", "prod"):
            from .elementwise import arith_rounding
            arith_rounding(b, op, t.dtype, f"tiles only, got a {t.dtype} tile")
        if is_arg:
            d = dt.int32
        elif name in ("sum", "prod"):
            d = accumulate_dtype(t.dtype)
        else:
            d = t.dtype
        return TileType(d, reduced_shape(t.shape, axes, keep))
    return rule


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
        from .elementwise import arith_rounding
        arith_rounding(b, op, t.dtype, f"tiles only, got a {t.dtype} tile")
        return TileType(accumulate_dtype(t.dtype), t.shape)
    return rule


function_rule(language.cumsum)(_scan("cumsum"))
function_rule(language.cumprod)(_scan("cumprod"))


def _tiles(ty, op):
    """The operand tiles of reduce/scan (one tile, or a tuple broadcast to one shape) and
    whether they came as a tuple."""
    if isinstance(ty, types.BaseTuple):
        if not ty.types:
            raise TileTypingError(f"{op}: the tuple of tiles is empty")
        first = next((t for t in ty.types if isinstance(t, TileType)), None)
        if first is None:
            raise TileTypingError(f"{op} needs at least one tile in the tuple, got "
                                  f"{describe_type(ty)}")
        # scalars in the tuple (a count of 1.0 for Welford) are weak: they take the first
        # tile's kind of dtype and its shape
        ts = [tile_input(t, op) if not is_scalar(t) else
              TileType(result_dtype((first, t), op), ()) for t in ty.types]
        shape = broadcast_shapes(*(t.shape for t in ts), what=f"the tiles of {op}")
        return [TileType(t.dtype, shape) for t in ts], True
    return [tile_input(ty, op)], False


def builtin_combiner(value):
    """The kind (``"sum"``, ``"max"`` ...) of a builtin combiner, or None."""
    try:
        return language.BUILTIN_COMBINERS.get(value)
    except TypeError:                     # unhashable
        return None


def combiner_type(fn_ty, dtypes, op):
    """Check the combiner ``fn`` for tiles of ``dtypes``; returns the builtin kind or None (a
    function, typed on rank-0 tiles and recorded in the kernel's ``subfunctions``)."""
    kind = builtin_combiner(getattr(fn_ty, "typing_key", None))
    names = ", ".join(sorted({getattr(k, "__module__", "") + "." + k.__name__
                              for k in language.BUILTIN_COMBINERS}))
    if kind is not None:
        if len(dtypes) != 1:
            raise TileTypingError(f"{op}: {fn_ty.typing_key.__name__} combines one tile; for a "
                                  f"tuple of {len(dtypes)} tiles write a function of "
                                  f"{2 * len(dtypes)} values returning {len(dtypes)}")
        d = dtypes[0]
        if kind in ("and", "or", "xor") and d.is_float:
            raise TileTypingError(f"{op}: a bitwise combiner needs an integer or bool tile, got "
                                  f"{d}")
        if kind in ("sum", "prod") and d.is_bool:
            raise TileTypingError(f"{op}: operator.add/mul of bools is ambiguous; use "
                                  f"operator.or_/and_, or tile.sum(t) (which counts)")
        return kind
    if not isinstance(fn_ty, TileFunctionType):
        raise TileTypingError(f"{op}: fn must be a lambda, a nested function, a @tile.function "
                              f"or one of {names}; got {describe_type(fn_ty)}")
    from ..pipeline import type_subfunction
    elems = tuple(TileType(d, ()) for d in dtypes)
    typed = type_subfunction(fn_ty.function, elems + elems)
    ret = typed.return_type
    rets = tuple(ret.types) if isinstance(ret, types.BaseTuple) else (ret,)
    want = " and ".join(str(d) for d in dtypes)
    if len(rets) != len(dtypes) or not all(
            dtype_of(r) is d and (is_scalar(r) or (isinstance(r, TileType) and r.ndim == 0))
            for r, d in zip(rets, dtypes)):
        raise TileTypingError(f"{op}: the combiner {fn_ty.function.name} must return "
                              f"{len(dtypes)} value(s) of {want} when given {2 * len(dtypes)} "
                              f"(each tile's element, then its accumulated value), but it "
                              f"returns {describe_type(ret)}")
    return None


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


def _identities(ty, dtypes, kind, op):
    if is_none(ty):
        if kind is None:
            raise TileTypingError(f"{op}: identity is required with a combiner function (the "
                                  f"value i with fn(i, x) == x, e.g. 0.0 for a sum, or a tuple "
                                  f"with one per tile)")
        return
    items = tuple(ty.types) if isinstance(ty, types.BaseTuple) else (ty,)
    if len(items) != len(dtypes):
        raise TileTypingError(f"{op}: {len(dtypes)} tile(s) need {len(dtypes)} identities, got "
                              f"{len(items)}")
    for item, d in zip(items, dtypes):
        _identity(item, d, op)


def _results(tiles, shape, as_tuple):
    out = [TileType(t.dtype, shape) for t in tiles]
    return types.BaseTuple.from_types(out) if as_tuple else out[0]


@function_rule(language.reduce)
def _reduce(b):
    op = "tile.reduce"
    ts, as_tuple = _tiles(b.t, op)
    axes = axis_arg(b.axis, ts[0].ndim, f"{op}: axis", allow_none=True, allow_tuple=True)
    keep = bool_arg(b.keepdims, f"{op}: keepdims")
    dtypes = [t.dtype for t in ts]
    kind = combiner_type(b.fn, dtypes, op)
    _identities(b.identity, dtypes, kind, op)
    return _results(ts, reduced_shape(ts[0].shape, axes, keep), as_tuple)


@function_rule(language.scan)
def _scan_fn(b):
    op = "tile.scan"
    ts, as_tuple = _tiles(b.t, op)
    axis_arg(b.axis, ts[0].ndim, f"{op}: axis")
    bool_arg(b.reverse, f"{op}: reverse")
    dtypes = [t.dtype for t in ts]
    kind = combiner_type(b.fn, dtypes, op)
    _identities(b.identity, dtypes, kind, op)
    return _results(ts, ts[0].shape, as_tuple)
