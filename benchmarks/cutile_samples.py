"""cuTile Python's samples under tilejit.cutile and under cuTile Python itself, in one run.

    python benchmarks/cutile_samples.py [--only NAME[,NAME...]] [--reps N]

The kernels and host functions are ``tests/cutile_samples.py`` (our own versions of the samples,
written with ``import tilejit.cutile as ct``); the same source text is also loaded with that line
replaced by ``import cuda.tile as ct``, so both sides run identical code. Every case runs at the
sample's published size with torch tensors on torch's current stream, the two results are
checked against a torch reference (a failing side is reported, not timed), then timed:

* **kernel** (the GPU's time per call): the calls are queued behind a ``torch.cuda._sleep``, so
  the GPU runs them back to back and host launch time is hidden; CUDA events around them.
* **call** (what a caller of the sample sees, as cuTile's samples/utils/benchmark.py measures):
  back-to-back calls between two events, host launch time included.

The two sides' batches alternate (tilejit, cuTile, then cuTile, tilejit, ...), so drift in GPU
clocks or host load during the run falls on both alike.

Prints one markdown table per measure for BENCHMARKS.md (tilejit / cuTile ratio: higher is
better for tilejit). Without a GPU it says so and exits 0; without ``cuda.tile`` the cuTile
column is empty.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
SAMPLES = os.path.join(ROOT, "tests", "cutile_samples.py")
IMPORT = "import tilejit.cutile as ct"

import numpy as np  # noqa: E402


def load_samples(module_line: str, name: str):
    """tests/cutile_samples.py with its import line replaced, loaded from a file of its own (the
    front ends read the kernels' source)."""
    src = open(SAMPLES, encoding="utf-8").read()
    assert src.count(IMPORT) == 1, f"{SAMPLES} must contain '{IMPORT}' once"
    path = os.path.join(tempfile.mkdtemp(prefix="cutile-samples-"), f"{name}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(src.replace(IMPORT, module_line))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Clock:
    """Per-call milliseconds of a callable that queues work on torch's current stream."""

    def __init__(self, torch, reps: int):
        self.torch, self.reps = torch, reps

    def _events(self):
        t = self.torch
        return t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)

    def _batch_ms(self, fn, n: int, queued: bool) -> float:
        """Per-call ms of n calls: with ``queued`` the host queues them behind a sleep kernel
        first (GPU time); else the GPU waits for each call as the host issues it (host + GPU)."""
        t = self.torch
        a, b = self._events()
        t.cuda.synchronize()
        if queued:
            t.cuda._sleep(int(2e6 + 3e5 * n))    # the host queues all n calls while this runs
        a.record()
        for _ in range(n):
            fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) / n

    def paired_ms(self, fns, n: int, queued: bool) -> list:
        """Median per-call ms of each callable, their batches alternating (the order reversed
        every rep), so drift in clocks or host load falls on every side alike."""
        times = [[] for _ in fns]
        for rep in range(self.reps):
            order = range(len(fns)) if rep % 2 == 0 else reversed(range(len(fns)))
            for i in order:
                times[i].append(self._batch_ms(fns[i], n, queued))
        return [statistics.median(ts) for ts in times]


# --- the cases: (name, setup(torch, S) -> (run(), check())) ------------------------------------
def _close(torch, got, ref, atol, rtol):
    torch.testing.assert_close(got.float(), ref.float(), atol=atol, rtol=rtol)


def vector_add(shape, gather):
    def setup(torch, S):
        a, b = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
        c = torch.empty_like(a)
        s = torch.cuda.current_stream()
        return (lambda: S.vector_add(s, a, b, c, use_gather=gather),
                lambda: _close(torch, c, a + b, 0, 0))
    return setup


def matmul(dtype, m, k, n, persistent=False):
    def setup(torch, S):
        dt = getattr(torch, dtype)
        a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda",
                                                                       dtype=dt)
        c = torch.empty(m, n, device="cuda", dtype=dt)
        sms = torch.cuda.get_device_properties(0).multi_processor_count if persistent else None
        s = torch.cuda.current_stream()
        torch.backends.cuda.matmul.allow_tf32 = True
        return (lambda: S.matmul(s, a, b, c, persistent_blocks=sms),
                lambda: _close(torch, c, a.float() @ b.float(), 2e-3 * math.sqrt(k), 1e-2))
    return setup


def split_k(torch, S):
    m, k, n, split = 2048, 4096, 2048, 8
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda")
    locks = torch.zeros((m // 128) * (n // 128), dtype=torch.int32, device="cuda")
    counts = torch.zeros_like(locks)
    s = torch.cuda.current_stream()
    return (lambda: S.split_k_matmul(s, a, b, c, locks, counts, split, tiles=(128, 128, 64)),
            lambda: _close(torch, c, a.float() @ b.float(), 2e-2, 1e-3))


def batch_matmul(torch, S):
    a = torch.randn(4, 512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(4, 256, 1024, device="cuda", dtype=torch.float16)
    c = torch.empty(4, 512, 1024, device="cuda", dtype=torch.float16)
    s = torch.cuda.current_stream()
    return (lambda: S.batch_matmul(s, a, b, c),
            lambda: _close(torch, c, a.float() @ b.float(), 1e-2, 1e-2))


def transpose(dtype, m, n):
    def setup(torch, S):
        x = torch.randn(m, n, device="cuda", dtype=getattr(torch, dtype))
        y = torch.empty(n, m, device="cuda", dtype=x.dtype)
        s = torch.cuda.current_stream()
        return lambda: S.transpose(s, x, y), lambda: _close(torch, y, x.T, 0, 0)
    return setup


def _layer_norm_inputs(torch):
    m, n = 1024, 2048
    x = -2.3 + 0.5 * torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    return x, w, b


def layer_norm_fwd(torch, S):
    x, w, b = _layer_norm_inputs(torch)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(x.shape[0], device="cuda"), torch.empty(x.shape[0], device="cuda")
    s = torch.cuda.current_stream()
    ref = torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, 1e-5)
    return (lambda: S.layer_norm_forward(s, x, w, b, y, mean, rstd, 1e-5),
            lambda: _close(torch, y, ref, 1e-2, 1e-2))


def layer_norm_bwd(torch, S):
    x, w, b = _layer_norm_inputs(torch)
    dy = 0.1 * torch.randn_like(x)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(xr, (x.shape[1],), wr, br, 1e-5).backward(dy)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(x.shape[0], device="cuda"), torch.empty(x.shape[0], device="cuda")
    s = torch.cuda.current_stream()
    S.layer_norm_forward(s, x, w, b, y, mean, rstd, 1e-5)
    dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
    dw_part = torch.zeros(64, x.shape[1], device="cuda")
    db_part = torch.zeros_like(dw_part)
    locks = torch.zeros(64, dtype=torch.int32, device="cuda")

    def run():
        dw_part.zero_()                      # part of the sample's backward (a fresh zeros)
        db_part.zero_()
        S.layer_norm_backward(s, dy, x, w, mean, rstd, dx, dw_part, db_part, locks, dw, db)

    def check():
        for got, ref in ((dx, xr.grad), (dw, wr.grad), (db, br.grad)):
            _close(torch, got, ref, 1e-2, 1e-2)
    return run, check


def softmax(dtype, persistent):
    def setup(torch, S):
        x = torch.randn(512, 128, device="cuda", dtype=getattr(torch, dtype))
        y = torch.empty_like(x)
        s = torch.cuda.current_stream()
        return (lambda: S.softmax(s, x, y, rows_per_block=16, persistent=persistent),
                lambda: _close(torch, y, torch.softmax(x.float(), 1), 1e-2, 1e-2))
    return setup


def fmha(causal):
    def setup(torch, S):
        q, k, v = (torch.randn(2, 8, 128, 64, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        out = torch.empty_like(q)
        s = torch.cuda.current_stream()
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                               is_causal=causal)
        return (lambda: S.fmha(s, q, k, v, out, causal=causal),
                lambda: _close(torch, out, ref, 4e-3, 4e-3))
    return setup


def moe(torch, S):
    tokens, hidden, experts, inter, topk, tm = 48, 512, 64, 1024, 8, 128
    dt = torch.bfloat16
    x = torch.randn(tokens, hidden, device="cuda", dtype=dt)
    w1 = torch.randn(experts, 2 * inter, hidden, device="cuda", dtype=dt) / math.sqrt(hidden)
    w2 = torch.randn(experts, hidden, inter, device="cuda", dtype=dt) / math.sqrt(inter)
    ids = torch.stack([torch.randperm(experts, device="cuda")[:topk] for _ in range(tokens)])
    weights = torch.softmax(torch.randn(tokens, topk, device="cuda"), -1).reshape(-1)
    sorted_ids, runs = (torch.from_numpy(a).cuda() for a in S.moe_align(ids.cpu().numpy(), tm,
                                                                         experts))
    h1 = torch.zeros(tokens * topk, 2 * inter, device="cuda", dtype=dt)
    h2 = torch.zeros(tokens * topk, inter, device="cuda", dtype=dt)
    h3 = torch.zeros(tokens * topk, hidden, device="cuda", dtype=dt)
    s = torch.cuda.current_stream()

    def run():
        S.moe_matmul(s, x, w1, h1, weights, sorted_ids, runs, False, topk, tiles=(tm, 128, 64))
        S.silu_and_mul(s, h1[:, :inter], h1[:, inter:], h2)
        S.moe_matmul(s, h2, w2, h3, weights, sorted_ids, runs, True, 1, tiles=(tm, 128, 64))

    def check():
        ref = torch.zeros(tokens, hidden, device="cuda")
        w = weights.reshape(tokens, topk)
        for e in range(experts):
            tok, slot = torch.where(ids == e)
            if tok.numel():
                h = x[tok].float() @ w1[e].float().T
                act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
                ref.index_add_(0, tok, (act @ w2[e].float().T) * w[tok, slot][:, None])
        _close(torch, h3.reshape(tokens, topk, hidden).float().sum(1), ref, 1e-1, 1e-1)
    return run, check


def fft(batch, factors, pack):
    def setup(torch, S):
        n = math.prod(factors)
        x = torch.randn(batch, n, dtype=torch.complex64, device="cuda")
        xp = torch.view_as_real(x).reshape(batch, 2 * n // pack, pack).contiguous()
        yp = torch.empty_like(xp)
        tw = tuple(torch.from_numpy(t).cuda() for t in S.fft_twiddles(factors, np.float32))
        s = torch.cuda.current_stream()
        return (lambda: S.fft(s, xp, yp, tw, factors, batch_tile=1, pack=pack),
                lambda: torch.testing.assert_close(
                    torch.view_as_complex(yp.reshape(batch, n, 2)), torch.fft.fft(x, dim=-1),
                    atol=1e-4 * math.sqrt(n), rtol=1e-4))
    return setup


def block_scaled(torch, S):
    m, k, n, block = 512, 768, 512, 32
    a, sa = S.mxfp8_quantize(torch.rand(m, k, device="cuda"), block)
    bt, sbt = S.mxfp8_quantize(torch.rand(n, k, device="cuda"), block)
    b, sb = bt.T, sbt.T
    c = torch.empty(m, n, device="cuda")
    s = torch.cuda.current_stream()
    ref = (a.float() * sa.float().repeat_interleave(block, 1)) @ \
        (b.float() * sb.float().repeat_interleave(block, 0))
    return (lambda: S.block_scaled_matmul(s, a, sa, b, sb, c),
            lambda: _close(torch, c, ref, 1e-4, 1e-3))


CASES = [
    ("vector_add 1d 1M", vector_add((1_000_000,), False)),
    ("vector_add 1d gather 1M+1", vector_add((1_000_001,), True)),
    ("vector_add 2d 2048x1024", vector_add((2048, 1024), False)),
    ("vector_add 2d gather 2000x1000", vector_add((2000, 1000), True)),
    ("matmul fp16 512x768x512", matmul("float16", 512, 768, 512)),
    ("matmul tf32 512x768x512", matmul("float32", 512, 768, 512)),
    ("matmul tf32 1000x700x500", matmul("float32", 1000, 700, 500)),
    ("matmul persistent tf32 512x768x512", matmul("float32", 512, 768, 512, True)),
    ("matmul fp16 4096^3", matmul("float16", 4096, 4096, 4096)),
    ("matmul persistent fp16 4096^3", matmul("float16", 4096, 4096, 4096, True)),
    ("matmul split-K fp16 2048x4096x2048", split_k),
    ("batch_matmul fp16 4x512x256x1024", batch_matmul),
    ("transpose fp16 1024x512", transpose("float16", 1024, 512)),
    ("transpose f32 1024x512", transpose("float32", 1024, 512)),
    ("transpose f32 1000x500", transpose("float32", 1000, 500)),
    ("layer_norm fwd bf16 1024x2048", layer_norm_fwd),
    ("layer_norm bwd bf16 1024x2048", layer_norm_bwd),
    ("softmax fp16 512x128", softmax("float16", False)),
    ("softmax f32 512x128", softmax("float32", False)),
    ("softmax per row f32 512x128", softmax("float32", True)),
    ("fmha fp16 B2 H8 S128 D64", fmha(False)),
    ("fmha causal fp16 B2 H8 S128 D64", fmha(True)),
    ("moe bf16 48 tokens 64 experts top-8", moe),
    ("fft N=8 batch 2", fft(2, (2, 2, 2), 2)),
    ("fft N=256 batch 64", fft(64, (4, 8, 8), 64)),
    ("block_scaled mxfp8 512x768x512", block_scaled),
]


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160] if text else ''}"


def prepared(torch, module, setup):
    """The side's ``run`` after a checked first call and a warm second one, or an error text."""
    try:
        torch.manual_seed(0)
        run, check = setup(torch, module)
        run()
        torch.cuda.synchronize()
        check()
        run()                                # warm: the second call takes the hot path
        torch.cuda.synchronize()
        return run
    except Exception as e:  # noqa: BLE001  (report the side's failure, measure the rest)
        return _short(e)


def measure(torch, clock, modules, setup, calls: int) -> list:
    """[(kernel ms, call ms) or an error text] per module, the sides timed in alternating
    batches."""
    runs = [prepared(torch, m, setup) if m is not None else "not installed" for m in modules]
    ok = [r for r in runs if callable(r)]
    try:
        kernel = iter(clock.paired_ms(ok, calls, queued=True))
        call = iter(clock.paired_ms(ok, calls, queued=False))
    except Exception as e:  # noqa: BLE001
        return [_short(e) if callable(r) else r for r in runs]
    return [(next(kernel), next(call)) if callable(r) else r for r in runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20, help="calls per timed batch")
    args = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA")
    except Exception as e:  # noqa: BLE001
        print(f"no GPU ({e}): nothing to measure")
        return 0
    tj = load_samples(IMPORT, "cutile_samples_tilejit")
    try:
        ct = load_samples("import cuda.tile as ct", "cutile_samples_cutile")
    except Exception as e:  # noqa: BLE001
        print(f"cuTile Python not available: {_short(e)}")
        ct = None
    clock = Clock(torch, args.reps)
    only = [s for s in args.only.split(",") if s]
    rows = []
    print(f"GPU: {torch.cuda.get_device_name()}; {args.calls} calls per batch, median of "
          f"{args.reps} batches", flush=True)
    for name, setup in CASES:
        if only and not any(o in name for o in only):
            continue
        mine, theirs = measure(torch, clock, (tj, ct), setup, args.calls)
        rows.append((name, mine, theirs))
        print(f"  {name}: tilejit {mine}, cuTile {theirs}", flush=True)
    for title, i in (("kernel time (GPU, launches queued)", 0), ("call time (host + GPU)", 1)):
        print(f"\n### {title}, us per call\n")
        print("| Sample | tilejit.cutile | cuTile Python | cuTile / tilejit |")
        print("|---|---|---|---|")
        for name, mine, theirs in rows:
            a = f"{mine[i] * 1e3:.1f}" if isinstance(mine, tuple) else f"failed ({mine})"
            b = f"{theirs[i] * 1e3:.1f}" if isinstance(theirs, tuple) else f"({theirs})"
            r = f"{theirs[i] / mine[i]:.2f}x" if isinstance(mine, tuple) and \
                isinstance(theirs, tuple) else ""
            print(f"| {name} | {a} | {b} | {r} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
