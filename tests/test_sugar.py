"""cuTile Python's statement forms rewritten before Numba reads a kernel (typing/sugar.py):
``with`` over ``@contextlib.contextmanager`` functions, tuple comprehensions over
``static_iter``, ``and``/``or`` values as bools in ``ct.kernel``s; and ``static_iter`` over
``range``/``enumerate``/``zip`` and over tuples built by other static loops (typing/unroll.py)."""
from contextlib import contextmanager

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _run(kernel, *args, grid=(1,)):
    s = tile.Device(0).new_stream()
    ct.launch(s, grid, kernel, args)
    s.synchronize()


def log(x, val):
    """Append ``val`` to the log ``x`` (x[0] counts the entries)."""
    i = ct.gather(x, 0) + 1
    ct.scatter(x, 0, i)
    ct.scatter(x, i, val)


@contextmanager
def bracket(x, start, end):
    log(x, start)
    yield start
    log(x, end)


@contextmanager
def twice(x, a, b, c, d):
    log(x, a)
    with bracket(x, b, c) as got:
        yield got + 1
    log(x, d)


# --- with -----------------------------------------------------------------------------------------
@ct.kernel
def with_nested(x):
    log(x, 10)
    with bracket(x, 20, 30) as v:
        ct.static_assert(v == 20)               # the yielded value is still a constant
        with twice(x, 40, 50, 60, 70) as w:
            ct.static_assert(w == 51)
            log(x, 99)
    log(x, 80)


def test_with_runs_enter_body_and_exit_in_order():
    x = np.zeros(12, np.int32)
    _run(with_nested, x)
    assert x.tolist() == [9, 10, 20, 40, 50, 99, 60, 70, 30, 80, 0, 0]


@ct.kernel
def with_break(x):
    i = 0
    while True:
        with bracket(x, 100 + i, 200 + i):
            with bracket(x, 300 + i, 400 + i):
                log(x, i)
                if i == 1:
                    break
        i += 1


@ct.kernel
def with_continue_and_return(x, stop):
    i = 0
    while i < 2:
        with bracket(x, 1, 2):
            i += 1
            continue
    with bracket(x, 3, 4):
        if stop:
            return
        log(x, 5)


def test_break_continue_and_return_leave_every_context_innermost_first():
    x = np.zeros(12, np.int32)
    _run(with_break, x)
    assert x.tolist() == [10, 100, 300, 0, 400, 200, 101, 301, 1, 401, 201, 0]
    for stop, want in ((True, [6, 1, 2, 1, 2, 3, 4, 0]), (False, [7, 1, 2, 1, 2, 3, 5, 4])):
        x = np.zeros(8, np.int32)
        _run(with_continue_and_return, x, stop)
        assert x.tolist() == want


@tile.function
def tlog(x, val):
    tile.atomic_add(x, 0, 1)
    tile.atomic_xchg(x, tile.gather(x, 0), val)


@contextmanager
def entry_bracket(x, a, b):
    tlog(x, a)
    yield
    tlog(x, b)


@tile.entry
def entry_with(x):
    with entry_bracket(x, 1, 3):
        tlog(x, 2)


def test_with_in_a_tile_entry_kernel():
    x = api.zeros((6,), tile.int32).sync()
    entry_with(tile.atomic(x)).grid((1,)).sync()
    assert x.to_numpy().tolist() == [3, 1, 2, 3, 0, 0]


@contextmanager
def two_yields(x):
    yield
    yield


@contextmanager
def no_yield(x):
    log(x, 1)


@contextmanager
def yield_in_if(x, flag):
    if flag:
        yield


@contextmanager
def returns(x):
    if ct.bid(0) == 1:
        return
    yield


@contextmanager
def late_closure(x, a):
    def f():
        log(x, a)
    yield f
    a += 1


def _kernel_with(cm):
    @ct.kernel
    def k(x):
        with cm(x):
            log(x, 7)
    return k


@pytest.mark.parametrize("cm, error, match", [
    (two_yields, tile.TypingError, "must have one `yield` statement"),
    (no_yield, tile.TypingError, "no reachable `yield` statement"),
    (lambda x: yield_in_if(x, True), tile.UnsupportedError, "take a @contextlib.contextmanager"),
    (returns, tile.UnsupportedError, "Returning from a generator-based context manager"),
])
def test_context_manager_errors(cm, error, match):
    with pytest.raises(error, match=match):
        _run(_kernel_with(cm), np.zeros(4, np.int32))


def test_a_yield_inside_an_if_is_refused():
    @ct.kernel
    def k(x):
        with yield_in_if(x, True):
            log(x, 7)
    with pytest.raises(tile.TypingError, match="outside of loops and conditional statements"):
        _run(k, np.zeros(4, np.int32))


def test_a_closure_that_reads_a_variable_assigned_after_the_yield_is_refused():
    # Python's closure would see a + 1 after the with; a captured value would not: refused
    @ct.kernel
    def k(x):
        with late_closure(x, 10) as f:
            f()
    with pytest.raises(tile.UnsupportedError, match="reads 'a', which it assigns after"):
        _run(k, np.zeros(4, np.int32))


# --- tuple comprehensions -------------------------------------------------------------------------
@ct.kernel
def comprehensions(x, y):
    tiles = tuple(ct.load(x, (i,), (4,)) for i in ct.static_iter(range(3)))
    picked = tuple(t * k for i, t in ct.static_iter(enumerate(tiles)) if i != 1
                   for k in ct.static_iter((1, 10)))
    for i, t in ct.static_iter(enumerate(picked)):
        ct.store(y, (i,), t)


def test_tuple_comprehensions_over_static_iter():
    x = np.arange(12, dtype=np.int32)
    y = np.zeros(16, np.int32)
    _run(comprehensions, x, y)
    a, c = x[:4], x[8:]
    np.testing.assert_array_equal(y, np.concatenate([a, a * 10, c, c * 10]))


@ct.kernel
def nested_comprehension(y):
    rows = tuple(tuple(i * 2 for i in ct.static_iter(range(j))) for j in ct.static_iter(range(4)))
    i = 99
    _ = tuple(t for i, t in ct.static_iter(enumerate(rows)))     # i does not leak
    k = 0
    for row in ct.static_iter(rows):
        for v in ct.static_iter(row):
            ct.scatter(y, k, v)
            k += 1
    ct.scatter(y, 6, i)


def test_nested_comprehensions_and_scoping():
    y = np.zeros(7, np.int32)
    _run(nested_comprehension, y)
    assert y.tolist() == [0, 0, 2, 0, 2, 4, 99]


def test_comprehension_errors():
    @ct.kernel
    def later_name(y):
        _ = tuple(i + j for i in ct.static_iter(range(3)) for j in ct.static_iter(range(n))
                  for n in ct.static_iter(range(4)))  # noqa: F821
        ct.scatter(y, 0, 1)

    @ct.kernel
    def not_static(y):
        _ = tuple(i for i in range(3))
        ct.scatter(y, 0, 1)

    @ct.kernel
    def bare_genexpr(y):
        ct.scatter(y, 0, sum(i for i in ct.static_iter(range(3))))

    y = np.zeros(1, np.int32)
    with pytest.raises(tile.UnsupportedError, match="Undefined variable n used"):
        _run(later_name, y)
    with pytest.raises(tile.UnsupportedError, match=r"must be wrapped in ct.static_iter\(\)"):
        _run(not_static, y)
    with pytest.raises(tile.UnsupportedError, match="generator expressions are not supported"):
        _run(bare_genexpr, y)


# --- static_iter sequences ------------------------------------------------------------------------
@ct.kernel
def sequences(x, y):
    a, b, c = ct.load(x, (0,), (4,)), ct.load(x, (1,), (4,)), ct.load(x, (2,), (4,))
    tiles = (a, b, c)
    s = ct.zeros((4,), dtype=ct.int32)
    for i, t in ct.static_iter(enumerate(tiles, 1)):
        s += i * t
    for i in ct.static_iter(range(len(tiles))):
        s += tiles[i]
    for k, t in ct.static_iter(zip(range(2, 4), (b, c))):
        s += k * t
    doubled = ()
    for t in ct.static_iter(tiles):
        doubled += (t, t)
    for t in ct.static_iter(doubled):         # a tuple grown by a static loop: 6 items
        s += t
    ct.store(y, (0,), s)


def test_static_iter_over_range_enumerate_zip_and_grown_tuples():
    x = np.arange(12, dtype=np.int32)
    y = np.zeros(4, np.int32)
    _run(sequences, x, y)
    a, b, c = x[:4], x[4:8], x[8:]
    np.testing.assert_array_equal(y, (a + 2 * b + 3 * c) + (a + b + c) + (2 * b + 3 * c) +
                                  2 * (a + b + c))


def test_static_iter_has_cuTiles_iteration_limit():
    @ct.kernel
    def k(y):
        for i in ct.static_iter(range(100000)):
            ct.scatter(y, 0, i)
    with pytest.raises(tile.StaticEvalError, match=r"Maximum number of iterations \(1000\)"):
        _run(k, np.zeros(1, np.int32))


# --- and / or -------------------------------------------------------------------------------------
@ct.kernel
def and_or_values(x, c0, c1, c2, T: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(T,))
    cond = (c0 or c1) and c2                      # int32 and bool operands: a bool, as cuTile
    if cond:
        t += 1
    ct.store(x, index=(0,), tile=t)


@pytest.mark.parametrize("c0, c1, c2", [(1, False, True), (0, 5, -5), (True, 0, 3),
                                        (False, 0, True), (2, 3, 0)])
def test_and_or_values_are_bools_in_ct_kernels(c0, c1, c2):
    x = np.zeros(4, np.float32)
    _run(and_or_values, x, c0, c1, c2, 4)
    np.testing.assert_array_equal(x, float(bool((c0 or c1) and c2)))


@pytest.mark.parametrize("kernel, args", [
    (with_break, (np.zeros(12, np.int32),)),
    (with_continue_and_return, (np.zeros(8, np.int32), True)),
    (comprehensions, (np.zeros(12, np.int32), np.zeros(16, np.int32))),
    (sequences, (np.zeros(12, np.int32), np.zeros(4, np.int32))),
])
def test_tileiras_compiles_the_rewritten_kernels(kernel, args):
    from tilejit.toolchain import tileiras
    try:
        tileiras.find_toolchain()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"tileiras is not installed ({e})")
    assert len(kernel.compile(*args, arch="sm_90")) > 0
