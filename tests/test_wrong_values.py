"""Ordinary code that gave wrong values without an error (issue 44, found by cuTile Python's own
test suite): ``==``/``!=``/``in`` on tuples of run-time values, ``ct.transpose(t, 0, 0)``,
``argmin``/``argmax`` ignoring NaNs. Each is checked in tilejit's front end and, where the
spelling is cuTile's, through ``tilejit.cutile``."""
import math

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _per_block(kernel, blocks, *params, shape=None):
    out = api.zeros(shape or (blocks,), tile.int32).sync()
    grid = blocks if isinstance(blocks, tuple) else (blocks, 1, 1)
    kernel(tile.atomic(out), *params).grid(grid + (1,) * (3 - len(grid))).sync()
    return out.to_numpy().tolist()


# --- tuples ---------------------------------------------------------------------------------------
@tile.entry
def _tuple_tests(out, p: int):
    b = tile.bid(0)
    v = 0
    if (b, 1) == (0, 1):
        v += 1
    if (b, p) != (1, 7):
        v += 2
    if ((b, 1), 2) == ((2, 1), 2):
        v += 4
    if b in (0, 2):
        v += 8
    if b not in (1, p):
        v += 16
    if (b, 1) in ((0, 1), (3, 1)):
        v += 32
    if (b, 1) == (b, 1, 2):             # lengths differ: False, decided by the types
        v += 64
    if 2 in (2, b):                     # a constant match ends the search
        v += 128
    tile.scatter(out, b, v)


def _tuple_tests_ref(b, p):
    v = 0
    v += 1 if (b, 1) == (0, 1) else 0
    v += 2 if (b, p) != (1, 7) else 0
    v += 4 if ((b, 1), 2) == ((2, 1), 2) else 0
    v += 8 if b in (0, 2) else 0
    v += 16 if b not in (1, p) else 0
    v += 32 if (b, 1) in ((0, 1), (3, 1)) else 0
    v += 64 if (b, 1) == (b, 1, 2) else 0
    v += 128 if 2 in (2, b) else 0
    return v


@pytest.mark.parametrize("p", [7, 3])
def test_tuple_comparisons_of_run_time_values(p):
    # were Python comparisons of the lowering's value objects: always False
    assert _per_block(_tuple_tests, 4, p) == [_tuple_tests_ref(b, p) for b in range(4)]


@ct.kernel
def _ct_tuple_2d(x):
    a = ct.bid(0)
    b = ct.bid(1)
    if (a, b) == (0, 0):
        ct.scatter(x, (a, b), 1)
    else:
        ct.scatter(x, (a, b), -1)


def test_cutile_tuple_of_block_ids():
    x = api.zeros((2, 2), tile.int32).sync()
    ct.launch(tile.Device(0).new_stream(), (2, 2), _ct_tuple_2d, (tile.atomic(x),))
    assert x.to_numpy().tolist() == [[1, -1], [-1, -1]]


def _typing_error(source, match):
    ns = {"tile": tile}
    exec(compile(source, "<kernel>", "exec"), ns)
    out = api.zeros((4,), tile.int32).sync()
    with pytest.raises(tile.TypingError, match=match):
        ns["k"](tile.atomic(out)).grid((1, 1, 1)).sync()


def test_tuple_comparison_of_tiles_is_refused():
    _typing_error("@tile.entry\ndef k(out):\n    t = tile.ones((4,), tile.int32)\n"
                  "    if (t,) == (t,):\n        tile.scatter(out, 0, 1)\n",
                  "not supported for non-scalar elements")


def test_in_with_a_tile_before_the_match_is_refused():
    _typing_error("@tile.entry\ndef k(out):\n    t = tile.ones((4,), tile.int32)\n"
                  "    if 2 in (t, 2):\n        tile.scatter(out, 0, 1)\n",
                  "'in' requires scalar operands")


# --- transpose ------------------------------------------------------------------------------------
@ct.kernel
def _ct_transpose(x, y, A0: ct.Constant[int], A1: ct.Constant[int]):
    t = ct.load(x, index=(0, 0, 0), shape=(2, 4, 8))
    ct.store(y, index=(0, 0, 0), tile=ct.transpose(t, A0, A1))


@pytest.mark.parametrize("axes", [(0, 0), (1, 1), (0, 2), (2, 1), (-1, 0)])
def test_cutile_transpose_swaps_the_axes_it_is_given(axes):
    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    want = np.swapaxes(x, *axes)
    y = api.zeros(want.shape, tile.float32).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), _ct_transpose, (x, tile.atomic(y), *axes))
    assert np.array_equal(y.to_numpy(), want)       # (0, 0) was (1, 0): a transposed tile


@tile.entry
def _swapaxes(z, x):
    z.store(x.load((0, 0), (4, 8)).swapaxes(0, 1))


def test_swapaxes():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    z = api.zeros((8, 4), tile.float32).sync()
    _swapaxes(z.partition((8, 4)), x).sync()
    assert np.array_equal(z.to_numpy(), x.T)


# --- argmin / argmax without NaN propagation ------------------------------------------------------
NAN, INF = math.nan, math.inf
ROWS = np.array([[3.0, 0.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0],
                 [3.0, INF, NAN, 1.5, 5.0, -2.0, 2.0, 6.0],
                 [NAN, NAN, 7.0, 1.0, NAN, 8.0, NAN, 0.5],
                 [5.0, -3.0, 2.0, NAN, 4.0, 0.0, -INF, 1.0],
                 [NAN] * 8], np.float32)


def _ignoring_nan(fn, rows):
    """NumPy's nanargmin/nanargmax, with 0 for an all-NaN row."""
    return [0 if np.isnan(r).all() else int(fn(r)) for r in rows]


@pytest.mark.parametrize("kind", ["argmin", "argmax"])
@pytest.mark.parametrize("propagate_nan", [False, True])
def test_arg_reductions_and_nan(kind, propagate_nan):
    op = getattr(ct, kind)

    @ct.kernel
    def k(inp, out):
        t = ct.load(inp, index=(0, 0), shape=(8, 8), padding_mode=ct.PaddingMode.NAN)
        ct.store(out, index=(0,), tile=op(t, axis=1, propagate_nan=propagate_nan))

    out = api.zeros((5,), tile.int32).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), k, (ROWS, tile.atomic(out)))
    if propagate_nan:       # NumPy's argmin/argmax: the first NaN wins
        want = [int(getattr(np, kind)(r)) for r in ROWS]
    else:                   # a NaN's index was returned when the row started with NaNs
        want = _ignoring_nan(getattr(np, "nan" + kind), ROWS)
    assert out.to_numpy().tolist() == want


def test_arg_reduction_ignoring_nan_compiles_with_tileiras():
    from tilejit.toolchain import tileiras
    try:
        tileiras.find_toolchain()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"tileiras is not installed ({e})")

    @tile.entry
    def k(z, x):
        z.store(tile.argmin(x.load((0, 0), (8, 8)), 1, propagate_nan=False))

    z = api.zeros((8,), tile.int32).sync()
    assert len(k.compile(z.partition((8,)), ROWS[:4].repeat(2, 0), arch="sm_90")) > 0


# --- NumPy scalar conversions (were internal errors) ----------------------------------------------
@tile.entry
def _numpy_scalars(out, f: float, i: int):
    tile.scatter(out, 0, np.float32(2.5) + np.float32(f))
    tile.scatter(out, 1, np.int8(100) + 0.5)
    tile.scatter(out, 2, np.float32(i) / 2)


def test_numpy_scalar_calls():
    out = api.zeros((3,), tile.float32).sync()
    _numpy_scalars(tile.atomic(out), 1.25, 3).grid((1, 1, 1)).sync()
    assert out.to_numpy().tolist() == [3.75, 100.5, 1.5]


@ct.kernel
def _ct_full_of_numpy_scalar(x):
    ct.store(x, index=(0,), tile=ct.full((4,), np.float32(2.5), dtype=ct.float32))


def test_cutile_full_of_a_numpy_scalar():
    x = api.zeros((4,), tile.float32).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), _ct_full_of_numpy_scalar, (tile.atomic(x),))
    assert x.to_numpy().tolist() == [2.5] * 4


def test_numpy_scalar_overflow_is_a_compile_error():
    _typing_error("import numpy as np\n@tile.entry\ndef k(out):\n"
                  "    tile.scatter(out, 0, np.int8(300))\n", "out of bounds for int8")


# --- a cuTile `bool` parameter given an int keeps the int (it was used as 1) ----------------------
@ct.kernel
def _bool_param(x, condition0: bool, T: ct.Constant[int]):
    xi = ct.load(x, index=(ct.bid(0),), shape=(T,))
    cond = condition0 if condition0 else 100
    ct.store(x, index=(ct.bid(0),), tile=xi + cond)


@pytest.mark.parametrize("c, want", [(5, 5.0), (0, 100.0)])
def test_cutile_bool_parameter_takes_the_arguments_type(c, want):
    x = api.zeros((8,), tile.float32).sync()
    ct.launch(tile.Device(0).new_stream(), (2,), _bool_param, (tile.atomic(x), c, 4))
    assert x.to_numpy().tolist() == [want] * 8


@pytest.mark.parametrize("c", [True, False])
def test_cutile_bool_argument_is_a_bool_tile(c):
    """A Python bool is a strong bool_ value in cuTile: ``c if c else 100`` mixes bool_ and
    int32 on two paths, which cuTile refuses too (its type depends on the path taken)."""
    x = api.zeros((8,), tile.float32).sync()
    with pytest.raises(tile.TypingError, match="depends on path"):
        ct.launch(tile.Device(0).new_stream(), (2,), _bool_param, (tile.atomic(x), c, 4))


# --- a helper chosen through a variable assigned in two branches (the first one was always
# --- called) -------------------------------------------------------------------------------------
@tile.function
def _plus(a):
    return a + 1


@tile.function
def _times(a):
    return a * 10


@tile.entry
def _by_constant(out, M: tile.Constant[int]):
    if M == 0:
        f = _plus
    else:
        f = _times
    tile.scatter(out, 0, f(5))


@tile.entry
def _reassigned(out):
    f = _plus
    y = f(5)
    f = _times
    tile.scatter(out, 1, f(y))


def test_helper_chosen_by_a_constant_branch_or_reassigned():
    out = api.zeros((2,), tile.int32).sync()
    _by_constant(tile.atomic(out), 1).grid((1, 1, 1)).sync()
    _reassigned(tile.atomic(out)).grid((1, 1, 1)).sync()
    assert out.to_numpy().tolist() == [50, 60]
    _by_constant(tile.atomic(out), 0).grid((1, 1, 1)).sync()
    assert out.to_numpy().tolist() == [6, 60]


def test_helper_chosen_at_run_time_is_a_clear_error():
    ns = {"tile": tile, "_plus": _plus, "_times": _times}
    src = ("@tile.entry\ndef k(out, c: int):\n    if c == 0:\n        f = _plus\n    else:\n"
           "        f = _times\n    tile.scatter(out, 0, f(5))\n")
    exec(compile(src, "<kernel>", "exec"), ns)
    out = api.zeros((1,), tile.int32).sync()
    with pytest.raises(tile.UnsupportedError, match="names a different function on different"):
        ns["k"](tile.atomic(out), 1).grid((1, 1, 1)).sync()


@ct.kernel
def _ct_transpose_method(x, y):
    t = ct.load(x, index=(0, 0, 0), shape=(2, 4, 8))
    ct.store(y, index=(0, 0, 0), tile=t.transpose(axis0=2, axis1=1))


def test_cutile_transpose_method_with_axis_keywords():
    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    y = api.zeros((2, 8, 4), tile.float32).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), _ct_transpose_method, (x, tile.atomic(y)))
    assert np.array_equal(y.to_numpy(), np.swapaxes(x, 1, 2))
