"""Python scalars at the call: NumPy 2's weak scalars (NEP 50), the one definition.

A Python ``int``/``float``/``bool`` kernel argument is *weak*: it takes the dtype of the tile it
meets. It travels exactly (``int`` as ``i64``, ``float`` as ``f64``, ``bool`` as ``i32``; see
:data:`PYTHON_SCALARS`; an ``int`` in [2**63, 2**64) as ``u64``, as NumPy 2 takes
``uint64_array + 2**63``) and the kernel converts it where it meets a tile, once, as NumPy converts
it. What NumPy does with a value that does not fit that dtype happens at the call:

* an ``int`` out of the dtype's range raises ``OverflowError("Python integer 1000 out of bounds
  for int8")``;
* a finite ``float`` beyond a narrower float's range becomes ``inf`` with ``RuntimeWarning:
  overflow encountered in cast``.

The compiler records, per weak parameter, the dtypes the kernel converts it into (comparisons
excluded: they are exact, as in NumPy 2), as a *checked slot*: ``"i64:int8"`` is an ``i64``
parameter whose value must fit ``int8``, ``"f64:float32"`` an ``f64`` one that warns past
``float32``'s range. Launchers check ranges with two compares (:func:`slot_range`, the C launcher
too) and call :func:`out_of_range` only for a value outside, which raises or warns.
"""
from __future__ import annotations

import math
import warnings
from typing import Optional, Tuple

from . import dtypes as _dt
from .keys import scalar_key

#: The key and ABI slot of each Python scalar type (exact types; bool before int for subclasses).
PYTHON_SCALARS = {
    bool: (scalar_key("bool_", True), "i32"),
    int: (scalar_key("int64", True), "i64"),
    float: (scalar_key("float64", True), "f64"),
}

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
#: A Python int beyond int64 but within uint64: weak, so it still adopts a tile's dtype (a
#: uint64 tile takes it; an int64 one raises NumPy's OverflowError at the call).
_WIDE_INT = (scalar_key("uint64", True), "u64")


# --- checked slots ---------------------------------------------------------------------------
def checked_slot(slot: str, intos) -> str:
    """``slot`` with the dtypes a weak scalar is converted into (none: ``slot`` unchanged)."""
    names = sorted({d.name for d in intos})
    return f"{slot}:{','.join(names)}" if names else slot


def slot_abi(slot: str) -> str:
    """The ABI type of a (possibly checked) slot: ``"i64:int8"`` -> ``"i64"``."""
    return slot.partition(":")[0]


def slot_intos(slot: str) -> Tuple[_dt.DType, ...]:
    """The dtypes a checked slot's value is converted into (empty for a plain slot)."""
    rest = slot.partition(":")[2]
    return tuple(_dt.from_name(n) for n in rest.split(",")) if rest else ()


def needs_check(param_dtype: _dt.DType, into: _dt.DType) -> bool:
    """Whether converting a weak scalar parameter of ``param_dtype`` into ``into`` is checked at
    the call: a Python int (int64) into a narrower integer range, a Python float (float64) into a
    narrower float range. (A parameter annotated with another dtype is converted on the host.)"""
    if param_dtype in (_dt.int64, _dt.uint64):
        return into.is_integer and into is not param_dtype
    return param_dtype is _dt.float64 and into.is_float and into.bits < 64


def _float_limit(d: _dt.DType) -> float:
    """The largest float64 that converts to ``d`` without overflowing to inf (round to nearest
    even: half an ulp above ``d``'s max still rounds down, the midpoint goes to inf)."""
    import ml_dtypes
    import numpy as np
    np_dt = np.dtype(np.float32) if d is _dt.tfloat32 else d.np_dtype
    uint = np.dtype(f"u{np_dt.itemsize}")
    top = np.array(ml_dtypes.finfo(np_dt).max, np_dt)
    below = (top.view(uint) - uint.type(1)).view(np_dt)
    mid = float(top) + (float(top) - float(below)) / 2
    return math.nextafter(mid, 0.0)


def slot_range(slot: str):
    """``(kind, lo, hi)`` for a checked slot: ``kind`` 1 (an int must lie in [lo, hi]) or 2 (a
    float outside [lo, hi] overflows); None for a plain slot."""
    intos = slot_intos(slot)
    if not intos:
        return None
    if slot_abi(slot) == "f64":
        hi = min(_float_limit(d) for d in intos)
        return 2, -hi, hi
    import numpy as np
    lo, hi = (0, UINT64_MAX) if slot_abi(slot) == "u64" else (INT64_MIN, INT64_MAX)
    for d in intos:
        info = np.iinfo(d.np_dtype)
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    return 1, lo, hi


def out_of_range(value, intos) -> None:
    """What NumPy 2 does with a weak scalar ``value`` converted into each of ``intos``, for a
    value a launcher found outside :func:`slot_range`: OverflowError for an int that does not
    fit; ``RuntimeWarning`` for a finite float that overflows; nothing for inf/NaN."""
    for d in intos:
        if d.is_integer and not isinstance(value, float):
            check_int_fits(value, d)
    if isinstance(value, float) and math.isfinite(value):
        warnings.warn("overflow encountered in cast", RuntimeWarning, stacklevel=4)


def check_int_fits(value: int, d: _dt.DType) -> None:
    """OverflowError, in NumPy's words, when the Python int ``value`` does not fit ``d``."""
    import numpy as np      # (here: defining a kernel imports this module, not NumPy)
    info = np.iinfo(d.np_dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"Python integer {value} out of bounds for {d.name}")


def constant_for(value, d: _dt.DType):
    """``value`` as the Python scalar a fill of dtype ``d`` takes (``api.full``/``api.fill``):
    kept exactly, or refused as NumPy's ``np.full`` refuses it."""
    if d.is_bool:
        return bool(value)
    if d.is_integer:
        v = int(value)
        check_int_fits(v, d)
        if v > INT64_MAX:               # uint64 beyond int64: a strong NumPy scalar
            import numpy as np
            return np.uint64(v)
        return v
    return float(value)


def python_scalar(value) -> Optional[tuple]:
    """``(key, slot)`` of a Python scalar argument, or None when it is not one (or an int beyond
    uint64 or below int64, which the caller refuses with a message)."""
    hit = PYTHON_SCALARS.get(type(value))
    if hit is None or type(value) is not int or INT64_MIN <= value <= INT64_MAX:
        return hit
    return _WIDE_INT if INT64_MAX < value <= UINT64_MAX else None


def annotated_plans() -> dict:
    """``{dtype: (int plan, float plan, bool plan)}``: how a Python scalar passed to a parameter
    annotated ``dtype`` travels when it needs no conversion on the host (the C launcher replays
    these; ``argspec`` is the definition, and everything else goes through it). A plan is
    ``(key, lo, hi)``: the argument's key (weak: it is a Python scalar) and the range its value
    must lie in to travel as is (an int that fits the dtype; a float that does not overflow
    it, or any NaN or inf), else None. A bool travels as 0/1."""
    import numpy as np
    out = {}
    for d in _dt.ALL_DTYPES:
        key = scalar_key(d.name, True)
        int_plan = float_plan = bool_plan = None
        if d.is_bool:
            bool_plan = (key, 0, 1)
        elif d.is_integer:
            info = np.iinfo(d.np_dtype)
            int_plan = (key, max(int(info.min), INT64_MIN), min(int(info.max), INT64_MAX))
        elif d is _dt.float64:
            float_plan = (key, -math.inf, math.inf)
        elif d is _dt.float32:      # rounded to float32 by the packer, as NumPy's cast rounds
            hi = _float_limit(d)
            float_plan = (key, -hi, hi)
        out[d] = (int_plan, float_plan, bool_plan)
    out.update(_strong_plans(out))
    return out


# --- strong scalars (cuTile's rule) ----------------------------------------------------------
class StrongScalar:
    """A launcher annotation (``Kernel._anns``): a Python scalar passed to this parameter is a
    *strong* value, a rank-0 tile of one dtype, as cuTile Python types its run-time scalar
    arguments (``x_f16 + y`` with ``y = 5.0`` computes in float32). ``dtype`` when set (the
    value converted to it, as a dtype annotation converts), else by the value's type
    (:data:`STRONG_DEFAULTS`); a NumPy scalar keeps its own dtype. One object per dtype
    (:func:`strong`): the C launcher finds its plans by identity."""

    __slots__ = ("dtype",)

    def __repr__(self) -> str:
        return f"strong({self.dtype.name if self.dtype else ''})"


#: cuTile's dtypes of unannotated Python scalars (an int outside int32 raises OverflowError)
STRONG_DEFAULTS = {bool: _dt.bool_, int: _dt.int32, float: _dt.float32}
_STRONG: dict = {}


def strong(dtype: Optional[_dt.DType] = None) -> StrongScalar:
    """The :class:`StrongScalar` annotation for ``dtype`` (None: by the value's type)."""
    s = _STRONG.get(dtype)
    if s is None:
        s = object.__new__(StrongScalar)
        s.dtype = dtype
        s = _STRONG.setdefault(dtype, s)
    return s


def _strong_plans(weak: dict) -> dict:
    """annotated_plans' entries for the :class:`StrongScalar` annotations: the weak plans' ranges
    under strong keys; ``strong()`` takes each plan from its type's default dtype."""
    def strong_plan(plan):
        return None if plan is None else (scalar_key(plan[0].dtype, False),) + plan[1:]

    out = {strong(d): tuple(strong_plan(p) for p in plans) for d, plans in weak.items()}
    out[strong()] = tuple(strong_plan(weak[STRONG_DEFAULTS[t]][i])
                          for i, t in enumerate((int, float, bool)))
    return out


__all__ = ["PYTHON_SCALARS", "annotated_plans", "checked_slot", "slot_abi", "slot_intos", "needs_check",
           "slot_range", "out_of_range", "check_int_fits", "constant_for", "python_scalar",
           "StrongScalar", "STRONG_DEFAULTS", "strong"]
