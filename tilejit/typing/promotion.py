"""Broadcasting and dtype promotion of the kernel language.

Shapes broadcast like NumPy: shapes are right-aligned, extents must be equal or 1, missing leading
axes count as 1. Scalars (and rank-0 tiles) broadcast to anything.

Dtypes are *strong* (tiles, including rank-0 tiles from reductions) or *weak* (scalars: kernel
arguments, loop indices, ``tile.bid()``, Python constants). Categories order ``bool < int < float``
(signed and unsigned ints are one category).

1. **strong with strong** (``tile + tile``):

   * equal dtypes: that dtype;
   * ``bool`` with anything: the other dtype;
   * int with int: NumPy's ``result_type`` (``int8 + uint8 -> int16``, ``int32 + int64 -> int64``);
     ``int64`` with ``uint64`` has no common type: error;
   * int with float: the float dtype (PyTorch's rule; NumPy would widen to float64, which is slow
     on GPUs);
   * float with float: the wider one; ``float16`` with ``bfloat16`` gives ``float32``;
   * ``tfloat32`` and the ``float8`` formats are storage/MMA formats: arithmetic on them is an
     error (convert with ``.astype``).

2. **weak with strong** (``tile * 2.0``, ``tile + n``): when the scalar's category is at most the
   tile's, the result has the tile's dtype (an int constant must fit in it: ``int8_tile + 300`` is
   an error; a Python int *argument* that does not fit raises OverflowError at the call, see
   ``tilejit/scalars.py``). Otherwise the result is the scalar's dtype, where Python int
   constants count as ``int32`` and Python float constants and arguments (``float64``) as
   ``float32`` (so ``int_tile * 0.5`` is ``float32``). Comparisons with an int outside the
   tile's dtype are exact, as in NumPy 2 (``uint32_tile > -1`` is True, ``int64_tile == 2**64``
   False: constants beyond int64/uint64 are ``types.WideIntLiteral``): the lowering compares
   them so (``Emitter.compare_values``).

3. **weak with weak** (``i + 1``, ``alpha * 2.0``): rule 1 on the scalars' dtypes, except that a
   Python int constant adopts the other operand's int dtype (``bid(0) * 64`` stays ``int32``) and
   Python floats (constants and arguments, both ``float64``) adopt the other operand's float
   dtype (``alpha * 2.0`` stays ``float32`` for a ``float32`` ``alpha``). Two int constants fold to a
   constant, so ``BM // 2`` can be used in static shapes.

Results of operators on scalars are scalars; anything involving a tile is a tile. ``/`` always
produces a float (``float32`` for int/bool operands); ``//`` and ``%`` follow Python's floor
semantics; comparisons produce ``bool``; bitwise operators need bool/int operands; shifts need
ints.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Sequence, Tuple

import numpy as np
from numba.core import types

from .. import dtypes as dt
from ..dtypes import DType
from .diagnostics import TileTypingError
from .types import TileType, WideIntLiteral, dtype_of, is_scalar, value_type

BOOL, INT, FLOAT = 0, 1, 2
COMPARISONS = frozenset(("<", "<=", ">", ">=", "==", "!="))


def category(d: DType) -> int:
    return BOOL if d.is_bool else INT if d.is_integer else FLOAT


def is_compute_only(d: DType) -> bool:
    """Formats without arithmetic: tf32, the float8s and float4."""
    return d is dt.tfloat32 or d.is_tiny_float


# --------------------------------------------------------------------------------------------------
def broadcast_shapes(*shapes: Tuple[int, ...], what: str = "operands") -> Tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        ext = 1
        for s in shapes:
            e = s[i] if -i <= len(s) else 1
            if e == 1:
                continue
            if ext not in (1, e):
                shown = " and ".join(str(tuple(s)) for s in shapes)
                raise TileTypingError(f"shape mismatch: {what} could not be broadcast together "
                                      f"with shapes {shown}")
            ext = e
        out.append(ext)
    return tuple(out)



def elementwise_result(d: DType, *operands, what: str = "operands"):
    """The result type of an elementwise op on ``operands``: a tile of the broadcast shape when
    any operand is a tile, else a scalar of ``d``."""
    shapes = [t.shape for t in operands if isinstance(t, TileType)]
    if not shapes:
        return value_type(d)
    return TileType(d, broadcast_shapes(*shapes, what=what))

# --------------------------------------------------------------------------------------------------
#: cuTile Python's stricter rules for two tiles, on while a ``ct.kernel`` is typed
#: (:func:`cutile_rules`): signed with unsigned ints and float16 with bfloat16 have no implicit
#: common type, and the bitwise operators take equal dtypes only (cuTile raises TileTypeError
#: where NumPy, and ``@tile.entry``, promote).
_CUTILE = contextvars.ContextVar("tilejit_cutile_promotion", default=False)
_BITWISE = frozenset(["&", "|", "^", "&=", "|=", "^="])


@contextlib.contextmanager
def cutile_rules():
    token = _CUTILE.set(True)
    try:
        yield
    finally:
        _CUTILE.reset(token)


def cutile_rules_on() -> bool:
    """Whether a ``tilejit.cutile`` kernel is being typed (cuTile's stricter checks apply)."""
    return _CUTILE.get()


def _cutile_strong(a: DType, b: DType, op: str) -> None:
    """Refuse what cuTile's promotion table refuses (``a`` is not ``b``)."""
    if op in _BITWISE and not (a.is_float or b.is_float):
        raise TileTypingError(f"Bitwise operands must have same data type, got {a} and {b} in "
                              f"'{op}'; convert one with .astype(...)")
    if a.is_bool or b.is_bool:
        return
    mixed_ints = a.is_integer and b.is_integer and a.is_signed != b.is_signed
    if mixed_ints or {a, b} == {dt.float16, dt.bfloat16}:
        raise TileTypingError(f"Implicit promotion of {a} and {b} is not supported. Please "
                              f"perform an explicit cast instead (.astype(...))")


def refuse_as_cutile(a: DType, b: DType, op: str = "") -> None:
    """While a ``ct.kernel`` is typed: the error cuTile gives for promoting ``a`` with ``b``, for
    ops that promote their operands without going through :func:`promote_strong`."""
    if a is not b and _CUTILE.get():
        _cutile_strong(a, b, op)


def promote_strong(a: DType, b: DType, op: str = "") -> DType:
    """Rule 1 (with cuTile's refusals while :func:`cutile_rules` is on)."""
    where = f" in '{op}'" if op else ""
    if a is not b and _CUTILE.get():
        _cutile_strong(a, b, op)
    if a is b:
        if is_compute_only(a):
            raise _compute_only_error(a, op)
        return a
    for d in (a, b):
        if is_compute_only(d):
            raise _compute_only_error(d, op)
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    ca, cb = category(a), category(b)
    if ca == INT and cb == INT:
        r = np.result_type(a.np_dtype, b.np_dtype)
        res = dt.from_numpy(r) if r.kind in "iu" else None
        if res is None:
            raise TileTypingError(f"incompatible dtypes{where}: {a} and {b} have no common integer "
                                  f"type; convert one operand with .astype(...)")
        return res
    if ca != cb:
        return a if ca == FLOAT else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return dt.float32       # float16 with bfloat16


def _compute_only_error(d: DType, op: str) -> TileTypingError:
    where = f"'{op}' on " if op else "arithmetic on "
    return TileTypingError(f"{where}{d} is not supported: {d} is a storage/MMA format; convert "
                           f"with .astype(tile.float32) first")


def weak_default(ty) -> DType:
    """The dtype a weak scalar takes when nothing else decides (Python constants narrow)."""
    if isinstance(ty, types.IntegerLiteral):
        return dt.int32
    if isinstance(ty, types.BooleanLiteral):
        return dt.bool_
    d = dtype_of(ty)
    if d is dt.float64 and not isinstance(ty, TileType):
        return dt.float32
    return d


def _check_fits(value: int, d: DType, op: str, whose: str = "the other operand") -> None:
    if d.is_integer:
        info = np.iinfo(d.np_dtype)
        if not (info.min <= value <= info.max):
            where = f" in '{op}'" if op else ""
            raise TileTypingError(f"the constant {value}{where} does not fit in {d}, the dtype of "
                                  f"{whose} (NumPy 2 raises OverflowError: Python "
                                  f"integer {value} out of bounds for {d}); convert explicitly "
                                  f"with .astype(...)")


def check_wide_int(ty, d: DType, op: str) -> None:
    """A constant beyond int64 and uint64 (``WideIntLiteral``) converted into ``d``: an error
    for an int ``d`` (NumPy 2 raises OverflowError), fine for a float or bool one."""
    if isinstance(ty, WideIntLiteral) and d.is_integer:
        _check_fits(ty.literal_value, d, op, "the result")


def promote_weak(strong: DType, weak_ty, op: str = "") -> DType:
    """Rule 2: a weak scalar type against a strong dtype."""
    if is_compute_only(strong):
        raise _compute_only_error(strong, op)
    wd = dtype_of(weak_ty)
    if category(wd) <= category(strong):
        if isinstance(weak_ty, types.IntegerLiteral) and not strong.is_float:
            if strong.is_bool:
                return dt.int32
            if op not in COMPARISONS:       # NumPy 2 compares Python ints exactly
                _check_fits(weak_ty.literal_value, strong, op)
        return strong
    return weak_default(weak_ty)


def _is_py_const(ty) -> bool:
    """A Python constant: int/bool literal, or float64 (Numba's type of float constants)."""
    return isinstance(ty, (types.IntegerLiteral, types.BooleanLiteral)) or \
        types.unliteral(ty) == types.float64


def result_dtype(operands: Sequence, op: str = "") -> DType:
    """The promoted dtype of any mix of tiles (strong) and scalars (weak)."""
    strong = [dtype_of(t) for t in operands if isinstance(t, TileType)]
    weak = [t for t in operands if not isinstance(t, TileType)]
    if not strong:
        # Among scalars, variables decide and Python constants adapt to them.
        strong = [dtype_of(t) for t in weak if not _is_py_const(t)]
        weak = [t for t in weak if _is_py_const(t)]
        if not strong:
            strong = [dtype_of(types.unliteral(t)) for t in weak]
            weak = []
    d = strong[0]
    for s in strong[1:]:
        d = promote_strong(d, s, op)
    for w in weak:
        d = promote_weak(d, w, op)
    return d


def materialize_dtype(operands: Sequence) -> DType:
    """The dtype of a tile built only from weak scalars (``tile.where(m, 1.0, 0.0)``): like
    :func:`result_dtype`, but Python constants alone narrow to int32 / float32."""
    if any(isinstance(t, TileType) or not _is_py_const(t) for t in operands):
        return result_dtype(operands)
    ds = [weak_default(t) for t in operands]
    d = ds[0]
    for o in ds[1:]:
        d = promote_strong(d, o)
    return d


def float_result(d: DType) -> DType:
    """Dtype of math functions / true division: floats keep theirs, the rest compute in f32."""
    return d if d.is_float else dt.float32
