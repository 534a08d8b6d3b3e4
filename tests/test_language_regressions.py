"""Ordinary kernel code that used to crash inside tilejit (issue 21 items 9-13): conditional
expressions inside call arguments, ``cdiv`` of an int tile, NumPy's ``transpose(*axes)``, an
int as a one-dimensional shape, user enums, float8 tile creation."""
import enum

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


class Color(enum.IntEnum):
    RED = 1
    BLUE = 2


class Shape(enum.Enum):
    SQUARE = "square"
    ROUND = "round"


MODE = Color.BLUE
STYLE = Shape.ROUND


def run(kernel, out_shape, *args, dtype=tile.float32):
    z = api.zeros(out_shape, dtype).sync()
    kernel(z.partition(out_shape), *args).sync()
    return z.to_numpy()


X16 = np.arange(16, dtype=np.float32)


# --- item 9 ----------------------------------------------------------------------------------
@tile.function
def _scale(a, s):
    return a * s


@tile.entry
def ifexp_args(z, x, n):
    t = x.load((0,), (16,))
    u = tile.maximum(t, 5.0 if n > 0 else 2.0)
    v = _scale(u, 2.0 if n < 0 else 3.0)
    w = tile.where(t > 3.0, v, (t if n > 1 else -t))
    z.store(w + tile.sum(t if n > 0 else -t, axis=0, keepdims=True))


@pytest.mark.parametrize("n", [3, -3])
def test_conditional_expressions_inside_call_arguments(n):
    out = run(ifexp_args, (16,), api.from_numpy(X16).sync(), n)
    t = X16
    u = np.maximum(t, 5.0 if n > 0 else 2.0)
    w = np.where(t > 3, u * (2.0 if n < 0 else 3.0), t if n > 1 else -t)
    np.testing.assert_array_equal(out, w + (t if n > 0 else -t).sum())


@tile.entry
def ifexp_in_store(z, x, c: tile.Constant[bool]):
    t = x.load((0,), (16,))
    a, b = 1.0, 2.0
    z.store(t + (a if c else b))


def test_conditional_expression_as_a_method_argument():
    x = api.from_numpy(X16).sync()
    np.testing.assert_array_equal(run(ifexp_in_store, (16,), x, True), X16 + 1)
    np.testing.assert_array_equal(run(ifexp_in_store, (16,), x, False), X16 + 2)


# --- item 10 ---------------------------------------------------------------------------------
@tile.entry
def cdiv_tiles(z, x, s):
    t = x.load((0,), (16,))
    z.store(tile.cdiv(t, s) * 1000 + tile.cdiv(s, t + 100) + tile.cdiv(t, t * 0 + 3))


@pytest.mark.parametrize("s", [3, -3, 1, 16])
def test_cdiv_of_an_int_tile_and_a_scalar_matches_the_host(s):
    xn = np.arange(-8, 8, dtype=np.int32)
    x = api.from_numpy(xn).sync()
    out = run(cdiv_tiles, (16,), x, np.int32(s), dtype=tile.int32)
    want = [tile.cdiv(int(v), s) * 1000 + tile.cdiv(s, int(v) + 100) + tile.cdiv(int(v), 3)
            for v in xn]
    assert out.tolist() == want
    z = api.zeros((16,), tile.int32).sync()
    assert cdiv_tiles.compile(z.partition((16,)), x, np.int32(s), arch="sm_90")[:4] == b"\x7fELF"


# --- item 11 ---------------------------------------------------------------------------------
X3 = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
TRANSPOSES = {
    "t.transpose()": (), "t.transpose(1, 0, 2)": (1, 0, 2), "t.transpose((2, 0, 1))": (2, 0, 1),
    "t.transpose(-1, 0, 1)": (-1, 0, 1), "tile.transpose(t)": (),
    "tile.transpose(t, (0, 2, 1))": (0, 2, 1), "tile.permute(t, (-1, 0, 1))": (-1, 0, 1),
    "t.permute((1, -1, 0))": (1, -1, 0), "t.T": (),
}


def _kernel3(expr):
    src = (f"import tilejit as tile\n@tile.entry\ndef k(z, x):\n"
           f"    t = x.load((0, 0, 0), (2, 4, 8))\n    z.store({expr})\n")
    ns = {}
    exec(compile(src, f"<{expr}>", "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("expr", list(TRANSPOSES))
def test_transpose_takes_numpys_spellings(expr):
    want = X3.transpose(*TRANSPOSES[expr])
    out = run(_kernel3(expr), want.shape, api.from_numpy(X3).sync())
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("expr,msg", [
    ("t.transpose(0, 1)", r"axes \(0, 1\) is not a permutation of the 3 axes"),
    ("t.transpose(0, 0, 1)", r"axes \(0, 0, 1\) is not a permutation"),
    ("t.transpose(1.0, 0, 2)", r"axes must be constant ints or one constant tuple of ints"),
])
def test_transpose_refuses_what_is_not_a_permutation(expr, msg):
    with pytest.raises(tile.TypingError, match=msg) as e:
        run(_kernel3(expr), (2, 4, 8), api.from_numpy(X3).sync())
    assert ":5:" in str(e.value)


# --- item 12 ---------------------------------------------------------------------------------
@tile.entry
def int_shapes(z, x):
    t = x.load(1, 16) + tile.load(x, 2, 16) + x.partition(16).load(3) + \
        x.load(0, shape=16, padding=tile.PaddingMode.ZERO)
    u = tile.full(16, 1.0, tile.float32) + tile.zeros(16, tile.float32).reshape(16) + \
        tile.ones(1, tile.float32).broadcast_to(16)
    z.store(t + u)


def test_an_int_is_a_one_dimensional_shape():
    xn = np.arange(64, dtype=np.float32)
    out = run(int_shapes, (16,), api.from_numpy(xn).sync())
    np.testing.assert_array_equal(out, xn[16:32] + xn[32:48] + xn[48:64] + xn[:16] + 2)


# --- item 13 ---------------------------------------------------------------------------------
@tile.entry
def enums(z, x, m: tile.Constant[int], n):
    t = x.load((0,), (16,))
    r = t * Color.RED
    if MODE == Color.BLUE:
        r = r + 1
    if m == Color.BLUE:
        r = r + 10
    if n == Color.RED:
        r = r + 100
    if STYLE == Shape.SQUARE:
        r = r + 1000
    z.store(r * (Color.BLUE if m != 2 else 1))


@pytest.mark.parametrize("m,n,add", [(Color.BLUE, 1, 111), (2, Color.RED, 111),
                                     (Color.RED, 2, 1)], ids=["enum-const", "enum-arg", "red"])
def test_enum_constants_compare_in_kernels(m, n, add):
    out = run(enums, (16,), api.from_numpy(X16).sync(), m, n)
    np.testing.assert_array_equal(out, (X16 + add) * (2 if m != 2 else 1))


def test_float8_tiles_can_be_created():
    for d in (tile.float8_e4m3fn, tile.float8_e5m2):
        assert (api.zeros((300,), d).sync().to_numpy().astype(np.float32) == 0).all()
        assert (api.ones((300,), d).sync().to_numpy().astype(np.float32) == 1).all()
