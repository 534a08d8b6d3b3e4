"""tilejit against the vendor libraries (issue 26), every target row in one GPU run.

    python benchmarks/vendor.py [--quick] [--only GROUP[,GROUP...]] [--budget-s 420]
    python benchmarks/vendor.py --rehearse          # no GPU: the same rows, tiny, on the simulator
    python benchmarks/vendor.py --plan              # the rows and candidate counts, nothing run

Groups (``--only``; they run in this order), each row checked against torch before it is timed:

* ``matmul``: fp16/bf16 4096^3 and 8192^3 against cuBLAS (``torch.matmul``), tilejit's best of the
  gallery matmul tuned over tile.autotune's default search space (the first call of a key is
  its cold tuning time, ``tune_s``) and the grouped/persistent ``matmul_scheduled``; each timed
  both ways: single runs with an L2 flush before each (``[flush]``), and a sustained loop of
  back-to-back launches (``[loop]``);
* ``attention``: forward against SDPA's flash backend, causal and not, S 1K/4K/16K with B * S =
  16K tokens and 32 heads: fp16 at D 128 and 64 for every S, bf16 at S 4K; one query tile per
  block or two;
* ``softmax``, ``layer_norm``, ``rms_norm``: 64M elements as rows of 1K, 4K, 16K and 32K (fp16)
  and 4K and 32K (bf16), against torch and the device-to-device copy roofline measured in the
  same run; tilejit's best of whole rows per block, persistent and chunked;
* ``skinny``: M = 16, 64, 256 with N = K = 8192, fp16/bf16: the default-space matmul against
  split-K (``matmul_splitk.py``), both timing methods;
* ``fp8``: e4m3 4096^3 / 8192^3 against ``torch._scaled_mm`` (bf16 out, per-tensor scales);
* ``attention_bwd``: the backward (delta + dK/dV + dQ) against SDPA's flash backward, causal and
  not: fp16 and bf16 at D128 S4K, fp16 at D64 S4K and D128 S16K;
* ``gqa``: forward with 32 query heads over 8 KV heads, B4 S4K D128, against SDPA
  (``enable_gqa``), fp16/bf16, causal and not;
* ``decode``: one query per sequence, B 8, 32/8 heads, D 128, KV 4K/16K/64K, split-KV against
  SDPA, fp16/bf16.

``--quick`` keeps one or two rows per group. The markdown tables (tilejit, vendor, ratio, best
config) print at the end; with ``$OUT`` set every row is also appended to ``$OUT/vendor.json``
as it completes. Rows run in priority order and stop when ``--budget-s`` of wall time is spent
(compiles included; the remaining rows are listed as skipped). Tilejit kernels are launched
prepared (host time excluded), as torch's are called directly. The variants of a row are timed
one after another to pick the best; the best and the vendor call are then timed side by side in
alternating rounds (``vendor_rows.side_by_side``) for the row's figures. Without a GPU it says
so and exits 0 (``--rehearse`` runs every row's code on the simulator at tiny sizes instead).
``VENDOR_TUNING=1`` prints each autotuned variant's times of every config to stderr.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import tilejit as tile  # noqa: E402

GROUPS = ("matmul", "attention", "softmax", "layer_norm", "rms_norm", "skinny", "fp8",
          "attention_bwd", "gqa", "decode")          # run in this order (the budget cuts the tail)


class Env:
    """Where the rows run: torch CUDA tensors on the GPU, or (``rehearse``) torch CPU tensors as
    references with tilejit simulator tensors for the kernels. Timing, streams and conversions
    go through here, so the rows read the same either way."""

    def __init__(self, torch, rehearse: bool, quick: bool, budget_s: float, reps: int):
        self.torch, self.rehearse, self.quick = torch, rehearse, quick
        self.gpu = not rehearse
        self.device = "cuda" if self.gpu else "cpu"
        self.t0 = time.perf_counter()
        self.budget_s = budget_s
        self.reps = reps
        self.results, self.skipped = [], []
        self.out = os.environ.get("OUT")
        self.pool = concurrent.futures.ThreadPoolExecutor(max(2, os.cpu_count() or 2))
        if self.gpu:
            from harness import Timer
            self.timer = Timer(reps=reps, warmup=3)
            self.stream = torch.cuda.current_stream()
        else:
            self.timer, self.stream = None, None
        self.roofline = None

    # --- sizes and tensors -------------------------------------------------------------------------
    def size(self, gpu, sim):
        return sim if self.rehearse else gpu

    def randn(self, *shape, dtype=None, scale=1.0):
        t = self.torch.randn(*shape, device=self.device) * scale
        return t.to(dtype or self.torch.float16)

    def empty(self, shape, dtype):
        """An output for a tilejit kernel (filled with NaN where the dtype has it, so an element
        the kernel misses fails the check)."""
        torch = self.torch
        if self.gpu:
            t = torch.empty(shape, dtype=dtype, device="cuda")
            if dtype.is_floating_point and dtype.itemsize > 1:
                t.fill_(float("nan"))
            return t
        from tilejit import api
        return api.empty(tuple(shape), self.tj_dtype(dtype)).sync()

    def tj(self, t):
        """The tilejit-side view of torch tensor ``t`` (itself on the GPU; a simulator copy)."""
        if self.gpu:
            return t
        from tilejit import api
        return api.from_numpy(t.float().contiguous().numpy(), self.tj_dtype(t.dtype)).sync()

    def read(self, x):
        """A float32 torch tensor of a tilejit output, for the checks."""
        if self.gpu:
            return x.float()
        import numpy as np
        return self.torch.from_numpy(x.to_numpy().astype(np.float32))

    def tj_dtype(self, dtype):
        name = str(dtype).replace("torch.", "")
        return getattr(tile, name)

    # --- running and timing ----------------------------------------------------------------------
    def prepare(self, op):
        return op.prepare(self.stream)

    def sync(self):
        if self.gpu:
            self.torch.cuda.synchronize()
        else:
            tile.Device(0).synchronize()

    def ms(self, fn) -> float:
        """Median ms of single runs, the L2 flushed before each (GPU); one wall-clock run on
        the simulator."""
        if self.gpu:
            return self.timer.ms(fn)
        t0 = time.perf_counter()
        fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3

    def loop_ms(self, fn, target_ms: float = 25.0) -> float:
        """Sustained: ms per call over a loop of back-to-back calls (no flush), the median of
        five loops."""
        if not self.gpu:
            return self.ms(fn)
        torch = self.torch
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        one = self.timer.ms(fn)
        n = max(10, min(2000, int(target_ms / max(one, 1e-3))))
        per = []
        for _ in range(5):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            per.append(a.elapsed_time(b) / n)
        return statistics.median(per)

    def precompile(self, jobs) -> int:
        """Run compile jobs (callables, or futures already submitted) side by side in the
        thread pool; returns how many failed (a failing config is skipped by its tuner)."""
        futs = [j if isinstance(j, concurrent.futures.Future) else self.pool.submit(j)
                for j in jobs]
        failed = 0
        for f in futs:
            try:
                f.result()
            except Exception:  # noqa: BLE001  (reported again, per config, by the tuner)
                failed += 1
        return failed

    # --- budget and results -----------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def over_budget(self) -> bool:
        return self.elapsed() > self.budget_s

    def record(self, group: str, row: str, unit: str, tilejit, vendor, vendor_name: str,
               config: str = "", **extra):
        ratio = tilejit / vendor if tilejit and vendor else None
        r = dict(group=group, row=row, unit=unit, tilejit=tilejit, vendor=vendor,
                 vendor_name=vendor_name, ratio=ratio, config=config, **extra)
        self.results.append(r)
        cells = [f"tilejit {tilejit:.1f}" if tilejit else "tilejit -",
                 f"{vendor_name} {vendor:.1f}" if vendor else f"{vendor_name} -",
                 f"{ratio:.2f}x" if ratio else ""]
        more = " ".join(f"{k}={_fmt(v)}" for k, v in extra.items())
        print(f"  {row}: {', '.join(cells)} {unit}  [{config}] {more}", flush=True)
        if self.out:
            os.makedirs(self.out, exist_ok=True)
            with open(os.path.join(self.out, "vendor.json"), "a") as f:
                f.write(json.dumps(r) + "\n")

    def run_row(self, group: str, label: str, fn) -> None:
        """``fn()`` unless the budget is spent; a failure is printed and the run goes on."""
        if self.over_budget():
            self.skipped.append(f"{group}: {label}")
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001  (one row's failure must not end the run)
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"  {label} FAILED: {type(e).__name__}: {msg}", flush=True)
            traceback.print_exc(limit=4)
            self.results.append(dict(group=group, row=label, failed=f"{type(e).__name__}: "
                                                                        f"{msg}"))


def _fmt(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def tables(results, predicted=None) -> str:
    """One markdown table per group (with the group's prediction under it, if given)."""
    out = []
    groups = []
    for r in results:
        if r["group"] not in groups:
            groups.append(r["group"])
    for g in groups:
        rows = [r for r in results if r["group"] == g]
        unit = next((r["unit"] for r in rows if "unit" in r), "")
        extra = sorted({k for r in rows for k in r.get("columns", {})})
        head = ["Row", f"tilejit ({unit})", f"vendor ({unit})", "tilejit/vendor"] + extra + \
            ["best config", "vendor"]
        lines = [f"### {g}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            if "failed" in r:
                lines.append(f"| {r['row']} | failed: {r['failed']} |" + " |" * (len(head) - 2))
                continue
            cells = [r["row"], _num(r["tilejit"]), _num(r["vendor"]),
                     f"{r['ratio']:.2f}x" if r["ratio"] else ""]
            cells += [_num(r.get("columns", {}).get(k)) for k in extra]
            cells += [r["config"], r["vendor_name"]]
            lines.append("| " + " | ".join(cells) + " |")
        if predicted and g in predicted:
            lines += ["", f"Predicted before the run: {predicted[g]}."]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _num(v) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one or two rows per group")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(GROUPS))
    ap.add_argument("--budget-s", type=float, default=420.0,
                    help="wall-time budget; rows past it are skipped (default 420)")
    ap.add_argument("--reps", type=int, default=20, help="timed runs per figure (median)")
    ap.add_argument("--rehearse", action="store_true",
                    help="no GPU needed: every row at tiny sizes on the simulator (CPU torch)")
    ap.add_argument("--plan", action="store_true", help="list the rows and exit")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(GROUPS)
    unknown = [n for n in names if n not in GROUPS]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    import vendor_rows
    if args.plan:
        for n in names:
            for label in vendor_rows.plan(n, args.quick):
                print(f"{n}: {label}")
        return 0
    from tilejit.runtime import backend
    if not args.rehearse and backend.current() != backend.CUDA:
        print(f"vendor: no GPU ({backend.reason()}); nothing to measure "
              f"(--rehearse runs the rows on the simulator, --plan lists them)")
        return 0
    try:
        import torch
    except ImportError:
        print("vendor: PyTorch is not installed; nothing to measure")
        return 0
    os.environ.setdefault("TILEJIT_AUTOTUNE_QUIET", "1")
    if args.rehearse:
        from tilejit.runtime import backend as _b
        _b.force("simulator").__enter__()
    env = Env(torch, args.rehearse, args.quick, args.budget_s, args.reps)
    torch.manual_seed(26)
    if env.gpu:
        env.roofline = env.timer.copy_roofline_gbs()
        print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; tilejit "
              f"{tile.__version__}; {time.strftime('%Y-%m-%d %H:%M')}; copy roofline "
              f"{env.roofline:.0f} GB/s; cache {os.environ.get('TILEJIT_CACHE_DIR', 'default')};"
              f" {os.cpu_count()} CPUs", flush=True)
    else:
        env.roofline = 1.0
        print("vendor: rehearsal on the simulator (tiny sizes; figures mean nothing)")
    for n in names:
        if env.over_budget():                  # not even the group's compiles
            env.skipped += [f"{n}: {label}" for label in vendor_rows.plan(n, args.quick)]
            continue
        print(f"--- {n} ({env.elapsed():.0f} s)", flush=True)
        try:
            vendor_rows.GROUP_FUNCS[n](env)
        except Exception as e:  # noqa: BLE001
            print(f"group {n} FAILED: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=6)
            env.results.append(dict(group=n, row="(group)", failed=f"{type(e).__name__}: {e}"))
        env.sync()
    env.pool.shutdown()
    print(f"\nwall time {env.elapsed():.0f} s; {len(env.results)} rows")
    md = tables(env.results, vendor_rows.PREDICTED)
    print("\n" + md)
    if env.out:
        with open(os.path.join(env.out, "vendor.md"), "w") as f:
            f.write(md + "\n")
    if env.skipped:
        print(f"\nskipped (budget of {args.budget_s:.0f} s spent): " + "; ".join(env.skipped))
    failed = [r for r in env.results if "failed" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
