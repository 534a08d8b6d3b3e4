"""tileir/tileiras_workarounds.py: the loads of a tile a loop carries go off the TMA unit
(tileiras 13.4-13.5 reads such a tile from the next load's buffer:
tools/tileiras_repros/loop_carried_tile); every other load keeps its hints."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from lowered import lowered_function
from test_tileiras_quirks import rows_scaled_double_buffered

ZERO = tile.PaddingMode.ZERO


def _loads(fn):
    """Each load_view_tko of ``fn`` as (inside a region: in these kernels, a loop body; its
    hints as a dict of their one key)."""
    out = []
    for op in fn.walk():
        if op.name == "load_view_tko":
            h = op.attrs.get("optimization_hints")
            d = next(iter(h.as_dict().values())) if h else {}
            in_loop = op.parent.parent_op is not None
            out.append((in_loop, d))
    return out


def _x(m=64, n=32):
    return api.zeros((m, n), tile.float16).sync()


def test_a_double_buffered_row_loop_loads_off_tma_and_keeps_its_latency():
    y = tile.atomic(_x())
    fn = lowered_function(rows_scaled_double_buffered, y, _x(), 4, 32, True)
    assert sorted(_loads(fn), key=repr) == [(False, {"latency": 4, "allow_tma": False}),
                                            (True, {"latency": 4, "allow_tma": False})]


@tile.entry
def rows_loaded_in_iteration(y, x, ROWS: tile.Constant[int], WIDTH: tile.Constant[int]):
    for r in range(tile.bid(0), tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        t = x.load((r, 0), (ROWS, WIDTH), padding=ZERO, latency=3)
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), t + t)


def test_a_load_used_in_its_own_iteration_keeps_tma():
    fn = lowered_function(rows_loaded_in_iteration, tile.atomic(_x()), _x(), 4, 32)
    assert _loads(fn) == [(True, {"latency": 3})]


@tile.entry
def while_carried(y, x, ROWS: tile.Constant[int], WIDTH: tile.Constant[int]):
    """A while loop whose next tile is loaded in one branch of an if (continue through it)."""
    r = tile.bid(0)
    t = x.load((r, 0), (ROWS, WIDTH), padding=ZERO)
    while r < tile.cdiv(x.shape[0], ROWS):
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), t + t)
        r += tile.num_blocks(0)
        if r < tile.cdiv(x.shape[0], ROWS):
            t = x.load((r, 0), (ROWS, WIDTH), padding=ZERO)


def test_a_tile_carried_by_a_while_loop_through_an_if_loads_off_tma():
    fn = lowered_function(while_carried, tile.atomic(_x()), _x(), 4, 32)
    loads = _loads(fn)
    assert len(loads) == 2 and all(d == {"allow_tma": False} for _, d in loads), loads


@tile.entry
def accumulate_from_a_load(y, x, WIDTH: tile.Constant[int]):
    """The initial value of a carried sum is a load (off TMA); the loop's own loads are not
    carried (they keep TMA)."""
    acc = x.load((0, 0), (1, WIDTH), padding=ZERO).astype(tile.float32)
    raw = x.load((0, 0), (1, WIDTH), padding=ZERO)
    for r in range(1, x.shape[0]):
        acc += x.load((r, 0), (1, WIDTH), padding=ZERO).astype(tile.float32)
        raw = raw + x.load((r, 0), (1, WIDTH), padding=ZERO)
    tile.store(y.partition((1, WIDTH)), (0, 0), acc.astype(y.dtype) + raw)


def test_only_the_loads_a_loop_carries_lose_tma():
    fn = lowered_function(accumulate_from_a_load, tile.atomic(_x()), _x(), 32)
    before = [d for in_loop, d in _loads(fn) if not in_loop]
    inside = [d for in_loop, d in _loads(fn) if in_loop]
    # acc is carried as float32 (a conversion of the load, not the load): keeps TMA; raw is the
    # load itself: off TMA
    assert sorted(before, key=len) == [{}, {"allow_tma": False}]
    assert inside == [{}, {}]


@tile.entry
def transposed_carried(out, x, ROWS: tile.Constant[int], WIDTH: tile.Constant[int]):
    """A permuted load (made a transposed load by optimize.fuse_transposed_loads) carried."""
    step = tile.num_blocks(0)
    last = tile.cdiv(x.shape[0], ROWS) - 1
    t = tile.permute(x.load((tile.bid(0), 0), (ROWS, WIDTH)), (1, 0))
    for r in range(tile.bid(0), last + 1, step):
        nxt = tile.permute(x.load((min(r + step, last), 0), (ROWS, WIDTH)), (1, 0))
        tile.store(out.partition((ROWS,)), (r,), tile.sum(t.astype(tile.float32), axis=0))
        t = nxt


def test_a_carried_load_made_by_the_optimizations_loads_off_tma():
    """(2026-11-28 H200: the permuted form was still wrong when the workaround ran before
    optimize_module.)"""
    out = tile.atomic(api.zeros((64,), tile.float32).sync())
    fn = lowered_function(transposed_carried, out, _x(), 4, 32)
    assert not any(op.name == "permute" for op in fn.walk())     # the loads were fused
    loads = _loads(fn)
    assert len(loads) == 2 and all(d == {"allow_tma": False} for _, d in loads), loads


@pytest.mark.usefixtures("simulator_backend")
def test_the_rewritten_loops_compute_the_same_on_the_simulator():
    xn = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float16)
    y = api.zeros((64, 32), tile.float16).sync()
    while_carried(tile.atomic(y), api.from_numpy(xn).sync()).generics(
        ROWS=4, WIDTH=32).grid((3, 1, 1)).sync()
    np.testing.assert_allclose(y.to_numpy(), xn + xn, rtol=1e-3)
