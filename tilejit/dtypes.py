"""Element types shared by the kernel language, the host runtime, Tile IR and the simulator.

A :class:`DType` is an interned, immutable description: its NumPy-style ``name``, its Tile IR element
type (integers are signless in Tile IR, so ``uint32`` and ``int32`` are both ``i32``), its storage
NumPy dtype (``ml_dtypes`` for bfloat16 and the fp8 formats) and its DLPack code.
"""
from __future__ import annotations

from typing import Dict, Optional


# DLPack DLDataTypeCode values (dlpack.h, v1.1)
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2, DL_FLOAT8_E8M0FNU = 10, 12, 14
DL_NONE = -1        # no DLPack code: never exchanged (float4 tensors hold one value per byte)


class DType:
    """An element type. Compare with ``is`` or ``==``; use ``tile.float32`` etc., never construct."""

    __slots__ = ("name", "kind", "bits", "tileir", "_np", "dlpack_code", "_short")

    def __init__(self, name: str, kind: str, bits: int, tileir: str, np_dtype, dlpack_code: int,
                 short: str):
        self.name = name            # "float32"
        self.kind = kind            # 'b' bool, 'i' signed, 'u' unsigned, 'f' float
        self.bits = bits            # width of one element in memory
        self.tileir = tileir        # Tile IR element type name: "f32", "i32", "i1", "bf16" ...
        self._np = np_dtype         # NumPy's name, or ml_dtypes' as "ml_dtypes.bfloat16"
        self.dlpack_code = dlpack_code
        self._short = short

    @property
    def np_dtype(self):
        """Its NumPy dtype (made on first use: ``import tilejit`` does not load NumPy)."""
        np = self._np
        if isinstance(np, str):
            self._np = np = _numpy_dtype(np)
        return np

    # --- classification -------------------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_fp8(self) -> bool:
        return self.name.startswith("float8")

    @property
    def is_fp4(self) -> bool:
        return self.name.startswith("float4")

    @property
    def is_tiny_float(self) -> bool:
        """float8 and float4: formats for storage and matrix inputs, without arithmetic."""
        return self.is_fp8 or self.is_fp4

    @property
    def short(self) -> str:
        """Compact spelling used in names and messages: ``f32``, ``u8``, ``bf16`` ..."""
        return self._short

    def __repr__(self) -> str:
        return f"tilejit.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (from_name, (self.name,))


def _make(name, kind, bits, tileir, np_dtype, dl, short) -> DType:
    return DType(name, kind, bits, tileir, np_dtype, dl, short)


def _numpy_dtype(name: str):
    import numpy as np
    if name.startswith("ml_dtypes."):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name[len("ml_dtypes."):]))
    return np.dtype(name)


bool_ = _make("bool_", "b", 8, "i1", "bool", DL_BOOL, "b1")
int8 = _make("int8", "i", 8, "i8", "int8", DL_INT, "i8")
int16 = _make("int16", "i", 16, "i16", "int16", DL_INT, "i16")
int32 = _make("int32", "i", 32, "i32", "int32", DL_INT, "i32")
int64 = _make("int64", "i", 64, "i64", "int64", DL_INT, "i64")
uint8 = _make("uint8", "u", 8, "i8", "uint8", DL_UINT, "u8")
uint16 = _make("uint16", "u", 16, "i16", "uint16", DL_UINT, "u16")
uint32 = _make("uint32", "u", 32, "i32", "uint32", DL_UINT, "u32")
uint64 = _make("uint64", "u", 64, "i64", "uint64", DL_UINT, "u64")
float16 = _make("float16", "f", 16, "f16", "float16", DL_FLOAT, "f16")
bfloat16 = _make("bfloat16", "f", 16, "bf16", "ml_dtypes.bfloat16", DL_BFLOAT, "bf16")
float32 = _make("float32", "f", 32, "f32", "float32", DL_FLOAT, "f32")
float64 = _make("float64", "f", 64, "f64", "float64", DL_FLOAT, "f64")
# tf32 is a compute format: stored as 32-bit floats whose low 13 mantissa bits are ignored.
tfloat32 = _make("tfloat32", "f", 32, "tf32", "float32", DL_FLOAT, "tf32")
float8_e4m3fn = _make("float8_e4m3fn", "f", 8, "f8E4M3FN", "ml_dtypes.float8_e4m3fn",
                      DL_FLOAT8_E4M3FN, "f8e4m3")
float8_e5m2 = _make("float8_e5m2", "f", 8, "f8E5M2", "ml_dtypes.float8_e5m2", DL_FLOAT8_E5M2,
                    "f8e5m2")

# the scale and element formats of block-scaled matmuls (tile.mma_scaled): float8_e8m0fnu is a
# power of two 2**-127..2**127 (no zero, no sign); float4_e2m1fn holds +-{0, .5, 1, 1.5, 2, 3, 4, 6}
# and, like ml_dtypes, takes one byte per element in memory
float8_e8m0fnu = _make("float8_e8m0fnu", "f", 8, "f8E8M0FNU", "ml_dtypes.float8_e8m0fnu",
                       DL_FLOAT8_E8M0FNU, "f8e8m0")
float4_e2m1fn = _make("float4_e2m1fn", "f", 4, "f4E2M1FN", "ml_dtypes.float4_e2m1fn", DL_NONE,
                      "f4e2m1")

ALL_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
              float32, float64, tfloat32, float8_e4m3fn, float8_e5m2, float8_e8m0fnu,
              float4_e2m1fn)

_BY_NAME: Dict[str, DType] = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"bool": bool_, "half": float16, "float": float32, "double": float64,
                 "bf16": bfloat16, "tf32": tfloat32})
# NumPy dtype -> DType; tfloat32 is never inferred from data (float32 storage means float32).
_by_numpy: Dict = {}


def by_numpy() -> Dict:
    """NumPy dtype -> DType (built on first use: it loads NumPy and ml_dtypes)."""
    if not _by_numpy:
        table = {}
        for d in ALL_DTYPES:
            if d is not tfloat32:
                table.setdefault(d.np_dtype, d)
        _by_numpy.update(table)
    return _by_numpy


def __getattr__(name):
    if name == "_BY_NUMPY":         # its name before it was built lazily (runtime/foreign.py)
        return by_numpy()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def from_name(name: str) -> DType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; expected one of "
                        f"{', '.join(d.name for d in ALL_DTYPES)}") from None


def from_numpy(dt) -> DType:
    """The DType of a NumPy dtype (or anything ``np.dtype()`` accepts)."""
    import numpy as np
    npdt = np.dtype(dt)
    table = by_numpy()
    try:
        return table[npdt]
    except KeyError:
        pass
    if not npdt.isnative:
        native = npdt.newbyteorder("=")
        if native in table:
            raise TypeError(
                f"NumPy dtype {npdt.str} has non-native byte order (big-endian); GPUs and tilejit "
                f"use the machine's byte order. Convert the array first: "
                f"a.astype(a.dtype.newbyteorder('=')) (here {native.name})")
    raise TypeError(f"NumPy dtype {npdt} has no tilejit equivalent; supported: "
                    f"{', '.join(d.name for d in ALL_DTYPES)}")


def from_dlpack(code: int, bits: int, lanes: int = 1) -> DType:
    if lanes != 1:
        raise TypeError(f"vector DLPack dtypes (lanes={lanes}) are not supported")
    for d in ALL_DTYPES:
        if d.dlpack_code == code and d.bits == bits and d is not tfloat32:
            return d
    raise TypeError(f"DLPack dtype (code={code}, bits={bits}) has no tilejit equivalent")


def as_dtype(x) -> DType:
    """Accept a DType, a name (``"float32"``), a NumPy dtype / scalar type, or a torch dtype."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        return from_name(x)
    mod = type(x).__module__
    if mod.startswith("torch"):
        name = str(x).split(".")[-1]
        return from_name({"bool": "bool_"}.get(name, name))
    if x is bool:
        return bool_
    if x is int:
        return int64
    if x is float:
        return float32
    try:
        return from_numpy(x)
    except TypeError:
        raise
    except Exception:
        raise TypeError(f"cannot interpret {x!r} as a dtype") from None


def result_type(a: DType, b: DType) -> Optional[DType]:
    """NumPy-style promotion of two *strong* dtypes, restricted to tilejit dtypes.

    Returns None when NumPy would need a type tilejit does not have (e.g. int64 with uint64).
    Weak Python scalars are handled by the typing layer, not here.
    """
    if a is b:
        return a
    if a is tfloat32 or b is tfloat32:
        other = b if a is tfloat32 else a
        return tfloat32 if other.is_float and other.bits <= 32 and not other.is_fp8 else None
    import numpy as np
    try:
        r = np.result_type(a.np_dtype, b.np_dtype)
    except TypeError:
        # ml_dtypes types do not always promote with each other through NumPy.
        if a.is_float and b.is_float:
            if a.bits != b.bits:
                return a if a.bits > b.bits else b
            return float32
        return None
    return by_numpy().get(r)
