"""CUDA graphs: a loop of launches captured once and replayed.

    python examples/cuda_graphs.py

A time-stepping loop (an explicit 1-D heat equation step, u <- u + a * laplacian(u), written as
two kernels per step that swap buffers) is recorded for 50 steps with `tile.CudaGraph.scope`
and replayed; each replay costs one driver call instead of 100 launches. The result is checked
against NumPy running the same steps.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def heat_step(out, u, a, BLOCK: tile.Constant[int]):
    """out[i] = u[i] + a * (u[i-1] - 2 u[i] + u[i+1]), with fixed ends."""
    i = tile.bid(0) * BLOCK + tile.arange(BLOCK)
    n = u.shape[0]
    inside = (i > 0) & (i < n - 1)
    c = tile.gather(u, i, mask=i < n)
    left = tile.gather(u, i - 1, mask=inside)
    right = tile.gather(u, i + 1, mask=inside)
    new = tile.where(inside, c + a * (left - 2.0 * c + right), c)
    tile.scatter(out, i, new, mask=i < n)


def main() -> int:
    n = 1 << 20 if current_backend() == "cuda" else 2048
    steps, block, a = 50, 1024, 0.2
    u0 = np.zeros(n, np.float32)
    u0[n // 2 - n // 8: n // 2 + n // 8] = 1.0
    u = api.from_numpy(u0).sync()
    v = api.zeros((n,)).sync()
    grid = (-(-n // block), 1, 1)
    stream = tile.Device(0).new_stream()
    with tile.CudaGraph.scope(stream) as g:             # records (and runs) 2 x steps launches
        for _ in range(steps):
            g.record(heat_step(tile.atomic(v), u, a, block).grid(grid))
            g.record(heat_step(tile.atomic(u), v, a, block).grid(grid))
    graph = g.graph
    for _ in range(3):                                   # three replays: 3 x 100 more steps
        graph.launch().sync_on(stream)
    ref = u0.copy()
    for _ in range(2 * steps * 4):
        nxt = ref.copy()
        nxt[1:-1] = ref[1:-1] + np.float32(a) * (ref[:-2] - 2 * ref[1:-1] + ref[2:])
        ref = nxt
    ok = np.allclose(u.to_numpy(), ref, rtol=1e-4, atol=1e-5)
    print(f"cuda_graphs: {2 * steps} launches captured, 3 replays, n={n} "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
