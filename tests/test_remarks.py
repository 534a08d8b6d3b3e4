"""tileiras's optimization remarks: ``Kernel.inspect_remarks``, ``tile.Remark`` and ``python -m
tilejit remarks FILE`` (the YAML parser on a fixed sample; the rest through the real tileiras)."""
import inspect

import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import remarks, tileiras

needs_tileiras = pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")

#: one remark; SAMPLE has it twice, as tileiras repeats remarks (parse keeps one)
TMA_LOAD = """\
--- !Passed
Pass:            Memory
Name:            RemarkMemoryLoadInstructionSelected
DebugLoc:        { File: 'k.py', Line: 9, Column: 1 }
Function:        k
Args:
  - RemarkId:    4
  - Remark:      Load instruction selected
  - Instruction: TMA Load instruction
  - Shape:       '[64, 32]'
...
"""
SAMPLE = TMA_LOAD + """\
--- !Failure
Pass:            Memory
Name:            RemarkMemoryTMALoadFailed
DebugLoc:        { File: 'k.py', Line: 5, Column: 1 }
Function:        k
Args:
  - RemarkId:    7
  - Remark:      Failed to select TMA load instruction
  - Reason:      'loc("k.py":5:1): stride not 16-byte aligned'
  - Reason:      'loc("k.py":5:1): stride not 16-byte aligned'
...
""" + TMA_LOAD + """\
--- !Missed
Pass:            Tensor-core
Name:            RemarkTensorCoreMMA
Function:        k
Args:
  - Remark:      MMA not on the tensor cores
...
"""


def test_parse_keeps_each_remark_once_in_source_order_without_repeated_reasons():
    got = remarks.parse(SAMPLE)
    assert got == [
        tile.Remark("missed", "Tensor-core", "RemarkTensorCoreMMA", "MMA not on the tensor cores",
                    None, 0, ()),
        tile.Remark("failed", "Memory", "RemarkMemoryTMALoadFailed",
                    "Failed to select TMA load instruction", "k.py", 5,
                    (("Reason", "stride not 16-byte aligned"),)),
        tile.Remark("passed", "Memory", "RemarkMemoryLoadInstructionSelected",
                    "Load instruction selected", "k.py", 9,
                    (("Instruction", "TMA Load instruction"), ("Shape", "[64, 32]")))]
    assert str(got[1]) == ("k.py:5: failed [Memory] Failed to select TMA load instruction "
                           "(Reason = stride not 16-byte aligned)")
    assert str(got[0]) == "<unknown>: missed [Tensor-core] MMA not on the tensor cores"
    assert got[2].detail("Shape") == "[64, 32]" and got[2].detail("Nope") is None
    assert remarks.parse("") == []


@tile.entry
def product(c, a, b):
    acc = tile.zeros(c.shape, tile.float32)
    ta = tile.load(a, (c.block[0], 0), (c.shape[0], 32))
    tb = tile.load(b, (0, c.block[1]), (32, c.shape[1]))
    acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


@tile.entry
def copy(z, x, TMA: tile.Constant[bool]):
    t = x.load(z.block, z.shape, allow_tma=TMA)
    z.store(t + t)


def _line(fn, text):
    src, first = inspect.getsourcelines(fn.py_func)
    return first + next(i for i, s in enumerate(src) if text in s)


@needs_tileiras
def test_an_mma_on_the_tensor_cores_and_its_tma_loads_at_their_lines():
    a = api.zeros((128, 32), tile.float16).sync()
    b = api.zeros((32, 128), tile.float16).sync()
    c = api.zeros((128, 128), tile.float16).sync()
    got = product.inspect_remarks(c.partition((64, 64)), a, b, arch="sm_90")
    mma = [r for r in got if r.category == "Tensor-core"]
    assert [(r.kind, r.line, r.detail("Instruction"), r.detail("Shape")) for r in mma] == \
        [("passed", _line(product, "tile.mma"), "Tensor-core SM90", "[64, 64, 16]")]
    assert mma[0].file == product.py_func.__code__.co_filename
    loads = {r.line: r.detail("Instruction") for r in got if r.name.endswith("LoadInstructionSelected")}
    assert loads == {_line(product, "ta = "): "TMA Load instruction",
                     _line(product, "tb = "): "TMA Load instruction"}
    assert all(r.kind == "passed" for r in got)


@needs_tileiras
def test_why_a_load_could_not_use_tma():
    x = api.zeros((64, 3), tile.float16).sync()        # rows of 6 bytes: no TMA
    z = api.zeros((64, 3), tile.float16).sync()
    got = copy.inspect_remarks(z.partition((16, 4)), x, True, arch="sm_90")
    line = _line(copy, "x.load")
    assert tile.Remark("failed", "Memory", "RemarkMemoryTmaLoadFailed",
                       "Failed to select TMA load instruction", copy.py_func.__code__.co_filename,
                       line, (("Reason", "stride not 16-byte aligned"),)) in got
    assert any(r.line == line and r.detail("Instruction") == "Global-memory load instruction"
               for r in got)


@tile.entry
def row_sums(z, x, TMA: tile.Constant[bool]):
    t = x.load((z.block[0], 0), (z.shape[0], 64), allow_tma=TMA)
    z.store(tile.sum(t, axis=1, keepdims=True))


@needs_tileiras
def test_allow_tma_false_is_a_global_memory_load_and_true_a_tma_load():
    x = api.zeros((256, 64), tile.float16).sync()
    z = api.zeros((256, 1), tile.float16).sync()
    line = _line(row_sums, "x.load")

    def at_load(tma):
        got = row_sums.inspect_remarks(z.partition((64, 1)), x, tma, arch="sm_90")
        return {(r.category, r.message, r.details) for r in got if r.line == line}
    assert at_load(False) == {
        ("Memory", "Load instruction selected",
         (("Instruction", "Global-memory load instruction"),)),
        ("Hints", "OptimizationHint used default allow_tma", ())}   # the hint it was given
    assert at_load(True) == {("Memory", "Load instruction selected",
                              (("Instruction", "TMA Load instruction"), ("Shape", "[64, 64]")))}


def test_inspect_remarks_names_a_bad_arch():
    z = api.zeros((4, 4), tile.float16).sync()
    with pytest.raises(ValueError, match="sm_90"):
        copy.inspect_remarks(z.partition((4, 4)), z, True, arch="hopper")


@needs_tileiras
def test_cli_prints_the_remarks_of_a_bytecode_file(tmp_path):
    from test_cli import tilejit_cli
    a = api.zeros((128, 32), tile.float16).sync()
    b = api.zeros((32, 128), tile.float16).sync()
    c = api.zeros((128, 128), tile.float16).sync()
    f = tmp_path / "product.tileirbc"
    f.write_bytes(product.inspect_bytecode(c.partition((64, 64)), a, b))
    r = tilejit_cli("remarks", str(f))
    assert r.returncode == 0, r.stderr
    assert f"{product.py_func.__code__.co_filename}:{_line(product, 'tile.mma')}: passed " \
           f"[Tensor-core] MMA operation successfully optimized to use Tensor Cores " \
           f"(Instruction = Tensor-core SM90, Shape = [64, 64, 16])" in r.stdout.splitlines()


def test_a_tileiras_that_writes_no_remarks_is_a_clear_error(fake_tileiras):
    # writes the cubin it is asked for, ignores --remarks-output-file
    fake_tileiras('while [ $# -gt 0 ]; do if [ "$1" = -o ]; then printf "\\177ELF" > "$2"; fi; '
                  'shift; done\n')
    with pytest.raises(tile.ToolchainError, match="wrote no remarks file .*--remarks"):
        remarks.collect(b"\x7fTileIR\x00", "sm_90")


def test_the_remarks_dump_never_fails_the_compile_it_describes(monkeypatch, capsys):
    from tilejit import compiler

    def broken(*a, **k):
        raise tile.ToolchainError("tileiras failed (exit code 3)\nmore")
    monkeypatch.setattr(remarks, "collect", broken)
    compiler._print_remarks(product.py_func, [], {}, "sm_90", b"", 3, "product")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("// ==== tilejit remarks: product(")
    assert err[1:] == ["(no remarks: tileiras failed (exit code 3))"]
