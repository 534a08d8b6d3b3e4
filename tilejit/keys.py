"""Specialization keys: the one definition shared by the host, typing and lowering.

A compiled kernel is specialized on one key per runtime argument. Keys are named tuples (still
tuples: they hash and compare as fast as plain ones, and equal the plain tuples older code and
tests spell out):

=============================================================  =====================================
key                                                            ABI slots (contract C1)
=============================================================  =====================================
``TensorKey("tensor", dtype, ndim, facts, writable)``          ``u64`` base, then ``ndim`` extents and
``PartitionKey("partition", dtype, ndim, facts, tile_shape)``  ``ndim`` strides in ``facts.index_dtype``
``ScalarKey("scalar", dtype, weak)``                           one value (bool as ``i32``)
``TupleKey("tuple", items)``                                   the slots of each item, in order
=============================================================  =====================================

``dtype`` is a ``tilejit.dtypes`` name. ``facts`` (:class:`Facts`) are what the host knows about an
array that makes code faster, and only that (sizes that differ in nothing else share a compile):
32-bit indexing, a 16-byte aligned base address, extents divisible by 16..256 (or by one 16-byte
vector of elements: 8 fp16, 4 float32), strides that are multiples of 16 bytes. ``weak`` scalars are
Python scalars, which adopt a tile's dtype in mixed arithmetic; NumPy scalars are strong (NEP 50).

The runtime classifies arguments into keys (``runtime.argspec``), typing turns keys into Numba
types (``typing.arg_types``), lowering turns them into entry parameters (``lowering.abi``). Constant
parameters are keyed by value with :func:`constant_key`.
"""
from __future__ import annotations

import enum
import struct
from typing import Any, NamedTuple, Optional, Sequence, Tuple

from . import dtypes as _dt
from .layout import largest_pow2_divisor, span_elements

_I32_LIMIT = 1 << 31
#: Extents are keyed by their largest power-of-two divisor up to this: enough to prove common
#: tiles (up to 256 along an axis) whole, so loads drop their padding, while shapes differing only
#: in higher powers of two share a compilation.
SHAPE_DIV_CAP = 256
#: ... and only from 16 up (Triton's rule: "divisible by 16" or not), or from one 16-byte vector
#: of the array's elements where that is fewer (8 fp16, 4 float32): a divisor below both changes
#: no code worth a compile, so fp16 n = 1001, 1002 and 1004 share one. 1000 (÷8) does not: with
#: it a tile over a ragged fp16 row keeps 128-bit stores (LayerNorm of 1016-element rows on an
#: H200, 2026-11-28: 64 2-byte stores a thread without it, 8 16-byte ones with, as for 1024;
#: those rows ran at 0.64-0.76 of the speed of whole ones).
SHAPE_DIV_MIN = 16
#: Alignment that changes the code (128-bit vector accesses, TMA): a base address is keyed as
#: 16-byte aligned or not; a stride as a multiple of 16 bytes or not.
ALIGN_BYTES = 16


# --- facts ---------------------------------------------------------------------------------------
class Facts(NamedTuple):
    """What is known about an array argument's layout (part of its key)."""

    index_bits: int                   # 32 when every extent, stride and offset fits in int32
    base_div: int                     # 16 when the base address is 16-byte aligned, else 1
    shape_div: Tuple[int, ...]        # per extent: its power-of-two divisor, 16..256 (from one
                                      # 16-byte vector of elements), else 1
    stride_div: Tuple[int, ...]       # per stride: the elements of 16 bytes when it is a multiple
                                      # of them (a zero stride is), else 1
    stride_one: Tuple[bool, ...]      # per stride: == 1

    @property
    def index_dtype(self) -> _dt.DType:
        """The integer type of extents, strides and indices of this array."""
        return _dt.int32 if self.index_bits == 32 else _dt.int64

    @classmethod
    def of(cls, ptr: int, shape: Sequence[int], strides: Sequence[int],
           itemsize: int) -> "Facts":
        """The facts of an array view at byte address ``ptr`` (strides in elements of
        ``itemsize`` bytes): only what changes the generated code, so sizes that differ in
        nothing else share a specialization (SHAPE_DIV_MIN, ALIGN_BYTES)."""
        lp2 = largest_pow2_divisor
        unit = max(1, ALIGN_BYTES // itemsize)
        least = min(SHAPE_DIV_MIN, unit)
        shape_div = []
        for n in shape:
            d = lp2(n, SHAPE_DIV_CAP)
            shape_div.append(d if d >= least and d > 1 else 1)
        return tuple.__new__(cls, (index_bits_for(shape, strides),
                                   ALIGN_BYTES if ptr % ALIGN_BYTES == 0 else 1,
                                   tuple(shape_div),
                                   tuple([unit if s % unit == 0 else 1 for s in strides]),
                                   tuple([s == 1 for s in strides])))

    def describe(self) -> str:
        """In words, every fact (reprs: two specializations always read differently)."""
        def div(d):
            return f"÷{d}" if d > 1 else "-"
        ext = ", ".join(div(d) for d in self.shape_div)
        st = ", ".join("1" if one else div(d) for d, one in zip(self.stride_div, self.stride_one))
        return (f"extents ({ext}), strides ({st}), base {div(self.base_div)}, "
                f"{self.index_bits}-bit indices")

    @classmethod
    def unknown(cls, ndim: int) -> "Facts":
        """Nothing known: 64-bit indexing, no divisibility (for types built without a launch)."""
        return cls(64, 1, (1,) * ndim, (1,) * ndim, (False,) * ndim)


def index_bits_for(shape: Sequence[int], strides: Sequence[int]) -> int:
    """32 when every extent, stride and element offset of the view fits in int32, else 64."""
    for n in shape:
        if n >= _I32_LIMIT:
            return 64
    for s in strides:
        if s >= _I32_LIMIT or -s >= _I32_LIMIT:
            return 64
    return 32 if span_elements(shape, strides) < _I32_LIMIT else 64


def index_dtype(facts: Optional[Facts]) -> _dt.DType:
    """The index integer type for ``facts`` (64-bit when nothing is known)."""
    return _dt.int32 if facts is not None and facts[0] == 32 else _dt.int64


def array_slots(ndim: int, index_bits: int) -> Tuple[str, ...]:
    """ABI slot types of an array argument: base pointer, extents, strides."""
    idx = "i32" if index_bits == 32 else "i64"
    return ("u64",) + (idx,) * (2 * ndim)


# --- argument keys -------------------------------------------------------------------------------
class TensorKey(NamedTuple):
    """A tensor argument: read-only unless ``writable`` (``tile.atomic(t)``)."""

    kind: str
    dtype: str
    ndim: int
    facts: Facts
    writable: bool

    def abi_slots(self) -> Tuple[str, ...]:
        return array_slots(self.ndim, self.facts[0])

    def describe(self) -> str:
        """In words, for reprs: ``tensor float32 2-d`` (``writable`` when it is), then the
        facts."""
        return f"tensor {self.dtype} {self.ndim}-d" + (" writable" if self.writable else "") + \
            _facts(self.facts)


class PartitionKey(NamedTuple):
    """A partitioned output: each block owns one tile of ``tile_shape``."""

    kind: str
    dtype: str
    ndim: int
    facts: Facts
    tile_shape: Tuple[int, ...]

    def abi_slots(self) -> Tuple[str, ...]:
        return array_slots(self.ndim, self.facts[0])

    def describe(self) -> str:
        """In words, for reprs: ``partition float32 2-d tile (32, 64)``, then the facts."""
        return f"partition {self.dtype} {self.ndim}-d tile {tuple(self.tile_shape)}" + \
            _facts(self.facts)


def _facts(facts) -> str:
    return f" [{Facts(*facts).describe()}]" if facts is not None else ""


_SCALAR_SLOT = {"bool_": "i32", "tfloat32": "f32"}


def scalar_slot(dtype: _dt.DType) -> str:
    """The ABI slot of a scalar of ``dtype`` (bools travel as i32, tf32 as f32)."""
    return _SCALAR_SLOT.get(dtype.name, dtype.short)


class ScalarKey(NamedTuple):
    """A scalar argument; ``weak`` for Python scalars (they adopt a tile's dtype)."""

    kind: str
    dtype: str
    weak: bool

    def abi_slots(self) -> Tuple[str, ...]:
        return (scalar_slot(_dt.from_name(self.dtype)),)

    def describe(self) -> str:
        """In words, for reprs: ``float32 scalar (weak)``."""
        return f"{self.dtype} scalar" + (" (weak)" if self.weak else "")


class TupleKey(NamedTuple):
    """A tuple of tensors and scalars passed as one argument (``kernel(z, (a0, a1, a2))``).

    Tensors of one dtype, rank and writability share their facts (the weakest of them), so the
    tuple is homogeneous and can be indexed at run time in the kernel."""

    kind: str
    items: tuple

    def abi_slots(self) -> Tuple[str, ...]:
        out: Tuple[str, ...] = ()
        for k in self.items:
            out += as_key(k).abi_slots()
        return out

    def describe(self) -> str:
        """In words, for reprs: ``tuple (tensor float32 2-d, tensor float32 2-d)``."""
        return "tuple (" + ", ".join(as_key(k).describe() for k in self.items) + ")"


def merged_facts(facts: Sequence[Facts]) -> Facts:
    """What holds for every one of ``facts`` (arrays of one rank)."""
    return Facts(max(f.index_bits for f in facts), min(f.base_div for f in facts),
                 tuple(min(d) for d in zip(*(f.shape_div for f in facts))),
                 tuple(min(d) for d in zip(*(f.stride_div for f in facts))),
                 tuple(all(o) for o in zip(*(f.stride_one for f in facts))))


def tuple_key(items: Sequence) -> TupleKey:
    """The key of a tuple argument from its items' keys (tensors of one dtype, rank and
    writability get their merged facts)."""
    items = tuple(as_key(k) for k in items)
    groups: dict = {}
    for k in items:
        if k.kind == "tensor":
            groups.setdefault((k.dtype, k.ndim, k.writable), []).append(k.facts)
    merged = {g: merged_facts(fs) for g, fs in groups.items() if len(fs) > 1}
    items = tuple(tensor_key(k.dtype, k.ndim, merged[(k.dtype, k.ndim, k.writable)], k.writable)
                  if k.kind == "tensor" and (k.dtype, k.ndim, k.writable) in merged else k
                  for k in items)
    return tuple.__new__(TupleKey, ("tuple", items))


def tensor_key(dtype_name: str, ndim: int, facts: Facts, writable: bool) -> TensorKey:
    return tuple.__new__(TensorKey, ("tensor", dtype_name, ndim, facts, writable))


def partition_key(dtype_name: str, ndim: int, facts: Facts, tile_shape) -> PartitionKey:
    return tuple.__new__(PartitionKey, ("partition", dtype_name, ndim, facts, tuple(tile_shape)))


def scalar_key(dtype_name: str, weak: bool) -> ScalarKey:
    return tuple.__new__(ScalarKey, ("scalar", dtype_name, weak))


_KEY_CLASSES = {"tensor": TensorKey, "partition": PartitionKey, "scalar": ScalarKey,
                "tuple": TupleKey}


def as_key(key):
    """The named key for a plain tuple spelling of it (named keys are returned as they are).

    Raises ValueError for anything that is not a key."""
    if isinstance(key, (TensorKey, PartitionKey, ScalarKey, TupleKey)):
        return key
    if not isinstance(key, tuple) or not key or key[0] not in _KEY_CLASSES:
        raise ValueError(f"invalid argument key {key!r}: expected ('tensor', ...), "
                         f"('partition', ...) or ('scalar', ...)")
    cls = _KEY_CLASSES[key[0]]
    if len(key) != len(cls._fields):
        raise ValueError(f"invalid {key[0]} key {key!r}: expected the fields {cls._fields}")
    if cls is TupleKey:
        return tuple.__new__(TupleKey, ("tuple", tuple(as_key(k) for k in key[1])))
    if cls is not ScalarKey:
        facts = key[3]
        if facts is not None and not isinstance(facts, Facts):
            facts = Facts(*facts)
        key = key[:3] + (facts,) + key[4:]
    return tuple.__new__(cls, key)


def abi_slots(keys) -> Tuple[str, ...]:
    """All ABI slot types of a kernel, in order, from its argument keys."""
    out: Tuple[str, ...] = ()
    for k in keys:
        out += as_key(k).abi_slots()
    return out


# --- constants -----------------------------------------------------------------------------------
def constant_key(consts: dict) -> tuple:
    """The key part of ``tile.Constant`` values: sorted by name, each value tagged by its kind.

    Floats are keyed by their bits, so ``-0.0`` and ``0.0`` are different specializations and a
    NaN matches itself (instead of recompiling on every call). Values must already be checked
    (:func:`constant_value`).
    """
    return tuple((name, _value_key(consts[name])) for name in sorted(consts))


def same_constants(x, y) -> bool:
    """Whether constants' values found equal as dict keys are the same values: same types,
    floats by their bits (a NaN or -0.0 binds its own kernel), tuples item by item. Launch
    memos keyed by the values as passed check a hit with it (1 == True == 1.0 as keys);
    csrc/cutile.c ``same_constant`` is the same rule."""
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        return _FLOAT_BITS.pack(x) == _FLOAT_BITS.pack(y)
    if type(x) is tuple:
        return len(x) == len(y) and all(map(same_constants, x, y))
    return True


def constant_types(raw):
    """The exact types of constants' values as passed: for flat, float-free values an equal
    memo key with the same types is the same values (cheaper than :func:`same_constants`)."""
    return tuple(map(type, raw)) if type(raw) is tuple else type(raw)


def flat_types(raw, values):
    """What a launch memo keyed by constants' values as passed (``raw``) stores to check a hit:
    their exact types (:func:`constant_types`) when every one of ``values`` (the constants, one
    by one) is flat and float-free, else None (a hit is then checked by :func:`same_constants`)."""
    if any(type(v) is tuple or isinstance(v, float) for v in values):
        return None
    return constant_types(raw)


def same_binding(raw, hit) -> bool:
    """Whether a launch memo's hit ``(bound kernel, values, flat_types or None)`` found for the
    key ``raw`` holds the same values, not only equal ones (1 == True == 1.0 as keys).
    csrc/prepared.c ``same_binding`` is the same rule."""
    types = hit[2]
    return constant_types(raw) == types if types is not None else same_constants(raw, hit[1])


_FLOAT_BITS = struct.Struct("<d")

_CONSTANT_KINDS = "an int, float, bool, tile dtype, enum member or a tuple of these"


def constant_value(name: str, value: Any, expected: Any = None) -> Any:
    """``value`` checked and normalized as the value of the Constant parameter ``name``.

    NumPy scalars become Python scalars. ``expected`` is the type inside ``Constant[...]`` when
    known (``int``, ``float``, ``bool``, ``tuple``/``Tuple[int, ...]``): ints are accepted for
    floats, but a float for an int is an error (as ``range(2.5)`` is in Python). TypeError names
    the parameter, what it got and what to pass instead.
    """
    import numpy as np
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64)):
        value = value.item()
    if isinstance(value, np.ndarray):
        raise TypeError(f"constant parameter '{name}' got a NumPy array (shape {value.shape}); "
                        f"constants must be {_CONSTANT_KINDS}. Pass arrays as regular (runtime) "
                        f"parameters")
    if isinstance(value, list):
        raise TypeError(f"constant parameter '{name}' got a list {value!r}; constants must be "
                        f"hashable: pass a tuple instead")
    origin = getattr(expected, "__origin__", expected)
    if expected is int or expected is float or expected is bool:
        want = expected.__name__
        ok = (isinstance(value, bool) if expected is bool else
              isinstance(value, (int, bool)) if expected is int else
              isinstance(value, (int, float)) and not isinstance(value, bool))
        if not ok:
            hint = " (convert with int(...) if you mean it)" if expected is int and \
                isinstance(value, float) else ""
            raise TypeError(f"constant parameter '{name}' is annotated tile.Constant[{want}] but "
                            f"got {type(value).__name__} {value!r}{hint}")
        return expected(value)
    if origin is tuple:
        if not isinstance(value, tuple):
            raise TypeError(f"constant parameter '{name}' is annotated as a tuple but got "
                            f"{type(value).__name__} {value!r}")
        args = getattr(expected, "__args__", ())
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(constant_value(f"{name}[{i}]", v, args[0]) for i, v in enumerate(value))
        if args and len(args) == len(value):
            return tuple(constant_value(f"{name}[{i}]", v, a)
                         for i, (v, a) in enumerate(zip(value, args)))
    if isinstance(value, tuple):
        return tuple(constant_value(f"{name}[{i}]", v) for i, v in enumerate(value))
    if isinstance(value, (bool, int, float, _dt.DType, enum.Enum)):
        return value
    raise TypeError(f"constant parameter '{name}' must be {_CONSTANT_KINDS}, got "
                    f"{type(value).__name__} {value!r}")


def _value_key(v) -> Any:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    if isinstance(v, _dt.DType):
        return ("dtype", v.name)
    if isinstance(v, enum.Enum):
        return ("enum", type(v).__qualname__, v.name)
    if isinstance(v, tuple):
        return ("tuple",) + tuple(_value_key(x) for x in v)
    raise TypeError(f"cannot key constant value {v!r}")



#: the grid facts of a launch whose grid is unknown (no axis known to have extent 1); here, not in
#: runtime.argspec, so that the dispatcher's defaults need no runtime import
NO_GRID_FACTS = (False, False, False)
#: a tile.Constant left for .generics(...) to bind (kernel_launch and the dispatcher share it)
MISSING = object()


__all__ = ["Facts", "TensorKey", "PartitionKey", "ScalarKey", "TupleKey", "tensor_key",
           "partition_key", "scalar_key", "tuple_key", "merged_facts", "as_key", "abi_slots", "array_slots", "scalar_slot", "index_bits_for",
           "index_dtype", "constant_key", "constant_value"]
