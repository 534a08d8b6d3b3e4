"""tile.autotune with no configs: the default search space built from the kernel (tilejit/
tuning_space.py), on the simulator (the first config that compiles wins) and compiled for sm_90."""
import json
import math
import os
import sys
import types

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, tuning_source, tuning_space
from tilejit.toolchain import tileiras

from test_autotune import _matmul  # noqa: E402  (the configs= tests' kernel)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _softmax(z, x):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store((e / tile.sum(e, axis=1, keepdims=True)).astype(z.dtype))


def _row_scale(y, x, s):
    BM, BN = y.shape
    t = x.load((y.block[0], 0), (BM, BN), padding=tile.PaddingMode.ZERO)
    y.store(t * s)


def _heads(o, q, SCALE: tile.Constant[float] = 2.0):
    BM, _, D = o.shape
    i, h, _ = o.block
    t = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    o.store((t * SCALE).reshape((BM, 1, D)))


def _vadd(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def _query_rows(o, q, k):             # attention's shape: one searched axis, an accumulator
    BM, _, D = o.shape
    i, h, _ = o.block
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    tk = k.load((h, 0, 0), (1, D, D)).reshape((D, D))
    o.store((tq @ tk).astype(o.dtype).reshape((BM, 1, D)))


@tile.function
def _scores(tq, tk):
    return tile.mma(tq, tk, tile.zeros((tq.shape[0], tk.shape[1]), tile.float32))


def _query_rows_via_helper(o, q, k):
    BM, _, D = o.shape
    i, h, _ = o.block
    tq = q.load((h, i, 0), (1, BM, D)).reshape((BM, D))
    tk = k.load((h, 0, 0), (1, D, D)).reshape((D, D))
    o.store(_scores(tq, tk).astype(o.dtype).reshape((BM, 1, D)))


@tile.function
def _row_softmax(t):
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    return _normalized(e)


@tile.function
def _normalized(e):                      # reached through the other helper
    return e / tile.sum(e, axis=-1, keepdims=True)


def _softmax_via_helpers(z, x):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    z.store(_row_softmax(t).astype(z.dtype))


_helpers = types.ModuleType("_helpers")      # a helper reached as module.name
_helpers.row_softmax = _row_softmax


def _softmax_via_module(z, x):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    z.store(_helpers.row_softmax(t).astype(z.dtype))


ROW_AXIS = 1
tj = tile                                 # the package under another name


def _softmax_axis_global(z, x):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tj.max(t, ROW_AXIS, keepdims=True))
    z.store((e / e.sum(axis=-ROW_AXIS, keepdims=True)).astype(z.dtype))


def _softmax_axis_constant(z, x, AXIS: tile.Constant[int] = 1):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=AXIS, keepdims=True))
    z.store((e / tile.sum(e, axis=AXIS, keepdims=True)).astype(z.dtype))


def zeros(shape, dtype=tile.float16):
    return api.zeros(shape, dtype).sync()


class Spec:
    """Shape and dtype only: all the space of a key looks at (no memory for big shapes)."""

    def __init__(self, shape, dtype=tile.float16):
        self.shape, self.dtype = shape, dtype


def test_default_space_tunes_and_computes_a_matmul():
    mm = tile.autotune(key=["a", "b"])(tile.entry(_matmul))
    r = np.random.default_rng(0)
    an = r.standard_normal((96, 64)).astype(np.float16)
    bn = r.standard_normal((64, 80)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = zeros((96, 80))
    mm(c, a, b).sync()
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    np.testing.assert_allclose(c.to_host().sync().astype(np.float32), ref, rtol=2e-2, atol=5e-2)
    best = mm.best_config(c, a, b)
    assert repr(best) == repr(mm.configs_for(c, a, b)[0])    # the space's first, on the simulator
    assert all(t <= 128 for cfg in mm.configs_for(c, a, b) for t in cfg.tile)  # bounded by c
    assert "default space" in repr(mm) and "chosen without timing" in mm.tuning_report()


def test_bare_decorator_uses_the_default_space():
    mm = tile.autotune(tile.entry(_matmul))
    assert mm.configs is None and mm.partition == "c"


def test_the_matmul_space():
    mm = tile.autotune(tile.entry(_matmul))
    big = Spec((4096, 4096))
    space = mm.configs_for(big, big, big)
    assert 1 < len(space) <= tuning_space.MAX_CONFIGS
    first = space[0]
    assert (first.tile, first.occupancy, first.num_ctas, first.constants) == \
        ((128, 128), 1, None, {"BK": 64})
    for c in space:
        assert all(16 <= t <= 256 and t & (t - 1) == 0 for t in c.tile)
        assert math.prod(c.tile) <= tuning_space.TILE_ELEMS_MAX
        assert c.constants["BK"] in (32, 64, 128) and c.occupancy in (1, 2)
    tiles = {c.tile for c in space}
    assert {(128, 128), (128, 256), (256, 128)} <= tiles
    assert any(c.num_ctas == 2 for c in space)                # clusters on sm_90
    assert len({repr(c) for c in space}) == len(space)        # no duplicates


def test_a_skinny_matmul_prefers_tiles_that_fill_the_gpu():
    mm = tile.autotune(tile.entry(_matmul))
    a, b, c = Spec((16, 8192)), Spec((8192, 8192)), Spec((16, 8192))
    space = mm.configs_for(c, a, b)
    assert all(cfg.tile[0] == 16 for cfg in space)            # bounded by M
    # 8192 / 64 = 128 blocks fill most of 132 SMs; 8192 / 256 = 32 would not
    assert space[0].tile[1] in (32, 64) and space[0].tile != (16, 256)


def test_8bit_inputs_double_the_k_tile():
    mm = tile.autotune(tile.entry(_matmul))
    a = Spec((4096, 4096), tile.float8_e4m3fn)
    space = mm.configs_for(Spec((4096, 4096)), a, a)
    assert {c.constants["BK"] for c in space} <= {64, 128, 256} and space[0].constants["BK"] == 128


def test_8bit_inputs_search_tiles_of_at_most_16k_elements_with_two_warp_groups():
    """float8 products keep a second float32 accumulator (the promoted sum): 128x128 tiles run
    with two compute warp groups (num_worker_warps=8: 1080-1120 TFLOP/s on an H200, 470-530
    without) and come first; 64x128 (one group, 840-1100) follow; 128x256 / 256x128 (0.03-0.05x)
    are not searched, and 64x256 (two groups do not rescue it) ranks last."""
    mm = tile.autotune(tile.entry(_matmul))
    a = Spec((4096, 4096), tile.float8_e4m3fn)
    space = mm.configs_for(Spec((4096, 4096), tile.bfloat16), a, a)
    assert all(math.prod(c.tile) <= tuning_space.NARROW_ELEMS_MAX for c in space)
    assert space[0].tile == (128, 128) and space[0].num_worker_warps == 8
    assert all(c.num_worker_warps == (8 if math.prod(c.tile) > tuning_space.NARROW_ELEMS_GOOD
                                      else None) for c in space)
    found = {(c.tile, c.occupancy, c.constants["BK"]) for c in space}
    assert {((64, 128), 2, 128), ((128, 128), 1, 256), ((128, 128), 2, 128)} <= found
    assert (64, 256) not in {c.tile for c in space}
    wide = mm.configs_for(Spec((4096, 4096)), Spec((4096, 4096)), Spec((4096, 4096)))
    assert any(math.prod(c.tile) > tuning_space.NARROW_ELEMS_MAX for c in wide)   # fp16 keeps 32K


def test_tiles_over_one_warp_groups_accumulator_take_two():
    """128x256 fp16 tiles spill with one compute warp group (45 TFLOP/s on an H200) and run at
    700-750 with two: the space gives every tile over 16K elements num_worker_warps=8, and
    none of them two blocks per SM (their accumulators would be the whole register file)."""
    mm = tile.autotune(tile.entry(_matmul))
    space = mm.configs_for(Spec((4096, 4096)), Spec((4096, 4096)), Spec((4096, 4096)))
    big = [c for c in space if math.prod(c.tile) > tuning_space.ONE_GROUP_ELEMS]
    assert big and all(c.num_worker_warps == 8 and c.occupancy == 1 for c in big)
    assert all(c.num_worker_warps is None for c in space if c not in big)
    assert space[1].tile == (128, 256)
    one = tile.autotune(space={"num_worker_warps": (None,)})(tile.entry(_matmul))
    assert all(c.num_worker_warps is None for c in
               one.configs_for(Spec((4096, 4096)), Spec((4096, 4096)), Spec((4096, 4096))))
    opts = space[1].options(tile.CompileOptions())
    assert opts.num_worker_warps == 8 and opts.hints()["num_worker_warps_per_cta"] == 8


def _scheduled_space(kernel, shape, dtype, out_dtype, *extra, sms=132, **constants):
    """The default space of a scheduled (self-placing) matmul on a GPU of ``sms`` SMs."""
    import matmul as MM
    tuned = tile.autotune(key=["a", "b"],
                          grid=lambda cfg, args: MM.scheduled_grid(cfg, args, sms=sms))(kernel)
    a = Spec(shape, dtype)
    return tuned.configs_for(tile.atomic(Spec(shape, out_dtype)), a, a, *extra, **constants)


def test_the_scheduled_matmul_space_holds_the_measured_best():
    """The gallery's grouped matmul under the default space (no configs=, grid from the config):
    its BM and BN are the output tile (64..256, at most 32K elements, two warp groups over 16K),
    and the config that won on an H200 against cuBLAS (128x256, BK=32, GROUP=8, persistent,
    occupancy 1, two warp groups; BENCHMARKS.md 2026-11-28, tenth session) is among the first
    twelve tried."""
    import matmul as MM
    space = _scheduled_space(MM.matmul_scheduled, (4096, 4096), tile.float16, tile.float16)
    assert len(space) == tuning_space.MAX_CONFIGS
    best = [i for i, c in enumerate(space) if c.occupancy == 1 and c.num_worker_warps == 8 and
            c.num_ctas is None and c.constants == dict(
                BM=128, BN=256, BK=32, GROUP=8, PERSISTENT=True, TMA=True, FAST_ACC=False)]
    assert best and best[0] < 12, space
    tiles = {(c.constants["BM"], c.constants["BN"]) for c in space}
    assert {(128, 128), (128, 256), (256, 128)} <= tiles
    for c in space:
        elems = c.constants["BM"] * c.constants["BN"]
        assert elems <= 32 * 1024
        assert c.num_worker_warps == (8 if elems > 16 * 1024 else None), c


def test_matmul_tiles_with_the_tma_unit_off_rank_after_their_twins_with_it_on():
    """TMA=False stays in a matmul's space, ranked after the same config with the TMA unit on,
    and out of the first 24 (tileiras does not pipeline plain loads: 0.11-0.23x)."""
    prob = tuning_space.Problem(None, 2, ("BM", "BN", "BK", "GROUP", "PERSISTENT", "TMA"),
                                num_sms=132)

    def blocks(cand):
        k = cand["constants"]
        return ((4096 // k["BM"]) * (4096 // k["BN"]), 1, 1, 1, 1)
    built = tuning_space.build(tuning_source.SourceFacts(None), prob, {"max_configs": 10_000},
                               blocks)
    where = {}
    for i, c in enumerate(built):
        key = (c["occupancy"], c["num_ctas"], c["num_worker_warps"],
               tuple(sorted((n, v) for n, v in c["constants"].items() if n != "TMA")))
        where[key, c["constants"]["TMA"]] = i
    twins = [(i, where[k, True]) for (k, tma), i in where.items() if tma is False]
    assert twins and all(on < off for off, on in twins)
    assert all(c["constants"]["TMA"] for c in built[:tuning_space.MAX_CONFIGS])


def test_an_8bit_scheduled_matmul_keeps_tiles_of_16k_elements():
    import fp8_matmul as F8
    f8 = tile.float8_e4m3fn
    space = _scheduled_space(F8.fp8_matmul_scheduled, (4096, 4096), f8, tile.bfloat16, 1.0, 1.0)
    assert space and all(c.constants["BM"] * c.constants["BN"] <= 16 * 1024 for c in space)
    assert any(c.constants["BK"] == 256 for c in space)          # 8-bit: twice the K tile
    first = space[0]
    assert (first.constants["BM"], first.constants["BN"]) == (128, 128), space
    assert first.num_worker_warps == 8


@pytest.mark.parametrize("kernel", [_query_rows, _query_rows_via_helper])
def test_an_accumulators_rows_are_64_at_least_with_two_warp_groups_over_16k(kernel):
    """A kernel that multiplies tiles (attention: one searched axis, the query rows) keeps
    them as a matmul's accumulator: at least 64 rows (a warp group's MMA; 32-row query tiles
    ran at 0.18-0.25x on an H200) and two warp groups over 16K elements (256x128 with one
    spilled: 31.6 against 1.9 ms). A row kernel without MMAs keeps one-row tiles and both
    warp-group choices."""
    tuned = tile.autotune(tile.entry(kernel), partition="o")
    q = Spec((32, 4096, 128))
    space = tuned.configs_for(Spec((4096, 32, 128)), q, q)
    rows = {c.tile[0] for c in space}
    assert rows == {64, 128, 256}, space
    for c in space:
        assert c.num_worker_warps == (8 if c.tile[0] * 128 > 16 * 1024 else
                                      c.num_worker_warps), c
    assert {c.num_worker_warps for c in space if c.tile[0] == 128} == {None, 8}
    narrow = tuned.configs_for(Spec((4096, 32, 64)), Spec((32, 4096, 64)), Spec((32, 4096, 64)))
    assert {c.tile[0] for c in narrow} == {64, 128, 256}       # 512 x 64 is 32K elements too
    short = tuned.configs_for(Spec((32, 32, 128)), Spec((32, 32, 128)), Spec((32, 32, 128)))
    assert {c.tile[0] for c in short} == {32}                  # bounded by the tensor
    rows_k = tile.autotune(tile.entry(_softmax))
    x = Spec((64, 16384))
    row_space = rows_k.configs_for(x, x)
    assert any(c.tile[0] == 1 for c in row_space)
    assert {c.num_worker_warps for c in row_space if c.tile == (1, 16384)} == {None, 8}


def test_an_8bit_fast_sum_keeps_fp16s_tiles():
    """With ``FAST_ACC=True`` the float8 products keep one accumulator (the tensor cores' fast
    sum), so the space offers fp16's tiles: 128x256 with two warp groups, the fast sum's best on
    an H200, and 128x128 with one; the promoted sum keeps the 8-bit budget."""
    import fp8_matmul as F8
    f8 = tile.float8_e4m3fn
    fast = _scheduled_space(F8.fp8_matmul_scheduled, (4096, 4096), f8, tile.bfloat16, 1.0, 1.0,
                            FAST_ACC=True)
    tiles = {(c.constants["BM"], c.constants["BN"], c.num_worker_warps) for c in fast}
    assert (128, 256, 8) in tiles and (128, 128, None) in tiles, fast
    assert {c.constants["BK"] for c in fast} <= {64, 128, 256}      # still 8-bit K tiles
    promoted = _scheduled_space(F8.fp8_matmul_scheduled, (4096, 4096), f8, tile.bfloat16, 1.0,
                                1.0, FAST_ACC=False)
    assert all(c.constants["BM"] * c.constants["BN"] <= 16 * 1024 for c in promoted)


@pytest.mark.parametrize("name,fixed,defaults,promoted", [
    ("FAST_ACC", {"FAST_ACC": True}, {}, False),
    ("USE_FAST_ACCUM", {}, {"USE_FAST_ACCUM": True}, False),       # its default counts
    ("FAST_ACC", {"FAST_ACC": False}, {"FAST_ACC": True}, True),   # the call wins
    ("FAST", {"FAST": True}, {}, True),                           # not the name
])
def test_which_constants_say_fast_sum(name, fixed, defaults, promoted):
    prob = tuning_space.Problem(None, 1, (name,), fixed=fixed, defaults=defaults)
    assert prob.promoted_8bit is promoted
    assert tuning_space.Problem(None, 2, (name,), fixed=fixed).promoted_8bit is False


def test_one_extent_constant_is_not_a_tile():
    """A lone extent constant (attention's BN, the KV tile) keeps its two values, 128 and 64:
    only two or more of them make an output tile."""
    prob = tuning_space.Problem((4096, 1, 128), 2, ("BN",))
    assert tuning_space.constant_candidates(prob, {}) == {"BN": (128, 64)}
    assert tuning_space.tile_constants(prob) == ()
    prob = tuning_space.Problem(None, 2, ("BM", "BN", "BK"), fixed={"BM": 64})
    assert tuning_space.tile_constants(prob) == ()           # BM passed at the call
    prob = tuning_space.Problem((4096, 4096), 2, ("BM", "BN", "BK"))
    assert tuning_space.tile_constants(prob) == ()           # a partitioned output's tile rules
    assert tuning_space.constant_candidates(prob, {})["BN"] == (128, 64)
    prob = tuning_space.Problem(None, 2, ("BM", "BN", "BK"))
    assert tuning_space.tile_constants(prob) == ("BM", "BN")
    assert tuning_space.constant_candidates(prob, {})["BN"] == (128, 256, 64)
    # the 32K-element budget holds for the space's own values, not for those space= lists
    built = tuning_space.build(tuning_source.SourceFacts(None), prob)
    assert max(c["constants"]["BM"] * c["constants"]["BN"] for c in built) == 32 * 1024
    built = tuning_space.build(tuning_source.SourceFacts(None), prob,
                               {"BM": (256,), "BN": (256,)})
    assert built and {(c["constants"]["BM"], c["constants"]["BN"]) for c in built} == {(256, 256)}


def test_the_row_kernel_spaces_keep_rows_whole():
    sm = tile.autotune(tile.entry(_softmax))                   # reduces along axis 1
    x = Spec((4096, 8192))
    space = sm.configs_for(x, x)
    assert {c.tile[1] for c in space} == {8192}
    assert {c.tile[0] for c in space} == {1, 2, 4}            # 32K elements at most
    assert all(c.num_ctas is None for c in space)
    rs = tile.autotune(tile.entry(_row_scale))                 # never reads y.block[1]
    x = Spec((300, 1000), tile.float32)
    space = rs.configs_for(x, x, 1.5)
    assert {c.tile[1] for c in space} == {1024}
    assert max(c.tile[0] for c in space) == 32 and min(c.tile[0] for c in space) == 1
    # two warp groups only as an alternative, for tiles of 16K elements or more
    assert {c.tile for c in space if c.num_worker_warps == 8} == {(16, 1024), (32, 1024)}


def test_reductions_in_helpers_keep_rows_whole():
    """A softmax whose reductions are in the helpers it calls (a tile.function, and one that
    calls in turn) keeps its rows whole: a split row would be normalized per piece, a wrong
    result the timing would not notice."""
    facts = tuning_source.analyze(_softmax_via_helpers, "z")
    assert facts.block_wholesale and facts.reduced_axes == {1, -1}
    assert tuning_source.analyze(_softmax_via_module, "z").reduced_axes == {1, -1}
    sm = tile.autotune(tile.entry(_softmax_via_helpers))
    x = Spec((4096, 8192))
    assert {c.tile[1] for c in sm.configs_for(x, x)} == {8192}
    got = api.zeros((8, 64), tile.float32).sync()
    xn = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    sm(got, api.from_numpy(xn).sync()).sync()
    e = np.exp(xn - xn.max(1, keepdims=True))
    np.testing.assert_allclose(got.to_numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)


def test_reduction_axes_named_by_a_global_count_and_unknown_ones_count_as_every_axis():
    """An axis given by a module-level int counts as that axis (through the package under any
    name); one the source does not spell out (a constant parameter) counts as every axis, so
    the wholesale tile stays whole rather than split where the kernel might reduce."""
    assert tuning_source.analyze(_softmax_axis_global, "z").reduced_axes == {1, -1}
    x = Spec((512, 1024))
    space = tile.autotune(tile.entry(_softmax_axis_global)).configs_for(x, x)
    assert {c.tile[1] for c in space} == {1024} and len({c.tile[0] for c in space}) > 1
    assert tuning_source.ANY_AXIS in tuning_source.analyze(_softmax_axis_constant, "z").reduced_axes
    x = Spec((64, 256))
    space = tile.autotune(tile.entry(_softmax_axis_constant)).configs_for(x, x)
    assert {c.tile for c in space} == {(64, 256)}


def test_tiles_of_16k_elements_with_one_searched_axis_also_try_two_warp_groups():
    """Row kernels and attention-like query tiles of 16K elements or more try num_worker_warps 8
    beside tileiras's choice (on an H200: LayerNorm of 32K fp16 rows +16%, of 16K rows +1.5%;
    attention's 128x128 query tiles at D = 128 take them in every vendor.py row); smaller
    tiles do not."""
    sm = tile.autotune(tile.entry(_softmax))
    for n in (32768, 16384, 1024):
        x = Spec((1 << 26 >> n.bit_length(), n))
        space = sm.configs_for(x, x)
        for t in {c.tile for c in space}:
            warps = {c.num_worker_warps for c in space if c.tile == t}
            assert warps == ({None, 8} if t[0] * t[1] >= 16384 else {None}), (t, warps)
    hd = tile.autotune(tile.entry(_heads))
    space = hd.configs_for(Spec((4096, 8, 128)), Spec((8, 4096, 128)))
    assert {c.num_worker_warps for c in space if c.tile == (128, 1, 128)} == {None, 8}
    assert {c.num_worker_warps for c in space if c.tile == (64, 1, 128)} == {None}


def _rows_grid(cfg, args):
    """One wave of blocks (a persistent row kernel's grid), as examples/softmax.rows_grid."""
    return (min(tile.cdiv(args["x"].shape[0], cfg.constants["ROWS"]), 132 * (cfg.occupancy or 1)), 1, 1)


def _rows_persistent(y, x, w, ROWS: tile.Constant[int], WIDTH: tile.Constant[int],
                     LATENCY: tile.Constant[int]):
    wv = w.load((0,), (WIDTH,), padding=tile.PaddingMode.ZERO)[None, :]
    for r in range(tile.bid(0), tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        t = x.load((r, 0), (ROWS, WIDTH), padding=tile.PaddingMode.ZERO, latency=LATENCY)
        tile.store(y.partition((ROWS, WIDTH)), (r, 0), t * wv)


def _rows_chunked(y, x, ROWS: tile.Constant[int], CHUNK_SIZE: tile.Constant[int]):
    i = tile.bid(0)
    for j in range(tile.cdiv(x.shape[1], CHUNK_SIZE)):
        t = tile.load(x, (i, j), (ROWS, CHUNK_SIZE), padding=tile.PaddingMode.ZERO)
        tile.store(y.partition((ROWS, CHUNK_SIZE)), (i, j), t + 1.0)


def test_row_kernels_that_place_their_own_tiles_get_rows_and_the_whole_width():
    """ROWS / WIDTH / CHUNK of a kernel with its own grid (persistent and chunked row kernels):
    WIDTH is the whole extent it tiles, ROWS 1-32 and CHUNK 2K-8K within the extents they tile,
    the row tile at most 32K elements and counted as a row kernel's (two warp groups from 16K
    elements; no clusters). At 32K fp16 rows the space holds vendor.py's best on an H200
    (occupancy 1, two warp groups, LATENCY 2: 0.85-0.86 of the roofline, 2026-11-28)."""
    facts = tuning_source.analyze(_rows_persistent, None)
    assert facts.spans == {"WIDTH": {("w", 0), ("x", 1), ("y", 1)},
                           "ROWS": {("x", 0), ("y", 0)}}
    assert tuning_source.analyze(_rows_chunked, None).spans["CHUNK_SIZE"] == {("x", 1), ("y", 1)}
    pers = tile.autotune(grid=_rows_grid)(tile.entry(_rows_persistent))
    for n in (32768, 16384, 1000):
        m = (1 << 26) // n
        space = pers.configs_for(tile.atomic(Spec((m, n))), Spec((m, n)), Spec((n,)))
        width = 1 << (n - 1).bit_length()
        assert {c.constants["WIDTH"] for c in space} == {width}
        rows = {c.constants["ROWS"] for c in space}
        assert max(rows) * width <= 32768 and (n > 1024 or max(rows) == 32)
        assert all(c.num_ctas is None for c in space)
        assert {c.constants["LATENCY"] for c in space} == {2, 4, 8}
        assert {c.num_worker_warps for c in space} == {None, 8}
        assert all(c.num_worker_warps is None for c in space
                   if c.constants["ROWS"] * width < 16384)
    assert any(c.occupancy == 1 and c.num_worker_warps == 8 and c.constants["ROWS"] == 1 and
               c.constants["LATENCY"] == 2 for c in pers.configs_for(
                   tile.atomic(Spec((2048, 32768))), Spec((2048, 32768)), Spec((32768,))))
    # ROWS bounded by the rows there are; CHUNK by the row's width
    chunked = tile.autotune(grid=_rows_grid)(tile.entry(_rows_chunked))
    space = chunked.configs_for(tile.atomic(Spec((6, 3000))), Spec((6, 3000)))
    assert {c.constants["CHUNK_SIZE"] for c in space} == {2048, 4096}
    assert {c.constants["ROWS"] for c in space} == {1, 2, 4, 8}
    space = chunked.configs_for(tile.atomic(Spec((64, 1000))), Spec((64, 1000)))
    assert {c.constants["CHUNK_SIZE"] for c in space} == {1024}


def test_a_width_passed_at_the_call_bounds_the_rows():
    pers = tile.autotune(grid=_rows_grid)(tile.entry(_rows_persistent))
    x = Spec((4096, 8192))
    space = pers.configs_for(tile.atomic(x), x, Spec((8192,)), WIDTH=8192)
    assert {c.constants["ROWS"] for c in space} == {1, 2, 4}
    # a width over the budget by itself is the caller's choice: the rows are not filtered
    space = pers.configs_for(tile.atomic(x), x, Spec((8192,)), WIDTH=65536)
    assert {1, 8} <= {c.constants["ROWS"] for c in space}


def test_a_width_the_kernel_loads_no_tile_of_must_be_passed():
    @tile.entry
    def rows(y, x, n, ROWS: tile.Constant[int], WIDTH: tile.Constant[int]):
        t = x.load((tile.bid(0), 0), (ROWS, 64), padding=tile.PaddingMode.ZERO)
        tile.store(y.partition((ROWS, 64)), (tile.bid(0), 0), t + WIDTH)

    tuned = tile.autotune(grid=_rows_grid)(rows)
    x = Spec((64, 64))
    with pytest.raises(TypeError, match="'WIDTH' is a row's width, but the kernel loads no "
                                        "tile of it"):
        tuned.configs_for(tile.atomic(x), x, 64)
    assert {c.constants["ROWS"] for c in tuned.configs_for(tile.atomic(x), x, 64, WIDTH=3)} \
        == {1, 2, 4, 8, 16, 32}


def test_the_default_space_runs_a_persistent_row_kernel():
    """rmsnorm_persistent with no configs= (ROWS, WIDTH, LATENCY from the space) on the
    simulator: the first config that compiles runs, and its result is right."""
    import rmsnorm as RN
    import softmax as SM
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((40, 200)).astype(np.float32)
    wn = rng.standard_normal(200).astype(np.float32)
    x, w = api.from_numpy(xn).sync(), api.from_numpy(wn).sync()
    y = zeros((40, 200), tile.float32)
    tuned = tile.autotune(key=["x"], grid=SM.rows_grid)(RN.rmsnorm_persistent)
    tuned(tile.atomic(y), x, w, 1e-6).sync()
    assert tuned.best_config(tile.atomic(y), x, w, 1e-6).constants["WIDTH"] == 256
    ref = xn / np.sqrt((xn * xn).mean(1, keepdims=True) + 1e-6) * wn
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-4, atol=1e-4)


def test_the_attention_like_space_fixes_unread_axes():
    hd = tile.autotune(tile.entry(_heads))
    space = hd.configs_for(Spec((512, 8, 64)), Spec((8, 512, 64)))
    assert {c.tile[1:] for c in space} == {(1, 64)}           # extent unread: 1; block unread: whole
    assert all("SCALE" not in c.constants or c.constants["SCALE"] == 2.0 for c in space)


def test_a_1d_kernel_searches_256_to_4096():
    va = tile.autotune(tile.entry(_vadd))
    x = Spec((1 << 20,), tile.float32)
    assert {c.tile for c in va.configs_for(x, x, x)} == {(256,), (512,), (1024,), (2048,),
                                                         (4096,)}


def test_pruning_bounds_the_count_and_space_overrides():
    mm = tile.autotune(space={"max_configs": 5})(tile.entry(_matmul))
    big = Spec((4096, 4096))
    assert len(mm.configs_for(big, big, big)) == 5
    mm = tile.autotune(space={"tile": (128, None), "BK": (32,), "occupancy": (2,),
                              "num_ctas": (1,)})(tile.entry(_matmul))
    space = mm.configs_for(big, big, big)
    assert {c.tile[0] for c in space} == {128} and {c.constants["BK"] for c in space} == {32}
    assert {c.occupancy for c in space} == {2}
    sm = tile.autotune(space={"tile": (None, "whole")})(tile.entry(_matmul))
    assert {c.tile[1] for c in sm.configs_for(Spec((64, 100)), big, big)} == {128}
    with pytest.raises(TypeError, match="unknown entry BQ"):
        tile.autotune(space={"BQ": (1,)})(tile.entry(_matmul)).configs_for(big, big, big)
    with pytest.raises(TypeError, match="configs= or space="):
        tile.autotune(configs=[tile.Config(BK=32)], space={})(tile.entry(_matmul))


def test_constants_without_a_rule_must_be_passed_and_are_part_of_the_key():
    @tile.entry
    def scaled(z, x, FACTOR: tile.Constant[int]):
        z.store(tile.load_tile_like(x, z) * FACTOR)

    tuned = tile.autotune(scaled)
    x = api.from_numpy(np.arange(512, dtype=np.float32)).sync()
    z = zeros((512,), tile.float32)
    with pytest.raises(TypeError, match="no candidates for the tile.Constant 'FACTOR'"):
        tuned(z, x)
    tuned(z, x, FACTOR=3).sync()
    np.testing.assert_array_equal(z.to_host().sync(), np.arange(512) * 3)
    tuned(z, x, FACTOR=5).sync()
    np.testing.assert_array_equal(z.to_host().sync(), np.arange(512) * 5)
    assert len(tuned._tuned) == 2 and any("FACTOR=5" in k for k in tuned._tuned)


def test_a_constant_set_by_the_configs_cannot_be_passed():
    mm = tile.autotune(configs=[tile.Config(tile=(32, 32), BK=16)])(tile.entry(_matmul))
    a = zeros((64, 64))
    with pytest.raises(TypeError, match="'BK' is set by the configs"):
        mm(a, a, a, BK=32)


def test_explicit_grid_searches_every_read_axis():
    @tile.entry
    def rows(out, x, BLOCK: tile.Constant[int]):
        i = tile.bid(0)
        t = x.load((i, 0), (1, BLOCK), padding=tile.PaddingMode.ZERO)
        tile.store(out.partition((1, BLOCK)), (i, 0), t + 1.0)

    seen = []

    def grid(cfg, args):
        seen.append(cfg.constants["BLOCK"])
        return (args["x"].shape[0], 1, 1)

    tuned = tile.autotune(grid=grid)(rows)
    x = api.from_numpy(np.ones((4, 256), np.float32)).sync()
    out = zeros((4, 256), tile.float32)
    space = tuned.configs_for(tile.atomic(out), x)
    assert {c.constants["BLOCK"] for c in space} == {256, 1024, 4096} and seen
    assert all(c.tile is None for c in space)


def test_default_space_winners_load_from_disk_without_building_the_space(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    from tilejit.autotune import Trial, Tuning
    mm = tile.autotune(tile.entry(_matmul))
    big = zeros((256, 256))
    space = mm.configs_for(big, big, big)
    key = mm._key(mm._bind((big, big, big), {}))
    mm._save(key, Tuning(2, [Trial(c, 0.1 * (i + 1)) for i, c in enumerate(space)]))
    (f,) = (tmp_path / "autotune").glob("_matmul-*.json")
    assert json.loads(f.read_text())[key]["configs"][2]["tile"] == list(space[2].tile)

    def no_space(*a, **k):
        raise AssertionError("the space was rebuilt")
    monkeypatch.setattr(tuning_space, "build", no_space)
    fresh = tile.autotune(tile.entry(_matmul))
    t = fresh._load(key)
    assert t.source == "disk" and repr(t.config) == repr(space[2])
    # a config list (not the default space) never reads a default-space file
    assert tile.autotune(configs=space)(tile.entry(_matmul))._load(key) is None


def test_source_analysis():
    facts = tuning_source.analyze(_matmul, "c")
    assert facts.block_axes == {0, 1} and not facts.block_wholesale
    facts = tuning_source.analyze(_softmax, "z")
    assert facts.block_wholesale and facts.reduced_axes == {1}
    facts = tuning_source.analyze(_heads, "o")
    assert facts.block_axes == {0, 1} and facts.extent_axes == {0, 2}
    assert tuning_source.find_partition(_row_scale, ("y", "x", "s")) == "y"
    assert tuning_space.constant_role("BLOCK_K") == "k_extent"
    assert tuning_space.constant_role("TILE_N") == "extent"
    assert tuning_space.constant_role("GROUP_SIZE_M") == "group"
    assert tuning_space.constant_role("KV_SPLITS") == "split"
    assert tuning_space.constant_role("V_LATENCY") == "latency"
    assert tuning_space.constant_role("CAUSAL") is None


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_the_default_space_compiles_for_sm_90(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    mm = tile.autotune(space={"max_configs": 3})(tile.entry(_matmul))
    big = zeros((1024, 1024))
    cubins = mm.precompile(big, big, big, target="sm_90")
    assert len(cubins) == 3 and all(c.cubin[:4] == b"\x7fELF" for c in cubins)


def test_configs_compile_in_threads_without_fighting_over_the_output(monkeypatch):
    """A tilejit tensor's partitions are exclusive: configs compiled side by side (as on a GPU)
    must not build their launches at the same time."""
    import concurrent.futures
    import time as _time
    mm = tile.autotune(space={"max_configs": 4})(tile.entry(_matmul))
    keys_for = mm.kernel._keys_for

    def slow_keys_for(*a, **k):          # hold the partition long enough for a rival to try
        _time.sleep(0.05)
        return keys_for(*a, **k)
    monkeypatch.setattr(mm.kernel, "_keys_for", slow_keys_for)
    a = zeros((64, 64))
    c = zeros((64, 64))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futs = mm.precompile(c, a, a, pool=pool)
        assert len(futs) == 4 and all(f.result().target == "sim" for f in futs)
