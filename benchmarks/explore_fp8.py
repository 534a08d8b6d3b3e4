"""fp8 (e4m3) matmul layouts and tiles against ``torch._scaled_mm`` (issue 26): which program
puts tileiras on the fp8 tensor-core path. GPU only.

    python benchmarks/explore_fp8.py [--m 4096]

Variants: the tensor cores' fast fp8 sum on or off, and fast sums promoted into a float32
accumulator every few K tiles; tiles 64x128 to 128x128, BK 64 / 128, occupancy 1 / 2, clusters
of 2 (``num_ctas``). ``--all`` adds
128x256 / 256x128 tiles, B^T row-major and grouped tile orders, and cuTile's kernel. Each variant
is checked against torch before it is timed (median of single runs, L2 flushed).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples")]

import tilejit as tile  # noqa: E402

from fp8_matmul import fp8_matmul, fp8_matmul_scheduled, promoted_product  # noqa: E402


@tile.entry
def fp8_matmul_promoted(c, a, b, scale_a, scale_b, BK: tile.Constant[int],
                        EVERY: tile.Constant[int]):
    """Fast tensor-core sums over EVERY K tiles, each added to a float32 accumulator
    (``fp8_matmul.promoted_product``), a tile per block."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = promoted_product(a, b, bm, bn, BM, BN, BK, EVERY)
    c.store((acc * (scale_a.load((0,), ()) * scale_b.load((0,), ()))).astype(c.dtype))


def cutile_fp8(m):
    """cuTile Python's form of the same kernel (None where cuda.tile is not installed)."""
    try:
        import cuda.tile as ct
    except ImportError:
        return None

    @ct.kernel
    def k(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
          FAST: ct.Constant[bool]):
        bm, bn = ct.bid(0), ct.bid(1)
        acc = ct.full((BM, BN), 0.0, dtype=ct.float32)
        for kk in range(ct.cdiv(a.shape[1], BK)):
            acc = ct.mma(ct.load(a, index=(bm, kk), shape=(BM, BK)),
                         ct.load(b, index=(kk, bn), shape=(BK, BN)), acc, use_fast_acc=FAST)
        ct.store(c, index=(bm, bn), tile=(acc * 2.0).astype(c.dtype))
    return ct, k


@tile.entry
def fp8_matmul_bt(c, a, bt, scale_a, scale_b, BK: tile.Constant[int]):
    """B given as B^T (N, K) row-major: (BN, BK) tiles, transposed for the MMA."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), bt.load((bn, k), (BN, BK)).T, acc)
    c.store((acc * (scale_a.load((0,), ()) * scale_b.load((0,), ()))).astype(c.dtype))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--grouped", action="store_true",
                    help="only the grouped tile order (GROUP 4/8/16) against the plain one")
    ap.add_argument("--promoted", action="store_true",
                    help="only the persistent grouped kernel: tileiras's promoted sum against "
                         "fast sums promoted in the kernel every PROMOTE K tiles")
    ap.add_argument("--all", action="store_true",
                    help="also the 128x256/256x128 tiles, the B layouts and cuTile's kernel")
    args = ap.parse_args()
    from harness import Timer, gpu_torch, time_candidates
    torch = gpu_torch("explore_fp8")
    if torch is None:
        return 0
    m = args.m
    f8 = torch.float8_e4m3fn
    a8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8)
    bt8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8)
    b8 = bt8.t()
    sa = torch.full((1,), 0.5, device="cuda")
    sb = torch.full((1,), 4.0, device="cuda")
    ref = (a8.float() @ b8.float()) * 2.0
    c = torch.empty(m, m, dtype=torch.bfloat16, device="cuda")
    timer = Timer(reps=20)
    s = torch.cuda.current_stream()
    tflop = 2 * m ** 3 / 1e12
    vendor = timer.ms(lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb,
                                               out_dtype=torch.bfloat16))
    print(f"torch._scaled_mm {m}^3: {tflop / vendor * 1e3:.0f} TFLOP/s")
    fast_vendor = timer.ms(lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb,
                                                    out_dtype=torch.bfloat16, use_fast_accum=True))
    print(f"torch._scaled_mm use_fast_accum=True {m}^3: {tflop / fast_vendor * 1e3:.0f} TFLOP/s")
    cands = []
    # (BM, BN, BK, occupancy, num_ctas)
    tiles = ((128, 128, 128, 2, None), (64, 128, 128, 2, None), (64, 128, 128, 3, None),
             (64, 128, 128, 4, None), (64, 128, 256, 2, None), (64, 128, 64, 4, None),
             (64, 64, 128, 4, None), (64, 128, 128, None, 2), (64, 256, 128, 1, None))
    if args.all:
        tiles += ((128, 256, 128, 1, None), (256, 128, 128, 1, None))
    for bm, bn, bk, occ, ctas in tiles:
        for fast in (False, True):
            opts = tile.CompileOptions(occupancy=occ, num_cta_in_cga=ctas)
            cands.append((f"fast_acc={fast} {bm}x{bn}x{bk} occ{occ} ctas{ctas}",
                          lambda bm=bm, bn=bn, bk=bk, o=opts, f=fast: fp8_matmul(
                              tile.partition(c, (bm, bn)), a8, b8, sa, sb, bk, f)
                          .compile_options(o)))
    # the promoted sum holds two float32 accumulators: 64-row tiles keep both in registers
    for bm, bn, bk, every, occ, ctas in ((64, 128, 128, 1, 2, None),
                                         (128, 128, 128, 8, 1, None)):
        opts = tile.CompileOptions(occupancy=occ, num_cta_in_cga=ctas)
        cands.append((f"promoted every {every} x {bm}x{bn}x{bk} occ{occ} ctas{ctas}",
                      lambda bm=bm, bn=bn, bk=bk, e=every, o=opts: fp8_matmul_promoted(
                          tile.partition(c, (bm, bn)), a8, b8, sa, sb, bk, e)
                      .compile_options(o)))
    ctk = None if args.grouped or args.promoted else cutile_fp8(m)
    if ctk is not None:
        ct, k = ctk
        for bm, bn, bk in ((128, 128, 128), (64, 128, 128)):
            for fast in (False, True):
                def run(bm=bm, bn=bn, bk=bk, fast=fast):
                    ct.launch(s, (m // bm, m // bn, 1), k, (a8, b8, c, bm, bn, bk, fast))
                try:
                    c.fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                    ms = timer.ms(run)
                    print(f"cuTile fast_acc={fast} {bm}x{bn}x{bk}: {tflop / ms * 1e3:.0f} TFLOP/s "
                          f"(error {err:.1e})", flush=True)
                except Exception as e:  # noqa: BLE001
                    print(f"cuTile {bm}x{bn}x{bk}: failed: {type(e).__name__}: {e}"[:300])
    for bm, bn in ((64, 128),):
        for bk in (128,):
            for occ in (2,):
                opts = tile.CompileOptions(occupancy=occ)
                name = f"{bm}x{bn}x{bk} occ{occ}"
                cands.append((f"colmajor {name}", lambda bm=bm, bn=bn, bk=bk, o=opts: fp8_matmul(
                    tile.partition(c, (bm, bn)), a8, b8, sa, sb, bk).compile_options(o)))
                cands.append((f"bt {name}", lambda bm=bm, bn=bn, bk=bk, o=opts: fp8_matmul_bt(
                    tile.partition(c, (bm, bn)), a8, bt8, sa, sb, bk).compile_options(o)))
                grid = (-(-m // bm) * -(-m // bn), 1, 1)
                cands.append((f"grouped8 {name}", lambda bm=bm, bn=bn, bk=bk, o=opts, g=grid:
                              fp8_matmul_scheduled(tile.atomic(c), a8, b8, sa, sb, bm, bn, bk, 8,
                                                   False).grid(g).compile_options(o)))
    if args.grouped:
        cands = []
        for bm, bn, occ, fast in ((64, 128, 2, False), (128, 128, 2, True)):
            opts = tile.CompileOptions(occupancy=occ)
            cands.append((f"plain {bm}x{bn}x128 occ{occ} fast={fast}",
                          lambda bm=bm, bn=bn, o=opts, f=fast: fp8_matmul(
                              tile.partition(c, (bm, bn)), a8, b8, sa, sb, 128, f)
                          .compile_options(o)))
            for group in (4, 8, 16):
                grid = (-(-m // bm) * -(-m // bn), 1, 1)
                cands.append((f"grouped{group} {bm}x{bn}x128 occ{occ} fast={fast}",
                              lambda bm=bm, bn=bn, o=opts, g=grid, gr=group, f=fast:
                              fp8_matmul_scheduled(tile.atomic(c), a8, b8, sa, sb, bm, bn, 128,
                                                   gr, False, f).grid(g).compile_options(o)))
    if args.promoted:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        cands = []
        # persistent grouped: tileiras's promoted sum (PROMOTE=0) against fast sums promoted
        # in the kernel every PROMOTE K tiles (2026-11-27 H200: every tile of 256 at 128x128
        # with two warp groups 1.04x / 0.98x _scaled_mm at 4096^3 / 8192^3; the others,
        # BK 128 or 512, 64x256, every 2 or 4, 0.25-0.82x; writing the every-1 loop as
        # acc + mma(a, b, zeros) gave 0.78-0.85x)
        for bm, bn, bk, every, warps in ((128, 128, 128, 0, 8), (128, 128, 256, 0, 8),
                                         (128, 128, 128, 1, 8), (128, 128, 256, 1, 8),
                                         (128, 128, 128, 2, 8), (64, 256, 256, 1, 8)):
            opts = tile.CompileOptions(occupancy=1, num_worker_warps=warps)
            grid = (min(sms, -(-m // bm) * -(-m // bn)), 1, 1)
            cands.append((f"promoted every {every} (0: by tileiras) {bm}x{bn}x{bk} "
                          f"warps={warps}",
                          lambda bm=bm, bn=bn, bk=bk, e=every, o=opts, g=grid:
                          fp8_matmul_scheduled(tile.atomic(c), a8, b8, sa, sb, bm, bn, bk, 8,
                                               True, PROMOTE=e).grid(g).compile_options(o)))
    vendor_rate = tflop / vendor * 1e3
    time_candidates(cands, s, timer, c,
                    lambda: ((c.float() - ref).abs().max() / ref.abs().max()).item(), 1e-2,
                    lambda ms: tflop / ms * 1e3,
                    lambda r, err: f"{r:.0f} TFLOP/s ({r / vendor_rate:.2f}x), error {err:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
