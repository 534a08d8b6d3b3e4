"""Simulator: print_tko output format, assert failures and error reporting (op coverage is in
test_op_registry.py)."""
import numpy as np
import pytest

from tilejit import DeviceError
from tilejit.errors import SourceLocation
from tilejit.simulator import (DeviceAssertionError, SimulatorError, SimulatorUnsupportedError,
                               compile_function)
from tilejit.tileir import F32, I1, I32, Module, OPS, ptr, tile
from tilejit.tileir.ir import Operation
from simulator_helpers import fn, random_tile, run

from tileir_cases import CASES


def _print_module(fmt, make_args, arg_types):
    f, b = fn("pr", arg_types)
    b.print_(fmt, make_args(b, *f.args))
    b.return_()
    return Module("pr", [f])


def test_print_scalars_and_tiles_per_block(capsys):
    def args(b, x, n):
        t = b.reshape(b.iota(tile("i32", (4,))), (2, 2))
        return [b.get_tile_block_id()[0], x, n, t, b.itof(t, "f32", True)]
    m = _print_module("bx=%d x=%.2f n=%u t=%3d\n f=%g!\n", args, [F32, I32])
    run(m, (2, 1, 1), [1.5, -1])
    out = capsys.readouterr().out
    assert out == ("[block (0, 0, 0)] bx=0 x=1.50 n=4294967295 t=[[  0,   1], [  2,   3]]\n"
                   "[block (0, 0, 0)]  f=[[0, 1], [2, 3]]!\n"
                   "[block (1, 0, 0)] bx=1 x=1.50 n=4294967295 t=[[  0,   1], [  2,   3]]\n"
                   "[block (1, 0, 0)]  f=[[0, 1], [2, 3]]!\n")


def test_print_hex_percent_bool_and_float_formats(capsys):
    def args(b, x, c):
        return [x, c, x, b.ftof(b.itof(x, "f32", True), "f16")]
    m = _print_module("%x %d %5.1e %% %08.3f", args, [I32, I1])
    run(m, (1, 1, 1), [-2, True])
    assert capsys.readouterr().out == "[block (0, 0, 0)] fffffffe 1 -2.0e+00 % -002.000"


def test_print_without_newline_continues_the_line(capsys):
    m = _print_module("a", lambda b: [], [])
    run(m, (3, 1, 1), [])
    assert capsys.readouterr().out == "[block (0, 0, 0)] aaa"


def test_assert_failure_names_message_block_and_elements(dev, capsys):
    f, b = fn("as", [ptr("f32")])
    bx = b.get_tile_block_id()[0]
    x, _ = b.load_ptr_tko(b.offset(b.broadcast(b.reshape(f.args[0], (1,)), (8,)),
                                   b.iota(tile("i32", (8,)))))
    lim = b.broadcast(b.reshape(b.itof(bx, "f32", True), (1,)), (8,))
    b.assert_(b.cmpf("greater_than_or_equal", x, lim), "x must be >= block id")
    b.return_()
    data = np.array([5, 5, 1, 5, 5, 5, 0.5, 5], np.float32)
    run(Module("as", [f]), (1, 1, 1), [dev.put(data)])           # block 0 passes
    with pytest.raises(DeviceAssertionError) as ei:
        run(Module("as", [f]), (3, 1, 1), [dev.put(data)])
    e = ei.value
    assert isinstance(e, DeviceError)
    assert e.block == (1, 0, 0) and e.message == "x must be >= block id"
    assert e.indices == [(6,)]
    assert "x must be >= block id" in str(e) and "(1, 0, 0)" in str(e) and "'assert'" in str(e)
    # on stdout too, once, as the GPU prints it (scripts and cuTile's tests read it there)
    assert capsys.readouterr().out == \
        "[block (1, 0, 0)] device assertion failed: x must be >= block id\n"


def test_scalar_assert(dev):
    f, b = fn("sa", [I1])
    b.assert_(f.args[0], "flag")
    b.return_()
    run(Module("sa", [f]), (1, 1, 1), [True])
    with pytest.raises(DeviceAssertionError, match="device assertion failed: flag"):
        run(Module("sa", [f]), (1, 1, 1), [False])


def test_unsupported_op_is_named():
    f, b = fn("u", [F32])
    fake = type(OPS["negf"])(name="frobnicate", opcode=0xFFF, since=(13, 1),
                             operands=OPS["negf"].operands, results=OPS["negf"].results)
    b.block.append(Operation(fake, [[f.args[0]]], [F32]))
    b.return_()
    with pytest.raises(SimulatorUnsupportedError, match="'frobnicate'"):
        compile_function(Module("u", [f]), "u")


def test_internal_errors_name_op_and_source_location(dev, tmp_path):
    src = tmp_path / "kern.py"
    src.write_text("x = 1\ny = load(p)\n")
    f, b = fn("loc", [ptr("f32"), I32])
    b.loc = SourceLocation(str(src), 2)
    b.load_ptr_tko(b.offset(f.args[0], f.args[1]))
    b.return_()
    with pytest.raises(SimulatorError) as ei:
        run(Module("loc", [f]), (1, 1, 1), [dev.put(np.zeros(2, np.float32)), 99])
    msg = str(ei.value)
    assert "load_ptr_tko" in msg and "kern.py:2" in msg and "y = load(p)" in msg


def test_bad_launches():
    f, b = fn("l", [I32])
    b.return_()
    k = compile_function(Module("l", [f]), "l")
    with pytest.raises(DeviceError, match="takes 1 parameters"):
        k((1, 1, 1), [])
    with pytest.raises(DeviceError, match="no function 'nope'"):
        compile_function(Module("l", [f]), "nope")
    k((0, 4, 1), [3])                                # an empty grid runs nothing


def test_float_params_follow_their_type(dev, capsys):
    m = _print_module("%.10f", lambda b, x: [x], [F32])
    run(m, (1, 1, 1), [0.1])
    assert capsys.readouterr().out.endswith(f"{float(np.float32(0.1)):.10f}")


# --- the hand-built golden cases run end to end -------------------------------------------------
_MEMORY_CASES = {"views", "views_inbounds", "pointers_and_atomics"}


def _param(t, buf):
    if t.is_ptr:
        return buf
    if t.is_float:
        return 1.5
    return True if t.element == "i1" else 3


@pytest.mark.parametrize("name", sorted(set(CASES) - _MEMORY_CASES))
def test_every_golden_case_runs(dev, name, capsys):
    m = CASES[name][0]()
    buf = dev.put(np.zeros(64, np.float32))
    for f in m.functions:
        k = compile_function(m, f.name)
        assert compile_function(m, f.name) is k          # prepared once, cached
        k((2, 1, 1), [_param(a.type, buf) for a in f.args])


def test_debug_ops_case_prints(capsys):
    m = CASES["debug_ops"][0]()
    run(m, (1, 1, 1), [0.5, True])
    assert capsys.readouterr().out == ("[block (0, 0, 0)] x = [0.500000, 0.500000, 0.500000, "
                                       "0.500000]\n[block (0, 0, 0)] hello\n"
                                       "[block (0, 0, 0)] two: 0.500000 0.500000")


def test_views_case_round_trips_memory(dev):
    # every store in the case writes back what the matching load read
    p = random_tile("f32", (128, 64), 1)
    q = random_tile("bf16", (600,), 2)
    pp, pq = dev.put(p), dev.put(q)
    run(CASES["views"][0](), (1, 1, 1), [pp, 128, 64, 64, 1, pq, 600, 1])
    np.testing.assert_array_equal(dev.get(pp, (128, 64), np.float32), p)
    np.testing.assert_array_equal(dev.get(pq, (600,), q.dtype), q)
    run(CASES["views_inbounds"][0](), (2, 1, 1), [pp, 256])
    np.testing.assert_array_equal(dev.get(pp, (128, 64), np.float32), p)


def test_pointers_and_atomics_case(dev):
    n = 40
    y = random_tile("f32", (64,), 3)
    x = random_tile("i32", (64,), 4) % 1000
    pf, pi = dev.put(y), dev.put(x)
    run(CASES["pointers_and_atomics"][0](), (1, 1, 1), [pf, pi, n])
    lanes = np.arange(64)
    np.testing.assert_array_equal(dev.get(pi, (64,), np.int32),
                                  np.where(lanes < n, lanes, x + lanes))
    np.testing.assert_array_equal(dev.get(pf, (64,), np.float32), np.where(lanes < n, 2 * y, 0))


def test_print_through_an_alias_is_still_a_print(capsys):
    """The print rewrite runs only where ``print`` is named; an alias names it too."""
    import tilejit
    show = print

    @tilejit.entry
    def k(x):
        show(x.load((0,), (2,)) * 10.0)

    k(np.array([3.0, 4.0], np.float32)).grid(1).sync()
    out = capsys.readouterr().out
    assert "30" in out and "40" in out


def test_printf_of_python_constants_fills_their_conversions(capsys):
    """``printf("%f", 3.14)``: a constant argument was dropped, leaving a conversion without an
    operand (tileiras refused the print op)."""
    import tilejit

    @tilejit.entry
    def k(x):
        tilejit.printf("c=%f i=%d b=%d t=%f\n", 3.5, -7, True, x.load((0,), (1,)).reshape(()))

    k(np.array([2.0], np.float32)).grid(1).sync()
    assert "c=3.500000 i=-7 b=1 t=2.000000" in capsys.readouterr().out
    ir = k.inspect_tileir(np.array([2.0], np.float32))
    assert ir.count("print_tko") == 1 and "f32>, tile<i64>, tile<i32>, tile<f32>" in ir
