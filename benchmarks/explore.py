"""Exploration: tile sizes and hints for vector add and row softmax (prints a table).

    python benchmarks/explore.py

Needs a GPU and PyTorch (the baseline); without them it says so and exits 0.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tilejit as tile  # noqa: E402
from harness import Timer, baseline_torch  # noqa: E402
from kernels import time_gpu  # noqa: E402


def vadd_kernel(latency):
    def vadd(z, x, y):
        i = z.block
        z.store(x.load(i, z.shape, latency=latency) + y.load(i, z.shape, latency=latency))
    return vadd


def softmax_kernel():
    def softmax(z, x):
        t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF)
        e = tile.exp2((t - tile.max(t, axis=1, keepdims=True)) * 1.4426950408889634)
        z.store(e * (1.0 / tile.sum(e, axis=1, keepdims=True)))
    return softmax


def main() -> int:
    torch = baseline_torch("explore")
    if torch is None:
        return 0
    dev = tile.Device(0)
    stream = dev.new_stream()
    ts = torch.cuda.ExternalStream(stream.handle)
    n = 1 << 26
    with torch.cuda.stream(ts):
        xt, yt, zt = torch.rand(n, device="cuda"), torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    torch.cuda.synchronize()
    x, y, z = tile.from_dlpack(xt), tile.from_dlpack(yt), tile.from_dlpack(zt)
    gb = 3 * n * 4 / 1e9
    with torch.cuda.stream(ts):
        tms = Timer(reps=20, flush=False).ms(lambda: torch.add(xt, yt, out=zt))
    print(f"torch.add {gb / tms * 1e3:.0f} GB/s")
    for occ in (None, 2, 4):
        for lat in (None, 4):
            k = tile.entry(vadd_kernel(lat), occupancy=occ)
            for tsz in (512, 1024, 2048):
                k(z.partition((tsz,)), x, y).sync_on(stream)
                assert torch.equal(zt, xt + yt)
                ms = time_gpu(lambda: k(z.partition((tsz,)), x, y).submit_on(stream), stream, 20)
                print(f"vadd occ={occ} latency={lat} tile={tsz}: {gb / ms * 1e3:.0f} GB/s")
    r = 4096
    with torch.cuda.stream(ts):
        xt, zt = torch.randn(r, r, device="cuda"), torch.empty(r, r, device="cuda")
        tms = Timer(reps=20, flush=False).ms(lambda: torch.softmax(xt, dim=1))
    torch.cuda.synchronize()
    x, z = tile.from_dlpack(xt), tile.from_dlpack(zt)
    gb = 2 * r * r * 4 / 1e9
    print(f"torch softmax {gb / tms * 1e3:.0f} GB/s")
    for occ in (None, 2):
        k = tile.entry(softmax_kernel(), occupancy=occ)
        for rows in (2, 4, 8, 16):
            k(z.partition((rows, r)), x).sync_on(stream)
            assert torch.allclose(zt, torch.softmax(xt, dim=1), atol=1e-5)
            ms = time_gpu(lambda: k(z.partition((rows, r)), x).submit_on(stream), stream, 20)
            print(f"softmax exp2 occ={occ} rows={rows}: {gb / ms * 1e3:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
