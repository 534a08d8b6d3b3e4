"""Raw array memory (``x.get_raw_memory()``, cuTile's ``RawArrayMemory``; typing:
``typing/templates/raw_memory.py``): pointers ``base + offset`` (offsets in elements, no
strides, no bounds mask), then ``load_ptr_tko`` / ``store_ptr_tko`` / ``atomic_rmw_tko`` /
``atomic_cas_tko`` with the user's mask only, ordered with the array's other accesses (memory
tokens, ``lowering/tokens.py``)."""
from __future__ import annotations

from dataclasses import dataclass

from ... import dtypes as D
from ...implicit_casts import implicit_cast
from ..abi import ArrayParam
from ..emit import TV
from . import and_user_mask, handles
from .memory import memory_semantics


@dataclass
class RawMemoryRef:
    """``x.get_raw_memory()`` inside the kernel: its array (base pointer, dtype, tokens)."""

    array: ArrayParam

    @property
    def dtype(self):
        return self.array.dtype


def _implicit_cast(lw, info, args, rty):
    """The ``ct`` adapters' implicit conversion (typing checked cuTile's rule): a cast."""
    return lw.tv(lw.arg(args, "x"), rty.dtype)


handles(implicit_cast)(_implicit_cast)


@handles("Tensor.get_raw_memory")
def _get_raw_memory(lw, info, args, rty):
    x = lw.value(info.receiver)
    if not isinstance(x, ArrayParam):
        raise lw.error("x.get_raw_memory() needs a tensor parameter (or a slice of one)")
    return RawMemoryRef(x)


def _access(lw, info, args):
    """``(memory, pointers, mask or None, shape)`` of a raw-memory access: the offset's shape is
    the access's (typing checked that the mask and values broadcast to it)."""
    m = lw.value(info.receiver)
    if not isinstance(m, RawMemoryRef):
        raise lw.error(f"internal error: expected a RawArrayMemory, got {type(m).__name__} "
                       f"(please report this)")
    off = lw.tv(lw.arg(args, "offset"))
    if off.dtype not in (D.int32, D.int64):     # Tile IR offsets: i32 or i64 (unsigned widen)
        off = lw.em.cast(off, D.int64)
    shape = off.shape
    base = m.array.base
    if shape:
        base = lw.b.broadcast(lw.b.reshape(base, (1,) * len(shape)), shape)
    ptrs = lw.b.offset(base, off.value)
    return m, ptrs, and_user_mask(lw, args, None, shape), shape


def _value(lw, args, name, m: RawMemoryRef, shape) -> TV:
    """Argument ``name`` in the array's dtype (typing checked the implicit cast), broadcast."""
    return lw.em.broadcast(lw.tv(lw.arg(args, name), m.dtype), shape)


@handles("RawArrayMemory.load_offset")
def _load_offset(lw, info, args, rty):
    m, ptrs, mask, shape = _access(lw, info, args)
    arr = m.array
    pad = None
    if mask is not None:
        mdt = D.uint8 if arr.dtype.is_bool else arr.dtype
        value = lw.arg(args, "padding_value")
        if isinstance(value, TV):
            pad = lw.em.broadcast(lw.tv(value, mdt), shape).value
        else:
            value = lw.static_arg(info, args, "padding_value", 0)
            pad = lw.em.const(0 if value is None else value, mdt, shape).value
    hints = lw.hints(lw.static_arg(info, args, "latency", None), True)
    return lw.ordered_read(arr, lambda tok: lw.b.load_ptr_tko(
        ptrs, mask=None if mask is None else mask.value, padding=pad, token=tok, hints=hints))


@handles("RawArrayMemory.store_offset")
def _store_offset(lw, info, args, rty):
    m, ptrs, mask, shape = _access(lw, info, args)
    arr = m.array
    mem = lw._to_mem(_value(lw, args, "value", m, shape), arr)
    hints = lw.hints(lw.static_arg(info, args, "latency", None), True)
    lw.ordered_write(arr, lambda tok: (None, lw.b.store_ptr_tko(
        ptrs, mem.value, mask=None if mask is None else mask.value, token=tok, hints=hints)))
    return None


def _atomic(int_mode: str, float_mode: str):
    def handler(lw, info, args, rty):
        m, ptrs, mask, shape = _access(lw, info, args)
        arr = m.array
        mode = float_mode if arr.dtype.is_float else int_mode
        if mode in ("max", "min") and arr.dtype.is_unsigned:
            mode = "u" + mode
        u = _value(lw, args, "update", m, shape)
        order, scope = memory_semantics(lw, info, args)
        old = lw.ordered_write(arr, lambda tok: lw.b.atomic_rmw_tko(
            ptrs, mode, u.value, mask=None if mask is None else mask.value, token=tok,
            ordering=order, scope=scope), order)
        return TV(old, arr.dtype)
    return handler


for _op, _modes in {"xchg": ("xchg", "xchg"), "add": ("add", "addf"), "max": ("max", "max"),
                    "min": ("min", "min"), "and": ("and", "and"), "or": ("or", "or"),
                    "xor": ("xor", "xor")}.items():
    handles(f"RawArrayMemory.atomic_{_op}_offset")(_atomic(*_modes))


@handles("RawArrayMemory.atomic_cas_offset")
def _atomic_cas_offset(lw, info, args, rty):
    m, ptrs, mask, shape = _access(lw, info, args)
    arr = m.array
    exp = _value(lw, args, "expected", m, shape)
    des = _value(lw, args, "desired", m, shape)
    order, scope = memory_semantics(lw, info, args)
    old = lw.ordered_write(arr, lambda tok: lw.b.atomic_cas_tko(
        ptrs, exp.value, des.value, mask=None if mask is None else mask.value, token=tok,
        ordering=order, scope=scope), order)
    return TV(old, arr.dtype)
