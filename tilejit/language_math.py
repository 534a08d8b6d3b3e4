"""The element-wise part of the kernel language (``tile.exp``, ``tile.erf``, ``tile.where`` ...):
stubs with their signatures and docstrings, and the tables typing and lowering read
(``UNARY_MATH``, ``MATH_ROUNDING``, ``MATH_FLUSH_TO_ZERO``, ``MATH_ACCURACY``). Re-exported by
:mod:`tilejit.language`, where the rest of the language lives.
"""
from __future__ import annotations

from .stubs import _named_stub, _stub


@_stub
def where(cond, x, y):
    """``x`` where ``cond`` (a bool tile or scalar) is True, else ``y``; broadcasting; promotion."""


@_stub
def abs(x):
    """Element-wise absolute value (the builtin ``abs(t)`` is the same operation)."""


@_stub
def minimum(x, y, propagate_nan=True):
    """Element-wise minimum with broadcasting and promotion. A NaN operand gives NaN (as in
    NumPy); ``propagate_nan=False`` returns the other operand instead (like ``numpy.fmin``)."""


@_stub
def maximum(x, y, propagate_nan=True):
    """Element-wise maximum with broadcasting and promotion. A NaN operand gives NaN (as in
    NumPy); ``propagate_nan=False`` returns the other operand instead (like ``numpy.fmax``)."""


@_stub
def truediv(x, y, rounding_mode=None, flush_to_zero=False):
    """``x / y`` in float (integers divide as float32), with an explicit rounding:
    ``RoundingMode.RN`` (default), ``RZ``, ``RM``, ``RP``, or ``APPROX`` (fast, about 2 ulp);
    ``flush_to_zero=True`` treats float32 subnormal inputs and results as zero."""


#: Which ``rounding_mode`` each math function accepts (None is always the default).
MATH_ROUNDING = {"sqrt": ("RN", "RZ", "RM", "RP", "APPROX"), "exp": ("FULL", "APPROX"),
                 "tanh": ("FULL", "APPROX")}
#: Math functions that take ``flush_to_zero`` (float32 subnormals read and written as zero).
MATH_FLUSH_TO_ZERO = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt")


#: Accuracy of the math functions Tile IR has no op for, in ulp of the result: (float32,
#: float64), measured on the simulator against float64 NumPy / ``math`` (tests/math_cases.py).
#: On the GPU add the error of the Tile IR ops they are built from (exp, log, atan2, sqrt).
#: float16 and bfloat16 compute in float32 and round once.
MATH_ACCURACY = {
    "erf": (2, 2), "erfc": (5, 4), "erfinv": (3, 3), "log1p": (3, 2), "expm1": (3, 2),
    "log10": (2, 2), "sigmoid": (3, 2), "cbrt": (1, 1), "asin": (2, 2), "acos": (2, 2),
    "atan": (1, 1), "asinh": (3, 2), "acosh": (3, 2), "atanh": (3, 2), "trunc": (0, 0),
    "round": (0, 0), "rint": (0, 0),
}
#: Math functions that keep integer inputs as they are (NumPy's ``trunc``/``round`` of an int);
#: the others compute integers in float32.
KEEPS_INTEGERS = ("trunc", "round")


def _unary_math(name, what):
    def f(x, rounding_mode=None, flush_to_zero=False):
        pass
    modes = MATH_ROUNDING.get(name)
    extra = ""
    if modes:
        extra += (" ``rounding_mode``: " + ", ".join(f"``RoundingMode.{m}``" for m in modes)
                  + " (None: the default).")
    else:
        extra += " It takes no ``rounding_mode`` (only None)."
    if name in MATH_FLUSH_TO_ZERO:
        extra += " ``flush_to_zero=True`` treats float32 subnormals as zero."
    ulps = MATH_ACCURACY.get(name)
    if ulps == (0, 0):
        extra += " Exact."
    elif ulps:
        extra += (f" Accuracy: {ulps[0]} ulp in float32, {ulps[1]} ulp in float64 "
                  f"(see MATH_ACCURACY).")
    ints = ("Integer and bool inputs are returned as they are (integral already)"
            if name in KEEPS_INTEGERS else "Integer and bool inputs compute in float32")
    return _named_stub(f, name, f"Element-wise {what}. Float tiles keep their dtype; {ints}. "
                                f"Scalars give scalars." + extra)


exp = _unary_math("exp", "e**x")
exp2 = _unary_math("exp2", "2**x")
log = _unary_math("log", "natural logarithm")
log2 = _unary_math("log2", "base-2 logarithm")
sqrt = _unary_math("sqrt", "square root")
rsqrt = _unary_math("rsqrt", "reciprocal square root 1/sqrt(x)")
sin = _unary_math("sin", "sine")
cos = _unary_math("cos", "cosine")
tan = _unary_math("tan", "tangent")
sinh = _unary_math("sinh", "hyperbolic sine")
cosh = _unary_math("cosh", "hyperbolic cosine")
tanh = _unary_math("tanh", "hyperbolic tangent")
floor = _unary_math("floor", "floor (largest integral value <= x)")
ceil = _unary_math("ceil", "ceiling (smallest integral value >= x)")
erf = _unary_math("erf", "error function")
erfc = _unary_math("erfc", "complementary error function ``1 - erf(x)`` (accurate where it is "
                           "tiny)")
erfinv = _unary_math("erfinv", "inverse error function (``erfinv(erf(x)) == x``; +-inf at +-1, "
                               "NaN outside [-1, 1])")
log1p = _unary_math("log1p", "``log(1 + x)``, accurate for tiny x")
expm1 = _unary_math("expm1", "``exp(x) - 1``, accurate for tiny x")
log10 = _unary_math("log10", "base-10 logarithm")
sigmoid = _unary_math("sigmoid", "logistic function ``1 / (1 + exp(-x))``")
cbrt = _unary_math("cbrt", "cube root (negative for negative x)")
asin = _unary_math("asin", "arc sine")
acos = _unary_math("acos", "arc cosine")
atan = _unary_math("atan", "arc tangent")
asinh = _unary_math("asinh", "inverse hyperbolic sine")
acosh = _unary_math("acosh", "inverse hyperbolic cosine")
atanh = _unary_math("atanh", "inverse hyperbolic tangent")
trunc = _unary_math("trunc", "truncation toward zero")
round = _unary_math("round", "rounding to the nearest integer, halves to even (NumPy's "
                             "``round``; C's ``round`` rounds halves away from zero)")
rint = _unary_math("rint", "rounding to the nearest integer, halves to even")
#: The one-argument math functions, in one place: their typing rules, lowering handlers and the
#: emitter's check all read this tuple (a new one is added here and in ``__all__``).
UNARY_MATH = tuple(f.__tile_stub__ for f in (exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tan, sinh,
                                             cosh, tanh, floor, ceil, erf, erfc, erfinv, log1p,
                                             expm1, log10, sigmoid, cbrt, asin, acos, atan,
                                             asinh, acosh, atanh, trunc, round, rint))


@_stub
def isnan(x):
    """Element-wise NaN test; a bool tile (always False for integer inputs)."""


@_stub
def isinf(x):
    """Element-wise test for +-inf; a bool tile (always False for integer inputs)."""


@_stub
def isfinite(x):
    """Element-wise test for a finite value (not inf, not NaN); a bool tile (always True for
    integer inputs)."""


@_stub
def signbit(x):
    """Element-wise sign bit: True for negative values, -0.0 and negative NaNs; a bool tile."""


@_stub
def pow(x, y):
    """Element-wise ``x ** y`` with broadcasting and promotion, as the operator (an integer
    base needs a constant non-negative integer exponent)."""


@_stub
def fmod(x, y):
    """Element-wise C remainder ``x - trunc(x / y) * y`` (the sign of ``x``, like
    ``numpy.fmod``; ``%`` takes the sign of ``y``). Integers keep their dtype and give 0 for a
    zero divisor, as NumPy does; floats are exact (NaN for a zero divisor)."""


@_stub
def copysign(x, y):
    """Element-wise magnitude of ``x`` with the sign of ``y``; computes in float."""


def _named_arith(name, sym):
    def f(x, y, rounding_mode=None, flush_to_zero=False):
        pass
    return _named_stub(f, name, f"``x {sym} y`` with broadcasting and promotion, as the operator, "
                                f"plus an explicit rounding for floats: ``rounding_mode`` one "
                                f"of ``RoundingMode.RN`` (None, the default), ``RZ``, ``RM``, "
                                f"``RP``; ``flush_to_zero=True`` treats float32 subnormal "
                                f"inputs and results as zero.")


add = _named_arith("add", "+")
sub = _named_arith("sub", "-")
mul = _named_arith("mul", "*")


@_stub
def atan2(y, x):
    """Element-wise ``atan2(y, x)`` with broadcasting; computes in float."""


@_stub
def fma(a, b, c):
    """Fused multiply-add ``a * b + c`` with broadcasting and promotion; computes in float."""
