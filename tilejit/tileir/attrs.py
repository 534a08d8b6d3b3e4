"""Attribute values carried by Tile IR operations, and the enums of the dialect.

Enum attributes are stored on operations as their keyword strings (``"nearest_even"``); ``ENUMS``
gives the bytecode value of each keyword (its index). The other attribute kinds are small frozen
dataclasses so that modules can be compared and hashed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from .types import PADDING_VALUES, TileType

# enum name -> keywords, indexed by their bytecode value
ENUMS: Dict[str, Tuple[str, ...]] = {
    "Signedness": ("unsigned", "signed"),
    "IntegerOverflow": ("none", "no_signed_wrap", "no_unsigned_wrap", "no_wrap"),
    "RoundingMode": ("nearest_even", "zero", "negative_inf", "positive_inf", "approx", "full",
                     "nearest_int_to_zero"),
    "ComparisonOrdering": ("unordered", "ordered"),
    "ComparisonPredicate": ("equal", "not_equal", "less_than", "less_than_or_equal",
                            "greater_than", "greater_than_or_equal"),
    "AtomicRMWMode": ("and", "or", "xor", "add", "addf", "max", "min", "umax", "umin", "xchg"),
    "MemoryScope": ("tl_blk", "device", "sys"),
    "MemoryOrderingSemantics": ("weak", "relaxed", "acquire", "release", "acq_rel"),
    "PaddingValue": PADDING_VALUES,
    "SymbolVisibility": ("public", "private"),
}


def enum_value(enum: str, keyword: str) -> int:
    try:
        return ENUMS[enum].index(keyword)
    except ValueError:
        raise ValueError(f"{keyword!r} is not a {enum}; expected one of {ENUMS[enum]}") from None


@dataclass(frozen=True)
class DenseConst:
    """A dense constant: a NumPy array (or a splat scalar) with the tile type it initializes.

    ``data`` is stored as raw little-endian bytes of the element type (see ``bytecode``); the
    NumPy value is kept for printing and for the simulator.
    """

    type: TileType
    value: object = field(compare=False)  # np.ndarray of the element's NumPy dtype, shape () = splat
    key: bytes = b""                       # raw bytes, used for equality/hashing

    @property
    def is_splat(self) -> bool:
        return np.ndim(self.value) == 0


@dataclass(frozen=True)
class TypedValue:
    """A self-describing scalar attribute (``0.0 : f32``), e.g. a reduce identity."""

    value: object          # int, float or bool
    element: str           # element type name


@dataclass(frozen=True)
class DivBy:
    """``div_by<divisor[, every E along A]>``: an assume predicate."""

    divisor: int
    every: Optional[int] = None
    along: Optional[int] = None

    def __post_init__(self):
        d = self.divisor
        if d <= 0 or d & (d - 1):
            raise ValueError(f"div_by divisor must be a positive power of two, got {d}")
        if (self.every is None) != (self.along is None):
            raise ValueError("div_by 'every' and 'along' must be given together")


@dataclass(frozen=True)
class Bounded:
    """``bounded<lb, ub>`` (inclusive, None = unbounded): an assume predicate."""

    lb: Optional[int] = None
    ub: Optional[int] = None


@dataclass(frozen=True)
class SameElements:
    values: Tuple[int, ...]


@dataclass(frozen=True)
class OptHints:
    """Optimization hints: architecture name (``"sm_90"`` or ``"default"``) -> {key: value}.

    Values are ints (encoded as i32 integers) or bools.
    """

    per_arch: Tuple[Tuple[str, Tuple[Tuple[str, object], ...]], ...]

    @staticmethod
    def make(mapping: Mapping[str, Mapping[str, object]]) -> "OptHints":
        return OptHints(tuple((arch, tuple(d.items())) for arch, d in mapping.items()))

    def as_dict(self) -> Dict[str, Dict[str, object]]:
        return {arch: dict(items) for arch, items in self.per_arch}

    def __bool__(self) -> bool:
        return bool(self.per_arch)
