"""Host time per kernel launch: tilejit's launch path against the floor and its peers.

    python benchmarks/launch_overhead.py [--launches 200] [--batches 60]

Measures, for a trivial kernel (PTX written here), the host time of one launch:

(a) a bare ``cuLaunchKernel`` from Python (cuda-bindings) with pre-packed arguments: the floor;
(b) tilejit's fast path for the same kernel loaded as a module: ``CudaKernel.launch`` (pack the
    values into the reusable buffer + one ``cuLaunchKernel``), and the same behind argument classification (``argspec.classify`` of a
    Tensor + ``launch_infos``), i.e. the dispatcher's hot path without its key lookup;
(c) ``torch.add`` on tiny tensors, when PyTorch is installed;
(d) cuTile Python, when ``cuda.tile`` and tileiras are installed;
(e) a cached ``@tile.entry`` kernel: the lazy op with a new partition per launch, the op object
    reused, and a prepared launch (``op.prepare(stream).launch()``);
(f) CUDA graph replay of the same kernel (one launch per graph, and 100 per graph).

Launches are timed in batches (default 200) with a stream synchronize between batches, outside
the timed region, so the GPU queue never fills; the median over batches is reported.
Without a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry noop(.param .u64 p, .param .u32 n) { ret; }
.visible .entry noop_tensor(.param .u64 p, .param .u32 shape0, .param .u32 stride0) { ret; }
"""


def measure(fn, stream_sync, launches: int, batches: int) -> float:
    """Median host microseconds per call of ``fn`` over ``batches`` batches of ``launches``."""
    for _ in range(3):                       # warm up
        for _ in range(launches):
            fn()
        stream_sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        per.append((time.perf_counter() - t0) / launches * 1e6)
        stream_sync()
    return statistics.median(per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=200)
    ap.add_argument("--batches", type=int, default=60)
    args = ap.parse_args(argv)

    from tilejit.runtime import backend, driver
    if backend.current() != backend.CUDA:
        print(f"launch_overhead: no GPU ({backend.reason()}); nothing to measure")
        return 0

    import tilejit as tile
    from tilejit.runtime import argspec, launch
    from tilejit.ops import transfer

    drv = driver.drv
    dev = tile.Device(0)
    dev.make_current()
    stream = dev.new_stream()
    mod = tile.load_module_from_ptx(PTX)
    noop = mod.function("noop")
    noop_t = mod.function("noop_tensor")
    buf = transfer.empty((1024,), tile.float32).sync_on(stream)
    ptr = buf.device_pointer
    L, B = args.launches, args.batches
    results = []

    def report(name, us, ref=None):
        extra = f"   ({us / ref:.2f}x bare)" if ref else ""
        results.append((name, us))
        print(f"  {name:<52s} {us:7.2f} us/launch{extra}", flush=True)

    print(f"device: {dev.name} ({dev.arch}), driver CUDA {driver.driver_version()}, "
          f"cuda-bindings {getattr(__import__('cuda.bindings', fromlist=['x']), '__version__', '?')}"
          f", python {sys.version.split()[0]}")
    print(f"median of {B} batches x {L} launches, grid (1,1,1), block (1,1,1)")

    # (a) bare cuLaunchKernel with pre-packed arguments
    p_val = ctypes.c_uint64(ptr)
    n_val = ctypes.c_uint32(1024)
    arr = (ctypes.c_void_p * 2)(ctypes.addressof(p_val), ctypes.addressof(n_val))
    kp = ctypes.addressof(arr)
    f_cu, s_cu, launch_raw = noop._cu, stream._cu, drv.cuLaunchKernel

    def bare():
        launch_raw(f_cu, 1, 1, 1, 1, 1, 1, 0, s_cu, kp, 0)

    sync = stream.synchronize
    bare_us = measure(bare, sync, L, B)
    report("(a) bare cuLaunchKernel, pre-packed args", bare_us)

    # (b) tilejit fast path
    kern = launch.CudaKernel(noop, ("u64", "u32"))
    grid = (1, 1, 1)
    params = (ptr, 1024)
    report("(b) tilejit CudaKernel.launch(grid, params, stream)",
           measure(lambda: kern.launch(grid, params, stream), sync, L, B), bare_us)
    kern_t = launch.CudaKernel(noop_t, argspec.abi_slots([argspec.classify(buf)]))
    classify, launch_infos = argspec.classify, launch.launch_infos

    def classified():
        launch_infos(kern_t, [classify(buf)], grid, stream)

    report("(b) tilejit classify(Tensor) + launch_infos", measure(classified, sync, L, B), bare_us)

    # (e) tilejit @tile.entry: the same no-op body, through the whole dispatcher
    @tile.entry
    def touch(z, x):
        pass

    out = transfer.empty((128,), tile.float32).sync_on(stream)
    touch(out.partition((128,)), buf).sync_on(stream)
    report("(e) @tile.entry kernel(z.partition(t), x).submit_on(s)",
           measure(lambda: touch(out.partition((128,)), buf).submit_on(stream), sync, L, B), bare_us)
    op = touch(out.partition((128,)), buf)
    report("(e) @tile.entry, launch op reused: op.submit_on(s)",
           measure(lambda op=op: op.submit_on(stream), sync, L, B), bare_us)
    del op
    prepared = touch(out.partition((128,)), buf).prepare(stream)
    report("(e) @tile.entry, prepared: p = op.prepare(s); p.launch()",
           measure(prepared.launch, sync, L, B), bare_us)
    prepared.close()

    # (f) CUDA graph replay: one captured launch, and 100 launches in one graph (per kernel)
    g1 = touch(out.partition((128,)), buf).graph_on(stream)
    launch1 = g1.launch()
    report("(f) CUDA graph of 1 launch: graph.launch().submit_on(s)",
           measure(lambda: launch1.submit_on(stream), sync, L, B), bare_us)
    with tile.CudaGraph.scope(stream) as sc:
        for _ in range(100):
            sc.record(touch(out.partition((128,)), buf))
    g100 = sc.graph.launch()
    per100 = measure(lambda: g100.submit_on(stream), sync, max(10, L // 10), B) / 100
    report("(f) CUDA graph of 100 launches, per kernel", per100, bare_us)

    def deviceop():
        (tile.AsyncKernelLaunch(noop).push_device_ptr(ptr).push_arg(np.uint32(1024))
         .set_launch_config(tile.LaunchConfig())).submit_on(stream)

    report("(info) AsyncKernelLaunch op, built + submitted",
           measure(deviceop, sync, L, max(10, B // 3)), bare_us)

    # (c) torch.add
    try:
        import torch
        if torch.cuda.is_available():
            a = torch.ones(4, device="cuda")
            b = torch.ones(4, device="cuda")
            c = torch.empty(4, device="cuda")
            report("(c) torch.add(a, b, out=c), 4 elements",
                   measure(lambda: torch.add(a, b, out=c), torch.cuda.synchronize, L, B), bare_us)
        else:
            print("  (c) torch: no CUDA")
    except ImportError:
        print("  (c) torch: not installed")

    # (d) cuTile Python
    try:
        import cuda.tile as ct  # noqa: F401
        _cutile(ct, L, B, bare_us, report)
    except ImportError:
        print("  (d) cuTile Python: not installed")
    except Exception as e:  # no tileiras, API drift ...
        print(f"  (d) cuTile Python: skipped ({type(e).__name__}: {e})")
    return 0


def _cutile(ct, L, B, bare_us, report):
    import torch

    @ct.kernel
    def add_one(x, y):
        t = ct.load(x, index=(0,), shape=(4,))
        ct.store(y, index=(0,), tile=t + 1)

    x = torch.ones(4, device="cuda")
    y = torch.empty(4, device="cuda")
    s = torch.cuda.current_stream()
    ct.launch(s, (1,), add_one, (x, y))
    torch.cuda.synchronize()
    report("(d) cuTile Python ct.launch", measure(lambda: ct.launch(s, (1,), add_one, (x, y)),
                                                  torch.cuda.synchronize, L, B), bare_us)


if __name__ == "__main__":
    sys.exit(main())
