"""Tiles assembled from parts: ``astile`` (a tile from a scalar or a nested tuple of scalars),
``insert`` (``t.insert(index, value)``, the inverse of ``extract``), and the raw-byte views
``pack_to_bytes`` / ``unpack_from_bytes``. The lowering reads the shape and leaf rules here
(``astile_shape``, ``insert_unit``)."""
from __future__ import annotations

from numba.core import types

from ... import dtypes as D
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..types import TileType, dtype_of, is_pow2, is_scalar
from ._base import NOT_STATIC, dtype_arg, function_rule, method_rule, static_value
from .memory import index_arg


# --------------------------------------------------------------------------------------------------
# astile
def _is_leaf(ty) -> bool:
    return is_scalar(ty) or (isinstance(ty, TileType) and ty.ndim == 0)


def astile_shape(ty, path: str = "value") -> tuple:
    """The shape of ``astile(value)`` for a value of Numba type ``ty`` (nested tuples of scalars
    or 0-d tiles; cuTile's messages on a bad one)."""
    if isinstance(ty, types.BaseTuple):
        n = len(ty.types)
        if not is_pow2(n):
            raise TileTypingError(f"astile: Tuple length {n} at {path} is not a power of 2")
        inner = [astile_shape(t, f"{path}[{i}]") for i, t in enumerate(ty.types)]
        if any(s != inner[0] for s in inner):
            raise TileTypingError(f"astile: Tuple has non-uniform inner shapes at {path}: "
                                  f"{', '.join(str(s) for s in inner)}")
        return (n,) + inner[0]
    if _is_leaf(ty):
        return ()
    if path == "value":
        raise TileTypingError(f"astile: Expected a scalar or (possibly nested) tuple of scalars, "
                              f"got {describe_type(ty)}")
    raise TileTypingError(f"astile: Expected scalar elements at {path}, got {describe_type(ty)}")


@function_rule(language.astile)
def _astile(b):
    d = dtype_arg(b.dtype, "astile: dtype")
    return TileType(d, astile_shape(b.value))


# --------------------------------------------------------------------------------------------------
# insert
def insert_unit(x_shape: tuple, v_shape: tuple) -> tuple:
    """The shape of the sub-tile ``insert`` replaces: ``v_shape``, or ones for a 0-d value."""
    return (1,) * len(x_shape) if v_shape == () else tuple(v_shape)


def _insert(b):
    x = b.t
    if not isinstance(x, TileType):
        raise TileTypingError(f"insert needs a tile to insert into, got {describe_type(x)}")
    v = b.value
    if isinstance(v, TileType):
        if v.dtype is not x.dtype:
            raise TileTypingError(f"insert: Cannot insert a tile of dtype {v.dtype} into a tile "
                                  f"of dtype {x.dtype} (convert it with .astype({x.dtype}))")
        v_shape = v.shape
    elif is_scalar(v):
        v_shape = ()
    else:
        raise TileTypingError(f"insert: value must be a tile or a scalar, got {describe_type(v)}")
    if v_shape and len(v_shape) != x.ndim:
        raise TileTypingError(f"insert: the rank of value {v_shape} ({len(v_shape)}) does not "
                              f"match the tile rank {x.ndim} of {x.shape}")
    unit = insert_unit(x.shape, v_shape)
    for full, s in zip(x.shape, unit):
        if full % s:
            raise TileTypingError(f"insert: the tile shape {x.shape} is not divisible by the "
                                  f"value shape {unit}")
    items = index_arg(b.index, x.ndim, "insert: index")
    for axis, (ty, full, s) in enumerate(zip(items, x.shape, unit)):
        i = static_value(ty)
        if i is not NOT_STATIC and isinstance(i, int) and not 0 <= i < full // s:
            raise TileTypingError(f"insert: index {i} is out of bounds along axis {axis}: the "
                                  f"tile has {full // s} sub-tiles of {s} there (valid: "
                                  f"0..{full // s - 1})")
    return x


function_rule(language.insert)(_insert)
method_rule(TileType, "insert", language.insert)(_insert)


# --------------------------------------------------------------------------------------------------
# pack_to_bytes / unpack_from_bytes
@function_rule(language.pack_to_bytes)
def _pack_to_bytes(b):
    x = b.t
    if is_scalar(x):
        x = TileType(dtype_of(x), ())
    if not isinstance(x, TileType):
        raise TileTypingError(f"pack_to_bytes needs a tile, got {describe_type(x)}")
    if x.dtype.is_bool:
        raise TileTypingError("Cannot pack_to_bytes from a bool_ tile: bool has no defined byte "
                              "layout (convert it with .astype(tile.uint8))")
    bits = x.size * x.dtype.bits
    if bits % 8:
        raise TileTypingError(f"pack_to_bytes: the tile's {bits} bits ({x.size} x {x.dtype}) "
                              f"are not divisible by 8")
    return TileType(D.uint8, (bits // 8,))


@function_rule(language.unpack_from_bytes)
def _unpack_from_bytes(b):
    x = b.t
    d = dtype_arg(b.dtype, "unpack_from_bytes: dtype")
    if not isinstance(x, TileType):
        raise TileTypingError(f"unpack_from_bytes needs a tile, got {describe_type(x)}")
    if x.dtype is not D.uint8:
        raise TileTypingError(f"unpack_from_bytes requires uint8 tile, got {x.dtype}")
    if x.ndim != 1:
        raise TileTypingError(f"unpack_from_bytes requires a 1D tile, got shape {x.shape}")
    if d.is_bool:
        raise TileTypingError("Cannot unpack_from_bytes to a bool_ tile: bool has no defined "
                              "byte layout")
    bits = x.shape[0] * 8
    if bits % d.bits:
        raise TileTypingError(f"unpack_from_bytes: Total bits {bits} not divisible by {d.bits} "
                              f"(the bit width of {d})")
    return TileType(d, (bits // d.bits,))
