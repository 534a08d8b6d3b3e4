"""NaN propagation, rounding modes and flush-to-zero in the kernel language: what reaches the
Tile IR, what the simulator computes, and what is refused (issue 10 items 4-5, issue 12)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")
R = tile.RoundingMode


def kernel_of(expr: str, n: int):
    """A kernel storing ``expr`` of ``t`` (the first ``n`` elements of x) into z."""
    src = ("import tilejit as tile\nR = tile.RoundingMode\n"
           f"@tile.entry\ndef k(z, x):\n    t = x.load((0,), ({n},))\n"
           f"    z.store({expr})\n")
    ns = {}
    exec(compile(src, f"<kernel {expr}>", "exec"), ns)
    return ns["k"]


def run(expr, data, out_shape=None, out_dtype=tile.float32):
    x = api.from_numpy(np.asarray(data, np.float32)).sync()
    shape = out_shape or (len(data),)
    z = api.zeros(shape, out_dtype).sync()
    k = kernel_of(expr, len(data))
    k(z.partition(shape), x).sync()
    return z.to_numpy(), k, (z, x)


NAN4 = [np.nan, 1.0, 2.0, 3.0]


def test_max_min_and_maximum_propagate_nan_by_default():
    assert np.isnan(run("tile.full((1,), tile.max(t), tile.float32)", NAN4, (1,))[0][0])
    assert np.isnan(run("tile.full((1,), tile.min(t), tile.float32)", NAN4, (1,))[0][0])
    out, _, _ = run("tile.maximum(t, 1.5)", NAN4)
    assert np.isnan(out[0]) and list(out[1:]) == [1.5, 2.0, 3.0]
    out, _, _ = run("t.max(axis=0, keepdims=True) + t * 0", NAN4)
    assert np.isnan(out).all()


def test_propagate_nan_false_ignores_nans():
    assert run("tile.full((1,), tile.max(t, propagate_nan=False), tile.float32)", NAN4,
               (1,))[0][0] == 3.0
    assert run("tile.full((1,), tile.min(t, propagate_nan=False), tile.float32)", NAN4,
               (1,))[0][0] == 1.0
    out, _, _ = run("tile.maximum(t, 1.5, propagate_nan=False)", NAN4)
    assert list(out) == [1.5, 1.5, 2.0, 3.0]


def test_argmax_argmin_point_at_the_first_nan_like_numpy():
    data = [1.0, np.nan, 5.0, np.nan]
    out = run("tile.full((1,), tile.argmax(t), tile.int32)", data, (1,), tile.int32)[0]
    assert out[0] == np.argmax(np.array(data)) == 1
    out = run("tile.full((1,), tile.argmin(t), tile.int32)", data, (1,), tile.int32)[0]
    assert out[0] == np.argmin(np.array(data)) == 1
    out = run("tile.full((1,), tile.argmax(t, propagate_nan=False), tile.int32)", data, (1,),
              tile.int32)[0]
    assert out[0] == 2


def test_nan_propagation_reaches_the_tile_ir():
    _, k, (z, x) = run("tile.maximum(t, 1.0)", NAN4)
    assert "maxf" in k.inspect_tileir(z.partition((4,)), x) and \
        "propagate_nan" in k.inspect_tileir(z.partition((4,)), x)
    _, k, (z, x) = run("tile.maximum(t, 1.0, propagate_nan=False)", NAN4)
    assert "propagate_nan" not in k.inspect_tileir(z.partition((4,)), x)


@pytest.mark.parametrize("expr,text", [
    ("tile.sqrt(t, rounding_mode=R.RZ)", "sqrt %"),
    ("tile.sqrt(t, rounding_mode=R.APPROX)", "approx"),
    ("tile.exp(t, rounding_mode=R.APPROX)", "approx"),
    ("tile.tanh(t, rounding_mode=R.APPROX)", "approx"),
    ("tile.exp2(t, flush_to_zero=True)", "flush_to_zero"),
    ("tile.rsqrt(t, flush_to_zero=True)", "flush_to_zero"),
    ("tile.truediv(t, t + 1.0, rounding_mode=R.APPROX)", "approx"),
    ("tile.truediv(t, t + 1.0, rounding_mode=R.RP, flush_to_zero=True)", "positive_inf"),
])
def test_rounding_and_flushing_reach_the_tile_ir(expr, text):
    _, k, (z, x) = run(expr, [1.0, 2.0, 3.0, 4.0])
    ir = k.inspect_tileir(z.partition((4,)), x)
    assert text in ir, ir
    if "RZ" in expr:
        assert "zero" in ir


def test_sqrt_rounding_modes_round_as_asked():
    data = np.array([2.0, 3.0, 5.0, 7.0], np.float32)
    rz = run("tile.sqrt(t, rounding_mode=R.RZ)", data)[0]
    rp = run("tile.sqrt(t, rounding_mode=R.RP)", data)[0]
    exact = np.sqrt(data.astype(np.float64))
    assert (rz <= exact).all() and (rp >= exact).all() and (rp > rz).all()


def test_truediv_rounding_brackets_the_exact_quotient():
    data = np.array([1.0, 2.0, 5.0, 7.0], np.float32)
    lo = run("tile.truediv(t, 3.0, rounding_mode=R.RM)", data)[0]
    hi = run("tile.truediv(t, 3.0, rounding_mode=R.RP)", data)[0]
    exact = data.astype(np.float64) / 3.0
    assert (lo <= exact).all() and (hi >= exact).all()
    assert np.array_equal(run("tile.truediv(t, 3.0)", data)[0], data / np.float32(3.0))


def test_flush_to_zero_flushes_subnormals():
    sub = float(np.finfo(np.float32).tiny) / 4            # a float32 subnormal
    plain = run("tile.log(t)", [sub, 1.0])[0]
    flushed = run("tile.log(t, flush_to_zero=True)", [sub, 1.0])[0]
    assert np.isfinite(plain[0]) and flushed[0] == -np.inf and flushed[1] == 0.0
    assert run("tile.exp(t, flush_to_zero=True)", [-100.0, 0.0])[0][0] == 0.0   # subnormal out
    assert run("tile.exp(t)", [-100.0, 0.0])[0][0] > 0.0


@pytest.mark.parametrize("expr,msg", [
    ("tile.sin(t, rounding_mode=R.RZ)", "tile.sin takes no rounding_mode"),
    ("tile.sqrt(t, rounding_mode=R.FULL)", "accepts tile.RoundingMode.RN"),
    ("tile.exp(t, rounding_mode=R.RZ)", "accepts tile.RoundingMode.FULL"),
    ("tile.sin(t, flush_to_zero=True)", "tile.sin has no flush_to_zero"),
    ("tile.truediv(t, 2.0, rounding_mode=R.FULL)", "accepts"),
    ("tile.maximum(t, 1.0, propagate_nan=t > 0)", "propagate_nan must be a compile-time"),
])
def test_unsupported_modes_are_refused_with_the_alternatives(expr, msg):
    with pytest.raises(tile.TypingError, match=msg.replace("(", r"\(").replace(".", r"\.")):
        run(expr, [1.0, 2.0, 3.0, 4.0])
