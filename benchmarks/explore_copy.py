"""The copy ceiling of row kernels (issue 26): how close a tilejit copy of a 128 MB fp16 tensor
comes to torch's copy and to the copy roofline, over the ways a tile program can move it.
GPU only.

    python benchmarks/explore_copy.py [--shapes 65536x1024,16384x4096]

Forms: one (BM, N) tile of whole rows per block (what the row kernels do); a persistent grid
looping over row tiles with a latency hint on the load (tileiras may then keep several loads in
flight); the tensor seen flat, in 1D tiles, in a persistent loop or one tile a block (as torch's
copy covers it). The 2D forms load and store each through the TMA unit or from/to registers; 1D
tiles take no TMA either way (tileiras 13.4: no TMA instruction in their SASS).
GB/s counts one read and one write, as the roofline does.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE]

import tilejit as tile  # noqa: E402

C = tile.Constant


@tile.entry
def copy_rows(z, x, STORE_TMA: C[bool], LOAD_TMA: C[bool] = True):
    z.store(x.load(z.block, z.shape, allow_tma=LOAD_TMA), allow_tma=STORE_TMA)


@tile.entry
def copy_persistent(z, x, ROWS: C[int], WIDTH: C[int], LATENCY: C[int], STORE_TMA: C[bool],
                    LOAD_TMA: C[bool] = True):
    out = z.partition((ROWS, WIDTH))
    for r in range(tile.bid(0), tile.cdiv(x.shape[0], ROWS), tile.num_blocks(0)):
        tile.store(out, (r, 0), x.load((r, 0), (ROWS, WIDTH), latency=LATENCY,
                                       allow_tma=LOAD_TMA),
                   allow_tma=STORE_TMA)


@tile.entry
def copy_flat(z, x, TILE: C[int], LATENCY: C[int]):
    out = z.partition((TILE,))
    for i in range(tile.bid(0), tile.cdiv(x.shape[0], TILE), tile.num_blocks(0)):
        tile.store(out, (i,), x.load((i,), (TILE,), latency=LATENCY))


@tile.entry
def copy_blocks(z, x):
    """One flat tile a block (no loop): the grid covers the tensor, as torch's copy does."""
    z.store(x.load(z.block, z.shape))


def opts(occ):
    return tile.CompileOptions(occupancy=occ)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="65536x1024,16384x4096")
    args = ap.parse_args()
    from harness import precompile, row_probe, time_candidates
    probe = row_probe("explore_copy")
    if probe is None:
        return 0
    torch, timer, s, roof = probe
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for shape in args.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        gb = 2 * x.numel() * 2 / 1e9
        xf, yf = x.view(-1), y.view(-1)
        cands = []
        both = (True, False)
        for bm in (4, 8, 16):
            for occ in (2, 4):
                for st in both:
                    for ld in both:
                        cands.append((f"rows {bm}x{n} occ{occ} load_tma={ld} store_tma={st}",
                                      lambda bm=bm, occ=occ, st=st, ld=ld: copy_rows(
                                          tile.partition(y, (bm, n)), x, st, ld)
                                      .compile_options(opts(occ))))
        for rows in (1, 2, 4, 8):
            if rows * n > 16384:
                continue
            for lat in (2, 4):
                for occ in (1, 2, 4):
                    for st in both:
                        for ld in both:
                            cands.append((f"persistent {rows}x{n} lat{lat} occ{occ} "
                                          f"load_tma={ld} store_tma={st}",
                                          lambda r=rows, lat=lat, occ=occ, st=st, ld=ld:
                                          copy_persistent(tile.atomic(y), x, r, n, lat, st, ld)
                                          .grid((sms * occ, 1, 1)).compile_options(opts(occ))))
        for t in (4096, 8192, 16384):
            for lat in (2, 4):
                for occ in (2, 4):
                    cands.append((f"flat {t} lat{lat} occ{occ}",
                                  lambda t=t, lat=lat, occ=occ: copy_flat(
                                      tile.atomic(yf), xf, t, lat)
                                  .grid((sms * occ, 1, 1)).compile_options(opts(occ))))
        for t in (1024, 2048, 4096, 8192):
            for occ in (4, 8):
                cands.append((f"blocks {t} occ{occ}",
                              lambda t=t, occ=occ: copy_blocks(tile.partition(yf, (t,)), xf)
                              .compile_options(opts(occ))))
        precompile(cands)
        v_ms = timer.ms(lambda: y.copy_(x))
        vr = gb / v_ms * 1e3
        e_ms = timer.ms(lambda: torch.mul(x, 1.0, out=y))
        er = gb / e_ms * 1e3
        print(f"== copy {m}x{n} fp16: torch {vr:.0f} GB/s ({vr / roof:.2f} of roofline); "
              f"torch.mul(x, 1.0, out=y), an elementwise kernel, {er:.0f} GB/s "
              f"({er / roof:.2f})", flush=True)
        time_candidates(cands, s, timer, y, lambda: (y.float() - x.float()).abs().max().item(),
                        1e-6, lambda ms: gb / ms * 1e3,
                        lambda r, err, vr=vr: f"{r:.0f} GB/s ({r / roof:.2f} of roofline, "
                                              f"{r / vr:.2f}x torch)", indent="  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
