"""The accuracy cases of the kernel language's math functions (issue 25 item 1), shared by the
simulator tests (tests/test_math_functions.py) and the GPU tests (tests/gpu/test_math_gpu.py).

Each case gives inputs over a wide range (log-spaced magnitudes of both signs, a dense linear
grid where the function bends, random exponents, subnormals) plus the special values, and a
float64 reference from NumPy or Python's ``math`` module (no SciPy, no mpmath). Errors are
measured in ulp of the result's dtype at the reference value; special values (inf, nan, signed
zeros) must match exactly.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import tilejit as tile
from tilejit import api

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0]


def _wide(dt, lo, hi, n=2000, signed=True):
    m = np.logspace(lo, hi, n)
    return np.concatenate([-m[::-1], m]) if signed else m


def _random(dt, lo, hi, n=4000, signed=True, seed=25):
    rng = np.random.default_rng(seed)
    x = 10.0 ** rng.uniform(lo, hi, n)
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _tiny(dt):
    """Subnormals and the smallest normals of ``dt``, both signs."""
    info = np.finfo(dt)
    v = np.array([info.smallest_subnormal, info.smallest_subnormal * 3, info.tiny / 3, info.tiny,
                  info.tiny * 5], dtype=np.float64)
    return np.concatenate([v, -v])


def _erfinv_ref(y):
    """erfinv by bisection then Newton on math.erf / math.erfc (erfc near +-1, where 1 - |y| is
    exact and erfc keeps its digits)."""
    out = np.empty(len(y))
    for i, v in enumerate(np.asarray(y, np.float64)):
        a = abs(v)
        if not a < 1:
            out[i] = math.copysign(math.inf, v) if a == 1 else math.nan
            continue
        if a < 1e-6:                       # the series: bisection would bottom out
            out[i] = math.sqrt(math.pi) / 2 * v * (1 + math.pi / 12 * v * v)
            continue
        near = a >= 0.5

        def f(x):
            return (1 - a) - math.erfc(x) if near else math.erf(x) - a
        lo, hi = 0.0, 7.0
        for _ in range(70):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        x = (lo + hi) / 2
        for _ in range(3):
            if x > 0:
                x -= f(x) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        out[i] = math.copysign(x, v)
    return out


def _sigmoid_ref(x):
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _cbrt_ref(x):
    """NumPy's cbrt corrected to the correctly rounded float64 cube root (NumPy's can be 3 ulp
    off): among its neighbours, the one whose exact cube is closest."""
    r = np.cbrt(x)
    out = r.copy()
    for i, (v, c) in enumerate(zip(x, r)):
        if not (np.isfinite(c) and c != 0):
            continue
        cands = [c + k * np.spacing(c) for k in range(-4, 5)]
        out[i] = min(cands, key=lambda y: abs(Fraction(float(y)) ** 3 - Fraction(float(v))))
    return out


_V = np.vectorize


def cases(dt):
    """``{name: (inputs as float64, reference function)}`` for results of ``dt``."""
    f32 = dt == np.float32
    big = 38 if f32 else 307
    small = -45 if f32 else -320
    tiny = _tiny(dt)
    near1 = 1 - np.logspace(-7.3 if f32 else -16, -0.1, 1500)
    return {
        "erf": (np.concatenate([_wide(dt, small, 1.5), np.linspace(-7, 7, 4001), tiny,
                                _random(dt, -6, 0.8)]), _V(math.erf)),
        "erfc": (np.concatenate([_wide(dt, small, 1.5), tiny, _random(dt, -6, 1.4),
                                 np.linspace(-6, 10.5 if f32 else 27.5, 6001)]), _V(math.erfc)),
        "erfinv": (np.concatenate([np.linspace(-1, 1, 8001), near1, -near1, tiny,
                                   _wide(dt, small, -0.5), _random(dt, -6, 0)]), _erfinv_ref),
        "log1p": (np.concatenate([_wide(dt, small, big), np.linspace(-0.999, 3, 3001), tiny,
                                  _random(dt, -8, 3)]), np.log1p),
        "expm1": (np.concatenate([_wide(dt, small, 1.95 if f32 else 2.85),
                                  np.linspace(-5, 5, 3001), tiny, _random(dt, -8, 1.9)]),
                  np.expm1),
        "log10": (np.concatenate([_wide(dt, small, big, signed=False), tiny,
                                  _random(dt, small + 2, big, signed=False)]), np.log10),
        "sigmoid": (np.concatenate([_wide(dt, small, 2.3 if f32 else 2.85),
                                    np.linspace(-20, 20, 3001), _random(dt, -6, 2)]),
                    _sigmoid_ref),
        "cbrt": (np.concatenate([_wide(dt, small, big, n=700), tiny,
                                 _random(dt, small + 2, big, n=800)]), _cbrt_ref),
        "asin": (np.concatenate([np.linspace(-1, 1, 6001), near1, -near1, tiny,
                                 _wide(dt, small, -0.01)]), np.arcsin),
        "acos": (np.concatenate([np.linspace(-1, 1, 6001), near1, -near1, tiny]), np.arccos),
        "atan": (np.concatenate([_wide(dt, small, big), tiny, _random(dt, -5, 5)]), np.arctan),
        "asinh": (np.concatenate([_wide(dt, small, big), tiny, _random(dt, -5, 5)]),
                  np.arcsinh),
        "acosh": (np.concatenate([1 + np.logspace(-7.3 if f32 else -16, 1, 2000),
                                  _wide(dt, 0, big, signed=False), _random(dt, 0, 5)]),
                  np.arccosh),
        "atanh": (np.concatenate([np.linspace(-1, 1, 6001), near1, -near1, tiny,
                                  _wide(dt, small, -0.01)]), np.arctanh),
        "trunc": (np.concatenate([_wide(dt, -3, 10), np.linspace(-5, 5, 2001),
                                  _random(dt, -3, 25)]), np.trunc),
        "rint": (np.concatenate([_wide(dt, -3, 10), np.arange(-10.5, 10.5, 0.25),
                                 _random(dt, -3, 25)]), np.rint),
        "round": (np.concatenate([np.arange(-10.5, 10.5, 0.25), _random(dt, -3, 25)]),
                  np.round),
    }


def unary_kernel(name: str):
    """A kernel storing ``tile.<name>`` of each 1024-element tile of x into z."""
    src = (f"import tilejit as tile\n@tile.entry\ndef k(z, x):\n"
           f"    z.store(tile.{name}(tile.load_tile_like(x, z)))\n")
    ns = {}
    exec(compile(src, f"<tile.{name}>", "exec"), ns)
    return ns["k"]


def apply(name: str, x: np.ndarray) -> np.ndarray:
    """``tile.<name>`` of ``x`` (a 1-D array) on the current backend."""
    n = len(x)
    pad = -n % 1024
    xp = np.concatenate([x, np.zeros(pad, x.dtype)])
    z = api.zeros((len(xp),), tile.dtypes.from_numpy(xp.dtype)).sync()
    unary_kernel(name)(z.partition((1024,)), api.from_numpy(xp).sync()).sync()
    return z.to_numpy()[:n]


def measure(name: str, dt, extra=()):
    """``(max ulp error, inputs whose special results differ)`` of ``tile.<name>`` in ``dt``."""
    x64, ref_fn = cases(dt)[name]
    x = np.concatenate([x64, SPECIAL, extra]).astype(dt)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    got = apply(name, x).astype(np.float64)
    return ulp_error(got, ref, dt), special_mismatches(x, got, ref, dt)


def ulp_error(got, ref, dt) -> float:
    """Max |got - ref| in ulp of ``dt`` at ``ref`` (finite references only; a reference past the
    largest finite value counts as inf)."""
    info = np.finfo(dt)
    with np.errstate(all="ignore"):
        ref = np.where(np.abs(ref) > float(info.max) * (1 + float(info.eps)),
                       np.copysign(np.inf, ref), ref)
        fin = np.isfinite(ref)
        spacing = np.spacing(np.abs(ref[fin]).astype(dt)).astype(np.float64)
        spacing = np.maximum(spacing, float(info.smallest_subnormal))
        err = np.abs(got[fin] - ref[fin]) / spacing
    return float(np.nan_to_num(err, nan=np.inf).max()) if err.size else 0.0


def special_mismatches(x, got, ref, dt) -> list:
    """Inputs where the result should be inf (overflow included), nan or a signed zero and is
    not exactly that."""
    with np.errstate(over="ignore"):
        ref_dt = ref.astype(dt).astype(np.float64)
    exact = ~np.isfinite(ref_dt) | (ref == 0)
    same = (got == ref_dt) & (np.signbit(got) == np.signbit(ref_dt))
    same |= np.isnan(got) & np.isnan(ref_dt)
    return [float(v) for v in x[exact & ~same]]
