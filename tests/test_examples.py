"""The README's quickstart runs and checks its own results; benchmarks exit cleanly without a GPU."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args, **env_overrides):
    # the checkout's tilejit, installed or not (the GPU machines run the suite from a checkout)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p), **env_overrides)
    return subprocess.run([sys.executable, os.path.join(ROOT, *script.split("/")), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


EXAMPLES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples"))
                  if f.endswith(".py") and f not in ("quickstart.py", "distributed_matmul.py"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_checks_its_result(name):
    """Every gallery script runs on the simulator and reports its own check as ok."""
    r = _run(f"examples/{name}.py", TILEJIT_SIMULATE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{name}: " in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout


def test_the_examples_readme_lists_every_script():
    listed = open(os.path.join(ROOT, "examples", "README.md")).read()
    for f in os.listdir(os.path.join(ROOT, "examples")):
        if f.endswith(".py"):
            assert f"`{f}`" in listed, f


def test_quickstart_runs():
    r = _run("examples/quickstart.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "add:    (1000, 300) ok" in r.stdout and "matmul: (200, 130) ok" in r.stdout


@pytest.mark.parametrize("script", ["launch_overhead.py", "launch_breakdown.py", "kernels.py",
                                    "profile_launch.py",
                                    "vs_cutile.py", "autotune_time.py",
                                    "explore.py"])
def test_benchmarks_say_there_is_nothing_to_measure_without_a_gpu(script):
    r = _run(f"benchmarks/{script}", TILEJIT_SIMULATE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to measure" in r.stdout
