"""Where the host time of a cached launch goes, piece by piece (what launch_overhead.py sums up).

    python benchmarks/launch_breakdown.py [--launches 200] [--batches 30]

Each row is a median over batches of host microseconds per call; differences between rows are the
cost of one step (the driver call for this kernel, classification, the op, the partition, the
future). Without a GPU it says so and exits 0.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from launch_overhead import N, Table, cupy_or_none, gpu_args, measure  # noqa: E402


def main(argv=None) -> int:
    args = gpu_args(__doc__, "launch_breakdown", argv, 30)
    if args is None:
        return 0
    import tilejit as tile
    from tilejit import api, native
    from tilejit.runtime import argspec
    L, B = args.launches, args.batches
    tab = Table()
    dev = tile.Device(0)
    s = dev.new_stream()
    ext = native.ext()

    @tile.entry
    def vadd(z, x, y):
        z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))

    x = api.rand((N,), seed=1).sync_on(s)
    y = api.rand((N,), seed=2).sync_on(s)
    z = api.zeros((N,)).sync_on(s)
    vadd(z.partition((N,)), x, y).sync_on(s)
    p = vadd(z.partition((N,)), x, y).prepare(s)
    exe = p.executable
    sync = s.synchronize
    if ext is not None and exe._native is not None:
        fn, ctx, layout, _checks = exe._native
        params = tuple(p.params)
        tab.add("driver: ext.launch(vadd's function, packed params)",
                measure(lambda: ext.launch(fn, ctx, 1, 1, 1, s.handle, layout, params), sync, L, B))
    tab.add("prepared p.launch()", measure(p.launch, sync, L, B))
    p.close()
    op = vadd(z.partition((N,)), x, y)
    k = vadd._native
    if k is not None:
        tab.add("Launcher.launch(args, s) (classify + lookup + pack + launch)",
                measure(lambda: k.launch(op.args, s), sync, L, B))
    tab.add("op.submit_on(s) (+ guard, future)", measure(lambda: op.submit_on(s), sync, L, B))
    tab.add("op.sync_on(s) (+ stream synchronize)", measure(lambda: op.sync_on(s), sync, L // 4, B))
    tab.add("s.synchronize() alone (idle stream)", measure(s.synchronize, sync, L, B))
    del op
    q = z.partition((N,))
    tab.add("vadd(q, x, y) alone (the lazy op)", measure(lambda: vadd(q, x, y), sync, L, B))
    q.unpartition()

    def part_unpart():
        z.partition((N,)).unpartition()
    tab.add("z.partition(t).unpartition()", measure(part_unpart, sync, L, B))
    tab.add("whole: vadd(z.partition(t), x, y).submit_on(s)",
            measure(lambda: vadd(z.partition((N,)), x, y).submit_on(s), sync, L, B))
    tab.add("classify(x) in Python (the fallback's cost per tensor)",
            measure(lambda: argspec.classify(x, None, s), sync, L, B))
    _cupy_rows(tile, vadd, argspec, L, B, tab)
    try:
        import torch
    except ImportError:
        return 0
    if not torch.cuda.is_available():
        return 0
    tx = torch.randn(N, device="cuda")
    ty = torch.randn(N, device="cuda")
    tz = torch.empty(N, device="cuda")
    ts = tile.Stream.borrow_raw(torch.cuda.current_stream())
    tsync = torch.cuda.synchronize
    tab.add("torch.add(x, y, out=z)", measure(lambda: torch.add(tx, ty, out=tz), tsync, L, B))
    tab.add("torch: torch.cuda.current_stream()", measure(torch.cuda.current_stream, tsync, L, B))
    vadd(tile.partition(tz, (N,)), tx, ty).sync_on(ts)
    top = vadd(tile.partition(tz, (N,)), tx, ty)
    if k is not None:
        tab.add("torch args: Launcher.launch(args, s)",
                measure(lambda: k.launch(top.args, ts), tsync, L, B))
    tab.add("torch args: op.submit_on(s)", measure(lambda: top.submit_on(ts), tsync, L, B))
    tab.add("torch args: whole, on torch's stream",
            measure(lambda: vadd(tile.partition(tz, (N,)), tx, ty).submit_on(ts), tsync, L, B))
    tab.add("torch args: op.sync()", measure(top.sync, tsync, L // 4, B))
    tab.add("torch args: op._default_stream() (where sync() runs)",
            measure(top._default_stream, tsync, L, B))
    tab.add("torch args: op.sync_on(ts)", measure(lambda: top.sync_on(ts), tsync, L // 4, B))
    tab.add("ts.synchronize() alone (tilejit wrapper of torch's stream, idle)",
            measure(ts.synchronize, tsync, L, B))
    cs = torch.cuda.current_stream()
    tab.add("torch: current_stream().synchronize() alone (idle)",
            measure(cs.synchronize, tsync, L, B))
    tab.add("torch: torch.add + current_stream().synchronize()",
            measure(lambda: (torch.add(tx, ty, out=tz), torch.cuda.current_stream().synchronize()),
                    tsync, L // 4, B))
    return 0


def _cupy_rows(tile, vadd, argspec, L, B, tab):
    """A CuPy argument's classification, step by step (runtime.foreign's CuPy reader)."""
    cp = cupy_or_none()
    if cp is None:
        return
    from tilejit.runtime import foreign
    x = cp.random.standard_normal(N, dtype=cp.float32)
    z = cp.empty(N, dtype=cp.float32)
    s = tile.Stream.borrow_raw(cp.cuda.get_current_stream())
    sync = s.synchronize
    vadd(tile.partition(z, (N,)), x, x).sync_on(s)
    rows = [("CuPy: classify(x)", lambda: argspec.classify(x, None, s)),
            ("CuPy: foreign.read(x)", lambda: foreign.read(x)),
            ("CuPy: x.data.ptr", lambda: x.data.ptr),
            ("CuPy: x.shape, x.strides", lambda: (x.shape, x.strides)),
            ("CuPy: x.dtype", lambda: x.dtype),
            ("CuPy: x.device.id", lambda: x.device.id),
            ("CuPy: cp.cuda.get_current_stream().ptr", lambda: cp.cuda.get_current_stream().ptr),
            ("CuPy: x.__cuda_array_interface__", lambda: x.__cuda_array_interface__),
            ("CuPy: whole, vadd(tile.partition(z, t), x, x).submit_on(s)",
             lambda: vadd(tile.partition(z, (N,)), x, x).submit_on(s))]
    for name, fn in rows:
        tab.add(name, measure(fn, sync, L, B))


if __name__ == "__main__":
    sys.exit(main())
