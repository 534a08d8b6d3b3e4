"""Atomics, gather and scatter, tile views (``x.partition``), ``z.load`` and ``tile.store``."""
import numpy as np

import tilejit as tile

from . import Atomic, Case, In, Out, Scalar, rand


def histogram(hist, x, n, BLOCK: tile.Constant[int]):
    """hist[x[i]] += 1 with atomic_add; x holds bins in [0, hist.shape[0])."""
    b = tile.bid(0)
    idx = b * BLOCK + tile.arange(BLOCK)
    bins = tile.gather(x, idx, mask=idx < n, other=0)
    tile.atomic_add(hist, bins, 1, mask=idx < n)


def atomic_max_rows(out, x, BN: tile.Constant[int]):
    """out[0] = max over all of x (int32) via atomic_max of each block's tile maximum."""
    b = tile.bid(0)
    t = x.load((b,), (BN,), padding=tile.PaddingMode.ZERO)
    m = tile.max(t, axis=0, keepdims=True)
    tile.atomic_max(out, tile.zeros((1,), tile.int32), m)


def atomic_bits(w, x, n, BLOCK: tile.Constant[int]):
    """w[0] |= all x, w[1] &= all x, w[2] ^= all x (uint32 bit masks) with atomic or/and/xor."""
    b = tile.bid(0)
    idx = b * BLOCK + tile.arange(BLOCK)
    t = tile.gather(x, idx, mask=idx < n, other=0)
    zero = tile.zeros((BLOCK,), tile.int32)
    tile.atomic_or(w, zero, t, mask=idx < n)
    tile.atomic_and(w, zero + 1, t, mask=idx < n)
    tile.atomic_xor(w, zero + 2, t, mask=idx < n)


def _bits_ref(w, x, n, BLOCK):
    out = w.copy()
    out[0] = np.bitwise_or.reduce(x, initial=out[0])
    out[1] = np.bitwise_and.reduce(x, initial=out[1])
    out[2] = np.bitwise_xor.reduce(x, initial=out[2])
    return {"w": out}


def load_transposed(z, x, w):
    """z = x.T through order=(1, 0) loads (no register permute); w = x through order= stores."""
    BM, BN = z.shape
    i, j = z.block
    t = x.load((i, j), (BM, BN), order=(1, 0))
    z.store(t)
    tile.store(w.partition((BM, BN)), (i, j), t, order=(1, 0))


def load_element(z, x, n):
    """Rank-0 loads (shape=()): z[i] = x[i, n - 1 - i] * 2 with one-element loads in a loop."""
    (B,) = z.shape
    acc = tile.zeros((B,), tile.float32)
    lanes = tile.arange(B)
    for i in range(B):
        r = tile.bid(0) * B + i
        v = x.load((r, n - 1 - r), ())
        acc = tile.where(lanes == i, v * 2.0, acc)
    z.store(acc)


def arange_forms(z):
    """arange(n), arange(n, dtype), arange(start, stop), arange(start, stop, step, dtype)."""
    a = tile.astype(tile.arange(16), tile.float32)
    b = tile.arange(16, tile.float32)
    c = tile.astype(tile.arange(5, 21), tile.float32)
    d = tile.arange(30, -2, -2, dtype=tile.int64)
    z.store(a + b * 10.0 + c * 100.0 + tile.astype(d, tile.float32) * 1000.0)


def gather_rows(z, x, idx):
    """z[i, :] = x[idx[i], :] with 2-D element gather."""
    BM, BN = z.shape
    i, j = z.block
    rows = idx.load((i,), (BM,))
    cols = j * BN + tile.arange(BN)
    r2 = rows[:, None]
    c2 = cols[None, :]
    vals = tile.gather(x, (r2, c2), mask=c2 < x.shape[1])
    z.store(vals)


def scatter_permute(z, x, perm):
    """z[perm[i]] = x[i]: each block scatters its tile into the whole output tensor."""
    (B,) = z.shape
    b = tile.bid(0)
    src = b * B + tile.arange(B)
    n = x.shape[0]
    dst = tile.gather(perm, src, mask=src < n, other=0)
    vals = tile.gather(x, src, mask=src < n)
    tile.scatter(z, dst, vals, mask=src < n)


def view_sum(z, x, BK: tile.Constant[int]):
    """x.partition((BM, BK)) tile view: z[i] = sum of row tile i over all column tiles."""
    (BM,) = z.shape
    i = tile.bid(0)
    xv = x.partition((BM, BK), padding=tile.PaddingMode.ZERO)
    acc = tile.zeros((BM,), tile.float32)
    for k in range(xv.num_tiles(1)):
        acc += tile.sum(xv.load((i, k)), axis=1)
    z.store(acc)


def accumulate_inplace(z, x):
    """z.load() reads the output partition's current contents."""
    z.store(z.load() + tile.load_tile_like(x, z) * 2.0)


def store_view(w, x, BM: tile.Constant[int]):
    """tile.store into a view of a writable tensor: w[tile b] = x[tile b] + 1."""
    b = tile.bid(0)
    wv = w.partition((BM,))
    tile.store(wv, (b,), x.load((b,), (BM,)) + 1.0)


def _hist_ref(hist, x, n, BLOCK):
    h = hist.copy()
    np.add.at(h, x[:n], 1)
    return {"hist": h}


CASES = [
    Case("histogram", histogram,
         lambda r: dict(hist=Atomic(np.zeros(16, np.int32)), x=In(rand(r, (1000,), np.int32, 0,
                                                                       15)),
                        n=Scalar(1000)),
         _hist_ref, constants={"BLOCK": 128}, grid=lambda a: (8, 1, 1)),
    Case("atomic_max", atomic_max_rows,
         lambda r: dict(out=Atomic(np.full(1, -(2 ** 31), np.int32)),
                        x=In(rand(r, (1000,), np.int32, 0, 10 ** 6))),
         lambda out, x, BN: {"out": np.array([max(x.max(), 0)], np.int32)},
         constants={"BN": 256}, grid=lambda a: (4, 1, 1)),
    Case("atomic_bits", atomic_bits,
         lambda r: dict(w=Atomic(np.array([0, 0xFFFFFFFF, 0x5A5A5A5A], np.uint32)),
                        x=In(r.integers(0, 2 ** 32, 300, dtype=np.uint32) | np.uint32(0x10)),
                        n=Scalar(300)),
         _bits_ref, constants={"BLOCK": 128}, grid=lambda a: (3, 1, 1)),
    Case("load_transposed", load_transposed,
         lambda r: dict(z=Out(np.zeros((48, 40), np.float32), (16, 8)), x=In(rand(r, (40, 48))),
                        w=Atomic(np.zeros((40, 48), np.float32))),
         lambda z, x, w: {"z": x.T, "w": x}),
    Case("load_element", load_element,
         lambda r: dict(z=Out(np.zeros(24, np.float32), (8,)), x=In(rand(r, (24, 24))),
                        n=Scalar(24)),
         lambda z, x, n: {"z": np.array([x[i, 23 - i] * 2 for i in range(24)], np.float32)}),
    Case("arange_forms", arange_forms,
         lambda r: dict(z=Out(np.zeros(16, np.float32), (16,))),
         lambda z: {"z": (np.arange(16) * 11.0 + np.arange(5, 21) * 100.0 +
                          np.arange(30, -2, -2) * 1000.0).astype(np.float32)}),
    Case("gather_rows", gather_rows,
         lambda r: dict(z=Out(np.zeros((40, 70), np.float32), (16, 32)),
                        x=In(rand(r, (50, 70))), idx=In(r.integers(0, 50, 40).astype(np.int32))),
         lambda z, x, idx: {"z": x[idx]}),
    Case("scatter_permute", scatter_permute,
         lambda r: dict(z=Out(np.zeros(300, np.float32), (128,)), x=In(rand(r, (300,))),
                        perm=In(r.permutation(300).astype(np.int32))),
         lambda z, x, perm: {"z": _scatter_ref(x, perm)}),
    Case("view_sum", view_sum,
         lambda r: dict(z=Out(np.zeros(50, np.float32), (16,)), x=In(rand(r, (50, 90)))),
         lambda z, x, BK: {"z": x.sum(axis=1).astype(np.float32)}, constants={"BK": 32},
         rtol=1e-5, atol=1e-5),
    Case("accumulate_inplace", accumulate_inplace,
         lambda r: dict(z=Out(rand(r, (500,)), (128,)), x=In(rand(r, (500,)))),
         lambda z, x: {"z": z + x * np.float32(2)}),
    Case("store_view", store_view,
         lambda r: dict(w=Atomic(np.zeros(300, np.float32)), x=In(rand(r, (300,)))),
         lambda w, x, BM: {"w": x + np.float32(1)}, constants={"BM": 128},
         grid=lambda a: (3, 1, 1)),
]


def _scatter_ref(x, perm):
    out = np.zeros_like(x)
    out[perm] = x
    return out
