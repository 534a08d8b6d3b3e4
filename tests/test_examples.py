"""The README's quickstart runs and checks its own results; benchmarks exit cleanly without a GPU.

An example that cannot run here (PyTorch missing, too few GPUs) ends with the line
``NAME: skipped: <why>`` and exits 0; the test reports that as a skip with the reason, never as a
pass.
"""
import os
import re
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
                  if f.endswith(".py") and f != "quickstart.py")
#: Triton's tutorials 01-09 written in tilejit (examples/triton_tutorials/tNN_*.py), as
#: "triton_tutorials/tNN_name": each prints "tNN_name: ... ok"
TUTORIALS_DIR = os.path.join(ROOT, "examples", "triton_tutorials")
TRITON_TUTORIALS = sorted(f"triton_tutorials/{f[:-3]}" for f in os.listdir(TUTORIALS_DIR)
                          if re.fullmatch(r"t\d\d_\w+\.py", f))
#: the Liger-Kernel ops written in tilejit (examples/liger/<op>.py, helpers start with "_"), as
#: "liger/<op>": each prints "<op>: ... ok"
LIGER_DIR = os.path.join(ROOT, "examples", "liger")
LIGER = sorted(f"liger/{f[:-3]}" for f in os.listdir(LIGER_DIR)
               if f.endswith(".py") and not f.startswith("_")) if os.path.isdir(LIGER_DIR) else []


def example_outcome(name: str, returncode: int, stdout: str):
    """``("ok", None)``, ``("skipped", why)`` or ``("failed", what)`` for a gallery script's run:
    it must exit 0 and end with ``NAME: ... ok`` or ``NAME: skipped: <why>``."""
    lines = stdout.rstrip().splitlines()
    last = lines[-1] if lines else ""
    if returncode != 0:
        return "failed", f"exit status {returncode}"
    m = re.fullmatch(rf"{re.escape(name)}: skipped: (.+)", last)
    if m:
        return "skipped", m.group(1)
    if last.startswith(f"{name}: ") and last.endswith("ok"):
        return "ok", None
    return "failed", f"last line {last!r} is neither '{name}: ... ok' nor '{name}: skipped: <why>'"


def test_example_outcome_reads_skips_as_skips():
    assert example_outcome("t", 0, "t: 3 steps ok\n") == ("ok", None)
    assert example_outcome("t", 0, "hello\nt: skipped: PyTorch is not installed\n") == \
        ("skipped", "PyTorch is not installed")
    assert example_outcome("t", 1, "t: skipped: no torch")[0] == "failed"
    assert example_outcome("t", 0, "t: PyTorch is not installed; skipped")[0] == "failed"
    assert example_outcome("t", 0, "t: MISMATCH")[0] == "failed"
    assert example_outcome("t", 0, "")[0] == "failed"


@pytest.mark.parametrize("name", EXAMPLES + TRITON_TUTORIALS + LIGER)
def test_example_runs_and_checks_its_result(name):
    """Every gallery script runs on the simulator and reports its own check as ok (or says why it
    cannot run here: a skip)."""
    r = _run(f"examples/{name}.py", TILEJIT_SIMULATE="1")
    outcome, why = example_outcome(os.path.basename(name), r.returncode, r.stdout)
    if outcome == "skipped":
        pytest.skip(f"examples/{name}.py: {why}")
    assert outcome == "ok", f"{why}\n{r.stdout}{r.stderr}"


def test_the_examples_readme_lists_every_script():
    listed = open(os.path.join(ROOT, "examples", "README.md")).read()
    for f in os.listdir(os.path.join(ROOT, "examples")):
        if f.endswith(".py"):
            assert f"`{f}`" in listed, f


def test_every_triton_tutorial_is_ported_and_listed():
    """Tutorials 01-09 each have a script, and the folder's README maps every one to its file."""
    assert [os.path.basename(n)[:3] for n in TRITON_TUTORIALS] == [f"t0{i}" for i in range(1, 10)]
    listed = open(os.path.join(TUTORIALS_DIR, "README.md")).read()
    for name in TRITON_TUTORIALS:
        assert f"`{os.path.basename(name)}.py`" in listed, name


def test_quickstart_runs():
    r = _run("examples/quickstart.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "add:    (1000, 300) ok" in r.stdout and "matmul: (200, 130) ok" in r.stdout


@pytest.mark.parametrize("script", ["launch_overhead.py", "launch_breakdown.py", "kernels.py",
                                    "profile_launch.py",
                                    "vs_cutile.py", "autotune_time.py", "default_space.py",
                                    "explore.py", "liger.py"])
def test_benchmarks_say_there_is_nothing_to_measure_without_a_gpu(script):
    r = _run(f"benchmarks/{script}", TILEJIT_SIMULATE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to measure" in r.stdout


# --- a fresh machine stays green ---------------------------------------------------------------------
def _extras():
    try:
        import tomllib
    except ImportError:             # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_the_test_extra_is_light_and_interop_holds_the_heavy_packages():
    extras = _extras()
    names = lambda reqs: {re.split(r"[\[<>=~! ]", r, 1)[0].lower() for r in reqs}  # noqa: E731
    heavy = {"jax", "nbclient", "nbformat", "ipykernel", "torch", "jupyter"}
    assert not names(extras["test"]) & heavy, extras["test"]
    assert {"jax", "nbclient", "nbformat", "ipykernel"} <= names(extras["interop"])
    assert {"pygments", "pymdown-extensions"} <= names(extras["docs"])


def test_ci_runs_the_readme_test_command_before_installing_torch():
    """.ci/run runs `pip install -e '.[test]'` and the suite in a fresh venv, and only then adds
    the interop extra and PyTorch (whose CPU index it may not reach: PyPI is the fallback)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "pip install -e '.[test]' && python -m pytest" in readme
    ci = [ln.strip() for ln in open(os.path.join(ROOT, ".ci", "run")) if ln.strip()
          and not ln.lstrip().startswith("#")]
    venv = next(i for i, ln in enumerate(ci) if "-m venv" in ln)
    test = ci.index("pip install --quiet -e '.[test]'")
    first_suite = ci.index("python -m pytest")
    torch = next(i for i, ln in enumerate(ci) if "pip install" in ln and " torch" in ln)
    assert venv < test < first_suite < torch
    assert not any("interop" in ln for ln in ci[:first_suite])
    assert "|| pip install --quiet torch" in " ".join(ci[torch:torch + 2])
    assert ci.count("python -m pytest") == 2 and "TILEJIT_NATIVE=0 python -m pytest" in ci
