"""PTX modules launched through AsyncKernelLaunch and through the fast launch path."""
import numpy as np
import pytest

import tilejit as tile
from tilejit.runtime import argspec, cuda_executable as launch
from tilejit.deviceops import transfer as T
from sample_arrays import rand

pytestmark = pytest.mark.gpu


def test_module_and_function(ptx):
    fn = ptx.function("add_scalar")
    assert fn is ptx.function("add_scalar") and fn.name == "add_scalar"
    assert fn.attribute("MAX_THREADS_PER_BLOCK") >= 256
    with pytest.raises(tile.DriverError, match="not found"):
        ptx.function("nope")


def test_bad_ptx_reports_the_jit_log():
    with pytest.raises(tile.DriverError) as ei:
        tile.load_module_from_ptx(".version 7.0\n.target sm_70\n.address_size 64\n"
                                  ".visible .entry k() { bogus.instruction; }\n")
    assert "cannot load" in str(ei.value)


def test_async_kernel_launch(ptx):
    n = 1000
    a = rand(n, seed=1)
    x = T.from_numpy(a).sync()
    out = T.empty((n,), tile.float32).sync()
    op = tile.AsyncKernelLaunch(ptx.function("add_scalar"))
    op.push_device_ptr(out).push_device_ptr(x.device_pointer)
    op.push_arg(np.float32(1.5)).push_arg(np.uint32(n))
    op.set_launch_config(tile.LaunchConfig(grid=((n + 255) // 256,), block=(256,)))
    assert op.sync() is None
    np.testing.assert_allclose(out.to_numpy(), a + 1.5, rtol=0, atol=0)


def test_async_kernel_launch_in_a_then_chain(ptx):
    n = 300
    a = rand(n, seed=2)

    def kernel(x):
        out = T.empty((n,), tile.float32)
        return out.then(lambda o: tile.AsyncKernelLaunch(ptx.function("add_scalar"))
                        .push_device_ptr(o).push_device_ptr(x).push_arg(np.float32(-2.0))
                        .push_arg(np.uint32(n))
                        .set_launch_config(tile.LaunchConfig(grid=2, block=256))
                        .map(lambda _: o))

    host = T.from_numpy(a).then(kernel).then(T.to_host).sync()
    np.testing.assert_array_equal(host, a - 2.0)


def test_with_context_raw_driver_call():
    from tilejit.runtime import driver
    t = T.from_numpy(np.ones(64, np.uint8)).sync()
    tile.with_context(lambda ctx: driver.check(driver.drv.cuMemsetD8Async(
        driver.drv.CUdeviceptr(t.device_pointer), 9, 64, ctx.stream._cu))).sync()
    assert (t.to_numpy() == 9).all()


@pytest.mark.parametrize("n,step", [(1023, 1), (17, 3), (4, 1), (1, 1)])
def test_fast_path_with_classified_arguments(ptx, n, step):
    a = rand(n * step, seed=3)
    x = T.from_numpy(a).sync()[::step]
    z = T.empty((n,), tile.float32).sync()
    p = z.partition((4,))
    infos = [argspec.classify(p), argspec.classify(x), argspec.classify(np.float32(3.0))]
    argspec.check_launch_aliasing(infos)
    grid = argspec.grid_from_partitions(infos)
    assert grid == ((n + 3) // 4, 1, 1)
    assert argspec.abi_slots(infos) == ("u64", "i32", "i32", "u64", "i32", "i32", "f32")
    kernel = launch.CudaExecutable(ptx.function("tile_scale"), argspec.abi_slots(infos))
    stream = tile.Device(0).new_stream()
    launch.launch_infos(kernel, infos, grid, stream, [p])
    stream.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), a[::step] * 3.0)
    # a cache hit: same kernel, new values only
    y = T.from_numpy(rand(n, seed=4)).sync()
    w = T.empty((n,), tile.float32).sync()
    infos2 = [argspec.classify(w.partition((4,))), argspec.classify(y), argspec.classify(0.5)]
    assert argspec.key_of(infos2)[1:] != () and grid == argspec.grid_from_partitions(infos2)
    kernel.launch(grid, argspec.flatten_params(infos2), stream)
    stream.synchronize()
    np.testing.assert_array_equal(w.to_numpy(), y.to_numpy() * 0.5)


def test_fast_path_numpy_arguments_are_copied(ptx):
    n = 64
    a = rand(n, seed=5)
    z = T.empty((n,), tile.float32).sync()
    infos = [argspec.classify(z.partition((4,))), argspec.classify(a),
             argspec.classify(np.float32(2.0))]     # the PTX kernel takes an f32 (a Python float is f64)
    kernel = launch.CudaExecutable(ptx.function("tile_scale"), argspec.abi_slots(infos))
    stream = tile.Device(0).new_stream()
    launch.launch_infos(kernel, infos, argspec.grid_from_partitions(infos), stream)
    stream.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), a * 2.0)


def test_launch_errors_are_launch_errors(ptx):
    kernel = launch.CudaExecutable(ptx.function("tile_scale"), ("u64", "i32"))
    stream = tile.Device(0).new_stream()
    with pytest.raises(tile.LaunchError, match="takes 2 parameter values"):
        kernel.launch((1, 1, 1), (1, 2, 3), stream)
    # grid dimension y too large for the hardware
    big = launch.CudaExecutable(ptx.function("add_scalar"), ("u64", "u64", "f32", "u32"))
    with pytest.raises(tile.LaunchError, match="CUDA_ERROR"):
        big.launch((1, 1 << 20, 1), (0, 0, 0.0, 0), stream)
    stream.synchronize()
