"""The 'never run' warning on the GPU, where plain launches run entirely in C (_native.c): the C
sync_on/submit_on set the op's ran slot and the C finalizer warns only for launches that never
ran (tests/test_never_run.py covers the Python paths on the simulator)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api, native

from test_never_run import _never_run_warnings

pytestmark = pytest.mark.gpu


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def _never_run(fn):
    return [str(w.message) for w in _never_run_warnings(fn)]


def test_c_launches_that_ran_do_not_warn_and_forgotten_ones_do():
    if not native.enabled():
        pytest.skip("the C launch path is not active (python -m tilejit info)")
    n = 1 << 16
    x = api.ones((n,)).sync()
    y = api.full((n,), 2.0).sync()
    z = api.zeros((n,)).sync()
    s = tile.Device(0).new_stream()
    add(z.partition((1024,)), x, y).sync()          # compiles (Python path), then C from here
    before = add._native.total

    def ran():
        for _ in range(1000):
            add(z.partition((1024,)), x, y).submit_on(s)
        add(z.partition((1024,)), x, y).sync_on(s)
        add(z.partition((1024,)), x, y).sync()

    assert _never_run(ran) == []
    assert add._native.total - before >= 1001       # those launches took the C path
    assert np.all(z.to_numpy() == 3.0)

    def forgot():
        add(z.partition((1024,)), x, y)

    (msg,) = _never_run(forgot)
    assert "launch add(" in msg and "call .sync()" in msg
