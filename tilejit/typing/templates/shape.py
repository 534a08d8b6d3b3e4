"""Shape manipulation: ``reshape permute transpose broadcast_to expand_dims cat extract``, the tile
attributes ``shape dtype ndim T size``, and indexing (``t[:, None]`` inserts an axis; tiles are
immutable, so item assignment is an error).
"""
from __future__ import annotations

import math

import operator
import warnings

from numba.core import types
from numba.core.typing.templates import signature

from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import broadcast_shapes
from ..types import (DTypeType, PartitionType, TensorPartitionViewType, TensorType, TileType,
                     dtype_of, is_pow2, is_scalar)
from ._base import (as_tile, attribute_rule, axis_arg, function_rule, method_rule,
                    raw_function_template, raw_key_template, read_only_error, shape_arg,
                    static_value, NOT_STATIC)
from .memory import index_arg


def _tile(ty, op, allow_scalar=False):
    if isinstance(ty, TileType):
        return ty
    if allow_scalar and is_scalar(ty):
        return as_tile(ty)
    raise TileTypingError(f"{op} needs a tile, got {describe_type(ty)}")


# --------------------------------------------------------------------------------------------------
attribute_rule(TileType, "shape")(lambda ty: types.Tuple([types.literal(s) for s in ty.shape]))
attribute_rule(TileType, "dtype")(lambda ty: DTypeType(ty.dtype))
attribute_rule(TileType, "ndim")(lambda ty: types.literal(ty.ndim))
attribute_rule(TileType, "size")(lambda ty: types.literal(ty.size))
attribute_rule(TileType, "T")(lambda ty: ty.copy(shape=tuple(reversed(ty.shape))))


def _reshape(b):
    t = _tile(b.t, "reshape", allow_scalar=True)
    shape = shape_arg(b.shape, "reshape: shape", allow_minus_one=True)
    if shape.count(-1) > 1:
        raise TileTypingError(f"reshape: at most one extent may be -1, got {shape}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if t.size % known:
            raise TileTypingError(f"reshape: cannot reshape {t.shape} ({t.size} elements) into "
                                  f"{shape}")
        shape = tuple(t.size // known if s == -1 else s for s in shape)
        if not is_pow2(t.size // known):
            raise TileTypingError(f"reshape: the inferred extent {t.size // known} is not a power "
                                  f"of two")
    elif known != t.size:
        raise TileTypingError(f"reshape: cannot reshape a tile of shape {t.shape} ({t.size} "
                              f"elements) into {shape} ({known} elements)")
    return t.copy(shape=shape)


function_rule(language.reshape)(_reshape)
method_rule(TileType, "reshape", language.reshape)(_reshape)


def permutation(axes: tuple, ndim: int, op: str) -> tuple:
    """``axes`` as a permutation of ``ndim`` axes (negative axes count from the end, as in
    NumPy); typing and lowering both read a permutation through here."""
    norm = tuple(a % ndim if -ndim <= a < ndim else a for a in axes)
    if sorted(norm) != list(range(ndim)):
        raise TileTypingError(f"{op}: axes {axes} is not a permutation of the {ndim} axes")
    return norm


def transpose_axes(axes, ndim: int) -> tuple:
    """The permutation of ``t.transpose(*axes)`` / ``tile.transpose(t, axes)`` (NumPy's
    spellings): no axes (or None) reverses them, one tuple or the axes one by one permute."""
    if len(axes) == 1 and isinstance(axes[0], tuple):
        axes = axes[0]
    if axes in ((), (None,)):
        return tuple(reversed(range(ndim)))
    return permutation(axes, ndim, "transpose")


def _perm(axes_ty, ndim, op):
    v = static_value(axes_ty)
    if v is NOT_STATIC or not isinstance(v, tuple) or not all(isinstance(a, int) for a in v):
        raise TileTypingError(f"{op}: axes must be a constant tuple of ints, got "
                              f"{describe_type(axes_ty)}")
    return permutation(v, ndim, op)


def _permute(b):
    t = _tile(b.t, "permute")
    axes = _perm(b.axes, t.ndim, "permute")
    return t.copy(shape=tuple(t.shape[a] for a in axes))


function_rule(language.permute)(_permute)
method_rule(TileType, "permute", language.permute)(_permute)


def _transpose_method_sig(t, *axes, axis0=None, axis1=None):
    """t.transpose(*axes) (NumPy's), or t.transpose(axis0=i, axis1=j) (cuTile's: a swap)"""


def _transpose(b):
    t = _tile(b.t, "transpose")
    axes = b.axes if isinstance(b.axes, tuple) else (b.axes,)      # *axes, or the one argument
    vals = tuple(static_value(ty) for ty in axes)
    swap = tuple(static_value(getattr(b, n, types.none)) for n in ("axis0", "axis1"))
    if swap != (None, None):
        if vals not in ((), (None,)):
            raise TileTypingError("transpose: give the axes, or axis0= and axis1=, not both")
        perm = swap_permutation(*swap, t.ndim)
        return t.copy(shape=tuple(t.shape[a] for a in perm))
    if vals not in ((), (None,)):
        one = vals[0] if len(vals) == 1 and isinstance(vals[0], tuple) else vals
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in one):
            raise TileTypingError(f"transpose: axes must be constant ints or one constant tuple "
                                  f"of ints, got {', '.join(describe_type(ty) for ty in axes)}")
    perm = transpose_axes(vals, t.ndim)
    return t.copy(shape=tuple(t.shape[a] for a in perm))


function_rule(language.transpose)(_transpose)
method_rule(TileType, "transpose", _transpose_method_sig, op="Tile.transpose")(_transpose)

_TRANSPOSE_WARNED: dict = {}        # warnings' registry: one warning per call site


def warn_identity_transposes(func_ir, typemap) -> None:
    """``TransposeWarning`` at each call of ``transpose`` in the typed ``func_ir`` whose explicit
    axes leave a tile of 2+ dimensions as it is: a torch/cuTile user's swap (``t.transpose(0,
    1)``) that NumPy's spelling, which tilejit follows, reads as the identity."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            expr = getattr(stmt, "value", None)
            if getattr(expr, "op", None) != "call":
                continue
            axes = _identity_transpose_axes(expr, typemap)
            if axes is not None:
                loc = stmt.loc
                warnings.warn_explicit(
                    f"transpose with the axes {axes} leaves this {len(axes)}-d tile unchanged: "
                    f"tilejit's transpose follows NumPy (the axes are the complete new order), "
                    f"not torch or cuTile (two axes to swap). To swap two axes write "
                    f"tile.swapaxes(t, 0, 1) (or t.swapaxes(0, 1)); to reverse the axes, "
                    f"t.transpose() or t.T", language.TransposeWarning, loc.filename, loc.line,
                    registry=_TRANSPOSE_WARNED.setdefault(loc.filename, {}))


def _identity_transpose_axes(expr, typemap):
    """The explicit axes of a ``transpose`` call ``expr`` when they are the identity on a tile
    of 2+ dimensions, else None."""
    fnty = typemap.get(expr.func.name)
    kws = dict(expr.kws)
    if isinstance(fnty, types.BoundFunction) and getattr(fnty.template, "key", None) == \
            "Tile.transpose":
        if kws:                                 # axis0= / axis1=: cuTile's swap
            return None
        t, axes = fnty.this, [typemap.get(a.name) for a in expr.args]
    elif isinstance(fnty, types.Function) and fnty.typing_key is language.transpose and \
            expr.args:
        t = typemap.get(expr.args[0].name)
        axes = [typemap.get(a.name) for a in expr.args[1:]] + \
            [typemap.get(v.name) for k, v in kws.items() if k == "axes"]
    else:
        return None
    if not isinstance(t, TileType) or t.ndim < 2:
        return None
    vals = tuple(static_value(ty) for ty in axes)
    if vals in ((), (None,)):
        return None
    one = vals[0] if len(vals) == 1 and isinstance(vals[0], tuple) else vals
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in one):
        return None
    try:
        perm = permutation(one, t.ndim, "transpose")
    except TileTypingError:
        return None
    return one if perm == tuple(range(t.ndim)) else None


def _item_sig(t):
    """t.item()"""


@method_rule(TileType, "item", _item_sig, op="Tile.item")
def _item(b):
    t = _tile(b.t, "item")
    n = math.prod(t.shape)
    if n != 1:
        raise TileTypingError(f"item(): Cannot reshape {t.shape} to (): the tile has {n} "
                              f"elements; item() takes a tile of one element")
    return t.copy(shape=())


def swap_permutation(axis1, axis2, ndim: int) -> tuple:
    """The permutation of ``swapaxes(t, axis1, axis2)``; typing and lowering read it here."""
    if axis1 is None or axis2 is None:
        raise TileTypingError("swapaxes: transpose axes must either both be specified or both "
                              "be None")
    for a in (axis1, axis2):
        if not isinstance(a, int) or isinstance(a, bool) or not -ndim <= a < ndim:
            raise TileTypingError(f"swapaxes: axis {a!r} is not a constant int in "
                                  f"[{-ndim}, {ndim}) for a tile of {ndim} dimensions")
    perm = list(range(ndim))
    i, j = axis1 % ndim, axis2 % ndim
    perm[i], perm[j] = perm[j], perm[i]
    return tuple(perm)


def _swapaxes(b):
    t = _tile(b.t, "swapaxes")
    perm = swap_permutation(static_value(b.axis1), static_value(b.axis2), t.ndim)
    return t.copy(shape=tuple(t.shape[a] for a in perm))


function_rule(language.swapaxes)(_swapaxes)
method_rule(TileType, "swapaxes", language.swapaxes)(_swapaxes)


def _broadcast_to(b):
    t = _tile(b.t, "broadcast_to", allow_scalar=True)
    shape = shape_arg(b.shape, "broadcast_to: shape")
    if len(t.shape) > len(shape) or broadcast_shapes(t.shape, shape,
                                                     what="broadcast_to") != shape:
        raise TileTypingError(f"broadcast_to: cannot broadcast a tile of shape {t.shape} to "
                              f"{shape}")
    return t.copy(shape=shape)


function_rule(language.broadcast_to)(_broadcast_to)
method_rule(TileType, "broadcast_to", language.broadcast_to)(_broadcast_to)


def _expand_dims(b):
    t = _tile(b.t, "expand_dims", allow_scalar=True)
    a = axis_arg(b.axis, t.ndim + 1, "expand_dims: axis")
    shape = list(t.shape)
    shape.insert(a, 1)
    return t.copy(shape=tuple(shape))


function_rule(language.expand_dims)(_expand_dims)
method_rule(TileType, "expand_dims", language.expand_dims)(_expand_dims)


@function_rule(language.cat)
def _cat(b):
    a, c = b.a, b.b
    if isinstance(a, types.BaseTuple) and isinstance(c, types.IntegerLiteral) and \
            len(a.types) == 2:       # cat((a, b), axis) spelling
        a, c, axis_ty = a.types[0], a.types[1], b.b
    else:
        axis_ty = b.axis
    a = _tile(a, "cat: a")
    c = _tile(c, "cat: b")
    if a.dtype is not c.dtype:
        raise TileTypingError(f"cat: tiles must have the same dtype, got {a.dtype} and {c.dtype}")
    if a.ndim != c.ndim:
        raise TileTypingError(f"cat: tiles must have the same rank, got {a.shape} and {c.shape}")
    ax = axis_arg(axis_ty, a.ndim, "cat: axis")
    if any(x != y for i, (x, y) in enumerate(zip(a.shape, c.shape)) if i != ax):
        raise TileTypingError(f"cat: shapes {a.shape} and {c.shape} differ outside axis {ax}")
    n = a.shape[ax] + c.shape[ax]
    if not is_pow2(n):
        raise TileTypingError(f"cat: the result extent {n} along axis {ax} is not a power of two")
    shape = list(a.shape)
    shape[ax] = n
    return a.copy(shape=tuple(shape))


def _extract(b):
    t = _tile(b.t, "extract")
    shape = shape_arg(b.shape, "extract: shape")
    if shape == () and t.ndim:            # cuTile: a 0-d sub-tile is one element
        index_arg(b.index, t.ndim, "extract: index")
        return t.copy(shape=())
    if len(shape) != t.ndim:
        raise TileTypingError(f"extract: shape {shape} must have one entry per axis of the "
                              f"{t.ndim}-d tile")
    for s, full in zip(shape, t.shape):
        if full % s:
            raise TileTypingError(f"extract: shape {shape} does not tile {t.shape}")
    items = index_arg(b.index, t.ndim, "extract: index")
    for axis, (ty, full, s) in enumerate(zip(items, t.shape, shape)):
        i = static_value(ty)
        if isinstance(i, int) and not 0 <= i < full // s:
            raise TileTypingError(f"extract: index {i} is out of bounds along axis {axis}: the "
                                  f"tile has {full // s} sub-tiles of {s} there")
    return t.copy(shape=shape)


function_rule(language.extract)(_extract)
method_rule(TileType, "extract", language.extract)(_extract)


# --------------------------------------------------------------------------------------------------
# Indexing
def _expand_index(t: TileType, index):
    """Shape after ``t[index]`` where index holds only ``:``, ``None`` and ``...``."""
    items = index if isinstance(index, tuple) else (index,)
    n_real = sum(1 for i in items if isinstance(i, slice))
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise TileTypingError("an index can only have a single ellipsis ('...')")
    out, src = [], 0
    for i in items:
        if i is None:
            out.append(1)
        elif i is Ellipsis:
            k = t.ndim - n_real
            out.extend(t.shape[src:src + k])
            src += k
        elif isinstance(i, slice) and i == slice(None):
            if src >= t.ndim:
                raise TileTypingError(f"too many indices for a tile of rank {t.ndim}")
            out.append(t.shape[src])
            src += 1
        else:
            raise _index_error(t, index)
    out.extend(t.shape[src:])
    return tuple(out)


def _index_error(t, index=None):
    shown = f" [{index!r}]" if index is not None and not isinstance(index, types.Type) else ""
    return TileTypingError(
        f"tiles cannot be indexed with integers or slices{shown}: use tile.extract(t, index, "
        f"shape) for a sub-tile, tile.where/tile.sum to pick elements, or t[:, None] (None and "
        f"full slices only) to insert axes")


def _subscript_static(value, index):
    if isinstance(value, TileType):
        return signature(value.copy(shape=_expand_index(value, index)), value, types.none)
    if isinstance(value, (TensorType, PartitionType, TensorPartitionViewType)):
        raise TileTypingError(f"{value} is not subscriptable: load tiles with x.load(index, shape), "
                              f"tile.load_tile_like(x, z) or tile.gather(x, indices)")
    return None


@raw_key_template("static_getitem", "t[...]")
def _static_getitem(context, args, kws):
    value, index = args
    sig = _subscript_static(value, index)
    if sig is None:
        return None
    return signature(sig.return_type, value, types.none)


@raw_function_template(operator.getitem, "t[...]")
def _getitem(context, args, kws):
    value, index = args
    if isinstance(value, TileType):
        items = index.types if isinstance(index, types.BaseTuple) else (index,)
        # t[:, None] arrives here when the index is not a constant (e.g. built at run time)
        if all(isinstance(i, (types.NoneType, types.SliceType, types.EllipsisType))
               for i in items):
            raise TileTypingError(
                "tile indexing with ':' and None must use literal syntax (t[:, None]); "
                "or use tile.expand_dims(t, axis)")
        raise _index_error(value)
    if isinstance(value, (TensorType, PartitionType, TensorPartitionViewType)):
        return _subscript_static(value, None)
    if isinstance(value, types.BaseTuple) and isinstance(index, types.IntegerLiteral):
        # a constant index computed in the kernel (x.shape[x.ndim - 1 - axis]): the item
        i = index.literal_value
        if not -len(value.types) <= i < len(value.types):
            raise TileTypingError(f"tuple index {i} is out of range for a tuple of "
                                  f"{len(value.types)} items")
        return signature(value.types[i], value, index)
    if isinstance(value, types.UniTuple) and _runtime_int(index) and (
            isinstance(value.dtype, (TensorType, TileType)) or is_scalar(value.dtype)):
        # xs[i] with i known at run time: one type for every element (a tuple argument of
        # tensors of one dtype and rank, or of numbers); lowering selects
        return signature(value.dtype, value, index)
    return None


def _runtime_int(ty) -> bool:
    d = dtype_of(ty)
    return d is not None and d.is_integer and (is_scalar(ty) or (isinstance(ty, TileType) and
                                                                 ty.ndim == 0))


def _immutable(target):
    if isinstance(target, TileType):
        return TileTypingError("tiles are immutable: item assignment (t[i] = v) is not supported; "
                               "build a new tile with tile.where(mask, v, t) or tile.cat")
    if isinstance(target, TensorType):
        return read_only_error("assign to elements of", target)
    if isinstance(target, (PartitionType, TensorPartitionViewType)):
        return TileTypingError(f"cannot assign to elements of {target}: store whole tiles with "
                               f"z.store(t), or single elements with tile.scatter")
    return None


@raw_key_template("static_setitem", "t[...] = v")
def _static_setitem(context, args, kws):
    err = _immutable(args[0])
    if err is not None:
        raise err
    return None


@raw_function_template(operator.setitem, "t[...] = v")
def _setitem(context, args, kws):
    err = _immutable(args[0])
    if err is not None:
        raise err
    return None
