"""Every TILEJIT_* variable is parsed in one place (tilejit/envvars.py) with its unit and range; a
bad value is one clear error naming the variable and the accepted forms (issue 21 item 18)."""
import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest

import tilejit as tile
from tilejit import api, envvars
from tilejit.envvars import EnvironmentVariableError
from tilejit.toolchain import cache, tileiras

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("text,value", [
    ("1073741824", 1 << 30), ("1GB", 10**9), ("1 GB", 10**9), ("512MiB", 512 << 20),
    ("64kB", 64_000), ("64KiB", 65536), ("1.5GiB", 3 << 29), ("2tb", 2 * 10**12), ("0", 0),
    (" 100B ", 100),
])
def test_sizes_take_units(monkeypatch, text, value):
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", text)
    assert envvars.get("TILEJIT_CACHE_SIZE") == value


@pytest.mark.parametrize("text,why", [("-1", "is negative"), ("lots", "is not a size"),
                                      ("1e9", "is not a size"), ("1 GB extra", "is not a size"),
                                      ("5 parsecs", "is not a size")])
def test_bad_sizes_name_the_variable_and_the_forms(monkeypatch, text, why):
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", text)
    with pytest.raises(EnvironmentVariableError) as ei:
        envvars.get("TILEJIT_CACHE_SIZE")
    msg = str(ei.value)
    assert msg.startswith(f"TILEJIT_CACHE_SIZE={text!r} {why}")
    assert "1GB, 512MiB" in msg and "unset it" in msg
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, tile.TileJitError)


def test_the_cache_size_is_used_in_bytes(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", "1GB")       # used to be silently ignored
    assert cache.current().limit == 10**9
    monkeypatch.setenv("TILEJIT_CACHE_SIZE", "-1")        # used to evict every cubin
    with pytest.raises(EnvironmentVariableError, match="TILEJIT_CACHE_SIZE='-1' is negative"):
        cache.current()


@pytest.mark.parametrize("text,value", [("1", True), ("TRUE", True), ("yes", True), ("on", True),
                                        ("0", False), ("false", False), ("No", False),
                                        ("off", False), ("", False)])
def test_flags(monkeypatch, text, value):
    monkeypatch.setenv("TILEJIT_FULL_TRACEBACK", text)
    assert envvars.get("TILEJIT_FULL_TRACEBACK") is value


def test_an_empty_flag_means_its_default(monkeypatch):
    monkeypatch.setenv("TILEJIT_NATIVE", "")
    assert envvars.get("TILEJIT_NATIVE") is True


@pytest.mark.parametrize("text", ["abc", "-5", "0", "inf", "nan", "5 minutes"])
def test_bad_timeouts_are_refused(monkeypatch, text):
    monkeypatch.setenv("TILEJIT_TILEIRAS_TIMEOUT", text)
    with pytest.raises(EnvironmentVariableError,
                       match=rf"TILEJIT_TILEIRAS_TIMEOUT={re.escape(repr(text))} is not a "
                             rf".*accepts a positive number of seconds"):
        tileiras.time_limit()


@pytest.mark.parametrize("text,value", [("2.5", 2.5), ("30s", 30.0), ("600", 600.0)])
def test_timeouts(monkeypatch, text, value):
    monkeypatch.setenv("TILEJIT_TILEIRAS_TIMEOUT", text)
    assert tileiras.time_limit() == value


def test_a_bad_timeout_fails_the_compile_clearly(monkeypatch):
    monkeypatch.setenv("TILEJIT_TILEIRAS_TIMEOUT", "abc")
    if not tileiras.available():
        pytest.skip("tileiras is not installed")
    with pytest.raises(EnvironmentVariableError, match="TILEJIT_TILEIRAS_TIMEOUT='abc'"):
        tileiras.compile_bytecode(b"\x7fTileIR\x00", "sm_90", keep_failed=False)


def test_the_pool_release_threshold_is_a_size(monkeypatch):
    monkeypatch.setenv("TILEJIT_POOL_RELEASE_THRESHOLD", "lots")       # used to be ignored
    with pytest.raises(EnvironmentVariableError,
                       match="TILEJIT_POOL_RELEASE_THRESHOLD='lots' is not a size"):
        envvars.get("TILEJIT_POOL_RELEASE_THRESHOLD")
    monkeypatch.setenv("TILEJIT_POOL_RELEASE_THRESHOLD", "2GiB")
    assert envvars.get("TILEJIT_POOL_RELEASE_THRESHOLD") == 2 << 30


def test_choices_stages_integers_and_arch(monkeypatch):
    kind = envvars.choice("serial", "shuffle")
    assert kind.parse("TILEJIT_X", "Shuffle") == "shuffle"
    with pytest.raises(EnvironmentVariableError, match="one of serial, shuffle"):
        kind.parse("TILEJIT_X", "random")
    n = envvars.integer(1, 8)
    assert n.parse("TILEJIT_X", " 4 ") == 4
    with pytest.raises(EnvironmentVariableError, match="is out of range.*from 1 to 8"):
        n.parse("TILEJIT_X", "9")
    monkeypatch.setenv("TILEJIT_DUMP", "tileir, Timings")
    assert envvars.dump_stages() == {"tileir", "timings"}
    monkeypatch.setenv("TILEJIT_ARCH", "hopper")
    with pytest.raises(EnvironmentVariableError, match="TILEJIT_ARCH='hopper'.*sm_90"):
        envvars.get("TILEJIT_ARCH")


def test_full_traceback_maybe_does_not_hide_the_users_error(monkeypatch):
    @tile.entry
    def bad(z):
        z.store(undefined_name)          # noqa: F821  (the user's own error)

    monkeypatch.setenv("TILEJIT_FULL_TRACEBACK", "maybe")
    z = api.zeros((4,)).sync()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(tile.CompileError, match="undefined_name"):
            bad(z.partition((4,))).sync()
    msgs = [str(x.message) for x in w if "TILEJIT_FULL_TRACEBACK" in str(x.message)]
    assert msgs and "TILEJIT_FULL_TRACEBACK='maybe' is not understood" in msgs[0]


DUMP = textwrap.dedent("""
    import tilejit as tile
    from tilejit import api
    @tile.entry
    def twice(z, x):
        z.store(tile.load_tile_like(x, z) * 2)
    x = api.empty((64,)).sync()
    twice.compile(x.partition((16,)), x, arch="sm_90")
""")


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_a_missing_dump_dir_is_created(tmp_path):
    env = dict(os.environ, TILEJIT_DUMP="bytecode", TILEJIT_DUMP_DIR="missing/x",
               TILEJIT_SIMULATE="1", TILEJIT_CACHE_DIR="0")
    r = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "missing" / "x" / "twice.tileirbc").read_bytes()[:4] == b"\x7fTil"
    # a dump dir that cannot be created is a clear error naming the variable
    (tmp_path / "file").write_text("")
    env["TILEJIT_DUMP_DIR"] = "file/x"
    r = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert r.returncode != 0
    assert "EnvironmentVariableError: TILEJIT_DUMP_DIR='file/x': cannot write" in r.stderr


# --- the registry is the one place ---------------------------------------------------------------------
def _package_sources():
    pkg = os.path.join(ROOT, "tilejit")
    for dirpath, _, files in os.walk(pkg):
        for f in files:
            if f.endswith((".py", ".c")):
                path = os.path.join(dirpath, f)
                yield os.path.relpath(path, ROOT), open(path, encoding="utf-8").read()


def test_every_variable_the_package_mentions_is_registered():
    names = set()
    for _, text in _package_sources():
        names |= set(re.findall(r"\bTILEJIT_[A-Z0-9_]*[A-Z0-9]\b", text))
    assert names - set(envvars.VARIABLES) == set()


def test_nothing_but_envvars_reads_tilejit_variables_from_the_environment():
    offenders = []
    for rel, text in _package_sources():
        if rel == os.path.join("tilejit", "envvars.py"):
            continue
        for line in text.splitlines():
            if ("environ" in line or "getenv" in line) and "TILEJIT_" in line:
                offenders.append(f"{rel}: {line.strip()}")
    assert offenders == []


def test_docs_list_every_variable_and_nothing_else():
    text = open(os.path.join(ROOT, "docs", "tooling.md"), encoding="utf-8").read()
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(TILEJIT_[A-Z0-9_]+)`", section, flags=re.M)
    assert sorted(rows) == sorted(envvars.VARIABLES) and len(rows) == len(set(rows))


def test_info_reports_bad_and_unknown_variables():
    env = dict(os.environ, TILEJIT_CACHE_SIZE="lots", TILEJIT_CACHEDIR="/tmp/x",
               TILEJIT_SIMULATE="1")
    r = subprocess.run([sys.executable, "-m", "tilejit", "info"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "TILEJIT_CACHE_SIZE='lots' is not a size" in r.stdout
    assert "TILEJIT_CACHEDIR is not a tilejit variable" in r.stdout
