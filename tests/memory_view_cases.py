"""Kernels for the in-kernel views and memory features of issue 25 item 1 (``x.slice``,
``x.strides``, ``check_bounds=False``, ``gather(padding_value=)``, atomics on views, bfloat16
``atomic_add``), shared by tests/test_memory_views.py and tests/gpu/test_memory_views_gpu.py."""
import ml_dtypes
import numpy as np

import tilejit as tile
from tilejit import api


@tile.entry
def segment_sums(z, x, starts, BM: tile.Constant[int], BN: tile.Constant[int]):
    """Row segment ``starts[b]:starts[b + 1]`` of x summed per column: a variable-length view."""
    b = tile.bid(0)
    s = starts.load((b,), ())
    e = starts.load((b + 1,), ())
    seg = x.slice(0, s, e)
    acc = tile.zeros((BN,), tile.float32)
    for i in range(tile.cdiv(seg.shape[0], BM)):
        acc = acc + tile.sum(seg.load((i, 0), (BM, BN), padding=tile.PaddingMode.ZERO), 0)
    z.store(acc[None, :])


def run_segment_sums(x, starts, bm=8):
    n = len(starts) - 1
    z = api.zeros((n, x.shape[1])).sync()
    segment_sums(z.partition((1, x.shape[1])), api.from_numpy(x).sync(),
                 api.from_numpy(np.asarray(starts, np.int32)).sync(), bm, x.shape[1]).sync()
    want = np.stack([x[starts[i]:starts[i + 1]].sum(0) for i in range(n)])
    return z.to_numpy(), want


@tile.entry
def histogram_bf16(z, w, x, B: tile.Constant[int]):
    """bfloat16 atomic_add of ones into bins through a slice of the histogram (contended)."""
    t = tile.load_tile_like(x, z)
    bins = w.slice(0, 1, w.shape[0])                 # bin i lives at w[i + 1]
    tile.atomic_add(bins, t, tile.full((B,), 1.0, tile.bfloat16))
    z.store(t)


def run_histogram(n, bins, block=256):
    x = np.random.default_rng(2).integers(0, bins, n).astype(np.int32)
    w = np.zeros(bins + 1, ml_dtypes.bfloat16)
    z = api.zeros((n,), tile.int32).sync()
    histogram_bf16(z.partition((block,)), tile.atomic(w), api.from_numpy(x).sync(), block).sync()
    return w, np.bincount(x, minlength=bins)
