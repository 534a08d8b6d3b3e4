"""Floating-point rounding done exactly, vectorized.

The GPU rounds every float op once, in the mode the op asks for. NumPy only rounds to nearest, so
ops that need another mode (or a single rounding NumPy cannot give, like ``fma`` or ``f64 -> bf16``)
compute the exact result as an unevaluated sum ``s + e`` of two float64 arrays (``s`` the nearest
float64, ``e`` the exact remainder; see :func:`two_sum`, :func:`two_prod`) and hand it to
:func:`round_exact`, which picks the neighbour in the target format from bit patterns.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .elements import F32, F64, STORAGE, uint_of

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


def two_sum(a, b):
    """``s = fl(a + b)`` and ``e`` with ``a + b == s + e`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    """``p = fl(a * b)`` and ``e`` with ``a * b == p + e`` (Dekker; exact without over/underflow)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def contiguous(x, dtype=None) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping 0-d arrays 0-d (``np.ascontiguousarray`` does not)."""
    x = np.asarray(x, dtype=dtype)
    return x if x.flags.c_contiguous else x.copy()


def next_up(r: np.ndarray) -> np.ndarray:
    """The next representable value toward +inf, for any float dtype (NaN and +inf stay)."""
    r = contiguous(r)
    u = uint_of(r.dtype)
    b = r.view(u)
    top = u.type(1 << (8 * u.itemsize - 1))
    neg = (b & top) != 0
    mag = b & ~top
    out = np.where(neg, b - u.type(1), b + u.type(1))
    out = np.where(mag == 0, u.type(1), out)            # +-0 -> smallest positive subnormal
    keep = np.isnan(r) | (r == np.inf)
    return np.where(keep, b, out).astype(u).view(r.dtype)


def next_down(r: np.ndarray) -> np.ndarray:
    return -next_up(-np.asarray(r))


def round_exact(s, e: Optional[np.ndarray], dt: np.dtype, mode: str) -> np.ndarray:
    """Round the exact value ``s + e`` (float64 arrays, ``s`` nearest to it; ``e`` None means 0)
    to the float dtype ``dt`` in ``mode`` (``nearest_even``, ``zero``, ``negative_inf``,
    ``positive_inf``)."""
    s = np.asarray(s, dtype=F64)
    dt = np.dtype(dt)
    if dt == F64:
        if e is None or mode == "nearest_even":
            return s.copy()
        r = s
        c = -np.sign(e)                                 # sign of (r - exact)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            r = s.astype(dt)
            rf = r.astype(F64)
            c = np.sign(rf - s)
        if e is not None:
            c = np.where(c == 0, -np.sign(e), c)
    c = np.where(np.isfinite(s), c, 0)
    down = np.where(c > 0, next_down(r), r)
    up = np.where(c < 0, next_up(r), r)
    if mode == "negative_inf":
        out = down
    elif mode == "positive_inf":
        out = up
    elif mode == "zero":
        xs = np.sign(s) if e is None else np.where(s == 0, np.sign(e), np.sign(s))
        out = np.where(xs > 0, down, np.where(xs < 0, up, r))
    elif mode == "nearest_even":
        df, uf = down.astype(F64), up.astype(F64)
        with np.errstate(invalid="ignore", over="ignore"):
            mid = (df + uf) * 0.5
            # the first value past the largest finite one is inf; its "midpoint" is half an ulp out
            mid = np.where(np.isposinf(uf), df + (df - next_down(down).astype(F64)) * 0.5, mid)
            mid = np.where(np.isneginf(df), uf - (next_up(up).astype(F64) - uf) * 0.5, mid)
            d = np.sign(s - mid)
        if e is not None:
            d = np.where(d == 0, np.sign(e), d)
        even = (contiguous(down).view(uint_of(dt)) & 1) == 0
        out = np.where(d > 0, up, np.where(d < 0, down, np.where(even, down, up)))
        out = np.where(c == 0, r, out)
    else:
        raise ValueError(f"unsupported rounding mode {mode!r}")
    return np.asarray(out, dtype=dt)


_TF32_DROP = 13                       # float32 has 23 mantissa bits, tf32 keeps 10


def round_tf32(x, mode: str = "nearest_even") -> np.ndarray:
    """float32 values rounded to tf32 precision (10 mantissa bits), kept as float32."""
    x = contiguous(x, F32)
    b = x.view(np.uint32)
    low = np.uint32((1 << _TF32_DROP) - 1)
    trunc = b & ~low
    rest = b & low
    neg = (b >> np.uint32(31)) != 0
    step = np.uint32(1 << _TF32_DROP)
    if mode == "nearest_even":
        half = np.uint32(1 << (_TF32_DROP - 1))
        lsb = (b >> np.uint32(_TF32_DROP)) & np.uint32(1)
        bump = (rest > half) | ((rest == half) & (lsb == 1))
    elif mode == "zero":
        bump = np.zeros(b.shape, dtype=bool)
    elif mode == "positive_inf":
        bump = (rest != 0) & ~neg
    elif mode == "negative_inf":
        bump = (rest != 0) & neg
    else:
        raise ValueError(f"unsupported rounding mode {mode!r}")
    out = np.where(bump, trunc + step, trunc).astype(np.uint32)
    special = (b & np.uint32(0x7F800000)) == np.uint32(0x7F800000)   # inf / NaN keep their bits
    return np.where(special, b, out).astype(np.uint32).view(F32)


_FP8_MAX = {"f8E4M3FN": 448.0, "f8E5M2": 57344.0}


def saturate_fp8(x, elem: str):
    """``x`` clamped to the finite range of ``elem`` if it is an fp8 format (NaN stays NaN), like
    PTX's ``.satfinite``; unchanged for every other format."""
    m = _FP8_MAX.get(elem)
    if m is None:
        return x
    return np.where(np.isnan(x), x, np.clip(x, -m, m))


def from_f64(x, elem: str, mode: str = "nearest_even", e=None) -> np.ndarray:
    """float64 values (exact value ``x + e``) converted to float element type ``elem``.

    fp8 conversions saturate to the largest finite value (NaN stays NaN), like PTX's mandatory
    ``.satfinite`` for fp8 destinations.
    """
    x = saturate_fp8(np.asarray(x, dtype=F64), elem)
    if e is not None and elem in _FP8_MAX:
        e = np.where(np.abs(x) >= _FP8_MAX[elem], 0.0, e)
    if elem == "tf32":
        if mode != "nearest_even":
            return round_tf32(round_exact(x, e, F32, mode), mode)   # directed modes compose
        # round to odd in float32 first: float32 keeps 13 more bits than tf32, so the final
        # nearest-even rounding sees every tie and sticky bit the exact value had
        f = round_exact(x, e, F32, "zero")
        inexact = f.astype(F64) != x
        if e is not None:
            inexact |= e != 0
        bits_ = contiguous(f).view(np.uint32)
        odd = np.where(inexact & np.isfinite(f), bits_ | np.uint32(1), bits_).astype(np.uint32)
        return round_tf32(odd.view(F32), mode)
    dt = STORAGE[elem]
    if e is None and mode == "nearest_even" and dt in (F32, F64, np.dtype(np.float16)):
        with np.errstate(over="ignore"):
            return x.astype(dt)                         # NumPy's own conversions round once
    with np.errstate(over="ignore", invalid="ignore"):
        return round_exact(x, e, dt, mode)


def compute_dtype(elem: str) -> np.dtype:
    """The dtype transcendental ops run in: f64 for f64, f32 for every narrower format."""
    return F64 if elem == "f64" else F32


_TINY = {np.dtype(np.float32): np.float32(np.finfo(np.float32).tiny),
         np.dtype(np.float64): np.float64(np.finfo(np.float64).tiny)}


def flush(x):
    """Subnormals of a float32 array flushed to sign-preserving zero."""
    x = np.asarray(x)
    tiny = _TINY.get(x.dtype)
    if tiny is None:
        return x
    return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)
