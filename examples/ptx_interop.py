"""Custom PTX next to tile kernels: a hand-written PTX SAXPY launched with
`tile.AsyncKernelLaunch`, chained with a tilejit kernel on the same stream.

    python examples/ptx_interop.py

PTX runs only on a GPU (the simulator interprets Tile IR, not PTX): there the script says the
PTX part is skipped and runs the tilejit part alone.
"""
import sys

import numpy as np

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

SAXPY_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

// y[i] = a * x[i] + y[i] for i < n, one thread per element
.visible .entry saxpy(.param .u64 y_ptr, .param .u64 x_ptr, .param .f32 a, .param .u32 n)
{
    .reg .pred %past_end;
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<6>;

    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r2, %r2, %r3, %r4;
    setp.ge.u32 %past_end, %r2, %r1;
    @%past_end bra EXIT;
    ld.param.u64 %rd1, [y_ptr];
    ld.param.u64 %rd2, [x_ptr];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.param.f32 %f1, [a];
    ld.global.f32 %f2, [%rd5];
    ld.global.f32 %f3, [%rd4];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd4], %f3;
EXIT:
    ret;
}
"""


def ptx_saxpy(function, y, x, a):
    """A DeviceOp running the PTX kernel; checks what the driver cannot."""
    if x.shape != y.shape or x.dtype != tile.float32 or y.dtype != tile.float32:
        raise ValueError("saxpy needs two float32 tensors of the same shape")
    if not (x.is_contiguous and y.is_contiguous):
        raise ValueError("saxpy needs contiguous tensors")
    n = y.size
    return (tile.AsyncKernelLaunch(function)
            .push_device_ptr(y).push_device_ptr(x)
            .push_arg(np.float32(a)).push_arg(np.uint32(n))
            .set_launch_config(tile.LaunchConfig(grid=(n + 255) // 256, block=256)))


@tile.entry
def square(z, x):
    t = tile.load_tile_like(x, z)
    z.store(t * t)


def main() -> int:
    n = 1 << 20
    x = api.arange(n, tile.float32).sync()
    y = api.ones((n,)).sync()
    out = api.zeros((n,)).sync()
    xs = np.arange(n, dtype=np.float32)
    if current_backend() == "cuda":
        saxpy_fn = tile.load_module_from_ptx(SAXPY_PTX).function("saxpy")
        (ptx_saxpy(saxpy_fn, y, x, 2.0)                                  # y = 2x + 1 (PTX)
         .then(lambda _: square(out.partition((1024,)), y))              # out = y^2 (tilejit)
         .sync())
        expected, what = (2 * xs + 1) ** 2, "PTX saxpy then tile kernel"
    else:
        print("  simulator: the PTX kernel needs a GPU; skipped, running the tile kernel alone")
        square(out.partition((1024,)), x).sync()
        expected, what = xs * xs, "tile kernel only (PTX skipped on the simulator)"
    ok = np.array_equal(out.to_numpy(), expected)
    print(f"ptx_interop: {what} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
