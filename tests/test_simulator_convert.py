"""Simulator: conversions between element types."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from tilejit.tileir import I32, I64, TileType, ptr
from simulator_helpers import NP, UNSIGNED, elementwise, random_tile, scalar_kernel

N = 130


@pytest.mark.parametrize("src,dst", [("i8", "i32"), ("i16", "i64"), ("i32", "i64"), ("i1", "i8"),
                                     ("i8", "i16")])
@pytest.mark.parametrize("signed", [True, False])
def test_exti(dev, src, dst, signed):
    a = random_tile(src, N, 1)
    got = elementwise(dev, lambda b, x: b.exti(x, dst, signed), [a], [src], dst)
    if src == "i1":
        ref = -a.astype(np.int64) if signed else a.astype(np.int64)
    else:
        ref = a.astype(np.int64) if signed else a.view(UNSIGNED[src]).astype(np.int64)
    np.testing.assert_array_equal(got, ref.astype(NP[dst]))


@pytest.mark.parametrize("src,dst", [("i64", "i32"), ("i32", "i8"), ("i16", "i1"), ("i64", "i16")])
def test_trunci(dev, src, dst):
    a = random_tile(src, N, 2)
    got = elementwise(dev, lambda b, x: b.trunci(x, dst), [a], [src], dst)
    ref = (a & 1).astype(bool) if dst == "i1" else a.astype(NP[dst])
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("src,dst", [("f32", "f16"), ("f32", "bf16"), ("f16", "f32"),
                                     ("bf16", "f32"), ("f64", "f32"), ("f32", "f64"),
                                     ("f16", "bf16"), ("f32", "f8E4M3FN"), ("f32", "f8E5M2"),
                                     ("f8E4M3FN", "f16"), ("f64", "bf16"), ("f64", "f16")])
def test_ftof_nearest(dev, src, dst):
    a = random_tile(src, N, 3, -300, 300)
    got = elementwise(dev, lambda b, x: b.ftof(x, dst), [a], [src], dst)
    x = a.astype(np.float64)
    if dst.startswith("f8"):
        m = 448.0 if dst == "f8E4M3FN" else 57344.0
        x = np.clip(x, -m, m)                      # fp8 conversions saturate (satfinite)
    # reference: correct rounding of the exact value, by checking both neighbours
    ref = x.astype(np.float32).astype(NP[dst]) if src != "f64" else np.array(
        [_nearest(Fraction(float(v)), NP[dst]) for v in x], dtype=NP[dst])
    np.testing.assert_array_equal(got.astype(np.float64), ref.astype(np.float64))


def _nearest(q, dt):
    """Round-to-nearest-even of the exact rational ``q`` to ``dt``, by brute force."""
    u = f"u{np.dtype(dt).itemsize}"
    mx = ml_dtypes.finfo(dt).max
    top = Fraction(float(mx))
    ulp = top - Fraction(float(np.array([int(np.array(mx, dt).view(u)) - 1], u).view(dt)[0]))
    if abs(q) >= top + ulp / 2:
        return dt(np.inf if q > 0 else -np.inf)
    with np.errstate(over="ignore"):
        c = np.array(float(q)).astype(dt)
    c = np.clip(c.astype(np.float64), -float(mx), float(mx)).astype(dt)
    bits = int(np.array(c, dt).view(u))
    near = [v for v in np.array([(bits + d) % (1 << (8 * np.dtype(u).itemsize))
                                 for d in (-2, -1, 0, 1, 2)], u).view(dt).tolist()
            if np.isfinite(float(v))]
    return min(near, key=lambda v: (abs(Fraction(float(v)) - q),
                                    int(np.array(v, dt).view(u)) % 2))


def test_ftof_to_tf32_and_directed(dev):
    a = random_tile("f32", N, 4)
    got = elementwise(dev, lambda b, x: b.ftof(x, "tf32"), [a], ["f32"], "tf32")
    assert (got.view(np.uint32) & 0x1FFF == 0).all()
    np.testing.assert_allclose(got, a, rtol=2 ** -11)
    for mode, cmp in (("zero", lambda g, x: np.abs(g) <= np.abs(x)),
                      ("negative_inf", lambda g, x: g <= x), ("positive_inf", lambda g, x: g >= x)):
        got = elementwise(dev, lambda b, x: b.ftof(x, "bf16", rounding=mode), [a], ["f32"],
                          "bf16")
        assert cmp(got.astype(np.float32), a).all(), mode


def test_ftof_f64_to_tf32_rounds_once(dev):
    # ties and near-ties at tf32 precision (10 mantissa bits) hidden below float32 precision
    a = np.array([1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11 + 2 ** -40),
                  3.5e38], np.float64)
    got = elementwise(dev, lambda b, x: b.ftof(x, "tf32"), [a], ["f64"], "tf32")
    np.testing.assert_array_equal(got, np.array([1 + 2 ** -10, 1, 1 + 2 ** -9, -(1 + 2 ** -10),
                                                 np.inf], np.float32))


@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("dst,signed", [("i8", True), ("i8", False), ("i32", True),
                                        ("i64", True), ("i64", False), ("i16", False)])
def test_ftoi_truncates_and_saturates(dev, src, dst, signed):
    a = random_tile(src, N, 5, -400, 400)
    a[:6] = [np.nan, np.inf, -np.inf, 1e30 if src != "f16" else 6e4, -2.5, 2.5]
    got = elementwise(dev, lambda b, x: b.ftoi(x, dst, signed), [a], [src], dst)
    it = np.iinfo(NP[dst] if signed else UNSIGNED[dst])
    x = a.astype(np.float64)
    ref = [0 if np.isnan(v) else int(min(max(np.trunc(v), it.min), it.max)) if np.isfinite(v)
           else (it.max if v > 0 else it.min) for v in x]
    want = np.array(ref, dtype=object).astype(np.uint64 if not signed else np.int64)
    np.testing.assert_array_equal(got if signed else got.view(UNSIGNED[dst]),
                                  want.astype(NP[dst] if signed else UNSIGNED[dst]))


@pytest.mark.parametrize("src", ["i8", "i32", "i64"])
@pytest.mark.parametrize("dst", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("signed", [True, False])
def test_itof(dev, src, dst, signed):
    a = random_tile(src, N, 6)
    got = elementwise(dev, lambda b, x: b.itof(x, dst, signed), [a], [src], dst)
    vals = a if signed else a.view(UNSIGNED[src])
    ref = np.array([_nearest(Fraction(int(v)), NP[dst]) for v in vals], dtype=NP[dst])
    np.testing.assert_array_equal(got.astype(np.float64), ref.astype(np.float64))


def test_itof_directed_i64(dev):
    a = np.array([2 ** 62 + 1, -(2 ** 62) - 1, 2 ** 53 + 1, 12345], np.int64)
    got = elementwise(dev, lambda b, x: b.create("itof", [x], [x.type.with_element("f32")],
                                                 {"signedness": "signed",
                                                  "rounding_mode": "positive_inf"}).result,
                      [a], ["i64"], "f32")
    for g, v in zip(got, a):
        assert Fraction(float(g)) >= v and Fraction(float(np.nextafter(g, -np.inf))) < v


@pytest.mark.parametrize("src,dst", [("f32", "i32"), ("i32", "f32"), ("f16", "i16"),
                                     ("bf16", "i16"), ("i8", "f8E4M3FN"), ("f64", "i64"),
                                     ("tf32", "i32")])
def test_bitcast(dev, src, dst):
    a = random_tile(src, N, 7)
    if src == "tf32":                       # tf32 tiles hold tf32 values (loads round to them)
        a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    got = elementwise(dev, lambda b, x: b.bitcast(x, TileType(dst, x.type.shape)), [a], [src],
                      dst)
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(a).view(np.uint8))


def test_pointer_casts_roundtrip(dev):
    buf = dev.put(np.arange(8, dtype=np.float32) + 0.5)

    def body(b, p, k):
        q = b.int_to_ptr(b.binary("addi", b.ptr_to_int(p), k), "f32")
        q16 = b.create("ptr_to_ptr", [q], [ptr("f16")]).result
        back = b.create("ptr_to_ptr", [q16], [ptr("f32")]).result
        return b.load_ptr_tko(back)[0]
    got = scalar_kernel(dev, body, [buf, 12], [ptr("f32"), I64], "f32")
    assert got == 3.5


def test_scalar_params_wrap_to_their_type(dev):
    got = scalar_kernel(dev, lambda b, x: b.binary("addi", x, x), [2 ** 31 + 5], [I32], "i32")
    assert got == 10                        # (2**31 + 5) wraps to -2**31 + 5; doubled wraps to 10
    bf = scalar_kernel(dev, lambda b, x: b.addf(x, x), [1.0 + 2 ** -9], [TileType("bf16")], "bf16")
    assert float(bf) == 2.0 and bf.dtype == ml_dtypes.bfloat16
