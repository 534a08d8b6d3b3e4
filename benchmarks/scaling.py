"""1 -> N GPU scaling of independent work driven from one Python thread (issue 24). GPU only.

    python benchmarks/scaling.py [--devices 2] [--reps 50]

Each device gets its own torch tensors, and the kernels are called as users call them: on torch
tensors, each on its device's current torch stream (``tile.Stream.borrow_raw``), one launch per
device in turn from one thread, then a ``torch.cuda.synchronize`` of every device. Two
workloads:

* a 4096^3 fp16 matmul (`examples/matmul.py` ``matmul_scheduled``, 128x256 tiles, two warp
  groups, persistent): GPU-bound, so N devices should give N times the throughput;
* a 1M-element vector add: host-bound (a few microseconds of GPU time per launch), so the figure
  is how fast one thread can feed N GPUs.

The host time a launch is the submission loop's time over its launches (before the final
synchronize). Scaling is (work per second on N devices) / (work per second on device 0 alone), with the same
number of launches per device; 1.0 per device is perfect. Each device's result is checked
against torch first.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "examples"), HERE]

import tilejit as tile  # noqa: E402


@tile.entry
def vector_add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


def matmul_case(torch, dev, sms):
    from matmul import matmul_scheduled
    n = 4096
    with torch.cuda.device(dev):
        a = torch.randn(n, n, device=dev, dtype=torch.float16)
        b = torch.randn(n, n, device=dev, dtype=torch.float16)
        c = torch.empty(n, n, device=dev, dtype=torch.float16)
    call = lambda: matmul_scheduled(tile.atomic(c), a, b, 128, 256, 64, 8, True).grid(  # noqa: E731
        (sms, 1, 1)).compile_options(tile.CompileOptions(num_worker_warps=8))
    check = lambda: (c.float() - (a.float() @ b.float())).abs().max().item() < 0.5  # noqa: E731
    return call, check, 2 * n ** 3, lambda: torch.mm(a, b, out=c)


def add_case(torch, dev, sms):
    n = 1 << 20
    with torch.cuda.device(dev):
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        z = torch.empty(n, device=dev)
    call = lambda: vector_add(tile.partition(z, (1024,)), x, y)  # noqa: E731
    check = lambda: bool(torch.equal(z, x + y))  # noqa: E731
    return call, check, n, lambda: torch.add(x, y, out=z)


def per_second(torch, cases, reps, how):
    """Work per second with one launch per case in turn, ``reps`` rounds (median of 5 runs).
    ``how``: "call" (a kernel call on torch tensors, ``submit_on`` torch's stream), "prepared"
    (``prepare(stream)`` once, then ``launch()``), "threads" (calls, one thread per device) or
    "torch" (torch's own op, the baseline)."""
    import threading
    streams = [tile.Stream.borrow_raw(torch.cuda.current_stream(d)) for d, *_ in cases]
    prepared = [c[1]().prepare(s) for c, s in zip(cases, streams)] if how == "prepared" else []

    def feed(d, call, s):
        with torch.cuda.device(d):
            for _ in range(reps):
                call().submit_on(s)
    rates, hosts = [], []
    for _ in range(5):
        for d, *_ in cases:
            torch.cuda.synchronize(d)
        t0 = time.perf_counter()
        if how == "threads":
            ts = [threading.Thread(target=feed, args=(d, call, s))
                  for (d, call, *_), s in zip(cases, streams)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        else:
            for _ in range(reps):
                if how == "prepared":
                    for p in prepared:
                        p.launch()
                elif how == "torch":
                    for d, _, _, native in cases:
                        with torch.cuda.device(d):
                            native()
                else:
                    for (d, call, *_), s in zip(cases, streams):
                        call().submit_on(s)
        hosts.append((time.perf_counter() - t0) / (reps * len(cases)) * 1e6)
        for d, *_ in cases:
            torch.cuda.synchronize(d)
        dt = time.perf_counter() - t0
        rates.append(reps * sum(c[2] for c in cases) / dt)
    for p in prepared:
        p.close()
    return sorted(rates)[len(rates) // 2], sorted(hosts)[len(hosts) // 2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("scaling: no GPU; nothing to do")
        return 0
    have = torch.cuda.device_count()
    if have < args.devices:
        print(f"scaling: needs {args.devices} GPUs, this machine has {have}; nothing to do")
        return 0
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"scaling: {args.devices} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"tilejit {tile.__version__}, {args.reps} rounds", flush=True)
    ok = True
    for name, make, unit, scale in (("matmul fp16 4096^3", matmul_case, "TFLOP/s", 1e12),
                                    ("vector add 1M float32", add_case, "Melem/s", 1e6)):
        cases = []
        for d in range(args.devices):
            call, check, work, native = make(torch, d, sms)
            call().submit_on(tile.Stream.borrow_raw(torch.cuda.current_stream(d)))
            torch.cuda.synchronize(d)
            if not check():
                print(f"  {name} on cuda:{d}: WRONG result")
                ok = False
            cases.append((d, call, work, native))
        for how in ("torch", "call", "prepared", "threads"):
            one, host = per_second(torch, cases[:1], args.reps, how)
            line = [f"1 GPU {one / scale:.1f} {unit} (host {host:.1f} us a launch)"]
            for k in range(2, args.devices + 1):
                many, host = per_second(torch, cases[:k], args.reps, how)
                line.append(f"{k} GPUs {many / scale:.1f} ({many / one:.2f}x, "
                            f"{many / one / k:.2f} per device; host {host:.1f} us a launch)")
            print(f"{name} [{how}]: " + "; ".join(line), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
