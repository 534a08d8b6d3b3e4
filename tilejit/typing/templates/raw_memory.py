"""Raw array memory: ``x.get_raw_memory()`` (cuTile Python's ``RawArrayMemory``), on tensor
parameters of both front ends: the array's base pointer, accessed by element offsets (no shape,
no strides, no bounds checks: offsets past the array's end are the caller's business, as in
cuTile).

==============================================  ===============================================
``m.dtype``                                     the array's dtype (a compile-time constant)
``m.load_offset(offset, /, *, mask=None,        ``Tile[x.dtype, offset.shape]``: the elements at
padding_value=0, latency=None)``                ``base + offset``; masked-off ones read as
                                                ``padding_value``
``m.store_offset(offset, value, /, *,           ``value`` (broadcast to the offset's shape, cast
mask=None, latency=None)``                      implicitly to the dtype) at ``base + offset``
``m.atomic_<op>_offset(offset, update, /, *,    ``op`` in xchg, add, max, min, and, or, xor:
mask=None, memory_order=ACQ_REL,                element-wise atomic updates; the old values
memory_scope=DEVICE)``                          (``Tile[x.dtype, offset.shape]``)
``m.atomic_cas_offset(offset, expected,         compare-and-swap; the old values
desired, /, *, mask=None, ...)``
==============================================  ===============================================

``offset`` is an integer scalar or tile, and its shape is the access's: masks, values, updates
and padding values must broadcast to it. Stores and atomics need a writable array
(``tile.atomic(x)``; ``ct.launch`` passes the arrays a kernel stores into so). Values convert
by cuTile's implicit cast rule; bitwise atomics need the array's own dtype.
"""
from __future__ import annotations

from typing import Tuple

from numba.core import types

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..types import DTypeType, TensorType, TileType, dtype_of, is_scalar
from . import _base
from ._base import attribute_rule, enum_arg, is_none, method_rule, read_only_error
from .memory import ATOMIC_ORDERS, latency_arg, memory_order_arg
from .tiled_view import check_implicit_cast

_MO, _MS = language.MemoryOrder, language.MemoryScope


class RawMemoryType(types.Type):
    """``x.get_raw_memory()`` of the tensor type ``source``."""

    def __init__(self, source: TensorType):
        self.source = source
        super().__init__(name=f"RawArrayMemory[{source.dtype.name}"
                              f"{', writable' if source.writable else ''}]")

    @property
    def key(self):
        return self.source

    @property
    def dtype(self):
        return self.source.dtype


_base.TYPE_NOUNS[RawMemoryType] = "RawArrayMemory"


def _get_raw_memory_sig(x):
    """x.get_raw_memory()"""


@method_rule(TensorType, "get_raw_memory", _get_raw_memory_sig, op="Tensor.get_raw_memory")
def _get_raw_memory(b):
    return RawMemoryType(b.x)


attribute_rule(RawMemoryType, "dtype")(lambda ty: DTypeType(ty.dtype))


# --------------------------------------------------------------------------------------------------
# Argument checks
def _shape(ty, what: str) -> Tuple[int, ...]:
    if isinstance(ty, TileType):
        return ty.shape
    if is_scalar(ty):
        return ()
    raise TileTypingError(f"{what} must be a tile or a scalar, got {describe_type(ty)}")


def _fits(ty, shape, what: str) -> None:
    """``ty`` broadcasts to the offset's ``shape`` (the access's shape)."""
    src = _shape(ty, what)
    if len(src) > len(shape) or not all(s in (1, d) for s, d in
                                        zip(reversed(src), reversed(shape))):
        raise TileTypingError(f"{what}: shape {src} is not broadcastable to the offset shape "
                              f"{shape}")


def _offset(ty, what: str) -> Tuple[int, ...]:
    d = dtype_of(ty)
    if d is None or not d.is_integer or not (is_scalar(ty) or isinstance(ty, TileType)):
        raise TileTypingError(f"{what}: the offset must be an integer scalar or tile (element "
                              f"offsets from the array's base), got {describe_type(ty)}")
    return _shape(ty, what)


def _mask(ty, shape, what: str) -> None:
    if is_none(ty):
        return
    if dtype_of(ty) is not dt.bool_:
        raise TileTypingError(f"{what}: the mask must have a boolean dtype, got "
                              f"{describe_type(ty)}")
    _fits(ty, shape, f"{what}: the mask")


def _writable(m: RawMemoryType, what: str) -> None:
    if not m.source.writable:
        raise read_only_error(what, m.source)


# --------------------------------------------------------------------------------------------------
# Loads and stores
def _load_sig(m, offset, /, *, mask=None, padding_value=0, latency=None):
    """m.load_offset(offset, /, *, mask=None, padding_value=0, latency=None)"""


@method_rule(RawMemoryType, "load_offset", _load_sig, op="RawArrayMemory.load_offset")
def _load_offset(b):
    m = b.m
    shape = _offset(b.offset, "load_offset")
    _mask(b.mask, shape, "load_offset")
    if not is_none(b.padding_value):
        _fits(b.padding_value, shape, "load_offset: padding_value")
        check_implicit_cast(b.padding_value, m.dtype, "load_offset: Invalid padding value")
    latency_arg(b.latency)
    return TileType(m.dtype, shape)


def _store_sig(m, offset, value, /, *, mask=None, latency=None):
    """m.store_offset(offset, value, /, *, mask=None, latency=None)"""


@method_rule(RawMemoryType, "store_offset", _store_sig, op="RawArrayMemory.store_offset")
def _store_offset(b):
    m = b.m
    _writable(m, "store_offset into")
    shape = _offset(b.offset, "store_offset")
    _mask(b.mask, shape, "store_offset")
    _fits(b.value, shape, "store_offset: the value")
    check_implicit_cast(b.value, m.dtype, "store_offset: Stored value is incompatible with "
                                          "RawArrayMemory's dtype")
    latency_arg(b.latency)
    return types.none


# --------------------------------------------------------------------------------------------------
# Atomics
_INT = (dt.int32, dt.int64, dt.uint32, dt.uint64)
_INT_FLOAT = _INT + (dt.float32, dt.float64)
#: op -> (the dtypes it supports, bitwise: the update's dtype must match exactly)
ATOMIC_OFFSET_OPS = {
    "xchg": (_INT_FLOAT, False),
    "add": (_INT_FLOAT + (dt.float16, dt.bfloat16), False),
    "max": (_INT, False),
    "min": (_INT, False),
    "and": (_INT, True),
    "or": (_INT, True),
    "xor": (_INT, True),
}


def _atomic_common(b, name: str, supported) -> Tuple[int, ...]:
    m = b.m
    if m.dtype not in supported:
        ok = ", ".join(d.name for d in supported)
        raise TileTypingError(f"{name}: Unsupported array dtype: {m.dtype} (supported: {ok})")
    _writable(m, f"use {name} on")
    shape = _offset(b.offset, name)
    _mask(b.mask, shape, name)
    if enum_arg(b.memory_order, _MO, f"{name}: memory_order") is _MO.WEAK:
        op = "tile_atomic_cas" if name == "atomic_cas_offset" else "tile_atomic_rmw"
        raise TileTypingError(f"{name}: Invalid memory order for {op}: WEAK (an atomic needs "
                              f"RELAXED, ACQUIRE, RELEASE or ACQ_REL)")
    memory_order_arg(b, ATOMIC_ORDERS, name)
    return shape


def _atomic_sig(m, offset, update, /, *, mask=None, memory_order=_MO.ACQ_REL,
                memory_scope=_MS.DEVICE):
    """m.atomic_<op>_offset(offset, update, /, *, mask=None, memory_order=ACQ_REL,
    memory_scope=DEVICE)"""


def _atomic_rule(op: str):
    supported, bitwise = ATOMIC_OFFSET_OPS[op]
    name = f"atomic_{op}_offset"

    def rule(b):
        m = b.m
        shape = _atomic_common(b, name, supported)
        _fits(b.update, shape, f"{name}: the update")
        src = dtype_of(b.update)
        if bitwise and not isinstance(b.update, types.Literal) and src is not m.dtype:
            raise TileTypingError(
                f"{name}: Bitwise atomic read-modify-write operations require the update dtype "
                f"({src}) to exactly match the target dtype ({m.dtype})")
        check_implicit_cast(b.update, m.dtype, f"{name}: Update is incompatible with the "
                                               f"target dtype")
        return TileType(m.dtype, shape)
    return rule


for _op in ATOMIC_OFFSET_OPS:
    method_rule(RawMemoryType, f"atomic_{_op}_offset", _atomic_sig,
                op=f"RawArrayMemory.atomic_{_op}_offset")(_atomic_rule(_op))


def _cas_sig(m, offset, expected, desired, /, *, mask=None, memory_order=_MO.ACQ_REL,
             memory_scope=_MS.DEVICE):
    """m.atomic_cas_offset(offset, expected, desired, /, *, mask=None, memory_order=ACQ_REL,
    memory_scope=DEVICE)"""


@method_rule(RawMemoryType, "atomic_cas_offset", _cas_sig, op="RawArrayMemory.atomic_cas_offset")
def _atomic_cas_offset(b):
    m = b.m
    shape = _atomic_common(b, "atomic_cas_offset", _INT_FLOAT)
    for what, v in (("expected", b.expected), ("desired", b.desired)):
        _fits(v, shape, f"atomic_cas_offset: {what}")
        check_implicit_cast(v, m.dtype, f"atomic_cas_offset: {what.capitalize()} value is "
                                        f"incompatible with the target dtype")
    return TileType(m.dtype, shape)
