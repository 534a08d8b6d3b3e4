"""Shared timing for the benchmark scripts: CUDA events on one torch stream, warm-up, the median
of repeated runs, the L2 cache flushed before each run, and a markdown table of the results.

The stream is torch's current stream, so tilejit launches (``op.sync()``/``submit_on``), cuTile's
``ct.launch(stream, ...)``, Triton and torch itself are timed in the same order on the same queue.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, List, Optional

L2_FLUSH_BYTES = 256 << 20     # larger than the L2 of any current GPU (H200: 50 MB)


class Timer:
    """Times callables that queue GPU work on torch's current stream."""

    def __init__(self, reps: int = 20, warmup: int = 3, flush: bool = True):
        import torch
        self.torch = torch
        self.reps, self.warmup, self.flush = reps, warmup, flush
        self._scratch = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda") \
            if flush else None

    def ms(self, fn: Callable[[], object]) -> float:
        """Median milliseconds of ``fn()`` between two CUDA events."""
        torch = self.torch
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.reps):
            if self._scratch is not None:
                self._scratch.zero_()
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)

    def copy_roofline_gbs(self, nbytes: int = 1 << 30) -> float:
        """Device-to-device copy bandwidth (bytes read + written per second, GB/s)."""
        torch = self.torch
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = self.ms(lambda: dst.copy_(src))
        return 2 * nbytes / ms / 1e6


def baseline_torch(script: str):
    """torch, for a benchmark whose baseline it is, when tilejit runs on a GPU and torch is
    installed; else None, having said which is missing (the script then exits 0)."""
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"{script}: no GPU ({backend.reason()}); nothing to measure")
        return None
    try:
        import torch
    except ImportError:
        print(f"{script}: PyTorch is not installed (it is the baseline); nothing to measure")
        return None
    return torch


def gpu_torch(probe: str):
    """torch, when it sees a CUDA GPU; else None, having said so (a probe then exits 0)."""
    import torch
    if not torch.cuda.is_available():
        print(f"{probe}: no GPU; nothing to do")
        return None
    return torch


def row_probe(probe: str):
    """(torch, timer, stream, copy roofline in GB/s) for the row-kernel probes (printing the
    roofline), or None without a GPU."""
    torch = gpu_torch(probe)
    if torch is None:
        return None
    timer = Timer(reps=20)
    roof = timer.copy_roofline_gbs()
    print(f"copy roofline {roof:.0f} GB/s", flush=True)
    return torch, timer, torch.cuda.current_stream(), roof


def flush_and_loop_timers():
    """The two timings of the matmul probes: single runs with the L2 flushed, and loops."""
    return Timer(reps=15), Timer(reps=7, flush=False)


def precompile(cands, threads: int = 16) -> None:
    """Compile the launches of ``[(name, make)]`` side by side (tileiras runs in parallel), so
    that timing them one by one finds each in the cache. A failure is left for the timing loop
    to report."""
    from concurrent.futures import ThreadPoolExecutor
    from tilejit.autotune import compile_launch

    def one(make):
        try:
            compile_launch(make())
        except Exception:  # noqa: BLE001  (time_candidates reports it)
            pass
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, [make for _, make in cands]))


def time_candidates(cands, stream, timer, out, error, tol, rate, describe, indent="",
                    measure=None):
    """Prepare, check and time each ``(name, make)`` of an exploration (``make()`` returns a
    launch): ``out`` filled with NaN, one launch, ``error()`` must be below ``tol``; then the
    median time (``measure(launch)`` instead gives the figure when set: several measures, say).
    Prints a line each (``describe(rate, err)`` ends it) and the best three; returns ``[(rate,
    name)]`` best first. A failing candidate is printed, not raised."""
    torch = timer.torch
    rows = []
    for name, make in cands:
        try:
            p = make().prepare(stream)
            try:
                out.fill_(float("nan"))
                p.launch()
                torch.cuda.synchronize()
                err = error()
                if not err < tol:
                    print(f"{indent}{name}: WRONG (error {err:.3g})", flush=True)
                    continue
                r = measure(p.launch) if measure else rate(timer.ms(p.launch))
            finally:
                p.close()
            rows.append((r, name))
            print(f"{indent}{name}: {describe(r, err)}", flush=True)
        except Exception as e:  # noqa: BLE001  (one candidate's failure must not end the run)
            print(f"{indent}{name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    rows.sort(reverse=True)
    print(f"{indent}best:", rows[:3], flush=True)
    return rows


@dataclass
class Row:
    kernel: str
    values: dict
    note: str = ""


@dataclass
class Table:
    """Rows of named measurements; ``ratio`` columns divide one named column by another."""
    columns: List[str]
    unit: str
    ratios: List[tuple] = field(default_factory=list)
    rows: List[Row] = field(default_factory=list)

    def add(self, kernel: str, note: str = "", **values: Optional[float]) -> None:
        self.rows.append(Row(kernel, values, note))
        cells = ", ".join(f"{k} {v:.1f}" for k, v in values.items() if v is not None)
        print(f"  {kernel}: {cells} {self.unit} {note}", flush=True)

    def markdown(self) -> str:
        head = ["Kernel"] + [f"{c} ({self.unit})" for c in self.columns] + \
            [f"{a}/{b}" for a, b in self.ratios] + ["Note"]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            cells = [r.kernel]
            for c in self.columns:
                v = r.values.get(c)
                cells.append("" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.2f}")
            for a, b in self.ratios:
                va, vb = r.values.get(a), r.values.get(b)
                cells.append(f"{va / vb:.2f}x" if va and vb else "")
            cells.append(r.note)
            out.append("| " + " | ".join(cells) + " |")
        return "\n".join(out)


def rel_err(got, ref) -> float:
    """Largest absolute error relative to the reference's largest magnitude."""
    got, ref = got.float(), ref.float()
    return ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check(name: str, got, ref, tol: float) -> None:
    err = rel_err(got, ref)
    if not err <= tol:
        raise AssertionError(f"{name}: relative error {err:.3g} exceeds {tol:g}")
