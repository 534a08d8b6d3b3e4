"""benchmarks/vendor.py (issue 26's one GPU run): without a GPU it says so and exits 0; --plan
lists the rows; --rehearse runs every group's code on the simulator at tiny sizes, every row
checked against torch, so the GPU run does not stop on a bug a CPU could have caught."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "vendor.py")


def _run(*args, **env):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p), **env)
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=e)


def test_without_a_gpu_there_is_nothing_to_measure():
    r = _run(TILEJIT_SIMULATE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to measure" in r.stdout


def test_the_plan_lists_every_group():
    r = _run("--plan")
    assert r.returncode == 0, r.stderr
    groups = {line.split(":")[0] for line in r.stdout.splitlines()}
    assert groups == {"matmul", "skinny", "fp8", "softmax", "layer_norm", "rms_norm",
                      "attention", "attention_bwd", "gqa", "decode"}
    assert "attention: attention fwd float16 D128 S4096 causal" in r.stdout
    r = _run("--plan", "--only", "nope")
    assert r.returncode != 0 and "unknown group" in r.stderr


def test_rehearsal_runs_every_row_and_checks_it(tmp_path):
    pytest.importorskip("torch")
    r = _run("--rehearse", OUT=str(tmp_path))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [json.loads(line) for line in open(tmp_path / "vendor.json")]
    groups = {row["group"] for row in rows}
    assert groups == {"matmul", "skinny", "fp8", "softmax", "layer_norm", "rms_norm",
                      "attention", "attention_bwd", "gqa", "decode"}
    assert all("failed" not in row and row["tilejit"] for row in rows)
    assert any(row["row"].endswith("[loop]") for row in rows if row["group"] == "matmul")
    md = (tmp_path / "vendor.md").read_text()
    assert "### attention_bwd" in md and "tilejit/vendor" in md


def test_the_module_imports_without_torch():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import vendor
    assert vendor.GROUPS[0] == "matmul"
    assert "| Row |" in vendor.tables([dict(group="g", row="r", unit="GB/s", tilejit=2.0,
                                            vendor=1.0, vendor_name="torch", ratio=2.0,
                                            config="c")])
