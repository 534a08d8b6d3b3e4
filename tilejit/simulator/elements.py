"""How Tile IR element types live in NumPy.

Tiles are NumPy arrays (0-d tiles may also be NumPy scalars) of the element's *storage* dtype:

* signless integers ``i8..i64`` are stored as the *signed* NumPy types; ops with a ``signedness``
  attribute reinterpret them with :func:`unsigned` (a bit-preserving view); ``i1`` is ``bool``;
* ``f16`` is ``float16``, ``bf16`` and the fp8 formats are ``ml_dtypes`` types, ``f32``/``f64`` as
  usual, and ``tf32`` is ``float32`` whose mantissa is kept rounded to 10 bits;
* pointers are ``int64`` byte addresses into :mod:`tilejit.simulator.memory`.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..tileir.types import ELEMENT_TYPES, PointerType

_STORAGE = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "tf32": np.float32,
    "f64": np.float64, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E8M0FNU": ml_dtypes.float8_e8m0fnu, "f4E2M1FN": ml_dtypes.float4_e2m1fn,
}
STORAGE = {k: np.dtype(v) for k, v in _STORAGE.items()}
PTR = np.dtype(np.int64)
_UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
             8: np.dtype(np.uint64)}
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)


def storage(elem) -> np.dtype:
    """The NumPy dtype of a tile of ``elem`` (a type name or a PointerType)."""
    if isinstance(elem, PointerType):
        return PTR
    return STORAGE[elem]


def memory_dtype(elem) -> np.dtype:
    """The dtype of one element in device memory (``i1`` takes a byte)."""
    if elem == "i1":
        return np.dtype(np.uint8)
    return storage(elem)


def bits(elem) -> int:
    return 64 if isinstance(elem, PointerType) else ELEMENT_TYPES[elem][1]


def is_float(elem) -> bool:
    return isinstance(elem, str) and ELEMENT_TYPES[elem][2] == "f"


def uint_of(dt: np.dtype) -> np.dtype:
    """The unsigned integer dtype with the itemsize of ``dt``."""
    return _UNSIGNED[np.dtype(dt).itemsize]


def unsigned(x, elem: str) -> np.ndarray:
    """``x`` (a tile of ``elem``) read as unsigned integers (``i1``: 0/1 as uint8)."""
    x = np.asarray(x)
    if elem == "i1":
        return x.astype(np.uint8)
    return x.view(_UNSIGNED[x.dtype.itemsize])


def signed(x, elem: str) -> np.ndarray:
    """``x`` read as signed integers (``i1``: true is -1, as a 1-bit two's complement value)."""
    x = np.asarray(x)
    if elem == "i1":
        return -(x.astype(np.int8))
    return x


def wrap(values, elem: str) -> np.ndarray:
    """Integers of any NumPy integer type (or bools) truncated to ``elem``'s width and storage."""
    v = np.asarray(values)
    if elem == "i1":
        return (v & 1).astype(np.bool_) if v.dtype != np.bool_ else v
    return v.astype(STORAGE[elem], copy=False)


def scalar_param(value, elem) -> np.ndarray:
    """A kernel parameter (Python int/float/bool or NumPy scalar) as a 0-d tile of ``elem``."""
    if isinstance(elem, PointerType):
        return np.array(int(value) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64).view(np.int64)[()]
    if is_float(elem):
        from .numerics import from_f64
        return from_f64(np.array(float(value), dtype=np.float64), elem)[()]
    if elem == "i1":
        return np.bool_(bool(value))
    n = bits(elem)
    raw = int(value) & ((1 << n) - 1)
    return np.array(raw, dtype=np.uint64).astype(STORAGE[elem])[()]


PADDING = {"zero": 0.0, "neg_zero": -0.0, "nan": float("nan"), "pos_inf": float("inf"),
           "neg_inf": float("-inf")}


def padding_value(padding, elem) -> np.ndarray:
    """The 0-d fill value of a partition view's padding (zero when it has none)."""
    dt = storage(elem)
    if padding is None or not is_float(elem):
        return np.zeros((), dtype=dt)
    with np.errstate(all="ignore"):
        return np.array(PADDING[padding], dtype=np.float64).astype(dt)
