"""``ct.tune`` (``tilejit/cutile/tune.py``): cuTile Python's ``cuda.tile.tune`` API --
``exhaustive_search``, ``TuningResult``, ``Measurement`` -- on the simulator (the first config
that compiles wins, untimed, compiled where the launch that follows finds it), and the GPU
path's search (convergence, the slow-config cut, the side-by-side re-timing, failures) with
synthetic times in place of CUDA events."""
import dataclasses
import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

import tilejit.cutile as ct
from tilejit.cutile import tune
from tilejit.runtime import backend

pytestmark = pytest.mark.usefixtures("simulator_backend")


@ct.kernel
def add_tiles(a, b, c, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(T,)) +
             ct.load(b, index=(i,), shape=(T,)))


@ct.kernel
def twice_tiles(a, c, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(T,)) * 2)


def _arrays(n=64):
    return np.arange(n, dtype=np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)


def test_public_names_match_cutiles():
    assert tune.__all__ == ["exhaustive_search", "TuningResult", "Measurement"]
    assert ct.tune is tune and "tune" in ct.__all__
    assert ct.tune.exhaustive_search is tune.exhaustive_search
    m = tune.Measurement(config=1, mean_us=2.0, num_samples=3, error_margin_us=0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.mean_us = 1.0
    with pytest.raises(TypeError):                       # keyword-only, as cuTile's
        tune.Measurement(1, 2.0, 3, 0.1)


def test_empty_space_is_an_error():
    with pytest.raises(ValueError, match="Search space is empty"):
        tune.exhaustive_search([], 0, lambda c: (1,), add_tiles, lambda c: ())


def test_simulator_takes_the_first_config_that_compiles(capsys):
    a, b, c = _arrays()
    tried = []

    def args(cfg):
        tried.append(cfg.T)
        return (a, b, c, cfg.T)
    configs = [NS(T=3), NS(T=16), NS(T=32)]              # 3: not a power of two
    r = tune.exhaustive_search(configs, 0, lambda cfg: (64 // cfg.T,), add_tiles, args,
                               quiet=True)
    assert capsys.readouterr().out == ""
    assert r.best.config is configs[1] and tried == [3, 16]   # the rest is not tried
    assert math.isnan(r.best.mean_us) and r.best.num_samples == 0
    assert r.successes == (r.best,)
    [(cfg, exc, msg)] = r.failures
    assert cfg is configs[0] and issubclass(exc, ct.TileTypeError) and "power of two" in msg
    assert not c.any()                                   # nothing ran


def test_the_launch_after_tuning_finds_the_config_compiled():
    a, b, c = _arrays()
    k = ct.kernel(add_tiles.py_func)
    r = tune.exhaustive_search([NS(T=16)], 0, lambda cfg: (4,), k,
                               lambda cfg: (a, b, c, cfg.T), quiet=True)
    compiles = k.stats.compiles
    assert compiles == 1
    ct.launch(0, (4,), k, (a, b, c, r.best.config.T))
    assert k.stats.compiles == compiles
    np.testing.assert_array_equal(c, a + b)


def test_hints_and_kernel_functions(monkeypatch):
    a, b, c = _arrays()
    made = []
    real = ct.Kernel.replace_hints

    def spy(self, **hints):
        made.append(hints)
        return real(self, **hints)
    monkeypatch.setattr(ct.Kernel, "replace_hints", spy)
    configs = [NS(k="twice", occ=2, bad=True), NS(k="twice", occ=4, bad=False),
               NS(k="add", occ=1, bad=False)]
    kernels = {"twice": twice_tiles, "add": add_tiles}

    def hints(cfg):
        h = {"occupancy": ct.ByTarget(sm_90=cfg.occ, default=cfg.occ)}
        if cfg.bad:
            h["num_warps"] = 4                          # not a cuTile hint
        return h
    r = tune.exhaustive_search(
        configs, 0, lambda cfg: (4,), lambda cfg: kernels[cfg.k],
        lambda cfg: (a, c, 16) if cfg.k == "twice" else (a, b, c, 16), hints, quiet=True)
    assert r.best.config is configs[1]
    assert r.failures[0][0] is configs[0] and r.failures[0][1] is TypeError
    assert "unknown hint" in r.failures[0][2]
    assert made[-1]["occupancy"].resolve(None) == 4


def test_no_valid_config_names_the_first_failure():
    a, b, c = _arrays()
    with pytest.raises(ValueError, match=r"No valid config found in search space.\n"
                                         r"Config: 5\n"):
        tune.exhaustive_search([5, 7], 0, lambda cfg: (1,), add_tiles,
                               lambda cfg: (a, b, c, cfg))


def test_wrong_argument_count_is_a_failure_not_a_crash():
    a, b, c = _arrays()
    r = tune.exhaustive_search([1, 16], 0, lambda cfg: (4,), add_tiles,
                               lambda cfg: (a, b, c) if cfg == 1 else (a, b, c, cfg),
                               quiet=True)
    assert r.best.config == 16
    assert r.failures[0][1] is TypeError and "expects 4 arguments" in r.failures[0][2]


def test_summary_prints_unless_quiet(capsys):
    a, b, c = _arrays()
    tune.exhaustive_search([NS(T=16)], 0, lambda cfg: (4,), add_tiles,
                           lambda cfg: (a, b, c, cfg.T))
    out = capsys.readouterr().out
    assert out.startswith("1 succeeded, 0 failed\n* namespace(T=16)")


def _m(cfg, us, n=10, err=0.5):
    return tune.Measurement(config=cfg, mean_us=us, num_samples=n, error_margin_us=err)


def test_summary_ranks_elides_and_lists_failures():
    ms = [_m(f"c{i}", 100.0 - i) for i in range(20)]
    fails = [(f"f{i}", RuntimeError, "x" * 80 + "\nsecond line") for i in range(12)]
    r = tune.TuningResult(best=ms[-1], successes=ms, failures=fails)
    lines = r.summary(top_k=3, bottom_k=2).splitlines()
    assert lines[0] == "20 succeeded, 12 failed"
    assert lines[1].startswith("* c19: 81.0±0.5 us ") and lines[1].endswith(" (10 samples)")
    assert lines[2].startswith("  c18") and lines[3].startswith("  c17")
    assert lines[4] == "    ... 15 more not shown"
    assert lines[5].startswith("  c1 ") and lines[6].startswith("  c0 ")
    assert lines[7] == "  12 failed:"
    assert lines[8] == f"    f0: RuntimeError: {'x' * 57}..."
    assert lines[11] == "    ... 9 more not shown"
    assert lines[-1] == "Use .successes and .failures for full results."
    assert str(r) == r.summary()
    small = tune.TuningResult(best=ms[0], successes=ms[:3], failures=())
    assert small.summary().splitlines() == [
        "3 succeeded, 0 failed", "  c2: 98.0±0.5 us  (10 samples)",
        "  c1: 99.0±0.5 us  (10 samples)", "* c0: 100.0±0.5 us (10 samples)"]


# --- the GPU path's search, its times synthetic ---------------------------------------------------
class FakeTimer:
    """Stands for tune._Timer: config -> (mean us, spread); records the runs asked for."""

    def __init__(self, times):
        self.times, self.calls = times, []
        self.rng = np.random.default_rng(0)

    def __call__(self, stream):
        return self

    def runs(self, c, n):
        mean, spread = self.times[c.config]
        out = list(mean + spread * self.rng.standard_normal(n))
        c.samples += out
        self.calls.append((c.config, n))
        return out

    def close(self):
        pass


@pytest.fixture
def timed(monkeypatch):
    # tune's own view of the backend says CUDA; the launches run on the simulator
    monkeypatch.setattr(tune, "_backend", NS(current=lambda: backend.CUDA, CUDA=backend.CUDA))

    def use(times):
        t = FakeTimer(times)
        monkeypatch.setattr(tune, "_Timer", t)
        return t
    return use


def test_timed_search_picks_the_fastest_and_measures_it(timed):
    a, b, c = _arrays()
    t = timed({"slow": (50.0, 0.1), "fast": (20.0, 0.1), "tie": (20.4, 0.1),
               "noisy": (21.0, 8.0), "bad": (1.0, 0.0)})
    r = tune.exhaustive_search(["slow", "fast", "tie", "noisy", "bad"], 0, lambda cfg: (4,),
                               add_tiles, lambda cfg: (a, b, c, 3 if cfg == "bad" else 16),
                               quiet=True)
    assert r.best.config == "fast", r
    assert [m.config for m in r.successes] == ["slow", "fast", "tie", "noisy"], r.failures
    assert r.failures[0][0] == "bad" and "power of two" in r.failures[0][2]
    by = {m.config: m for m in r.successes}
    assert by["fast"].mean_us == pytest.approx(20.0, abs=0.2)
    assert by["fast"].error_margin_us <= tune.ABS_MARGIN_US
    # the noisy config needed more batches than the steady ones; none ran past the cap
    assert by["noisy"].num_samples > by["slow"].num_samples
    assert all(m.num_samples <= tune.MAX_SAMPLES + tune.BATCH * tune._autotune.SETTLE_ROUNDS
               for m in r.successes)
    # fast and tie were re-timed side by side (autotune.settle): more runs than a first pass
    assert by["tie"].num_samples > tune.BATCH
    np.testing.assert_array_equal(c, a + b)             # the configs really ran


def test_timed_search_stops_timing_a_config_that_cannot_win(timed):
    a, b, c = _arrays()
    t = timed({"fast": (10.0, 0.0), "hopeless": (100.0, 60.0)})
    r = tune.exhaustive_search(["fast", "hopeless"], 0, lambda cfg: (4,), add_tiles,
                               lambda cfg: (a, b, c, 16), quiet=True)
    assert r.best.config == "fast"
    assert [n for cfg, n in t.calls if cfg == "hopeless"] == [tune.BATCH]


def test_timed_search_timeout_fails_the_config(timed, monkeypatch):
    a, b, c = _arrays()
    timed({1: (5.0, 0.0), 2: (4.0, 0.0)})
    clock = iter([0.0, 10.0, 20.0, 20.5])               # config 1's first run: 10 s
    monkeypatch.setattr(tune.time, "perf_counter", lambda: next(clock))
    r = tune.exhaustive_search([1, 2], 0, lambda cfg: (4,), add_tiles,
                               lambda cfg: (a, b, c, 16), quiet=True,
                               single_run_timeout_sec=1.0)
    assert r.best.config == 2
    assert r.failures[0][0] == 1 and r.failures[0][1] is tune.TileLaunchTimeoutError
