"""Simulator: constants, iota and shape ops; reduce and scan with combiner regions."""
import ml_dtypes
import numpy as np
import pytest

from tilejit.tileir import F32, I32, attrs as A, ptr, scalar, tile
from simulator_helpers import random_tile, scalar_kernel


def load2d(b, p, shape, elem):
    """A whole (M, N) row-major tensor loaded as one tile from pointer ``p``."""
    tv = b.make_tensor_view(p, list(shape), [shape[1], 1])
    return b.load_view_tko(b.make_partition_view(tv, shape), [b.constant(0, I32)] * 2)[0]


def apply2d(dev, elem, shape, apply, out_elem=None, data=None, seed=0):
    """out = apply(b, x) for one (M, N) tile x of random data; returns (x, out)."""
    x = random_tile(elem, shape, seed) if data is None else data
    px = dev.put(x.astype(np.uint8) if elem == "i1" else x)
    return x, scalar_kernel(dev, lambda b, p: apply(b, load2d(b, p, shape, elem)), [px],
                            [ptr(elem)], out_elem or elem)


def test_constants_splat_dense_and_iota(dev):
    def body(b):
        dense = b.constant(np.arange(8, dtype=np.int32).reshape(2, 4) * 3 - 5, tile("i32", (2, 4)))
        splat = b.constant(200, tile("i8", (2, 4)))                        # wraps to -56
        s = b.exti(splat, "i32", signed=True)
        it = b.broadcast(b.reshape(b.iota(tile("i32", (4,))), (1, 4)), (2, 4))
        return b.binary("addi", b.binary("addi", dense, s), it)
    got = scalar_kernel(dev, body, [], [], "i32")
    ref = np.arange(8).reshape(2, 4) * 3 - 5 - 56 + np.arange(4)
    np.testing.assert_array_equal(got, ref)
    assert scalar_kernel(dev, lambda b: b.constant(-2.25, scalar("bf16")), [], [], "bf16") == -2.25
    assert np.isnan(scalar_kernel(dev, lambda b: b.constant(float("nan"), F32), [], [], "f32"))
    big = scalar_kernel(dev, lambda b: b.constant(2 ** 64 - 1, scalar("i64")), [], [], "i64")
    assert big == -1


@pytest.mark.parametrize("elem", ["f16", "bf16", "i8", "i64", "i1", "f8E5M2"])
def test_shape_ops(dev, elem):
    x, got = apply2d(dev, elem, (4, 8), lambda b, t: b.permute(b.reshape(t, (2, 2, 8)), (2, 0, 1)))
    np.testing.assert_array_equal(got, np.transpose(x.reshape(2, 2, 8), (2, 0, 1)))
    x, got = apply2d(dev, elem, (4, 8), lambda b, t: b.cat(t, b.permute(b.reshape(t, (8, 4)),
                                                                      (1, 0)), 0))
    np.testing.assert_array_equal(got, np.concatenate([x, x.reshape(8, 4).T], 0))
    x, got = apply2d(dev, elem, (4, 8), lambda b, t: b.extract(
        t, [b.constant(1, I32), b.constant(3, I32)], (2, 2)))
    np.testing.assert_array_equal(got, x[2:4, 6:8])
    x, got = apply2d(dev, elem, (1, 8), lambda b, t: b.broadcast(t, (4, 8)))
    np.testing.assert_array_equal(got, np.broadcast_to(x, (4, 8)))


def test_select_and_offset(dev):
    def body(b, p, q):
        a, c = load2d(b, p, (4, 4), "f32"), load2d(b, q, (4, 4), "f32")
        return b.select(b.cmpf("greater_than", a, c), a, c)
    x, y = random_tile("f32", (4, 4), 1), random_tile("f32", (4, 4), 2)
    got = scalar_kernel(dev, body, [dev.put(x), dev.put(y)], [ptr("f32")] * 2, "f32")
    np.testing.assert_array_equal(got, np.maximum(x, y))


def test_extract_out_of_range_is_reported(dev):
    from tilejit.simulator import SimulatorError
    with pytest.raises(SimulatorError, match="extract"):
        apply2d(dev, "f32", (4, 8), lambda b, t: b.extract(t, [b.constant(2, I32),
                                                              b.constant(0, I32)], (2, 8)))


# --- reduce / scan ----------------------------------------------------------------------------
def _reduce(b, x, dim, op_name, ident, elem, **kw):
    r = b.reduce([x], dim, [A.TypedValue(ident, elem)])
    e, acc = r.regions[0].args
    with b.at(r.regions[0]):
        b.yield_([b.binary(op_name, e, acc, **kw)])
    return r.results[0]


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("elem,op_name,ident,ref,kw", [
    ("f32", "addf", 0.0, np.sum, {"rounding_mode": "nearest_even"}),
    ("f64", "maxf", float("-inf"), np.max, {}),
    ("f16", "minf", float("inf"), np.min, {}),
    ("i32", "addi", 0, np.sum, {}),
    ("i64", "muli", 1, np.prod, {}),
    ("i16", "maxi", -32768, np.max, {"signedness": "signed"}),
    ("i8", "xori", 0, np.bitwise_xor.reduce, {}),
])
def test_reduce(dev, dim, elem, op_name, ident, ref, kw):
    shape = (4, 8, 16)
    x = random_tile(elem, shape, 3, -4, 4)
    if elem == "i64":
        x = (x % 5).astype(np.int64)
    got = scalar_kernel(dev, lambda b, p: _reduce(b, b.reshape(load2d(b, p, (4, 128), elem), shape),
                                                  dim, op_name, ident, elem, **kw),
                        [dev.put(x)], [ptr(elem)], elem)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64 if elem[0] == "f" else x.dtype), axis=dim)
    if elem[0] == "f":
        rtol = 2e-3 if elem == "f16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want.astype(x.dtype))


def test_reduce_argmax_two_operands_non_power_of_two(dev):
    # argmax as a two-operand reduce; the tie-break (first index) needs the (element, acc) order
    x = np.round(random_tile("f32", (6, 12), 4, -3, 3))

    def body(b, p):
        t = load2d(b, p, (6, 12), "f32")
        idx = b.broadcast(b.reshape(b.iota(tile("i32", (12,))), (1, 12)), (6, 12))
        r = b.reduce([t, idx], 1, [A.TypedValue(float("-inf"), "f32"), A.TypedValue(0, "i32")])
        ev, acc, ei, acci = r.regions[0].args
        with b.at(r.regions[0]):
            gt = b.cmpf("greater_than", ev, acc)
            b.yield_([b.select(gt, ev, acc), b.select(gt, ei, acci)])
        return r.results[1]
    # 6x12 is not a tile of power-of-two shape, but the interpreter does not care
    got = scalar_kernel(dev, body, [dev.put(x)], [ptr("f32")], "i32")
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("elem,op_name,ident,ref,kw", [
    ("f32", "addf", 0.0, np.cumsum, {"rounding_mode": "nearest_even"}),
    ("i32", "muli", 1, np.cumprod, {}),
    ("f64", "maxf", float("-inf"), np.maximum.accumulate, {}),
    ("i8", "mini", 127, np.minimum.accumulate, {"signedness": "signed"}),
])
def test_scan(dev, reverse, dim, elem, op_name, ident, ref, kw):
    x = random_tile(elem, (16, 32), 5, -3, 3)
    if elem == "i32":
        x = (x % 3 + 1).astype(np.int32)

    def body(b, p):
        s = b.scan([load2d(b, p, (16, 32), elem)], dim, [A.TypedValue(ident, elem)],
                   reverse=reverse)
        e, acc = s.regions[0].args
        with b.at(s.regions[0]):
            b.yield_([b.binary(op_name, e, acc, **kw)])
        return s.results[0]
    got = scalar_kernel(dev, body, [dev.put(x)], [ptr(elem)], elem)
    xs = np.flip(x, dim) if reverse else x
    with np.errstate(all="ignore"):
        want = ref(xs, axis=dim)
    want = np.flip(want, dim) if reverse else want
    if elem[0] == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want.astype(x.dtype))


def test_scan_non_commutative_combiner_keeps_order(dev):
    # affine maps x -> a*x + b composed in order: (a1, b1) then (a2, b2) = (a2*a1, a2*b1 + b2)
    n = 16
    a = random_tile("i32", n, 6) % 3 + 1
    bb = random_tile("i32", n, 7) % 5
    pa, pb = dev.put(a.astype(np.int32)), dev.put(bb.astype(np.int32))

    def body(b, p, q):
        def ld(ptr_):
            tv = b.make_tensor_view(ptr_, [n], [1])
            return b.load_view_tko(b.make_partition_view(tv, (n,)), [b.constant(0, I32)])[0]
        s = b.scan([ld(p), ld(q)], 0, [A.TypedValue(1, "i32"), A.TypedValue(0, "i32")])
        ea, acc_a, eb, acc_b = s.regions[0].args
        with b.at(s.regions[0]):
            b.yield_([b.binary("muli", ea, acc_a),
                      b.binary("addi", b.binary("muli", ea, acc_b), eb)])
        return s.results[1]
    got = scalar_kernel(dev, body, [pa, pb], [ptr("i32")] * 2, "i32")
    x, want = 0, []
    for ai, bi in zip(a.astype(np.int64), bb.astype(np.int64)):
        x = (ai * x + bi) & 0xFFFFFFFF
        want.append(x)
    np.testing.assert_array_equal(got.astype(np.uint32), np.array(want, np.uint32))


def test_reduce_of_bf16_and_bool(dev):
    x = random_tile("bf16", (8, 16), 8, -2, 2)
    got = scalar_kernel(dev, lambda b, p: _reduce(b, load2d(b, p, (8, 16), "bf16"), 1, "addf", 0.0,
                                                  "bf16", rounding_mode="nearest_even"),
                        [dev.put(x)], [ptr("bf16")], "bf16")
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), x.astype(np.float32).sum(1), rtol=0.05,
                               atol=0.1)
    m = random_tile("i1", (8, 16), 9)
    got = scalar_kernel(dev, lambda b, p: _reduce(b, load2d(b, p, (8, 16), "i1"), 1, "ori",
                                                  False, "i1"),
                        [dev.put(m.astype(np.uint8))], [ptr("i1")], "i1")
    np.testing.assert_array_equal(got, m.any(1))
