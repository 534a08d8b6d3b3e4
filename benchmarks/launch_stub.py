"""Host time of the C launch path on the CPU, through a stub CUDA driver (tests/stub_driver.c):
ns per call of the three calls benchmarks/launch_overhead.py times on a GPU, so a change to the
launch path can be compared before/after without one (the driver call itself is a stub).

    python benchmarks/launch_stub.py [--n 20000] [--repeat 7]

* torch-tensor call: ``kernel(tile.partition(z, t), x, 2.0, 1).submit_on(s)`` with stand-ins
  read through a DLPack C exchange API (the stub's), as torch >= 2.10 tensors are;
* tilejit-tensor call: ``kernel(z.partition(t), x, 2.0, 1).submit_on(s)``;
* prepared launch: ``p.launch()``.
Prints the best of ``repeat`` batches (ns per call) and the C launch path's stats. To compare
with an older tree, copy this file, tests/stub_cuda.py, tests/stub_driver.c and
tilejit/csrc/native.h into it (same paths) and run it there.
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
os.environ.setdefault("TILEJIT_SIMULATE", "1")

import numpy as np  # noqa: E402

import tilejit as tile  # noqa: E402
from tilejit import api, native  # noqa: E402

import stub_cuda  # noqa: E402


@tile.entry
def axpb(z, x, a, b):
    z.store(tile.load_tile_like(x, z) * a + b)


class StandIn:
    """A torch-like tensor over a simulated tensor's memory, read through the stub's API."""

    def __init__(self, t):
        ptr = t.__cuda_array_interface__["data"][0]
        self._dl = (ptr, 2, 0, 2, 32, tuple(t.shape), None, 0)
        self.ndim = len(t.shape)

    def is_neg(self):
        return False


def _best(fn, n, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    ext = native.ext()
    if ext is None:
        sys.exit("the C extension is not built (or TILEJIT_NATIVE=0)")
    lib = stub_cuda.build()
    if lib is None:
        sys.exit("no C compiler for the stub driver")
    ctypes.CDLL(lib.path, mode=ctypes.RTLD_GLOBAL)     # found as libcuda.so.1 by its soname
    if hasattr(ext, "use_driver"):
        ext.use_driver(lib.path)
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.ones(1024, np.float32)).sync_on(s)
    z = api.zeros((1024,)).sync_on(s)
    axpb(z.partition((256,)), x, 2.0, 1)._sync_plain(s)       # compile (simulator)
    stubs = {}
    for c in axpb._cache.values():
        for dev in c.executables:
            c.executables[dev] = stubs.setdefault(c.slots, stub_cuda.StubExecutable(c.slots))
    for key in list(axpb._executables):
        axpb._executables[key] = next(iter(stubs.values()))
    cap = ctypes.pythonapi.PyCapsule_New
    cap.restype = ctypes.py_object
    cap.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    ext.set_torch(StandIn, {}, lambda dev: 0)
    lib.stub_set_work_stream(s.handle, 0)
    ext.set_torch_exchange(cap(lib.stub_exchange_api(), b"dlpack_exchange_api", None),
                           StandIn, {(2, 32): "float32"})
    xt, zt = StandIn(x), StandIn(z)
    part = tile.partition
    t = (256,)
    axpb(part(zt, t), xt, 2.0, 1).submit_on(s)                # memoize the stand-ins' keys
    z2 = api.zeros((1024,)).sync_on(s)
    p = axpb(z2.partition(t), x, 2.0, 1).prepare(s)
    count0 = lib.stub_count()
    rows = [("torch-tensor call", lambda: axpb(part(zt, t), xt, 2.0, 1).submit_on(s)),
            ("tilejit-tensor call", lambda: axpb(z.partition(t), x, 2.0, 1).submit_on(s)),
            ("prepared launch", p.launch)]
    for name, fn in rows:
        print(f"{name:22s} {_best(fn, a.n, a.repeat):8.0f} ns")
    launched = lib.stub_count() - count0
    assert launched == 3 * a.n * a.repeat, (launched, "some calls did not reach the driver")
    if hasattr(native, "stats"):
        print("C launch path:", native.stats())


if __name__ == "__main__":
    main()
