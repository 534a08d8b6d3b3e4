"""How the norms move memory (issue 26): the same row kernels with their loads and stores through
the TMA unit or not (``allow_tma=``), with and without bounds checks, beside a plain copy of the
same tiles (the ceiling of any row kernel). GPU only.

    python benchmarks/explore_norm_memory.py [--shapes 16384x4096,...]
        [--only copy,softmax,rms,ln,ln_fused,rms_bias,ln_no_bias]

``rms_bias`` (RMSNorm plus a bias) and ``ln_no_bias`` (LayerNorm without one) split what
LayerNorm costs over RMSNorm: the bias vector or the second, dependent sum; ``ln_fused`` takes
both sums in one reduction (as the gallery's LayerNorm now does).

GB/s counts one read and one write of x (fp16), as the copy roofline does. Every candidate is
checked against torch before it is timed (median of single runs, L2 flushed).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples")]

import tilejit as tile  # noqa: E402

import layernorm as LN  # noqa: E402
import softmax as SM  # noqa: E402

ZERO, NEG_INF = tile.PaddingMode.ZERO, tile.PaddingMode.NEG_INF
C = tile.Constant


@tile.entry
def copy_rows(z, x, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    z.store(x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS),
            allow_tma=STORE_TMA)


@tile.entry
def softmax_rows(z, x, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    t = x.load(z.block, z.shape, padding=NEG_INF, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    z.store(SM.softmax_tile(t).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def rms_rows(z, x, w, eps, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    BM, BN = z.shape
    t = x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    t = t.astype(tile.float32)
    rs = tile.rsqrt(tile.sum(t * t, axis=1, keepdims=True) / x.shape[1] + eps)
    wv = w.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    z.store((t * rs * wv).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def ln_rows(z, x, w, b, eps, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    """Whole rows (the tile's width is the row's length: no padding to mask)."""
    BM, BN = z.shape
    t = x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    t = t.astype(tile.float32)
    mu = tile.sum(t, axis=1, keepdims=True) / BN
    d = t - mu
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) / BN + eps)
    wv = w.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    bv = b.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    z.store((d * rs * wv + bv).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def ln_fused(z, x, w, b, eps, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    """ln_rows with both statistics from one reduction (the gallery's ``shifted_moments``: the
    sums of x - pivot and of its square), one round of barriers where ln_rows takes two."""
    BM, BN = z.shape
    t = x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    t = t.astype(tile.float32)
    pivot = x.load((z.block[0], 0), (BM, 1)).astype(tile.float32)
    d = t - pivot
    m1, _, rs = LN.shifted_moments(d, d * d, pivot, BN, eps)
    wv = w.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    bv = b.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    z.store(((d - m1) * rs * wv + bv).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def rms_bias(z, x, w, b, eps, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    """RMSNorm plus LayerNorm's bias: what the bias vector costs (against rms_rows)."""
    BM, BN = z.shape
    t = x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    t = t.astype(tile.float32)
    rs = tile.rsqrt(tile.sum(t * t, axis=1, keepdims=True) / x.shape[1] + eps)
    wv = w.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    bv = b.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    z.store((t * rs * wv + bv).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def ln_no_bias(z, x, w, eps, LOAD_TMA: C[bool], STORE_TMA: C[bool], INBOUNDS: C[bool]):
    """LayerNorm without its bias: what the second, dependent sum costs (against rms_rows)."""
    BM, BN = z.shape
    t = x.load(z.block, z.shape, allow_tma=LOAD_TMA, check_bounds=not INBOUNDS)
    t = t.astype(tile.float32)
    d = t - tile.sum(t, axis=1, keepdims=True) / BN
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) / BN + eps)
    wv = w.load((0,), (BN,), allow_tma=LOAD_TMA).astype(tile.float32)[None, :]
    z.store((d * rs * wv).astype(z.dtype), allow_tma=STORE_TMA)


@tile.entry
def softmax_persistent(z, x, ROWS: C[int], WIDTH: C[int], LATENCY: C[int], LOAD_TMA: C[bool],
                       STORE_TMA: C[bool]):
    out = z.partition((ROWS, WIDTH))
    for r in range(tile.bid(0), tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        t = x.load((r, 0), (ROWS, WIDTH), padding=NEG_INF, latency=LATENCY, allow_tma=LOAD_TMA)
        tile.store(out, (r, 0), SM.softmax_tile(t).astype(z.dtype), allow_tma=STORE_TMA)


def opts(occ, warps=None):
    return tile.CompileOptions(occupancy=occ, num_worker_warps=warps)


TMA = [(True, True), (False, True), (True, False), (False, False)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="copy,softmax,rms,ln")
    ap.add_argument("--shapes", default="16384x4096,65536x1024,4096x16384,2048x32768")
    ap.add_argument("--persistent", action="store_true", help="also softmax's persistent form")
    ap.add_argument("--occupancy", default="", help="occupancy values (default: 1,2 for rows "
                                                     "of 16K elements or more, else 2,4)")
    ap.add_argument("--warps", default="", help="num_worker_warps values besides the default "
                                                "(tileiras's choice), e.g. 8")
    ap.add_argument("--tma", default="all", choices=("all", "store-off"),
                    help="store-off: only loads through TMA and stores from registers")
    args = ap.parse_args()
    from harness import precompile, row_probe, time_candidates
    probe = row_probe("explore_norm_memory")
    if probe is None:
        return 0
    torch, timer, s, roof = probe
    F = torch.nn.functional
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for shape in args.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        w = torch.randn(n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        gb = 2 * x.numel() * 2 / 1e9
        bms = [bm for bm in (1, 2, 4, 8, 16) if bm * n <= 32768 and (bm * n >= 4096)]
        occs = [int(v) for v in args.occupancy.split(",") if v] or \
            ((1, 2) if n >= 16384 else (2, 4))
        warps = [None] + [int(v) for v in args.warps.split(",") if v]
        combos = [(True, False, False)] if args.tma == "store-off" else \
            [(lt, st, ib) for lt, st in TMA for ib in (False, True)
             if not ib or (lt, st) in ((True, True), (False, False))]
        for what in args.only.split(","):
            kern, rest, ref, vendor = {
                "copy": (copy_rows, (), x.float(), lambda: y.copy_(x)),
                "softmax": (softmax_rows, (), torch.softmax(x.float(), 1),
                            lambda: torch.softmax(x, 1)),
                "rms": (rms_rows, (w, 1e-6), F.rms_norm(x.float(), (n,), w.float(), 1e-6),
                        lambda: F.rms_norm(x, (n,), w, 1e-6)),
                "ln": (ln_rows, (w, b, 1e-5),
                       F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5),
                       lambda: F.layer_norm(x, (n,), w, b, 1e-5)),
                "ln_fused": (ln_fused, (w, b, 1e-5),
                             F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5),
                             lambda: F.layer_norm(x, (n,), w, b, 1e-5)),
                "rms_bias": (rms_bias, (w, b, 1e-6),
                             F.rms_norm(x.float(), (n,), w.float(), 1e-6) + b.float(),
                             lambda: F.rms_norm(x, (n,), w, 1e-6)),
                "ln_no_bias": (ln_no_bias, (w, 1e-5),
                               F.layer_norm(x.float(), (n,), w.float(), None, 1e-5),
                               lambda: F.layer_norm(x, (n,), w, None, 1e-5))}[what]
            cands = [(f"{bm}x{n} occ{o} warps={w} load_tma={lt} store_tma={st} inbounds={ib}",
                      lambda bm=bm, o=o, w=w, lt=lt, st=st, ib=ib, kern=kern, rest=rest: kern(
                          tile.partition(y, (bm, n)), x, *rest, lt, st, ib)
                      .compile_options(opts(o, w)))
                     for bm in bms for o in occs for w in warps for lt, st, ib in combos]
            if what == "softmax" and args.persistent and n <= 16384:
                cands += [(f"persistent ROWS={r} occ{o} lat{lat} load_tma={lt} store_tma={st}",
                           lambda r=r, o=o, lat=lat, lt=lt, st=st: softmax_persistent(
                               tile.atomic(y), x, r, n, lat, lt, st)
                           .grid((sms * o, 1, 1)).compile_options(opts(o)))
                          for r in (1, 2) if r * n <= 16384 for o in (2, 4) for lat in (2, 4)
                          for lt, st in TMA]
            precompile(cands)
            v_ms = timer.ms(vendor)
            vr = gb / v_ms * 1e3
            print(f"== {what} {m}x{n} fp16: torch {vr:.0f} GB/s ({vr / roof:.2f} of roofline)",
                  flush=True)
            time_candidates(cands, s, timer, y, lambda ref=ref: (y.float() - ref).abs().max()
                            .item(), 2e-2, lambda ms: gb / ms * 1e3,
                            lambda r, err, vr=vr: f"{r:.0f} GB/s ({r / roof:.2f} of roofline, "
                                                  f"{r / vr:.2f}x torch)", indent="  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
