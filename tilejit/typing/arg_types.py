"""Specialization keys (defined in :mod:`tilejit.keys`) and constant values -> Numba argument types.

=====================  ==========================================================================
key                    Numba type
=====================  ==========================================================================
``TensorKey``          ``TensorType``
``PartitionKey``       ``PartitionType``
``TupleKey``           a Numba tuple of its items' types (``UniTuple`` when they agree)
``ScalarKey``          weak: a Numba scalar (``int64``, ``float32``, ``boolean``...; a rank-0
                       ``TileType`` for bfloat16 / tf32 / fp8); strong (NumPy scalar): a rank-0 tile
=====================  ==========================================================================

Constant parameter values become literal types (``Literal[int](64)``) or, for floats, ``float64``.
"""
from __future__ import annotations

import enum
import functools
from typing import Any

from numba.core import types

from .. import dtypes as dt
from .. import keys as _keys
from ..dtypes import DType
from ..errors import TypingError
from .types import (DTypeType, EnumMemberType, PartitionType, TensorType, TileType, is_pow2,
                    value_type)


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(i) for i in x)
    if isinstance(x, tuple):
        return tuple(_hashable(i) for i in x)
    return x


def arg_type(key) -> types.Type:
    """The Numba type of one kernel argument from its key (a named key or its plain tuple)."""
    try:
        key = _keys.as_key(_hashable(key))
    except ValueError as e:
        raise TypingError(str(e)) from None
    return _arg_type(key)


@functools.lru_cache(maxsize=4096)
def _arg_type(key) -> types.Type:
    kind = key.kind
    if kind == "tuple":                 # a tuple argument: UniTuple when its items agree
        return types.BaseTuple.from_types([_arg_type(_keys.as_key(k)) for k in key.items])
    if kind == "tensor":
        return TensorType(dt.from_name(key.dtype), int(key.ndim), key.facts, bool(key.writable))
    if kind == "partition":
        ndim = key.ndim
        tile_shape = tuple(int(s) for s in key.tile_shape)
        if not 1 <= ndim <= 3:
            raise TypingError(f"partitions must have rank 1 to 3, got rank {ndim}")
        if len(tile_shape) != ndim:
            raise TypingError(f"partition tile shape {tile_shape} does not match rank {ndim}")
        bad = [s for s in tile_shape if not is_pow2(s)]
        if bad:
            raise TypingError(f"partition tile shape {tile_shape}: every extent must be a power "
                              f"of two, {bad[0]} is not")
        return PartitionType(dt.from_name(key.dtype), int(ndim), tile_shape, key.facts)
    d = dt.from_name(key.dtype)
    # a strong (NumPy) scalar is a 0-d tile: it promotes like a tile (NEP 50)
    return value_type(d) if key.weak else TileType(d, ())


def check_constant(name: str, value: Any) -> None:
    """Raise unless ``value`` may be the value of the Constant parameter ``name``."""
    if isinstance(value, (bool, int, float, DType, enum.Enum)):
        return
    if isinstance(value, tuple):
        for v in value:
            check_constant(name, v)
        return
    raise TypingError(f"constant parameter '{name}' must be an int, float, bool, dtype, enum "
                      f"member or a tuple of these, got {type(value).__name__} {value!r}")


def constant_type(value: Any) -> types.Type:
    """The type a frozen constant has inside the kernel."""
    if isinstance(value, (bool, int)):
        return types.literal(value)
    if isinstance(value, float):
        return types.float64
    if isinstance(value, DType):
        return DTypeType(value)
    if isinstance(value, enum.Enum):
        return EnumMemberType(value)
    if isinstance(value, tuple):
        return types.Tuple([constant_type(v) for v in value])
    raise TypeError(value)


__all__ = ["arg_type", "check_constant", "constant_type"]
