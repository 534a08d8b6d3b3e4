"""``CompileOptions(plain_helpers=True)``: undecorated Python functions a kernel calls are inlined
like ``@tile.function`` helpers (cuTile Python's rule; ``tilejit.cutile`` kernels use it).
Without the option calling one stays an error (test_errors_frontend)."""
import sys
import types

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.typing import type_kernel

pytestmark = pytest.mark.usefixtures("simulator_backend")
PLAIN = tile.CompileOptions(plain_helpers=True)
P1 = ("partition", "float32", 1, None, (16,))
T1 = ("tensor", "float32", 1, None, False)


def add_one(t):
    return t + 1.0


def scaled(t, by=2.0):                  # calls another plain function; a default argument
    return add_one(t) * by


helpers = types.ModuleType("helpers")   # reached as a module attribute: helpers.negate(t)
helpers.negate = lambda t: -t
sys.modules.setdefault("helpers_for_test_plain_helpers", helpers)


def kernel(z, x):
    t = tile.load_tile_like(x, z)
    z.store(helpers.negate(scaled(t, by=3.0)))


def run(k, n=32):
    x = np.arange(n, dtype=np.float32)
    z = api.zeros((n,)).sync()
    k(z.partition((16,)), x).compile_options(PLAIN).sync()
    return x, z.to_numpy()


def test_plain_functions_are_inlined_with_the_option():
    x, z = run(tile.entry(kernel))
    np.testing.assert_array_equal(z, -(x + 1) * 3)


def test_without_the_option_a_plain_function_is_still_an_error():
    with pytest.raises(tile.UnsupportedError, match="'scaled' is a plain Python function"):
        type_kernel(kernel, [P1, T1])
    assert type_kernel(kernel, [P1, T1], plain_helpers=True).return_type is not None


def recursive(t):
    return recursive(t)


def calls_recursive(z, x):
    z.store(recursive(tile.load_tile_like(x, z)))


def numpy_inside(z, x):
    z.store(np.sum(tile.load_tile_like(x, z)))


def test_recursion_and_numpy_functions_are_still_rejected():
    with pytest.raises(tile.UnsupportedError, match="recursion is not supported.*recursive"):
        type_kernel(calls_recursive, [P1, T1], plain_helpers=True)
    # NumPy's own Python functions are never inlined: the NumPy message names the fix
    with pytest.raises(tile.CompileError, match="NumPy function"):
        type_kernel(numpy_inside, [P1, T1], plain_helpers=True)


def bad_line(t):
    return t.no_such_method()


def calls_bad_line(z, x):
    z.store(bad_line(tile.load_tile_like(x, z)))


def test_an_error_inside_a_plain_helper_names_its_line():
    with pytest.raises(tile.CompileError) as info:
        type_kernel(calls_bad_line, [P1, T1], plain_helpers=True)
    assert info.value.loc.filename == __file__
    assert "no_such_method" in info.value.loc.source_line()


def offset(t):
    return t + 1.0


def uses_offset(z, x):
    z.store(offset(tile.load_tile_like(x, z)))


def test_a_redefined_plain_helper_recompiles():
    global offset
    k = tile.entry(uses_offset)
    x, z = run(k)
    np.testing.assert_array_equal(z, x + 1)
    saved = offset
    try:
        def offset(t):                  # noqa: F811  (a notebook cell run again, edited)
            return t + 7.0
        with pytest.warns(RuntimeWarning, match="offset"):
            x, z = run(k)
        np.testing.assert_array_equal(z, x + 7)
    finally:
        offset = saved
