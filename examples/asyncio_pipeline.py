"""An asyncio pipeline of DeviceOps: chunks of host data copied in, processed by a kernel and
copied out, several chunks in flight at once without blocking the event loop.

    python examples/asyncio_pipeline.py

`await op` submits the op on a stream of the default policy (a round-robin pool) and suspends
the coroutine until the GPU is done, so other coroutines run meanwhile; `asyncio.gather` keeps
several chunks in flight on different streams.
"""
import asyncio
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend


@tile.entry
def normalize(z, x):
    """Each row scaled to unit L2 norm."""
    t = x.load(z.block, z.shape, padding=tile.PaddingMode.ZERO)
    z.store(t * tile.rsqrt(tile.sum(t * t, axis=1, keepdims=True) + 1e-12))


async def process(chunk: np.ndarray) -> np.ndarray:
    x = await api.from_numpy(chunk)                       # host -> device
    z = await api.empty(chunk.shape)
    await normalize(z.partition((8, chunk.shape[1])), x)  # the kernel
    return await z.to_host()                              # device -> host


async def pipeline(chunks):
    return await asyncio.gather(*(process(c) for c in chunks))


def main() -> int:
    rows, cols, n_chunks = (4096, 1024, 16) if current_backend() == "cuda" else (64, 128, 4)
    rng = np.random.default_rng(0)
    chunks = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(n_chunks)]
    results = asyncio.run(pipeline(chunks))
    ok = all(np.allclose(r, c / np.linalg.norm(c, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
             for r, c in zip(results, chunks))
    print(f"asyncio_pipeline: {n_chunks} chunks of {rows}x{cols} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
