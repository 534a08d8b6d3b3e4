"""``t.transpose(0, 1)`` on a 2-d tile is the identity under NumPy's spelling, which tilejit
follows: a torch/cuTile user's swap would silently do nothing on a square tile, so compiling one
warns (``tile.TransposeWarning``, at the call's file and line) and names the swap (issue 45)."""
import inspect
import warnings

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def identity_method(z, x):
    t = x.load((0, 0), (16, 16))
    z.store(t.transpose(0, 1))


@tile.entry
def identity_function(z, x):
    t = x.load((0, 0), (16, 16))
    z.store(tile.transpose(t, (-2, -1)))


@tile.entry
def real_swaps(z, x):
    t = x.load((0, 0), (16, 16))
    z.store(t.transpose(1, 0) + t.T + t.transpose() + tile.swapaxes(t, 0, 1) +
            t.transpose(axis0=0, axis1=1) + tile.permute(t, (0, 1)) * 0 - 4 * t.T)


@tile.entry
def three_d(z, x):
    t = x.load((0, 0, 0), (2, 4, 8))
    z.store(t.transpose(0, 1, 2))


def _run(kernel, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    z = api.zeros(shape).sync()
    kernel(z.partition(shape), x).sync()
    return x, z.to_numpy()


def _line_of(kernel, text):
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(i for i, s in enumerate(lines) if text in s)


@pytest.mark.parametrize("kernel,text,axes", [(identity_method, "t.transpose(0, 1)", "(0, 1)"),
                                              (identity_function, "tile.transpose(t", "(-2, -1)")])
def test_an_identity_permutation_warns_at_its_line(kernel, text, axes):
    with pytest.warns(tile.TransposeWarning) as record:
        x, got = _run(kernel, (16, 16))
    np.testing.assert_array_equal(got, x)               # NumPy's meaning: unchanged
    (w,) = [r for r in record if issubclass(r.category, tile.TransposeWarning)]
    assert issubclass(tile.TransposeWarning, UserWarning)
    assert w.filename == __file__ and w.lineno == _line_of(kernel, text)
    msg = str(w.message)
    assert f"axes {axes} leaves this 2-d tile unchanged" in msg
    assert "tile.swapaxes(t, 0, 1)" in msg and "t.transpose()" in msg and "t.T" in msg


def test_swaps_and_reversals_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tile.TransposeWarning)
        x, got = _run(real_swaps, (16, 16))
    np.testing.assert_array_equal(got, x.T)


def test_a_3d_identity_warns_too():
    with pytest.warns(tile.TransposeWarning, match="axes \\(0, 1, 2\\) leaves this 3-d tile"):
        x, got = _run(three_d, (2, 4, 8))
    np.testing.assert_array_equal(got, x)


def test_cutile_transpose_swaps_without_a_warning():
    ct = pytest.importorskip("tilejit.cutile")

    @ct.kernel
    def swap(x, z):
        t = ct.load(x, index=(0, 0), shape=(16, 16))
        ct.store(z, index=(0, 0), tile=ct.transpose(t, 0, 1))

    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    z = np.zeros((16, 16), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tile.TransposeWarning)
        ct.launch(tile.Device(0).new_stream(), (1, 1, 1), swap, (x, z))
    np.testing.assert_array_equal(z, x.T)
