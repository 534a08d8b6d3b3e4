"""Hand-built Tile IR modules, one per op family, shared by the golden and verifier tests.

Each case is ``name -> (builder function, minimum bytecode version)``.
"""
from __future__ import annotations

import numpy as np

from tilejit.tileir import (BF16, F16, F32, F64, I1, I8, I16, I32, I64, TOKEN, Builder, Function,
                            Module, OptHints, attrs as A, ptr, scalar, tile)

CASES = {}


def case(min_version=(13, 1)):
    def deco(build):
        CASES[build.__name__] = (build, min_version)
        return build
    return deco


def fn(name, types, hints=None):
    f = Function(name, types, hints=hints)
    return f, Builder(f.body)


@case()
def float_unary():
    f, b = fn("float_unary", [F32])
    x = b.broadcast(b.reshape(f.args[0], (1, 1)), (4, 8))
    for name in ("absf", "ceil", "cos", "cosh", "floor", "log", "log2", "negf", "sin", "sinh", "tan"):
        x = b.unary(name, x)
    x = b.unary("exp2", x, flush_to_zero=True)
    x = b.unary("exp2", x)
    x = b.unary("rsqrt", x, flush_to_zero=True)
    x = b.sqrt(x)
    x = b.sqrt(x, rounding_mode="zero", flush_to_zero=True)
    x = b.sqrt(x, rounding_mode="approx")
    b.return_()
    return Module("m", [f])


@case((13, 3))
def float_unary_rounding():
    f, b = fn("float_unary_rounding", [F32, F32])
    x = b.unary("exp", f.args[0], rounding_mode="full")
    x = b.unary("exp", x, rounding_mode="approx")
    y = b.unary("tanh", f.args[1], rounding_mode="full")
    y = b.unary("tanh", y, rounding_mode="approx")
    b.return_()
    return Module("m", [f])


@case()
def float_binary():
    f, b = fn("float_binary", [F32, F32, BF16])
    x, y, z = f.args
    r = b.addf(x, y)
    r = b.addf(r, y, rounding_mode="zero")
    r = b.subf(r, y, flush_to_zero=True)
    r = b.mulf(r, y, rounding_mode="positive_inf", flush_to_zero=True)
    r = b.divf(r, y, rounding_mode="approx")
    r = b.divf(r, y, rounding_mode="full")
    r = b.binary("remf", r, y)
    r = b.binary("fpowf", r, y)
    r = b.binary("maxf", r, y)
    r = b.binary("maxf", r, y, propagate_nan=True)
    r = b.binary("minf", r, y, flush_to_zero=True)
    r = b.binary("minf", r, y, propagate_nan=True, flush_to_zero=True)
    r = b.fma(r, y, x)
    r = b.fma(r, y, x, rounding_mode="negative_inf", flush_to_zero=True)
    for pred in ("equal", "not_equal", "less_than", "less_than_or_equal", "greater_than",
                 "greater_than_or_equal"):
        b.cmpf(pred, r, y)
    b.cmpf("not_equal", z, z, ordering="unordered")
    b.addf(z, z)
    b.return_()
    return Module("m", [f])


@case((13, 2))
def float_atan2():
    f, b = fn("float_atan2", [F32, F32])
    b.binary("atan2", f.args[0], f.args[1])
    b.return_()
    return Module("m", [f])


@case()
def int_ops():
    f, b = fn("int_ops", [I32, I32, I64, I8])
    x, y, w, c = f.args
    r = b.unary("absi", x)
    r = b.binary("addi", r, y)
    r = b.binary("addi", r, y, overflow="no_signed_wrap")
    r = b.binary("subi", r, y, overflow="no_unsigned_wrap")
    r = b.binary("muli", r, y, overflow="no_wrap")
    r = b.binary("shli", r, y)
    for n in ("andi", "ori", "xori", "mulhii"):
        r = b.binary(n, r, y)
    for n in ("maxi", "mini", "remi", "shri"):
        r = b.binary(n, r, y, signedness="signed")
        r = b.binary(n, r, y, signedness="unsigned")
    r = b.binary("divi", r, y, signedness="signed")
    r = b.binary("divi", r, y, signedness="unsigned", rounding="positive_inf")
    r = b.binary("divi", r, y, signedness="signed", rounding="negative_inf")
    for pred in ("equal", "less_than", "greater_than_or_equal"):
        b.cmpi(pred, r, y, "signed")
        b.cmpi(pred, r, y, "unsigned")
    b.binary("addi", w, w)
    b.binary("muli", c, c)
    b.return_()
    return Module("m", [f])


@case((13, 2))
def int_negi():
    f, b = fn("int_negi", [I32])
    r = b.unary("negi", f.args[0])
    b.unary("negi", r, overflow="no_signed_wrap")
    b.return_()
    return Module("m", [f])


@case()
def conversions():
    f, b = fn("conversions", [I32, F32, I8, F16, I64, ptr("f32")])
    i32, f32, i8, f16, i64, p = f.args
    b.exti(i8, "i32", signed=True)
    b.exti(i8, "i64", signed=False)
    b.trunci(i64, "i16")
    b.ftof(f32, "f16")
    b.ftof(f16, "f32")
    b.ftof(f32, "bf16", rounding="zero")
    b.ftof(f32, "tf32")
    b.ftof(f32, "f8E4M3FN")
    b.ftof(f32, "f8E5M2")
    b.ftof(f16, "f64")
    b.ftoi(f32, "i32", signed=True)
    b.ftoi(f16, "i8", signed=False)
    b.itof(i32, "f32", signed=True)
    b.itof(i64, "f16", signed=False)
    b.bitcast(f32, I32)
    b.bitcast(i32, F32)
    q = b.ptr_to_int(p)
    p2 = b.int_to_ptr(q, "f32")
    b.create("ptr_to_ptr", [p2], [ptr("f16")])
    b.return_()
    return Module("m", [f])


@case()
def constants():
    f, b = fn("constants", [])
    b.constant(0, I32)
    b.constant(1, I32)
    b.constant(-7, I64)
    b.constant(200, I8)
    b.constant(True, I1)
    b.constant(False, I1)
    b.constant(np.array([True, False, True, True]), tile("i1", (4,)))
    b.constant(1.0, F32)
    b.constant(0.5, F16)
    b.constant(-2.25, BF16)
    b.constant(0.1, F32)
    b.constant(3.141592653589793, F32)
    b.constant(1.4426950408889634, F32)
    b.constant(float("inf"), F32)
    b.constant(float("-inf"), F64)
    b.constant(float("nan"), F32)
    b.constant(1e-30, F32)
    b.constant(123456789.0, F64)
    b.constant(2.0, tile("f32", (16, 16)))
    b.constant(np.arange(8, dtype=np.int32), tile("i32", (8,)))
    b.constant(np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5, tile("f32", (2, 2)))
    b.constant(0.0, tile("f8E4M3FN", (4,)))
    b.constant(1.0, scalar("tf32"))
    b.iota(tile("i32", (128,)))
    b.iota(tile("i64", (16,)))
    b.return_()
    return Module("m", [f])


@case()
def shapes():
    f, b = fn("shapes", [F32, I32])
    x = b.reshape(f.args[0], (1,))
    x = b.broadcast(x, (64,))
    m = b.reshape(x, (8, 8))
    t = b.permute(m, (1, 0))
    m3 = b.reshape(x, (2, 4, 8))
    b.permute(m3, (2, 0, 1))
    c = b.cat(m, t, 0)
    c = b.cat(c, c, 1)
    zero = b.constant(0, I32)
    one = b.constant(1, I32)
    b.extract(c, [one, zero], (8, 8))
    cond = b.cmpf("greater_than", m, t)
    b.select(cond, m, t)
    b.return_()
    return Module("m", [f])


@case()
def assume_ops():
    f, b = fn("assume_ops", [ptr("f16"), I32, I64, I16])
    p, n, s, h = f.args
    b.assume(p, A.DivBy(16))
    b.assume(n, A.DivBy(8))
    b.assume(n, A.Bounded(0, None))
    b.assume(s, A.Bounded(None, 1024))
    b.assume(s, A.Bounded(-4, 4))
    b.assume(h, A.Bounded(None, None))
    v = b.iota(tile("i32", (16,)))
    b.assume(v, A.DivBy(4, every=4, along=0))
    b.assume(v, A.SameElements((4,)))
    a2 = b.assume(b.assume(n, A.DivBy(2)), A.Bounded(1, None))
    tv = b.make_tensor_view(p, [a2], [1])
    b.assume(tv, A.DivBy(16))
    b.return_()
    return Module("m", [f])


@case()
def mma_ops():
    f, b = fn("mma_ops", [F16, BF16, F32, I8])
    a16 = b.broadcast(b.reshape(f.args[0], (1, 1)), (64, 32))
    b16 = b.broadcast(b.reshape(f.args[0], (1, 1)), (32, 128))
    acc = b.constant(0.0, tile("f32", (64, 128)))
    r = b.mmaf(a16, b16, acc)
    ab = b.broadcast(b.reshape(f.args[1], (1, 1)), (64, 32))
    bb = b.broadcast(b.reshape(f.args[1], (1, 1)), (32, 128))
    r = b.mmaf(ab, bb, r)
    at = b.ftof(b.broadcast(b.reshape(f.args[2], (1, 1)), (64, 32)), "tf32")
    bt = b.ftof(b.broadcast(b.reshape(f.args[2], (1, 1)), (32, 128)), "tf32")
    r = b.mmaf(at, bt, r)
    a3 = b.broadcast(b.reshape(f.args[0], (1, 1, 1)), (2, 16, 16))
    acc3 = b.constant(0.0, tile("f32", (2, 16, 16)))
    b.mmaf(a3, a3, acc3)
    a8 = b.broadcast(b.reshape(f.args[3], (1, 1)), (16, 32))
    b8 = b.broadcast(b.reshape(f.args[3], (1, 1)), (32, 16))
    acci = b.constant(0, tile("i32", (16, 16)))
    b.mmai(a8, b8, acci)
    b.mmai(a8, b8, acci, signed_a=False, signed_b=True)
    b.return_()
    return Module("m", [f])


@case((13, 3))
def mma_fast_acc():
    f, b = fn("mma_fast_acc", [F32])
    a8 = b.ftof(b.broadcast(b.reshape(f.args[0], (1, 1)), (64, 32)), "f8E4M3FN")
    b8 = b.ftof(b.broadcast(b.reshape(f.args[0], (1, 1)), (32, 64)), "f8E4M3FN")
    acc = b.constant(0.0, tile("f32", (64, 64)))
    b.mmaf(a8, b8, acc, fast_acc=True)
    b.return_()
    return Module("m", [f])


@case()
def reductions():
    f, b = fn("reductions", [F32, I32, F64])
    x = b.broadcast(b.reshape(f.args[0], (1, 1)), (16, 32))
    i = b.broadcast(b.reshape(f.args[1], (1, 1)), (16, 32))
    r = b.reduce([x], 1, [A.TypedValue(0.0, "f32")])
    lhs, rhs = r.regions[0].args
    with b.at(r.regions[0]):
        b.yield_([b.addf(lhs, rhs)])
    r2 = b.reduce([x], 0, [A.TypedValue(float("-inf"), "f32")])
    with b.at(r2.regions[0]):
        b.yield_([b.binary("maxf", *r2.regions[0].args)])
    r3 = b.reduce([x, i], 1, [A.TypedValue(float("-inf"), "f32"), A.TypedValue(0, "i32")])
    a0, b0, a1, b1 = r3.regions[0].args
    with b.at(r3.regions[0]):
        gt = b.cmpf("greater_than", a0, b0)
        b.yield_([b.select(gt, a0, b0), b.select(gt, a1, b1)])
    d = b.broadcast(b.reshape(f.args[2], (1,)), (64,))
    r4 = b.reduce([d], 0, [A.TypedValue(float("-inf"), "f64")])
    with b.at(r4.regions[0]):
        b.yield_([b.binary("minf", *r4.regions[0].args)])
    r5 = b.reduce([i], 0, [A.TypedValue(-1, "i32")])
    with b.at(r5.regions[0]):
        b.yield_([b.binary("maxi", *r5.regions[0].args, signedness="signed")])
    s = b.scan([x], 1, [A.TypedValue(0.0, "f32")])
    with b.at(s.regions[0]):
        b.yield_([b.addf(*s.regions[0].args)])
    s2 = b.scan([i], 0, [A.TypedValue(1, "i32")], reverse=True)
    with b.at(s2.regions[0]):
        b.yield_([b.binary("muli", *s2.regions[0].args)])
    b.return_()
    return Module("m", [f])


@case()
def views():
    hints = OptHints.make({"sm_90": {"latency": 3, "allow_tma": False}})
    f, b = fn("views", [ptr("f32"), I32, I32, I32, I32, ptr("bf16"), I64, I64])
    p, m, n, sm, sn, q, qm, qs = f.args
    bx, by, _ = b.get_tile_block_id()
    gx, _, _ = b.get_num_tile_blocks()
    tv = b.make_tensor_view(p, [m, n], [sm, 1])
    tv_static = b.make_tensor_view(p, [128, 64], [64, 1])
    b.make_tensor_view(p, [], [])          # rank 0
    tvq = b.make_tensor_view(q, [qm], [qs])
    b.get_tensor_shape(tv)
    pv = b.make_partition_view(tv, (32, 64))
    pvz = b.make_partition_view(tv, (32, 64), padding="zero")
    pvt = b.make_partition_view(tv, (64, 32), dim_map=(1, 0), padding="neg_inf")
    pvs = b.make_partition_view(tv_static, (16, 16))
    pvq = b.make_partition_view(tvq, (256,), padding="nan")
    b.get_index_space_shape(pv)
    tok = b.make_token()
    t1, tk1 = b.load_view_tko(pv, [bx, by])
    t2, tk2 = b.load_view_tko(pvz, [bx, by], token=tok, hints=hints)
    t3, tk3 = b.load_view_tko(pvt, [by, bx], token=tk2, ordering="relaxed", scope="device")
    t4, tk4 = b.load_view_tko(pvs, [bx, by], ordering="acquire", scope="tl_blk")
    t5, _ = b.load_view_tko(pvq, [gx])
    j = b.join_tokens([tk1, tk3, tk4])
    j2 = b.store_view_tko(t1, pv, [bx, by], token=j)
    b.store_view_tko(t2, pvz, [bx, by], token=j2, hints=hints)
    b.store_view_tko(t4, pvs, [bx, by], ordering="release", scope="sys")
    b.store_view_tko(t5, pvq, [gx], ordering="relaxed", scope="device")
    ex = b.exti(bx, "i64", True)
    b.load_view_tko(pvq, [ex])
    b.return_()
    return Module("m", [f])


@case((13, 4))
def views_inbounds():
    f, b = fn("views_inbounds", [ptr("f32"), I32])
    bx, _, _ = b.get_tile_block_id()
    tv = b.make_tensor_view(f.args[0], [f.args[1]], [1])
    pv = b.make_partition_view(tv, (128,))
    op = b.create("load_view_tko", [pv, [bx], None], [tile("f32", (128,)), TOKEN],
                  {"memory_ordering_semantics": "weak", "inbounds": (True,)})
    b.create("store_view_tko", [op.results[0], pv, [bx], op.results[1]], [TOKEN],
             {"memory_ordering_semantics": "weak", "inbounds": (True,)})
    b.return_()
    return Module("m", [f])


@case()
def pointers_and_atomics():
    f, b = fn("pointers_and_atomics", [ptr("f32"), ptr("i32"), I32])
    p, pi, n = f.args
    offs = b.iota(tile("i32", (64,)))
    base = b.broadcast(b.reshape(p, (1,)), (64,))
    ptrs = b.offset(base, offs)
    nb = b.broadcast(b.reshape(n, (1,)), (64,))
    mask = b.cmpi("less_than", offs, nb, "signed")
    pad = b.constant(0.0, tile("f32", (64,)))
    tok = b.make_token()
    v1, t1 = b.load_ptr_tko(ptrs)
    v2, t2 = b.load_ptr_tko(ptrs, mask=mask, padding=pad, token=tok)
    v3, t3 = b.load_ptr_tko(ptrs, mask=mask, ordering="acquire", scope="device")
    s1 = b.store_ptr_tko(ptrs, v1, mask=mask, token=t2)
    b.store_ptr_tko(ptrs, v2, ordering="release", scope="sys")
    basei = b.broadcast(b.reshape(pi, (1,)), (64,))
    ptri = b.offset(basei, offs)
    b.atomic_rmw_tko(ptri, "add", offs)
    b.atomic_rmw_tko(ptri, "max", offs, mask=mask, token=s1, ordering="acq_rel", scope="sys")
    b.atomic_rmw_tko(ptrs, "addf", v3, ordering="release", scope="tl_blk")
    b.atomic_rmw_tko(ptri, "xchg", offs, mask=mask)
    b.atomic_cas_tko(ptri, offs, offs)
    b.atomic_cas_tko(ptri, offs, offs, mask=mask, token=t3, ordering="acquire", scope="device")
    b.return_()
    return Module("m", [f])


@case()
def control_flow():
    f, b = fn("control_flow", [I32, F32, I1])
    n, x, c = f.args
    zero, one = b.constant(0, I32), b.constant(1, I32)
    ten = b.constant(10, I32)
    # if with results / without results
    i1 = b.if_(c, [F32, I32])
    with b.at(i1.regions[0]):
        b.yield_([b.addf(x, x), one])
    with b.at(i1.regions[1]):
        b.yield_([x, zero])
    i2 = b.if_(c)
    with b.at(i2.regions[0]):
        b.assert_(c, "c must hold")
        b.yield_()
    with b.at(i2.regions[1]):
        b.yield_()
    # for with carried values; unsigned comparison
    fo = b.for_(zero, n, one, [x, zero])
    iv, acc, cnt = fo.regions[0].args
    with b.at(fo.regions[0]):
        b.continue_([b.addf(acc, x), b.binary("addi", cnt, iv)])
    fu = b.for_(zero, ten, one, [], unsigned=False)
    with b.at(fu.regions[0]):
        b.continue_()
    # nested: loop { for { if { ... } } } with carried values, break and continue
    lp = b.loop([fo.results[0], zero], [F32])
    lacc, li = lp.regions[0].args
    with b.at(lp.regions[0]):
        inner = b.for_(zero, ten, one, [lacc])
        jv, facc = inner.regions[0].args
        with b.at(inner.regions[0]):
            odd = b.cmpi("equal", b.binary("andi", jv, one), one, "signed")
            br = b.if_(odd, [F32])
            with b.at(br.regions[0]):
                b.yield_([b.mulf(facc, x)])
            with b.at(br.regions[1]):
                b.yield_([facc])
            b.continue_([br.results[0]])
        li2 = b.binary("addi", li, one)
        done = b.cmpi("greater_than_or_equal", li2, n, "signed")
        ex = b.if_(done)
        with b.at(ex.regions[0]):
            b.break_([inner.results[0]])
        with b.at(ex.regions[1]):
            b.yield_()
        b.continue_([inner.results[0], li2])
    b.return_()
    return Module("m", [f])


@case((13, 2))
def for_unsigned():
    f, b = fn("for_unsigned", [I32])
    zero, one = b.constant(0, I32), b.constant(1, I32)
    fo = b.for_(zero, f.args[0], one, [zero], unsigned=True)
    with b.at(fo.regions[0]):
        b.continue_([b.binary("addi", fo.regions[0].args[1], fo.regions[0].args[0])])
    b.return_()
    return Module("m", [f])


@case((13, 2))
def debug_ops():
    f, b = fn("debug_ops", [F32, I1])
    x = b.broadcast(b.reshape(f.args[0], (1,)), (4,))
    t = b.print_("x = %f\n", [x])
    t2 = b.print_("hello\n", [], token=t)
    b.print_("two: %f %f", [f.args[0], f.args[0]], token=t2)
    b.assert_(f.args[1], "oops \"quoted\"\n")
    b.return_()
    return Module("m", [f])


@case()
def entry_hints():
    f, b = fn("entry_hints", [I32], hints=OptHints.make({"sm_90": {"num_cta_in_cga": 2,
                                                                  "occupancy": 4}}))
    b.return_()
    g, gb = fn("second", [F32])
    gb.return_()
    return Module("m", [f, g])


@case((13, 3))
def entry_hints_default():
    f, b = fn("entry_hints_default", [], hints=OptHints.make({"default": {"occupancy": 2}}))
    b.return_()
    return Module("m", [f])


# ------------------------------------------------------------------------------------------------
# Realistic kernels for the tileiras compile tests


def vector_add_module(tile_n: int = 1024) -> Module:
    """z[i] = x[i] + y[i] over 1-D f32 tensors (ptr, shape, stride per tensor)."""
    f, b = fn("vector_add", [ptr("f32"), I32, I32] * 3)
    bx, _, _ = b.get_tile_block_id()
    views = []
    for i in range(3):
        base = b.assume(f.args[3 * i], A.DivBy(16))
        n = b.assume(f.args[3 * i + 1], A.Bounded(0, None))
        tv = b.make_tensor_view(base, [n], [1])
        views.append(b.make_partition_view(tv, (tile_n,), padding="zero"))
    x, t1 = b.load_view_tko(views[1], [bx])
    y, t2 = b.load_view_tko(views[2], [bx])
    b.store_view_tko(b.addf(x, y), views[0], [bx])
    b.return_()
    return Module("vector_add", [f])


def matmul_module(bm: int = 64, bn: int = 64, bk: int = 32, elem: str = "f16") -> Module:
    """C[M,N] (f32) = A[M,K] @ B[K,N] with a K loop of ``for`` carrying the accumulator."""
    arr = [ptr(elem), I32, I32, I32, I32]
    f, b = fn("matmul", [ptr("f32"), I32, I32, I32, I32] + arr + arr)
    bx, by, _ = b.get_tile_block_id()

    def view(i, tile_shape):
        base, m, n, sm, sn = f.args[5 * i:5 * i + 5]
        base = b.assume(base, A.DivBy(16))
        tv = b.make_tensor_view(base, [m, n], [sm, 1])
        return b.make_partition_view(tv, tile_shape, padding="zero")

    c = view(0, (bm, bn))
    a = view(1, (bm, bk))
    bb = view(2, (bk, bn))
    zero, one = b.constant(0, I32), b.constant(1, I32)
    nk = b.get_index_space_shape(a)[1]
    acc0 = b.constant(0.0, tile("f32", (bm, bn)))
    loop = b.for_(zero, nk, one, [acc0])
    k, acc = loop.regions[0].args
    with b.at(loop.regions[0]):
        ta, _ = b.load_view_tko(a, [bx, k])
        tb, _ = b.load_view_tko(bb, [k, by])
        b.continue_([b.mmaf(ta, tb, acc)])
    b.store_view_tko(loop.results[0], c, [bx, by])
    b.return_()
    return Module("matmul", [f])
