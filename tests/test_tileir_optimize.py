"""The IR clean-ups of tileir/optimize.py: fma contraction, loop-invariant hoisting and transposed
loads through permuted views. Each is pinned in the Tile IR and checked on the simulator."""
import re

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from sample_arrays import rand

pytestmark = pytest.mark.usefixtures("simulator_backend")


def dev(a):
    return api.from_numpy(a).sync()


def ops_in(ir: str):
    return re.findall(r"= (\w+) ", ir)


def _axpy_body(z, x, y, w):
    a, b, c = tile.load_tile_like(x, z), tile.load_tile_like(y, z), tile.load_tile_like(w, z)
    z.store(a * b + c - a * c + (c - a * b))


axpy = tile.entry(_axpy_body)
axpy_nofma = tile.entry(fma=False)(_axpy_body)


def test_products_fuse_into_fma_unless_disabled():
    xs = [rand(64, seed=s) for s in range(3)]
    z = api.zeros((64,)).sync()
    args = (z.partition((64,)), *map(dev, xs))
    ir = axpy.inspect_tileir(*args)
    assert ops_in(ir).count("fma") == 3 and "mulf" not in ops_in(ir)
    plain = axpy_nofma.inspect_tileir(*args)
    assert "fma" not in ops_in(plain) and ops_in(plain).count("mulf") == 3
    a, b, c = xs
    ref = a * b + c - a * c + (c - a * b)
    axpy(*args).sync()
    np.testing.assert_allclose(z.to_host().sync(), ref, rtol=1e-5, atol=1e-6)
    axpy_nofma(*args).sync()
    np.testing.assert_array_equal(z.to_host().sync(), ref)   # two roundings, like NumPy


@tile.entry
def shared_product(z, x, y):
    a, b = tile.load_tile_like(x, z), tile.load_tile_like(y, z)
    p = a * b
    z.store((p + a) * (p + b))


def test_a_product_used_twice_is_kept():
    ir = shared_product.inspect_tileir(api.zeros((64,)).sync().partition((64,)),
                                       dev(rand(64)), dev(rand(64, seed=1)))
    assert "fma" not in ops_in(ir)


@tile.entry
def scaled_sum(z, x, s):
    acc = tile.zeros(z.shape, tile.float32)
    for k in range(x.shape[0] // z.shape[0]):
        acc = tile.maximum(acc, x.load((k,), z.shape) * s)
    z.store(acc)


def test_loop_invariant_broadcasts_leave_the_loop():
    xn = rand(256)
    z = api.zeros((64,)).sync()
    ir = scaled_sum.inspect_tileir(z.partition((64,)), dev(xn), 2.0)
    body = ir[ir.index("= for "):]
    assert "broadcast" not in body and "reshape" not in body
    scaled_sum(z.partition((64,)), dev(xn), 2.0).sync()
    np.testing.assert_allclose(z.to_host().sync(),
                               np.maximum(0, (xn.reshape(4, 64) * 2).max(0)), rtol=1e-6)


@tile.entry
def kt_2d(z, k):
    z.store(k.load((z.block[1], z.block[0]), (z.shape[1], z.shape[0])).T)


@tile.entry
def kt_3d(z, k):
    BN, D = z.shape[1], z.shape[0]
    t = k.load((0, z.block[1], 0), (1, BN, D)).reshape((BN, D))
    z.store(t.T)


@tile.entry
def kt_used_twice(z, k):
    t = k.load((z.block[1], z.block[0]), (z.shape[1], z.shape[0]))
    z.store(t.T + tile.sum(t))


def test_transposed_loads_read_through_permuted_views():
    kn = rand((64, 32))
    z = api.zeros((32, 64)).sync()
    ir = kt_2d.inspect_tileir(z.partition((16, 32)), dev(kn))
    assert "permute" not in ops_in(ir) and "dim_map=[1, 0]" in ir
    kt_2d(z.partition((16, 32)), dev(kn)).sync()
    np.testing.assert_array_equal(z.to_host().sync(), kn.T)
    k3 = rand((1, 64, 32), seed=2)
    z = api.zeros((32, 64)).sync()
    ir = kt_3d.inspect_tileir(z.partition((32, 16)), dev(k3))
    assert "permute" not in ops_in(ir) and "dim_map=[0, 2, 1]" in ir
    kt_3d(z.partition((32, 16)), dev(k3)).sync()
    np.testing.assert_array_equal(z.to_host().sync(), k3[0].T)


def test_a_loaded_tile_used_elsewhere_is_permuted_in_registers():
    kn = rand((64, 32))
    z = api.zeros((32, 64)).sync()
    ir = kt_used_twice.inspect_tileir(z.partition((16, 32)), dev(kn))
    assert "permute" in ops_in(ir)
    kt_used_twice(z.partition((16, 32)), dev(kn)).sync()
    out = z.to_host().sync()
    tiles = kn.T.reshape(2, 16, 2, 32)
    ref = tiles + kn.reshape(2, 32, 2, 16).transpose(2, 0, 3, 1).sum((2, 3))[:, None, :, None]
    np.testing.assert_allclose(out, ref.reshape(32, 64), rtol=1e-5)


@tile.entry
def _store_every_other(out, x, y, N: tile.Constant[int]):
    acc = tile.zeros((16,), tile.float32)
    for i in range(N):
        if i % 2 == 0:
            t = tile.load(x, (i,), (16,))
            tile.store(out, (i,), t * 2.0)
            acc += t
    tile.store(y, (0,), acc)


def test_a_loop_carries_only_what_it_changes():
    # the tokens of arrays the loop never writes were threaded through the loop and its `if`,
    # handed on unchanged; now the loop carries the accumulator and the stored array's tokens
    x = dev(np.arange(64, dtype=np.float32))
    out, y = api.zeros((64,)).sync(), api.zeros((16,)).sync()
    args = (tile.writable(out), x, tile.writable(y), 4)
    ir = _store_every_other.inspect_tileir(*args)
    header = next(line for line in ir.splitlines() if re.search(r"\bfor %", line))
    assert header.endswith("-> (tile<16xf32>, token, token) {"), header
    _store_every_other(*args).grid(1).sync()
    want = np.zeros(64, np.float32)
    for i in (0, 2):
        want[16 * i:16 * i + 16] = 2 * np.arange(16 * i, 16 * i + 16)
    np.testing.assert_array_equal(out.to_numpy(), want)
    np.testing.assert_array_equal(y.to_numpy(), np.arange(16) * 2 + 32)
