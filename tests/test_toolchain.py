"""tileiras discovery, version probing, compiling to cubins, and failure reporting."""
import os

import pytest

from tilejit import ToolchainError
from tilejit.errors import SourceLocation
from tilejit.tileir import F16, Builder, Function, Module, write_bytecode
from tilejit.toolchain import tileiras

from tileir_cases import matmul_module, vector_add_module

needs_tileiras = pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")


@needs_tileiras
def test_version_and_bytecode_probe():
    v = tileiras.version()
    assert v is not None and v[0] == 13
    assert tuple(tileiras.max_bytecode_version()[:2]) >= (13, 3)
    assert "tileiras" in tileiras.version_text().lower()


@needs_tileiras
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100"])
@pytest.mark.parametrize("build,name", [(vector_add_module, b"vector_add"), (matmul_module, b"matmul")])
def test_compiles_to_cubin(build, name, arch):
    cubin = tileiras.compile_bytecode(write_bytecode(build()), arch)
    assert cubin[:4] == b"\x7fELF"
    assert name in cubin


@needs_tileiras
def test_tileiras_failure_keeps_bytecode_and_shows_command():
    f = Function("bad_tanh", [F16])
    b = Builder(f.body)
    b.unary("tanh", f.args[0], rounding_mode="approx")   # approx tanh is f32-only
    b.return_()
    with pytest.raises(ToolchainError) as ei:
        tileiras.compile_bytecode(write_bytecode(Module("m", [f])), "sm_90", name="bad_tanh")
    err = ei.value
    assert "tileiras failed" in str(err) and "--gpu-name=sm_90" in str(err)
    assert err.bytecode_path and os.path.exists(err.bytecode_path)
    assert err.command[0].endswith("tileiras")


def test_bad_arch_is_rejected():
    if not tileiras.available():
        pytest.skip("tileiras is not installed")
    with pytest.raises(ToolchainError, match="sm_90"):
        tileiras.compile_bytecode(b"", "hopper")


def test_missing_tileiras_says_how_to_install(monkeypatch):
    monkeypatch.setenv("TILEJIT_TILEIRAS", "/nonexistent/tileiras")
    tileiras.find_toolchain.cache_clear()
    try:
        with pytest.raises(ToolchainError, match="pip install"):
            tileiras.find_toolchain()
    finally:
        monkeypatch.delenv("TILEJIT_TILEIRAS")
        tileiras.find_toolchain.cache_clear()


def test_diagnostics_map_back_to_python_source():
    loc = tileiras.parse_diagnostics('loc("/tmp/k.py":12:5): error: bad things\nmore')
    assert loc == SourceLocation("/tmp/k.py", 12, 4)
    assert tileiras.parse_diagnostics("error: no location") is None


@needs_tileiras
def test_pip_installed_tileiras_comes_with_the_disassembler():
    # The golden printer tests skip without tileirdisasm; an install from the nvidia-cuda-tileiras
    # wheel (CI's) ships it, so there they must run.
    path = tileiras.find_toolchain().tileiras
    if "site-packages" not in path:
        pytest.skip(f"tileiras at {path} is not from the pip wheel")
    assert tileiras.disassembler_available(), f"no tileirdisasm next to {path}"


# --- a tileiras that misbehaves (issue 21 item 16): fake tileiras scripts ----------------------------
def _gone(pid: int, seconds: float = 5.0) -> bool:
    import time
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_hanging_version_probe_times_out_and_says_what_hung(tmp_path, fake_tileiras,
                                                               monkeypatch):
    import time
    pidfile = tmp_path / "child.pid"
    fake_tileiras(f"sleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    monkeypatch.setenv("TILEJIT_TILEIRAS_TIMEOUT", "1")
    t0 = time.time()
    with pytest.raises(ToolchainError) as ei:
        tileiras.version_text()
    assert time.time() - t0 < 30
    msg = str(ei.value)
    assert "--version" in msg and "did not finish within 1 s" in msg
    assert "TILEJIT_TILEIRAS_TIMEOUT" in msg
    assert _gone(int(pidfile.read_text())), "the probe's child process outlived the timeout"


def test_the_bytecode_probe_times_out_too(fake_tileiras, monkeypatch):
    fake_tileiras("sleep 300\n")
    monkeypatch.setenv("TILEJIT_TILEIRAS_TIMEOUT", "0.5")
    with pytest.raises(ToolchainError, match="--list-versions` did not finish within 0.5 s"):
        tileiras.max_bytecode_version()


def test_a_failing_version_probe_shows_tileiras_stderr(fake_tileiras):
    fake_tileiras("echo 'libnvvm.so.4: cannot open shared object file' >&2\nexit 1\n")
    with pytest.raises(ToolchainError) as ei:
        tileiras.version_text()
    assert "libnvvm.so.4: cannot open shared object file" in str(ei.value)
    assert "exit code 1" in str(ei.value)


def test_a_tileiras_that_fails_on_everything_shows_why(fake_tileiras):
    # --list-versions unknown and every probe compile fails: the error is tileiras' own stderr,
    # not "accepts bytecode []"
    fake_tileiras("echo 'error: failed to compile Tile IR program (CUDA_HOME is stale)' >&2\n"
                  "exit 1\n")
    with pytest.raises(ToolchainError) as ei:
        tileiras.max_bytecode_version()
    msg = str(ei.value)
    assert "CUDA_HOME is stale" in msg and "accepts bytecode []" not in msg
    assert "exit code 1" in msg


def test_a_failing_compile_shows_tileiras_stderr(fake_tileiras):
    fake_tileiras("echo 'error: unsupported operation foo' >&2\nexit 1\n")
    with pytest.raises(ToolchainError) as ei:
        tileiras.compile_bytecode(b"\x7fTileIR\x00", "sm_90", keep_failed=False)
    assert "tileiras failed (exit code 1)" in str(ei.value)
    assert "error: unsupported operation foo" in str(ei.value)
    assert ei.value.stderr.strip() == "error: unsupported operation foo"


def _fake_compiler(log) -> str:
    """A tileiras that answers the probes, logs each compile and writes ``$FAKE_OUTPUT`` as its
    output (a script: the output is whatever the test chooses)."""
    return (f'case "$1" in --version) echo "fake tileiras V13.4.92"; exit 0;;\n'
            f'  --list-versions) echo 13.4; exit 0;; esac\n'
            f'echo "$@" >> {log}\n'
            f'while [ "$1" != "-o" ]; do shift; done\n'
            f'printf "$FAKE_OUTPUT" > "$2"\n')


def test_non_elf_output_is_rejected_and_not_cached(tmp_path, fake_tileiras, monkeypatch):
    from tilejit.toolchain import compile_cubin
    log = tmp_path / "runs.log"
    fake_tileiras(_fake_compiler(log))
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_OUTPUT", "<html>not a cubin</html>")
    for attempt in (1, 2):
        with pytest.raises(ToolchainError, match="its output is not a cubin"):
            compile_cubin(b"\x7fTileIR\x00bytecode", "sm_90")
        assert len(log.read_text().splitlines()) == attempt     # nothing cached: it ran again
    assert not list((tmp_path / "cache").glob("*/*.cubin"))
    monkeypatch.setenv("FAKE_OUTPUT", "\\177ELF a cubin")
    cubin, hit, key = compile_cubin(b"\x7fTileIR\x00bytecode", "sm_90")
    assert cubin == b"\x7fELF a cubin" and not hit and key
    assert compile_cubin(b"\x7fTileIR\x00bytecode", "sm_90").hit
