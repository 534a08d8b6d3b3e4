"""The autotuner's default search space (``tile.autotune`` with no ``configs=``) against the config
lists vendor.py times, on the gallery kernels of issue 26, with the vendor in the same run.

    python benchmarks/default_space.py [--only rows,attention,fp8] [--report]

For each row: the default space's pick and the list's best (each tuned cold in this process,
its result checked against torch first, then timed: median of 15 single runs with the L2
flushed), the time the default space took to tune (compiles included), and the vendor (torch's
norms, SDPA's flash backend, ``torch._scaled_mm``). ``--report`` prints every config's time.
At 16K and 32K elements a row the persistent row kernels (vendor.py's best at 32K) are tuned
too, by the default space (ROWS, WIDTH, LATENCY) and by vendor.py's list for them. LayerNorm
takes ``EXACT`` from ``heuristics=`` (``layernorm.exact_rows``: the rows are exactly the tile's
width), as vendor.py's lists set it. Without a GPU or torch it says so and exits 0.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "examples"), os.path.join(HERE, "..")]

import tilejit as tile  # noqa: E402

GROUPS = ("rows", "attention", "fp8")
TOLERANCE = 2e-2        # relative to the largest reference value (fp16 / bf16 / fp8 outputs)


UNITS = {"GB/s": 1e9, "TFLOP/s": 1e12}


def rate_of(work, ms, unit):
    """``work`` (bytes or flops) done in ``ms`` milliseconds, in ``unit``."""
    return work / (ms * 1e-3) / UNITS[unit]


def timed(label, tuners, args, kwargs, out, ref, timer, work, unit, report):
    """Tune each of ``tuners`` cold on ``args``, check it, time its pick; returns {name: rate}."""
    rates = {}
    for name, tuner in tuners:
        t0 = time.perf_counter()
        op = tuner(*args, **kwargs)
        op.sync()
        tune_s = time.perf_counter() - t0
        cfg = tuner.best_config(*args, **kwargs)
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        if not err < TOLERANCE:
            print(f"{label} {name}: MISMATCH (relative error {err:.1e}); not timed", flush=True)
            continue
        p = op.prepare(timer.torch.cuda.current_stream())
        rates[name] = rate_of(work, timer.ms(p.launch), unit)
        p.close()
        print(f"{label} {name}: {rates[name]:.0f} {unit}, error {err:.1e}, tuned in "
              f"{tune_s:.1f} s, {cfg}", flush=True)
        if report:
            print(tuner.tuning_report(), flush=True)
    return rates


def vendor(label, name, fn, timer, work, unit, rates):
    rate = rate_of(work, timer.ms(fn), unit)
    ours = max((r for name, r in rates.items() if name.startswith("default space")),
               default=None)
    ratio = f"; default space's best {ours / rate:.2f}x" if ours else ""
    print(f"{label} {name}: {rate:.0f} {unit}{ratio}", flush=True)


def rows(torch, timer, report):
    import layernorm as LN
    import rmsnorm as RN
    import softmax as SM
    F = torch.nn.functional
    C = tile.Config
    # vendor.py's picks for the gallery's row kernels (H200, 2026-11-28)
    lists = {("softmax", 1024): C(tile=(4, 1024), occupancy=2),
             ("softmax", 16384): C(tile=(1, 16384), occupancy=2),
             ("layernorm", 1024): C(tile=(8, 1024), occupancy=4, ONE_REDUCTION=False),
             ("layernorm", 16384): C(tile=(1, 16384), occupancy=2, num_worker_warps=8),
             ("rmsnorm", 1024): C(tile=(16, 1024), occupancy=2),
             ("rmsnorm", 16384): C(tile=(1, 16384), occupancy=2)}
    persistent = {"softmax": SM.softmax_persistent, "layernorm": LN.layernorm_fwd_persistent,
                  "rmsnorm": RN.rmsnorm_persistent}

    def persistent_list(kind, n):
        """vendor.py's persistent configs for rows of ``n`` (benchmarks/vendor_rows.py)."""
        if n == 32768:
            cfgs = [C(ROWS=1, WIDTH=n, LATENCY=2, occupancy=occ, num_worker_warps=nw)
                    for occ in (1, 2) for nw in (None, 8)]
        else:
            cfgs = [C(ROWS=1, WIDTH=n, LATENCY=4, occupancy=occ) for occ in (2, 4)]
        if kind == "layernorm":
            cfgs += [C(ROWS=1, WIDTH=n, LATENCY=lat, occupancy=occ, num_worker_warps=nw,
                       RELOAD_WB=True) for lat in (2, 4) for occ in (1, 2) for nw in (None, 8)]
        return cfgs

    roof = timer.copy_roofline_gbs()
    print(f"copy roofline {roof:.0f} GB/s", flush=True)
    for kind in ("softmax", "layernorm", "rmsnorm"):
        for n in (1024, 16384, 32768):
            m = (1 << 26) // n
            x = torch.randn(m, n, device="cuda", dtype=torch.float16)
            w = torch.randn(n, device="cuda", dtype=torch.float16)
            b = torch.randn(n, device="cuda", dtype=torch.float16)
            y = torch.empty_like(x)
            mean, rstd = (torch.empty(m, device="cuda") for _ in range(2))
            if kind == "softmax":
                k, args, part = SM.softmax, (y, x), "z"
                ref, vend = torch.softmax(x.float(), 1), lambda: torch.softmax(x, 1)
            elif kind == "layernorm":
                k, part = LN.layernorm_fwd, "y"
                args = (y, x, w, b, tile.atomic(mean), tile.atomic(rstd), 1e-5)
                ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
                vend = lambda: F.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
            else:
                k, args, part = RN.rmsnorm.kernel, (y, x, w, 1e-6), "y"
                ref = F.rms_norm(x.float(), (n,), w.float(), 1e-6)
                vend = lambda: F.rms_norm(x, (n,), w, 1e-6)  # noqa: E731
            # LayerNorm's EXACT (the rows are the tile's width) from the arguments, per call
            heur = {"EXACT": LN.exact_rows} if kind == "layernorm" else None
            tuners = [("default space", tile.autotune(key=["x"], partition=part,
                                                      heuristics=heur)(k))]
            if (kind, n) in lists:
                tuners.append(("the list's pick", tile.autotune(
                    configs=[lists[kind, n]], key=["x"], partition=part, heuristics=heur)(k)))
            label = f"{kind} {m}x{n} fp16"
            rates = timed(label, tuners, args, {}, y, ref, timer, 2 * x.numel() * 2,
                          "GB/s", report)
            if n >= 16384:
                # the persistent row kernel (ROWS, WIDTH, LATENCY from the space), vendor.py's
                # best at 32K, beside vendor.py's list for it
                pk = persistent[kind]
                patom = (tile.atomic(y),) + args[1:]
                ptuners = [("default space, persistent",
                            tile.autotune(key=["x"], grid=SM.rows_grid, heuristics=heur)(pk)),
                           ("the list's pick, persistent", tile.autotune(
                               configs=persistent_list(kind, n), key=["x"],
                               grid=SM.rows_grid, heuristics=heur)(pk))]
                rates.update(timed(label, ptuners, patom, {}, y, ref, timer,
                                   2 * x.numel() * 2, "GB/s", report))
            for name in ("default space", "default space, persistent"):
                if rates.get(name):
                    print(f"{label}: {name} at {rates[name] / roof:.3f} of the copy roofline",
                          flush=True)
            vendor(label, "torch", vend, timer, 2 * x.numel() * 2, "GB/s", rates)


def attention(torch, timer, report):
    import flash_attention as FA
    from vendor_rows import _attention_configs
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for d, causal in ((128, False), (128, True), (64, False)):
        b, h, s = 4, 32, 4096
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        o = torch.empty((b * h, s, d), device="cuda", dtype=torch.float16)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        one, _ = _attention_configs(d, False)
        tuners = [("default space", tile.autotune(key=["q", "k"], partition="o")(FA.attention)),
                  ("the list's pick",
                   tile.autotune(configs=one, key=["q", "k"], partition="o")(FA.attention))]
        qkv = tuple(t.reshape(b * h, s, d) for t in (q, k, v))
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        label = f"attention fp16 B{b} H{h} S{s} D{d} causal={causal}"
        rates = timed(label, tuners, (o.permute(1, 0, 2), *qkv), dict(CAUSAL=causal), o,
                      ref.reshape(o.shape), timer, flops, "TFLOP/s", report)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            vendor(label, "SDPA flash",
                   lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                   timer, flops, "TFLOP/s", rates)


def fp8(torch, timer, report):
    import fp8_matmul as F8
    from matmul import scheduled_grid
    m = 4096
    f8 = torch.float8_e4m3fn
    a8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8)
    b8 = torch.randn(m, m, device="cuda").clamp(-8, 8).to(f8).t()     # column-major
    sa, sb = torch.full((1,), 0.5, device="cuda"), torch.full((1,), 4.0, device="cuda")
    ref = (a8.float() @ b8.float()) * 2.0
    c = torch.empty((m, m), device="cuda", dtype=torch.bfloat16)
    for fast in (True, False):
        label = f"fp8 e4m3 {m}^3 {'fast accumulation' if fast else 'promoted'}"
        tuners = [("default space", tile.autotune(key=["a", "b"], grid=scheduled_grid)(
                      F8.fp8_matmul_scheduled)),
                  ("the list's pick", F8.scheduled(fast))]
        rates = timed(label, tuners, (tile.atomic(c), a8, b8, sa, sb), dict(FAST_ACC=fast), c,
                      ref, timer, 2 * m ** 3, "TFLOP/s", report)
        vendor(label, "torch._scaled_mm",
               lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb,
                                        out_dtype=torch.bfloat16, use_fast_accum=fast),
               timer, 2 * m ** 3, "TFLOP/s", rates)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(GROUPS),
                    help=f"comma-separated subset of {','.join(GROUPS)}")
    ap.add_argument("--report", action="store_true", help="every config's time")
    opts = ap.parse_args(argv)
    only = [g for g in opts.only.split(",") if g]
    unknown = set(only) - set(GROUPS)
    if unknown:
        ap.error(f"unknown group(s) {', '.join(sorted(unknown))}; choose from {', '.join(GROUPS)}")
    from harness import Timer, baseline_torch
    torch = baseline_torch("default_space")
    if torch is None:
        return 0
    timer = Timer(reps=15)
    for group in only:
        {"rows": rows, "attention": attention, "fp8": fp8}[group](torch, timer, opts.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
