"""Warm start: the first call of a cached kernel in a new process, tilejit against cuTile Python.

    python benchmarks/warm_start.py [--runs 5]

Each measurement is a fresh Python process that initializes torch (CUDA context, a tensor op),
then times ``import`` of the library and the first call of a 2048x2048 fp16 matmul with torch
tensors, synchronized. "cold" runs on an empty cache directory, "warm" on the one the cold run
filled. Medians over ``--runs`` processes. Without a GPU it says so and exits 0.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# both children: torch initialized, the inputs and the result check made before the clock starts
SETUP = textwrap.dedent('''
    import json, sys, time
    import torch
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    c = torch.empty(2048, 2048, device="cuda", dtype=torch.float16)
    CHECK = lambda a, b, c: torch.allclose(c.float(), a.float() @ b.float(), atol=0.5, rtol=2e-2)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
''')

TILEJIT = SETUP + textwrap.dedent('''
    import tilejit as tile
    t1 = time.perf_counter()

    @tile.entry
    def matmul(c, a, b, BK: tile.Constant[int]):
        BM, BN = c.shape
        bm, bn = c.block
        acc = tile.zeros((BM, BN), tile.float32)
        for k in range(tile.cdiv(a.shape[1], BK)):
            acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
        c.store(acc.astype(c.dtype))

    matmul(tile.from_dlpack(c).partition((128, 128)), a, b, 64).sync()
    t2 = time.perf_counter()
    ok = CHECK(a, b, c)
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t2 - t1) * 1e3, "ok": ok,
                      "numba": "numba" in sys.modules}))
''')

CUTILE = SETUP + textwrap.dedent('''
    import cuda.tile as ct
    t1 = time.perf_counter()

    @ct.kernel
    def matmul(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
        bm, bn = ct.bid(0), ct.bid(1)
        acc = ct.full((BM, BN), 0.0, dtype=ct.float32)
        for k in range(ct.cdiv(a.shape[1], BK)):
            acc = ct.mma(ct.load(a, index=(bm, k), shape=(BM, BK)),
                         ct.load(b, index=(k, bn), shape=(BK, BN)), acc)
        ct.store(c, index=(bm, bn), tile=acc.astype(c.dtype))

    ct.launch(torch.cuda.current_stream(), (16, 16, 1), matmul, (a, b, c, 128, 128, 64))
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    ok = CHECK(a, b, c)
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t2 - t1) * 1e3, "ok": ok}))
''')


def run(code: str, env: dict, path: str) -> dict:
    # from a file (cuTile Python reads its kernels' source with inspect) at a fixed path: the
    # file name is part of what a compiled kernel depends on (its line tables)
    with open(path, "w") as f:
        f.write(code)
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env,
                       timeout=600, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def series(name: str, code: str, cache_var: str, runs: int):
    d = tempfile.mkdtemp(prefix=f"warm-{name}-")
    env = dict(os.environ, **{cache_var: d})
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    path = os.path.join(d, "first_call.py")
    cold = run(code, env, path)
    warm = [run(code, env, path) for _ in range(runs)]
    med = {k: statistics.median(w[k] for w in warm) for k in ("import_ms", "first_call_ms")}
    return cold, warm, med


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        print(f"warm_start: no GPU ({backend.reason()}); nothing to measure")
        return 0
    print(f"2048^2 fp16 matmul, first call after import, torch initialized; median of "
          f"{args.runs} warm processes")
    rows = [("tilejit", TILEJIT, "TILEJIT_CACHE_DIR")]
    try:
        import cuda.tile  # noqa: F401
        rows.append(("cuTile Python", CUTILE, "CUDA_TILE_CACHE_DIR"))
    except ImportError:
        print("  cuTile Python not installed")
    for name, code, var in rows:
        try:
            cold, warm, med = series(name, code, var, args.runs)
        except Exception as e:
            print(f"  {name}: failed: {e}")
            continue
        extra = f", numba imported in warm runs: {any(w.get('numba') for w in warm)}" \
            if "numba" in cold else ""
        print(f"  {name:<14} cold: import {cold['import_ms']:7.1f} ms, first call "
              f"{cold['first_call_ms']:7.1f} ms | warm: import {med['import_ms']:7.1f} ms, first "
              f"call {med['first_call_ms']:7.1f} ms (results ok: {cold['ok'] and all(w['ok'] for w in warm)}"
              f"{extra})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
