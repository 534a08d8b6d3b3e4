"""Atomic read-modify-write on elements of writable tensors and partitions.

``atomic_add / max / min / xchg / and / or / xor(target, indices, values, mask=None, memory_order=ACQ_REL,
memory_scope=DEVICE)`` and ``atomic_cas(target, indices, expected, desired, ...)`` return the old
values as ``Tile[target.dtype, broadcast(indices)]``. The target must be writable: a partition
argument or a tensor passed as ``tile.atomic(t)``.
"""
from __future__ import annotations

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError
from ..types import TensorPartitionViewType, TileType
from ._base import enum_arg, function_rule
from .memory import ATOMIC_ORDERS, array_arg, gather_shape, mask_arg, memory_order_arg, value_arg

_INT_TYPES = (dt.int32, dt.int64, dt.uint32, dt.uint64)
_FLOAT_TYPES = (dt.float16, dt.float32, dt.float64)
_ALLOWED = {
    "atomic_add": _INT_TYPES + _FLOAT_TYPES + (dt.bfloat16,),
    "atomic_max": _INT_TYPES + (dt.float32,),
    "atomic_min": _INT_TYPES + (dt.float32,),
    "atomic_xchg": _INT_TYPES + (dt.float32, dt.float64),
    "atomic_cas": _INT_TYPES + (dt.float32, dt.float64),
    "atomic_and": _INT_TYPES,
    "atomic_or": _INT_TYPES,
    "atomic_xor": _INT_TYPES,
}


def check_atomic_dtype(name: str, d) -> None:
    """``name`` (``"atomic_add"``) supports elements of dtype ``d``, or a TileTypingError."""
    if d not in _ALLOWED[name]:
        ok = ", ".join(x.name for x in _ALLOWED[name])
        raise TileTypingError(f"{name}: Unsupported array dtype: {d} (supported: {ok})")


def _target(b, name):
    # a tile view (w.partition(shape)) targets its tensor: indices are element coordinates
    target = b.target.source if isinstance(b.target, TensorPartitionViewType) else b.target
    x = array_arg(target, f"{name}: target", write_action=f"use {name} on")
    check_atomic_dtype(name, x.dtype)
    memory_order_arg(b, ATOMIC_ORDERS, name)
    shape = gather_shape(b.indices, x.ndim, f"{name}: indices")
    mask_arg(b.mask, shape, f"{name}: mask")
    return x, shape


def _rmw(name):
    def rule(b):
        x, shape = _target(b, name)
        value_arg(b.values, x.dtype, shape, f"{name}: values")
        return TileType(x.dtype, shape)
    return rule


for _name in ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and", "atomic_or",
              "atomic_xor"):
    function_rule(getattr(language, _name))(_rmw(_name))


@function_rule(language.atomic_cas)
def _atomic_cas(b):
    x, shape = _target(b, "atomic_cas")
    value_arg(b.expected, x.dtype, shape, "atomic_cas: expected")
    value_arg(b.desired, x.dtype, shape, "atomic_cas: desired")
    return TileType(x.dtype, shape)
