"""``python -m tilejit info``."""
import subprocess
import sys


def test_info_reports_versions_and_toolchain():
    r = subprocess.run([sys.executable, "-m", "tilejit", "info"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for key in ("tilejit", "numba", "python", "driver", "GPU", "tileiras", "max bytecode version",
                "cache directory"):
        assert key in out, out


def test_info_says_which_launch_path_is_active():
    import os
    env = dict(os.environ, TILEJIT_NATIVE="0")
    r = subprocess.run([sys.executable, "-m", "tilejit", "info"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "launch path" in r.stdout and "pure Python (TILEJIT_NATIVE=0)" in r.stdout
