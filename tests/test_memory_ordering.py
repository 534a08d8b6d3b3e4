"""Memory ordering (issue 21): acquire/release atomics and ordered loads/stores order a block's
memory operations through Tile IR tokens; the synchronization kernels are correct under the
simulator's interleave schedule (which gives wrong results when an ordering edge is missing) and
compile with tileiras."""
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.lowering.tokens import MemoryTokens

import sync_kernels as sk
from lowered import lowered_function

pytestmark = pytest.mark.usefixtures("simulator_backend")
MO = tile.MemoryOrder
SEEDS = (0, 1, 2, 3)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))


@pytest.fixture(params=SEEDS[:3])
def interleave(request, monkeypatch):
    """Run the test under TILEJIT_SIM_SCHEDULE=interleave with several seeds."""
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", "interleave")
    monkeypatch.setenv("TILEJIT_SIM_SEED", str(request.param))
    return request.param


@pytest.fixture
def without_ordering_edges(monkeypatch):
    """Lower acquire/release like relaxed, as tilejit did before issue 21."""
    monkeypatch.setattr(MemoryTokens, "ordering_edges", False)


def _schedule(monkeypatch, name, seed=0):
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", name)
    monkeypatch.setenv("TILEJIT_SIM_SEED", str(seed))


# --------------------------------------------------------------------------------------------------
# The generated Tile IR (tests/lowered.py)
def _token_sources(tok):
    """The ops whose result tokens ``tok`` is made of (through join_tokens)."""
    op = tok.owner
    if op.name != "join_tokens":
        return {op.name}
    return set().union(*(_token_sources(t) for t in op.operands))


def _first(fn, name):
    return next(op for op in fn.walk() if op.name == name)


def make_publish(order):
    @tile.entry
    def publish(data, flag, x):
        i = tile.bid(0)
        tile.store(data.partition((16,)), (i,), x.load((i,), (16,)))
        tile.atomic_xchg(flag, i, 1, memory_order=order)
    return publish


def make_consume(order):
    @tile.entry
    def consume(out, data, flag):
        tile.atomic_add(flag, 0, 0, memory_order=order)
        out.store(data.partition((16,)).load((tile.bid(0),)))
    return consume


def test_release_waits_for_the_earlier_store():
    def sources(order):
        args = (tile.atomic(api.zeros((64,)).sync()), tile.atomic(api.zeros((4,), tile.int32)
                                                                   .sync()), api.ones((64,)).sync())
        fn = lowered_function(make_publish(order), *args)
        return _token_sources(_first(fn, "atomic_rmw_tko").operand("token"))
    assert "store_view_tko" in sources(MO.RELEASE)
    assert "store_view_tko" in sources(MO.ACQ_REL)
    assert "store_view_tko" not in sources(MO.RELAXED)      # relaxed orders nothing else
    assert "store_view_tko" not in sources(MO.ACQUIRE)


def test_acquire_orders_the_later_load():
    def sources(order):
        args = (api.zeros((64,)).sync().partition((16,)), tile.atomic(api.zeros((64,)).sync()),
                tile.atomic(api.zeros((1,), tile.int32).sync()))
        fn = lowered_function(make_consume(order), *args)
        return _token_sources(_first(fn, "load_view_tko").operand("token"))
    assert "atomic_rmw_tko" in sources(MO.ACQUIRE)
    assert "atomic_rmw_tko" in sources(MO.ACQ_REL)
    assert "atomic_rmw_tko" not in sources(MO.RELAXED)
    assert "atomic_rmw_tko" not in sources(MO.RELEASE)


def test_lock_kernel_ir_threads_tokens_through_the_spin_loop():
    acc, locks, x = sk.lock_args(8, 2)
    ir = sk.locked_accumulate.inspect_tileir(tile.atomic(acc), tile.atomic(locks), x, 16)
    assert "atomic_cas_tko acquire device" in ir and "atomic_rmw_tko release device" in ir
    # the spin loop carries both arrays' token pairs and joins each CAS's token into acc's
    loop = next(ln for ln in ir.splitlines() if "= loop iter_values" in ln)
    assert loop.count(": token") + loop.count(", token") >= 4, loop
    body = ir[ir.index("= loop iter_values"):]
    cas = body[body.index("atomic_cas_tko"):]
    assert "join_tokens" in cas[:cas.index("continue")], ir


def test_relaxed_only_kernels_keep_their_tokens():
    """Without acquire or release nothing is joined across arrays (the IR of issue 12's kernels
    stays as it was: test_codegen pins the rest)."""
    fn = lowered_function(sk.count_lanes, tile.atomic(api.zeros((8,), tile.int32).sync()), 16)
    assert not any(op.name == "join_tokens" for op in fn.walk())


@tile.entry
def ordered_accesses(z, w, x):
    i = tile.bid(0)
    a = x.load((i,), (16,), memory_order=MO.ACQUIRE)
    b = tile.load(x, (i,), (16,), memory_order=MO.RELAXED, memory_scope=tile.MemoryScope.BLOCK)
    tile.store(w.partition((16,)), (i,), a + b, memory_order=MO.RELEASE)
    g = tile.gather(x, tile.arange(16, dtype=tile.int32), memory_order=MO.ACQUIRE)
    tile.scatter(w, tile.arange(16, dtype=tile.int32) + 32, g, memory_order=MO.RELAXED,
                 memory_scope=tile.MemoryScope.SYS)
    z.store(z.load(memory_order=MO.ACQUIRE) + 1.0, memory_order=MO.RELEASE)


def _ordered_args():
    return (api.zeros((32,)).sync().partition((16,)), tile.atomic(api.zeros((48,)).sync()),
            api.ones((32,)).sync())


def test_loads_and_stores_take_memory_order_and_scope():
    ir = ordered_accesses.inspect_tileir(*_ordered_args())
    for text in ("load_view_tko acquire device", "load_view_tko relaxed tl_blk",
                 "store_view_tko release device", "load_ptr_tko acquire device",
                 "store_ptr_tko relaxed sys"):
        assert text in ir, text
    zt, wt = api.zeros((32,)).sync(), api.zeros((48,)).sync()
    ordered_accesses(zt.partition((16,)), tile.atomic(wt), api.ones((32,)).sync()).sync()
    np.testing.assert_array_equal(zt.to_numpy(), np.ones(32, np.float32))
    np.testing.assert_array_equal(wt.to_numpy(), np.repeat([2.0, 1.0], [32, 16]))


def test_ordered_accesses_compile_for_sm90():
    assert ordered_accesses.compile(*_ordered_args(), arch="sm_90")[:4] == b"\x7fELF"


# --------------------------------------------------------------------------------------------------
# Typing: the orders Tile IR allows per operation
def _kernel_with(call):
    ns = {"tile": tile, "MO": MO}
    exec(f"def k(z, w, x):\n    {call}\n", ns)
    return tile.entry(ns["k"])


@pytest.mark.parametrize("call,msg", [
    ("z.store(x.load((0,), (16,), memory_order=MO.RELEASE))",
     "load: memory_order=tile.MemoryOrder.RELEASE is not valid here; use one of "
     "tile.MemoryOrder.WEAK, tile.MemoryOrder.RELAXED, tile.MemoryOrder.ACQUIRE"),
    ("z.store(x.load((0,), (16,)), memory_order=MO.ACQUIRE)",
     "store: memory_order=tile.MemoryOrder.ACQUIRE is not valid here; use one of "
     "tile.MemoryOrder.WEAK, tile.MemoryOrder.RELAXED, tile.MemoryOrder.RELEASE"),
    ("tile.atomic_add(w, 0, 1.0, memory_order=MO.WEAK)",
     "atomic_add: memory_order=tile.MemoryOrder.WEAK is not valid here; use one of "
     "tile.MemoryOrder.RELAXED"),
    ("z.store(x.load((0,), (16,), memory_scope=tile.MemoryScope.DEVICE))",
     "memory_scope=tile.MemoryScope.DEVICE needs an ordered access"),
    ("z.store(z.load(memory_order=MO.ACQ_REL))", "load: memory_order=tile.MemoryOrder.ACQ_REL"),
    ("tile.scatter(w, tile.arange(16), 1.0, memory_order=MO.ACQUIRE)",
     "scatter: memory_order=tile.MemoryOrder.ACQUIRE is not valid here"),
    ("z.store(tile.gather(x, tile.arange(16), memory_order=3))",
     "gather: memory_order must be one of tile.MemoryOrder.WEAK"),
])
def test_invalid_memory_orders_are_typing_errors(call, msg):
    k = _kernel_with(call)
    with pytest.raises(tile.TypingError) as info:
        k.inspect_tileir(api.zeros((16,)).sync().partition((16,)),
                         tile.atomic(api.zeros((16,)).sync()), api.ones((16,)).sync())
    assert msg in str(info.value), str(info.value)


# --------------------------------------------------------------------------------------------------
# Synchronization kernels under the interleave schedule
def test_lock_keeps_every_update(interleave):
    acc, locks = sk.run_lock(sk.locked_accumulate, blocks=24, nlocks=4)
    np.testing.assert_array_equal(acc, np.full((4, 16), 6.0, np.float32))
    np.testing.assert_array_equal(locks, 0)


def test_acq_rel_lock_keeps_every_update(interleave):
    kernel = sk.make_lock_kernel(MO.ACQ_REL, MO.ACQ_REL)
    acc, _ = sk.run_lock(kernel, blocks=12, nlocks=3)
    np.testing.assert_array_equal(acc, np.full((3, 16), 4.0, np.float32))


def test_lock_without_the_token_fix_fails_interleaved_and_passes_serially(
        monkeypatch, without_ordering_edges):
    """The acceptance test of the fix: the IR tilejit generated before (no acquire/release
    edges) loses updates under interleave for every seed, and the serial schedule hides it."""
    kernel = sk.make_lock_kernel()
    _schedule(monkeypatch, "serial")
    acc, _ = sk.run_lock(kernel, blocks=16, nlocks=4)
    np.testing.assert_array_equal(acc, 4.0)
    for seed in SEEDS:
        _schedule(monkeypatch, "interleave", seed)
        acc, locks = sk.run_lock(kernel, blocks=16, nlocks=4)
        assert (acc < 4.0).any(), (seed, acc)
        np.testing.assert_array_equal(locks, 0)


@pytest.mark.parametrize("acquire,release", [(MO.RELAXED, MO.RELEASE),
                                             (MO.ACQUIRE, MO.RELAXED)])
def test_a_lock_missing_either_order_fails_interleaved(monkeypatch, acquire, release):
    """Hand-written racy locks (one side relaxed): the interleave schedule shows each race."""
    kernel = sk.make_lock_kernel(acquire, release)
    for seed in SEEDS:
        _schedule(monkeypatch, "interleave", seed)
        acc, _ = sk.run_lock(kernel, blocks=16, nlocks=4)
        assert (acc < 4.0).any(), (seed, acc)
    _schedule(monkeypatch, "serial")
    np.testing.assert_array_equal(sk.run_lock(kernel, blocks=16, nlocks=4)[0], 4.0)


def test_ticket_counter_last_block_sees_every_partial(interleave):
    xn = np.arange(16 * 20, dtype=np.float32) % 7
    total, counter = sk.run_ticket_sum(xn)
    assert counter == 20 and total == xn.sum()


def test_ticket_counter_without_the_fix_misses_partials(monkeypatch, without_ordering_edges):
    xn = np.ones(16 * 24, np.float32)
    kernel = tile.entry(sk.ticket_sum.py_func)      # compiled afresh with the old lowering
    totals = []
    for seed in SEEDS:
        _schedule(monkeypatch, "interleave", seed)
        totals.append(sk.run_ticket_sum(xn, kernel=kernel)[0])
    assert min(totals) < xn.sum(), totals
    _schedule(monkeypatch, "serial")
    assert sk.run_ticket_sum(xn, kernel=kernel)[0] == xn.sum()


def test_ticket_lock_serves_blocks_one_at_a_time(interleave):
    acc, order = sk.run_ticket_lock(12)
    np.testing.assert_array_equal(acc, 12.0)
    assert sorted(order) == list(range(12))


def test_counters_are_exact(interleave):
    counts, expect = sk.run_counters(blocks=20, ncounters=7)
    np.testing.assert_array_equal(counts, expect)


def _atomic_corpus_cases():
    import inspect
    from corpus import CASES
    return [c for c in CASES if "atomic_" in inspect.getsource(c.kernel)]


@pytest.mark.parametrize("case", _atomic_corpus_cases(), ids=lambda c: c.name)
def test_atomic_corpus_kernels_interleaved(interleave, case):
    """The corpus's atomic kernels (histogram, max, bit masks): blocks contend on the same
    elements in any interleaving and still match NumPy."""
    from corpus_runner import run_case
    run_case(case, seed=1)


def test_layernorm_backward_with_locks_matches_numpy(interleave):
    import layernorm as ln
    m, n, eps = 36, 80, 1e-5
    r = np.random.default_rng(1)
    xn, dyn = (r.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    wn = r.standard_normal(n).astype(np.float32)
    mu = xn.mean(1)
    rs = 1 / np.sqrt(xn.var(1) + eps)
    x, dy, w = (api.from_numpy(a).sync() for a in (xn, dyn, wn))
    mean, rstd = (api.from_numpy(a.astype(np.float32)).sync() for a in (mu, rs))
    dx, dw, db = ln.backward(x, w, dy, mean, rstd, bm=4, group=3)
    for got, ref in zip((dx, dw, db), ln.reference_backward(xn, wn, dyn, eps)):
        np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-4, atol=1e-4)


def test_sync_kernels_compile_for_sm90():
    import layernorm as ln
    acc, locks, x = sk.lock_args(8, 2)
    cubins = [sk.locked_accumulate.compile(tile.atomic(acc), tile.atomic(locks), x, 16,
                                           arch="sm_90")]
    f32, i32 = api.zeros((16,)).sync(), api.zeros((16,), tile.int32).sync()
    cubins.append(sk.ticket_sum.compile(tile.atomic(f32), tile.atomic(f32), tile.atomic(i32),
                                        api.ones((64,)).sync(), 16, 64, arch="sm_90"))
    cubins.append(sk.ticket_lock_accumulate.compile(
        tile.atomic(api.zeros((1, 16)).sync()), tile.atomic(i32), tile.atomic(i32),
        tile.atomic(i32), api.ones((4, 16)).sync(), 16, arch="sm_90"))
    cubins.append(sk.count_lanes.compile(tile.atomic(i32), 16, arch="sm_90"))
    m, n = 8, 48
    x2 = api.ones((m, n)).sync()
    cubins.append(ln.layernorm_bwd.compile(
        api.zeros((m, n)).sync().partition((4, 64)), x2, api.ones((n,)).sync(), x2,
        api.ones((m,)).sync(), api.ones((m,)).sync(), tile.atomic(api.zeros((2, n)).sync()),
        tile.atomic(api.zeros((2, n)).sync()), tile.atomic(api.zeros((2,), tile.int32).sync()),
        arch="sm_90"))
    assert all(c[:4] == b"\x7fELF" for c in cubins)


def test_an_ordered_one_element_read_is_an_atomic_or_zero_shared_by_the_block():
    """tileiras replicates control flow in each specialized warp and each warp performs a plain
    load itself, so a spin on an ordered load could see different values per warp and hang the
    block (H100, 2026-11-25). A one-element ordered read is an atomic ``or 0`` of its bits, whose
    result the block shares; memory is unchanged and floats keep their bits (-0.0, NaN payloads)."""
    @tile.entry
    def rd(z, x, y):
        a = tile.load(x, (1,), (), memory_order=tile.MemoryOrder.ACQUIRE)
        b = tile.load(y, (0, 1), (), memory_order=tile.MemoryOrder.RELAXED)
        z.store(tile.full(z.shape, 0.0, tile.float32) + a + b.astype(tile.float32))

    xs = np.array([1.5, -0.0, 3.25], np.float32)
    x = api.from_numpy(xs).sync()
    y = api.from_numpy(np.array([[1, 7], [3, 4]], np.int64)).sync()
    z = api.zeros((16,)).sync()
    args = (z.partition((16,)), tile.atomic(x), y)
    rd(*args).sync()
    assert (z.to_numpy() == 7.0).all()
    assert np.array_equal(x.to_numpy().view(np.uint32), xs.view(np.uint32))
    ir = rd.inspect_tileir(*args)
    assert "atomic_rmw_tko acquire device" in ir and ", or, " in ir
    assert "ptr_to_ptr" in ir and "load_view_tko acquire" not in ir
    assert rd.compile(*args, arch="sm_90")


# --------------------------------------------------------------------------------------------------
# Parallel stores: a loop's only access to an array is a tile store indexed by the loop variable
def make_rows_then_read_back():
    """A fresh kernel (lowered anew, not from the in-memory cache): doubles rows in a grid-stride
    loop, then reads its first row back after the loop."""
    @tile.entry
    def rows_then_read_back(z, first, x):
        for r in range(tile.bid(0), x.shape[0], tile.num_blocks(0)):
            tile.store(z.partition((1, 16)), (r, 0), x.load((r, 0), (1, 16)) * 2.0)
        tile.store(first.partition((1, 16)), (tile.bid(0), 0),
                   z.partition((1, 16)).load((tile.bid(0), 0)))
    return rows_then_read_back


@tile.entry
def accumulate_rows(z, x):
    """A read-modify-write of z in the loop: its stores stay ordered."""
    for r in range(tile.bid(0), x.shape[0], tile.num_blocks(0)):
        p = z.partition((1, 16))
        tile.store(p, (r, 0), p.load((r, 0)) + x.load((r, 0), (1, 16)))


@tile.entry
def same_tile_every_iteration(z, x):
    """Every iteration stores the same tile (its index is not the loop variable)."""
    for r in range(x.shape[0]):
        tile.store(z.partition((1, 16)), (tile.bid(0), 0), x.load((r, 0), (1, 16)))


def _rows_args(rows=12, blocks=3):
    x = np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32)
    z, first = api.zeros((rows, 16)).sync(), api.zeros((blocks, 16)).sync()
    return x, z, first


def test_a_store_per_loop_row_waits_only_for_what_came_before_the_loop():
    """cuTile Python's loop parallel store: the rows' stores are not chained through the loop,
    and the loop carries no token when nothing after it reads the array."""
    x, z, _ = _rows_args()
    fn = lowered_function(grid_stride_copy, tile.atomic(z), api.from_numpy(x).sync())
    store = _first(fn, "store_view_tko")
    assert store.operand("token").owner.name == "make_token"
    assert _first(fn, "for").results == []
    assert not any(op.name == "join_tokens" for op in fn.walk())


@tile.entry
def grid_stride_copy(z, x):
    for r in range(tile.bid(0), x.shape[0], tile.num_blocks(0)):
        tile.store(z.partition((1, 16)), (r, 0), x.load((r, 0), (1, 16)))


def test_parallel_stores_switched_off_stay_chained(monkeypatch):
    """MemoryTokens.parallel_stores (the A/B switch of tools/gpu/run_with.py) restores the chain."""
    monkeypatch.setattr(MemoryTokens, "parallel_stores", False)
    x, z, _ = _rows_args()
    fn = lowered_function(tile.entry(grid_stride_copy.py_func), tile.atomic(z),
                          api.from_numpy(x).sync())
    store, loop = _first(fn, "store_view_tko"), _first(fn, "for")
    assert store.operand("token") in loop.regions[0].args


def test_a_read_after_the_loop_waits_for_every_parallel_store():
    x, z, first = _rows_args()
    fn = lowered_function(make_rows_then_read_back(), tile.atomic(z), tile.atomic(first),
                   api.from_numpy(x).sync())
    store = _first(fn, "store_view_tko")
    assert store.operand("token").owner.name == "make_token"
    loop = _first(fn, "for")
    assert loop.results, "the loop carries z's token out to the read after it"
    body_join = next(op for op in loop.regions[0].ops if op.name == "join_tokens")
    assert store.results[0] in body_join.operands


@tile.entry
def chunks_of_a_row(z, x):
    """A loop over the chunks of the block's row (not grid-stride): its stores stay chained."""
    for j in range(x.shape[1] // 16):
        tile.store(z.partition((1, 16)), (tile.bid(0), j), x.load((tile.bid(0), j), (1, 16)))


@pytest.mark.parametrize("kernel", [accumulate_rows, same_tile_every_iteration, chunks_of_a_row],
                         ids=["load-and-store", "index-not-the-loop-variable", "not-grid-stride"])
def test_other_loop_stores_stay_chained(kernel):
    x, z, _ = _rows_args()
    fn = lowered_function(kernel, tile.atomic(z), api.from_numpy(x).sync())
    store, loop = _first(fn, "store_view_tko"), _first(fn, "for")
    tok = store.operand("token")
    # the carried token (a loop argument, or its join with the load's token)
    assert tok in loop.regions[0].args or tok.owner.name == "join_tokens"
    assert loop.results, "the loop carries z's tokens"


def test_parallel_stores_then_a_read_back_are_right_interleaved(interleave):
    """Under the interleave schedule a load reads memory as of its token's dependencies: the
    read after the loop sees every row only because the loop's token joins every store."""
    x, z, first = _rows_args()
    make_rows_then_read_back()(tile.atomic(z), tile.atomic(first), api.from_numpy(x).sync()) \
        .grid((3, 1, 1)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * x)
    np.testing.assert_array_equal(first.to_numpy(), 2 * x[:3])


def test_parallel_stores_without_the_join_read_stale_rows_interleaved(monkeypatch):
    """The test above fails when the loop's carried token does not join the stores."""
    from tilejit.lowering import tokens
    monkeypatch.setattr(tokens, "_replace_uses", lambda block, old, new: None)
    _schedule(monkeypatch, "interleave")
    x, z, first = _rows_args()
    make_rows_then_read_back()(tile.atomic(z), tile.atomic(first), api.from_numpy(x).sync()) \
        .grid((3, 1, 1)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * x)          # the stores themselves happen
    assert not np.array_equal(first.to_numpy(), 2 * x[:3])      # the read saw memory before them
