"""tile.autotune on a GPU: every config timed, the winner used and remembered (in memory and on
disk), written arguments restored after timing, torch tensors accepted."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from test_autotune import _matmul  # noqa: E402  (the same kernel as the CPU tests)

pytestmark = pytest.mark.gpu

CONFIGS = [tile.Config(tile=(64, 64), BK=48),
           tile.Config(tile=(64, 64), BK=32),
           tile.Config(tile=(128, 64), BK=64, occupancy=2),
           tile.Config(tile=(128, 128), BK=32)]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEJIT_AUTOTUNE_QUIET", "1")
    return tmp_path


def test_every_config_is_timed_and_the_winner_is_remembered(cache_dir):
    mm = tile.autotune(configs=CONFIGS, key=["a", "b"])(tile.entry(_matmul))
    r = np.random.default_rng(0)
    an = r.standard_normal((512, 256)).astype(np.float16)
    bn = r.standard_normal((256, 384)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = api.zeros((512, 384), tile.float16).sync()
    mm(c, a, b).sync()
    ref = an.astype(np.float32) @ bn.astype(np.float32)
    np.testing.assert_allclose(c.to_host().sync().astype(np.float32), ref, rtol=2e-2, atol=0.1)
    (key, tuning), = mm._tuned.items()
    assert tuning.source == "timed"
    assert tuning.trials[0].ms is None and "does not compile" in tuning.trials[0].note
    assert all(t.ms is not None and t.ms > 0 for t in tuning.trials[1:])
    assert tuning.trials[tuning.best].ms == min(t.ms for t in tuning.trials[1:])
    launches = mm.stats.launches
    mm(c, a, b).sync()                       # no re-timing: exactly one more launch
    assert mm.stats.launches == launches + 1
    fresh = tile.autotune(configs=CONFIGS, key=["a", "b"])(tile.entry(_matmul))
    fresh(c, a, b).sync()                    # a new process would read the disk cache
    (_, t2), = fresh._tuned.items()
    assert t2.source == "disk" and t2.best == tuning.best
    assert "disk" in fresh.tuning_report()


def test_written_arguments_are_restored_after_timing(cache_dir):
    @tile.autotune(configs=[tile.Config(tile=(256,)), tile.Config(tile=(1024,))], key=["x"])
    @tile.entry
    def accumulate(z, x):
        z.store(z.load() + tile.load_tile_like(x, z))

    zn = np.arange(4096, dtype=np.float32)
    xn = np.ones(4096, np.float32)
    z = api.from_numpy(zn).sync()
    accumulate(z, api.from_numpy(xn).sync()).sync()
    np.testing.assert_array_equal(z.to_host().sync(), zn + 1)   # one application, not 20


def test_torch_tensors(cache_dir):
    torch = pytest.importorskip("torch")
    mm = tile.autotune(configs=CONFIGS[1:3], key=["a", "b"])(tile.entry(_matmul))
    a = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 192, device="cuda", dtype=torch.float16)
    c = torch.zeros(256, 192, device="cuda", dtype=torch.float16)
    mm(c, a, b).sync()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.1)
