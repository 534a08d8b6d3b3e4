"""GPU tests: skipped cleanly (with the reason) when there is no usable CUDA GPU.

Also provides hand-written PTX kernels (``ptx`` fixture: the loaded module) for the runtime tests.
"""
import os

import pytest


def _no_gpu_reason():
    if os.environ.get("TILEJIT_SIMULATE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "TILEJIT_SIMULATE=1"
    try:
        from tilejit.runtime import driver
    except Exception as e:  # pragma: no cover
        return f"tilejit does not import: {e}"
    if not driver.driver_available():
        return "no CUDA driver"
    if driver.device_count() == 0:
        return "no CUDA device"
    return None


NO_GPU = _no_gpu_reason()


@pytest.fixture(autouse=True)
def _require_gpu():
    if NO_GPU:
        pytest.skip(f"needs an NVIDIA GPU ({NO_GPU})")


# PTX ISA 7.0 / sm_70: JIT-compiled by the driver for the GPU at hand.
PTX = r"""
.version 7.0
.target sm_70
.address_size 64

// out[i] = x[i] + a, one thread per element
.visible .entry add_scalar(.param .u64 out, .param .u64 x, .param .f32 a, .param .u32 n)
{
    .reg .pred p;
    .reg .b32 r<6>;
    .reg .f32 f<4>;
    .reg .b64 rd<8>;
    ld.param.u64 rd1, [out];
    ld.param.u64 rd2, [x];
    ld.param.f32 f1, [a];
    ld.param.u32 r1, [n];
    mov.u32 r2, %ctaid.x;
    mov.u32 r3, %ntid.x;
    mov.u32 r4, %tid.x;
    mad.lo.s32 r5, r2, r3, r4;
    setp.ge.u32 p, r5, r1;
    @p bra DONE;
    cvta.to.global.u64 rd3, rd1;
    cvta.to.global.u64 rd4, rd2;
    mul.wide.u32 rd5, r5, 4;
    add.s64 rd6, rd4, rd5;
    ld.global.f32 f2, [rd6];
    add.f32 f3, f2, f1;
    add.s64 rd7, rd3, rd5;
    st.global.f32 [rd7], f3;
DONE:
    ret;
}

// The tilejit ABI (contract C1) for (z: rank-1 partition with tile (4,), x: rank-1 tensor,
// s: f32), index_bits 32: z[i*zs] = x[i*xs] * s for the 4 elements of block ctaid.x.
.visible .entry tile_scale(.param .u64 zp, .param .u32 zn, .param .u32 zs,
                           .param .u64 xp, .param .u32 xn, .param .u32 xs, .param .f32 s)
{
    .reg .pred p;
    .reg .b32 r<10>;
    .reg .f32 f<4>;
    .reg .b64 rd<10>;
    ld.param.u64 rd1, [zp];
    ld.param.u32 r1, [zn];
    ld.param.u32 r2, [zs];
    ld.param.u64 rd2, [xp];
    ld.param.u32 r3, [xs];
    ld.param.f32 f1, [s];
    cvta.to.global.u64 rd1, rd1;
    cvta.to.global.u64 rd2, rd2;
    mov.u32 r4, %ctaid.x;
    shl.b32 r5, r4, 2;
    add.u32 r6, r5, 4;
    min.u32 r6, r6, r1;
LOOP:
    setp.ge.u32 p, r5, r6;
    @p bra END;
    mul.lo.u32 r7, r5, r3;
    mul.wide.u32 rd3, r7, 4;
    add.s64 rd4, rd2, rd3;
    ld.global.f32 f2, [rd4];
    mul.f32 f3, f2, f1;
    mul.lo.u32 r8, r5, r2;
    mul.wide.u32 rd5, r8, 4;
    add.s64 rd6, rd1, rd5;
    st.global.f32 [rd6], f3;
    add.u32 r5, r5, 1;
    bra LOOP;
END:
    ret;
}

// Spin for `cycles` clock ticks, then p[i] = v (one thread per element).
.visible .entry spin_fill(.param .u64 p, .param .u32 n, .param .f32 v, .param .u64 cycles)
{
    .reg .pred q;
    .reg .b32 r<6>;
    .reg .f32 f<2>;
    .reg .b64 rd<8>;
    ld.param.u64 rd1, [p];
    ld.param.u32 r1, [n];
    ld.param.f32 f1, [v];
    ld.param.u64 rd2, [cycles];
    mov.u64 rd3, %clock64;
SPIN:
    mov.u64 rd4, %clock64;
    sub.s64 rd5, rd4, rd3;
    setp.lt.u64 q, rd5, rd2;
    @q bra SPIN;
    mov.u32 r2, %ctaid.x;
    mov.u32 r3, %ntid.x;
    mov.u32 r4, %tid.x;
    mad.lo.s32 r5, r2, r3, r4;
    setp.ge.u32 q, r5, r1;
    @q bra FIN;
    cvta.to.global.u64 rd1, rd1;
    mul.wide.u32 rd6, r5, 4;
    add.s64 rd7, rd1, rd6;
    st.global.f32 [rd7], f1;
FIN:
    ret;
}
"""


@pytest.fixture(scope="session")
def ptx():
    if NO_GPU:
        pytest.skip(f"needs an NVIDIA GPU ({NO_GPU})")
    import tilejit as tile
    return tile.load_module_from_ptx(PTX, device=0)


@pytest.fixture(scope="session")
def clock_hz():
    """SM clock in Hz (for spin kernels)."""
    import tilejit as tile
    return tile.Device(0).attribute("CLOCK_RATE") * 1000


@pytest.fixture
def spin_fill(ptx, clock_hz):
    """``spin_fill(target, n, value, seconds)``: an AsyncKernelLaunch of the ``spin_fill`` kernel
    that spins ``seconds`` and then sets the ``n`` floats at ``target`` to ``value`` (one block per
    256 elements). ``target`` goes to ``push_device_ptr`` as given: a tensor (the launch keeps it
    alive) or a raw ``device_pointer`` (it does not)."""
    import numpy as np
    import tilejit as tile

    def make(target, n, value, seconds):
        return (tile.AsyncKernelLaunch(ptx.function("spin_fill"))
                .push_device_ptr(target).push_arg(np.uint32(n)).push_arg(np.float32(value))
                .push_arg(np.uint64(int(seconds * clock_hz)))
                .set_launch_config(tile.LaunchConfig(grid=(n + 255) // 256, block=256)))
    return make
