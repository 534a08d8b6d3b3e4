"""The tileiras repros in tools/tileiras_repros stay valid Tile IR: each bytecode file compiles
with the installed tileiras (tests/gpu/test_tileiras_quirks_gpu.py runs them)."""
import pathlib

import pytest

from tilejit.toolchain import tileiras

REPROS = pathlib.Path(__file__).resolve().parent.parent / "tools" / "tileiras_repros"
BYTECODE = sorted(REPROS.glob("*/*.tileirbc"))


def test_the_repros_are_there():
    assert {p.name for p in BYTECODE} >= {"kernel.tileirbc", "kernel_no_tma.tileirbc",
                                         "kernel_not_carried.tileirbc",
                                         "kernel_f32_input.tileirbc"}


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
@pytest.mark.parametrize("path", BYTECODE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_repro_compiles(path):
    cubin = tileiras.compile_bytecode(path.read_bytes(), "sm_90", name=path.stem)
    assert cubin[:4] == b"\x7fELF"
