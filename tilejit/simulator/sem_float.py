"""Elementwise floating-point ops.

Narrow formats (f16, bf16, tf32, fp8) are computed in float32 and rounded once to the format, as
the GPU emulates them; f32/f64 use NumPy's IEEE arithmetic directly. Rounding modes other than
``nearest_even`` (and every ``fma``) go through :mod:`.numerics`, which rounds the exact result.

CPU/GPU differences (documented, by design):

* transcendental functions (sin, exp, log, pow, tanh, atan2, ...) use NumPy's float64 libm, rounded
  once to float32 for float32 and narrower formats (the same result on every CPU), which can differ
  from CUDA's by an ulp or two; ``approx`` modes (``exp``, ``tanh``, ``sqrt``) are computed like
  ``full`` except ``divf approx`` (multiplication by the float32 reciprocal) and ``exp approx``
  (``exp2(x * log2(e))`` in float32), which mimic the GPU's formula but not its hardware error;
* ``rsqrt`` is ``1 / sqrt(x)`` rounded twice (the GPU's is an approximation too);
* NaN results are NumPy's quiet NaN (only ``maxf``/``minf`` canonicalize, as documented).
"""
from __future__ import annotations

import numpy as np

from .elements import F32, F64, STORAGE
from .numerics import (compute_dtype, flush, from_f64, round_tf32, saturate_fp8, two_prod,
                       two_sum)
from .registry import CMP, attr, elem_of, ieee_mode, impl, map1, map2, map3

_NATIVE = ("f32", "f64")


def to_elem(y, elem: str) -> np.ndarray:
    """A float32/float64 result rounded (to nearest) into the storage of ``elem``."""
    y = np.asarray(y)
    if y.dtype == F64 and elem != "f64":
        return from_f64(y, elem)
    if elem == "tf32":
        return round_tf32(y)
    return saturate_fp8(y, elem).astype(STORAGE[elem], copy=False)


def _lift(x, dt):
    return np.asarray(x).astype(dt, copy=False)


def _ftz(op, elem) -> bool:
    # the dialect defines flush_to_zero for f32 only
    return "flush_to_zero" in op.attrs and elem == "f32"


# NumPy's float32 forms of these use the CPU's SIMD libraries (SVML on AVX-512 machines: up to 4
# ulp), so a float32 result would depend on the host; computed in float64 and rounded once they
# are the correctly rounded value nearly always, on every CPU
_TRANSCENDENTAL = frozenset([np.cos, np.cosh, np.sin, np.sinh, np.tan, np.log, np.log2, np.exp2,
                             np.tanh, np.exp, np.power, np.arctan2])


def _via_float64(fn):
    def f(*xs):
        return fn(*(np.asarray(x, F64) for x in xs)).astype(F32)
    return f


def _wrap_math(fn, elem, ftz=False):
    """``fn`` (a float32/float64 NumPy function) applied to tiles of ``elem``."""
    cd = compute_dtype(elem)
    if cd == F32 and fn in _TRANSCENDENTAL:
        fn = _via_float64(fn)
    if elem in _NATIVE and not ftz:
        return fn
    if ftz:
        return lambda *xs: flush(to_elem(fn(*(flush(_lift(x, cd)) for x in xs)), elem))
    return lambda *xs: to_elem(fn(*(_lift(x, cd) for x in xs)), elem)


# --- unary --------------------------------------------------------------------------------------
_UNARY = {
    "absf": np.abs, "negf": np.negative, "ceil": np.ceil, "floor": np.floor, "cos": np.cos,
    "cosh": np.cosh, "sin": np.sin, "sinh": np.sinh, "tan": np.tan, "log": np.log,
    "log2": np.log2, "exp2": np.exp2, "tanh": np.tanh,
}


@impl(*_UNARY)
def _unary(op, c):
    elem = elem_of(op.result)
    return map1(op, c, _wrap_math(_UNARY[op.name], elem, _ftz(op, elem)))


_LOG2E = np.float32(1.4426950408889634)


@impl("exp")
def _exp(op, c):
    elem = elem_of(op.result)
    if attr(op, "rounding_mode") == "approx" and elem == "f32":
        return map1(op, c, lambda x: np.exp2(np.asarray(x) * _LOG2E))
    return map1(op, c, _wrap_math(np.exp, elem))


@impl("rsqrt")
def _rsqrt(op, c):
    elem = elem_of(op.result)
    cd = compute_dtype(elem)
    return map1(op, c, _wrap_math(lambda x: cd.type(1) / np.sqrt(x), elem, _ftz(op, elem)))


def _f64_sqrt_exact(a):
    q = np.sqrt(a)
    p, pe = two_prod(q, q)
    with np.errstate(all="ignore"):
        return q, ((a - p) - pe) / (2.0 * q)


@impl("sqrt")
def _sqrt(op, c):
    elem = elem_of(op.result)
    mode = attr(op, "rounding_mode")
    ftz = _ftz(op, elem)
    if mode in ("nearest_even", "approx", "full"):
        return map1(op, c, _wrap_math(np.sqrt, elem, ftz))

    def directed(x):
        x = _lift(x, F64)
        if ftz:
            x = flush(x.astype(F32)).astype(F64)
        s, e = _f64_sqrt_exact(x) if elem == "f64" else (np.sqrt(x), None)
        r = from_f64(s, elem, mode, e)
        return flush(r) if ftz else r
    return map1(op, c, directed)


# --- add / sub / mul / div ----------------------------------------------------------------------
_NEAREST = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide}


def _exact(name, a, b, wide: bool):
    """The exact ``a op b`` as ``(s, e)`` float64 arrays (``wide``: the inputs are float64)."""
    if name == "addf":
        return two_sum(a, b)
    if name == "subf":
        return two_sum(a, -b)
    if name == "mulf":
        # products of <= 24-bit significands are exact in float64
        return two_prod(a, b) if wide else (a * b, None)
    q = a / b
    if not wide:
        return q, None          # a float64 quotient of narrow floats is exact or not near a tie
    p, pe = two_prod(q, b)
    return q, ((a - p) - pe) / b


@impl("addf", "subf", "mulf", "divf")
def _arith(op, c):
    elem = elem_of(op.result)
    mode = attr(op, "rounding_mode")
    ftz = _ftz(op, elem)
    name = op.name
    if name == "divf" and mode == "approx" and elem == "f32":
        fn = lambda a, b: np.multiply(a, np.float32(1) / np.asarray(b))  # noqa: E731
        return map2(op, c, _wrap_math(fn, elem, ftz))
    if mode in ("nearest_even", "full", "approx"):
        return map2(op, c, _wrap_math(_NEAREST[name], elem, ftz))

    def directed(a, b):
        a, b = _lift(a, F64), _lift(b, F64)
        if ftz:
            a, b = (flush(x.astype(F32)).astype(F64) for x in (a, b))
        with np.errstate(all="ignore"):
            s, e = _exact(name, a, b, elem == "f64")
        r = from_f64(s, elem, mode, e)
        return flush(r) if ftz else r
    return map2(op, c, directed)


@impl("fma")
def _fma(op, c):
    elem = elem_of(op.result)
    mode = ieee_mode(op)
    ftz = _ftz(op, elem)
    wide = elem == "f64"

    def fma(a, b, acc):
        a, b, acc = (_lift(x, F64) for x in (a, b, acc))
        if ftz:
            a, b, acc = (flush(x.astype(F32)).astype(F64) for x in (a, b, acc))
        with np.errstate(all="ignore"):
            if wide:
                p, pe = two_prod(a, b)
                # Dekker's split overflows for factors near the largest double: the product's
                # error term is then lost (a sub-ulp difference), not the value
                pe = np.where(np.isfinite(p) & ~np.isfinite(pe), 0.0, pe)
                s, e1 = two_sum(p, acc)
                s, e = two_sum(s, e1 + pe)
            else:
                s, e = two_sum(a * b, acc)       # the product is exact in float64
            r = from_f64(s, elem, mode, e)
        return flush(r) if ftz else r
    return map3(op, c, fma)


# --- other binary -------------------------------------------------------------------------------
@impl("remf")
def _remf(op, c):
    return map2(op, c, _wrap_math(np.fmod, elem_of(op.result)))


@impl("fpowf")
def _pow(op, c):
    return map2(op, c, _wrap_math(np.power, elem_of(op.result)))


@impl("atan2")
def _atan2(op, c):
    return map2(op, c, _wrap_math(np.arctan2, elem_of(op.result)))


def _pick(is_max: bool, propagate: bool):
    """NumPy's max or min: NaN-propagating (``maximum``) or NaN-ignoring (``fmax``)."""
    return (np.maximum if is_max else np.minimum) if propagate else (np.fmax if is_max else np.fmin)


def _quiet_nans(r):
    """NaNs as NumPy's quiet NaN (maxf/minf canonicalize them)."""
    nan = np.isnan(r)
    return np.where(nan, np.array(np.nan, r.dtype), r) if nan.any() else r


def _minmax(is_max: bool, propagate: bool):
    pick = _pick(is_max, propagate)

    def fn(a, b):
        a, b = np.asarray(a), np.asarray(b)
        r = pick(a, b)
        # IEEE 754-2019: +0 > -0, which NumPy ignores
        z = (a == 0) & (b == 0)
        if np.any(z):
            neg_a = np.signbit(a)
            r = np.where(z, np.where(neg_a, b, a) if is_max else np.where(neg_a, a, b), r)
        return _quiet_nans(r)
    return fn


def _minmax_reduce(is_max: bool, propagate: bool):
    """``fn`` of :func:`_minmax` folded over axis 0 in one NumPy reduce: max and min pick an
    element, so the order of a tree does not matter once signed zeros and NaNs are settled."""
    pick = _pick(is_max, propagate)

    def reduce(x):
        r = pick.reduce(x, axis=0)
        z = r == 0
        if np.any(z):
            # +0 wins a max when present, -0 a min
            winner = ((x == 0) & (np.signbit(x) != is_max)).any(axis=0)
            plus, minus = np.array(0.0, r.dtype), np.array(-0.0, r.dtype)
            win, lose = (plus, minus) if is_max else (minus, plus)
            r = np.where(z, np.where(winner, win, lose), r)
        return _quiet_nans(r)
    return reduce


@impl("maxf", "minf")
def _maxminf(op, c):
    elem = elem_of(op.result)
    is_max, propagate = op.name == "maxf", "propagate_nan" in op.attrs
    ftz = _ftz(op, elem)
    run = map2(op, c, _wrap_math(_minmax(is_max, propagate), elem, ftz))
    if elem in _NATIVE and not ftz:
        run.pure_reduce = _minmax_reduce(is_max, propagate)
    return run


@impl("cmpf")
def _cmpf(op, c):
    pred = CMP[op.attrs["comparison_predicate"]]
    ordered = op.attrs["comparison_ordering"] == "ordered"
    cd = compute_dtype(elem_of(op.operands[0]))
    narrow = elem_of(op.operands[0]) not in _NATIVE

    def cmpf(a, b):
        if narrow:
            a, b = _lift(a, cd), _lift(b, cd)
        r = pred(a, b)
        unordered = np.isnan(a) | np.isnan(b)
        # NumPy's comparisons are already ordered except "not equal", which holds for NaN
        return (r & ~unordered) if ordered else (r | unordered)
    return map2(op, c, cmpf)
