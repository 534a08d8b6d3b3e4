"""Attention decode: one new query per sequence against a long KV cache, with grouped-query
heads (GQA) and the KV sequence split across blocks (split-KV, "flash decoding").

    python examples/attention_decode.py

With S_q = 1 there is one query row per head: too little for a tensor-core tile, and B * H
blocks are too few to keep the GPU busy while each streams a long KV cache. So:

* the G query heads that share a KV head (G = H_q / H_kv) are the rows of one tile: each K and V
  tile is read once for the whole group (q is viewed as (B * H_kv, G, D); rows past G are zero
  padding up to GP, a power of two of at least 16);
* the KV sequence is cut into ``splits`` ranges of whole BN tiles, one block per (range, group):
  each writes its normalized partial output and the log2-sum-exp of its scores into float32
  workspaces, and the ranges are merged with the usual rescaling (a split with no key
  contributes weight 0): by the last block of each group to finish (an atomic arrival counter;
  one launch, ``decode_fused``), or by a second kernel (``decode_partial`` + ``decode_combine``).

The output is (B * H_kv, G, D), i.e. (B, H_q, 1, D) in memory.
"""
import math
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

from flash_attention import LOG2E, masked, online_update, scores

ZERO = tile.PaddingMode.ZERO


@tile.function
def partial(q, k, v, s, g, splits, GP, D, BN):
    """Key range ``s`` of ``splits`` for group ``g``: (its normalized output (GP, D), the
    log2-sum-exp of its scores (GP, 1)); a range with no key gives weight 0 (lse -inf)."""
    scale = (1.0 / D ** 0.5) * LOG2E
    tq = q.load((g, 0, 0), (1, GP, D), padding=ZERO).reshape((GP, D))
    n_tiles = tile.cdiv(k.shape[1], BN)
    per = tile.cdiv(n_tiles, splits)
    m = tile.full((GP, 1), -math.inf, tile.float32)
    l = tile.zeros((GP, 1), tile.float32)
    acc = tile.zeros((GP, D), tile.float32)
    whole = k.shape[1] // BN                             # tiles without keys past the end
    for j in range(s * per, min(s * per + per, n_tiles)):
        sc = scores(tq, k, g, j, GP, BN, D)
        if j >= whole:                                   # the ragged last tile: split out
            sc = masked(sc, 0, j, k.shape[1], GP, BN, False)
        m, l, acc = online_update(sc, v, g, j, m, l, acc, scale, BN, D)
    empty = l == 0.0                                     # a range past the last key
    lse = tile.where(empty, -math.inf, m + tile.log2(tile.where(empty, 1.0, l)))
    return acc / tile.where(empty, 1.0, l), lse


@tile.function
def merge(o_ws, lse_ws, g, GP, D):
    """Group ``g``'s ranges merged by their log2-sum-exp (float32 (GP, D))."""
    splits = o_ws.shape[0]
    top = tile.full((GP, 1), -math.inf, tile.float32)
    for s in range(splits):
        top = tile.maximum(top, lse_ws.load((s, g), (1, GP)).reshape((GP, 1)))
    acc = tile.zeros((GP, D), tile.float32)
    total = tile.zeros((GP, 1), tile.float32)
    for s in range(splits):
        w = tile.exp2(lse_ws.load((s, g), (1, GP)).reshape((GP, 1)) - top)
        acc += w * o_ws.load((s, g, 0), (1, GP, D)).reshape((GP, D))
        total += w
    return acc / total


@tile.entry
def decode_partial(o_ws, lse_ws, q, k, v, BN: tile.Constant[int]):
    """o_ws (splits, groups * GP, D) partitioned (1, GP, D): grid (splits, groups); lse_ws
    (splits, groups * GP) writable."""
    _, GP, D = o_ws.shape
    s, g, _ = o_ws.block
    o, lse = partial(q, k, v, s, g, tile.num_blocks(0), GP, D, BN)
    o_ws.store(o.reshape((1, GP, D)))
    tile.store(lse_ws.partition((1, GP)), (s, g), lse.reshape((1, GP)))


@tile.entry
def decode_combine(out, o_ws, lse_ws):
    """out (groups, G, D) partitioned (1, GP, D): the ranges merged by their log-sum-exp."""
    _, GP, D = out.shape
    g = out.block[0]
    out.store(merge(o_ws, lse_ws, g, GP, D).astype(out.dtype).reshape((1, GP, D)))


@tile.entry
def decode_fused(out, o_ws, lse_ws, arrived, q, k, v, GP: tile.Constant[int],
                 D: tile.Constant[int], BN: tile.Constant[int]):
    """Both steps in one launch, grid (splits, groups): each block writes its range's partials,
    and the last block of a group to arrive merges the group's ranges into ``out`` (groups, G,
    D). o_ws, lse_ws, out and ``arrived`` (groups,) int32, zero on entry and left zero, are
    writable."""
    s, g = tile.bid(0), tile.bid(1)
    splits = tile.num_blocks(0)
    o, lse = partial(q, k, v, s, g, splits, GP, D, BN)
    tile.store(o_ws.partition((1, GP, D)), (s, g, 0), o.reshape((1, GP, D)))
    tile.store(lse_ws.partition((1, GP)), (s, g), lse.reshape((1, GP)))
    # ACQ_REL (the default): this block's partials are visible before its arrival counts, and
    # the last block sees every other block's partials after it
    if tile.atomic_add(arrived, g, 1) == splits - 1:
        merged = merge(o_ws, lse_ws, g, GP, D).astype(out.dtype).reshape((1, GP, D))
        tile.store(out.partition((1, GP, D)), (g, 0, 0), merged)
        tile.atomic_xchg(arrived, g, 0)                  # ready for the next launch


def group_rows(g: int) -> int:
    """Tile rows for a group of ``g`` query heads: a power of two, 16 at least."""
    return max(16, 1 << (g - 1).bit_length())


def workspaces(groups: int, g: int, d: int, splits: int):
    """(o_ws, lse_ws, arrived): the partials of every range and the groups' arrival counters."""
    gp = group_rows(g)
    return (api.empty((splits, groups * gp, d), tile.float32).sync(),
            api.empty((splits, groups * gp), tile.float32).sync(),
            api.zeros((groups,), tile.int32).sync())


def decode(out, q, k, v, o_ws, lse_ws, arrived, bn: int, fused: bool = True):
    """One launch (``decode_fused``), or with ``fused=False`` two: the partials, then the merge.
    q and out are (B * H_kv, G, D); k and v (B * H_kv, S, D)."""
    d, gp = q.shape[2], group_rows(q.shape[1])
    if fused:
        splits, groups = o_ws.shape[0], q.shape[0]
        return decode_fused(tile.atomic(out), tile.atomic(o_ws), tile.atomic(lse_ws),
                            tile.atomic(arrived), q, k, v, gp, d, bn).grid((splits, groups, 1))
    part = decode_partial(tile.partition(o_ws, (1, gp, d)), tile.atomic(lse_ws), q, k, v, bn)
    return part.then(lambda _: decode_combine(tile.partition(out, (1, gp, d)), o_ws, lse_ws))


def reference(q, k, v):
    """softmax(q k^T / sqrt(d)) v per group in float64: q (groups, G, D), k v (groups, S, D)."""
    s = q.astype(np.float64) @ np.swapaxes(k, 1, 2).astype(np.float64) / math.sqrt(q.shape[2])
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


def main() -> int:
    gpu = current_backend() == "cuda"
    b, hq, hkv, s, d = (8, 32, 8, 16384, 128) if gpu else (2, 8, 2, 300, 32)
    splits, bn = (8, 128) if gpu else (3, 32)
    g, groups = hq // hkv, b * hkv
    rng = np.random.default_rng(0)
    qn = rng.standard_normal((groups, g, d)).astype(np.float16)
    kn, vn = (rng.standard_normal((groups, s, d)).astype(np.float16) for _ in range(2))
    q, k, v = (api.from_numpy(a).sync() for a in (qn, kn, vn))
    out = api.zeros((groups, g, d), tile.float16).sync()
    decode(out, q, k, v, *workspaces(groups, g, d, splits), bn).sync()
    n = min(groups, 4)                                   # a few groups suffice to check
    err = np.abs(out.to_numpy()[:n].astype(np.float64) - reference(qn[:n], kn[:n], vn[:n])).max()
    ok = err < 5e-3
    print(f"attention_decode: B={b} H_q={hq} H_kv={hkv} S={s} D={d}, {splits} splits, "
          f"max error {err:.1e} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
