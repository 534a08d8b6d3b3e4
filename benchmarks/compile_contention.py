"""Compile contention: N processes sharing one cache directory compile the same kernel cold.

    python benchmarks/compile_contention.py [--procs 8] [--repeat 3] [--kernel fmha|matmul]
                                            [--prewarm] [--tilejit PATH]

What many ranks of one job do at start-up (torchrun, 64 ranks on 8 GPUs per host): each process
imports tilejit, then all compile the same kernel (causal flash attention, whose tileiras run
takes ~2 s; or an fp16 matmul) for sm_90 at once (``tilejit_kernels.py``), on
an empty ``TILEJIT_CACHE_DIR`` they share (``--prewarm``: after importing Numba and probing
tileiras, which on a machine with fewer cores than processes spreads their arrival at the
compile). tileiras is wrapped by a script that counts its
compile runs. Reported per repetition: the wall time from starting the processes until all have
their cubin, the slowest process's compile call, and how many times tileiras ran. Needs tileiras,
no GPU. ``--tilejit`` runs the children on another tilejit tree (e.g. an older commit, to compare).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHILD = textwrap.dedent('''
    import json, os, pathlib, sys, time
    sys.path.insert(0, os.environ["BENCH_DIR"])
    import tilejit as tile
    from tilejit import api
    from tilejit_kernels import fmha, matmul_grouped

    if os.environ["KERNEL"] == "fmha":           # causal flash attention, 128x64 tiles
        q = api.empty((4, 1024, 64), tile.float16).sync()
        kernel, args = fmha, (tile.atomic(q), q, q, q, 0.125, 64, 128, 64, True)
    else:                                        # fp16 matmul, 128x128x64 tiles, grouped grid
        a = api.empty((1024, 1024), tile.float16).sync()
        kernel, args = matmul_grouped, (tile.atomic(a), a, a, 128, 128, 64, 8)
    if os.environ["PREWARM"] == "1":             # Numba imported, tileiras probed
        from tilejit.toolchain import tileiras
        kernel.inspect_tileir(*args)
        tileiras.version_text()
    barrier = pathlib.Path(os.environ["BARRIER"])
    (barrier / str(os.getpid())).touch()         # imported: wait for the others
    while len(list(barrier.iterdir())) < int(os.environ["PROCS"]):
        time.sleep(0.002)
    t0 = time.perf_counter()
    kernel.compile(*args, arch="sm_90")
    print(json.dumps({"compile_s": time.perf_counter() - t0, "tilejit": tile.__file__}))
''')


def find_tileiras(pythonpath: str) -> tuple:
    code = ("from tilejit.toolchain import tileiras; tc = tileiras.find_toolchain(); "
            "print(tc.tileiras); print(tc.root)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONPATH=pythonpath), cwd=tempfile.gettempdir())
    path, root = r.stdout.split()
    return path, root


def run_once(procs: int, pythonpath: str, tileiras: str, root: str, prewarm: bool,
             kernel: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="tilejit-contention-") as tmp:
        log = os.path.join(tmp, "runs.log")
        wrapper = os.path.join(tmp, "bin", "tileiras")
        os.makedirs(os.path.dirname(wrapper))
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexport CUDA_HOME={root}\n'
                    f'case "$1" in --*) exec {tileiras} "$@";; esac\n'
                    f'echo "$$" >> {log}\nexec {tileiras} "$@"\n')
        os.chmod(wrapper, 0o755)
        barrier = os.path.join(tmp, "barrier")
        os.makedirs(barrier)
        env = dict(os.environ, PYTHONPATH=pythonpath, TILEJIT_TILEIRAS=wrapper,
                   TILEJIT_CACHE_DIR=os.path.join(tmp, "cache"), TILEJIT_SIMULATE="1",
                   BARRIER=barrier, PROCS=str(procs), PREWARM=str(int(prewarm)),
                   KERNEL=kernel, BENCH_DIR=os.path.dirname(os.path.abspath(__file__)))
        t0 = time.perf_counter()
        children = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, text=True, cwd=tmp,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    for _ in range(procs)]
        compile_s = []
        for p in children:
            out, err = p.communicate(timeout=1200)
            if p.returncode != 0:
                raise SystemExit(f"a child failed:\n{err}")
            child = json.loads(out.strip().splitlines()[-1])
            assert child["tilejit"].startswith(os.path.abspath(pythonpath)), child["tilejit"]
            compile_s.append(child["compile_s"])
        wall = time.perf_counter() - t0
        runs = len(open(log).read().split()) if os.path.exists(log) else 0
    return {"wall_s": wall, "slowest_compile_s": max(compile_s), "tileiras_runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernel", choices=("fmha", "matmul"), default="fmha")
    ap.add_argument("--tilejit", default=ROOT, help="the tilejit tree the children import")
    ap.add_argument("--prewarm", action="store_true",
                    help="import Numba and probe tileiras before the barrier, so that the "
                         "processes reach the compile together even on few cores (as ranks "
                         "with a core each do)")
    args = ap.parse_args()
    tileiras, root = find_tileiras(args.tilejit)
    results = [run_once(args.procs, args.tilejit, tileiras, root, args.prewarm, args.kernel)
               for _ in range(args.repeat)]
    for r in results:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    print(json.dumps({"kernel": args.kernel, "procs": args.procs, "cpus": os.cpu_count(),
                      "prewarm": args.prewarm,
                      "median_wall_s": round(statistics.median(r["wall_s"] for r in results), 2),
                      "median_slowest_compile_s": round(statistics.median(
                          r["slowest_compile_s"] for r in results), 2),
                      "tileiras_runs": [r["tileiras_runs"] for r in results]}))


if __name__ == "__main__":
    main()
