"""tile.autotune on the simulator (first config that compiles, no timing), its argument checks, the
report, and the disk cache. tests/gpu/test_autotune_gpu.py covers timing on a GPU."""
import statistics

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.autotune import SETTLE_MOST, SETTLE_ROUNDS, Trial, Tuning, settle

pytestmark = pytest.mark.usefixtures("simulator_backend")

CONFIGS = [tile.Config(tile=(64, 64), BK=48),          # 48: not a power of two, fails to compile
           tile.Config(tile=(32, 32), BK=16, occupancy=2),
           tile.Config(tile=(64, 32), BK=32)]


def _matmul(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
    c.store(acc.astype(c.dtype))


def make(configs=CONFIGS, **kw):
    return tile.autotune(configs=configs, key=["a", "b"], **kw)(tile.entry(_matmul))


def data(m=96, k=64, n=80, seed=0):
    r = np.random.default_rng(seed)
    a = r.standard_normal((m, k)).astype(np.float16)
    b = r.standard_normal((k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def test_simulator_picks_the_first_config_that_compiles():
    mm = make()
    a, b, ref = data()
    c = api.zeros((96, 80), tile.float16).sync()
    mm(c, api.from_numpy(a).sync(), api.from_numpy(b).sync()).sync()
    np.testing.assert_allclose(c.to_host().sync().astype(np.float32), ref, rtol=2e-2, atol=5e-2)
    assert mm.best_config(c, api.from_numpy(a).sync(), api.from_numpy(b).sync()) is CONFIGS[1]
    report = mm.tuning_report()
    assert "does not compile" in report and "48 is not" in report
    assert "* " in report and "chosen without timing (simulator)" in report
    assert "not tried" in report


def test_the_choice_is_per_key():
    mm = make()
    for m in (96, 128):
        a, b, ref = data(m=m)
        c = api.zeros((m, 80), tile.float16).sync()
        mm(c, api.from_numpy(a).sync(), api.from_numpy(b).sync()).sync()
        np.testing.assert_allclose(c.to_host().sync().astype(np.float32), ref, rtol=2e-2,
                                   atol=5e-2)
    assert mm.tuning_report().count("(simulator):") == 2


def test_no_config_compiles_names_every_failure():
    mm = make([tile.Config(tile=(64, 64), BK=48), tile.Config(tile=(64, 64), BK=24)])
    a, b, _ = data()
    c = api.zeros((96, 80), tile.float16).sync()
    with pytest.raises(tile.LaunchError, match="no config compiles") as e:
        mm(c, api.from_numpy(a).sync(), api.from_numpy(b).sync())
    assert "BK=48" in str(e.value) and "BK=24" in str(e.value)


def test_bad_declarations_are_reported():
    with pytest.raises(TypeError, match="'BN' is not a tile.Constant parameter"):
        make([tile.Config(tile=(32, 32), BN=16)])
    with pytest.raises(TypeError, match="non-empty list of tile.Config"):
        make([])
    with pytest.raises(TypeError, match="key 'x' is not a parameter"):
        tile.autotune(configs=CONFIGS, key=["x"])(tile.entry(_matmul))
    with pytest.raises(TypeError, match="above @tile.entry"):
        tile.autotune(configs=CONFIGS)(_matmul)
    with pytest.raises(TypeError, match="partition='BK' is not a runtime parameter"):
        make(partition="BK")
    mm = make()
    with pytest.raises(TypeError, match="constants come from the configs"):
        mm(1, 2, 3, 4)


def test_explicit_grid_from_the_config():
    @tile.autotune(configs=[tile.Config(BLOCK=64), tile.Config(BLOCK=128)], key=["x"],
                   grid=lambda cfg, args: (tile.cdiv(args["x"].shape[0],
                                                     cfg.constants["BLOCK"]), 1, 1))
    @tile.entry
    def double(out, x, BLOCK: tile.Constant[int]):
        idx = tile.bid(0) * BLOCK + tile.arange(BLOCK)
        v = tile.gather(x, idx, mask=idx < x.shape[0])
        tile.scatter(out, idx, v * 2.0, mask=idx < x.shape[0])

    xn = np.arange(300, dtype=np.float32)
    out = api.zeros((300,)).sync()
    double(tile.atomic(out), api.from_numpy(xn).sync()).sync()
    np.testing.assert_array_equal(out.to_host().sync(), xn * 2)


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    mm = make()
    t = Tuning(2, [Trial(c, ms) for c, ms in zip(CONFIGS, [None, 0.5, 0.25])])
    mm._save("k1", t)
    files = list((tmp_path / "autotune").glob("_matmul-*.json"))
    assert len(files) == 1
    again = make()._load("k1")          # a new tuner object, as in a new process
    assert again.best == 2 and again.source == "disk"
    assert [tr.ms for tr in again.trials] == [None, 0.5, 0.25]
    assert make()._load("other key") is None
    # a different config list is a different file: no stale winner
    other = make(CONFIGS[:2])
    assert other._load("k1") is None


def test_a_host_array_output_receives_the_results():
    @tile.autotune(configs=[tile.Config(tile=(8,))], key=["x"])
    @tile.entry
    def copy8(z, x):
        z.store(tile.load_tile_like(x, z))

    z = np.zeros(16, np.float32)
    copy8(z, np.arange(16, dtype=np.float32)).sync()        # copied in and back, as in Numba
    np.testing.assert_array_equal(z, np.arange(16, dtype=np.float32))


def _scaled(z, x, SCALE: tile.Constant[int] = 2):
    z.store(tile.load_tile_like(x, z) * SCALE)


@pytest.mark.parametrize("config, factor", [(tile.Config(tile=(32,)), 2),
                                            (tile.Config(tile=(32,), SCALE=3), 3)])
def test_a_constant_keeps_its_default_unless_the_config_sets_it(config, factor):
    k = tile.autotune(configs=[config], key=["x"])(tile.entry(_scaled))
    xn = np.arange(100, dtype=np.float32)
    z = api.zeros((100,)).sync()
    k(z, api.from_numpy(xn).sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), factor * xn)


# --- near-ties, timed side by side -----------------------------------------------------------------
class _WarmingGPU:
    """Run times of configs whose true times are ``true`` on a GPU that slows down by ``drift``
    per run (clocks falling as it warms): what a one-after-another first pass sees."""

    def __init__(self, true, drift):
        self.true, self.drift, self.clock = true, drift, 0

    def runs(self, i, n=3):
        out = []
        for _ in range(n):
            out.append(self.true[i] * (1 + self.drift * self.clock))
            self.clock += 1
        return out


def test_settle_undoes_the_order_of_the_first_pass():
    """Config 1 is truly 3% faster, but timed after config 0 on a warming GPU its first-pass
    median is slower; timed side by side, in alternating order, it wins."""
    gpu = _WarmingGPU([1.00, 0.97, 2.0], drift=0.004)
    first = [statistics.median(gpu.runs(i, 10)) for i in range(3)]
    assert first[0] < first[1]                        # the first pass picks the wrong one
    settled = settle(first, gpu.runs)
    assert settled[1] < settled[0]
    assert settled[2] == first[2]                     # not a near-tie: left as it was


def test_settle_leaves_clear_winners_and_skipped_configs_alone():
    calls = []

    def runs(i):
        calls.append(i)
        return [1.0]
    assert settle([1.0, 2.0, None], runs) == [1.0, 2.0, None]
    assert settle([None, 1.0], runs) == [None, 1.0]
    assert calls == []
    ms = [1.0, 1.01, 1.02, 1.03, 1.04, None]          # at most SETTLE_MOST are re-timed
    settle(ms, runs)
    assert sorted(set(calls)) == list(range(SETTLE_MOST))
    assert len(calls) == SETTLE_MOST * SETTLE_ROUNDS


def test_a_config_over_twice_the_best_so_far_is_timed_once():
    """A config whose first flushed run takes over SLOW_TRIAL times the best so far cannot win:
    it is not timed the other reps - 1 times (spilled tiles in a default space are 5-15x
    slower than its best)."""
    import types
    from tilejit.autotune import SLOW_TRIAL, _Timer
    timer = _Timer.__new__(_Timer)                        # no GPU: the runs are stubbed
    timer.reps, timer.warmup = 10, 2
    timer.stream = types.SimpleNamespace(synchronize=lambda: None)
    asked = []

    def runs(p, n):
        asked.append(n)
        return [5.0] * n
    timer.runs = runs
    launched = types.SimpleNamespace(launch=lambda: None, close=lambda: None)
    op = types.SimpleNamespace(prepare=lambda stream: launched)
    slow = timer.trial("cfg", op, 1.0, best_ms=5.0 / (SLOW_TRIAL + 0.1))
    assert slow.ms == 5.0 and "timed once" in slow.note and asked == [1]
    asked.clear()
    near = timer.trial("cfg", op, 1.0, best_ms=5.0 / (SLOW_TRIAL - 0.1))
    assert near.ms == 5.0 and near.note == "" and asked == [1, 9]
    asked.clear()
    first = timer.trial("cfg", op, 1.0)                     # nothing timed before it
    assert asked == [1, 9] and first.ms == 5.0


def test_occupancy_neighbours_of_the_fastest_config():
    """One below and one above the winner's occupancy, unless tried already or out of 1-32."""
    from tilejit.autotune import occupancy_neighbours
    C = tile.Config
    trials = [Trial(C(tile=(8, 1024), occupancy=4, EXACT=True), 1.0),
              Trial(C(tile=(8, 1024), occupancy=2, EXACT=True), 1.2),
              Trial(C(tile=(16, 1024), occupancy=5, EXACT=True), 1.1),   # another tile's 5
              Trial(C(tile=(4, 1024), occupancy=4, EXACT=True), None)]
    got = occupancy_neighbours(trials)
    assert [(c.tile, c.occupancy, c.constants) for c in got] == \
        [((8, 1024), 3, {"EXACT": True}), ((8, 1024), 5, {"EXACT": True})]
    trials.append(Trial(C(tile=(8, 1024), occupancy=3, EXACT=True), 1.05))
    assert [c.occupancy for c in occupancy_neighbours(trials)] == [5]
    assert [c.occupancy for c in occupancy_neighbours([Trial(C(occupancy=1), 1.0)])] == [2]
    assert [c.occupancy for c in occupancy_neighbours([Trial(C(occupancy=32), 1.0)])] == [31]
    assert [c.occupancy for c in occupancy_neighbours([Trial(C(), 1.0)])] == [2]  # None is 1
    assert occupancy_neighbours([Trial(C(occupancy=2), None)]) == []


class _FakeTimer:
    """Stands in for autotune._Timer: each config's time comes from ``ms_of(config)``."""

    def __init__(self, ms_of):
        self.ms_of, self.timed = ms_of, []

    def trial(self, config, op, limit_s, best_ms=None):
        self.timed.append(config)
        return Trial(config, self.ms_of(config))

    def prepared(self, op_for):
        import contextlib

        @contextlib.contextmanager
        def cm():
            yield lambda i: [op_for(i)]
        return cm()

    def close(self):
        pass


def _stub_timing(monkeypatch, ms_of):
    """_time_all with compiles, the device and the timer stubbed: launch_for(c) gives the
    config's time, which the fake timer reports."""
    import sys
    A = sys.modules["tilejit.autotune"]      # the package's `autotune` is the decorator
    timer = _FakeTimer(ms_of)
    monkeypatch.setattr(A, "_Timer", lambda *a, **k: timer)
    monkeypatch.setattr(A, "_device_obj", lambda bound: None)
    monkeypatch.setattr(A, "_host_outputs_on_device", lambda tuner, bound: bound)
    monkeypatch.setattr(A, "_save_written", lambda tuner, bound: [])
    monkeypatch.setattr(A.Autotuned, "_compile", lambda self, c, bound, target=None: None)
    monkeypatch.setattr(A.Autotuned, "launch_for", lambda self, c, bound: ms_of(c))
    return timer


# occupancy 5 is the fastest, but the default space offers 1, 2 and 4 only
_BY_OCCUPANCY = {1: 3.0, 2: 2.0, 3: 1.6, 4: 1.5, 5: 1.2, 6: 2.5}


def test_the_default_space_also_times_the_winner_one_occupancy_over(monkeypatch):
    timer = _stub_timing(monkeypatch, lambda c: _BY_OCCUPANCY[c.occupancy])
    tuner = tile.autotune(tile.entry(_matmul))
    space = [tile.Config(tile=(64, 64), occupancy=o, BK=32) for o in (1, 2, 4)]
    tuning = tuner._time_all(space, {})
    assert tuning.config.occupancy == 5 and tuning.config.tile == (64, 64)
    assert [c.occupancy for c in timer.timed] == [1, 2, 4, 3, 5]
    assert tuning.trials[-1].note == "occupancy beside the best"
    assert tuning.trials[0].note == ""


def test_an_occupancy_neighbour_that_does_not_compile_is_noted_and_skipped(monkeypatch):
    import sys
    from tilejit.errors import CompileError
    A = sys.modules["tilejit.autotune"]
    _stub_timing(monkeypatch, lambda c: _BY_OCCUPANCY[c.occupancy])

    def compile_(self, c, bound, target=None):
        if c.occupancy == 5:
            raise CompileError("too much shared memory")
    monkeypatch.setattr(A.Autotuned, "_compile", compile_)
    tuner = tile.autotune(tile.entry(_matmul))
    space = [tile.Config(tile=(64, 64), occupancy=o, BK=32) for o in (1, 2, 4)]
    tuning = tuner._time_all(space, {})
    assert tuning.config.occupancy == 4
    five = [t for t in tuning.trials if t.config.occupancy == 5]
    assert five[0].ms is None and five[0].note.startswith(
        "occupancy beside the best; does not compile: too much shared memory")


def test_config_lists_and_given_occupancies_are_timed_as_they_are(monkeypatch):
    timer = _stub_timing(monkeypatch, lambda c: _BY_OCCUPANCY[c.occupancy])
    configs = [tile.Config(tile=(64, 64), occupancy=o, BK=32) for o in (1, 2, 4)]
    assert make(configs)._time_all(configs, {}).config.occupancy == 4
    tuner = tile.autotune(space={"occupancy": (1, 2, 4)})(tile.entry(_matmul))
    assert tuner._time_all(configs, {}).config.occupancy == 4
    assert [c.occupancy for c in timer.timed] == [1, 2, 4] * 2
