"""Every op family: our printed text equals tileirdisasm's reading of our bytecode."""
import pytest

from tilejit.tileir import print_module, verify_module, write_bytecode
from tilejit.toolchain import tileiras

from tileir_cases import CASES, matmul_module, vector_add_module

# tileirdisasm ships with the nvidia-cuda-tileiras wheel (CI requires it: see test_toolchain);
# other installs, such as a bare CUDA toolkit, may lack it.
needs_disasm = pytest.mark.skipif(not tileiras.disassembler_available(),
                                  reason="tileirdisasm is not installed (pip install "
                                         "'tilejit[tileiras]' provides it)")

VERSIONS = ["13.1", "13.2", "13.3", "13.4"]
PARAMS = [(name, v) for name, (_, minv) in CASES.items() for v in VERSIONS
          if (13, int(v.split(".")[1])) >= minv]


@needs_disasm
@pytest.mark.parametrize("name,version", PARAMS, ids=[f"{n}-{v}" for n, v in PARAMS])
def test_printer_matches_disassembly(name, version):
    module = CASES[name][0]()
    verify_module(module)
    text = print_module(module)
    assert tileiras.disassemble(write_bytecode(module, version)) == text


@needs_disasm
@pytest.mark.parametrize("build", [vector_add_module, matmul_module])
def test_kernels_round_trip(build):
    m = build()
    verify_module(m)
    assert tileiras.disassemble(write_bytecode(m)) == print_module(m)


def test_nested_regions_are_printed_with_carried_values():
    text = print_module(CASES["control_flow"][0]())
    assert "loop iter_values(" in text and "for %loopIdx in" in text
    assert "break" in text and "continue" in text and "} else {" in text
