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
