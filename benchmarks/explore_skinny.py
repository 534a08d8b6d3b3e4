"""Skinny matmuls (M = 16-256, N = K = 8192) against cuBLAS (issue 26): tile shapes, K tiles,
occupancy and a latency hint on the loads (how far ahead tileiras issues them), beside the
one-launch split-K. GPU only.

    python benchmarks/explore_skinny.py [--ms 16,256] [--dtypes float16,bfloat16]

Each candidate is checked against torch, then timed as single runs with the L2 flushed and as a
loop of back-to-back launches, with cuBLAS measured the same two ways in the same run.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples")]

import tilejit as tile  # noqa: E402

import matmul_splitk as SK  # noqa: E402
from explore_worker_warps import explore, vendor  # noqa: E402
from harness import flush_and_loop_timers, gpu_torch, precompile  # noqa: E402


@tile.entry
def matmul_hinted(c, a, b, BK: tile.Constant[int], LATENCY: tile.Constant[int]):
    """The gallery's tiled matmul with ``latency=LATENCY`` on both loads (0: no hint)."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        if LATENCY > 0:
            ta = a.load((bm, k), (BM, BK), latency=LATENCY)
            tb = b.load((k, bn), (BK, BN), latency=LATENCY)
        else:
            ta = a.load((bm, k), (BM, BK))
            tb = b.load((k, bn), (BK, BN))
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


def rows(torch, m, dtype, flush, loop, stream):
    nk = 8192
    a = torch.randn(m, nk, device="cuda", dtype=dtype)
    b = torch.randn(nk, nk, device="cuda", dtype=dtype)
    c = torch.empty(m, nk, device="cuda", dtype=dtype)
    ref = a.float() @ b.float()
    flops = 2 * m * nk * nk
    print(f"matmul {dtype} M={m} N=K={nk}", flush=True)
    vendor("cuBLAS (torch.matmul)", lambda: torch.matmul(a, b, out=c), flops, flush, loop)

    def error():
        return ((c.float() - ref).abs().max() / ref.abs().max()).item()
    tiles = ((16, 32), (16, 64), (16, 128), (32, 64)) if m <= 64 else \
        ((128, 128), (64, 128), (128, 64), (64, 256))
    cands = []
    for bm, bn in tiles:
        bm = min(bm, m) if m >= 16 else 16
        for bk in ((128, 256) if m <= 64 else (64, 128)):
            for lat in (0, 3, 6):
                for occ in (1, 2):
                    opts = tile.CompileOptions(occupancy=occ)
                    cands.append((f"{bm}x{bn}x{bk} occ{occ} latency={lat}",
                                  lambda bm=bm, bn=bn, bk=bk, lat=lat, opts=opts: matmul_hinted(
                                      tile.partition(c, (bm, bn)), a, b, bk, lat)
                                  .compile_options(opts)))
    if m <= 64:
        for splits in (2, 4):
            ws = torch.empty(splits, m, nk, device="cuda", dtype=torch.float32)
            arrived = torch.zeros(nk, device="cuda", dtype=torch.int32)
            for bn in (32, 64):
                cands.append((f"one-launch split-K splits={splits} {m}x{bn}x128",
                              lambda ws=ws, arrived=arrived, bn=bn: SK.splitk_fused(
                                  c, a, b, ws, arrived, (m, bn), 128)))
    precompile(cands)
    explore(cands, c, error, 2e-2, flops, flush, loop, stream)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ms", default="16,256")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    args = ap.parse_args()
    torch = gpu_torch("explore_skinny")
    if torch is None:
        return 0
    flush, loop = flush_and_loop_timers()
    stream = torch.cuda.current_stream()
    for m in (int(v) for v in args.ms.split(",")):
        for dt in args.dtypes.split(","):
            rows(torch, m, getattr(torch, dt), flush, loop, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
