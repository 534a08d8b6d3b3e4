"""The Debug section: every op's Python source location, read back by NVIDIA's own tools."""
import inspect
import os
import subprocess
import tempfile

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.errors import SourceLocation
from tilejit.tileir import F32, Builder, Function, Module, write_bytecode
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _varint(b, i):
    v = shift = 0
    while True:
        byte = b[i]
        i += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return v, i


def sections(bc: bytes) -> dict:
    """section id -> payload (the layout in tilejit.tileir.bytecode's docstring)."""
    out, i = {}, 12
    while bc[i] != 0:
        sid, aligned = bc[i] & 0x7F, bc[i] & 0x80
        n, i = _varint(bc, i + 1)
        if aligned:
            align, i = _varint(bc, i)
            i += -i % align
        out[sid] = bc[i:i + n]
        i += n
    return out


def located_module():
    here = SourceLocation("/src/kernels/mine.py", 10, None, None, "mine")
    f = Function("mine", [F32], loc=here)
    b = Builder(f.body)
    b.loc = SourceLocation("/src/kernels/mine.py", 12, 4)
    x = b.broadcast(b.reshape(f.args[0], (1,)), (8,))
    b.loc = None
    b.addf(x, x)
    b.return_()
    return Module("m", [f])


def test_debug_section_lists_the_function_then_each_op_in_order():
    payload = sections(write_bytecode(located_module()))[3]
    nfuncs, i = _varint(payload, 0)
    i += -i % 4
    assert nfuncs == 1 and payload[i:i + 4] == bytes(4)           # the function's list starts at 0
    total, i = _varint(payload, i + 4)
    i += -i % 8
    ids = [int.from_bytes(payload[i + 8 * k:i + 8 * k + 8], "little") for k in range(total)]
    # [function, reshape, broadcast (line 12), addf and return (no location)]
    assert len(ids) == 5 and ids[1] == ids[2] != 0 and ids[3] == ids[4] == 0
    assert ids[0] not in (0, ids[1])
    strings = sections(write_bytecode(located_module()))[1]          # names live there
    assert b"mine.py" in strings and b"/src/kernels" in strings


def test_no_locations_no_section_and_positions_do_not_leak_without_debug_info():
    f = Function("k", [F32])
    Builder(f.body).return_()
    assert 3 not in sections(write_bytecode(Module("m", [f])))
    plain = write_bytecode(located_module(), debug_info=False)
    assert 3 not in sections(plain) and b"mine.py" not in plain


@tile.function
def _square(t):
    return t * t


@tile.entry
def located(z, x, n):
    t = tile.load_tile_like(x, z)
    acc = tile.zeros(z.shape, tile.float32)
    for i in range(n):
        acc = tile.maximum(acc, _square(t))
    z.store(acc)


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


def _kernel_bytecode():
    x = api.from_numpy(np.ones(256, np.float32)).sync()
    z = api.zeros((256,)).sync()
    return located.inspect_bytecode(z.partition((128,)), x, 3)


def test_tileirdisasm_reads_the_python_locations():
    if not tileiras.disassembler_available():
        pytest.skip("tileirdisasm is not installed")
    tc = tileiras.find_toolchain()
    with tempfile.NamedTemporaryFile(suffix=".tileirbc", delete=False) as f:
        f.write(_kernel_bytecode())
        path = f.name
    try:
        r = subprocess.run([tc.tileirdisasm, "-g", path], capture_output=True, text=True,
                           env=tc.env(), timeout=60)
    finally:
        os.unlink(path)
    assert r.returncode == 0, r.stderr
    me = os.path.abspath(__file__)
    for text in ("acc = tile.maximum(acc, _square", "for i in range(n)", "z.store(acc)"):
        assert f'loc("{me}":{_line_of(located.py_func, text)}:' in r.stdout, (text, r.stdout)
    # ops inlined from a @tile.function keep the helper's own line
    assert f'loc("{me}":{_line_of(_square.py_func, "return t * t")}:' in r.stdout
    assert 'name = "located"' in r.stdout


def test_tileiras_turns_the_locations_into_line_tables():
    if not tileiras.available():
        pytest.skip("tileiras is not installed")
    cubin = tileiras.compile_bytecode(_kernel_bytecode(), "sm_90")
    assert b".debug_line" in cubin and b".nv_debug_line_sass" in cubin
    assert os.path.basename(__file__).encode() in cubin
