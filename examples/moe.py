"""Mixture of experts: each token goes to one expert; out[t] = gate[t] * x[t] @ W[expert[t]].

    python examples/moe.py

The host sorts tokens by expert and pads each expert's list to a multiple of the tile height,
so every tile of sorted tokens belongs to one expert (`tile_expert`). A block gathers its
tokens' rows of x (`tile.gather` with a 2-D index), reads its expert's weight tile (the expert
id is a one-element load, `shape=()`), multiplies on the tensor cores and scatters the gated
rows back to the tokens' positions.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def moe_matmul(out, x, w, sorted_ids, tile_expert, gates, BM: tile.Constant[int],
               BF: tile.Constant[int], BK: tile.Constant[int]):
    t = tile.bid(0)
    f = tile.bid(1)
    n_tokens, d = x.shape[0], x.shape[1]
    ids = sorted_ids.load((t,), (BM,))                   # padding entries hold n_tokens
    e = tile_expert.load((t,), ())                       # this tile's expert
    valid = ids < n_tokens
    acc = tile.zeros((BM, BF), tile.float32)
    for k in range(tile.cdiv(d, BK)):
        cols = k * BK + tile.arange(BK)
        xt = tile.gather(x, (ids[:, None], cols[None, :]),
                         mask=valid[:, None] & (cols[None, :] < d))
        wt = w.load((e, k, f), (1, BK, BF)).reshape((BK, BF))
        acc = tile.mma(xt, wt, acc)
    g = tile.gather(gates, ids, mask=valid)
    out_cols = f * BF + tile.arange(BF)[None, :]
    tile.scatter(out, (ids[:, None], out_cols), (acc * g[:, None]).astype(out.dtype),
                 mask=valid[:, None] & (out_cols < out.shape[1]))


def route(expert_of, n_experts, bm):
    """Tokens sorted by expert, each expert's run padded to a multiple of ``bm``."""
    n = len(expert_of)
    ids, owners = [], []
    for e in range(n_experts):
        mine = np.flatnonzero(expert_of == e)
        pad = (-len(mine)) % bm
        ids.append(np.concatenate([mine, np.full(pad, n)]))
        owners += [e] * ((len(mine) + pad) // bm)
    return np.concatenate(ids).astype(np.int32), np.array(owners, np.int32)


def main() -> int:
    gpu = current_backend() == "cuda"
    tokens, d, f, experts = (8192, 1024, 2048, 8) if gpu else (100, 64, 96, 4)
    bm, bf, bk = (64, 128, 64) if gpu else (16, 32, 32)
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((tokens, d)).astype(np.float16)
    wn = (rng.standard_normal((experts, d, f)) / np.sqrt(d)).astype(np.float16)
    expert_of = rng.integers(0, experts, tokens)
    gates = rng.random(tokens).astype(np.float32)
    sorted_ids, tile_expert = route(expert_of, experts, bm)
    out = api.zeros((tokens, f)).sync()
    grid = (len(tile_expert), -(-f // bf), 1)
    moe_matmul(tile.atomic(out), api.from_numpy(xn).sync(), api.from_numpy(wn).sync(),
               api.from_numpy(sorted_ids).sync(), api.from_numpy(tile_expert).sync(),
               api.from_numpy(gates).sync(), bm, bf, bk).grid(grid).sync()
    x32, w32 = xn.astype(np.float32), wn.astype(np.float32)
    ref = np.zeros((tokens, f), np.float32)
    for e in range(experts):
        mine = expert_of == e
        ref[mine] = x32[mine] @ w32[e]
    ref *= gates[:, None]
    err = np.abs(out.to_numpy() - ref).max() / np.abs(ref).max()
    ok = err < 1e-2
    print(f"moe: {tokens} tokens, {experts} experts, {d}->{f}, max relative error {err:.1e} "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
