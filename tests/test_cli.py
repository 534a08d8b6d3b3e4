"""``python -m tilejit``: info, --help, --version, disasm, remarks and cache (issue 23 item 8;
the cache's data safety is issue 21 item 14)."""
import os
import subprocess
import sys

import pytest

from tilejit import envvars
from tilejit.toolchain import tileiras


def tilejit_cli(*args, env=None, cwd=None):
    e = dict(os.environ, TILEJIT_SIMULATE="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "tilejit", *args], capture_output=True,
                          text=True, timeout=120, env=e, cwd=cwd)


def test_info_reports_versions_and_toolchain():
    r = tilejit_cli("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for key in ("tilejit", "numba", "python", "driver", "GPU", "tileiras", "max bytecode version",
                "cache directory"):
        assert key in out, out


def test_info_says_which_launch_path_is_active():
    r = tilejit_cli("info", env={"TILEJIT_NATIVE": "0"})
    assert r.returncode == 0, r.stderr
    assert "launch path" in r.stdout and "pure Python (TILEJIT_NATIVE=0)" in r.stdout


def test_help_lists_every_subcommand_and_variable_without_rest_markup():
    r = tilejit_cli("--help")
    assert r.returncode == 0, r.stderr
    for name in envvars.VARIABLES:
        assert f"  {name}\n" in r.stdout
    for cmd in ("python -m tilejit info", "python -m tilejit disasm FILE",
                "python -m tilejit remarks FILE",
                "python -m tilejit cache ACTION", "clear"):
        assert cmd in r.stdout
    assert "``" not in r.stdout and ":func:" not in r.stdout


def test_version():
    import tilejit
    r = tilejit_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"tilejit {tilejit.__version__}"


@pytest.mark.parametrize("cmd", ["disasm", "remarks"])
def test_a_missing_bytecode_file_is_one_line_exit_2(tmp_path, cmd):
    r = tilejit_cli(cmd, str(tmp_path / "nope.tileirbc"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"python -m tilejit {cmd}: cannot read {tmp_path / 'nope.tileirbc'}: "
        f"No such file or directory"]


@pytest.mark.skipif(not tileiras.disassembler_available(), reason="needs tileirdisasm")
def test_disasm_of_a_file_that_is_not_bytecode_is_an_error_not_a_traceback(tmp_path):
    bad = tmp_path / "data.csv"
    bad.write_text("a,b\n1,2\n")
    r = tilejit_cli("disasm", str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"python -m tilejit disasm: {bad}: tileirdisasm rejected")


def _project(root):
    (root / "src").mkdir(parents=True)
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "src" / "model.py").write_text("import torch\n")


def _cached_entry(root):
    from tilejit.toolchain import cache
    cache.DiskCache(str(root)).put("ab" + "1" * 62, b"\x7fELF cubin")


def test_cache_clear_keeps_user_files_in_a_tilejit_cache(tmp_path):
    root = tmp_path / "cache"
    from tilejit.toolchain import cache
    cache.problem(str(root))                  # tilejit created it: it carries the marker
    _cached_entry(root)
    _project(root)
    r = tilejit_cli("cache", "clear", env={"TILEJIT_CACHE_DIR": str(root)})
    assert r.returncode == 0, r.stderr
    assert "removed 1 files" in r.stdout and "kept what tilejit did not write" in r.stdout
    assert (root / "data.csv").exists() and (root / "src" / "model.py").exists()
    assert not (root / "ab").exists()


def test_cache_clear_refuses_a_directory_that_is_not_a_tilejit_cache(tmp_path):
    _project(tmp_path)
    _cached_entry(tmp_path)                   # a kernel compiled there by mistake
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    r = tilejit_cli("cache", "clear", env={"TILEJIT_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 1
    assert f"{tmp_path} is not a tilejit cache directory" in r.stderr
    assert "TILEJIT_CACHE_DIR" in r.stderr and "nothing was deleted" in r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_cache_commands_count_only_tilejit_files(tmp_path):
    _project(tmp_path)
    _cached_entry(tmp_path)
    r = tilejit_cli("cache", "info", env={"TILEJIT_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "cubins: 1 entry" in r.stdout and "total: 1 entry" in r.stdout
    assert "no kernel name" in tilejit_cli("cache", "list",
                                           env={"TILEJIT_CACHE_DIR": str(tmp_path)}).stdout


def test_info_warns_about_a_cache_directory_shared_with_other_files(tmp_path):
    _project(tmp_path)
    r = tilejit_cli("info", env={"TILEJIT_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "also holds other files and has no CACHEDIR.TAG" in r.stdout
