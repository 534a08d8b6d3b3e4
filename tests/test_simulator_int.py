"""Simulator: integer and bitwise ops (wrapping, signedness, i1) against NumPy references."""
import numpy as np
import pytest

from simulator_helpers import NP, UNSIGNED, elementwise, random_tile

INTS = ["i8", "i16", "i32", "i64"]
N = 150


def _pair(elem, seed=0):
    a, b = random_tile(elem, N, seed), random_tile(elem, N, seed + 1)
    a[:4] = [np.iinfo(a.dtype).min, np.iinfo(a.dtype).max, -1, 0]   # edges
    b[:4] = [-1, 1, np.iinfo(a.dtype).min, 7]
    return a, b


@pytest.mark.parametrize("elem", INTS)
@pytest.mark.parametrize("name,fn", [("addi", np.add), ("subi", np.subtract),
                                     ("muli", np.multiply), ("andi", np.bitwise_and),
                                     ("ori", np.bitwise_or), ("xori", np.bitwise_xor)])
def test_wrapping_and_bitwise(dev, elem, name, fn):
    a, b = _pair(elem)
    got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y), [a, b], [elem] * 2, elem)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, fn(a, b))


@pytest.mark.parametrize("elem", INTS)
def test_unary_int(dev, elem):
    a, _ = _pair(elem, 3)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            elementwise(dev, lambda bd, x: bd.unary("absi", x), [a], [elem], elem), np.abs(a))
        np.testing.assert_array_equal(
            elementwise(dev, lambda bd, x: bd.unary("negi", x), [a], [elem], elem), -a)


@pytest.mark.parametrize("elem", INTS)
@pytest.mark.parametrize("signedness", ["signed", "unsigned"])
@pytest.mark.parametrize("name", ["maxi", "mini", "remi", "divi"])
def test_signedness_ops(dev, elem, signedness, name):
    a, b = _pair(elem, 5)
    b[b == 0] = 3
    if signedness == "signed":
        b[(a == np.iinfo(a.dtype).min) & (b == -1)] = 2    # signed overflow is UB
    got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y, signedness=signedness),
                      [a, b], [elem] * 2, elem)
    u = UNSIGNED[elem]
    x, y = (a, b) if signedness == "signed" else (a.view(u), b.view(u))
    if name == "maxi":
        ref = np.maximum(x, y)
    elif name == "mini":
        ref = np.minimum(x, y)
    elif name == "remi":
        ref = np.fmod(x, y)
    else:
        ref = np.array([int(p) // int(q) if (int(p) >= 0) == (int(q) > 0) else -(-int(p) // int(q))
                        for p, q in zip(x, y)]).astype(x.dtype)
    np.testing.assert_array_equal(got, ref.astype(x.dtype).view(NP[elem]))


@pytest.mark.parametrize("signedness,rounding", [("signed", "positive_inf"),
                                                 ("signed", "negative_inf"),
                                                 ("unsigned", "positive_inf")])
def test_divi_rounding(dev, signedness, rounding):
    a = np.array([7, -7, 7, -7, 6, -6, 0, 100], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5, -7], np.int32)
    if signedness == "unsigned":
        a, b = np.abs(a), np.abs(b)
    got = elementwise(dev, lambda bd, x, y: bd.binary("divi", x, y, signedness=signedness,
                                                      rounding=rounding), [a, b], ["i32"] * 2,
                      "i32")
    q = a.astype(np.float64) / b
    ref = np.ceil(q) if rounding == "positive_inf" else np.floor(q)
    np.testing.assert_array_equal(got, ref.astype(np.int32))


@pytest.mark.parametrize("elem", INTS)
def test_shifts(dev, elem):
    a, _ = _pair(elem, 7)
    w = np.dtype(NP[elem]).itemsize * 8
    s = (np.arange(N) % (w + 3)).astype(NP[elem])               # includes shifts >= width
    u = UNSIGNED[elem]
    shl = elementwise(dev, lambda bd, x, y: bd.binary("shli", x, y), [a, s], [elem] * 2, elem)
    shr_s = elementwise(dev, lambda bd, x, y: bd.binary("shri", x, y, signedness="signed"),
                        [a, s], [elem] * 2, elem)
    shr_u = elementwise(dev, lambda bd, x, y: bd.binary("shri", x, y, signedness="unsigned"),
                        [a, s], [elem] * 2, elem)
    big = s.astype(np.int64) >= w
    k = np.minimum(s.astype(np.int64), w - 1).astype(u)
    np.testing.assert_array_equal(shl, np.where(big, 0, a.view(u) << k).astype(u).view(a.dtype))
    np.testing.assert_array_equal(shr_s, a >> k.astype(a.dtype))
    np.testing.assert_array_equal(shr_u, np.where(big, 0, a.view(u) >> k).astype(u).view(a.dtype))


@pytest.mark.parametrize("elem", INTS)
def test_mulhii(dev, elem):
    a, b = _pair(elem, 9)
    got = elementwise(dev, lambda bd, x, y: bd.binary("mulhii", x, y), [a, b], [elem] * 2, elem)
    u = UNSIGNED[elem]
    w = np.dtype(u).itemsize * 8
    ref = np.array([(int(p) * int(q)) >> w for p, q in zip(a.view(u), b.view(u))], dtype=object)
    np.testing.assert_array_equal(got.view(u), ref.astype(u))


@pytest.mark.parametrize("elem", INTS + ["i1"])
@pytest.mark.parametrize("signedness", ["signed", "unsigned"])
def test_cmpi(dev, elem, signedness):
    a, b = (_pair(elem, 11) if elem != "i1" else
            (random_tile("i1", N, 11), random_tile("i1", N, 12)))
    if elem == "i1":
        x, y = ((-a.astype(np.int8), -b.astype(np.int8)) if signedness == "signed"
                else (a.astype(np.uint8), b.astype(np.uint8)))
    else:
        u = UNSIGNED[elem]
        x, y = (a, b) if signedness == "signed" else (a.view(u), b.view(u))
    for pred, fn in (("less_than", np.less), ("greater_than_or_equal", np.greater_equal),
                     ("equal", np.equal), ("not_equal", np.not_equal)):
        got = elementwise(dev, lambda bd, p, q: bd.cmpi(pred, p, q, signedness), [a, b],
                          [elem] * 2, "i1")
        np.testing.assert_array_equal(got, fn(x, y))


def test_i1_arithmetic_is_mod_2(dev):
    a, b = random_tile("i1", N, 13), random_tile("i1", N, 14)
    for name, ref in (("addi", a ^ b), ("subi", a ^ b), ("muli", a & b), ("andi", a & b),
                      ("ori", a | b), ("xori", a ^ b)):
        got = elementwise(dev, lambda bd, x, y: bd.binary(name, x, y), [a, b], ["i1"] * 2, "i1")
        np.testing.assert_array_equal(got, ref, err_msg=name)
    got = elementwise(dev, lambda bd, x, y: bd.binary("maxi", x, y, signedness="signed"),
                      [a, b], ["i1"] * 2, "i1")
    np.testing.assert_array_equal(got, a & b)        # signed i1: true is -1
