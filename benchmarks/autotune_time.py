"""How long tile.autotune takes, cold (compile + time) and warm (disk cache): 8 matmul configs,
and the gallery matmul (``examples/matmul.py``) over the default search space (no ``configs=``).

    python benchmarks/autotune_time.py

Each run is a fresh process with an empty (cold) or primed (warm) cache directory; reported is
the wall time of the first call, tuning included. Without a GPU it says so and exits 0.
"""
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys, time
sys.path.insert(0, os.environ["TJ_ROOT"])
import torch, tilejit as tile
DEFAULT_SPACE = os.environ.get("TJ_DEFAULT_SPACE") == "1"
CONFIGS = [tile.Config(tile=(bm, bn), BK=bk, occupancy=occ)
           for (bm, bn, bk, occ) in [(128, 128, 64, None), (128, 128, 32, None), (128, 64, 64, 2),
                                     (64, 128, 64, 2), (128, 256, 64, None), (256, 128, 64, None),
                                     (64, 64, 64, 4), (128, 128, 64, 2)]]
@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
    c.store(acc.astype(c.dtype))
if DEFAULT_SPACE:
    sys.path.insert(0, os.path.join(os.environ["TJ_ROOT"], "examples"))
    from matmul import matmul
else:
    matmul = tile.autotune(configs=CONFIGS, key=["a", "b"])(matmul)
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
c = torch.empty(4096, 4096, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t0 = time.perf_counter()
matmul(c, a, b).sync()
dt = time.perf_counter() - t0
ok = torch.allclose(c.float(), a.float() @ b.float(), rtol=2e-2, atol=1.0)
print(f"{dt:.3f} {ok}")
print(matmul.tuning_report(), file=sys.stderr)
"""


def main() -> int:
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, root)
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"autotune_time: no GPU ({backend.reason()}); nothing to measure")
        return 0
    for space, what in (("0", "8-config matmul"), ("1", "default-space gallery matmul")):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TJ_ROOT=root, TILEJIT_CACHE_DIR=d, TJ_DEFAULT_SPACE=space)
            for label in ("cold (empty cache)", "warm (disk cache)"):
                r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                                   text=True, timeout=300)
                if r.returncode:
                    print(r.stdout, r.stderr)
                    return 1
                dt, ok = r.stdout.split()
                print(f"{what} 4096^3 fp16, first call {label}: {float(dt):.2f} s "
                      f"(result ok: {ok})")
                if label.startswith("cold"):
                    print(r.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
