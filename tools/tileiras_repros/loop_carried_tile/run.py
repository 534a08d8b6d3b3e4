"""Compile the repro's bytecode with tileiras and run it on GPU 0; needs only NumPy,
cuda-bindings and the nvidia-cuda-tileiras wheel (or TILEIRAS=/path/to/tileiras):

    python run.py                    # kernel.tileirbc and its three controls
    python run.py kernel.tileirbc    # one file

Each kernel stores the float32 sum of every row of an (8192, 1024) float16 matrix (float32 for
kernel_f32_input) whose row i holds i % 64 in every element plus a little noise, so a row's sum
is about 1024 * (i % 64) and a sum taken from another row block is easy to tell. The grid is 264 blocks of 4 rows, so block b
handles row blocks b, b + 264, ...: a sum taken from the row block loaded for the next iteration
comes out 1024 * 32 too large (rows 4 * 264 = 1056 further on, and 1056 % 64 = 32)."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from cuda.bindings import driver as cu

HERE = os.path.dirname(os.path.abspath(__file__))
M, N, ROWS, GRID = 8192, 1024, 4, 264


def ok(res):
    """The values of a cuda-bindings call, raising on an error."""
    err, rest = res[0], res[1:]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{err.name}: {cu.cuGetErrorString(err)[1].decode()}")
    return rest[0] if len(rest) == 1 else rest


def tileiras() -> str:
    if os.environ.get("TILEIRAS"):
        return os.environ["TILEIRAS"]
    found = shutil.which("tileiras")
    if found:
        return found
    import nvidia
    for root in nvidia.__path__:
        path = os.path.join(root, "cu13", "bin", "tileiras")
        if os.path.exists(path):
            return path
    sys.exit("tileiras not found: pip install nvidia-cuda-tileiras, or set TILEIRAS")


def compile_cubin(bytecode_path: str, out_dir: str) -> str:
    cubin = os.path.join(out_dir, os.path.basename(bytecode_path) + ".cubin")
    subprocess.run([tileiras(), bytecode_path, "-o", cubin, "--gpu-name=sm_90", "-O3"],
                   check=True)
    return cubin


def run(cubin: str, x: np.ndarray) -> np.ndarray:
    mod = ok(cu.cuModuleLoad(cubin.encode()))
    func = ok(cu.cuModuleGetFunction(mod, b"carried_row_sums"))
    dx = ok(cu.cuMemAlloc(x.nbytes))
    dout = ok(cu.cuMemAlloc(M * 4))
    try:
        ok(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
        ok(cu.cuMemsetD32(dout, 0, M))
        # the entry's parameters (kernel.mlir): out (pointer, shape, stride), then x (pointer,
        # two shapes, two strides), strides in elements; tile kernels launch with a block of
        # (1, 1, 1): the cubin carries the thread count
        values = (int(dout), M, 1, int(dx), M, N, N, 1)
        types = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                 ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
        ok(cu.cuLaunchKernel(func, GRID, 1, 1, 1, 1, 1, 0, 0, (values, types), 0))
        ok(cu.cuCtxSynchronize())
        out = np.empty(M, np.float32)
        ok(cu.cuMemcpyDtoH(out.ctypes.data, dout, out.nbytes))
        return out
    finally:
        cu.cuMemFree(dx)
        cu.cuMemFree(dout)
        cu.cuModuleUnload(mod)


def main(paths) -> int:
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    name = ok(cu.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    version = subprocess.run([tileiras(), "--version"], capture_output=True, text=True).stdout
    release = [line for line in version.splitlines() if "release" in line]
    print(f"{name}; tileiras: {release[0].strip() if release else '?'}")
    rng = np.random.default_rng(0)
    x32 = (np.arange(M, dtype=np.float32)[:, None] % 64
           + 0.01 * rng.standard_normal((M, N), dtype=np.float32))
    wrong_kernels = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            x = x32 if "f32" in os.path.basename(path) else x32.astype(np.float16)
            want = x.astype(np.float64).sum(1)
            got = run(compile_cubin(path, tmp), x)
            bad = np.nonzero(~np.isclose(got, want, rtol=1e-4, atol=1e-2))[0]
            print(f"{os.path.basename(path)}: {len(bad)} of {M} row sums wrong")
            if len(bad):
                wrong_kernels += 1
                for i in bad[:4]:
                    print(f"  row {i}: got {got[i]:.1f}, want {want[i]:.1f} (difference "
                          f"{got[i] - want[i]:+.1f}; 1024 * 32 = 32768)")
    return 1 if wrong_kernels else 0


if __name__ == "__main__":
    args = sys.argv[1:] or [os.path.join(HERE, f"{k}.tileirbc")
                            for k in ("kernel", "kernel_no_tma", "kernel_not_carried",
                                      "kernel_f32_input")]
    sys.exit(main(args))
