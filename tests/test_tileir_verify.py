"""The verifier rejects malformed modules before tileiras sees them, naming the op."""
import pytest

from tilejit.tileir import (F16, F32, I1, I32, Builder, Function, Module, PartitionViewType,
                            VerifyError, ptr, tile, verify_module)

from tileir_cases import CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_all_cases_verify(name):
    verify_module(CASES[name][0]())


def _module(args, build, terminate=True):
    f = Function("bad", args)
    b = Builder(f.body)
    build(b, *f.args)
    if terminate:
        b.return_()
    return Module("m", [f])


def _expect(module, *fragments):
    with pytest.raises(VerifyError) as ei:
        verify_module(module)
    msg = str(ei.value)
    for frag in fragments:
        assert frag in msg, msg
    return msg


def test_type_mismatch_names_op_and_types():
    m = _module([F32, F16], lambda b, x, y: b.create("addf", [x, y], [x.type],
                                                      {"rounding_mode": "nearest_even"}))
    _expect(m, "op 'addf'", "rhs", "tile<f16>", "tile<f32>")


def test_use_before_def():
    def build(b, x):
        y = b.addf(x, x)
        b.addf(y, y)                          # z = y + y
        ops = b.block.ops
        ops[0], ops[1] = ops[1], ops[0]       # z's op now comes before y's definition
    _expect(_module([F32], build), "op 'addf'", "not defined before")


def test_value_from_a_sibling_region_is_out_of_scope():
    def build(b, x, c):
        i = b.if_(c)
        with b.at(i.regions[0]):
            inner = b.addf(x, x)
            b.yield_()
        with b.at(i.regions[1]):
            b.yield_()
        b.addf(inner, x)
    _expect(_module([F32, I1], build), "op 'addf'", "out of scope")


def test_missing_function_terminator():
    _expect(_module([F32], lambda b, x: b.addf(x, x), terminate=False), "missing terminator")


def test_missing_region_terminator():
    def build(b, c):
        i = b.if_(c)
        with b.at(i.regions[1]):
            b.yield_()
    _expect(_module([I1], build), "op 'if'", "missing terminator")


def test_yield_types_must_match_if_results():
    def build(b, c, x):
        i = b.if_(c, [F32])
        with b.at(i.regions[0]):
            b.yield_([c])
        with b.at(i.regions[1]):
            b.yield_([x])
    _expect(_module([I1, F32], build), "op 'yield'", "tile<i1>", "tile<f32>")


def test_break_in_for_is_rejected():
    def build(b, n):
        z, one = b.constant(0, I32), b.constant(1, I32)
        fo = b.for_(z, n, one)
        with b.at(fo.regions[0]):
            b.break_()
    _expect(_module([I32], build), "'break'", "for")


def test_return_inside_if_is_rejected():
    def build(b, c):
        i = b.if_(c)
        with b.at(i.regions[0]):
            b.create("return", [[]])
        with b.at(i.regions[1]):
            b.yield_()
    _expect(_module([I1], build), "'return'")


def test_mma_shape_mismatch():
    def build(b, x):
        a = b.broadcast(b.reshape(x, (1, 1)), (16, 32))
        bb = b.broadcast(b.reshape(x, (1, 1)), (16, 16))
        acc = b.constant(0.0, tile("f32", (16, 16)))
        b.create("mmaf", [a, bb, acc], [acc.type])
    _expect(_module([F16], build), "op 'mmaf'", "shape mismatch")


def test_non_power_of_two_partition():
    def build(b, p, n):
        tv = b.make_tensor_view(p, [n], [1])
        pv = PartitionViewType((48,), tv.type)
        b.create("make_partition_view", [tv], [pv])
    _expect(_module([ptr("f32"), I32], build), "powers of two")


def test_stored_tile_must_match_view():
    def build(b, p, n, x):
        tv = b.make_tensor_view(p, [n], [1])
        pv = b.make_partition_view(tv, (64,))
        bx, _, _ = b.get_tile_block_id()
        t = b.broadcast(b.reshape(x, (1,)), (32,))
        b.store_view_tko(t, pv, [bx])
    _expect(_module([ptr("f32"), I32, F32], build), "op 'store_view_tko'", "tile<32xf32>")


def test_entry_parameters_must_be_scalars():
    f = Function("k", [tile("f32", (4,))])
    Builder(f.body).return_()
    with pytest.raises(VerifyError, match="scalar"):
        verify_module(Module("m", [f]))
