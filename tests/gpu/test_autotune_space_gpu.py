"""tile.autotune's default search space on a GPU (issue 26): every config of the space timed, the
fastest kept and correct, a key tuned within the time target cold and from disk warm."""
import time

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from test_autotune_gpu import cache_dir  # noqa: F401  (a fresh cache directory per test)
from test_autotune_space import _matmul, _softmax  # noqa: E402  (the CPU tests' kernels)

pytestmark = pytest.mark.gpu


def test_a_matmul_key_tunes_cold_within_the_target_and_warm_from_disk(cache_dir):
    r = np.random.default_rng(0)
    an = r.standard_normal((4096, 4096)).astype(np.float16)
    bn = r.standard_normal((4096, 4096)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = api.full((4096, 4096), np.nan, tile.float16).sync()
    mm = tile.autotune(key=["a", "b"])(tile.entry(_matmul))
    t0 = time.perf_counter()
    mm(c, a, b).sync()
    cold = time.perf_counter() - t0
    ref = an[:256].astype(np.float32) @ bn.astype(np.float32)
    got = c.to_numpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got[:256].astype(np.float32), ref, rtol=2e-2, atol=0.5)
    (tuning,) = mm._tuned.values()
    timed = [t.ms for t in tuning.trials if t.ms is not None]
    assert len(tuning.trials) > 8 and len(timed) >= len(tuning.trials) // 2
    assert tuning.trials[tuning.best].ms == min(timed)
    print(f"cold tuning of a 4096^3 fp16 key, {len(tuning.trials)} configs: {cold:.1f} s; "
          f"best {tuning.config} {min(timed):.3f} ms")
    assert cold < 30, mm.tuning_report()           # issue 26: <= 10 s on a 16-core host
    fresh = tile.autotune(key=["a", "b"])(tile.entry(_matmul))
    t0 = time.perf_counter()
    fresh(c, a, b).sync()
    warm = time.perf_counter() - t0
    (t2,) = fresh._tuned.values()
    assert t2.source == "disk" and repr(t2.config) == repr(tuning.config)
    st = fresh.kernel.stats                          # the winner only (its cubin from disk)
    assert st.compiles + st.index_hits == 1, st
    assert warm < 2.0, warm


def test_a_row_kernel_space_keeps_rows_whole_and_computes_softmax(cache_dir):
    x = np.random.default_rng(1).standard_normal((4096, 3000)).astype(np.float32)
    z = api.full((4096, 3000), np.nan, tile.float32).sync()
    sm = tile.autotune(key=["x"])(tile.entry(_softmax))
    sm(z, api.from_numpy(x).sync()).sync()
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(z.to_numpy(), e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    (tuning,) = sm._tuned.values()
    assert all(t.config.tile[1] == 4096 for t in tuning.trials)
    assert sum(t.ms is not None for t in tuning.trials) >= 3


def test_the_default_space_times_its_winner_one_occupancy_below_and_above(cache_dir):
    x = np.random.default_rng(2).standard_normal((8192, 1024)).astype(np.float16)
    z = api.full((8192, 1024), np.nan, tile.float16).sync()
    sm = tile.autotune(key=["x"], space={"max_configs": 1})(tile.entry(_softmax))
    sm(z, api.from_numpy(x).sync()).sync()
    e = np.exp(x.astype(np.float32) - x.max(1, keepdims=True))
    np.testing.assert_allclose(z.to_numpy().astype(np.float32), e / e.sum(1, keepdims=True),
                               rtol=1e-2, atol=1e-3)
    (tuning,) = sm._tuned.values()
    only = tuning.trials[0].config
    beside = tuning.trials[1:]
    assert all(t.note.startswith("occupancy beside the best") and t.ms is not None
               for t in beside)
    assert sorted(t.config.occupancy for t in beside) == \
        sorted({only.occupancy - 1, only.occupancy + 1} - {0}), sm.tuning_report()
    assert all(t.config.tile == only.tile for t in beside)
    timed = [t.ms for t in tuning.trials]
    assert tuning.trials[tuning.best].ms == min(timed)


def test_a_32k_row_space_times_two_warp_groups_too(cache_dir):
    """Rows of 32K elements, a whole row per block: the default space times each occupancy with
    tileiras's warp count and with two warp groups (num_worker_warps=8), and the kept config
    computes the softmax."""
    x = np.random.default_rng(2).standard_normal((256, 32768)).astype(np.float16)
    z = api.full((256, 32768), np.nan, tile.float16).sync()
    sm = tile.autotune(key=["x"])(tile.entry(_softmax))
    sm(z, api.from_numpy(x).sync()).sync()
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(1, keepdims=True))
    np.testing.assert_allclose(z.to_numpy().astype(np.float32), e / e.sum(1, keepdims=True),
                               rtol=2e-2, atol=1e-6)
    (tuning,) = sm._tuned.values()
    timed = [t.config for t in tuning.trials if t.ms is not None]
    assert {c.num_worker_warps for c in timed} == {None, 8}
    assert all(c.tile == (1, 32768) for c in timed)


def test_a_persistent_layernorm_tunes_rows_and_width_from_the_default_space(cache_dir):
    """The gallery's persistent LayerNorm with no configs= (ROWS, WIDTH, LATENCY from the space,
    RELOAD_WB=AUTO reloading w and b for a 32K row, EXACT from heuristics=): every config timed
    is one row of the whole width, and the kept one computes LayerNorm."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import layernorm as LN
    import softmax as SM
    m, n = 512, 32768
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((m, n)).astype(np.float16)
    wn, bn = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    x, w, b = (api.from_numpy(a).sync() for a in (xn, wn, bn))
    y = api.full((m, n), np.nan, tile.float16).sync()
    mean, rstd = api.zeros((m,)).sync(), api.zeros((m,)).sync()
    tuned = tile.autotune(key=["x"], grid=SM.rows_grid,
                          heuristics={"EXACT": LN.exact_rows})(LN.layernorm_fwd_persistent)
    tuned(tile.atomic(y), x, w, b, tile.atomic(mean), tile.atomic(rstd), 1e-5).sync()
    xf = xn.astype(np.float32)
    mu, sd = xf.mean(1, keepdims=True), np.sqrt(xf.var(1, keepdims=True) + 1e-5)
    ref = (xf - mu) / sd * wn.astype(np.float32) + bn.astype(np.float32)
    np.testing.assert_allclose(y.to_numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(mean.to_numpy(), mu[:, 0], rtol=1e-3, atol=1e-3)
    (tuning,) = tuned._tuned.values()
    timed = [t.config for t in tuning.trials if t.ms is not None]
    assert len(timed) >= 4
    assert {(c.constants["ROWS"], c.constants["WIDTH"]) for c in timed} == {(1, 32768)}
    assert {c.num_worker_warps for c in timed} == {None, 8}
