"""``num_worker_warps`` (two compute warp groups sharing a tile's registers) on the issue-26 gaps:
fp16 matmul at 4096^3 / 8192^3 against cuBLAS and the fp8 promoted sum against
``torch._scaled_mm``. GPU only.

    python benchmarks/explore_worker_warps.py [--only matmul,fp8] [--sizes 4096,8192]

tileiras gives one warp group 128x128 float32 accumulators at most: 128x256 fp16 tiles and the
fp8 promoted sum's two 128x128 accumulators ran 5-15x slower than 128x128 (register spills).
With ``num_worker_warps=8`` two warp groups split the accumulator. Each candidate is checked
against torch, then timed as single runs with the L2 flushed (``flush``) and as a loop of 10
back-to-back launches (``loop``), with the vendor measured the same two ways in the same run.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples")]

import tilejit as tile  # noqa: E402

from fp8_matmul import fp8_matmul  # noqa: E402
from matmul import grouped_position, matmul_scheduled  # noqa: E402

LOOP = 10


@tile.entry
def scheduled_hinted(c, a, b, BM: tile.Constant[int], BN: tile.Constant[int],
                     BK: tile.Constant[int], GROUP: tile.Constant[int],
                     LATENCY: tile.Constant[int]):
    """matmul_scheduled (persistent) with ``latency=LATENCY`` on both loads."""
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    out = c.partition((BM, BN))
    for t in range(tile.bid(0), num_m * num_n, tile.num_blocks(0)):
        pm, pn = grouped_position(t, num_m, num_n, GROUP)
        acc = tile.zeros((BM, BN), tile.float32)
        for k in range(tile.cdiv(a.shape[1], BK)):
            acc = tile.mma(a.load((pm, k), (BM, BK), latency=LATENCY),
                           b.load((k, pn), (BK, BN), latency=LATENCY), acc)
        tile.store(out, (pm, pn), acc.astype(c.dtype))


def two_ways(fn, flops, flush, loop):
    """TFLOP/s of ``fn`` as single flushed runs and as a loop of LOOP back-to-back calls."""
    def repeated():
        for _ in range(LOOP):
            fn()
    return flops / flush.ms(fn) / 1e9, flops * LOOP / loop.ms(repeated) / 1e9


def vendor(name, fn, flops, flush, loop):
    f, lp = two_ways(fn, flops, flush, loop)
    print(f"  {name}: flush {f:.0f} / loop {lp:.0f} TFLOP/s", flush=True)
    return f, lp


def explore(cands, out, error, tol, flops, flush, loop, stream):
    """harness.time_candidates over ``cands``, each timed both ways: [((flush, loop), name)]."""
    from harness import time_candidates
    return time_candidates(cands, stream, flush, out, error, tol, None,
                           lambda r, err: f"flush {r[0]:.0f} / loop {r[1]:.0f} TFLOP/s",
                           indent="  ", measure=lambda launch: two_ways(launch, flops, flush,
                                                                         loop))


def matmul_rows(torch, m, flush, loop, stream, latency=False, dtype="float16"):
    dt = getattr(torch, dtype)
    a = torch.randn(m, m, device="cuda", dtype=dt)
    b = torch.randn(m, m, device="cuda", dtype=dt)
    c = torch.empty(m, m, device="cuda", dtype=dt)
    ref = a.float() @ b.float()
    flops = 2 * m ** 3
    print(f"matmul {dtype} {m}^3", flush=True)
    cublas = vendor("cuBLAS (torch.matmul)", lambda: torch.matmul(a, b, out=c), flops, flush, loop)

    def error():
        return ((c.float() - ref).abs().max() / ref.abs().max()).item()
    cands = []
    from matmul import scheduled_grid
    if latency:                          # persistent 128x256, two warp groups: latency hints
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        opts = tile.CompileOptions(occupancy=1, num_worker_warps=8)
        for bk in (32, 64):
            cands.append((f"128x256x{bk} persistent no hint", lambda bk=bk: matmul_scheduled(
                tile.atomic(c), a, b, 128, 256, bk, 8, True).grid((sms, 1, 1))
                .compile_options(opts)))
            for lat in (2, 4, 6, 8):
                cands.append((f"128x256x{bk} persistent latency={lat}",
                              lambda bk=bk, lat=lat: scheduled_hinted(
                                  tile.atomic(c), a, b, 128, 256, bk, 8, lat)
                              .grid((sms, 1, 1)).compile_options(opts)))
        explore(cands, c, error, 2e-2, flops, flush, loop, stream)
        return
    # (BM, BN, BK, occupancy, persistent, worker warps, GROUP, num_ctas)
    for bm, bn, bk, occ, pers, w, group, ctas in (
            (128, 128, 64, 2, False, None, 8, None), (128, 128, 64, 2, False, 8, 8, None),
            (128, 256, 64, 1, False, None, 8, None), (128, 256, 64, 1, False, 8, 8, None),
            (128, 256, 64, 1, True, 8, 8, None), (128, 256, 32, 1, False, 8, 8, None),
            (128, 256, 32, 1, True, 8, 8, None), (128, 256, 64, 1, False, 8, 4, None),
            (128, 256, 64, 1, False, 8, 16, None), (128, 256, 64, 1, False, 8, 8, 2),
            (128, 256, 64, 1, True, 8, 8, 2), (256, 128, 64, 1, False, 8, 8, None),
            (256, 128, 64, 1, True, 8, 8, None), (256, 128, 32, 1, False, 8, 8, None),
            (256, 128, 64, 1, False, 8, 8, 2)):
        cfg = tile.Config(BM=bm, BN=bn, BK=bk, GROUP=group, PERSISTENT=pers, occupancy=occ)
        grid = scheduled_grid(cfg, {"a": a, "b": b})
        opts = tile.CompileOptions(occupancy=occ, num_worker_warps=w, num_ctas=ctas)
        name = (f"{bm}x{bn}x{bk} occ{occ} {'persistent' if pers else 'grouped'} GROUP={group} "
                f"ctas={ctas} warps={w}")
        cands.append((name, lambda bm=bm, bn=bn, bk=bk, group=group, pers=pers, grid=grid,
                      opts=opts: matmul_scheduled(tile.atomic(c), a, b, bm, bn, bk, group, pers)
                      .grid(grid).compile_options(opts)))
    rows = explore(cands, c, error, 2e-2, flops, flush, loop, stream)
    if rows:
        (f, lp), name = max(rows, key=lambda x: x[0][0])
        print(f"  best flush: {name}: {f / cublas[0]:.2f}x cuBLAS flush", flush=True)
        (f, lp), name = max(rows, key=lambda x: x[0][1])
        print(f"  best loop: {name}: {lp / cublas[1]:.2f}x cuBLAS loop", flush=True)


def fp8_rows(torch, m, flush, loop, stream):
    f8 = torch.float8_e4m3fn
    a8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8)
    b8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8).t()
    sa = torch.full((1,), 0.5, device="cuda")
    sb = torch.full((1,), 4.0, device="cuda")
    ref = (a8.float() @ b8.float()) * 2.0
    c = torch.empty(m, m, dtype=torch.bfloat16, device="cuda")
    flops = 2 * m ** 3
    print(f"fp8 e4m3 {m}^3 (promoted float32 sum)", flush=True)
    base = vendor("torch._scaled_mm", lambda: torch._scaled_mm(
        a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16), flops, flush, loop)

    def error():
        return ((c.float() - ref).abs().max() / ref.abs().max()).item()
    cands = []
    for bm, bn, bk, occ, w in ((64, 128, 128, 2, None), (128, 128, 128, 1, None),
                               (128, 128, 128, 1, 8), (128, 128, 128, 2, 8),
                               (128, 128, 128, 1, 4), (128, 128, 256, 1, 8),
                               (64, 256, 128, 1, 8), (64, 256, 128, 2, 8),
                               (64, 128, 128, 2, 8)):
        opts = tile.CompileOptions(occupancy=occ, num_worker_warps=w)
        name = f"{bm}x{bn}x{bk} occ{occ} warps={w}"
        cands.append((name, lambda bm=bm, bn=bn, bk=bk, opts=opts: fp8_matmul(
            tile.partition(c, (bm, bn)), a8, b8, sa, sb, bk, False).compile_options(opts)))
    rows = explore(cands, c, error, 1e-2, flops, flush, loop, stream)
    if rows:
        (f, lp), name = max(rows, key=lambda x: x[0][0])
        print(f"  best: {name}: {f / base[0]:.2f}x flush, {lp / base[1]:.2f}x loop "
              f"(torch._scaled_mm)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="matmul,fp8")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--latency", action="store_true",
                    help="matmul: the persistent 128x256 kernel with latency hints on its loads")
    ap.add_argument("--dtypes", default="float16", help="matmul dtypes (float16, bfloat16)")
    args = ap.parse_args()
    from harness import flush_and_loop_timers, gpu_torch
    torch = gpu_torch("explore_worker_warps")
    if torch is None:
        return 0
    flush, loop = flush_and_loop_timers()
    stream = torch.cuda.current_stream()
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for m in (int(s) for s in args.sizes.split(",")):
        if "matmul" in args.only:
            for dt in args.dtypes.split(","):
                matmul_rows(torch, m, flush, loop, stream, args.latency, dt)
        if "fp8" in args.only:
            fp8_rows(torch, m, flush, loop, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
