"""Launch interface: parameter packing, the simulator launch path and a dispatcher-style op."""
import struct

import numpy as np
import pytest

import tilejit as tile
from tilejit.backends.simulator import SimExecutable
from tilejit.deviceops import DeviceOp, execute_input
from tilejit.runtime import argspec, cuda_executable as launch
from tilejit.deviceops import transfer as T
from tilejit.simulator.memory import memory as sim
from sample_arrays import rand


pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_param_packer_layout_is_naturally_aligned():
    slots = ("u64", "i32", "i32", "f16", "i64", "bf16", "u8", "f64", "f8e4m3")
    pk = launch.ParamPacker(slots)
    assert pk.offsets == (0, 8, 12, 16, 24, 32, 34, 40, 48)
    assert pk.size == 49
    vals = (0x1234_5678_9ABC, -5, 7, 1.5, -(2**40), 2.0, 255, 0.1, 1.0)
    kp = pk.pack(vals)
    assert kp != 0
    raw = pk.packed_bytes()
    assert struct.unpack_from("=Q", raw, 0)[0] == vals[0]
    assert struct.unpack_from("=ii", raw, 8) == (-5, 7)
    assert struct.unpack_from("=e", raw, 16)[0] == 1.5
    assert struct.unpack_from("=q", raw, 24)[0] == -(2**40)
    assert struct.unpack_from("=H", raw, 32)[0] == 0x4000          # bf16(2.0)
    assert raw[34] == 255
    assert struct.unpack_from("=d", raw, 40)[0] == 0.1
    assert raw[48] == 0x38                                          # f8e4m3fn(1.0)
    # the pointer array points into the buffer at the offsets
    import ctypes
    ptrs = [pk.pointers[i] for i in range(len(slots))]
    base = ctypes.addressof(pk.buffer)
    assert [p - base for p in ptrs] == list(pk.offsets)


def test_param_packer_errors_name_the_problem():
    pk = launch.ParamPacker(("u64", "i32"))
    with pytest.raises(tile.LaunchError, match="takes 2 parameter values.*but 3 were given"):
        pk.pack((1, 2, 3))
    with pytest.raises(tile.LaunchError, match="does not fit ABI type i32"):
        pk.pack((1, 2**31))
    with pytest.raises(ValueError, match="unknown ABI slot"):
        launch.ParamPacker(("i128",))
    assert launch.ParamPacker(()).kernel_params == 0


def test_launch_config():
    cfg = tile.LaunchConfig(grid=10, block=(128, 2), shared_mem_bytes=1024)
    assert cfg.grid == (10, 1, 1) and cfg.block == (128, 2, 1) and cfg.shared_mem_bytes == 1024
    assert tile.LaunchConfig(grid_dim=(2, 3, 4)).grid == (2, 3, 4)
    with pytest.raises(tile.LaunchError, match="positive"):
        tile.LaunchConfig(grid=(0,))


def test_raw_cuda_launches_need_a_gpu():
    with pytest.raises(tile.ContextError, match="simulator"):
        tile.load_module_from_ptx(".version 8.0\n.target sm_90\n")
    op = tile.AsyncKernelLaunch(object())
    op.push_arg(np.uint32(3)).push_device_ptr(0x1000)
    with pytest.raises(TypeError, match="NumPy scalar"):
        op.push_arg(3)
    with pytest.raises(tile.LaunchError, match="set_launch_config"):
        op.sync()
    op.set_launch_config(tile.LaunchConfig(grid=1, block=32))
    with pytest.raises(tile.LaunchError, match="needs a GPU"):
        op.sync()


# --- a simulated "compiled kernel" and a dispatcher-style op ------------------------------------
def make_add_kernel(tile_shape, calls):
    """What the simulator backend provides: an executable whose launch calls
    ``compiled(grid, params)`` with C1 params (z, x, y 2-D)."""
    t0, t1 = tile_shape

    def compiled(grid, params):
        calls.append((grid, params))
        z, x, y = params[0:5], params[5:10], params[10:15]
        for bx in range(grid[0]):
            for by in range(grid[1]):
                rows = bx * t0 + np.arange(t0)[:, None]
                cols = by * t1 + np.arange(t1)[None, :]
                mask = (rows < z[1]) & (cols < z[2])

                def addr(a):
                    return a[0] + (rows * a[3] + cols * a[4]) * 4

                tx = sim.load(addr(x), np.float32, mask)
                ty = sim.load(addr(y), np.float32, mask)
                sim.store(addr(z), tx + ty, np.float32, mask)
    return SimExecutable(compiled, "add")


class KernelLaunch(DeviceOp):
    """The shape of the dispatcher's launch op: classify at execution, check, launch, return args."""

    graph_safe = True

    def __init__(self, compile_fn, *args, grid=None):
        self.compile_fn = compile_fn
        self.args = args
        self.grid = grid
        self.arity = len(args)

    def _execute(self, ctx):
        values = [execute_input(a, ctx) for a in self.args]
        infos = [argspec.classify(v, stream=ctx.stream) for v in values]
        argspec.check_launch_aliasing(infos, names=["z", "x", "y"])
        grid = argspec.grid_from_partitions(infos, self.grid)
        compiled = self.compile_fn(argspec.key_of(infos))
        launch.launch_infos(compiled, infos, grid, ctx.stream, values)
        return tuple(values)


def test_simulated_launch_end_to_end():
    calls, keys = [], []
    a, b = rand((33, 20), seed=1), rand((33, 20), seed=2)
    x, y = T.from_numpy(a).sync(), T.from_numpy(b).sync()
    z = T.empty((33, 20), tile.float32).sync()

    def compile_fn(key):
        keys.append(key)
        return make_add_kernel((16, 8), calls)

    out = KernelLaunch(compile_fn, z.partition((16, 8)), x, y).sync()
    assert np.allclose(z.to_numpy(), a + b)
    assert calls[0][0] == (3, 3, 1)
    assert calls[0][1][:5] == (z.device_pointer, 33, 20, 20, 1)
    assert keys[0][0][0] == "partition" and keys[0][1][0] == "tensor"
    assert isinstance(out[0], tile.Partition) and out[1] is x and out[2] is y
    # the lease was released after the launch: the same tensor can be partitioned again
    KernelLaunch(compile_fn, z.partition((16, 8)), x, x).sync()
    assert np.allclose(z.to_numpy(), 2 * a)


def test_lazy_inputs_and_numpy_arguments():
    calls = []
    a, b = rand((8, 8), seed=3), rand((8, 8), seed=4)
    op = KernelLaunch(lambda key: make_add_kernel((4, 4), calls),
                      T.empty((8, 8), tile.float32).partition((4, 4)), a,
                      T.from_numpy(b))
    assert not calls                                   # nothing ran yet
    z = op.first().unpartition().sync()
    assert len(calls) == 1 and np.allclose(z.to_numpy(), a + b)


def test_launch_errors_surface_at_execution():
    x = T.from_numpy(rand((8, 8), seed=5)).sync()
    with pytest.raises(tile.LaunchError, match="no argument is a partition"):
        KernelLaunch(lambda key: None, x, x, x).sync()
    p = x.partition((4, 4))
    with pytest.raises(tile.TensorError, match="argument 'z' \\(partition\\) and argument 'x'"):
        KernelLaunch(lambda key: None, p, x, x).sync()


def test_empty_grid_launches_nothing():
    calls = []
    z = T.empty((0, 8), tile.float32).sync()
    e = T.empty((0, 8), tile.float32).sync()
    KernelLaunch(lambda key: make_add_kernel((4, 4), calls), z.partition((4, 4)), e, e).sync()
    assert calls == []


def test_out_of_bounds_in_a_simulated_kernel_is_a_device_error():
    x = T.from_numpy(rand((8,), seed=6)).sync()

    def bad(grid, params):
        sim.load(np.array([params[0] + 4 * 100]), np.float32)

    with pytest.raises(tile.DeviceError, match="out-of-bounds access"):
        SimExecutable(bad, "bad").launch((1, 1, 1), (x.device_pointer,),
                                         tile.Device(0).new_stream())


def test_launch_path_memos_are_bounded():
    """Every module-level launch-path cache is a BoundedMemo with a limit (tilejit.memo); one
    that is full forgets everything and refills with what is used now."""
    from tilejit.memo import MEMOS, BoundedMemo
    import tilejit.kernel_launch  # noqa: F401  (registers its memo)
    names = {m.name for m in MEMOS}
    assert {"argspec.array_keys", "argspec.numpy_keys", "kernel_launch.torch_streams"} <= names
    assert all(isinstance(m, dict) and 1 <= m.limit <= 8192 for m in MEMOS)
    m = BoundedMemo("test", 3, register=False)
    for i in range(3):
        m.put(i, i)
    m.put(1, "again")                       # an existing key: no clearing
    assert len(m) == 3 and m[1] == "again"
    m.put(3, 3)
    assert dict(m) == {3: 3} and "1 of 3" in repr(m)
    with pytest.raises(ValueError):
        BoundedMemo("bad", 0)
