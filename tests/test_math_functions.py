"""The math functions of issue 25 item 1 on the simulator: accuracy in ulp against float64
NumPy / ``math`` over wide ranges and special values (the bounds are ``language.MATH_ACCURACY``,
the numbers the reference docs state), integer and narrow-float inputs, the float predicates,
``pow``/``fmod``/``copysign``, ``rounding_mode=``/``flush_to_zero=`` on ``add``/``sub``/``mul``
and ``sum``, refusals, and tileiras accepting the generated IR."""
import math

import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api, language
from tilejit.toolchain import tileiras

import math_cases as M

pytestmark = pytest.mark.usefixtures("simulator_backend")
R = tile.RoundingMode
NAMES = sorted(M.cases(np.float32))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_accuracy_within_the_documented_ulp(name, dt):
    err, bad = M.measure(name, dt)
    bound = language.MATH_ACCURACY[name][dt == np.float64]
    assert bad == [], f"{name}: special values differ at {bad[:8]}"
    assert err <= bound + 1e-9, f"{name} {dt.__name__}: {err:.2f} ulp > {bound}"


def test_every_formula_has_a_documented_accuracy_and_a_case():
    from tilejit.lowering.mathlib import FORMULAS
    assert set(FORMULAS) == set(language.MATH_ACCURACY) == set(NAMES)
    for name in FORMULAS:
        doc = getattr(language, name).__doc__
        assert "ulp" in doc or "Exact" in doc, name


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "log1p", "expm1", "cbrt", "asinh",
                                  "atanh", "sigmoid", "rint"])
def test_narrow_floats_compute_in_float32_and_round_once(name, dt):
    x = np.linspace(-0.99, 0.99, 397).astype(dt)
    got = M.apply(name, x)
    assert got.dtype == dt
    want = M.apply(name, x.astype(np.float32)).astype(dt)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def _run(expr, *arrays, out_dtype):
    """``expr`` of a, b (1-D tiles of the arrays) stored into a new array of ``out_dtype``."""
    names = "ab"[:len(arrays)]
    loads = "".join(f"    {n} = {n}x.load((0,), ({len(arrays[0])},))\n" for n in names)
    src = (f"import tilejit as tile\nR = tile.RoundingMode\n@tile.entry\n"
           f"def k(z, {', '.join(n + 'x' for n in names)}):\n{loads}    z.store({expr})\n")
    ns = {}
    exec(compile(src, f"<{expr}>", "exec"), ns)
    z = api.zeros((len(arrays[0]),), out_dtype).sync()
    ns["k"](z.partition((len(arrays[0]),)), *(api.from_numpy(np.asarray(a)).sync()
                                               for a in arrays)).sync()
    return z.to_numpy()


def test_integer_inputs():
    x = np.array([-7, -1, 0, 3, 100, 2 ** 30, -2 ** 31, 5], np.int32)
    np.testing.assert_array_equal(_run("tile.trunc(a)", x, out_dtype=tile.int32), np.trunc(x))
    np.testing.assert_array_equal(_run("tile.round(a)", x, out_dtype=tile.int32), np.round(x))
    got = _run("tile.erf(a)", x, out_dtype=tile.float32)
    np.testing.assert_allclose(got, [math.erf(v) for v in x.astype(np.float32)], rtol=2e-7)
    got = _run("tile.rint(a)", x, out_dtype=tile.float32)
    np.testing.assert_array_equal(got, np.rint(x.astype(np.float32)))


def test_the_float_predicates_follow_numpy():
    f = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45],
                 np.float32)
    for fn in ("isinf", "isfinite", "signbit", "isnan"):
        got = _run(f"tile.{fn}(a)", np.resize(f, 16), out_dtype=tile.bool_)
        np.testing.assert_array_equal(got, getattr(np, fn)(np.resize(f, 16)), err_msg=fn)
    i = np.array([-3, 0, 7, -2 ** 31, 2 ** 31 - 1, 1, -1, 5], np.int32)
    u = np.array([0, 1, 2 ** 32 - 1, 5, 6, 7, 8, 9], np.uint32)
    for fn in ("isinf", "isfinite", "signbit"):
        for arr in (i, u):
            got = _run(f"tile.{fn}(a)", arr, out_dtype=tile.bool_)
            np.testing.assert_array_equal(got, getattr(np, fn)(arr), err_msg=f"{fn} {arr.dtype}")


def test_pow_fmod_copysign_follow_numpy():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(256) * 10).astype(np.float32)
    b = (rng.standard_normal(256) * 3).astype(np.float32)
    b[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0]
    a[8:12] = [0.0, -0.0, np.inf, np.nan]
    got = _run("tile.fmod(a, b)", a, b, out_dtype=tile.float32)
    with np.errstate(invalid="ignore"):
        want = np.fmod(a, b)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    got = _run("tile.copysign(a, b)", a, b, out_dtype=tile.float32)
    np.testing.assert_array_equal(got, np.copysign(a, b))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(a, b)))
    pos = np.abs(a) + 0.5
    got = _run("tile.pow(a, b)", pos, b, out_dtype=tile.float32)
    np.testing.assert_allclose(got, np.power(pos.astype(np.float64), b), rtol=1e-6)
    ints = np.array([7, -7, 7, -7, 0, 5, -2 ** 31, 9], np.int32)
    divs = np.array([3, 3, -3, -3, 4, 0, -1, 0], np.int32)
    with np.errstate(divide="ignore"):
        want = np.fmod(ints, divs)                # NumPy: 0 for a zero divisor
    np.testing.assert_array_equal(_run("tile.fmod(a, b)", ints, divs, out_dtype=tile.int32), want)
    np.testing.assert_array_equal(_run("tile.pow(a, 3)", ints, out_dtype=tile.int32), ints ** 3)
    np.testing.assert_array_equal(_run("tile.copysign(a, b)", ints, divs, out_dtype=tile.float32),
                                  np.copysign(ints, divs).astype(np.float32))


def _directed(exact: np.ndarray, mode: str) -> np.ndarray:
    """float64 values (exact results) rounded to float32 in ``mode``."""
    r = exact.astype(np.float32)
    r64 = r.astype(np.float64)
    if mode == "RZ":
        return np.where(np.abs(r64) > np.abs(exact), np.nextafter(r, np.float32(0)), r)
    if mode == "RM":
        return np.where(r64 > exact, np.nextafter(r, np.float32(-np.inf)), r)
    if mode == "RP":
        return np.where(r64 < exact, np.nextafter(r, np.float32(np.inf)), r)
    return r


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
@pytest.mark.parametrize("op,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply)])
def test_named_arithmetic_rounds_as_asked(op, fn, mode):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(512) * 2.0 ** rng.integers(-8, 8, 512)).astype(np.float32)
    b = (rng.standard_normal(512) * 2.0 ** rng.integers(-8, 8, 512)).astype(np.float32)
    exact = fn(a.astype(np.float64), b.astype(np.float64))     # exact for these exponents
    got = _run(f"tile.{op}(a, b, rounding_mode=R.{mode})", a, b, out_dtype=tile.float32)
    np.testing.assert_array_equal(got, _directed(exact, mode))


def test_named_arithmetic_flushes_subnormals_and_matches_the_operators():
    tiny = np.float32(1e-39)                       # subnormal
    a = np.array([tiny, -tiny, 1.0, 2.0e-38, 3.0, tiny, 0.5, 4.0], np.float32)
    b = np.array([1.0, 1.0, tiny, 0.25, 2.0, tiny, 1.0, 1.0], np.float32)
    got = _run("tile.mul(a, b, flush_to_zero=True)", a, b, out_dtype=tile.float32)
    want = a * b
    want[[0, 1, 2, 3, 5]] = [0.0, -0.0, 0.0, 0.0, 0.0]    # subnormal in or out: zero
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    i = np.arange(8, dtype=np.int32)
    np.testing.assert_array_equal(_run("tile.add(a, 3) + tile.mul(a, a) - tile.sub(a, 1)", i,
                                       out_dtype=tile.int32), (i + 3) + i * i - (i - 1))


def test_sum_takes_a_rounding_mode():
    x = np.full(64, 1.0, np.float32)
    x[1::2] = 2.0 ** -30                           # each addition of a tiny term is inexact
    sums = {m: _run(f"tile.full((64,), tile.sum(a, rounding_mode=R.{m}), tile.float32)", x,
                    out_dtype=tile.float32)[0] for m in ("RN", "RZ", "RM", "RP")}
    exact = float(np.sum(x.astype(np.float64)))
    assert sums["RZ"] == sums["RM"] <= exact <= sums["RP"]
    assert sums["RP"] > sums["RM"]
    ir = _kernel_ir("tile.full((64,), tile.sum(a, rounding_mode=R.RP, flush_to_zero=True), "
                    "tile.float32)")
    assert "positive_inf" in ir and "flush_to_zero" in ir


def _kernel_ir(expr):
    src = (f"import tilejit as tile\nR = tile.RoundingMode\n@tile.entry\ndef k(z, ax):\n"
           f"    a = ax.load((0,), (64,))\n    z.store({expr})\n")
    ns = {}
    exec(compile(src, "<ir>", "exec"), ns)
    z = api.zeros((64,)).sync()
    return ns["k"].inspect_tileir(z.partition((64,)), z)


@pytest.mark.parametrize("expr,match", [
    ("tile.add(a.astype(tile.int32), 1, rounding_mode=R.RZ)", "float operands only"),
    ("tile.mul(a.astype(tile.int32), 2, flush_to_zero=True)", "float operands only"),
    ("tile.add(a, a, rounding_mode=R.APPROX)", "Rounding mode approx is not supported"),
    ("tile.erf(a, rounding_mode=R.RZ)", "takes no rounding_mode"),
    ("tile.log1p(a, flush_to_zero=True)", "has no flush_to_zero"),
    ("tile.sum(a.astype(tile.int32), rounding_mode=R.RZ) + a", "float tiles only"),
    ("tile.fmod(a > 0, a > 1) + a", "bool"),
])
def test_refusals_name_the_problem(expr, match):
    with pytest.raises(tile.TypingError, match=match):
        _kernel_ir(expr)


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
@pytest.mark.parametrize("dtype", [tile.float32, tile.float64, tile.float16, tile.bfloat16])
def test_tileiras_accepts_every_math_function(dtype, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    body = "".join(f"    r = r + tile.{n}(t)\n" for n in NAMES)
    src = ("import tilejit as tile\nR = tile.RoundingMode\n@tile.entry\ndef k(z, x):\n"
           "    t = tile.load_tile_like(x, z)\n    r = t\n" + body +
           "    r = r + tile.where(tile.isinf(t) | tile.isfinite(t) | tile.signbit(t), t, t)\n"
           "    r = r + tile.pow(t, t) + tile.fmod(t, t) + tile.copysign(t, t)\n"
           "    r = r + tile.add(t, t, rounding_mode=R.RZ) + tile.mul(t, t, flush_to_zero=True)\n"
           "    z.store((r + tile.sum(t, rounding_mode=R.RM)).astype(z.dtype))\n")
    ns = {}
    exec(compile(src, "<all math>", "exec"), ns)
    z = api.zeros((256,), dtype).sync()
    assert ns["k"].compile(z.partition((256,)), z, arch="sm_90")[:4] == b"\x7fELF"


def test_the_reference_page_states_the_tested_bounds():
    from pathlib import Path
    page = (Path(__file__).parent.parent / "docs" / "language" / "reference.md").read_text()
    stated = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[1] not in ("float32", "---"):
            for name in cells[0].replace("`", "").split(","):
                stated[name.strip()] = tuple(0 if c == "exact" else int(c) for c in cells[1:3])
    assert stated == language.MATH_ACCURACY


@tile.entry
def _rounded_scans(out, x):
    t = x.load((0,), (8,))
    tile.store(out, (0,), tile.cumsum(t, 0, rounding_mode=tile.RoundingMode.RZ))
    tile.store(out, (1,), tile.cumprod(t, 0, rounding_mode=tile.RoundingMode.RP))
    tile.store(out, (2,), tile.broadcast_to(
        tile.prod(t, rounding_mode=tile.RoundingMode.RM, flush_to_zero=True), (8,)))


def test_prod_cumsum_and_cumprod_take_a_rounding_mode():
    """As ``sum`` does (cuTile's ``ct.prod``/``ct.cumsum``/``ct.cumprod`` take them): each
    combining step rounds the requested way."""
    x = np.array([1.1, 2.2, 3.3, 1e-3, 5.5, 6.6, 7.7, 8.8], np.float32)
    out = np.zeros(24, np.float32)
    _rounded_scans(tile.atomic(out), x).grid(1).sync()
    exact_sum = np.cumsum(x.astype(np.float64))
    exact_prod = np.cumprod(x.astype(np.float64))
    assert (out[:8] <= exact_sum).all() and (out[8:16] >= exact_prod).all()
    assert out[16] <= exact_prod[-1]
    ir = _rounded_scans.inspect_tileir(tile.atomic(out), x)
    assert "addf" in ir and "rounding<zero>" in ir and "rounding<positive_inf>" in ir
    assert "rounding<negative_inf> flush_to_zero" in ir
    # ct.prod/ct.cumsum take the same modes; their narrow-int result dtypes are cuTile's
    # (tests/test_cutile_conformance.py)
    with pytest.raises(tile.TypingError, match="Rounding mode can only be used"):
        _kernel_ir("tile.cumsum(a.astype(tile.int32), 0, rounding_mode=R.RZ).astype(tile.float32)")
