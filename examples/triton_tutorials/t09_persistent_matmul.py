"""Triton tutorial 09, persistent matmul, in tilejit: one wave of blocks loops over all tiles.

    python examples/triton_tutorials/t09_persistent_matmul.py

The tutorial launches as many programs as the GPU has SMs; each walks the output tiles with a
stride of the grid (in the grouped order of tutorial 03), so no block is scheduled twice and the
last wave's tail is spread over every SM. That is `matmul_scheduled` with PERSISTENT=True in
examples/matmul.py; the file runs it next to the one-block-per-tile form.

The tutorial's TMA variants need no separate kernel: tilejit's tile loads use TMA where the layout
allows it (`allow_tma=True` is the default), so the plain kernel is the TMA one, and
``tma=False`` below (``allow_tma=False`` on its loads) is the one without, as the tutorial's
pointer-based persistent kernel. Its warp-specialized variant cannot be written: Tile IR has no
warps or warp roles (a block is one thread of tile operations), and `tileiras` chooses the
pipelining and warp specialization that Triton's ``num_stages`` and ``warp_specialize`` set.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

import tilejit as tile  # noqa: E402
from tilejit import api  # noqa: E402
from tilejit.runtime import current_backend  # noqa: E402

from matmul import matmul_scheduled, scheduled_grid  # noqa: E402


def persistent_matmul(a, b, c, tiles, persistent=True, sms=None, occupancy=1, tma=True):
    """Launch ``matmul_scheduled`` (``c`` a writable fp16 tensor): one wave of
    SMs x occupancy blocks, or with ``persistent=False`` one block per tile; ``tma=False``
    keeps the loads off the TMA unit."""
    bm, bn, bk = tiles
    cfg = tile.Config(BM=bm, BN=bn, BK=bk, GROUP=8, PERSISTENT=persistent, occupancy=occupancy)
    grid = scheduled_grid(cfg, {"a": a, "b": b}, sms=sms)
    return matmul_scheduled(tile.atomic(c), a, b, bm, bn, bk, 8, persistent, tma).grid(grid)


def main() -> int:
    gpu = current_backend() == "cuda"
    m, k, n = (4096, 4096, 4096) if gpu else (128, 64, 160)
    tiles = (128, 128, 64) if gpu else (32, 32, 32)
    sms = None if gpu else 3                        # the simulator: a wave of 3 blocks
    rng = np.random.default_rng(0)
    an = rng.standard_normal((m, k)).astype(np.float16)
    bn_ = rng.standard_normal((k, n)).astype(np.float16)
    a, b = api.from_numpy(an).sync(), api.from_numpy(bn_).sync()
    ref = an.astype(np.float32) @ bn_.astype(np.float32)
    ok = True
    for persistent, tma in ((True, True), (True, False), (False, True)):
        c = api.empty((m, n), tile.float16).sync()
        persistent_matmul(a, b, c, tiles, persistent, sms, tma=tma).sync()
        got = c.to_numpy().astype(np.float32)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        ok &= bool(err < 1e-2)
        print(f"  persistent={persistent} tma={tma}: max relative error {err:.1e}")
    print(f"t09_persistent_matmul: fp16 {m}x{k}x{n} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
