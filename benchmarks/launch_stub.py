"""Host time of the C launch path on the CPU, through a stub CUDA driver (tests/stub_driver.c):
ns per call of the three calls benchmarks/launch_overhead.py times on a GPU, so a change to the
launch path can be compared before/after without one (the driver call itself is a stub).

    python benchmarks/launch_stub.py [--n 20000] [--repeat 7]

* torch-tensor call: ``kernel(tile.partition(z, t), x, 2.0, 1).submit_on(s)`` with stand-ins
  read through a DLPack C exchange API (the stub's), as torch >= 2.10 tensors are;
* tilejit-tensor call: ``kernel(z.partition(t), x, 2.0, 1).submit_on(s)``;
* prepared launch: ``p.launch()``;
* a torch-tensor call of a kernel with a ``tile.Constant`` (the kernel bound to its value), with
  and without an explicit ``.grid()``, and writing a ``tile.atomic`` torch tensor (as the
  gallery's persistent kernels do).
With ``--cutile``: ``ct.launch(stream, grid, kernel, args)`` of the cuTile samples' softmax (fp16
and f32, two ``ct.Constant[int]``) and fmha (a float and an int runtime scalar, five
``ct.Constant[int]`` and two ``ct.Constant[bool]``) through their host functions in
tests/cutile_samples.py, torch stand-ins and a torch-like stream, next to tilejit's own launch
of the same bound kernel (``k(*values).grid(g).submit_on(s)``); also transpose (fp16 and f32, a
2-D grid of ``ct.cdiv``), vector_add (1-D and 2-D) and fft (7 arrays, 6 constants). ``--only``
picks cases by name; ``--replay-only`` times only the C replay (for ``perf record``).

Prints the best of ``repeat`` batches (ns per call) and the C launch path's stats. To compare
with an older tree, copy this file, tests/stub_cuda.py, tests/stub_driver.c and
tilejit/csrc/native.h into it (same paths) and run it there.
"""
import argparse
import contextlib
import ctypes
import functools
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


@tile.entry
def axpb_const(z, x, a, b, S: tile.Constant[int]):
    z.store(tile.load_tile_like(x, z) * a + b * S)


@tile.entry
def axpb_into(z, x, a, b, S: tile.Constant[int]):
    i = tile.bid(0)
    tile.store(z.partition((S,)), (i,), x.load((i,), (S,)) * a + b)


class StandIn:
    """A torch-like tensor over a simulated tensor's memory, read through the stub's API."""

    is_cpu = False                  # as torch.Tensor.is_cpu (ct.launch asks a written array)

    def __init__(self, t, code=2, bits=32):
        ptr = t.__cuda_array_interface__["data"][0]
        self.shape = tuple(t.shape)
        self._dl = (ptr, 2, 0, code, bits, self.shape, None, 0)
        self.ndim = len(self.shape)
        self.t = t

    def is_neg(self):
        return False

    @property
    def __cuda_array_interface__(self):     # Python's classification, if C gives a launch back
        return self.t.__cuda_array_interface__


class StandInStream:
    """A torch-like stream (``cuda_stream``, ``device_index``) over a tilejit stream's handle."""

    def __init__(self, s):
        self.cuda_stream = s.handle
        self.device_index = 0


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
    ap.add_argument("--cutile", action="store_true",
                    help="time ct.launch of the cuTile samples' softmax and fmha instead")
    ap.add_argument("--pieces", action="store_true",
                    help="with --cutile: time the pieces of ct.launch too")
    ap.add_argument("--replay-only", action="store_true",
                    help="with --cutile: time only the C replay (for perf record)")
    ap.add_argument("--only", default="",
                    help="with --cutile: comma-separated substrings of the cases' names")
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
    if a.cutile:
        return cutile_rows(ext, lib, s, a)
    x = api.from_numpy(np.ones(1024, np.float32)).sync_on(s)
    z = api.zeros((1024,)).sync_on(s)
    _exchange(ext, lib, s)
    xt, zt = StandIn(x), StandIn(z)
    # compile on the simulator; a kernel with a tile.Constant launches the kernel bound to its
    # value, which is what the stub must stand in for
    axpb(z.partition((256,)), x, 2.0, 1)._sync_plain(s)
    axpb_const(z.partition((256,)), x, 2.0, 1, 3).sync_on(s)
    axpb_const(z.partition((256,)), x, 2.0, 1, 3).grid((4, 1, 1)).sync_on(s)
    axpb_into(tile.atomic(zt), xt, 2.0, 1, 256).grid((4, 1, 1)).sync_on(s)
    with contextlib.ExitStack() as stack:
        for k in (axpb, axpb_const._bound_for((None,) * 4 + (3,)),
                  axpb_into._bound_for((None,) * 4 + (256,))):
            stack.enter_context(stub_cuda.installed(k))
        _rows(a, lib, s, x, z, xt, zt)


def _rows(a, lib, s, x, z, xt, zt):
    """Time the calls, every one reaching the stub driver."""
    part = tile.partition
    t = (256,)
    axpb(part(zt, t), xt, 2.0, 1).submit_on(s)                # memoize the stand-ins' keys
    z2 = api.zeros((1024,)).sync_on(s)
    p = axpb(z2.partition(t), x, 2.0, 1).prepare(s)
    count0 = lib.stub_count()
    rows = [("torch-tensor call", lambda: axpb(part(zt, t), xt, 2.0, 1).submit_on(s)),
            ("tilejit-tensor call", lambda: axpb(z.partition(t), x, 2.0, 1).submit_on(s)),
            ("prepared launch", p.launch),
            ("torch-tensor call, constant", lambda: axpb_const(part(zt, t), xt, 2.0, 1, 3)
             .submit_on(s)),
            ("  same, .grid(g)", lambda: axpb_const(part(zt, t), xt, 2.0, 1, 3)
             .grid((4, 1, 1)).submit_on(s)),
            ("  same, .generics(S=3)", lambda: axpb_const(part(zt, t), xt, 2.0, 1)
             .generics(S=3).submit_on(s)),
            ("  tile.atomic(z) written, .grid(g)", lambda: axpb_into(
                tile.atomic(zt), xt, 2.0, 1, 256).grid((4, 1, 1)).submit_on(s))]
    for name, fn in rows:
        print(f"{name:22s} {_best(fn, a.n, a.repeat):8.0f} ns")
    launched = lib.stub_count() - count0
    assert launched == len(rows) * a.n * a.repeat, (launched, "some calls did not reach the driver")
    if hasattr(native, "stats"):
        print("C launch path:", native.stats())


def _exchange(ext, lib, s):
    """The stand-ins read as torch tensors through the stub's DLPack exchange API."""
    cap = ctypes.pythonapi.PyCapsule_New
    cap.restype = ctypes.py_object
    cap.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    ext.set_torch(StandIn, {}, lambda dev: 0)
    lib.stub_set_work_stream(s.handle, 0)
    ext.set_torch_exchange(cap(lib.stub_exchange_api(), b"dlpack_exchange_api", None),
                           StandIn, {(2, 32): "float32", (2, 16): "float16"})


def _bound_call(b, values, grid, s):
    op = b(*values)         # tilejit's own launch of the bound kernel (ct.launch's grid setter)
    op._grid = grid
    op.submit_on(s)


def cutile_rows(ext, lib, s, a):
    """ct.launch through the samples' host functions, and the bound kernels' own launches."""
    import contextlib
    import cutile_samples as S
    import tilejit.cutile as ct
    from tilejit.cutile import _kernel as ctk
    from tilejit.runtime.argspec import atomic

    def arrays(shape, np_dtype, n):
        rng = np.random.default_rng(0)
        return [api.from_numpy(rng.standard_normal(shape).astype(np_dtype)).sync_on(s)
                for _ in range(n)]

    bits = {np.float16: 16, np.float32: 32}

    def stand_ins(ts, dt=np.float32):
        return [StandIn(t, 2, bits[dt]) for t in ts]

    cases = []          # (name, host call, kernel, its args as ct.launch gets them, grid)
    for dt in (np.float16, np.float32):
        x, y = arrays((64, 32), dt, 2)
        S.softmax(s, x, y, rows_per_block=16)                # compile (simulator)
        xt, yt = stand_ins((x, y), dt)
        cases.append((f"softmax {np.dtype(dt).name}",
                      lambda xt=xt, yt=yt: S.softmax(st, xt, yt, rows_per_block=16),
                      S.softmax_kernel, (xt, yt, 16, 32), (4, 1, 1)))
    q, k, v, o = arrays((1, 2, 32, 16), np.float16, 4)
    S.fmha(s, q, k, v, o, tile_m=16, tile_n=16)
    qt, kt, vt, ot = stand_ins((q, k, v, o), np.float16)
    cases.append(("fmha fp16", lambda: S.fmha(st, qt, kt, vt, ot, tile_m=16, tile_n=16),
                  S.fmha_kernel, (qt, kt, vt, ot, 0.25, 0, 16, 2, 16, 16, 1, False, True),
                  (2, 2, 1)))
    # transpose: two constants and a 2-D grid of ct.cdiv's (the samples' 128x128 / 32x32 tiles
    # made 16x16 for the simulator)
    for dt in (np.float16, np.float32):
        x, = arrays((64, 32), dt, 1)
        y, = arrays((32, 64), dt, 1)
        S.transpose(s, x, y, tiles=(16, 16))
        xt, yt = stand_ins((x, y), dt)
        cases.append((f"transpose {np.dtype(dt).name}",
                      lambda xt=xt, yt=yt: S.transpose(st, xt, yt, tiles=(16, 16)),
                      S.transpose_kernel, (xt, yt, 16, 16), (4, 2, 1)))
    # vector_add 1-D and 2-D (max_tile 256 for the simulator: 1024 on a GPU)
    for shape, grid, consts in (((1024,), (4, 1, 1), (256,)), ((64, 32), (8, 1, 1), (8, 32))):
        a_, b_, c_ = arrays(shape, np.float32, 3)
        S.vector_add(s, a_, b_, c_, max_tile=256)
        at, bt, ctt = stand_ins((a_, b_, c_))
        kern = S.vec_add_1d if len(shape) == 1 else S.vec_add_2d
        cases.append((f"vector_add {len(shape)}d",
                      lambda at=at, bt=bt, ctt=ctt: S.vector_add(st, at, bt, ctt, max_tile=256),
                      kern, (at, bt, ctt, *consts), grid))
    # fft N=8 batch 2: 2 arrays + 5 twiddle tensors + 6 constants
    factors, pack = (2, 2, 2), 2
    xp, yp = arrays((2, 8, 2), np.float32, 2)
    tw = tuple(api.from_numpy(t).sync_on(s) for t in S.fft_twiddles(factors, np.float32))
    S.fft(s, xp, yp, tw, factors, batch_tile=1, pack=pack)
    xpt, ypt, *twt = stand_ins((xp, yp, *tw))
    twt = tuple(twt)
    cases.append(("fft N=8 (7 arrays)",
                  lambda: S.fft(st, xpt, ypt, twt, factors, batch_tile=1, pack=pack),
                  S.fft_kernel, (xpt, ypt, *twt, 8, 2, 2, 2, 1, pack), (2, 1, 1)))
    only = [o for o in a.only.split(",") if o]
    cases = [c for c in cases if not only or any(o in c[0] for o in only)]
    _exchange(ext, lib, s)
    st = StandInStream(s)
    with contextlib.ExitStack() as stack:
        for _, _, kern, _, _ in cases:
            for b in list(kern._bound_by_key.values()):
                stack.enter_context(stub_cuda.installed(b))
        rows = []
        for name, call, kern, args, grid in cases:
            b, values = kern._plain_launch(args)
            values = [atomic(v.value) if type(v) is atomic else v for v in values]
            call()                                          # memoize the stand-ins' keys
            rows.append((f"{name}: ct.launch", call))
            rows.append((f"{name}: bound kernel", functools.partial(_bound_call, b, values,
                                                                     grid, s)))
        if a.replay_only:
            for name, _, kern, args, grid in cases:
                plan = kern._ct_plan
                fn = functools.partial(ext.ct_launch, plan, kern, st, grid, args)
                print(f"{name}: C replay {_best(fn, a.n, a.repeat):8.0f} ns")
            return
        native.reset_stats()
        count0 = lib.stub_count()
        for name, fn in rows:
            print(f"{name:28s} {_best(fn, a.n, a.repeat):8.0f} ns")
        launched = lib.stub_count() - count0
        assert launched == len(rows) * a.n * a.repeat, (launched, "some calls missed the driver")
        print("C launch path:", native.stats())
        if a.pieces:
            for name, _, kern, args, grid in cases:
                b, values = kern._plain_launch(args)
                plan = kern._ct_plan
                pieces = [("ct.launch(...) itself", lambda: ct.launch(st, grid, kern, args)),
                          ("C replay (ct_launch)", lambda: ext.ct_launch(plan, kern, st, grid,
                                                                          args)),
                          ("kernel._plain_launch", lambda: kern._plain_launch(args)),
                          ("_stream_of", lambda: ctk._stream_of(st)),
                          ("_grid3", lambda: ctk._grid3(grid)),
                          ("ct.cdiv(1000, 16)", lambda: ct.cdiv(1000, 16))]
                for what, fn in pieces:
                    print(f"  {name}: {what:24s} {_best(fn, a.n, a.repeat):8.0f} ns")


if __name__ == "__main__":
    main()
