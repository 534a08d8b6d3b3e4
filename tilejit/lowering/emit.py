"""Kernel-language semantics in Tile IR: dtype-aware emitters used by the lowering.

Tile IR integers are signless, so a value is carried with its tilejit dtype as a :class:`TV`
(typed value). Every emitter takes and returns TVs; broadcasting and conversions are explicit
here, so the Tile IR that reaches tileiras (and the simulator) is fully typed.

Python semantics that differ from C are honoured: ``//`` floors, ``%`` takes the divisor's sign,
``/`` on integers is true division (float result), comparisons of unsigned values are unsigned.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .. import dtypes as D
from .. import language as L
from ..dtypes import DType
from ..errors import TypingError
from ..tileir import Builder, TileType, Value
from ..tileir import attrs as A
from ..typing import promotion
from . import mathlib, narrow


def elem(dt: DType) -> str:
    """Tile IR element type of a tile of ``dt`` (bools are i1 in tiles, i8 in memory; float4 and
    e8m0 are float32 on targets without them: ``narrow.carried``)."""
    if dt.is_bool:
        return "i1"
    return "f32" if narrow.carried(dt) else dt.tileir


def mem_elem(dt: DType) -> str:
    """Tile IR element type of ``dt`` in memory: bools and float4 (one per byte) are bytes, and
    so is e8m0 where the target has no such type."""
    return "i8" if dt.is_bool or dt.is_fp4 or narrow.carried(dt) else dt.tileir


@dataclass(frozen=True)
class TV:
    """A Tile IR value together with its tilejit dtype."""

    value: Value
    dtype: DType

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.value.type.shape

    @property
    def type(self) -> TileType:
        return self.value.type


@dataclass(frozen=True, eq=False)
class WeakParamTV(TV):
    """The value of a weak (Python) scalar parameter as the kernel receives it (``i64``/``f64``).
    Each conversion of it is recorded in ``uses`` (a set of dtypes): the launcher checks the value
    against them at the call, as NumPy 2 does (``tilejit.scalars``)."""

    uses: set = None


class Emitter:
    """Emits kernel-language operations through a :class:`Builder`."""

    def __init__(self, b: Builder):
        self.b = b

    # --- constants -----------------------------------------------------------------------------
    def const(self, value, dt: DType, shape=()) -> TV:
        if dt.is_bool:
            value = bool(value)
        elif dt.is_integer:
            value = int(value)
            bits = dt.bits
            if dt.is_unsigned:
                value &= (1 << bits) - 1
            else:
                value = ((value + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        else:
            value = float(value)
        return TV(self.b.constant(value, TileType(elem(dt), tuple(shape))), dt)

    # --- shapes --------------------------------------------------------------------------------
    def reshape(self, x: TV, shape) -> TV:
        shape = tuple(shape)
        if x.shape == shape:
            return x
        return TV(self.b.reshape(x.value, shape), x.dtype)

    def broadcast(self, x: TV, shape) -> TV:
        """NumPy broadcasting of ``x`` to ``shape`` (rank is extended on the left)."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if len(x.shape) > len(shape):
            raise TypingError(f"cannot broadcast shape {x.shape} to {shape}")
        padded = (1,) * (len(shape) - len(x.shape)) + x.shape
        for a, b in zip(padded, shape):
            if a not in (1, b):
                raise TypingError(f"cannot broadcast shape {x.shape} to {shape}")
        v = self.reshape(x, padded)
        if padded == shape:
            return v
        return TV(self.b.broadcast(v.value, shape), x.dtype)

    def permute(self, x: TV, perm) -> TV:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        return TV(self.b.permute(x.value, perm), x.dtype)

    def cat(self, x: TV, y: TV, axis: int) -> TV:
        return TV(self.b.cat(x.value, y.value, axis), x.dtype)

    # --- conversions ---------------------------------------------------------------------------
    def cast(self, x: TV, to: DType, rounding: Optional[str] = None) -> TV:
        """``x.astype(to)`` with NumPy semantics (float->int truncates toward zero;
        int/float->bool is ``!= 0``; bool->number is 0/1). ``rounding`` (a Tile IR rounding
        keyword) applies to float->float conversions (typing refuses it elsewhere: tileiras
        supports only the default for the others)."""
        fr = x.dtype
        if fr is to:
            return x
        if type(x) is WeakParamTV:
            x.uses.add(to)
        b = self.b
        v = x.value
        if to.is_bool:
            zero = self.const(0, fr, x.shape)
            return self.compare("!=", x, zero)
        if fr.is_bool:
            if to.is_float:
                return TV(b.itof(v, elem(to), signed=False), to)
            return TV(b.exti(v, elem(to), signed=False), to)
        if fr.is_integer and to.is_integer:
            if fr.bits == to.bits:
                return TV(v, to)                     # signless: same bits, new meaning
            if fr.bits < to.bits:
                return TV(b.exti(v, elem(to), signed=fr.is_signed), to)
            return TV(b.trunci(v, elem(to)), to)
        if fr.is_integer and to.is_float:
            return TV(b.itof(v, elem(to), signed=fr.is_signed), to)
        if fr.is_float and to.is_integer:
            return TV(b.ftoi(v, elem(to), signed=to.is_signed), to)
        # float -> float
        if to is D.float8_e8m0fnu:                   # powers of two: toward zero unless asked
            rounding = rounding or "zero"
        if narrow.carried(fr):                       # its exact value, in float32
            fr = D.float32
            if to is fr:
                return TV(v, to)
        if narrow.carried(to):
            x32 = self.cast(TV(v, fr), D.float32)
            r = narrow.round_fp4(self, x32) if to.is_fp4 else narrow.round_e8m0(self, x32,
                                                                              rounding)
            return TV(r.value, to)
        if elem(fr) == elem(to):
            return TV(v, to)
        if fr.is_tiny_float and to.is_tiny_float:
            v = b.ftof(v, "f32")                     # exact; one rounding into the target
        return TV(b.ftof(v, elem(to), rounding=rounding or "nearest_even"), to)

    def bitcast(self, x: TV, to: DType) -> TV:
        if x.dtype.bits != to.bits or x.dtype.is_bool or to.is_bool:
            raise TypingError(f"bitcast needs types of the same width, got {x.dtype} -> {to}")
        if narrow.carried(x.dtype):                  # e8m0 as float32: its code
            return self.bitcast(narrow.e8m0_to_codes(self, TV(x.value, D.float32)), to)
        if narrow.carried(to):
            return TV(narrow.e8m0_from_codes(self, x).value, to)
        if x.dtype.tileir == to.tileir:
            return TV(x.value, to)
        return TV(self.b.bitcast(x.value, x.type.with_element(elem(to))), to)

    # --- arithmetic ----------------------------------------------------------------------------
    def _same(self, x: TV, y: TV, dt: Optional[DType] = None) -> Tuple[TV, TV]:
        """Convert both operands to ``dt`` (default: x's dtype) and broadcast them together."""
        dt = dt or x.dtype
        x, y = self.cast(x, dt), self.cast(y, dt)
        shape = np.broadcast_shapes(x.shape, y.shape)
        return self.broadcast(x, shape), self.broadcast(y, shape)

    def binary(self, op: str, x: TV, y: TV, dt: DType, rounding: Optional[str] = None,
               ftz: bool = False) -> TV:
        """``x <op> y`` computed in ``dt`` (the promoted dtype the typing chose); ``rounding``
        (a Tile IR keyword) and ``ftz`` apply to float ``+ - *``."""
        if op == "/" and not dt.is_float:
            dt = D.float32
        x, y = self._same(x, y, dt)
        b = self.b
        fl = dt.is_float
        fattrs = {"rounding_mode": rounding or "nearest_even"}
        if ftz and dt is D.float32:
            fattrs["flush_to_zero"] = True
        if dt.is_bool and op in ("+", "*"):
            op = "|" if op == "+" else "&"            # NumPy: True + True is True (logical or)
        if op == "+":
            r = b.addf(x.value, y.value, **fattrs) if fl else b.binary("addi", x.value, y.value)
        elif op == "-":
            r = b.subf(x.value, y.value, **fattrs) if fl else b.binary("subi", x.value, y.value)
        elif op == "*":
            r = b.mulf(x.value, y.value, **fattrs) if fl else b.binary("muli", x.value, y.value)
        elif op == "/":
            r = b.divf(x.value, y.value)
        elif op == "//":
            return self.floordiv(x, y)
        elif op == "%":
            return self.mod(x, y)
        elif op == "**":
            return self.power(x, y)
        elif op in ("&", "|", "^"):
            if fl:
                raise TypingError(f"bitwise {op!r} needs integer or bool tiles, got {dt}")
            r = b.binary({"&": "andi", "|": "ori", "^": "xori"}[op], x.value, y.value)
        elif op in ("<<", ">>"):
            if not dt.is_integer:
                raise TypingError(f"shift {op!r} needs integer tiles, got {dt}")
            if op == "<<":
                r = b.binary("shli", x.value, y.value)
            else:
                r = b.binary("shri", x.value, y.value, signedness=_sign(dt))
        elif op in ("min", "max", "nanmin", "nanmax"):
            if fl:
                # NumPy semantics by default (a NaN operand gives NaN); nan* like numpy.fmin
                nan = {"propagate_nan": True} if op in ("min", "max") else {}
                r = b.binary("minf" if op.endswith("min") else "maxf", x.value, y.value, **nan)
            else:
                r = b.binary("mini" if op.endswith("min") else "maxi", x.value, y.value,
                             signedness=_sign(dt))
        elif op == "atan2":
            r = b.binary("atan2", x.value, y.value)
        else:
            raise TypingError(f"unsupported binary operator {op!r}")
        return TV(r, dt)

    def floordiv(self, x: TV, y: TV) -> TV:
        b = self.b
        dt = x.dtype
        if dt.is_float and promotion.cutile_rules_on():
            # cuTile's definition: the floor of the quotient rounded to the operands' dtype
            # (bfloat16 1 // bfloat16(0.1) is 10 there, where NumPy floors 9.99 to 9)
            return TV(b.unary("floor", b.divf(x.value, y.value)), dt)
        if dt.is_float:
            return self._float_divmod(x, y, "div")
        rounding = "negative_inf" if dt.is_signed else "zero"
        return TV(b.binary("divi", x.value, y.value, signedness=_sign(dt), rounding=rounding), dt)

    def ceildiv(self, x: TV, y: TV, dt: DType) -> TV:
        """Integer ``ceil(x / y)`` in ``dt``, exact for every sign (the host's ``-(-x // y)``)."""
        x, y = self._same(x, y, dt)
        return TV(self.b.binary("divi", x.value, y.value, signedness=_sign(dt),
                                rounding="positive_inf"), dt)

    def mod(self, x: TV, y: TV) -> TV:
        """Python's modulo: the result takes the sign of the divisor."""
        b = self.b
        dt = x.dtype
        if dt.is_float:
            return self._float_divmod(x, y, "mod")
        r = TV(b.binary("remi", x.value, y.value, signedness=_sign(dt)), dt)
        if not dt.is_signed:
            return r
        zero = self.const(0, dt, r.shape)
        r_nz = self.compare("!=", r, zero)
        diff = self.compare("!=", self.compare("<", r, zero), self.compare("<", y, zero))
        fix = TV(b.binary("andi", r_nz.value, diff.value), D.bool_)
        return self.where(fix, self.binary("+", r, y, dt), r)

    def _float_divmod(self, x: TV, y: TV, want: str) -> TV:
        """``np.floor_divide`` (``want="div"``) or ``np.remainder`` (``"mod"``) of two floats
        of one dtype, step for step as NumPy's ``npy_divmod`` computes them, so every edge
        (infinities, NaN, signed zeros, a zero divisor) gives NumPy's bits. float16/bfloat16
        compute in float32 and round once, as NumPy and ml_dtypes do."""
        dt = x.dtype
        cd = D.float32 if dt.bits < 32 else dt
        a, b = self.cast(x, cd), self.cast(y, cd)
        zero = self.const(0, cd, a.shape)
        mod = TV(self.b.binary("remf", a.value, b.value), cd)             # C's fmod
        # the remainder takes the divisor's sign; NaN counts as nonzero, as in C
        signs_differ = self.binary("^", self.compare("<", b, zero), self.compare("<", mod, zero),
                                   D.bool_)
        fix = self.binary("&", self.compare("!=", mod, zero), signs_differ, D.bool_)
        if want == "mod":
            mod = self.where(fix, self.binary("+", mod, b, cd), mod)
            signed_zero = self.where(self.compare("<", b, zero), self.const(-0.0, cd, a.shape),
                                     zero)
            return self.cast(self.where(self.compare("==", mod, zero), signed_zero, mod), dt)
        one = self.const(1, cd, a.shape)
        div = self.binary("/", self.binary("-", a, mod, cd), b, cd)       # exact multiple of b
        div = self.where(fix, self.binary("-", div, one, cd), div)
        floor = TV(self.b.unary("floor", div.value), cd)
        half = self.const(0.5, cd, a.shape)
        floor = self.where(self.compare(">", self.binary("-", div, floor, cd), half),
                           self.binary("+", floor, one, cd), floor)
        q = self.binary("/", a, b, cd)
        q_neg = self.compare("<", self.bitcast(q, D.int32 if cd.bits == 32 else D.int64),
                             self.const(0, D.int32 if cd.bits == 32 else D.int64, a.shape))
        floor = self.where(self.compare("==", div, zero),                 # copysign(0, a / b)
                           self.where(q_neg, self.const(-0.0, cd, a.shape), zero), floor)
        return self.cast(self.where(self.compare("==", b, zero), q, floor), dt)

    def power(self, x: TV, y: TV) -> TV:
        if not x.dtype.is_float:
            raise TypingError("integer ** is only supported with a small constant exponent; "
                              "convert to float first (x.astype(tile.float32) ** y)")
        return TV(self.b.binary("fpowf", x.value, y.value), x.dtype)

    def int_power(self, x: TV, n: int) -> TV:
        """``x ** n`` for a constant non-negative integer ``n`` (repeated squaring)."""
        if n < 0:
            raise TypingError("negative integer exponents need a float base")
        result, base = None, x
        while n:
            if n & 1:
                result = base if result is None else self.binary("*", result, base, x.dtype)
            n >>= 1
            if n:
                base = self.binary("*", base, base, x.dtype)
        return result if result is not None else self.const(1, x.dtype, x.shape)

    _PRED = {"==": "equal", "!=": "not_equal", "<": "less_than", "<=": "less_than_or_equal",
             ">": "greater_than", ">=": "greater_than_or_equal"}

    def compare(self, op: str, x: TV, y: TV, dt: Optional[DType] = None) -> TV:
        dt = dt or D.result_type(x.dtype, y.dtype) or x.dtype
        if dt.is_bool:
            x, y = self._same(x, y, D.uint8)
            dt = D.uint8
        else:
            x, y = self._same(x, y, dt)
        pred = self._PRED[op]
        if dt.is_float:
            # NaN compares unequal to everything: `!=` is the unordered predicate
            r = self.b.cmpf(pred, x.value, y.value, "unordered" if op == "!=" else "ordered")
        else:
            r = self.b.cmpi(pred, x.value, y.value, _sign(dt))
        return TV(r, D.bool_)

    _SWAP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

    def compare_values(self, op: str, x, y, dt: DType) -> TV:
        """``x OP y`` in ``dt``, where ``x``/``y`` are TVs or Python numbers not yet converted.
        An integer outside ``dt``'s range (a Python int constant, or a weak scalar of a wider
        type) compares exactly, as NumPy 2 compares Python ints: ``uint32_tile > -1`` is True."""
        if dt.is_integer:
            if _outside(x, dt):
                return self._compare_exact(self._SWAP[op], y, x, dt)
            if _outside(y, dt):
                return self._compare_exact(op, x, y, dt)
        return self.compare(op, self._operand(x, dt), self._operand(y, dt), dt)

    def _operand(self, v, dt: DType) -> TV:
        return self.cast(v, dt) if isinstance(v, TV) else self.const(v, dt)

    def _compare_exact(self, op: str, t, s, dt: DType) -> TV:
        """``t OP s`` where ``s`` may lie outside ``dt``'s range [lo, hi]: compared in ``dt``
        when inside, else the answer every value of ``dt`` gives."""
        lo, hi = (int(v) for v in (np.iinfo(dt.np_dtype).min, np.iinfo(dt.np_dtype).max))
        tt = self._operand(t, dt)
        if not isinstance(s, TV):            # a constant outside: the answer is static
            above = s > hi
            ans = {"<": above, "<=": above, ">": not above, ">=": not above, "==": False,
                   "!=": True}[op]
            return self.const(ans, D.bool_, tt.shape)
        sd = s.dtype
        info = np.iinfo(sd.np_dtype)
        below = self.compare("<", s, self.const(lo, sd)) if int(info.min) < lo else None
        above = self.compare(">", s, self.const(hi, sd)) if int(info.max) > hi else None
        outside = below if above is None else above if below is None else \
            self.binary("|", below, above, D.bool_)
        inside = self.logical_not(outside)
        raw = TV(s.value, sd)                # compared in range only: no check at the call
        r = self.binary("&", self.compare(op, tt, self.broadcast(self.cast(raw, dt), tt.shape)),
                        inside, D.bool_)
        fix = {"<": above, "<=": above, ">": below, ">=": below, "==": None,
               "!=": outside}[op]
        return r if fix is None else self.binary("|", r, fix, D.bool_)

    def logical_not(self, x: TV) -> TV:
        x = self.cast(x, D.bool_)
        return TV(self.b.binary("xori", x.value, self.const(True, D.bool_, x.shape).value), D.bool_)

    def negate(self, x: TV) -> TV:
        if x.dtype.is_float:
            return TV(self.b.unary("negf", x.value), x.dtype)
        if x.dtype.is_bool:
            raise TypingError("unary - is not defined for bool tiles; use ~ or not")
        return self.binary("-", self.const(0, x.dtype, x.shape), x, x.dtype)

    def invert(self, x: TV) -> TV:
        if x.dtype.is_float:
            raise TypingError(f"~ needs an integer or bool tile, got {x.dtype}")
        ones = self.const(True if x.dtype.is_bool else -1, x.dtype, x.shape)
        return TV(self.b.binary("xori", x.value, ones.value), x.dtype)

    def absolute(self, x: TV) -> TV:
        if x.dtype.is_float:
            return TV(self.b.unary("absf", x.value), x.dtype)
        if x.dtype.is_unsigned or x.dtype.is_bool:
            return x
        return TV(self.b.unary("absi", x.value), x.dtype)

    def where(self, c: TV, a: TV, b: TV, dt: Optional[DType] = None) -> TV:
        dt = dt or D.result_type(a.dtype, b.dtype) or a.dtype
        a, b = self.cast(a, dt), self.cast(b, dt)
        shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        c = self.broadcast(self.cast(c, D.bool_), shape)
        a, b = self.broadcast(a, shape), self.broadcast(b, shape)
        return TV(self.b.select(c.value, a.value, b.value), dt)

    _FTZ_ATTR = {"exp2", "rsqrt", "sqrt"}      # flush_to_zero is an attribute of these ops

    def math(self, fn: str, x: TV, rounding: Optional[str] = None, ftz: bool = False) -> TV:
        """``fn(x)``; ``rounding``: a Tile IR rounding keyword (None: the op's default);
        ``ftz``: float32 subnormals read and written as zero (an attribute where Tile IR has one,
        explicit flushes elsewhere)."""
        if not x.dtype.is_float:
            x = self.cast(x, D.float32)
        if x.dtype.is_tiny_float or x.dtype is D.tfloat32:
            raise TypingError(f"{fn} is not available for {x.dtype}; convert to float32 first")
        b = self.b
        ftz = ftz and x.dtype is D.float32           # the dialect defines flushing for f32 only
        attrs = {"flush_to_zero": True} if ftz and fn in self._FTZ_ATTR else {}
        if fn == "isnan":
            return TV(b.cmpf("not_equal", x.value, x.value, "unordered"), D.bool_)
        if fn not in L.UNARY_MATH:
            raise TypingError(f"unknown math function {fn!r}")
        if fn in mathlib.FORMULAS:               # no Tile IR op: built from the ops there are
            return mathlib.emit_formula(self, fn, x)
        if ftz and not attrs:
            x = self.flush_subnormals(x)
        if fn == "sqrt":
            r = b.sqrt(x.value, rounding_mode=rounding or "nearest_even", **attrs)
        elif fn in ("exp", "tanh"):
            r = b.unary(fn, x.value, rounding_mode=rounding or "full")
        else:
            r = b.unary(fn, x.value, **attrs)
        out = TV(r, x.dtype)
        return self.flush_subnormals(out) if ftz and not attrs else out

    def float_test(self, fn: str, x: TV) -> TV:
        """``isnan``/``isinf``/``isfinite``/``signbit`` of ``x`` as a bool tile (integers:
        never NaN or inf, always finite, negative when below zero)."""
        if not x.dtype.is_float:
            if fn == "signbit" and x.dtype.is_signed:
                return self.compare("<", x, self.const(0, x.dtype, x.shape))
            return self.const(fn == "isfinite", D.bool_, x.shape)
        if x.dtype.is_tiny_float or x.dtype is D.tfloat32:
            x = self.cast(x, D.float32)                  # exact
        if fn == "signbit":
            return mathlib.signbit(self, x)
        if fn == "isnan":
            return self.math("isnan", x)
        inf = self.const(float("inf"), x.dtype, x.shape)
        return self.compare("==" if fn == "isinf" else "<", self.absolute(x), inf)

    def flush_subnormals(self, x: TV) -> TV:
        """``x`` with float32 subnormals replaced by a zero of the same sign."""
        tiny = self.const(float(np.finfo(np.float32).tiny), x.dtype, x.shape)
        small = self.compare("<", self.absolute(x), tiny)
        zero = TV(self.b.mulf(x.value, self.const(0.0, x.dtype, x.shape).value), x.dtype)
        return TV(self.b.select(small.value, zero.value, x.value), x.dtype)

    def divide(self, x: TV, y: TV, dt: DType, rounding: Optional[str] = None,
               ftz: bool = False) -> TV:
        """Float division ``x / y`` in ``dt`` with an explicit rounding and flushing."""
        x, y = self._same(x, y, dt)
        attrs = {"flush_to_zero": True} if ftz and dt is D.float32 else {}
        return TV(self.b.divf(x.value, y.value, rounding_mode=rounding or "nearest_even",
                              **attrs), dt)

    def fma(self, a: TV, b_: TV, c: TV, dt: DType) -> TV:
        a, b_ = self._same(a, b_, dt)
        c = self.broadcast(self.cast(c, dt), a.shape)
        a, b_ = self.broadcast(a, c.shape), self.broadcast(b_, c.shape)
        return TV(self.b.fma(a.value, b_.value, c.value), dt)

    # --- reductions and scans ------------------------------------------------------------------
    _REDUCE_IDENTITY = {"sum": 0, "prod": 1, "or": 0, "xor": 0}

    def identity(self, kind: str, dt: DType):
        if kind in self._REDUCE_IDENTITY:
            return self._REDUCE_IDENTITY[kind]
        if kind == "and":
            return True if dt.is_bool else -1
        if dt.is_float:
            return float("-inf") if kind == "max" else float("inf")
        if dt.is_bool:
            return kind == "min"
        info = np.iinfo(dt.np_dtype)
        return int(info.min) if kind == "max" else int(info.max)

    def _typed_identity(self, value, dt: DType) -> A.TypedValue:
        if dt.is_integer and dt.is_unsigned:
            value = int(value) & ((1 << dt.bits) - 1)
        return A.TypedValue(value, elem(dt))

    def _combine(self, kind: str, lhs: Value, rhs: Value, dt: DType,
                 propagate_nan: bool = True, rounding: Optional[str] = None,
                 ftz: bool = False) -> Value:
        b = self.b
        fl = dt.is_float
        if kind == "sum":
            if not fl:
                return b.binary("addi", lhs, rhs)
            extra = {"flush_to_zero": True} if ftz and dt is D.float32 else {}
            return b.addf(lhs, rhs, rounding_mode=rounding or "nearest_even", **extra)
        if kind == "prod":
            if not fl:
                return b.binary("muli", lhs, rhs)
            extra = {"flush_to_zero": True} if ftz and dt is D.float32 else {}
            return b.mulf(lhs, rhs, rounding_mode=rounding or "nearest_even", **extra)
        if kind in ("max", "min"):
            if dt.is_bool:
                return b.binary("ori" if kind == "max" else "andi", lhs, rhs)
            if fl:
                nan = {"propagate_nan": True} if propagate_nan else {}
                return b.binary("maxf" if kind == "max" else "minf", lhs, rhs, **nan)
            return b.binary("maxi" if kind == "max" else "mini", lhs, rhs, signedness=_sign(dt))
        if kind in ("and", "or", "xor"):
            return b.binary({"and": "andi", "or": "ori", "xor": "xori"}[kind], lhs, rhs)
        raise TypingError(f"unknown reduction {kind!r}")

    def _widen_sum(self, kind: str, x: TV) -> TV:
        """The operand of a sum (reduction or scan): small integers and bools accumulate in
        64 bits, like NumPy's sum."""
        dt = x.dtype
        if kind == "sum" and (dt.is_bool or (dt.is_integer and dt.bits < 32)):
            return self.cast(x, D.int64 if dt.is_signed or dt.is_bool else D.uint64)
        return x

    def keep_dim(self, r: TV, shape, axis: int) -> TV:
        """``r``, a reduction of a tile of ``shape`` along ``axis``, with that axis kept as 1."""
        shape = list(shape)
        shape[axis] = 1
        return self.reshape(r, shape)

    def reduce(self, kind: str, x: TV, axis: int, keepdims: bool = False,
               propagate_nan: bool = True, rounding: Optional[str] = None,
               ftz: bool = False) -> TV:
        x = self._widen_sum(kind, x)
        dt = x.dtype
        op = self.b.reduce([x.value], axis, [self._typed_identity(self.identity(kind, dt), dt)])
        lhs, rhs = op.regions[0].args
        with self.b.at(op.regions[0]):
            self.b.yield_([self._combine(kind, lhs, rhs, dt, propagate_nan, rounding, ftz)])
        r = TV(op.results[0], dt)
        return self.keep_dim(r, x.shape, axis) if keepdims else r

    def reduce_all(self, kind: str, x: TV, keepdims: bool = False,
                   propagate_nan: bool = True, **rounding) -> TV:
        """A reduction (``argmax``/``argmin`` included) over every element of ``x``."""
        flat = self.reshape(x, (int(np.prod(x.shape)),))
        if kind in ("argmax", "argmin"):
            r = self.arg_reduce(kind, flat, 0, propagate_nan=propagate_nan)
        else:
            r = self.reduce(kind, flat, 0, propagate_nan=propagate_nan, **rounding)
        if keepdims:
            r = self.reshape(r, (1,) * len(x.shape))
        return r

    def arg_reduce(self, kind: str, x: TV, axis: int, keepdims: bool = False,
                   propagate_nan: bool = True) -> TV:
        """argmax / argmin along ``axis`` (first occurrence on ties), as int32 indices. With
        ``propagate_nan`` a NaN wins over every number (NumPy: the index of the first NaN)."""
        b = self.b
        dt = x.dtype
        n = x.shape[axis]
        idx_shape = [1] * len(x.shape)
        idx_shape[axis] = n
        iota = self.reshape(self.iota(n, D.int32), idx_shape)
        idx = self.broadcast(iota, x.shape)
        ident = self.identity("max" if kind == "argmax" else "min", dt)
        if dt.is_float and not propagate_nan:
            ident = float("nan")    # loses to every element, an all-NaN row's first one too
        op = b.reduce([x.value, idx.value], axis,
                      [self._typed_identity(ident, dt), A.TypedValue(np.iinfo(np.int32).max, "i32")])
        va, vb, ia, ib = op.regions[0].args
        with b.at(op.regions[0]):
            better_pred = "greater_than" if kind == "argmax" else "less_than"
            if dt.is_float:
                better = b.cmpf(better_pred, va, vb)
                equal = b.cmpf("equal", va, vb)
                nan_a = b.cmpf("not_equal", va, va, "unordered")
                nan_b = b.cmpf("not_equal", vb, vb, "unordered")
                true = self.const(True, D.bool_, ()).value
                # with propagate_nan a NaN beats every number, without it every number beats a
                # NaN; two NaNs tie (the first index wins)
                if propagate_nan:
                    wins = b.binary("andi", nan_a, b.binary("xori", nan_b, true))
                else:
                    wins = b.binary("andi", nan_b, b.binary("xori", nan_a, true))
                better = b.binary("ori", better, wins)
                equal = b.binary("ori", equal, b.binary("andi", nan_a, nan_b))
            else:
                better = b.cmpi(better_pred, va, vb, _sign(dt))
                equal = b.cmpi("equal", va, vb, _sign(dt))
            first = b.cmpi("less_than", ia, ib, "signed")
            take_a = b.binary("ori", better, b.binary("andi", equal, first))
            b.yield_([b.select(take_a, va, vb), b.select(take_a, ia, ib)])
        r = TV(op.results[1], D.int32)
        return self.keep_dim(r, x.shape, axis) if keepdims else r

    def scan(self, kind: str, x: TV, axis: int, reverse: bool = False,
             rounding: Optional[str] = None, ftz: bool = False) -> TV:
        x = self._widen_sum(kind, x)
        dt = x.dtype
        op = self.b.scan([x.value], axis, [self._typed_identity(self.identity(kind, dt), dt)],
                         reverse=reverse)
        lhs, rhs = op.regions[0].args
        with self.b.at(op.regions[0]):
            self.b.yield_([self._combine(kind, lhs, rhs, dt, rounding=rounding, ftz=ftz)])
        return TV(op.results[0], dt)

    # --- matmul --------------------------------------------------------------------------------
    def mma(self, a: TV, b_: TV, acc: TV, fast_acc: bool = False) -> TV:
        if a.dtype.is_integer:
            if not (a.dtype.bits == 8 and b_.dtype.bits == 8 and acc.dtype is D.int32):
                raise TypingError(f"integer mma takes int8/uint8 x int8/uint8 -> int32, got "
                                  f"{a.dtype} x {b_.dtype} -> {acc.dtype}")
            return TV(self.b.mmai(a.value, b_.value, acc.value, a.dtype.is_signed,
                                  b_.dtype.is_signed), acc.dtype)
        return TV(self.b.mmaf(a.value, b_.value, acc.value, fast_acc=fast_acc), acc.dtype)

    # --- misc ----------------------------------------------------------------------------------
    def iota(self, n: int, dt: DType) -> TV:
        if dt.is_integer:
            base = "i32" if dt.bits <= 32 else "i64"
            v = TV(self.b.iota(TileType(base, (n,))), D.int32 if base == "i32" else D.int64)
            return self.cast(v, dt)
        return self.cast(TV(self.b.iota(TileType("i32", (n,))), D.int32), dt)


def _sign(dt: DType) -> str:
    return "unsigned" if (dt.is_unsigned or dt.is_bool) else "signed"


def _outside(v, dt: DType) -> bool:
    """Whether integer operand ``v`` (a Python int or an integer TV) may lie outside ``dt``."""
    if isinstance(v, TV):
        if not v.dtype.is_integer:
            return False
        a, b = np.iinfo(v.dtype.np_dtype), np.iinfo(dt.np_dtype)
        return int(a.min) < int(b.min) or int(a.max) > int(b.max)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        return False
    info = np.iinfo(dt.np_dtype)
    return not int(info.min) <= int(v) <= int(info.max)
