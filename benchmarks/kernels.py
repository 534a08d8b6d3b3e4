"""Kernel throughput against PyTorch (cuBLAS / its elementwise kernels), measured in one run.

    python benchmarks/kernels.py [--quick]

* vector add, 2^26 float32: GB/s (bytes read + written) for tile sizes 1024 and 4096;
* matmul fp16 / bf16, 4096^3 and 8192^3: TFLOP/s for a 128x128x64 tile kernel with a K loop;
* row softmax, 4096 x 4096 float32: GB/s.

Host time per launch is measured by ``launch_overhead.py``.

Each GPU figure is the median of repeated runs timed with CUDA events after a warm-up; the PyTorch
baseline runs in the same process on the same inputs. Results are checked before timing.
Without a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tilejit as tile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Timer  # noqa: E402


@tile.entry
def vadd(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
    c.store(acc.astype(c.dtype))


@tile.entry
def matmul_grouped(c, a, b, BK: tile.Constant[int], GROUP: tile.Constant[int]):
    """The same, on a 1-D grid walked in groups of GROUP row-tiles (reuses B tiles in L2)."""
    BM, BN = c.shape
    num_m = tile.cdiv(a.shape[0], BM)
    num_n = tile.cdiv(b.shape[1], BN)
    pid = tile.bid(0)
    width = GROUP * num_n
    first_m = (pid // width) * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((pid_m, k), (BM, BK)), b.load((k, pid_n), (BK, BN)), acc)
    tile.store(c, (pid_m, pid_n), acc.astype(c.dtype))


@tile.entry
def softmax(z, x):
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store(e / tile.sum(e, axis=1, keepdims=True))


def time_gpu(fn, stream, reps: int, warmup: int = 3) -> float:
    """Median milliseconds of ``fn()`` (which queues work on ``stream``) over ``reps`` runs."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    out = []
    for _ in range(reps):
        a = tile.Event(timing=True).record(stream)
        fn()
        b = tile.Event(timing=True).record(stream)
        b.synchronize()
        out.append(a.elapsed_ms(b))
    return statistics.median(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    args = ap.parse_args(argv)
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"kernels: no GPU ({backend.reason()}); nothing to measure")
        return 0
    import torch

    dev = tile.Device(0)
    stream = dev.new_stream()
    ts = torch.cuda.ExternalStream(stream.handle)
    reps = 5 if args.quick else 20
    # torch's side: CUDA events on torch's current stream (``ts`` below), no L2 flush, like the
    # tilejit side
    time_torch = Timer(reps=reps, flush=False).ms
    print(f"device: {dev.name} ({dev.arch}); torch {torch.__version__}; median of {reps} runs")

    # --- vector add -------------------------------------------------------------------------
    n = 1 << (22 if args.quick else 26)
    with torch.cuda.stream(ts):
        xt = torch.rand(n, device="cuda")
        yt = torch.rand(n, device="cuda")
        zt = torch.empty(n, device="cuda")
    torch.cuda.synchronize()
    x, y, z = tile.from_dlpack(xt), tile.from_dlpack(yt), tile.from_dlpack(zt)
    gb = 3 * n * 4 / 1e9
    for tsz in (1024, 4096, 16384):
        vadd(z.partition((tsz,)), x, y).sync_on(stream)
        assert torch.equal(zt, xt + yt)
        ms = time_gpu(lambda: vadd(z.partition((tsz,)), x, y).submit_on(stream), stream, reps)
        print(f"vector add 2^{n.bit_length() - 1} f32, tile {tsz}: {ms * 1e3:8.1f} us  "
              f"{gb / ms * 1e3:7.0f} GB/s")
    with torch.cuda.stream(ts):
        ms = time_torch(lambda: torch.add(xt, yt, out=zt))
    print(f"vector add torch.add:            {ms * 1e3:8.1f} us  {gb / ms * 1e3:7.0f} GB/s")

    # --- matmul -------------------------------------------------------------------------------
    sizes = (2048,) if args.quick else (4096, 8192)
    for dt_t, dt in ((torch.float16, tile.float16), (torch.bfloat16, tile.bfloat16)):
        for m in sizes:
            with torch.cuda.stream(ts):
                at = torch.randn(m, m, device="cuda", dtype=dt_t)
                bt = torch.randn(m, m, device="cuda", dtype=dt_t)
                ct = torch.empty(m, m, device="cuda", dtype=dt_t)
            torch.cuda.synchronize()
            a, b, c = tile.from_dlpack(at), tile.from_dlpack(bt), tile.from_dlpack(ct)
            flops = 2 * m ** 3
            t0 = time.perf_counter()
            matmul(c.partition((128, 128)), a, b, 64).sync_on(stream)
            first = time.perf_counter() - t0
            ref = at.float() @ bt.float()
            err = (ct.float() - ref).abs().max().item() / ref.abs().max().item()
            assert err < 2e-2, err
            ms = time_gpu(lambda: matmul(c.partition((128, 128)), a, b, 64).submit_on(stream),
                          stream, reps)
            g = (m // 128) ** 2
            matmul_grouped(c.partition((128, 128)), a, b, 64, 8).grid((g, 1, 1)).sync_on(stream)
            errg = (ct.float() - ref).abs().max().item() / ref.abs().max().item()
            assert errg < 2e-2, errg
            gms = time_gpu(lambda: matmul_grouped(c.partition((128, 128)), a, b, 64, 8)
                           .grid((g, 1, 1)).submit_on(stream), stream, reps)
            with torch.cuda.stream(ts):
                tms = time_torch(lambda: torch.matmul(at, bt, out=ct))
            print(f"matmul {m}^3 {dt.name}: tilejit 2-D grid {flops / ms / 1e9:6.0f} TFLOP/s, "
                  f"grouped 1-D grid {flops / gms / 1e9:6.0f} TFLOP/s, torch "
                  f"{flops / tms / 1e9:6.0f} TFLOP/s  (first call incl. compile {first:.2f} s, "
                  f"rel err {err:.1e})")

    # --- softmax ------------------------------------------------------------------------------
    r = 2048 if args.quick else 4096
    with torch.cuda.stream(ts):
        xt = torch.randn(r, r, device="cuda")
        zt = torch.empty(r, r, device="cuda")
    torch.cuda.synchronize()
    x, z = tile.from_dlpack(xt), tile.from_dlpack(zt)
    gb = 2 * r * r * 4 / 1e9
    with torch.cuda.stream(ts):
        tms = time_torch(lambda: torch.softmax(xt, dim=1))
    for rows in (1, 2, 4):
        softmax(z.partition((rows, r)), x).sync_on(stream)
        assert torch.allclose(zt, torch.softmax(xt, dim=1), atol=1e-6)
        ms = time_gpu(lambda: softmax(z.partition((rows, r)), x).submit_on(stream), stream, reps)
        print(f"softmax {r}x{r} f32, {rows} row(s)/block: tilejit {gb / ms * 1e3:6.0f} GB/s, "
              f"torch {gb / tms * 1e3:6.0f} GB/s")

    print(f"stats: {vadd.stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
