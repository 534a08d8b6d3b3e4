"""Simulator: elementwise float ops against NumPy references, rounding modes, NaN/zero rules."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from simulator_helpers import NP, elementwise, random_tile

FLOATS = ["f16", "bf16", "f32", "f64"]
N = 200                                   # not a multiple of the 64-element tile


def _ref(fn, elem, *xs):
    """NumPy reference: compute in float32 (float64 for f64), round once to the format."""
    cd = np.float64 if elem == "f64" else np.float32
    with np.errstate(all="ignore"):
        return fn(*(x.astype(cd) for x in xs)).astype(NP[elem])


def _same(got, ref, rtol=0.0):
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(r)
    if rtol:
        ok = np.isclose(g, r, rtol=rtol, atol=0) | both_nan | (g == r)
    else:
        ok = (g == r) | both_nan
    assert ok.all(), (got[~ok][:5], ref[~ok][:5])


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize("name,fn", [("addf", np.add), ("subf", np.subtract),
                                     ("mulf", np.multiply), ("divf", np.divide)])
def test_arith_nearest(dev, elem, name, fn):
    a, b = random_tile(elem, N, 1), random_tile(elem, N, 2)
    got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y, rounding_mode="nearest_even"),
                      [a, b], [elem, elem], elem)
    _same(got, _ref(fn, elem, a, b))


@pytest.mark.parametrize("elem", ["f8E4M3FN", "f8E5M2", "tf32"])
def test_arith_narrow_formats(dev, elem):
    a, b = random_tile(elem, N, 3, -8, 8), random_tile(elem, N, 4, -8, 8)
    if elem == "tf32":
        from tilejit.simulator.numerics import round_tf32
        a, b = round_tf32(a), round_tf32(b)
    got = elementwise(dev, lambda bd, x, y: bd.mulf(x, y), [a, b], [elem, elem], elem)
    prod = a.astype(np.float64) * b.astype(np.float64)
    if elem == "tf32":
        assert (got.view(np.uint32) & 0x1FFF == 0).all()
        _same(got, prod.astype(np.float32), rtol=2 ** -10)
    else:
        m = 448.0 if elem == "f8E4M3FN" else 57344.0
        _same(got, np.clip(prod, -m, m).astype(np.float32).astype(NP[elem]))


def _exact_fraction(name, a, b, c=None):
    a, b = Fraction(float(a)), Fraction(float(b))
    return {"addf": lambda: a + b, "subf": lambda: a - b, "mulf": lambda: a * b,
            "divf": lambda: a / b, "fma": lambda: a * b + Fraction(float(c))}[name]()


def _round_ref(q: Fraction, dt, mode):
    """Correct rounding of the exact rational ``q`` to ``dt`` (f16/f32/f64) in ``mode``."""
    r = dt(float(q))                              # within an ulp of q
    lo = r if Fraction(float(r)) <= q else np.nextafter(r, dt(-np.inf))
    hi = lo if Fraction(float(lo)) == q else np.nextafter(lo, dt(np.inf))
    if mode == "negative_inf":
        return lo
    if mode == "positive_inf":
        return hi
    if mode == "zero":
        return lo if q >= 0 else hi
    dl, dh = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dl != dh:
        return lo if dl < dh else hi
    return lo if int(np.asarray(lo).view(f"u{np.dtype(dt).itemsize}")) % 2 == 0 else hi


@pytest.mark.parametrize("elem", ["f16", "f32", "f64"])
@pytest.mark.parametrize("mode", ["nearest_even", "zero", "negative_inf", "positive_inf"])
@pytest.mark.parametrize("name", ["addf", "subf", "mulf", "divf", "fma"])
def test_rounding_modes_are_exact(dev, elem, mode, name):
    n = 70
    dt = NP[elem]
    r = np.random.default_rng(7)
    # mixed magnitudes make most results inexact
    a = (r.standard_normal(n) * 2.0 ** r.integers(-6, 6, n)).astype(dt)
    b = (r.standard_normal(n) * 2.0 ** r.integers(-6, 6, n)).astype(dt)
    c = (r.standard_normal(n) * 2.0 ** r.integers(-6, 6, n)).astype(dt)
    if name == "fma":
        got = elementwise(dev, lambda bd, x, y, z: bd.fma(x, y, z, rounding_mode=mode),
                          [a, b, c], [elem] * 3, elem)
    else:
        got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y, rounding_mode=mode),
                          [a, b], [elem] * 2, elem)
    ref = np.array([_round_ref(_exact_fraction(name, a[i], b[i], c[i]), dt, mode)
                    for i in range(n)], dtype=dt)
    assert (got.view(f"u{got.itemsize}") == ref.view(f"u{ref.itemsize}")).all(), \
        (got[got != ref], ref[got != ref])


@pytest.mark.parametrize("mode", ["zero", "negative_inf", "positive_inf"])
def test_sqrt_directed_rounding_brackets(dev, mode):
    a = np.abs(random_tile("f32", N, 5)) + np.float32(0.5)
    got = elementwise(dev, lambda bd, x: bd.sqrt(x, rounding_mode=mode), [a], ["f32"], "f32")
    exact = np.sqrt(a.astype(np.float64))
    g = got.astype(np.float64)
    if mode == "positive_inf":
        assert (g >= exact).all()
    else:
        assert (g <= exact).all()
    assert (np.abs(g - exact) <= np.spacing(got).astype(np.float64)).all()


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize("name,fn", [
    ("absf", np.abs), ("negf", np.negative), ("ceil", np.ceil), ("floor", np.floor),
    ("cos", np.cos), ("sin", np.sin), ("tan", np.tan), ("cosh", np.cosh), ("sinh", np.sinh),
    ("exp", np.exp), ("exp2", np.exp2), ("tanh", np.tanh)])
def test_unary(dev, elem, name, fn):
    a = random_tile(elem, N, 11, -4, 4)
    got = elementwise(dev, lambda bd, x: bd.unary(name, x), [a], [elem], elem)
    _same(got, _ref(fn, elem, a), rtol=0 if name in ("absf", "negf", "ceil", "floor") else 1e-6)


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize("name,fn", [("log", np.log), ("log2", np.log2), ("sqrt", np.sqrt),
                                     ("rsqrt", lambda x: 1 / np.sqrt(x))])
def test_unary_positive_domain(dev, elem, name, fn):
    a = np.abs(random_tile(elem, N, 12)) + NP[elem](0.25)
    build = (lambda bd, x: bd.sqrt(x)) if name == "sqrt" else (lambda bd, x: bd.unary(name, x))
    got = elementwise(dev, build, [a], [elem], elem)
    _same(got, _ref(fn, elem, a), rtol=0 if name == "sqrt" else 1e-6)


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize("name,fn", [("remf", np.fmod), ("fpowf", np.power),
                                     ("atan2", np.arctan2)])
def test_binary_math(dev, elem, name, fn):
    a = random_tile(elem, N, 13, 0.5, 4)
    b = random_tile(elem, N, 14, -3, 3)
    got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y), [a, b], [elem] * 2, elem)
    _same(got, _ref(fn, elem, a, b), rtol=0 if name == "remf" else 1e-6)


def test_maxf_minf_nan_and_signed_zero(dev):
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    a = np.array([1, nan, nan, 0.0, -0.0, -inf, 2], np.float32)
    b = np.array([2, 3, nan, -0.0, 0.0, 5, nan], np.float32)

    def run(name, prop):
        return elementwise(dev, lambda bd, x, y: bd.binary(name, x, y, propagate_nan=prop),
                           [a, b], ["f32"] * 2, "f32")
    mx, mxp = run("maxf", False), run("maxf", True)
    mn, mnp = run("minf", False), run("minf", True)
    np.testing.assert_array_equal(mx, [2, 3, nan, 0, 0, 5, 2])
    assert not np.signbit(mx[3]) and not np.signbit(mx[4])
    np.testing.assert_array_equal(mxp, [2, nan, nan, 0, 0, 5, nan])
    np.testing.assert_array_equal(mn, [1, 3, nan, 0, 0, -inf, 2])
    assert np.signbit(mn[3]) and np.signbit(mn[4])
    np.testing.assert_array_equal(mnp, [1, nan, nan, 0, 0, -inf, nan])


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize("pred,fn", [("equal", np.equal), ("not_equal", np.not_equal),
                                     ("less_than", np.less), ("less_than_or_equal", np.less_equal),
                                     ("greater_than", np.greater),
                                     ("greater_than_or_equal", np.greater_equal)])
def test_cmpf_ordered_unordered(dev, elem, pred, fn):
    a = random_tile(elem, N, 21, -3, 3).round()
    b = random_tile(elem, N, 22, -3, 3).round()
    a[::7] = np.nan
    b[::5] = np.nan
    unord = np.isnan(a.astype(np.float64)) | np.isnan(b.astype(np.float64))
    raw = fn(a.astype(np.float64), b.astype(np.float64))
    for ordering, ref in (("ordered", raw & ~unord), ("unordered", raw | unord)):
        got = elementwise(dev, lambda bd, x, y: bd.cmpf(pred, x, y, ordering), [a, b],
                          [elem] * 2, "i1")
        np.testing.assert_array_equal(got, ref)


def test_flush_to_zero(dev):
    tiny = np.float32(1e-39)                      # subnormal in f32
    a = np.array([tiny, -tiny, 1.0, 3e-39], np.float32)
    b = np.array([1.0, 1.0, 1e-39, 1.0], np.float32)
    got = elementwise(dev, lambda bd, x, y: bd.mulf(x, y, flush_to_zero=True), [a, b],
                      ["f32"] * 2, "f32")
    np.testing.assert_array_equal(got, [0.0, -0.0, 0.0, 0.0])
    assert np.signbit(got[1])
    plain = elementwise(dev, lambda bd, x, y: bd.mulf(x, y), [a, b], ["f32"] * 2, "f32")
    assert plain[0] == tiny


def test_divf_approx_and_exp_approx_are_close(dev):
    a, b = random_tile("f32", N, 31, 1, 2), random_tile("f32", N, 32, 1, 2)
    got = elementwise(dev, lambda bd, x, y: bd.divf(x, y, rounding_mode="approx"), [a, b],
                      ["f32"] * 2, "f32")
    np.testing.assert_allclose(got, a / b, rtol=3e-7)
    got = elementwise(dev, lambda bd, x: bd.unary("exp", x, rounding_mode="approx"), [a],
                      ["f32"], "f32")
    np.testing.assert_allclose(got, np.exp(a), rtol=2e-6)


def test_bf16_fma_rounds_once(dev):
    # 3 * 87 = 261 is a bf16 tie (260 | 262); + 2**-20 breaks it upward, but a float32
    # intermediate would drop 2**-20 and round the tie to even (260)
    a, b, c = (np.array([v], ml_dtypes.bfloat16) for v in (3.0, 87.0, 2.0 ** -20))
    got = elementwise(dev, lambda bd, x, y, z: bd.fma(x, y, z), [a, b, c], ["bf16"] * 3, "bf16")
    assert float(got[0]) == 262.0
