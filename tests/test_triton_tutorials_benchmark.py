"""benchmarks/triton_tutorials.py (issue 25 item 3): without a GPU it says so and exits 0;
--rehearse runs every tutorial's tilejit side on the simulator at tiny sizes, each checked against
torch, and writes the JSON rows; the Triton side needs a GPU (tests/gpu runs nothing extra: the
GPU run is the script itself)."""
import json

import pytest

from test_examples import _run as _run_script


def _run(*args, **env):
    return _run_script("benchmarks/triton_tutorials.py", *args, **env)


def test_without_a_gpu_there_is_nothing_to_measure():
    r = _run(TILEJIT_SIMULATE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to measure" in r.stdout


def test_an_unknown_tutorial_is_refused():
    r = _run("--only", "t10")
    assert r.returncode != 0 and "unknown tutorial" in r.stderr


def test_rehearsal_checks_every_tutorial(tmp_path):
    pytest.importorskip("torch")
    r = _run("--rehearse", OUT=str(tmp_path))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = json.load(open(tmp_path / "triton_tutorials.json"))
    assert all("failed" not in row and row["tilejit"] > 0 for row in rows), rows
    assert {row["tutorial"].split()[0] for row in rows} == {f"t0{i}" for i in range(1, 10)}
    assert "| Tutorial | Row | tilejit | Triton | tilejit/Triton |" in r.stdout
