"""Triton's tutorials 01-09 in tilejit (examples/triton_tutorials/) against Triton, one GPU run.

    python benchmarks/triton_tutorials.py [--only t01,t05] [--reps 20]
    python benchmarks/triton_tutorials.py --rehearse     # no GPU: the tilejit side, tiny, simulated

Each row runs the tilejit kernel of a tutorial and a Triton version of it (ours, following the
tutorial's algorithm: benchmarks/triton_kernels.py and triton_tutorial_kernels.py), checks both
results against torch, then times both (median of ``--reps`` runs, the L2 flushed before each;
tilejit launches prepared, host time excluded). Fixed tile configs on both sides, the tutorials'
own where they give one. Prints a markdown table (tilejit, Triton, tilejit/Triton: higher is
faster) and, with ``$OUT`` set, writes ``$OUT/triton_tutorials.json``. Without a GPU it says so
and exits 0; ``--rehearse`` runs every row's tilejit side on the simulator at tiny sizes, checked
against CPU torch (Triton needs a GPU: its column stays empty).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE, os.path.join(HERE, "..", "examples"),
                os.path.join(HERE, "..", "examples", "triton_tutorials")]

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402

ROWS = ("t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09")


class Bench:
    """Runs, checks and times one tutorial's two sides through vendor.Env (torch CUDA tensors on
    the GPU, simulator tensors with CPU torch references in a rehearsal)."""

    def __init__(self, env, tk, tt):
        self.env, self.tk, self.tt = env, tk, tt          # tk/tt: Triton kernels (None: rehearse)
        self.torch = env.torch
        self.results = []

    def check(self, what, got, ref, tol):
        from harness import check
        check(what, got.float().cpu(), ref.float().cpu(), tol)

    def zero(self, t):
        """Zero an output buffer (a torch tensor on the GPU, a tilejit tensor simulated)."""
        if self.env.gpu:
            t.zero_()
        else:
            api.fill(t, 0).sync()

    def row(self, tutorial, label, unit, amount, make, check, triton=None, triton_check=None,
            before=None):
        """``make()``: a vendor_rows.Variant of the tilejit launches; ``before``: work both sides
        redo on every run (zeroing buffers the kernels accumulate into)."""
        env = self.env
        v = make()
        try:
            run = (lambda: (before(), v())) if before else v
            run()
            env.sync()
            check()
            tj_ms = env.ms(run)
        finally:
            v.close()
        tr_ms = None
        if triton is not None:
            run = (lambda: (before(), triton())) if before else triton
            run()
            env.sync()
            triton_check()
            tr_ms = env.ms(run)
        rate = lambda ms: amount / ms * 1e3 if ms else None  # noqa: E731
        r = dict(tutorial=tutorial, row=label, unit=unit, tilejit=rate(tj_ms),
                 triton=rate(tr_ms), tilejit_ms=tj_ms, triton_ms=tr_ms, config=v.config)
        r["ratio"] = r["tilejit"] / r["triton"] if r["triton"] else None
        self.results.append(r)
        print(f"  {tutorial} {label}: tilejit {r['tilejit']:.1f} {unit}" +
              (f", Triton {r['triton']:.1f} {unit}, {r['ratio']:.2f}x" if r["triton"] else ""),
              flush=True)


def _variant(b, label, build):
    from vendor_rows import composite
    return composite(b.env, "tilejit", label, build)


def t01(b):
    import t01_vector_add as T
    env, torch = b.env, b.torch
    n = env.size(1 << 26, 5003)
    x, y = (env.randn(n, dtype=torch.float32) for _ in range(2))
    z, zt = env.empty((n,), torch.float32), torch.empty_like(x)
    tx, ty = env.tj(x), env.tj(y)
    b.row("t01 vector add", f"float32 n={n}", "GB/s", 12 * n / 1e9,
          _variant(b, "block 1024", lambda: [T.add(tile.partition(z, (T.BLOCK,)), tx, ty)]),
          lambda: b.check("t01 tilejit", env.read(z), x + y, 1e-6),
          b.tk and (lambda: b.tt.add(x, y, zt)), lambda: b.check("t01 triton", zt, x + y, 1e-6))


def t02(b):
    import softmax as SM
    from vendor_rows import tuned
    env, torch = b.env, b.torch
    m, n = env.size((4096, 8192), (12, 300))
    x = env.randn(m, n, dtype=torch.float32)
    z, zt, tx = env.empty((m, n), torch.float32), torch.empty_like(x), env.tj(x)
    ref = torch.softmax(x, dim=1)
    b.row("t02 fused softmax", f"float32 {m}x{n}", "GB/s", 8 * m * n / 1e9,
          tuned(env, "rows", SM.make_softmax(n), z, tx),
          lambda: b.check("t02 tilejit", env.read(z), ref, 1e-5),
          b.tk and (lambda: b.tk.softmax(x, zt)), lambda: b.check("t02 triton", zt, ref, 1e-5))


def _matmul_inputs(b, m, k, n):
    env, torch = b.env, b.torch
    a, w = env.randn(m, k, scale=0.1), env.randn(k, n, scale=0.1)
    return a, w, env.tj(a), env.tj(w), (a.float() @ w.float())


def t03(b):
    import t03_matrix_multiplication as T
    env, torch = b.env, b.torch
    s = env.size(4096, 64)
    (bm, bn, bk), group = env.size(((128, 128, 64), 8), ((32, 32, 32), 2))
    a, w, ta, tw, ref = _matmul_inputs(b, s, s, s)
    c, ct = env.empty((s, s), torch.float16), torch.empty((s, s), dtype=torch.float16,
                                                          device=env.device)
    grid = (tile.cdiv(s, bm) * tile.cdiv(s, bn), 1, 1)
    b.row("t03 matmul", f"float16 {s}^3", "TFLOP/s", 2 * s ** 3 / 1e12,
          _variant(b, f"{bm}x{bn}x{bk} group {group}", lambda: [T.matmul_grouped(
              tile.atomic(c), ta, tw, bm, bn, bk, group, False).grid(grid)]),
          lambda: b.check("t03 tilejit", env.read(c), ref, 1e-2),
          b.tk and (lambda: b.tk.matmul(a, w, ct, BM=bm, BN=bn, BK=bk, GROUP=group)),
          lambda: b.check("t03 triton", ct, ref, 1e-2))


def _dropout_check(b, what, out, x, p, mask=None):
    torch = b.torch
    out, x = out.float().cpu(), x.float().cpu()
    kept = out != 0
    frac = kept.float().mean().item()
    if abs(frac - (1 - p)) > 0.05:
        raise AssertionError(f"{what}: kept {frac:.3f} of the elements, expected {1 - p}")
    b.check(what, out, torch.where(kept, x / (1 - p), torch.zeros_like(x)), 1e-6)
    # an element of x that is exactly 0 reads as dropped (torch.randn gives a few in 2^26)
    if mask is not None and not torch.equal(kept, mask & (x != 0)):
        raise AssertionError(f"{what}: the mask is not rand(seed, offsets) > p")


def t04(b):
    import t04_low_memory_dropout as T
    env, torch = b.env, b.torch
    n, p, seed = env.size(1 << 26, 5003), 0.5, 123
    x = env.randn(n, dtype=torch.float32)
    z, zt, tx = env.empty((n,), torch.float32), torch.empty_like(x), env.tj(x)
    mask = torch.from_numpy(api.rand((n,), seed=seed).sync().to_numpy() > p)
    b.row("t04 seeded dropout", f"float32 n={n} p={p}", "GB/s", 8 * n / 1e9,
          _variant(b, "block 1024", lambda: [T.seeded_dropout(tile.partition(z, (T.BLOCK,)), tx,
                                                              p, seed)]),
          lambda: _dropout_check(b, "t04 tilejit", env.read(z), x, p, mask),
          b.tk and (lambda: b.tt.seeded_dropout(x, zt, p, seed)),
          lambda: _dropout_check(b, "t04 triton", zt, x, p))


def t05(b):
    for dtype, tol in ((b.torch.float16, 1e-2), (b.torch.float32, 1e-4)):   # the tutorial's fp16
        _t05(b, dtype, tol)


def _t05(b, dt, tol):
    """Forward and backward rows in ``dt`` (x, w, b, dy, y, dx, dw, db; mean, rstd and the
    partial dw/db sums float32 on both sides), checked against torch in float32."""
    import layernorm as LN
    env, torch = b.env, b.torch
    m, n = env.size((4096, 8192), (16, 300))
    group, bm, eps = env.size(64, 4), 4, 1e-5
    width = 1 << (n - 1).bit_length()
    f32, name = torch.float32, str(dt).replace("torch.", "")
    x, dy = env.randn(m, n, dtype=dt), env.randn(m, n, dtype=dt, scale=0.1)
    w, bias = env.randn(n, dtype=dt), env.randn(n, dtype=dt)
    xr, wr, br = (t.to(f32, copy=True).requires_grad_() for t in (x, w, bias))
    yr = torch.nn.functional.layer_norm(xr, (n,), wr, br, eps)
    yr.backward(dy.float())
    tx, tw, tb, tdy = (env.tj(t) for t in (x, w, bias, dy))
    y, mean, rstd = env.empty((m, n), dt), env.empty((m,), f32), env.empty((m,), f32)
    es = x.element_size()
    if b.tk:                                              # Triton's outputs (its own mean/rstd)
        yt = torch.empty_like(x)
        mt, rt = (torch.empty((m,), dtype=f32, device=env.device) for _ in range(2))
    b.row("t05 layer norm", f"forward {name} {m}x{n}", "GB/s", 2 * es * m * n / 1e9,
          _variant(b, f"rows {bm}", lambda: [LN.layernorm_fwd(
              tile.partition(y, (bm, width)), tx, tw, tb, tile.atomic(mean), tile.atomic(rstd),
              eps)]),
          lambda: b.check("t05 forward tilejit", env.read(y), yr.detach(), tol),
          b.tk and (lambda: b.tk.layer_norm(x, w, bias, yt, mt, rt, eps)),
          lambda: b.check("t05 forward triton", yt, yr.detach(), tol))
    dx, dw, db = env.empty((m, n), dt), env.empty((n,), dt), env.empty((n,), dt)
    parts = [env.empty((group, n), f32) for _ in range(2)]
    locks = env.empty((group,), torch.int32)
    b.zero(locks)

    def build():
        return [LN.layernorm_bwd(tile.partition(dx, (bm, width)), tx, tw, tdy, mean, rstd,
                                 tile.atomic(parts[0]), tile.atomic(parts[1]),
                                 tile.atomic(locks)),
                LN.column_sum(tile.partition(dw, (256,)), parts[0], 32),
                LN.column_sum(tile.partition(db, (256,)), parts[1], 32)]

    def check_tj():
        for what, got, ref in (("dx", dx, xr.grad), ("dw", dw, wr.grad), ("db", db, br.grad)):
            b.check(f"t05 backward tilejit {what}", env.read(got), ref, tol)

    def check_tr():
        for what, got, ref in (("dx", dxt, xr.grad), ("dw", dwt, wr.grad), ("db", dbt, br.grad)):
            b.check(f"t05 backward triton {what}", got, ref, tol)
    if b.tk:
        dxt, dwt, dbt = torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)
    b.row("t05 layer norm", f"backward {name} {m}x{n} (locked dw/db, {group} groups)", "GB/s",
          3 * es * m * n / 1e9, _variant(b, f"rows {bm}", build), check_tj,
          b.tk and (lambda: b.tt.layer_norm_bwd(x, w, dy, mt, rt, dxt, dwt, dbt, group)),
          check_tr, before=lambda: [b.zero(t) for t in parts])


def t06(b):
    import flash_attention as FA
    env, torch = b.env, b.torch
    bh, s, d = env.size((128, 4096, 64), (2, 128, 32))
    bm, bn = env.size((128, 64), (64, 32))
    q, k, v = (env.randn(bh, s, d) for _ in range(3))
    tq, tk_, tv = (env.tj(t) for t in (q, k, v))
    qf = (lambda t: t) if env.gpu else (lambda t: t.float())   # CPU SDPA: float32
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(qf(q), qf(k), qf(v),
                                                               is_causal=causal)
        o, ot = env.empty((bh, s, d), torch.float16), torch.empty_like(q)
        flops = 4 * bh * s * s * d * (0.5 if causal else 1.0)
        b.row("t06 fused attention", f"forward float16 BH={bh} S={s} D={d}"
              f"{' causal' if causal else ''}", "TFLOP/s", flops / 1e12,
              _variant(b, f"{bm}x{bn}", lambda: [FA.attention(
                  tile.partition(o.permute(1, 0, 2), (bm, 1, d)), tq, tk_, tv, bn, causal)]),
              lambda: b.check("t06 tilejit", env.read(o), ref, 1e-2),
              b.tk and (lambda: b.tk.attention(q, k, v, ot, d ** -0.5, causal, BM=bm, BN=bn)),
              lambda: b.check("t06 triton", ot, ref, 1e-2))
    _t06_backward(b, q, k, v, bm, bn)
    _t06_fp8(b, q, k, v, bm, bn)


def _t06_backward(b, q, k, v, bm, bn):
    """The tutorial's backward row: causal only (as there), FLOPs 2.5x the forward's; both sides
    run their own forward (untimed) for O and the log2-sum-exp, then time dQ, dK, dV (delta
    included) against torch autograd of SDPA."""
    import attention_backward as AB
    env, torch = b.env, b.torch
    bh, s, d = q.shape
    do = env.randn(bh, s, d)
    qf = (lambda t: t) if env.gpu else (lambda t: t.float())
    qg, kg, vg = (qf(t).detach().clone().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
    refs = torch.autograd.grad(out, (qg, kg, vg), qf(do))
    tq, tk_, tv, tdo = (env.tj(t) for t in (q, k, v, do))
    o = env.empty((bh, s, d), torch.float16)
    lse, delta = env.empty((bh, s), torch.float32), env.empty((bh, s), torch.float32)
    fwd = env.prepare(AB.forward(o, lse, tq, tk_, tv, bm, bn, True))
    fwd.launch()
    env.sync()
    fwd.close()
    b.check("t06 backward's forward tilejit", env.read(o), out.detach(), 1e-2)
    grads = [env.empty((bh, s, d), torch.float16) for _ in range(3)]
    # dQ blocks (BM, BN), dK/dV blocks (K/V rows, query rows): the vendor rows' best at D=128
    tiles = env.size(((64, 64), (64, 128)), ((64, 32), (32, 64)))

    def build():
        return [AB.attention_bwd_delta(tile.partition(delta, (1, 64)), o, tdo, d),
                AB.attention_bwd_dkdv(tile.partition(grads[1].permute(1, 0, 2),
                                                     (tiles[1][0], 1, d)),
                                      tile.partition(grads[2].permute(1, 0, 2),
                                                     (tiles[1][0], 1, d)),
                                      tq, tk_, tv, tdo, lse, delta, tiles[1][1], True),
                AB.attention_bwd_dq(tile.partition(grads[0].permute(1, 0, 2),
                                                   (tiles[0][0], 1, d)),
                                    tq, tk_, tv, tdo, lse, delta, tiles[0][1], True)]

    def checker(what, outs, read):
        def check():
            for name, got, ref in zip(("dq", "dk", "dv"), outs, refs):
                b.check(f"{what} {name}", read(got), ref, 2e-2)
        return check
    if b.tk:
        ot, mt = torch.empty_like(q), torch.empty((bh, s), dtype=torch.float32,
                                                  device=env.device)
        b.tk.attention(q, k, v, ot, d ** -0.5, True, BM=bm, BN=bn, M=mt)
        b.check("t06 backward's forward triton", ot, out.detach(), 1e-2)
        gt = [torch.empty_like(q) for _ in range(3)]
    flops = 2.5 * 4 * bh * s * s * d * 0.5
    b.row("t06 fused attention", f"backward float16 BH={bh} S={s} D={d} causal", "TFLOP/s",
          flops / 1e12,
          _variant(b, "dq {}x{}, dkdv {}x{}".format(*tiles[0], *tiles[1]), build),
          checker("t06 backward tilejit", grads, env.read),
          b.tk and (lambda: b.tt.attention_bwd(q, k, v, ot, do, mt, *gt, d ** -0.5)),
          b.tk and checker("t06 backward triton", gt, lambda t: t))


def _fp8_check(what, got, ref):
    """e5m2 outputs: P rounded to e5m2 for P @ V and the output rounded again (up to 1/8 of
    each value) leave ~5% RMS; a wrong mask or scale is off by far more."""
    got, ref = got.float().cpu(), ref.float().cpu()
    rms = ((got - ref).pow(2).mean() / ref.pow(2).mean()).sqrt().item()
    worst = ((got - ref).abs().max() / ref.abs().max()).item()
    if not (rms <= 0.12 and worst <= 0.3):
        raise AssertionError(f"{what}: relative error RMS {rms:.3g} (max 0.12), largest "
                             f"{worst:.3g} (max 0.3)")


def _t06_fp8(b, q, k, v, bm, bn):
    """The tutorial's fp8 forward rows: q, k, v and the output in float8_e5m2, V stored
    transposed (S contiguous) as the tutorial does; checked against SDPA of the same e5m2
    values."""
    import flash_attention as FA
    env, torch = b.env, b.torch
    bh, s, d = q.shape
    e5m2 = torch.float8_e5m2
    q8, k8 = q.to(e5m2), k.to(e5m2)
    v8 = v.transpose(1, 2).contiguous().to(e5m2).transpose(1, 2)
    tq, tk_, tv = (env.tj(t) for t in (q8, k8, v8))
    up = (lambda t: t.half()) if env.gpu else (lambda t: t.float())   # e5m2 fits fp16
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(up(q8), up(k8), up(v8),
                                                               is_causal=causal)
        o, ot = env.empty((bh, s, d), e5m2), torch.empty_like(q8)
        flops = 4 * bh * s * s * d * (0.5 if causal else 1.0)
        b.row("t06 fused attention", f"forward float8_e5m2 BH={bh} S={s} D={d}"
              f"{' causal' if causal else ''}", "TFLOP/s", flops / 1e12,
              _variant(b, f"{bm}x{bn}", lambda: [FA.attention(
                  tile.partition(o.permute(1, 0, 2), (bm, 1, d)), tq, tk_, tv, bn, causal)]),
              lambda: _fp8_check("t06 fp8 tilejit", env.read(o), ref),
              b.tk and (lambda: b.tk.attention(q8, k8, v8, ot, d ** -0.5, causal, BM=bm,
                                               BN=bn)),
              lambda: _fp8_check("t06 fp8 triton", ot, ref))


def t07(b):
    import t07_libdevice as T
    env, torch = b.env, b.torch
    n = env.size(1 << 26, 5003)
    x = torch.rand(n, device=env.device) * 2 - 1
    z, zt, tx = env.empty((n,), torch.float32), torch.empty_like(x), env.tj(x)
    ref = torch.asin(x)
    b.row("t07 libdevice asin", f"float32 n={n}", "GB/s", 8 * n / 1e9,
          _variant(b, "block 1024", lambda: [T.asin_kernel(tile.partition(z, (T.BLOCK,)), tx)]),
          lambda: b.check("t07 tilejit", env.read(z), ref, 1e-6),
          b.tk and (lambda: b.tt.asin(x, zt)), lambda: b.check("t07 triton", zt, ref, 1e-6))


def t08(b):
    import t08_grouped_gemm as T
    env, torch = b.env, b.torch
    sizes = env.size([2048, 1024, 512, 256], [64, 32, 96, 32])
    bm, bn, bk = env.size((128, 128, 32), (32, 32, 32))
    blocks = env.size(tile.Device(0).multiprocessor_count, 3)
    ins = [_matmul_inputs(b, s, s, s) for s in sizes]
    Cs = tuple(env.empty((s, s), torch.float16) for s in sizes)
    Ct = [torch.empty((s, s), dtype=torch.float16, device=env.device) for s in sizes]

    def checker(what, outs, read):
        def check():
            for s, c, (*_, ref) in zip(sizes, outs, ins):
                b.check(f"{what} {s}x{s}", read(c), ref, 1e-2)
        return check
    for tma in (True, False):      # the tutorial's TMA kernel and its pointer-based one
        b.row("t08 grouped gemm", f"float16 groups {sizes}, {'TMA' if tma else 'no TMA'}",
              "TFLOP/s", sum(2 * s ** 3 for s in sizes) / 1e12,
              _variant(b, f"{bm}x{bn}x{bk}, {blocks} blocks{'' if tma else ', allow_tma=False'}",
                       lambda: [T.grouped_gemm(
                           tuple(i[2] for i in ins), tuple(i[3] for i in ins),
                           tuple(tile.atomic(c) for c in Cs), bm, bn, bk, tma)
                           .grid((blocks, 1, 1))]),
              checker("t08 tilejit", Cs, env.read),
              b.tk and (lambda: b.tt.grouped_gemm([i[0] for i in ins], [i[1] for i in ins], Ct,
                                                  BM=bm, BN=bn, BK=bk, tma=tma)),
              checker("t08 triton", Ct, lambda t: t))


def t09(b):
    """fp16 and fp8 (e4m3), each in two rows: tilejit's loads through TMA (the default) against
    the tutorial's TMA-descriptor persistent kernel, and with ``allow_tma=False`` against its
    pointer-based one."""
    import t09_persistent_matmul as T
    env, torch = b.env, b.torch
    s = env.size(8192, 96)
    tiles = env.size((128, 128, 64), (32, 32, 32))
    sms = env.size(None, 3)
    a, w, ta, tw, ref = _matmul_inputs(b, s, s, s)
    for tma in (True, False):
        c, ct = env.empty((s, s), torch.float16), torch.empty((s, s), dtype=torch.float16,
                                                              device=env.device)
        triton = b.tt and (b.tt.matmul_tma_persistent if tma else b.tt.matmul_persistent)
        b.row("t09 persistent matmul", f"float16 {s}^3, {'TMA' if tma else 'no TMA'}",
              "TFLOP/s", 2 * s ** 3 / 1e12,
              _variant(b, "{}x{}x{} one wave{}".format(*tiles, "" if tma else ", allow_tma=False"),
                       lambda: [T.persistent_matmul(ta, tw, c, tiles, True, sms, tma=tma)]),
              lambda: b.check("t09 tilejit", env.read(c), ref, 1e-2),
              triton and (lambda: triton(a, w, ct, *tiles, sms=sms)),
              lambda: b.check("t09 triton", ct, ref, 1e-2))
    _t09_fp8(b, s, sms)


def _t09_fp8(b, s, sms):
    """The tutorial's fp8 rows: A (M, K) and B given transposed ((N, K) row-major: K contiguous)
    in float8_e4m3fn, C in e4m3 as there. Triton's fp8 ``tl.dot`` keeps the running sum in the
    tensor cores' reduced precision on sm_90 (max_num_imprecise_acc defaults to 2^30), so
    tilejit's side is ``fast_acc=True``; 128x128x128 tiles on both sides (the tutorial's BM and
    BK; the fast sum's best tiles in BENCHMARKS.md's fp8 runs)."""
    import t09_persistent_matmul as T
    env, torch = b.env, b.torch
    e4m3 = torch.float8_e4m3fn
    tiles = env.size((128, 128, 128), (32, 32, 64))
    # scaled by K^-1/4: the sums have unit variance, far below e4m3's largest value (448)
    a8 = (env.randn(s, s, dtype=torch.float32) * s ** -0.25).to(e4m3)
    w8 = (env.randn(s, s, dtype=torch.float32) * s ** -0.25).to(e4m3).T   # (K, N) of (N, K)
    ref = (a8.float() @ w8.float()).cpu().numpy()
    ta, tw = env.tj(a8), env.tj(w8.T).permute(1, 0)   # simulated too: B's layout kept

    def check(what, got):
        err = T.fp8_error(got.float().cpu().numpy(), ref, fast_acc=True)
        if err > 1:
            raise AssertionError(f"{what}: error {err:.2f}x what e4m3 rounding and the fast "
                                 f"sum allow")
    for tma in (True, False):
        c, ct = env.empty((s, s), e4m3), torch.empty((s, s), dtype=e4m3, device=env.device)
        triton = b.tt and (b.tt.matmul_tma_persistent if tma else b.tt.matmul_persistent)
        b.row("t09 persistent matmul",
              f"float8_e4m3fn {s}^3 (B transposed), {'TMA' if tma else 'no TMA'}",
              "TFLOP/s", 2 * s ** 3 / 1e12,
              _variant(b, "{}x{}x{} one wave, fast_acc{}".format(
                  *tiles, "" if tma else ", allow_tma=False"),
                  lambda: [T.persistent_matmul(ta, tw, c, tiles, True, sms, tma=tma,
                                               fast_acc=True)]),
              lambda: check("t09 fp8 tilejit", env.read(c)),
              triton and (lambda: triton(a8, w8, ct, *tiles, sms=sms)),
              lambda: check("t09 fp8 triton", ct))


def table(results) -> str:
    head = "| Tutorial | Row | tilejit | Triton | tilejit/Triton | Unit |"
    lines = [head, "|---|---|---|---|---|---|"]
    for r in results:
        if "failed" in r:
            lines.append(f"| {r['tutorial']} | failed: {r['failed']} | | | | |")
            continue
        num = lambda v: "" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.2f}"  # noqa: E731
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] else ""
        lines.append(f"| {r['tutorial']} | {r['row']} | {num(r['tilejit'])} | "
                     f"{num(r['triton'])} | {ratio} | {r['unit']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(ROWS))
    ap.add_argument("--reps", type=int, default=20, help="timed runs per figure (median)")
    ap.add_argument("--rehearse", action="store_true",
                    help="no GPU needed: the tilejit side at tiny sizes on the simulator")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(ROWS)
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        ap.error(f"unknown tutorial(s) {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    from tilejit.runtime import backend
    if not args.rehearse and backend.current() != backend.CUDA:
        print(f"triton_tutorials: no GPU ({backend.reason()}); nothing to measure "
              f"(--rehearse runs the tilejit side on the simulator)")
        return 0
    try:
        import torch
    except ImportError:
        print("triton_tutorials: PyTorch is not installed; nothing to measure")
        return 0
    if args.rehearse:
        backend.force("simulator").__enter__()
    from vendor import Env
    env = Env(torch, args.rehearse, False, float("inf"), args.reps)
    env.out = None                               # rows are written below, not to vendor.json
    tk = tt = None
    if env.gpu:
        import triton_kernels as tk
        import triton_tutorial_kernels as tt
    torch.manual_seed(25)
    b = Bench(env, tk, tt)
    print("triton_tutorials: " + ("rehearsal on the simulator (tiny sizes; figures mean "
                                  "nothing)" if args.rehearse else
                                  f"{torch.cuda.get_device_name()}, torch {torch.__version__}"))
    for name in names:
        try:
            globals()[name](b)
        except Exception as e:  # noqa: BLE001  (one tutorial's failure must not end the run)
            print(f"  {name} FAILED: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=6)
            b.results.append(dict(tutorial=name, failed=f"{type(e).__name__}: {e}"))
        env.sync()
    env.pool.shutdown()
    md = table(b.results)
    print("\n" + md)
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "triton_tutorials.json"), "w") as f:
            json.dump(b.results, f, indent=1)
    return 1 if any("failed" in r for r in b.results) else 0


if __name__ == "__main__":
    sys.exit(main())
