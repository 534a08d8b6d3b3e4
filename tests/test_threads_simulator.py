"""The simulator is as thread-safe as the GPU path: launches, allocations and frees from several
threads at once, every result checked (issue 10: simulated memory tables read outside the lock
used to corrupt tensors and raise internal errors)."""
import gc
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def fill2(z):
    z.store(tile.full(z.shape, 2.0, z.dtype))


@tile.entry
def plus(z, x, c):
    z.store(tile.load_tile_like(x, z) + c)


def _run_threads(targets):
    errors = []

    def wrap(fn, *a):
        try:
            fn(*a)
        except BaseException as e:            # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == [], errors[:3]


def test_launches_and_allocations_from_many_threads():
    fill2(api.empty((64,)).sync().partition((16,))).sync()       # compile once up front
    rng = np.random.default_rng(0)
    datas = [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(2)]

    def launcher(n):
        for _ in range(n):
            out = fill2(api.empty((64,)).sync().partition((16,))).first().unpartition().sync()
            assert (out.to_numpy() == 2.0).all()

    def allocator(data, n):
        for i in range(n):
            t = api.from_numpy(data).sync()
            keep = [api.empty((1000 + i,)).sync() for _ in range(3)]
            del keep
            if i % 5 == 0:
                gc.collect()
            assert np.array_equal(t.to_numpy(), data)

    _run_threads([(launcher, 40)] * 4 + [(allocator, d, 15) for d in datas])


def test_ten_threads_launching_one_kernel():
    x = api.from_numpy(np.arange(256, dtype=np.float32)).sync()
    plus(api.zeros((256,)).sync().partition((64,)), x, 0.0).sync()

    def work(k):
        for j in range(50):
            z = api.zeros((256,)).sync()
            plus(z.partition((64,)), x, float(k * 100 + j)).sync()
            assert np.array_equal(z.to_numpy(), np.arange(256, dtype=np.float32) + k * 100 + j)

    _run_threads([(work, k) for k in range(10)])
