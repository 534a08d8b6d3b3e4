"""Row reductions on rows the vendor rows leave below 0.9 of the copy roofline (issue 26):
softmax / LayerNorm / RMSNorm on 2048 rows of 32K (fp16), softmax on 65536 rows of 1K. GPU only.

    python benchmarks/explore_norms.py [--only softmax32k,ln32k,rms32k,softmax1k]

Candidates: a whole 32K row per block (one tile), the persistent form at WIDTH 32768, the
chunked two-pass form at CHUNK 4096-16384, and for 1K rows more rows per block. (Latency hints
on the chunked forms' loads were tried on 2026-11-27: within 1-3%.) Each is checked against torch before it is timed (median of single runs, L2
flushed); GB/s counts one read and one write of x, as the copy roofline does.
"""
import argparse
import dataclasses
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples")]

import tilejit as tile  # noqa: E402

import layernorm as LN  # noqa: E402
import rmsnorm as RN  # noqa: E402
import softmax as SM  # noqa: E402


def opts(occ):
    return tile.CompileOptions(occupancy=occ)


def with_warps(launch, warps):
    """``launch`` with num_worker_warps=warps added to its compile options."""
    base = launch._options or launch.kernel.options
    return launch.compile_options(dataclasses.replace(base, num_worker_warps=warps))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warps", default="",
                    help="also each candidate with these num_worker_warps values, e.g. 8")
    ap.add_argument("--only", default="softmax32k,ln32k,rms32k,softmax1k",
                    help="also softmax4k, ln4k, rms4k, softmax16k (rows of 4K / 16K: whole "
                         "rows per block and the persistent form over occupancy and latency)")
    args = ap.parse_args()
    from harness import row_probe, time_candidates
    probe = row_probe("explore_norms")
    if probe is None:
        return 0
    torch, timer, s, roof = probe
    F = torch.nn.functional
    for case in args.only.split(","):
        m, n = {"softmax1k": (65536, 1024), "softmax16k": (4096, 16384)}.get(
            case, (16384, 4096) if case.endswith("4k") else (2048, 32768))
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        w = torch.randn(n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        gb = 2 * x.numel() * 2 / 1e9
        cands = []
        if n in (4096, 16384):
            kern = {"softmax": (SM.softmax, SM.softmax_persistent, ()),
                    "ln": (LN.layernorm_fwd, LN.layernorm_fwd_persistent,
                           (w, b, tile.atomic(mean), tile.atomic(rstd), 1e-5)),
                    "rms": (RN.rmsnorm.kernel, RN.rmsnorm_persistent, (w, 1e-6))}
            name = case[:-3] if case.endswith("16k") else case[:-2]
            rows_k, pers_k, rest = kern[name]
            if name == "softmax":
                ref = torch.softmax(x.float(), 1)
                vendor = lambda: torch.softmax(x, 1)  # noqa: E731
            elif name == "ln":
                ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
                vendor = lambda: F.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
            else:
                ref = F.rms_norm(x.float(), (n,), w.float(), 1e-6)
                vendor = lambda: F.rms_norm(x, (n,), w, 1e-6)  # noqa: E731
            for bm in (1, 2, 4, 8):
                for occ in (2, 4, 8):
                    if bm * n <= 32768:
                        cands.append((f"rows {bm}x{n} occ{occ}", lambda bm=bm, o=occ: rows_k(
                            tile.partition(y, (bm, n)), x, *rest).compile_options(opts(o))))
            for r in (1, 2, 4):
                for occ in (2, 4, 8):
                    for lat in (2, 4, 8):
                        if r * n <= 16384:
                            cands.append((f"persistent ROWS={r} occ{occ} latency={lat}",
                                          lambda r=r, o=occ, lat=lat: pers_k(
                                              tile.atomic(y), x, *rest, r, n, lat)
                                          .grid((132 * o, 1, 1)).compile_options(opts(o))))
        elif case.startswith("softmax"):
            ref = torch.softmax(x.float(), 1)
            vendor = lambda: torch.softmax(x, 1)  # noqa: E731
            if n == 1024:
                for bm in (8, 16, 32):
                    for occ in (1, 2, 4):
                        cands.append((f"rows {bm}x1024 occ{occ}", lambda bm=bm, o=occ: SM.softmax(
                            tile.partition(y, (bm, 1024)), x).compile_options(opts(o))))
                for r in (4, 8, 16):
                    for occ in (4, 8):
                        cands.append((f"persistent ROWS={r} occ{occ}", lambda r=r, o=occ:
                                      SM.softmax_persistent(tile.atomic(y), x, r, 1024, 4)
                                      .grid((132 * o, 1, 1)).compile_options(opts(o))))
            else:
                for occ in (1, 2):
                    cands.append((f"rows 1x32768 occ{occ}", lambda o=occ: SM.softmax(
                        tile.partition(y, (1, 32768)), x).compile_options(opts(o))))
                    cands.append((f"persistent WIDTH=32768 occ{occ}", lambda o=occ:
                                  SM.softmax_persistent(tile.atomic(y), x, 1, 32768, 4)
                                  .grid((132 * o, 1, 1)).compile_options(opts(o))))
                for ch in (4096, 8192, 16384):
                    for occ in (1, 2, 4):
                        cands.append((f"chunked CHUNK={ch} occ{occ}", lambda ch=ch, o=occ:
                                      SM.softmax_chunked(tile.atomic(y), x, 1, ch)
                                      .grid((m, 1, 1)).compile_options(opts(o))))
        elif case == "ln32k":
            ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
            vendor = lambda: F.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
            for occ in (1, 2):
                cands.append((f"rows 1x32768 occ{occ}", lambda o=occ: LN.layernorm_fwd(
                    tile.partition(y, (1, 32768)), x, w, b, tile.atomic(mean), tile.atomic(rstd),
                    1e-5).compile_options(opts(o))))
            for ch in (4096, 8192, 16384):
                for occ in (1, 2, 4):
                    cands.append((f"chunked CHUNK={ch} occ{occ}", lambda ch=ch, o=occ:
                                  LN.layernorm_fwd_chunked(tile.atomic(y), x, w, b,
                                                           tile.atomic(mean), tile.atomic(rstd),
                                                           1e-5, 1, ch)
                                  .grid((m, 1, 1)).compile_options(opts(o))))
        else:
            ref = F.rms_norm(x.float(), (n,), w.float(), 1e-6)
            vendor = lambda: F.rms_norm(x, (n,), w, 1e-6)  # noqa: E731
            for occ in (1, 2):
                cands.append((f"rows 1x32768 occ{occ}", lambda o=occ: RN.rmsnorm.kernel(
                    tile.partition(y, (1, 32768)), x, w, 1e-6).compile_options(opts(o))))
            for ch in (4096, 8192, 16384):
                for occ in (1, 2, 4):
                    cands.append((f"chunked CHUNK={ch} occ{occ}", lambda ch=ch, o=occ:
                                  RN.rmsnorm_chunked(tile.atomic(y), x, w, 1e-6, 1, ch)
                                  .grid((m, 1, 1)).compile_options(opts(o))))
        for nw in [int(v) for v in args.warps.split(",") if v]:
            cands += [(f"{label} warps={nw}", lambda mk=mk, nw=nw: with_warps(mk(), nw))
                      for label, mk in list(cands) if "warps=" not in label]
        v_ms = timer.ms(vendor)
        print(f"== {case} {m}x{n} fp16: torch {gb / v_ms * 1e3:.0f} GB/s "
              f"({gb / v_ms * 1e3 / roof:.2f} of roofline)", flush=True)
        time_candidates(cands, s, timer, y, lambda: (y.float() - ref).abs().max().item(), 2e-2,
                        lambda ms: gb / ms * 1e3,
                        lambda r, err: f"{r:.0f} GB/s ({r / roof:.2f} of roofline, "
                                       f"{r / (gb / v_ms * 1e3):.2f}x torch)", indent="  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
