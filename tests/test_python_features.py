"""Python in kernels (issue 25 item 1): lambdas, nested functions and ``operator.*``/builtins
as ``reduce``/``scan`` combiners, multi-operand reductions and scans (argmax with its value,
Welford), builtin ``max``/``min``/``abs`` on tiles, ``static_range``/``static_iter``, conditional
expressions and joins of 0-d tiles with numbers, 0-d tiles as loop bounds and indices,
``int()``/``float()``, ``IntEnum`` constants; on the simulator against NumPy."""
import enum
import operator

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")
X = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)


def run(kernel, shape, dtype=tile.float32, x=X, *extra):
    z = api.zeros(shape, dtype).sync()
    kernel(z.partition(shape), api.from_numpy(x).sync(), *extra).sync()
    return z.to_numpy()


@tile.function
def add_fn(a, b):
    return a + b


def test_combiners_lambda_nested_operator_builtin_and_tile_function():
    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        scale = 2.0                                        # a constant a closure may capture

        def scaled_max(a, b):
            return tile.maximum(a, b) * (scale / 2.0)
        r = tile.reduce(t, 1, lambda a, b: a + b, 0.0)
        r = r + tile.reduce(t, 1, operator.add) + tile.reduce(t, 1, add_fn, 0.0)
        r = r + tile.reduce(t, 1, max) + tile.reduce(t, 1, scaled_max, -float("inf"))
        r = r + tile.reduce(t, 1, min) + tile.reduce(t, 1, tile.minimum)
        z.store(r + tile.reduce(t, 1, operator.mul) * 0.0)
    want = 3 * X.sum(1) + 2 * X.max(1) + 2 * X.min(1)
    np.testing.assert_allclose(run(k, (8,)), want, rtol=1e-5, atol=1e-5)


def test_bitwise_and_integer_combiners_and_scans():
    xi = np.random.default_rng(1).integers(0, 1 << 20, (8, 16)).astype(np.int32)

    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        z.store(tile.reduce(t, 1, operator.xor) + tile.reduce(t, 1, operator.or_) * 0 +
                tile.reduce(t, 1, operator.and_) * 0)
    np.testing.assert_array_equal(run(k, (8,), tile.int32, xi),
                                  np.bitwise_xor.reduce(xi, axis=1))

    @tile.entry
    def s(z, x):
        t = x.load((0, 0), (8, 16))
        z.store(tile.scan(t, 1, lambda a, b: a + b, 0) + tile.scan(t, 1, max) * 0)
    np.testing.assert_array_equal(run(s, (8, 16), tile.int32, xi), np.cumsum(xi, axis=1))

    @tile.entry
    def r(z, x):
        t = x.load((0, 0), (8, 16))
        z.store(tile.scan(t, 1, operator.add, reverse=True))
    np.testing.assert_array_equal(run(r, (8, 16), tile.int32, xi),
                                  np.cumsum(xi[:, ::-1], axis=1)[:, ::-1])


def test_argmax_with_its_value():
    x = X.copy()
    x[3, 5] = x[3, 9] = 100.0                               # a tie: the first index wins

    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        idx = tile.arange(16)[None, :]

        def better(v1, i1, v2, i2):
            take = (v1 > v2) | ((v1 == v2) & (i1 < i2))
            return tile.where(take, v1, v2), tile.where(take, i1, i2)
        v, i = tile.reduce((t, idx), 1, better, (-float("inf"), 1 << 30))
        z.store(tile.where(v == tile.max(t, 1), i, -1))
    np.testing.assert_array_equal(run(k, (8,), tile.int32, x), x.argmax(1))


def test_welford_mean_and_variance():
    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))

        def welford(m1, s1, n1, m2, s2, n2):
            n = n1 + n2
            w = tile.where(n == 0.0, 0.0, n2 / tile.where(n == 0.0, 1.0, n))
            d = m2 - m1
            return m1 + d * w, s1 + s2 + d * d * n1 * w, n
        m, s, n = tile.reduce((t, 0.0, 1.0), 1, welford, (0.0, 0.0, 0.0))
        z.store(tile.cat(m[:, None], (s / n)[:, None], 1))
    got = run(k, (8, 2))
    np.testing.assert_allclose(got[:, 0], X.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], X.var(1), rtol=1e-5)


def test_multi_operand_scan_running_argmax():
    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        idx = tile.arange(16)[None, :] + tile.zeros((8, 16), tile.int32)
        v, i = tile.scan((t, idx), 1,
                         lambda v1, i1, v2, i2: (tile.where(v1 >= v2, v1, v2),
                                                 tile.where(v1 >= v2, i1, i2)),
                         (-float("inf"), 0))
        z.store(i)
    want = np.array([[np.argmax(row[:j + 1]) for j in range(16)] for row in X])
    np.testing.assert_array_equal(run(k, (8, 16), tile.int32), want)


@pytest.mark.parametrize("call,match", [
    ("tile.reduce(t, 1, lambda a, b: a + b)", "identity is required"),
    ("tile.reduce(t, 1, operator.xor)", "integer or bool"),
    ("tile.reduce((t, t), 1, operator.add)", "combines one tile"),
    ("tile.reduce(t, 1, lambda a, b: (a, b), 0.0)", "must return 1 value"),
    ("tile.reduce((t, t), 1, lambda a, b, c, d: (a, b), (0.0,))", "need 2 identities"),
    ("tile.reduce(t, 1, 3, 0.0)", "fn must be a lambda"),
])
def test_combiner_refusals(call, match):
    src = ("import operator\nimport tilejit as tile\n@tile.entry\ndef k(z, x):\n"
           "    t = x.load((0, 0), (8, 16))\n"
           f"    r = {call}\n    z.store(tile.zeros((8,), tile.float32))\n")
    ns = {}
    exec(compile(src, "<combiner>", "exec"), ns)
    with pytest.raises(tile.CompileError, match=match):
        run(ns["k"], (8,))


def test_builtin_max_min_abs_on_tiles():
    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        z.store(max(t, 0.0) + min(t, t * 2.0, -1.0) + abs(t) + max(t[:, None], 0.5).reshape((8, 16)))
    with np.errstate(all="ignore"):
        want = np.maximum(X, 0) + np.minimum(np.minimum(X, 2 * X), -1) + np.abs(X) + \
            np.maximum(X, 0.5)
    np.testing.assert_allclose(run(k, (8, 16)), want, rtol=1e-6)


def test_static_range_and_static_iter_unroll():
    x = np.arange(64, dtype=np.float32).reshape(4, 16)

    @tile.entry
    def k(z, x, N: tile.Constant[int]):
        acc = tile.zeros((16,), tile.float32)
        widths = (2, 4, 8)
        for i in tile.static_range(N):                 # i is a constant in each copy
            if i == 1:
                continue
            acc = acc + x.load((i, 0), (1, 16)).reshape((16,))
        for w in tile.static_iter(widths):             # a constant shape per copy
            acc = acc + tile.sum(tile.full((w,), 1.0, tile.float32))
        for v in tile.static_iter((1, 2.5, True)):     # elements of different types
            acc = acc + v
        for i in tile.static_range(3):
            for j in tile.static_range(i, 3):
                acc = acc + tile.full((16,), i * 10 + j, tile.float32)
        z.store(acc)
    want = x[0] + x[2] + x[3] + 14 + 4.5 + (0 + 1 + 2 + 11 + 12 + 22)
    np.testing.assert_array_equal(run(k, (16,), tile.float32, x, 4), want)


def test_static_loops_refuse_break():
    @tile.entry
    def k(z, x, n):
        acc = tile.zeros((16,), tile.float32)
        for i in tile.static_range(3):
            acc = acc + 1.0
            if i == n:
                break
        z.store(acc)
    with pytest.raises(tile.UnsupportedError, match="break and return are not supported"):
        run(k, (16,), tile.float32, np.zeros(16, np.float32), 3)


def test_static_loops_refuse_runtime_bounds():
    @tile.entry
    def k(z, x, n):
        acc = tile.zeros((16,), tile.float32)
        for i in tile.static_range(n):
            acc = acc + 1.0
        z.store(acc)
    with pytest.raises(tile.UnsupportedError, match="compile-time constant"):
        run(k, (16,), tile.float32, np.zeros(16, np.float32), 3)


def test_conditional_expressions_and_joins_of_0d_tiles_with_numbers():
    @tile.entry
    def k(z, x, flag):
        t = x.load((0, 0), (8, 16))
        m = tile.max(t)                               # a 0-d tile
        v = m if flag > 0 else 1.0                    # joins a 0-d tile with a number
        if flag > 1:
            w = 2.0
        else:
            w = tile.min(t)
        u = t if flag > 0 else 0.0                    # a tile with a number: broadcast
        z.store(u + v + w + tile.where(t > 0, 1.0 if flag > 5 else 2.0, 0.0))
    for flag in (0, 1, 2, 7):
        got = run(k, (8, 16), tile.float32, X, flag)
        v = X.max() if flag > 0 else 1.0
        w = 2.0 if flag > 1 else X.min()
        u = X if flag > 0 else 0.0
        want = u + v + w + np.where(X > 0, 1.0 if flag > 5 else 2.0, 0.0)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_0d_tiles_as_loop_bounds_indices_and_numbers():
    x = np.arange(64, dtype=np.float32)

    @tile.entry
    def k(z, x):
        t = x.load((0,), (16,))
        n = tile.sum(t < 4.0)                         # 0-d int tile: 4
        acc = tile.zeros((16,), tile.float32)
        for i in range(n):
            acc = acc + 1.0
        row = tile.sum(t == 2.0)                      # 0-d int tile: 1
        acc = acc + x.load((row,), (16,))             # the second 16 elements
        z.store(acc + float(tile.max(t)) + int(tile.max(t) / 2.0) + len((1, 2)) +
                ((0,) * 3)[2])
    want = 4 + x[16:32] + 15 + 7 + 2
    np.testing.assert_array_equal(run(k, (16,), tile.float32, x), want)


class Mode(enum.IntEnum):
    SUM = 1
    MAX = 2


def test_intenum_constants_compare():
    @tile.entry
    def k(z, x, mode: tile.Constant[int]):
        t = x.load((0, 0), (8, 16))
        if mode == Mode.SUM:
            z.store(tile.sum(t, 1))
        else:
            z.store(tile.max(t, 1))
    np.testing.assert_allclose(run(k, (8,), tile.float32, X, Mode.SUM), X.sum(1), rtol=1e-5)
    np.testing.assert_allclose(run(k, (8,), tile.float32, X, Mode.MAX), X.max(1))


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_tileiras_accepts_combiners_and_static_loops(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")

    @tile.entry
    def k(z, x):
        t = x.load((0, 0), (8, 16))
        idx = tile.arange(16)[None, :] + tile.zeros((8, 16), tile.int32)
        v, i = tile.reduce((t, idx), 1, lambda v1, i1, v2, i2: (
            tile.where(v1 > v2, v1, v2), tile.where(v1 > v2, i1, i2)), (-float("inf"), 0))
        acc = v + tile.reduce(t, 1, operator.add) + max(v, 0.0)
        for j in tile.static_range(2):
            acc = acc + j
        z.store(acc + tile.sum(tile.scan(t, 1, lambda a, b: a + b, 0.0), 1))
    z = api.zeros((8,)).sync()
    assert k.compile(z.partition((8,)), api.from_numpy(X).sync(), arch="sm_90")[:4] == \
        b"\x7fELF"
