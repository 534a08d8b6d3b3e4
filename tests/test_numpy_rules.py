"""NumPy 2's rules where tilejit used to give weak errors or wrong answers (issue 21 item 20):
bool ``+``/``*`` are logical or/and, mismatched ``astype`` rounding modes, integer ``**`` with a
runtime exponent and ``printf`` conversions that do not fit their argument are standard typing
errors (file:line, caret, operand types, the fix), and ``api.arange`` takes ``np.arange``'s
arguments."""
import linecache

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")

B16 = np.array([True, False, True, True, False, False, True, False] * 2)
I16 = np.arange(16, dtype=np.int32)
F16 = np.arange(16, dtype=np.float32)


def kernel_of(body: str):
    src = ("import tilejit as tile\nR = tile.RoundingMode\n@tile.entry\ndef k(z, x, y):\n"
           "    t = x.load((0,), (16,))\n    u = y.load((0,), (16,))\n" + body)
    name = f"<numpy rules {abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)   # for the caret
    ns = {}
    exec(compile(src, name, "exec"), ns)
    return ns["k"]


def run(body, out_dtype, x, y=None):
    k = kernel_of(body)
    z = api.zeros((16,), out_dtype).sync()
    k(z.partition((16,)), api.from_numpy(x).sync(), api.from_numpy(x if y is None else y).sync()
      ).sync()
    return z.to_numpy()


@pytest.mark.parametrize("expr", ["t + u", "t * u", "t * u + t * 2", "t + True", "t * False",
                                  "(t + u).astype(tile.int32) * 3"])
def test_bool_arithmetic_follows_numpy(expr):
    rev = B16[::-1].copy()
    out = run(f"    z.store({expr})\n", tile.int32 if "2" in expr or "3" in expr else tile.bool_,
              B16, rev)
    want = eval(expr.replace(".astype(tile.int32)", ".astype(np.int32)"),
                {"np": np}, {"t": B16, "u": rev})
    assert out.tolist() == want.tolist()


def _typing_error(body, x, match, out_dtype=tile.float32):
    with pytest.raises(tile.TypingError, match=match) as e:
        run(body, out_dtype, x)
    text = str(e.value)
    assert text.startswith("<numpy rules ") and ">:7: in `" in text, text   # file:line, call
    assert "^^^" in text                                             # the caret
    return text


def test_astype_with_an_approximate_rounding_mode():
    text = _typing_error("    z.store(t.astype(tile.float16, rounding_mode=R.APPROX))\n", F16,
                         r"rounding_mode must be RoundingMode\.RN, RZ, RM or RP, got "
                         r"RoundingMode\.APPROX", tile.float16)
    assert "t: Tile[float32, 16]" in text


def test_astype_with_a_directed_rounding_to_an_integer():
    _typing_error("    z.store(t.astype(tile.int32, rounding_mode=R.RZ))\n", F16,
                  r"RoundingMode\.RZ applies to float -> float conversions only; float32 -> "
                  r"int32 always rounds toward zero", tile.int32)


def test_directed_float_rounding_still_works():
    out = run("    z.store(t.astype(tile.float16, rounding_mode=R.RZ))\n", tile.float16,
              np.full(16, 1 + 2 ** -11 + 2 ** -20, np.float32))
    assert (out == np.float16(1.0)).all()                  # toward zero, not to nearest (1+2**-10)


def test_integer_power_with_a_runtime_exponent():
    text = _typing_error("    z.store(t ** u)\n", I16, r"integer '\*\*' needs a constant "
                         r"exponent .* x\.astype\(tile\.float32\) \*\* y", tile.int32)
    assert "t: Tile[int32, 16]" in text and "u: Tile[int32, 16]" in text


def test_integer_power_with_a_constant_exponent_works():
    assert run("    z.store(t ** 3)\n", tile.int32, I16).tolist() == (I16 ** 3).tolist()


@pytest.mark.parametrize("fmt,x,match", [
    ("%d", F16, r"argument 1 \(Tile\[float32, 16\]\) is printed with '%d', an integer "
                r"conversion; use %f, %e or %g for floats"),
    ("%5.2f", I16, r"argument 1 \(Tile\[int32, 16\]\) is printed with '%5.2f', a float "
                   r"conversion; use %d"),
    ("%s", F16, r"arguments are numbers, not strings"),
    ("%y", F16, r"'%y' in the format is not a printf conversion"),
])
def test_printf_conversion_that_does_not_fit_its_argument(fmt, x, match):
    _typing_error(f"    tile.printf('{fmt}\\n', t)\n    z.store(t * 0)\n", x, match,
                  tile.dtypes.from_numpy(x.dtype))


def test_printf_conversions_that_fit_are_accepted(capfd):
    run("    tile.printf('%d %x %.1f %g\\n', u, u, t, t)\n    z.store(t)\n", tile.float32, F16,
        I16)
    out = capfd.readouterr().out
    assert "[0, 1, 2" in out and "[0.0, 1.0, 2.0" in out and "f" in out   # %x of 15


@pytest.mark.parametrize("args", [(5, 0), (2, 7), (5,), (0,), (10, 0, -3), (-3, 3, 2),
                                  (0, 1, 0.1), (1.5, 4), (0.5, -2.0, -0.75)])
def test_api_arange_follows_np_arange(args):
    got = api.arange(*args).sync().to_numpy()
    want = np.arange(*args)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_api_arange_keeps_the_dtype_forms():
    assert api.arange(4, tile.float32).sync().to_numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    r = api.arange(3, 9, 2, dtype=tile.int8).sync().to_numpy()
    assert r.dtype == np.int8 and r.tolist() == [3, 5, 7]
    with pytest.raises(tile.TensorError, match="step must not be zero"):
        api.arange(1, 5, 0)
    with pytest.raises(TypeError, match="pass the dtype as dtype="):
        api.arange(2, 7, tile.float32)


def test_errors_raised_while_lowering_point_at_the_statement(monkeypatch):
    """An emitter's error (raised without a location) still names the user's file and line."""
    from tilejit.lowering.emit import Emitter

    def refuse(self, x):
        raise tile.TypingError("refused by the emitter")
    monkeypatch.setattr(Emitter, "absolute", refuse)
    with pytest.raises(tile.TypingError, match="refused by the emitter") as e:
        run("    z.store(abs(t))\n", tile.float32, F16)
    assert ">:7: refused by the emitter" in str(e.value) and "^^^" in str(e.value)
