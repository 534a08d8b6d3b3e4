"""A stub CUDA driver for CPU tests of the C launcher (tests/stub_driver.c), built here with the
system C compiler: the C launch path (do_launch, prepared launches, the torch/CuPy readers) runs
as on a GPU and every launch is recorded, packed parameter bytes included.

``build()`` compiles it once per session (None when there is no compiler); ``StubExecutable``
stands for a ``CudaExecutable`` whose launches go to the stub (the C path through its ``_native``
tuple, the Python path through ``ParamPacker``); ``installed(kernel)`` swaps a kernel's compiled
executables for stub ones.
"""
import contextlib
import ctypes
import os
import shutil
import subprocess
import sysconfig
import tempfile

from tilejit import native
from tilejit.runtime import cuda_executable as _launch
from tilejit.runtime.cuda_executable import CudaExecutable, ParamPacker, native_layout

HERE = os.path.dirname(os.path.abspath(__file__))
_lib = None


class StubFunction(ctypes.Structure):
    _fields_ = [("nparams", ctypes.c_int32), ("size", ctypes.c_int32)]


class Record(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_void_p), ("stream", ctypes.c_void_p), ("ctx", ctypes.c_void_p),
                ("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3),
                ("shared", ctypes.c_uint32), ("nparams", ctypes.c_int32),
                ("size", ctypes.c_int32), ("offsets", ctypes.c_int32 * 512),
                ("bytes", ctypes.c_ubyte * 4096)]


def compiler():
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def build(flags=()):
    """The stub library (ctypes.CDLL), built once; None without a C compiler."""
    global _lib
    if _lib is not None:
        return _lib
    cc = compiler()
    if cc is None:
        return None
    out = os.path.join(tempfile.mkdtemp(prefix="tilejit-stub-"), "libcuda.so.1")
    inc = sysconfig.get_paths()["include"]
    csrc = os.path.join(os.path.dirname(HERE), "tilejit", "csrc")
    subprocess.run([cc, "-O1", "-shared", "-fPIC", f"-I{inc}", f"-I{csrc}",
                    "-Wl,-soname,libcuda.so.1",
                    *flags, os.path.join(HERE, "stub_driver.c"), "-o", out], check=True,
                   capture_output=True)
    lib = ctypes.CDLL(out)
    lib.stub_last.restype = ctypes.POINTER(Record)
    lib.stub_count.restype = ctypes.c_longlong
    lib.stub_switches.restype = ctypes.c_longlong
    lib.stub_exchange_api.restype = ctypes.c_void_p
    lib.stub_set_current.argtypes = [ctypes.c_void_p]
    lib.stub_set_work_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lib.path = out
    _lib = lib
    return lib


def last():
    """The last recorded launch: (grid, stream, ctx, offsets, bytes)."""
    r = _lib.stub_last().contents
    return (tuple(r.grid), r.stream or 0, r.ctx or 0, tuple(r.offsets[:r.nparams]),
            bytes(r.bytes[:r.size]))


def count() -> int:
    return _lib.stub_count()


class StubExecutable:
    """An executable launching through the stub driver (the role of a ``CudaExecutable``)."""

    name = "stub"

    def __init__(self, slots, ctx=0x1234):
        self.packer = ParamPacker(slots)
        self.checks = getattr(self.packer, "checks", ())
        self.fn = StubFunction(len(slots), self.packer.size)
        # (benchmarks/launch_stub.py also runs this against older trees without checks)
        checks = getattr(_launch, "native_checks", lambda slots: b"")(slots)
        self._native = (ctypes.addressof(self.fn), ctx, native_layout(slots), checks)
        self.python_launches = 0
        self.alias_ok = frozenset()

    def launch(self, grid, params, stream):
        """The Python path (the simulator's place when C gives the launch back)."""
        kp = self.packer.pack(params)
        self.python_launches += 1
        err = _lib.cuLaunchKernel(self._native[0], grid[0], grid[1], grid[2], 1, 1, 1, 0,
                                  stream.handle, kp, None)
        if err:
            self.raise_launch_error(err, grid)

    def expected(self, params):
        """(offsets, bytes) the Python packer makes of ``params``."""
        self.packer.pack(params)
        return tuple(self.packer.offsets), self.packer.packed_bytes()

    raise_launch_error = CudaExecutable.raise_launch_error

    def scalar_out_of_range(self, index, value):
        from tilejit.scalars import out_of_range, slot_intos
        out_of_range(value, slot_intos(self.packer.slots[index]))


@contextlib.contextmanager
def installed(kernel):
    """Route ``kernel``'s compiled specializations (already compiled on the simulator) through
    the stub driver: yields {slots: StubExecutable}; everything is put back afterwards."""
    lib = build()
    ext = native.ext()
    saved_fast = dict(kernel._executables)
    saved = {}
    stubs = {}
    for c in kernel._cache.values():
        saved[id(c)] = (c, dict(c.executables))
        for dev in list(c.executables):
            c.executables[dev] = stubs.setdefault(c.slots, StubExecutable(c.slots))
    for k, exe in list(kernel._executables.items()):
        for c in kernel._cache.values():
            if exe in saved[id(c)][1].values():
                kernel._executables[k] = stubs[c.slots]
    if kernel._native is not None:
        kernel._native.forget()
    ext.use_driver(lib.path)
    lib.stub_reset()
    try:
        yield stubs
    finally:
        ext.use_driver(None)
        for c, exes in saved.values():
            c.executables.clear()
            c.executables.update(exes)
        kernel._executables.clear()
        kernel._executables.update(saved_fast)
        if kernel._native is not None:
            kernel._native.forget()
