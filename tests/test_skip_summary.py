"""``pytest -ra`` prints one line per skip reason with its count (tests/skip_summary.py), not one
per file and line; ``-rs`` on its own still lists each place."""
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

SKIPS = textwrap.dedent('''
    import pytest

    @pytest.mark.parametrize("i", range(3))
    def test_a(i):
        pytest.skip("needs an NVIDIA GPU")

    def test_b():
        pytest.skip("needs an NVIDIA GPU")

    def test_c():
        pytest.skip("needs torch")

    def test_d():
        pass
''')


def _pytest(tmp_path, *flags):
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(SKIPS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "skip_summary", *flags, str(tmp_path)], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_ra_prints_one_line_per_reason_with_a_count(tmp_path):
    out = _pytest(tmp_path, "-ra")
    assert "SKIPPED [8] needs an NVIDIA GPU (2 files)" in out, out
    assert "SKIPPED [2] needs torch (2 files)" in out, out
    assert out.count("SKIPPED [") == 2 and "test_one.py:" not in out, out
    assert "2 passed, 10 skipped" in out


def test_rs_alone_lists_each_place(tmp_path):
    out = _pytest(tmp_path, "-rs")
    assert "test_one.py:" in out and "test_two.py:" in out, out
    assert "(2 files)" not in out
