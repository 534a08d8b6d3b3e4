"""Kernels and data shared by the CPU and GPU numerics tests (no tests here): float ``//``/``%``
on a grid of edge values, and float32 matmul at each ``input_precision``."""
from __future__ import annotations

import itertools

import numpy as np

import tilejit as tile
from tilejit import api

# --- float // and % ---------------------------------------------------------------------------
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 7.0, -7.0, 0.1, -0.1, 1 / 3,
         5.5, -5.5, 1e-3, 1e10, -1e10, 1e30, -1e30, 123456789.0, 65504.0, 1e-40, 5e-324,
         np.inf, -np.inf, np.nan, -np.nan]


def edge_pairs(dtype):
    """Every (a, b) pair of ``EDGES`` in ``dtype`` (values out of range become inf or 0, as
    NumPy's casts make them), padded to a multiple of 256 with (1, 1)."""
    a, b = np.array(list(itertools.product(EDGES, EDGES))).T
    n = -len(a) % 256
    with np.errstate(over="ignore"):
        return (np.concatenate([a, np.ones(n)]).astype(dtype),
                np.concatenate([b, np.ones(n)]).astype(dtype))


@tile.entry
def floordiv_mod(q, r, x, y):
    t, u = tile.load_tile_like(x, q), tile.load_tile_like(y, q)
    q.store(t // u)
    r.store(t % u)


def run_floordiv_mod(a: np.ndarray, b: np.ndarray):
    """``a // b`` and ``a % b`` computed by a kernel."""
    dt = tile.dtypes.from_numpy(a.dtype)
    q, r = api.zeros(a.shape, dt).sync(), api.zeros(a.shape, dt).sync()
    floordiv_mod(q.partition((256,)), r.partition((256,)), api.from_numpy(a).sync(),
                 api.from_numpy(b).sync()).sync()
    return q.to_numpy(), r.to_numpy()


def bitwise_mismatches(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Indices where ``got`` and ``want`` differ in value or sign bit (any NaN equals any NaN)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
    return np.nonzero(~same)[0]


def check_floordiv_mod(a: np.ndarray, b: np.ndarray) -> None:
    """Assert that a kernel's ``a // b`` and ``a % b`` have NumPy's bits, naming the first
    mismatches."""
    q, r = run_floordiv_mod(a, b)
    with np.errstate(all="ignore"):
        want_q, want_r = np.floor_divide(a, b), np.remainder(a, b)
    for got, want, op in ((q, want_q, "//"), (r, want_r, "%")):
        bad = bitwise_mismatches(got, want)
        assert not len(bad), [f"{a[i]!r} {op} {b[i]!r}: {got[i]!r}, NumPy {want[i]!r}"
                              for i in bad[:10]]


# --- float32 matmul -----------------------------------------------------------------------------
PRECISIONS = (None, "ieee", "float32", "tf32", "tf32x3", "astype")


@tile.entry
def matmul_f32(c, a, b, P: tile.Constant[int], BK: tile.Constant[int]):
    """c = a @ b with float32 inputs; ``P`` indexes ``PRECISIONS``."""
    BM, BN = c.shape
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta, tb = a.load((c.block[0], k), (BM, BK)), b.load((k, c.block[1]), (BK, BN))
        if P == 0:
            acc = tile.mma(ta, tb, acc)
        elif P == 1:
            acc = tile.mma(ta, tb, acc, input_precision="ieee")
        elif P == 2:
            acc = tile.mma(ta, tb, acc, input_precision="float32")
        elif P == 3:
            acc = tile.mma(ta, tb, acc, input_precision="tf32")
        elif P == 4:
            acc = tile.mma(ta, tb, acc, input_precision="tf32x3")
        else:
            acc = tile.mma(ta.astype(tile.tfloat32), tb.astype(tile.tfloat32), acc)
    c.store(acc)


def matmul_error(precision, n=256, tile_shape=(64, 64), bk=32, seed=0):
    """Relative error (max |c - ref| / max |ref|, ref in float64) of an n x n x n float32 matmul
    at ``precision``, and the Tile IR of the kernel."""
    rng = np.random.default_rng(seed)
    an = rng.standard_normal((n, n)).astype(np.float32)
    bn = rng.standard_normal((n, n)).astype(np.float32)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn).sync()
    c = api.zeros((n, n), tile.float32).sync()
    args = (c.partition(tile_shape), a, b, PRECISIONS.index(precision), bk)
    matmul_f32(*args).sync()
    ref = an.astype(np.float64) @ bn.astype(np.float64)
    err = np.abs(c.to_numpy() - ref).max() / np.abs(ref).max()
    return err, matmul_f32.inspect_tileir(*args)
