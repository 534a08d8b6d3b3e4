"""Simulator: if / for / loop with carried values, break, continue, early return, nesting."""
import numpy as np
import pytest

from tilejit.simulator import SimulatorError
from tilejit.tileir import F32, I1, I32, I64, Module, ptr
from simulator_helpers import fn, random_tile, run, scalar_kernel


def test_if_with_results_and_without_else(dev):
    def body(b, c, x):
        i = b.if_(c, [F32, I32])
        with b.at(i.regions[0]):
            b.yield_([b.addf(x, x), b.constant(1, I32)])
        with b.at(i.regions[1]):
            b.yield_([b.mulf(x, x), b.constant(2, I32)])
        j = b.if_(c)                                    # no else, no results
        with b.at(j.regions[0]):
            b.yield_()
        return b.addf(i.results[0], b.itof(i.results[1], "f32", True))
    assert scalar_kernel(dev, body, [True, 3.0], [I1, F32], "f32") == 7.0
    assert scalar_kernel(dev, body, [False, 3.0], [I1, F32], "f32") == 11.0


def _sum_range(b, lo, hi, step, unsigned=False):
    zero = b.constant(0, lo.type)
    fo = b.for_(lo, hi, step, [zero, zero], unsigned=unsigned)
    iv, acc, cnt = fo.regions[0].args
    with b.at(fo.regions[0]):
        b.continue_([b.binary("addi", acc, iv), b.binary("addi", cnt, b.constant(1, lo.type))])
    return b.cat(b.reshape(fo.results[0], (1,)), b.reshape(fo.results[1], (1,)), 0)


@pytest.mark.parametrize("lo,hi,step", [(0, 10, 1), (-7, 20, 3), (5, 5, 1), (9, 2, 2),
                                        (-30, -1, 7)])
@pytest.mark.parametrize("elem", ["i32", "i64"])
def test_for_runtime_bounds(dev, lo, hi, step, elem):
    t = I32 if elem == "i32" else I64
    got = scalar_kernel(dev, lambda b, x, y, s: _sum_range(b, x, y, s), [lo, hi, step], [t] * 3,
                        elem)
    r = range(lo, hi, step)
    np.testing.assert_array_equal(got, [sum(r), len(r)])


def test_for_unsigned_comparison(dev):
    # -1 as an unsigned upper bound is 2**32 - 1: signed, the loop runs zero times
    got = scalar_kernel(dev, lambda b, x, y, s: _sum_range(b, x, y, s), [0, -1, 1 << 30],
                        [I32] * 3, "i32")
    np.testing.assert_array_equal(got, [0, 0])
    got = scalar_kernel(dev, lambda b, x, y, s: _sum_range(b, x, y, s, unsigned=True),
                        [0, -1, 1 << 30], [I32] * 3, "i32")
    want = [(0 + 1 + 2 + 3) * (1 << 30) & 0xFFFFFFFF, 4]
    np.testing.assert_array_equal(got.view(np.uint32), want)


@pytest.mark.parametrize("step", [0, -2])
def test_for_rejects_non_positive_steps(dev, step):
    with pytest.raises(SimulatorError, match="positive step") as ei:
        scalar_kernel(dev, lambda b, x, y, s: _sum_range(b, x, y, s), [10, 0, step], [I32] * 3,
                      "i32")
    assert "'for'" in str(ei.value)


def test_continue_inside_if_skips_rest_of_body(dev):
    # sum of odd i in [0, n): "if even: continue acc" early, otherwise continue acc + i
    def body(b, n):
        zero, one = b.constant(0, I32), b.constant(1, I32)
        fo = b.for_(zero, n, one, [zero])
        iv, acc = fo.regions[0].args
        with b.at(fo.regions[0]):
            even = b.cmpi("equal", b.binary("andi", iv, one), zero, "signed")
            i = b.if_(even)
            with b.at(i.regions[0]):
                b.continue_([acc])
            with b.at(i.regions[1]):
                b.yield_()
            b.continue_([b.binary("addi", acc, iv)])
        return fo.results[0]
    assert scalar_kernel(dev, body, [21], [I32], "i32") == sum(range(1, 21, 2))


def test_loop_with_break_and_different_result_type(dev):
    # while x < limit: x = 2x + 1; count iterations; break yields (float(count), x)
    def body(b, x0, limit):
        lp = b.loop([x0, b.constant(0, I32)], [F32, I32])
        x, k = lp.regions[0].args
        with b.at(lp.regions[0]):
            done = b.cmpi("greater_than_or_equal", x, limit, "signed")
            i = b.if_(done)
            with b.at(i.regions[0]):
                b.break_([b.itof(k, "f32", True), x])
            with b.at(i.regions[1]):
                b.yield_()
            b.continue_([b.binary("addi", b.binary("addi", x, x), b.constant(1, I32)),
                         b.binary("addi", k, b.constant(1, I32))])
        return b.addf(lp.results[0], b.itof(lp.results[1], "f32", True))
    x, k = 3, 0
    while x < 1000:
        x, k = 2 * x + 1, k + 1
    assert scalar_kernel(dev, body, [3, 1000], [I32, I32], "f32") == k + x


def test_nested_loop_for_if_with_tiles(dev):
    # loop { acc = for j in 0..4: acc * (odd j ? x : 1) ; li += 1; if li >= n: break acc }
    x = random_tile("f32", (8,), 1, 0.5, 1.5)

    def body(b, p, n):
        tv = b.make_tensor_view(p, [8], [1])
        t, _ = b.load_view_tko(b.make_partition_view(tv, (8,)), [b.constant(0, I32)])
        zero, one, four = b.constant(0, I32), b.constant(1, I32), b.constant(4, I32)
        lp = b.loop([t, zero], [t.type])
        lacc, li = lp.regions[0].args
        with b.at(lp.regions[0]):
            inner = b.for_(zero, four, one, [lacc])
            j, facc = inner.regions[0].args
            with b.at(inner.regions[0]):
                odd = b.cmpi("equal", b.binary("andi", j, one), one, "signed")
                br = b.if_(odd, [t.type])
                with b.at(br.regions[0]):
                    b.yield_([b.mulf(facc, t)])
                with b.at(br.regions[1]):
                    b.yield_([facc])
                b.continue_([br.results[0]])
            li2 = b.binary("addi", li, one)
            ex = b.if_(b.cmpi("greater_than_or_equal", li2, n, "signed"))
            with b.at(ex.regions[0]):
                b.break_([inner.results[0]])
            with b.at(ex.regions[1]):
                b.yield_()
            b.continue_([inner.results[0], li2])
        return lp.results[0]
    got = scalar_kernel(dev, body, [dev.put(x), 3], [ptr("f32"), I32], "f32")
    want = x.copy()
    for _ in range(3):
        want = want * x * x
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_early_return_from_if_ends_the_block(dev):
    # blocks with odd x return before their store
    f, b = fn("ret", [ptr("i32")])
    bx = b.get_tile_block_id()[0]
    one = b.constant(1, I32)
    i = b.if_(b.cmpi("equal", b.binary("andi", bx, one), one, "signed"))
    with b.at(i.regions[0]):
        b.return_()
    with b.at(i.regions[1]):
        b.yield_()
    b.store_ptr_tko(b.offset(f.args[0], bx), b.binary("addi", bx, one))
    b.return_()
    out = dev.put(np.zeros(6, np.int32))
    run(Module("ret", [f]), (6, 1, 1), [out])
    np.testing.assert_array_equal(dev.get(out, (6,), np.int32), [1, 0, 3, 0, 5, 0])
