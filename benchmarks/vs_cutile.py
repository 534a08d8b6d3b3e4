"""tilejit against cuTile Python, Triton and torch on the same algorithms, in one run on one GPU.

    python benchmarks/vs_cutile.py [--quick] [--only NAME[,NAME...]]

Kernels (``tilejit_kernels.py``, ``cutile_kernels.py``, ``triton_kernels.py``): vector add,
grouped matmul (fp16/bf16, 4096^3/8192^3), row softmax (fp16/f32, 4096x4096/4096x8192;
tilejit's idiomatic ``x.load(z.block, z.shape)`` and the explicit ``(z.block[0], 0)`` form),
LayerNorm forward, batched matmul and RMSNorm forward (the gallery's kernels autotuned), and
flash attention forward (B4 H32 S4096 D128, causal and not, tiles 64x64/128x64/128x128; tilejit
also with its idiomatic source). tilejit launches are prepared (host time excluded), called with
torch tensors; every result is checked against torch before timing. Prints markdown tables for
BENCHMARKS.md. Without a GPU it says so and exits 0; without cuda.tile or triton those columns
are empty.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import tilejit as tile  # noqa: E402

from harness import Table, Timer, check  # noqa: E402


def _triton():
    try:
        import triton_kernels
        return triton_kernels
    except Exception as e:  # noqa: BLE001  (not installed here: measure the rest)
        print(f"Triton not available: {type(e).__name__}: {e}")
        return None


def _try(label, fn):
    """``fn()``, or None with the failure printed (a peer's failure must not stop the run)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        print(f"  {label} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None


def _triton_rate(T, name, launch, out, ref, tol, amount):
    """Triton's figure, or None when Triton fails: one run into a zeroed ``out`` checked against
    ``ref``, then ``amount`` (the table's unit times seconds: TFLOP, GB) per second."""
    def run():
        out.zero_()
        launch()
        check(f"Triton {name}", out, ref, tol)
        return amount / T.ms(launch) * 1e3
    return _try(f"Triton {name}", run)


def _peer():
    try:
        import cutile_kernels
        import cuda.tile as ct
        return ct, cutile_kernels
    except Exception as e:  # noqa: BLE001  (missing package or driver: report, measure the rest)
        print(f"cuTile Python not available: {type(e).__name__}: {e}")
        return None, None


def bench_vector_add(T, K, ct, CK, torch, quick):
    n = 1 << (22 if quick else 26)
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    z = torch.empty_like(x)
    gb = 3 * n * 4 / 1e9
    tab = Table(["tilejit", "cuTile", "torch"], "GB/s", ratios=[("tilejit", "cuTile")])
    s = torch.cuda.current_stream()
    p = K.vector_add(tile.from_dlpack(z).partition((1024,)), tile.from_dlpack(x),
                     tile.from_dlpack(y)).prepare(s)
    p.launch()
    check("vector add", z, x + y, 0)
    tj = gb / T.ms(p.launch) * 1e3
    p.close()
    cu = None
    if ct is not None:
        z.zero_()
        ct.launch(s, (n // 1024,), CK.vector_add, (x, y, z, 1024))
        check("cuTile vector add", z, x + y, 0)
        cu = gb / T.ms(lambda: ct.launch(s, (n // 1024,), CK.vector_add, (x, y, z, 1024))) * 1e3
    th = gb / T.ms(lambda: torch.add(x, y, out=z)) * 1e3
    tab.add(f"vector add f32 2^{n.bit_length() - 1}, tile 1024", tilejit=tj, cuTile=cu, torch=th)
    return tab


def bench_matmul(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit", "cuTile", "cuBLAS", "Triton"], "TFLOP/s",
                ratios=[("tilejit", "cuTile"), ("tilejit", "cuBLAS"), ("tilejit", "Triton")])
    TK = _triton()
    s = torch.cuda.current_stream()
    sizes = (2048,) if quick else (4096, 8192)
    for dt in (torch.float16, torch.bfloat16):
        for m in sizes:
            a = torch.randn(m, m, device="cuda", dtype=dt)
            b = torch.randn(m, m, device="cuda", dtype=dt)
            c = torch.empty(m, m, device="cuda", dtype=dt)
            ref = a.float() @ b.float()
            flops = 2 * m ** 3
            g = (m // 128) ** 2
            op = K.matmul_grouped(tile.atomic(tile.from_dlpack(c)), tile.from_dlpack(a),
                                  tile.from_dlpack(b), 128, 128, 64, 8).grid((g, 1, 1))
            p = op.prepare(s)
            p.launch()
            check("matmul", c, ref, 2e-2)
            tj = flops / T.ms(p.launch) / 1e9
            p.close()
            cu = None
            if ct is not None:
                c.zero_()
                args = (a, b, c, 128, 128, 64, 8)
                ct.launch(s, (g,), CK.matmul_grouped, args)
                check("cuTile matmul", c, ref, 2e-2)
                cu = flops / T.ms(lambda: ct.launch(s, (g,), CK.matmul_grouped, args)) / 1e9
            cb = flops / T.ms(lambda: torch.matmul(a, b, out=c)) / 1e9
            tr = None
            if TK is not None:
                tr = _triton_rate(T, "matmul", lambda: TK.matmul(a, b, c), c, ref, 2e-2,
                                  flops / 1e12)
            name = str(dt).replace("torch.", "")
            tab.add(f"matmul {name} {m}³, 128x128x64 grouped", tilejit=tj, cuTile=cu, cuBLAS=cb,
                    Triton=tr)
    return tab


def _tuned_softmax(K, n):
    """The gallery's softmax (examples/softmax.py: exp2, one reciprocal per row) autotuned over
    rows per block and occupancy."""
    configs = [tile.Config(tile=(bm, n), occupancy=occ) for bm in (1, 2, 4, 8)
               for occ in (1, 2, 4)]
    return tile.autotune(configs=configs, key=["x"], partition="z")(K.softmax_fast)


def bench_softmax(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit", "tilejit explicit", "cuTile", "torch", "Triton", "tilejit autotuned"],
                "GB/s", ratios=[("tilejit", "cuTile"), ("tilejit", "tilejit explicit"),
                                ("tilejit", "torch"), ("tilejit", "Triton"),
                                ("tilejit autotuned", "torch")])
    TK = _triton()
    s = torch.cuda.current_stream()
    shapes = ((1024, 4096),) if quick else ((4096, 4096), (4096, 8192))
    for dt in (torch.float16, torch.float32):
        for (r, n) in shapes:
            x = torch.randn(r, n, device="cuda", dtype=dt)
            z = torch.empty_like(x)
            ref = torch.softmax(x.float(), dim=1)
            gb = 2 * x.numel() * x.element_size() / 1e9
            vals = {}
            for name, kern in (("tilejit", K.softmax_rows),
                               ("tilejit explicit", K.softmax_rows_explicit)):
                z.zero_()
                p = kern(tile.from_dlpack(z).partition((1, n)), tile.from_dlpack(x)).prepare(s)
                p.launch()
                check(name + " softmax", z, ref, 1e-2)
                vals[name] = gb / T.ms(p.launch) * 1e3
                p.close()
            if ct is not None:
                z.zero_()
                ct.launch(s, (r,), CK.softmax_rows, (x, z, n))
                check("cuTile softmax", z, ref, 1e-2)
                vals["cuTile"] = gb / T.ms(lambda: ct.launch(s, (r,), CK.softmax_rows,
                                                             (x, z, n))) * 1e3
            vals["torch"] = gb / T.ms(lambda: torch.softmax(x, dim=1)) * 1e3
            if TK is not None:
                vals["Triton"] = _triton_rate(T, "softmax", lambda: TK.softmax(x, z), z, ref,
                                              1e-2, gb)
            tuned = _tuned_softmax(K, n)
            z.zero_()
            tuned(z, x).sync()
            check("tuned softmax", z, ref, 1e-2)
            best = tuned.best_config(z, x)
            p = tuned.launch_for(best, {"z": z, "x": x}).prepare(s)
            vals["tilejit autotuned"] = gb / T.ms(p.launch) * 1e3
            p.close()
            name = str(dt).replace("torch.", "")
            tab.add(f"softmax {name} {r}x{n}, 1 row/block", note=f"tuned: {best}", **vals)
    return tab


def bench_layer_norm(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit", "cuTile", "torch", "Triton", "tilejit autotuned"], "GB/s",
                ratios=[("tilejit", "cuTile"), ("tilejit", "torch"),
                        ("tilejit autotuned", "torch"), ("tilejit autotuned", "Triton")])
    TK = _triton()
    s = torch.cuda.current_stream()
    r, n = (1024, 4096) if quick else (4096, 8192)
    # "tilejit": cuTile's LayerNorm sample algorithm (TILE_N chunks, x read three times), beside
    # cuTile; "tilejit autotuned": the gallery kernel
    for dt in (torch.float16, torch.float32):
        x = torch.randn(r, n, device="cuda", dtype=dt)
        w = torch.randn(n, device="cuda", dtype=dt)
        b = torch.randn(n, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        mean = torch.empty(r, device="cuda", dtype=torch.float32)
        rstd = torch.empty_like(mean)
        ref = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
        gb = 2 * x.numel() * x.element_size() / 1e9
        f = tile.from_dlpack
        p = K.layer_norm_fwd(tile.atomic(f(y)), f(x), f(w), f(b), tile.atomic(f(mean)),
                             tile.atomic(f(rstd)), 1e-5, 1024).grid((r, 1, 1)).prepare(s)
        p.launch()
        check("layer norm", y, ref, 2e-2)
        vals = {"tilejit": gb / T.ms(p.launch) * 1e3}
        p.close()
        if ct is not None:
            y.zero_()
            args = (x, w, b, y, mean, rstd, 1e-5, 1024)
            ct.launch(s, (r,), CK.layer_norm_fwd, args)
            check("cuTile layer norm", y, ref, 2e-2)
            vals["cuTile"] = gb / T.ms(lambda: ct.launch(s, (r,), CK.layer_norm_fwd, args)) * 1e3
        vals["torch"] = gb / T.ms(lambda: torch.nn.functional.layer_norm(x, (n,), w, b,
                                                                          1e-5)) * 1e3
        if TK is not None:
            vals["Triton"] = _triton_rate(
                T, "layer norm", lambda: TK.layer_norm(x, w, b, y, mean, rstd, 1e-5), y, ref,
                2e-2, gb)
        # the gallery's LayerNorm (examples/layernorm.py): whole rows in one tile, x read once
        tuned = tile.autotune(
            configs=[tile.Config(tile=(bm, n), occupancy=occ) for bm in (1, 2, 4)
                     for occ in (1, 2, 4, 8)], key=["x"], partition="y")(K.layer_norm_rows)
        targs = (y, x, w, b, tile.atomic(f(mean)), tile.atomic(f(rstd)), 1e-5)
        y.zero_()
        tuned(*targs).sync()
        check("tuned layer norm", y, ref, 2e-2)
        bound = dict(zip(["y", "x", "w", "b", "mean", "rstd", "eps"], targs))
        best = tuned.best_config(*targs)
        p = tuned.launch_for(best, bound).prepare(s)
        vals["tilejit autotuned"] = gb / T.ms(p.launch) * 1e3
        p.close()
        name = str(dt).replace("torch.", "")
        tab.add(f"LayerNorm fwd {name} {r}x{n}, TILE_N 1024", note=f"tuned: {best}", **vals)
    return tab


def bench_bmm(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit autotuned", "cuTile", "torch.bmm", "Triton"], "TFLOP/s",
                ratios=[("tilejit autotuned", "torch.bmm"), ("tilejit autotuned", "cuTile"),
                        ("tilejit autotuned", "Triton")])
    TK = _triton()
    configs = [tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, occupancy=occ)
               for (bm, bn, bk) in ((128, 128, 64), (128, 256, 64), (256, 128, 64),
                                    (128, 128, 32), (64, 128, 64))
               for occ in (1, 2)]
    tuned = tile.autotune(configs=configs, key=["a", "b"], grid=K.bmm_grid)(K.batched_matmul)
    shapes = ((8, 1024, 1024, 1024),) if quick else ((16, 2048, 2048, 2048), (64, 1024, 1024, 1024))
    s = torch.cuda.current_stream()
    for dt in (torch.float16, torch.bfloat16):
        for (bt, m, k, n) in shapes:
            a = torch.randn(bt, m, k, device="cuda", dtype=dt)
            b = torch.randn(bt, k, n, device="cuda", dtype=dt)
            c = torch.empty(bt, m, n, device="cuda", dtype=dt)
            ref = torch.bmm(a.float(), b.float())
            out = tile.atomic(tile.from_dlpack(c))
            tuned(out, a, b).sync()
            check("tuned bmm", c, ref, 2e-2)
            best = tuned.best_config(out, a, b)
            p = tuned.launch_for(best, {"c": out, "a": a, "b": b}).prepare(s)
            tf = 2 * bt * m * n * k / 1e12
            vals = {"tilejit autotuned": tf / T.ms(p.launch) * 1e3}
            p.close()
            if ct is not None:
                c.zero_()
                args = (a, b, c, 128, 128, 64)
                g = (bt, m // 128, n // 128)
                ct.launch(s, g, CK.batched_matmul, args)
                check("cuTile bmm", c, ref, 2e-2)
                vals["cuTile"] = tf / T.ms(lambda: ct.launch(s, g, CK.batched_matmul, args)) * 1e3
            vals["torch.bmm"] = tf / T.ms(lambda: torch.bmm(a, b, out=c)) * 1e3
            if TK is not None:
                vals["Triton"] = _triton_rate(T, "bmm", lambda: TK.bmm(a, b, c), c, ref, 2e-2,
                                              tf)
            name = str(dt).replace("torch.", "")
            tab.add(f"bmm {name} {bt}x{m}x{k}x{n}", note=f"tuned: {best}", **vals)
    return tab


def bench_rms_norm(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit autotuned", "torch", "Triton"], "GB/s",
                ratios=[("tilejit autotuned", "torch"), ("tilejit autotuned", "Triton")])
    TK = _triton()
    r, n = (1024, 4096) if quick else (4096, 8192)
    configs = [tile.Config(tile=(bm, n), occupancy=occ) for bm in (1, 2, 4)
               for occ in (1, 2, 4, 8)]
    tuned = tile.autotune(configs=configs, key=["x"], partition="y")(K.rms_norm)
    for dt in (torch.float16, torch.float32):
        x = torch.randn(r, n, device="cuda", dtype=dt)
        w = torch.randn(n, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        ref = torch.nn.functional.rms_norm(x.float(), (n,), w.float(), 1e-6)
        tuned(y, x, w, 1e-6).sync()
        check("tuned rms norm", y, ref, 2e-2)
        best = tuned.best_config(y, x, w, 1e-6)
        p = tuned.launch_for(best, {"y": y, "x": x, "w": w, "eps": 1e-6}).prepare(
            torch.cuda.current_stream())
        gb = 2 * x.numel() * x.element_size() / 1e9
        vals = {"tilejit autotuned": gb / T.ms(p.launch) * 1e3}
        p.close()
        vals["torch"] = gb / T.ms(lambda: torch.nn.functional.rms_norm(x, (n,), w, 1e-6)) * 1e3
        if TK is not None:
            vals["Triton"] = _triton_rate(T, "rms norm", lambda: TK.rms_norm(x, w, y, 1e-6), y,
                                          ref, 2e-2, gb)
        name = str(dt).replace("torch.", "")
        tab.add(f"RMSNorm fwd {name} {r}x{n}", note=f"tuned: {best}", **vals)
    return tab


def bench_attention(T, K, ct, CK, torch, quick):
    tab = Table(["tilejit", "tilejit idiomatic", "cuTile", "Triton", "SDPA"], "TFLOP/s",
                ratios=[("tilejit", "cuTile"), ("tilejit idiomatic", "cuTile"),
                        ("tilejit", "Triton"), ("tilejit", "SDPA")])
    TK = _triton()
    s = torch.cuda.current_stream()
    B, H, S, D = (1, 8, 1024, 128) if quick else (4, 32, 4096, 128)
    q4, k4, v4 = [torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3)]
    q, k, v = [t.reshape(B * H, S, D) for t in (q4, k4, v4)]
    o = torch.empty_like(q)
    f = tile.from_dlpack
    scale = 1.0 / math.sqrt(D)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)
        ref = ref.reshape(B * H, S, D)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        sd = T.ms(lambda: torch.nn.functional.scaled_dot_product_attention(
            q4, k4, v4, is_causal=causal))
        for tm, tn in ((64, 64), (128, 64), (128, 128)):
            vals = {"SDPA": flops / sd / 1e9}
            o.zero_()
            p = K.fmha(tile.atomic(f(o)), f(q), f(k), f(v), scale, D, tm, tn, causal) \
                .grid((S // tm, B * H, 1)).prepare(s)
            p.launch()
            check("fmha", o, ref, 2e-2)
            vals["tilejit"] = flops / T.ms(p.launch) / 1e9
            p.close()
            o.zero_()
            p = K.attention(f(o).permute(1, 0, 2).partition((tm, 1, D)), f(q), f(k), f(v), tn,
                            causal).prepare(s)
            p.launch()
            check("attention", o, ref, 2e-2)
            vals["tilejit idiomatic"] = flops / T.ms(p.launch) / 1e9
            p.close()
            if ct is not None:
                o.zero_()
                args = (q, k, v, o, scale, D, tm, tn, causal)
                ct.launch(s, (S // tm, B * H, 1), CK.fmha, args)
                check("cuTile fmha", o, ref, 2e-2)
                vals["cuTile"] = flops / T.ms(lambda: ct.launch(s, (S // tm, B * H, 1), CK.fmha,
                                                                args)) / 1e9
            if TK is not None:
                vals["Triton"] = _triton_rate(
                    T, "attention", lambda: TK.attention(q, k, v, o, scale, causal, tm, tn), o,
                    ref, 2e-2, flops / 1e12)
            tab.add(f"attention fp16 B{B} H{H} S{S} D{D} {'causal' if causal else 'non-causal'}"
                    f", {tm}x{tn}", **vals)
    return tab


BENCHES = {"vector_add": bench_vector_add, "matmul": bench_matmul, "softmax": bench_softmax,
           "layer_norm": bench_layer_norm, "attention": bench_attention, "bmm": bench_bmm,
           "rms_norm": bench_rms_norm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(BENCHES))
    args = ap.parse_args(argv)
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"vs_cutile: no GPU ({backend.reason()}); nothing to measure")
        return 0
    import torch
    import tilejit_kernels as K
    ct, CK = _peer()
    T = Timer(reps=5 if args.quick else 20)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"cuda.tile {getattr(ct, '__version__', 'absent')}; date {time.strftime('%Y-%m-%d')}; "
          f"median of {T.reps} runs, L2 flushed; copy roofline {T.copy_roofline_gbs():.0f} GB/s")
    names = [n for n in args.only.split(",") if n] or list(BENCHES)
    out = []
    for n in names:
        print(f"--- {n}", flush=True)
        out.append(BENCHES[n](T, K, ct, CK, torch, args.quick).markdown())
    print("\n\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
