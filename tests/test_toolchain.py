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
