"""The simulator's reductions: a combiner that is one element-wise op runs without interpreting
its region, and max/min fold an axis in one NumPy reduce; the results are those of the
interpreted tree (signed zeros, NaNs, integer wrap). And the benchmark against Triton's
interpreter runs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit.simulator import sem_reduce

pytestmark = pytest.mark.usefixtures("simulator_backend")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _reductions():
    @tile.entry
    def reductions(out, x, xi):
        t = x.load((0, 0), (4, 8))
        i = xi.load((0, 0), (4, 8))
        tile.store(out, (0, 0), t.max(axis=1).reshape((1, 4)))
        tile.store(out, (1, 0), t.min(axis=1).reshape((1, 4)))
        tile.store(out, (2, 0), t.sum(axis=1).reshape((1, 4)))
        tile.store(out, (3, 0), i.sum(axis=1).astype(tile.float32).reshape((1, 4)))
    return reductions


def _run(x, xi):
    out = np.zeros((4, 4), np.float32)
    _reductions()(tile.atomic(out), x, xi).grid(1).sync()
    return out


def test_direct_reductions_keep_the_tree_semantics(monkeypatch):
    x = np.arange(32, dtype=np.float32).reshape(4, 8) - 10
    x[0] = [0.0, -0.0, -0.0, 0.0, -5, -6, -7, -8]           # max is +0.0
    x[1] = [-0.0, 0.0, 1, 2, 3, 4, 5, np.nan]              # NaN propagates
    x[2] = [0.5, 0.25, 3e38, 3e38, 1, 1, 1, 1]              # overflow to inf in the sum
    x[3] = [0.0, -0.0, 0.0, 1, 2, 3, 4, 5]                  # min is -0.0
    xi = np.full((4, 8), 2**30, np.int32)                  # the int32 sum wraps
    fast = _run(x, xi)
    monkeypatch.setattr(sem_reduce, "_direct", lambda op, c: None)   # the interpreted tree
    slow = _run(x, xi)
    np.testing.assert_array_equal(fast, slow)
    # rows of out: max, min, sum, int sum; columns: the rows of x
    assert fast[0, 0] == 0 and not np.signbit(fast[0, 0])        # max of +-0 is +0
    assert fast[1, 3] == 0 and np.signbit(fast[1, 3])            # min of +-0 is -0
    assert np.isnan(fast[0, 1]) and np.isnan(fast[1, 1])
    assert np.isinf(fast[2, 2])
    assert fast[3, 0] == 0                                       # 8 * 2**30 wraps to 0


def test_the_benchmark_against_tritons_interpreter_runs():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "simulator_vs_triton.py"),
                        "--reps", "1"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "simulator_vs_triton: ok" in r.stdout and "speedup" in r.stdout
