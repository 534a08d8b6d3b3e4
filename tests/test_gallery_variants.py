"""The performance variants of the gallery (issue 26) against NumPy on the simulator, at small
and ragged sizes, and compiled for sm_90 by tileiras at the keys benchmarks/vendor.py launches
(so a GPU run never meets a kernel tileiras rejects or one that computes the wrong thing)."""
import math
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "triton_tutorials"))
import attention_backward as AB  # noqa: E402
import attention_decode as AD  # noqa: E402
import flash_attention as FA  # noqa: E402
import fp8_matmul as F8  # noqa: E402
import layernorm as LN  # noqa: E402
import matmul as MM  # noqa: E402
import matmul_splitk as SK  # noqa: E402
import matmul_streamk as SKM  # noqa: E402
import rmsnorm as RN  # noqa: E402
import softmax as SM  # noqa: E402
import t08_grouped_gemm as T08  # noqa: E402
import t09_persistent_matmul as T09  # noqa: E402

pytestmark = pytest.mark.usefixtures("simulator_backend")
rng = np.random.default_rng(26)


def dev(a):
    return api.from_numpy(a).sync()


def rel(got, ref):
    return np.abs(got.to_numpy().astype(np.float64) - ref).max() / np.abs(ref).max()


def mm_ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("group", [1, 3])
def test_scheduled_matmul(persistent, group):
    an = rng.standard_normal((100, 70)).astype(np.float16)     # ragged in every dimension
    bn = rng.standard_normal((70, 90)).astype(np.float16)
    c = api.zeros((100, 90), tile.float16).sync()
    cfg = tile.Config(BM=32, BN=16, BK=16, GROUP=group, PERSISTENT=persistent, occupancy=1)
    tuned = tile.autotune(configs=[cfg], grid=lambda cf, args: MM.scheduled_grid(cf, args, sms=3))(
        MM.matmul_scheduled)
    tuned(tile.atomic(c), dev(an), dev(bn)).sync()
    assert rel(c, mm_ref(an, bn)) < 5e-3


def test_scheduled_matmul_tma_off_marks_every_load():
    """TMA=False (t09's variant without TMA) puts allow_tma=false on both operand loads; the
    default leaves the choice to tileiras."""
    a, c = dev(np.ones((64, 64), np.float16)), api.empty((64, 64), tile.float16).sync()
    loads = {}
    for tma in (True, False):
        ir = MM.matmul_scheduled.inspect_tileir(tile.atomic(c), a, a, 32, 32, 32, 8, True, tma)
        loads[tma] = [ln for ln in ir.splitlines() if "load_view" in ln]
    assert len(loads[False]) == len(loads[True]) == 2
    assert all("allow_tma = false" in ln for ln in loads[False])
    assert not any("allow_tma" in ln for ln in loads[True])


def test_grouped_gemm_tma_off_marks_every_load():
    """t08's TMA=False (the tutorial's pointer-based grouped GEMM) puts allow_tma=false on both
    operand loads of every group; the default leaves the choice to tileiras."""
    a, c = dev(np.ones((64, 64), np.float16)), api.empty((64, 64), tile.float16).sync()
    loads = {}
    for tma in (True, False):
        ir = T08.grouped_gemm.inspect_tileir((a, a), (a, a), (tile.atomic(c), tile.atomic(c)),
                                             32, 32, 32, tma)
        loads[tma] = [ln for ln in ir.splitlines() if "load_view" in ln]
    assert len(loads[False]) == len(loads[True]) == 2
    assert all("allow_tma = false" in ln for ln in loads[False])
    assert not any("allow_tma" in ln for ln in loads[True])


def test_grouped_gemm_tma_off_on_the_simulator():
    sizes = [40, 17, 64]
    an = [rng.standard_normal((s, s)).astype(np.float16) for s in sizes]
    bn = [rng.standard_normal((s, s)).astype(np.float16) for s in sizes]
    Cs = T08.group_gemm([dev(x) for x in an], [dev(x) for x in bn], (16, 16, 16), 3, tma=False)
    for a, b, c in zip(an, bn, Cs):
        assert rel(c, mm_ref(a, b)) < 5e-3


@pytest.mark.parametrize("fast", [False, True])
def test_scheduled_matmul_fp8_transposed_b(fast):
    """t09's fp8 rows: e4m3 A, B the transpose of a row-major (N, K), e4m3 C, ragged sizes;
    within e4m3 rounding of the float32 product, the fast sum marked on the mma only when
    asked (and only for fp8)."""
    m, k, n = 50, 96, 70
    an = (rng.standard_normal((m, k)) * k ** -0.25).astype(ml_dtypes.float8_e4m3fn)
    btn = (rng.standard_normal((n, k)) * k ** -0.25).astype(ml_dtypes.float8_e4m3fn)
    a, b = dev(an), dev(btn).permute(1, 0)
    c = api.empty((m, n), tile.float8_e4m3fn).sync()
    T09.persistent_matmul(a, b, c, (16, 32, 32), True, 3, fast_acc=fast).sync()
    ref = an.astype(np.float32) @ btn.astype(np.float32).T
    assert T09.fp8_error(c.to_numpy().astype(np.float32), ref, fast) <= 1
    ir = MM.matmul_scheduled.inspect_tileir(tile.atomic(c), a, b, 16, 32, 32, 8, True, True,
                                            fast)
    assert any("mmaf" in ln and "fast_acc" in ln for ln in ir.splitlines()) == fast
    a16, c16 = dev(np.ones((64, 64), np.float16)), api.empty((64, 64), tile.float16).sync()
    ir16 = MM.matmul_scheduled.inspect_tileir(tile.atomic(c16), a16, a16, 32, 32, 32, 8, True,
                                              True, True)
    assert "fast_acc" not in ir16                    # fp16 has no reduced-precision sum


@pytest.mark.parametrize("splits", [1, 4])
def test_splitk_with_an_empty_split(splits):
    an = rng.standard_normal((16, 80)).astype(np.float16)      # 5 K tiles of 16: 2+2+1+0
    bn = rng.standard_normal((80, 48)).astype(np.float16)
    c = api.zeros((16, 48), tile.float16).sync()
    ws = api.full((splits, 16, 48), np.nan, tile.float32).sync()   # every element rewritten
    SK.splitk_matmul(c, dev(an), dev(bn), ws, (16, 16), 16).sync()
    assert rel(c, mm_ref(an, bn)) < 5e-3


def test_fp8_matmul_column_major_b():
    a8, sa = F8.quantize(rng.standard_normal((64, 96)).astype(np.float32))
    bt8, sb = F8.quantize(rng.standard_normal((48, 96)).astype(np.float32))
    c = api.zeros((64, 48), tile.bfloat16).sync()
    scales = [dev(np.array([s], np.float32)) for s in (sa, sb)]
    F8.fp8_matmul(c.partition((32, 16)), dev(a8), dev(bt8).permute(1, 0), *scales, 32).sync()
    ref = mm_ref(a8.astype(np.float32), bt8.astype(np.float32).T) * sa * sb
    assert rel(c, ref) < 1e-2


@pytest.mark.parametrize("persistent,promote", [(False, 0), (True, 0), (True, 1), (False, 2)])
def test_fp8_matmul_scheduled(persistent, promote):
    """The grouped (and persistent) fp8 order with the scales, ragged sizes; the sum promoted by
    tileiras (0) or in the kernel every ``promote`` K tiles (a last group of fewer tiles)."""
    a8, sa = F8.quantize(rng.standard_normal((72, 160)).astype(np.float32))
    bt8, sb = F8.quantize(rng.standard_normal((56, 160)).astype(np.float32))
    c = api.zeros((72, 56), tile.bfloat16).sync()
    scales = [dev(np.array([s], np.float32)) for s in (sa, sb)]
    cfg = tile.Config(BM=32, BN=16, BK=64, GROUP=2, PERSISTENT=persistent, PROMOTE=promote)
    F8.scheduled(False, [cfg])(tile.atomic(c), dev(a8), dev(bt8).permute(1, 0), *scales).sync()
    ref = mm_ref(a8.astype(np.float32), bt8.astype(np.float32).T) * sa * sb
    assert rel(c, ref) < 1e-2


@pytest.mark.parametrize("bk,fast", [(256, False), (256, True), (64, False)])
def test_fp8_matmul_scheduled_promotes_by_default_where_k_tiles_are_256(bk, fast):
    """PROMOTE's default (AUTO) promotes in the kernel for K tiles of 256 and leaves the rest,
    and every fast sum, to tileiras: each reaches the product (K = 600, a ragged last tile)."""
    a8, sa = F8.quantize(rng.standard_normal((40, 600)).astype(np.float32))
    bt8, sb = F8.quantize(rng.standard_normal((24, 600)).astype(np.float32))
    c = api.zeros((40, 24), tile.bfloat16).sync()
    scales = [dev(np.array([s], np.float32)) for s in (sa, sb)]
    cfg = tile.Config(BM=32, BN=16, BK=bk, GROUP=2, PERSISTENT=True)
    args = (tile.atomic(c), dev(a8), dev(bt8).permute(1, 0), *scales)
    F8.scheduled(fast, [cfg])(*args, FAST_ACC=fast).sync()
    ref = mm_ref(a8.astype(np.float32), bt8.astype(np.float32).T) * sa * sb
    assert rel(c, ref) < 1e-2
    # which form AUTO took: its Tile IR is that of PROMOTE=1 or of PROMOTE=0
    def ir(**promote):
        return F8.fp8_matmul_scheduled.inspect_tileir(*args, BM=32, BN=16, BK=bk, GROUP=2,
                                                      PERSISTENT=True, FAST_ACC=fast, **promote)
    forms = {"kernel": ir(PROMOTE=1), "tileiras": ir(PROMOTE=0)}
    assert forms["kernel"] != forms["tileiras"]
    assert ir() == forms["kernel" if bk == 256 and not fast else "tileiras"]


def test_fp8_matmul_scheduled_names_the_promote_values():
    a8 = dev(np.zeros((32, 64), np.uint8).view(F8.ml_dtypes.float8_e4m3fn))
    c = api.zeros((32, 32), tile.bfloat16).sync()
    s = dev(np.ones(1, np.float32))
    with pytest.raises(tile.TileJitError, match="PROMOTE is AUTO"):
        F8.fp8_matmul_scheduled(tile.atomic(c), a8, a8.permute(1, 0), s, s, BM=32, BN=32, BK=64,
                                GROUP=1, PERSISTENT=False, PROMOTE=-2).grid((1, 1, 1)).sync()


def _splitk_fused_inputs(m=32, k=320, n=96, splits=4, tile_mn=(16, 32)):
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn = rng.standard_normal((k, n)).astype(np.float16)
    ws = api.full((splits, m, n), np.nan, tile.float32).sync()
    arrived = api.zeros((-(-m // tile_mn[0]) * -(-n // tile_mn[1]),), tile.int32).sync()
    return an, bn, ws, arrived


@pytest.mark.parametrize("schedule", ["shuffle", "interleave"])
def test_splitk_fused_sums_once_every_slice_arrived(schedule, monkeypatch):
    """One-launch split-K: the last block of a tile sums every slice, under a shuffled or
    interleaved block schedule, and leaves the counters at zero for the next launch."""
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    an, bn, ws, arrived = _splitk_fused_inputs()
    for seed in ("1", "2"):
        monkeypatch.setenv("TILEJIT_SIM_SEED", seed)
        c = api.full((32, 96), np.nan, tile.float16).sync()
        SK.splitk_fused(c, dev(an), dev(bn), ws, arrived, (16, 32), 32).sync()
        assert rel(c, mm_ref(an, bn)) < 5e-3
        assert not arrived.to_numpy().any()


def test_splitk_fused_without_its_release_edge_loses_slices(monkeypatch):
    """Lowered without acquire/release edges, the summing block misses other blocks' slices
    under the interleave schedule (the counter's ordering is what makes the sum right)."""
    from tilejit.lowering.tokens import MemoryTokens
    monkeypatch.setattr(MemoryTokens, "ordering_edges", False)
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", "interleave")
    racy = tile.entry(SK.matmul_splitk_fused.py_func)
    an, bn, ws, arrived = _splitk_fused_inputs()
    wrong = 0
    for seed in range(4):
        monkeypatch.setenv("TILEJIT_SIM_SEED", str(seed))
        c = api.full((32, 96), np.nan, tile.float16).sync()
        ws = api.full((4, 32, 96), np.nan, tile.float32).sync()
        racy(tile.atomic(c), tile.atomic(ws), tile.atomic(arrived), dev(an), dev(bn), 16, 32,
             32).grid((4, 2, 3)).sync()
        wrong += not rel(c, mm_ref(an, bn)) < 5e-3
    assert wrong > 0


def softmax_ref(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def run_rows(kernel, cfg, *args):
    tuned = tile.autotune(configs=[cfg], grid=lambda cf, a: SM.rows_grid(cf, a, sms=3))(kernel)
    tuned(*args).sync()


@pytest.mark.parametrize("variant", ["persistent", "chunked"])
def test_softmax_variants(variant):
    x = (rng.standard_normal((37, 300)) * 4).astype(np.float16)
    z = api.full((37, 300), np.nan, tile.float16).sync()
    cfg = tile.Config(ROWS=4, WIDTH=512, LATENCY=2) if variant == "persistent" else \
        tile.Config(ROWS=2, CHUNK=64)
    run_rows(SM.softmax_persistent if variant == "persistent" else SM.softmax_chunked, cfg,
             tile.atomic(z), dev(x))
    np.testing.assert_allclose(z.to_numpy().astype(np.float64),
                               softmax_ref(x.astype(np.float64)), atol=2e-3)


def ln_ref(x, w, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(1, keepdims=True)
    rs = 1 / np.sqrt(x.var(1, keepdims=True) + eps)
    return (x - mu) * rs * w + b, mu[:, 0], rs[:, 0]


@pytest.mark.parametrize("variant", ["rows", "rows two reductions", "persistent",
                                     "persistent reloading w and b", "chunked"])
@pytest.mark.parametrize("offset", [50.0, 1000.0])
def test_layernorm_variants(variant, offset):
    # a mean far from zero and, in one row, a first element (the pivot of the one-pass sums)
    # far from the mean: the statistics must not cancel
    x = (rng.standard_normal((21, 300)) + offset).astype(np.float32)
    x[5, 0] = offset + 40
    w, b = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    y = api.full((21, 300), np.nan, tile.float32).sync()
    mean, rstd = api.zeros((21,)).sync(), api.zeros((21,)).sync()
    args = (dev(x), dev(w), dev(b), tile.atomic(mean), tile.atomic(rstd), 1e-5)
    if variant.startswith("rows"):
        LN.layernorm_fwd(y.partition((4, 512)), *args, variant == "rows").sync()
    elif variant.startswith("persistent"):
        run_rows(LN.layernorm_fwd_persistent,
                 tile.Config(ROWS=4, WIDTH=512, LATENCY=2, RELOAD_WB=variant != "persistent"),
                 tile.atomic(y), *args)
    else:
        run_rows(LN.layernorm_fwd_chunked, tile.Config(ROWS=2, CHUNK=64), tile.atomic(y), *args)
    ry, rmu, rrs = ln_ref(x, w, b, 1e-5)
    # x - mean in float32 near 1000 errs by about ulp(1000) = 6e-5 (times |w| * rstd); the
    # pivot's x - x0 is exact, so only the two-reduction form needs the wider atol
    atol = 1e-3 if variant == "rows two reductions" else 1e-4
    np.testing.assert_allclose(y.to_numpy(), ry, rtol=1e-4, atol=atol)
    np.testing.assert_allclose(mean.to_numpy(), rmu, rtol=1e-6)
    np.testing.assert_allclose(rstd.to_numpy(), rrs, rtol=1e-4)


def test_layernorm_auto_takes_mean_then_variance_up_to_1k_and_the_pair_above():
    """ONE_REDUCTION=AUTO (the default) is decided when the kernel is specialized: mean then
    variance (three loads: x, w, b) for rows of at most 1K elements, one reduction of the pair
    (a fourth load, the pivot) above; True and False still force either form."""
    def loads(width, *one):
        x = api.zeros((8, width), tile.float16).sync()
        w = api.zeros((width,), tile.float16).sync()
        y = api.zeros((8, width), tile.float16).sync()
        m = api.zeros((8,)).sync()
        return LN.layernorm_fwd.inspect_tileir(y.partition((4, width)), x, w, w, tile.atomic(m),
                                               tile.atomic(m), 1e-5, *one).count("load_view_tko")
    assert (loads(1024), loads(2048)) == (3, 4)
    assert (loads(1024, True), loads(2048, False)) == (4, 3)
    assert (loads(1024, LN.AUTO), loads(512)) == (3, 3)
    with pytest.raises(tile.CompileError, match="ONE_REDUCTION must be True, False or AUTO"):
        loads(1024, 2)


def test_persistent_layernorm_reloads_w_and_b_for_row_tiles_of_16k_elements_by_default():
    """RELOAD_WB=AUTO (the default) is decided when the kernel is specialized: w and b held
    across the loop for row tiles under 16K elements (their loads before the loop), read in
    every iteration from 16K on (held, they spilled a 32K row); True and False still force."""
    def ir(rows, width, *reload):
        x = api.zeros((8, width), tile.float16).sync()
        w = api.zeros((width,), tile.float16).sync()
        m = api.zeros((8,)).sync()
        kw = dict(ROWS=rows, WIDTH=width, LATENCY=2)
        if reload:
            kw["RELOAD_WB"] = reload[0]
        return LN.layernorm_fwd_persistent.inspect_tileir(
            tile.atomic(x), x, w, w, tile.atomic(m), tile.atomic(m), 1e-5, **kw)
    assert ir(2, 8192) == ir(2, 8192, True) != ir(2, 8192, False)
    assert ir(1, 8192) == ir(1, 8192, False) != ir(1, 8192, True)
    with pytest.raises(tile.CompileError, match="RELOAD_WB must be True, False or AUTO"):
        ir(1, 1024, 2)


@pytest.mark.parametrize("variant", ["rows", "rows two reductions", "persistent"])
def test_layernorm_exact_width_skips_the_mask_and_refuses_other_widths(variant):
    """EXACT: rows exactly the tile's width need no mask in the statistics (same results);
    rows of another length give NaN in rstd and y, never silently wrong statistics."""
    for n, width, exact_fits in ((256, 256, True), (300, 512, False)):
        x = (rng.standard_normal((21, n)) + 1000.0).astype(np.float32)
        w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        y = api.full((21, n), np.nan, tile.float32).sync()
        mean, rstd = api.zeros((21,)).sync(), api.zeros((21,)).sync()
        args = (dev(x), dev(w), dev(b), tile.atomic(mean), tile.atomic(rstd), 1e-5)
        if variant == "persistent":
            run_rows(LN.layernorm_fwd_persistent,
                     tile.Config(ROWS=4, WIDTH=width, LATENCY=2, EXACT=True), tile.atomic(y),
                     *args)
        else:
            LN.layernorm_fwd(y.partition((4, width)), *args, variant == "rows", True).sync()
        if exact_fits:
            ry, rmu, rrs = ln_ref(x, w, b, 1e-5)
            atol = 1e-3 if variant == "rows two reductions" else 1e-4
            np.testing.assert_allclose(y.to_numpy(), ry, rtol=1e-4, atol=atol)
            np.testing.assert_allclose(rstd.to_numpy(), rrs, rtol=1e-4)
        else:
            assert np.isnan(rstd.to_numpy()).all() and np.isnan(y.to_numpy()).all()


@pytest.mark.parametrize("variant", ["persistent", "chunked"])
def test_rmsnorm_variants(variant):
    x = rng.standard_normal((21, 300)).astype(np.float16)
    w = rng.standard_normal(300).astype(np.float16)
    y = api.full((21, 300), np.nan, tile.float16).sync()
    if variant == "persistent":
        kern, cfg = RN.rmsnorm_persistent, tile.Config(ROWS=4, WIDTH=512, LATENCY=2)
    else:
        kern, cfg = RN.rmsnorm_chunked, tile.Config(ROWS=2, CHUNK=64)
    run_rows(kern, cfg, tile.atomic(y), dev(x), dev(w), 1e-6)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y.to_numpy().astype(np.float64), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_two_query_tiles_odd_tile_count(causal):
    q, k, v = (rng.standard_normal((2, 96, 32)).astype(np.float16) for _ in range(3))
    o = api.full((2, 96, 32), np.nan, tile.float16).sync()   # 3 query tiles of 32: 2 blocks
    FA.attention_2q(o.permute(1, 0, 2).partition((64, 1, 32)), dev(q), dev(k), dev(v), 16,
                    causal).sync()
    np.testing.assert_allclose(o.to_numpy().astype(np.float64), FA.reference(q, k, v, causal),
                               atol=3e-3)


def test_attention_gqa_four_query_heads_per_kv_head():
    q = rng.standard_normal((8, 80, 32)).astype(np.float16)
    k, v = (rng.standard_normal((2, 80, 32)).astype(np.float16) for _ in range(2))
    o = api.full((8, 80, 32), np.nan, tile.float16).sync()
    FA.attention(o.permute(1, 0, 2).partition((32, 1, 32)), dev(q), dev(k), dev(v), 32,
                 True).sync()
    np.testing.assert_allclose(o.to_numpy().astype(np.float64), FA.reference(q, k, v, True),
                               atol=3e-3)


def test_attention_forward_ignores_nan_in_the_max_but_not_in_the_output():
    q, k, v = (rng.standard_normal((1, 64, 32)).astype(np.float16) for _ in range(3))
    q[0, 5, 3] = np.nan                                  # row 5's scores are all NaN
    k[0, 40, 0] = np.nan                                 # column 40's score is NaN in every row
    o = api.zeros((1, 64, 32), tile.float16).sync()
    FA.attention(o.permute(1, 0, 2).partition((32, 1, 32)), dev(q), dev(k), dev(v), 32,
                 False).sync()
    assert np.isnan(o.to_numpy()).all()                  # as the reference: NaN everywhere
    o = api.zeros((1, 64, 32), tile.float16).sync()
    FA.attention(o.permute(1, 0, 2).partition((32, 1, 32)), dev(q), dev(k), dev(v), 32,
                 True).sync()                            # causal: rows < 40 never see column 40
    got = o.to_numpy()
    assert np.isnan(got[0, 5]).all() and np.isnan(got[0, 40:]).all()
    clean = [r for r in range(40) if r != 5]
    np.testing.assert_allclose(got[0, clean].astype(np.float64),
                               FA.reference(q, k, v, True)[0, clean], atol=3e-3)


@pytest.mark.parametrize("fused", [True, False])
def test_decode_gqa_split_kv_with_an_empty_split(fused):
    groups, g, s, d = 3, 4, 288, 32                      # 9 key tiles of 32 over 4 splits: 3,3,3,0
    q = rng.standard_normal((groups, g, d)).astype(np.float16)
    k, v = (rng.standard_normal((groups, s, d)).astype(np.float16) for _ in range(2))
    out = api.full((groups, g, d), np.nan, tile.float16).sync()
    AD.decode(out, dev(q), dev(k), dev(v), *AD.workspaces(groups, g, d, 4), 32,
              fused=fused).sync()
    np.testing.assert_allclose(out.to_numpy().astype(np.float64), AD.reference(q, k, v),
                               atol=2e-3)


@pytest.mark.parametrize("schedule", ["shuffle", "interleave"])
def test_decode_fused_merges_once_every_range_arrived(schedule, monkeypatch):
    """The last block of a group merges; under a shuffled or interleaved block schedule it still
    sees every other range's partials, and the counters are back at zero for the next launch."""
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    groups, g, s, d = 4, 2, 256, 32
    q = rng.standard_normal((groups, g, d)).astype(np.float16)
    k, v = (rng.standard_normal((groups, s, d)).astype(np.float16) for _ in range(2))
    ws = AD.workspaces(groups, g, d, 4)
    for seed in ("1", "2"):                              # a second launch reuses the counters
        monkeypatch.setenv("TILEJIT_SIM_SEED", seed)
        out = api.full((groups, g, d), np.nan, tile.float16).sync()
        AD.decode(out, dev(q), dev(k), dev(v), *ws, 32).sync()
        np.testing.assert_allclose(out.to_numpy().astype(np.float64), AD.reference(q, k, v),
                                   atol=2e-3)
        assert (ws[2].to_numpy() == 0).all()


def test_decode_fused_without_its_release_edge_loses_partials(monkeypatch):
    """The acceptance test of the arrival counter's ordering: lowered without acquire/release
    edges, the merging block misses other ranges' partials under the interleave schedule."""
    from tilejit.lowering.tokens import MemoryTokens
    monkeypatch.setattr(MemoryTokens, "ordering_edges", False)
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", "interleave")
    racy = tile.entry(AD.decode_fused.py_func)          # a fresh kernel: lowered anew
    groups, g, s, d = 4, 2, 256, 32
    q = rng.standard_normal((groups, g, d)).astype(np.float16)
    k, v = (rng.standard_normal((groups, s, d)).astype(np.float16) for _ in range(2))
    ref = AD.reference(q, k, v)
    wrong = 0
    for seed in range(4):
        monkeypatch.setenv("TILEJIT_SIM_SEED", str(seed))
        out = api.full((groups, g, d), np.nan, tile.float16).sync()
        o_ws, lse_ws, arrived = AD.workspaces(groups, g, d, 4)
        racy(tile.atomic(out), tile.atomic(o_ws), tile.atomic(lse_ws), tile.atomic(arrived),
             dev(q), dev(k), dev(v), 16, d, 32).grid((4, groups, 1)).sync()
        got = out.to_numpy().astype(np.float64)
        wrong += not np.allclose(got, ref, atol=2e-3)
    assert wrong > 0


@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_unequal_tiles(causal):
    bh, s, d = 2, 96, 32
    q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    tq, tk, tv, tdo = (dev(a) for a in (q, k, v, do))
    o = api.zeros((bh, s, d), tile.float16).sync()
    lse, delta = api.zeros((bh, s)).sync(), api.zeros((bh, s)).sync()
    grads = [api.full((bh, s, d), np.nan, tile.float16).sync() for _ in range(3)]
    AB.forward(o, lse, tq, tk, tv, 32, 16, causal).sync()
    AB.backward(*grads, tq, tk, tv, o, tdo, lse, delta, ((16, 32), (64, 16)), causal).sync()
    for got, ref in zip([o] + grads, AB.reference(q, k, v, do, causal)):
        assert rel(got, ref) < 1e-2


def _streamk_run(m, k, n, blocks, sk_waves, tile_mnk=(32, 32, 32), group=2):
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn = rng.standard_normal((k, n)).astype(np.float16)
    ws, arrived = SKM.workspace(blocks, tile_mnk[0], tile_mnk[1], sk_waves)
    a, b = dev(an), dev(bn)
    errs = []
    for _ in range(2):                  # the counters are left zero for the next launch
        c = api.full((m, n), np.nan, tile.float16).sync()
        api.fill(ws, np.nan).sync()     # a part read before it is written shows as NaN
        SKM.streamk(c, a, b, ws, arrived, *tile_mnk, group=group, sk_waves=sk_waves,
                    blocks=blocks, strip=16).sync()     # two strips a tile
        errs.append(rel(c, mm_ref(an, bn)))
        assert not arrived.to_numpy().any()
    return errs


@pytest.mark.parametrize("schedule", ["serial", "shuffle", "interleave"])
@pytest.mark.parametrize("m,k,n,blocks,sk_waves", [
    (96, 320, 96, 4, 1),     # 9 tiles: 8 whole, the last in 4 parts of 3, 3, 3 and 1 K tiles
    (96, 320, 80, 4, 2),     # ragged N; 9 tiles: 4 whole, 5 shared (two stream-K waves)
    (64, 300, 96, 7, 1),     # ragged K; 6 tiles < 7 blocks: every tile shared
    (128, 96, 128, 5, 1),    # 16 tiles: 15 whole, the last over 3 blocks, 2 with nothing
])
def test_streamk_matmul_sums_each_shared_tile_once(m, k, n, blocks, sk_waves, schedule,
                                                   monkeypatch):
    """Stream-K: whole tiles, then the rest by equal shares of K iterations, each shared tile
    summed by the last block to arrive, under every block schedule."""
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    assert max(_streamk_run(m, k, n, blocks, sk_waves)) < 5e-3


def test_streamk_matmul_without_its_release_edge_loses_parts(monkeypatch):
    """Lowered without acquire/release edges, the summing block misses other blocks' parts
    under the interleave schedule (the counter's ordering is what makes the sum right)."""
    from tilejit.lowering.tokens import MemoryTokens
    monkeypatch.setattr(MemoryTokens, "ordering_edges", False)
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", "interleave")
    racy = tile.entry(SKM.matmul_streamk.py_func)
    monkeypatch.setattr(SKM, "matmul_streamk", racy)
    wrong = 0
    for seed in range(4):
        monkeypatch.setenv("TILEJIT_SIM_SEED", str(seed))
        wrong += not max(_streamk_run(64, 300, 96, 7, 1)) < 5e-3
    assert wrong > 0


# --- sm_90 compiles at the benchmark's keys ---------------------------------------------------
def empty(shape, dtype=tile.float16):
    return api.empty(shape, dtype).sync()


def _sm90_cases():
    """(name, kernel, args (a function: partitions are made when compiled), constants): one
    representative config per variant, at GPU sizes."""
    a, c = empty((4096, 4096)), empty((4096, 4096))
    sk, ws = empty((8192, 8192)), empty((4, 16, 8192), tile.float32)
    f8 = api.empty((4096, 4096), tile.float8_e4m3fn).sync()
    one = empty((1,), tile.float32)
    x, w = empty((16384, 4096)), empty((4096,))
    xl, wl = empty((2048, 32768)), empty((32768,))
    st, stl = empty((16384,), tile.float32), empty((2048,), tile.float32)
    q, kv8 = empty((64, 4096, 128)), empty((16, 4096, 128))
    e5 = api.empty((32, 4096, 64), tile.float8_e5m2).sync()
    e5t = api.empty((32, 64, 4096), tile.float8_e5m2).sync().permute(0, 2, 1)  # V, S contiguous
    lse = empty((64, 4096), tile.float32)
    oq, okv = empty((64, 4, 128)), empty((64, 16384, 128))
    ows, lws = empty((8, 64 * 16, 128), tile.float32), empty((8, 64 * 16), tile.float32)
    t = tile.atomic

    def heads(u, bm):           # a fresh output each time: the compiles run side by side
        return empty(u.shape).permute(1, 0, 2).partition((bm, 1, 128))

    def part(shape, tile_shape, dtype=tile.float16):
        return empty(shape, dtype).partition(tile_shape)

    def groups():               # t08's groups: square fp16 products of four sizes
        sq = [empty((s, s)) for s in (2048, 1024, 512, 256)]
        return tuple(sq), tuple(sq), tuple(t(empty(x.shape)) for x in sq)

    rows = dict(ROWS=2, WIDTH=4096, LATENCY=4)
    chunks = dict(ROWS=1, CHUNK=4096)
    return [
        ("matmul persistent", MM.matmul_scheduled, lambda: (t(c), a, a),
         dict(BM=128, BN=128, BK=64, GROUP=8, PERSISTENT=True)),
        ("matmul persistent no TMA", MM.matmul_scheduled, lambda: (t(c), a, a),
         dict(BM=128, BN=128, BK=64, GROUP=8, PERSISTENT=True, TMA=False)),
        ("t09 fp8 persistent, B transposed, e4m3 out, fast sum", MM.matmul_scheduled,
         lambda: (t(api.empty((4096, 4096), tile.float8_e4m3fn).sync()), f8, f8.permute(1, 0)),
         dict(BM=128, BN=128, BK=128, GROUP=8, PERSISTENT=True, FAST_ACC=True)),
        ("t09 fp8 persistent no TMA", MM.matmul_scheduled,
         lambda: (t(api.empty((4096, 4096), tile.float8_e4m3fn).sync()), f8, f8.permute(1, 0)),
         dict(BM=128, BN=128, BK=128, GROUP=8, PERSISTENT=True, TMA=False, FAST_ACC=True)),
        ("t08 grouped gemm", T08.grouped_gemm, lambda: groups(), dict(BM=128, BN=128, BK=32)),
        ("t08 grouped gemm no TMA", T08.grouped_gemm, lambda: groups(),
         dict(BM=128, BN=128, BK=32, TMA=False)),
        ("splitk partial", SK.matmul_partial,
         lambda: (part(ws.shape, (1, 16, 64), tile.float32), empty((16, 8192)), sk), {"BK": 128}),
        ("splitk sum", SK.sum_partials, lambda: (part((16, 8192), (16, 128)), ws), {}),
        ("matmul hinted (skinny)", MM.matmul_hinted,
         lambda: (part((256, 8192), (128, 128)), empty((256, 8192)), sk),
         dict(BK=64, LATENCY=6)),
        ("matmul stream-K 128x256", SKM.matmul_streamk,
         lambda: (t(c), t(empty((2 * 132 * 128, 256), tile.float32)),
                  t(empty((132,), tile.int32)), a, a),
         dict(BM=128, BN=256, BK=32, GROUP=8, SK_WAVES=1)),
        ("splitk one launch", SK.matmul_splitk_fused,
         lambda: (t(empty((16, 8192))), t(empty(ws.shape, tile.float32)),
                  t(empty((2048,), tile.int32)), empty((16, 8192)), sk),
         dict(BM=16, BN=64, BK=128)),
        ("fp8", F8.fp8_matmul, lambda: (part((4096, 4096), (128, 256), tile.bfloat16), f8,
                                        f8.permute(1, 0), one, one), {"BK": 128}),
        ("fp8 scheduled promoted", F8.fp8_matmul_scheduled,
         lambda: (t(api.empty((4096, 4096), tile.bfloat16).sync()), f8, f8.permute(1, 0), one,
                  one), dict(BM=128, BN=128, BK=256, GROUP=8, PERSISTENT=True, PROMOTE=1)),
        ("fp8 scheduled fast 128x256", F8.fp8_matmul_scheduled,
         lambda: (t(api.empty((4096, 4096), tile.bfloat16).sync()), f8, f8.permute(1, 0), one,
                  one), dict(BM=128, BN=256, BK=128, GROUP=8, PERSISTENT=False, FAST_ACC=True)),
        ("softmax persistent", SM.softmax_persistent, lambda: (t(x), x), rows),
        ("softmax chunked", SM.softmax_chunked, lambda: (t(xl), xl), chunks),
        ("layernorm persistent", LN.layernorm_fwd_persistent,
         lambda: (t(x), x, w, w, t(st), t(st), 1e-5), rows),
        ("layernorm persistent 32K, exact, w and b reloaded", LN.layernorm_fwd_persistent,
         lambda: (t(xl), xl, wl, wl, t(stl), t(stl), 1e-5),
         dict(ROWS=1, WIDTH=32768, LATENCY=2, EXACT=True, RELOAD_WB=True)),
        ("layernorm chunked", LN.layernorm_fwd_chunked,
         lambda: (t(xl), xl, wl, wl, t(stl), t(stl), 1e-5), chunks),
        ("rmsnorm persistent", RN.rmsnorm_persistent, lambda: (t(x), x, w, 1e-6), rows),
        ("rmsnorm chunked", RN.rmsnorm_chunked, lambda: (t(xl), xl, wl, 1e-6), chunks),
        ("attention gqa causal", FA.attention, lambda: (heads(q, 128), q, kv8, kv8),
         dict(BN=64, CAUSAL=True)),
        ("attention fp8 e5m2", FA.attention,        # t06's fp8 forward: V transposed
         lambda: (empty(e5.shape, tile.float8_e5m2).permute(1, 0, 2).partition((128, 1, 64)), e5,
                  e5, e5t), dict(BN=64, CAUSAL=True)),
        ("attention two query tiles", FA.attention_2q, lambda: (heads(q, 128), q, q, q),
         dict(BN=64, CAUSAL=False)),
        ("decode partial", AD.decode_partial,
         lambda: (part(ows.shape, (1, 16, 128), tile.float32), t(lws), oq, okv, okv), {"BN": 128}),
        ("decode combine", AD.decode_combine, lambda: (part(oq.shape, (1, 16, 128)), ows, lws),
         {}),
        ("decode fused", AD.decode_fused,
         lambda: (t(empty(oq.shape)), t(ows), t(lws), t(empty((64,), tile.int32)), oq, okv,
                  okv), dict(GP=16, D=128, BN=128)),
        ("backward fwd+lse", AB.attention_fwd_lse, lambda: (heads(q, 128), t(lse), q, q, q),
         dict(BN=64, CAUSAL=True)),
        ("backward delta", AB.attention_bwd_delta,
         lambda: (part(lse.shape, (1, 128), tile.float32), q, q), {"D": 128}),
        ("backward dkdv", AB.attention_bwd_dkdv,
         lambda: (heads(q, 64), heads(q, 64), q, q, q, q, lse, lse), dict(BM=64, CAUSAL=True)),
        ("backward dq", AB.attention_bwd_dq, lambda: (heads(q, 128), q, q, q, q, lse, lse),
         dict(BN=64, CAUSAL=True)),
    ]


@pytest.mark.slow
@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_every_variant_compiles_for_sm_90():
    import concurrent.futures

    def compile_one(case):
        name, kernel, args, consts = case
        try:
            cubin = kernel.compile(*args(), arch="sm_90", **consts)
            return None if cubin[:4] == b"\x7fELF" else f"{name}: not an ELF cubin"
        except Exception as e:  # noqa: BLE001  (collect every failure, then report them all)
            return f"{name}: {type(e).__name__}: {str(e).splitlines()[0]}"

    with concurrent.futures.ThreadPoolExecutor(2) as pool:   # tileiras runs in subprocesses
        failures = [f for f in pool.map(compile_one, _sm90_cases()) if f]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("n,split", [(1024, True), (2048, False), (1000, False), (4096, False)])
def test_norms_of_1k_rows_load_in_128_byte_boxes(n, split):
    """layernorm_fwd and rmsnorm load rows of 1K elements with box_width=ROW_BOX (where the key
    proves the width a multiple of it: not 1000), other widths plainly, and compute the same
    norms."""
    x = (rng.standard_normal((6, n)) + 2.0).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bn = 1 << (n - 1).bit_length()
    y = api.full((6, n), np.nan, tile.float32).sync()
    mean, rstd = api.zeros((6,)).sync(), api.zeros((6,)).sync()
    args = (dev(x), dev(w), dev(b), tile.atomic(mean), tile.atomic(rstd), 1e-5)
    LN.layernorm_fwd(y.partition((2, bn)), *args).sync()
    ry, _, _ = ln_ref(x, w, b, 1e-5)
    np.testing.assert_allclose(y.to_numpy(), ry, rtol=1e-4, atol=1e-4)
    views = LN.layernorm_fwd.inspect_tileir(y.partition((2, bn)), *args).count("make_tensor_view")
    assert views == 6 + 3 * split                  # x, w, b, y, mean, rstd (+ x, w and b split)
    z = api.full((6, n), np.nan, tile.float32).sync()
    RN.rmsnorm.kernel(z.partition((2, bn)), dev(x), dev(w), 1e-6).sync()
    ref = x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(z.to_numpy(), ref, rtol=1e-4, atol=1e-4)
    views = RN.rmsnorm.kernel.inspect_tileir(z.partition((2, bn)), dev(x), dev(w), 1e-6).count(
        "make_tensor_view")
    assert views == 3 + 2 * split
