"""Host time per kernel call: tilejit's launch paths against the floor and its peers, same process.

    python benchmarks/launch_overhead.py [--launches 200] [--batches 40] [--json OUT]

The kernel is a cached one-block vector add of 1,024 float32 (what the issue measured), written
in each system: tilejit, cuTile Python (``cuda.tile``, when installed), Triton and torch.add.
Rows:

* floors: a bare ``cuLaunchKernel`` (cuda-bindings, pre-packed arguments) of a no-op PTX kernel,
  and tilejit's C launcher calling the driver directly;
* peers: ``torch.add(x, y, out=z)``, cuTile ``ct.launch(stream, grid, kernel, (x, y, z, 1024))`` and
  Triton with the same torch tensors;
* tilejit with torch tensors: every argument torch (``tile.partition(z, t)`` or
  ``tile.from_dlpack(z).partition(t)`` for the
  output), on torch's current stream and on a tilejit stream; ``from_dlpack`` alone;
* tilejit with tilejit tensors: a new partition per call, the op reused, a prepared launch;
* ``sync()`` round trips (launch + wait), tilejit against torch;
* small NumPy inputs (copied in per call) against ``torch.from_numpy(a).cuda()`` round trips;
* CUDA graph replay.

Launches are timed in batches with a synchronize between batches, outside the timed region; the
median over batches is reported. Without a GPU it says so and exits 0.
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry noop(.param .u64 p, .param .u32 n) { ret; }
"""
N = 1024


def measure(fn, sync, launches: int, batches: int) -> float:
    """Median host microseconds per call of ``fn`` over ``batches`` batches of ``launches``."""
    for _ in range(3):
        for _ in range(launches):
            fn()
        sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        per.append((time.perf_counter() - t0) / launches * 1e6)
        sync()
    return statistics.median(per)


def measure_pair(fa, fb, sync, launches: int, batches: int):
    """Medians ``(a, b)`` of host microseconds per call, batches of ``fa`` and ``fb``
    alternating, so that drift in the machine's speed hits both sides of a ratio alike."""
    for f in (fa, fb):
        for _ in range(3):
            for _ in range(launches):
                f()
            sync()
    pa, pb = [], []
    for _ in range(batches):
        for f, per in ((fa, pa), (fb, pb)):
            t0 = time.perf_counter()
            for _ in range(launches):
                f()
            per.append((time.perf_counter() - t0) / launches * 1e6)
            sync()
    return statistics.median(pa), statistics.median(pb)


class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, us, ref=None, note=""):
        self.rows.append({"name": name, "us": us, "ref": ref, "note": note})
        ratio = f"  {us / ref:5.2f}x" if ref else ""
        print(f"  {name:<64s} {us:8.2f} us{ratio} {note}", flush=True)


def gpu_args(doc: str, script: str, argv, batches: int, json: bool = False):
    """The command line of a host-time script (``--launches``, ``--batches``), or None, having
    said so, when there is no GPU to measure."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--launches", type=int, default=200)
    ap.add_argument("--batches", type=int, default=batches)
    if json:
        ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"{script}: no GPU ({backend.reason()}); nothing to measure")
        return None
    return args


def main(argv=None) -> int:
    args = gpu_args(__doc__, "launch_overhead", argv, 40, json=True)
    if args is None:
        return 0
    from tilejit.runtime import driver
    import tilejit as tile
    from tilejit import api, native
    L, B = args.launches, args.batches
    tab = Table()
    dev = tile.Device(0)
    print(f"device: {dev.name} ({dev.arch}), driver CUDA {driver.driver_version()}, python "
          f"{sys.version.split()[0]}, tilejit launch path: {native.status()}")
    print(f"median of {B} batches x {L} calls; ratios against the row named in brackets")

    # --- floors ----------------------------------------------------------------------------------
    stream = dev.new_stream()
    drv = driver.drv
    noop = tile.load_module_from_ptx(PTX).function("noop")
    buf = api.empty((N,), tile.float32).sync_on(stream)
    p_val, n_val = ctypes.c_uint64(buf.device_pointer), ctypes.c_uint32(N)
    arr = (ctypes.c_void_p * 2)(ctypes.addressof(p_val), ctypes.addressof(n_val))
    kp, f_cu, s_cu = ctypes.addressof(arr), noop._cu, stream._cu
    bare_fn = lambda: drv.cuLaunchKernel(f_cu, 1, 1, 1, 1, 1, 1, 0, s_cu, kp, 0)  # noqa: E731
    bare = measure(bare_fn, stream.synchronize, L, B)
    tab.add("[bare] cuLaunchKernel, cuda-bindings, pre-packed args", bare)
    ext = native.ext()
    if ext is not None:
        fn, ctx, sh, params = int(noop._cu), dev.context_handle, stream.handle, (buf.device_pointer, N)
        tab.add("tilejit C launcher, raw (pack + driver call)",
                measure(lambda: ext.launch(fn, ctx, 1, 1, 1, sh, b"QI", params),
                        stream.synchronize, L, B), bare)

    @tile.entry
    def vadd(z, x, y):
        z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))

    try:
        import torch
        has_torch = torch.cuda.is_available()
    except ImportError:
        has_torch = False
    if not has_torch:
        print("  torch with CUDA is not available: peer rows skipped")
        _tilejit_native_rows(tile, api, vadd, stream, L, B, tab, bare, None)
        _write(args.json, tab)
        return 0

    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    z = torch.empty(N, device="cuda")
    ts = torch.cuda.current_stream()
    tsync = torch.cuda.synchronize

    # --- peers --------------------------------------------------------------------------------------
    torch_add = measure(lambda: torch.add(x, y, out=z), tsync, L, B)
    tab.add("[torch] torch.add(x, y, out=z)", torch_add, bare)
    cutile, cutile_fn = _cutile_row(torch, x, y, z, ts, L, B, tab, bare)
    _triton_row(torch, x, y, z, L, B, tab, bare)

    # --- tilejit with torch tensors -----------------------------------------------------------------
    s_t = tile.Stream.borrow_raw(ts)
    vadd(tile.from_dlpack(z).partition((N,)), x, y).sync_on(s_t)
    torch.testing.assert_close(z, x + y)
    ref = cutile or torch_add
    vadd(tile.partition(z, (N,)), x, y).sync_on(s_t)
    tab.add("tilejit lazy, torch x,y,z: vadd(tile.partition(z, t), x, y).submit_on(s)",
            measure(lambda: vadd(tile.partition(z, (N,)), x, y).submit_on(s_t), tsync, L, B),
            ref, "(s = torch's stream)")
    tab.add("  same, .sync() (torch's current stream, then wait)",
            measure(lambda: vadd(tile.partition(z, (N,)), x, y).sync(), tsync, L, B))
    tab.add("  tile.partition(torch_tensor, t) alone",
            measure(lambda: tile.partition(z, (N,)), tsync, L, B))
    tab.add("tilejit lazy, torch x,y,z: vadd(from_dlpack(z).partition(t), x, y).submit_on(s)",
            measure(lambda: vadd(tile.from_dlpack(z).partition((N,)), x, y).submit_on(s_t),
                    tsync, L, B), ref, "(s = torch's stream)")
    mine = dev.new_stream()
    tab.add("  same, on a tilejit stream (ordered after torch's with an event)",
            measure(lambda: vadd(tile.from_dlpack(z).partition((N,)), x, y).submit_on(mine),
                    mine.synchronize, L, B), ref)
    zt = tile.from_dlpack(z)
    tab.add("  same, output pre-converted: vadd(zt.partition(t), x, y)",
            measure(lambda: vadd(zt.partition((N,)), x, y).submit_on(s_t), tsync, L, B), ref)
    tab.add("tile.from_dlpack(torch_tensor)", measure(lambda: tile.from_dlpack(x), tsync, L, B))
    tab.add("tile.from_dlpack(z).partition(t)",
            measure(lambda: tile.from_dlpack(z).partition((N,)), tsync, L, B))
    vadd(tile.from_dlpack(z).partition((N,)), x, y).sync()
    tab.add("tilejit sync(), torch x,y,z (launch + wait)",
            measure(lambda: vadd(tile.from_dlpack(z).partition((N,)), x, y).sync(), tsync, L, B))

    def torch_sync():
        torch.add(x, y, out=z)
        ts.synchronize()

    tab.add("  torch.add + stream synchronize", measure(torch_sync, tsync, L, B))
    _tilejit_native_rows(tile, api, vadd, stream, L, B, tab, bare, torch_add)
    _numpy_rows(torch, tile, api, vadd, stream, L, B, tab)
    _cupy_rows(tile, vadd, L, B, tab, ref)
    _target_rows(torch, tile, api, vadd, x, y, z, s_t, stream, L, B, tab, bare_fn, cutile_fn)
    _write(args.json, tab)
    return 0


def _target_rows(torch, tile, api, vadd, x, y, z, s_t, stream, L, B, tab, bare_fn, cutile_fn):
    """The issue's three ratios again, each side measured in alternating batches."""
    print("targets, measured in alternating batches (ratio: tilejit / peer):")
    tsync = torch.cuda.synchronize
    if cutile_fn is not None:
        a, b = measure_pair(lambda: vadd(tile.partition(z, (N,)), x, y).submit_on(s_t), cutile_fn,
                            tsync, L, B)
        tab.add("target: lazy call, torch x,y,z / cuTile ct.launch", a, b, f"(cuTile {b:.2f} us)")
    ts = torch.cuda.current_stream()

    def torch_sync():
        torch.add(x, y, out=z)
        ts.synchronize()
    a, b = measure_pair(lambda: vadd(tile.partition(z, (N,)), x, y).sync(), torch_sync,
                        tsync, max(10, L // 4), B)
    tab.add("launch + wait: torch x,y,z .sync() / torch.add + synchronize", a, b,
            f"(torch {b:.2f} us)")
    xt = api.rand((N,), seed=1).sync_on(stream)
    yt = api.rand((N,), seed=2).sync_on(stream)
    zt = api.zeros((N,)).sync_on(stream)
    vadd(zt.partition((N,)), xt, yt).sync_on(stream)
    a, b = measure_pair(lambda: vadd(zt.partition((N,)), xt, yt).submit_on(stream),
                        lambda: torch.add(x, y, out=z), tsync, L, B)
    tab.add("target: lazy call, tilejit tensors / torch.add", a, b, f"(torch.add {b:.2f} us)")
    p = vadd(zt.partition((N,)), xt, yt).prepare(stream)
    a, b = measure_pair(p.launch, bare_fn, tsync, L, B)
    tab.add("target: prepared p.launch() / bare cuLaunchKernel", a, b, f"(bare {b:.2f} us)")
    p.close()


def _tilejit_native_rows(tile, api, vadd, stream, L, B, tab, bare, torch_add):
    xt = api.rand((N,), seed=1).sync_on(stream)
    yt = api.rand((N,), seed=2).sync_on(stream)
    zt = api.zeros((N,)).sync_on(stream)
    vadd(zt.partition((N,)), xt, yt).sync_on(stream)
    ref = torch_add or bare
    tab.add("tilejit lazy, tilejit tensors: vadd(z.partition(t), x, y).submit_on(s)",
            measure(lambda: vadd(zt.partition((N,)), xt, yt).submit_on(stream),
                    stream.synchronize, L, B), ref)
    op = vadd(zt.partition((N,)), xt, yt)
    tab.add("  op reused: op.submit_on(s)", measure(lambda: op.submit_on(stream),
                                                   stream.synchronize, L, B), ref)
    del op
    p = vadd(zt.partition((N,)), xt, yt).prepare(stream)
    tab.add("  prepared: p.launch()", measure(p.launch, stream.synchronize, L, B), bare,
            "[bare]")
    p.close()
    g = vadd(zt.partition((N,)), xt, yt).graph_on(stream)
    gl = g.launch()
    tab.add("  CUDA graph of one launch: graph.launch().submit_on(s)",
            measure(lambda: gl.submit_on(stream), stream.synchronize, L, B), bare)
    with tile.CudaGraph.scope(stream) as sc:
        for _ in range(100):
            sc.record(vadd(zt.partition((N,)), xt, yt))
    g100 = sc.graph.launch()
    tab.add("  CUDA graph of 100 launches, per kernel",
            measure(lambda: g100.submit_on(stream), stream.synchronize, max(10, L // 10), B) / 100,
            bare)


def _numpy_rows(torch, tile, api, vadd, stream, L, B, tab):
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    zt = api.zeros((N,)).sync_on(stream)
    vadd(zt.partition((N,)), a, b).sync_on(stream)
    np.testing.assert_allclose(zt.to_numpy(), a + b, rtol=1e-6)
    n = max(10, L // 4)
    tj = measure(lambda: vadd(zt.partition((N,)), a, b).sync_on(stream), stream.synchronize, n, B)

    def torch_round_trip():
        xa = torch.from_numpy(a).cuda()
        xb = torch.from_numpy(b).cuda()
        torch.add(xa, xb).cpu()

    tr = measure(torch_round_trip, torch.cuda.synchronize, n, B)
    tab.add("[numpy] torch: from_numpy(a).cuda() x2, add, .cpu()", tr)
    tab.add("tilejit: vadd(z.partition(t), a_np, b_np).sync_on(s) (copies in)", tj, tr)


def cupy_or_none():
    """CuPy with a GPU, or None (having said so)."""
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception:
        print("  CuPy not available: rows skipped")
        return None
    return cp


def _cupy_rows(tile, vadd, L, B, tab, ref):
    cp = cupy_or_none()
    if cp is None:
        return
    x = cp.random.standard_normal(N, dtype=cp.float32)
    y = cp.random.standard_normal(N, dtype=cp.float32)
    z = cp.empty(N, dtype=cp.float32)
    s = tile.Stream.borrow_raw(cp.cuda.get_current_stream())
    vadd(tile.from_dlpack(z).partition((N,)), x, y).sync_on(s)
    assert bool(cp.allclose(z, x + y))
    found = _cutile_kernel()
    if found is not None:
        ct, vadd_ct = found
        cs = cp.cuda.get_current_stream()
        try:
            ct.launch(cs, (1,), vadd_ct, (x, y, z, N))
            cs.synchronize()
            assert bool(cp.allclose(z, x + y))
            ref = measure(lambda: ct.launch(cs, (1,), vadd_ct, (x, y, z, N)), s.synchronize, L, B)
            tab.add("[cutile-cupy] cuTile Python ct.launch with CuPy x, y, z", ref)
            vadd(tile.partition(z, (N,)), x, y).sync_on(s)
            a, b = measure_pair(lambda: vadd(tile.partition(z, (N,)), x, y).submit_on(s),
                                lambda: ct.launch(cs, (1,), vadd_ct, (x, y, z, N)),
                                s.synchronize, L, B)
            tab.add("CuPy lazy call / cuTile with CuPy, alternating batches", a, b,
                    f"(cuTile {b:.2f} us)")
        except Exception as e:
            print(f"  cuTile Python with CuPy: skipped ({type(e).__name__}: {e})")
    tab.add("tilejit lazy, CuPy x,y,z on CuPy's stream: vadd(tile.partition(z, t), x, y)",
            measure(lambda: vadd(tile.partition(z, (N,)), x, y).submit_on(s),
                    s.synchronize, L, B), ref)
    tab.add("  same, from_dlpack(z).partition(t) for the output",
            measure(lambda: vadd(tile.from_dlpack(z).partition((N,)), x, y).submit_on(s),
                    s.synchronize, L, B), ref)


def _cutile_kernel():
    """``(cuda.tile, vadd)`` in cuTile Python, or None when it is not installed."""
    try:
        import cuda.tile as ct
    except ImportError:
        print("  cuTile Python: not installed")
        return None

    @ct.kernel
    def vadd_ct(a, b, c, TILE: ct.Constant[int]):
        bid = ct.bid(0)
        ta = ct.load(a, index=(bid,), shape=(TILE,))
        tb = ct.load(b, index=(bid,), shape=(TILE,))
        ct.store(c, index=(bid,), tile=ta + tb)
    return ct, vadd_ct


def _cutile_row(torch, x, y, z, ts, L, B, tab, bare):
    found = _cutile_kernel()
    if found is None:
        return None, None
    ct, vadd_ct = found
    try:
        ct.launch(ts, (1,), vadd_ct, (x, y, z, N))
        torch.cuda.synchronize()
        torch.testing.assert_close(z, x + y)
    except Exception as e:           # no tileiras, API drift ...
        print(f"  cuTile Python: skipped ({type(e).__name__}: {e})")
        return None, None

    def fn():
        ct.launch(ts, (1,), vadd_ct, (x, y, z, N))
    us = measure(fn, torch.cuda.synchronize, L, B)
    tab.add("[cutile] cuTile Python ct.launch(s, (1,), k, (x, y, z, 1024))", us, bare)
    return us, fn


def _triton_row(torch, x, y, z, L, B, tab, bare):
    try:
        import triton
        import triton.language as tl
    except ImportError:
        print("  Triton: not installed")
        return

    @triton.jit
    def vadd_tr(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    vadd_tr[(1,)](x, y, z, N, BLOCK=N)
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)
    tab.add("Triton vadd[(1,)](x, y, z, n, BLOCK=1024)",
            measure(lambda: vadd_tr[(1,)](x, y, z, N, BLOCK=N), torch.cuda.synchronize, L, B),
            bare)


def _write(path, tab):
    if path:
        with open(path, "w") as f:
            json.dump(tab.rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
