"""Blocks that synchronize through memory, thousands at a time (issue 21): spin locks (acquire /
release atomics), ticket counters, a ticket lock spinning on an ordered load, exact atomic
counters, the gallery's split-KV decode and one-launch split-K matmul (arrival counters), and
the gallery's LayerNorm backward, whose dw/db partial sums are added under locks."""
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import sync_kernels as sk

pytestmark = pytest.mark.gpu
MO = tile.MemoryOrder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples"))


@pytest.mark.parametrize("blocks,nlocks", [(4096, 4), (20000, 2), (4096, 64)])
def test_spin_lock_keeps_every_update(blocks, nlocks):
    acc, locks = sk.run_lock(sk.locked_accumulate, blocks, nlocks, bn=64)
    np.testing.assert_array_equal(acc, np.full((nlocks, 64), blocks // nlocks, np.float32))
    np.testing.assert_array_equal(locks, 0)


def test_acq_rel_spin_lock_keeps_every_update():
    kernel = sk.make_lock_kernel(MO.ACQ_REL, MO.ACQ_REL)
    acc, locks = sk.run_lock(kernel, 4096, 4, bn=64)
    np.testing.assert_array_equal(acc, 1024.0)
    np.testing.assert_array_equal(locks, 0)


def test_spin_lock_is_right_every_time():
    """Repeated launches: a race that loses updates now and then would show here."""
    for _ in range(10):
        acc, _ = sk.run_lock(sk.locked_accumulate, 4096, 4, bn=16)
        np.testing.assert_array_equal(acc, 1024.0)


@pytest.mark.parametrize("blocks", [4096, 20000])
def test_ticket_counter_last_block_sums_every_partial(blocks):
    xn = (np.arange(blocks * 64) % 7).astype(np.float32)
    total, counter = sk.run_ticket_sum(xn, bn=64, bp=1024)
    assert counter == blocks
    assert total == xn.sum(dtype=np.float64)


def test_ticket_lock_serves_every_block_once():
    acc, order = sk.run_ticket_lock(4096, bn=32)
    np.testing.assert_array_equal(acc, 4096.0)
    np.testing.assert_array_equal(np.sort(order), np.arange(4096))


@pytest.mark.parametrize("blocks,ncounters", [(20000, 7), (4096, 4096)])
def test_atomic_counters_are_exact(blocks, ncounters):
    counts, expect = sk.run_counters(blocks, ncounters, lanes=64)
    np.testing.assert_array_equal(counts, expect)


@pytest.mark.parametrize("m,n,group", [(8192, 1024, 64), (1000, 1000, 16)])
def test_layernorm_backward_with_locks_matches_numpy(m, n, group):
    import layernorm as ln
    eps = 1e-5
    r = np.random.default_rng(m)
    xn, dyn = (r.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    wn = r.standard_normal(n).astype(np.float32)
    mean = api.from_numpy(xn.mean(1).astype(np.float32)).sync()
    rstd = api.from_numpy((1 / np.sqrt(xn.var(1) + eps)).astype(np.float32)).sync()
    x, dy, w = (api.from_numpy(a).sync() for a in (xn, dyn, wn))
    dx, dw, db = ln.backward(x, w, dy, mean, rstd, bm=4, group=group)
    for name, got, ref in zip(("dx", "dw", "db"), (dx, dw, db),
                              ln.reference_backward(xn, wn, dyn, eps)):
        np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-3, atol=2e-3, err_msg=name)


def test_layernorm_gallery_script_checks_itself():
    import layernorm as ln
    assert ln.main() == 0


def test_decode_fused_last_block_merges_every_range():
    """The gallery's one-launch decode: 4096 blocks (512 groups x 8 ranges) meet at arrival
    counters; the last block of each group merges what the others wrote. Launched 5 times on
    the same counters (each launch leaves them at zero)."""
    import attention_decode as AD
    groups, g, s, d, splits = 512, 4, 2048, 64, 8
    rng = np.random.default_rng(1)
    q = rng.standard_normal((groups, g, d)).astype(np.float16)
    k, v = (rng.standard_normal((groups, s, d)).astype(np.float16) for _ in range(2))
    ref = AD.reference(q, k, v)
    qd, kd, vd = (api.from_numpy(a).sync() for a in (q, k, v))
    ws = AD.workspaces(groups, g, d, splits)
    for _ in range(5):
        out = api.full((groups, g, d), np.nan, tile.float16).sync()
        AD.decode(out, qd, kd, vd, *ws, 64).sync()
        np.testing.assert_allclose(out.to_numpy().astype(np.float64), ref, atol=3e-3)
        np.testing.assert_array_equal(ws[2].to_numpy(), 0)


def test_splitk_fused_last_block_sums_every_slice():
    """The gallery's one-launch split-K: 4096 blocks (1024 output tiles x 4 slices of K) meet
    at arrival counters; the last block of each tile sums the slices. Launched 5 times on the
    same counters (each launch leaves them at zero)."""
    import matmul_splitk as SK
    m, k, n, splits, tm = 256, 2048, 4096, 4, (16, 64)
    rng = np.random.default_rng(2)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn = rng.standard_normal((k, n)).astype(np.float16)
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    ws = api.zeros((splits, m, n), tile.float32).sync()
    arrived = api.zeros(((m // tm[0]) * (n // tm[1]),), tile.int32).sync()
    for _ in range(5):
        c = api.full((m, n), np.nan, tile.float16).sync()
        SK.splitk_fused(c, a, b, ws, arrived, tm, 128).sync()
        got = c.to_numpy().astype(np.float32)
        assert np.abs(got - ref).max() / np.abs(ref).max() < 5e-3
        np.testing.assert_array_equal(arrived.to_numpy(), 0)
