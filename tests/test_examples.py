"""The README's quickstart runs and checks its own results."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quickstart_runs():
    # the checkout's tilejit, installed or not (the GPU machines run the suite from a checkout)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "add:    (1000, 300) ok" in r.stdout and "matmul: (200, 130) ok" in r.stdout
