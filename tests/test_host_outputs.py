"""NumPy arrays as kernel outputs, as in Numba (API.md §3): ``tile.partition(np_array, tile)`` and
``tile.atomic(np_array)`` are copied in, and the results copied back into the array when the op
completes; arrays that cannot take the results back (JAX, read-only NumPy) are refused when the
output is named, with a clear error."""
import asyncio

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def scale_in_place(z, s):
    z.store(z.load() * s)


@tile.entry
def count(z, c):
    tile.atomic_add(c, (0,), tile.ones((), tile.int32))
    z.store(tile.zeros(z.shape, z.dtype))


def test_a_numpy_output_partition_receives_the_results():
    x = np.arange(1000, dtype=np.float32)
    y = np.full(1000, 0.5, np.float32)
    z = np.zeros(1000, np.float32)
    out = add(tile.partition(z, (256,)), x, y).sync()
    np.testing.assert_array_equal(z, x + y)
    assert out[0].array is z                    # you get back what you passed


def test_every_way_of_completing_the_op_writes_back():
    x = np.arange(64, dtype=np.float32)
    s = tile.Device(0).new_stream()
    z1, z2, z3 = (np.zeros(64, np.float32) for _ in range(3))
    add(tile.partition(z1, (32,)), x, x).submit_on(s).result()

    async def awaited():
        await add(tile.partition(z2, (32,)), x, x)
    asyncio.run(awaited())
    add(tile.partition(z3, (32,)), x, x).schedule().result()
    for z in (z1, z2, z3):
        np.testing.assert_array_equal(z, 2 * x)


def test_the_array_is_copied_in_first_and_views_are_written_through():
    z = np.arange(32, dtype=np.float32).reshape(4, 8)
    scale_in_place(tile.partition(z, (2, 8)), 3.0).sync()            # reads z.load()
    np.testing.assert_array_equal(z, 3 * np.arange(32, dtype=np.float32).reshape(4, 8))
    base = np.zeros((8, 16), np.float64)
    view = base[:, ::2]                                               # non-contiguous
    scale_in_place(tile.partition(view, (4, 4)), 2.0).sync()          # zeros stay zeros
    view[...] = 1.0
    scale_in_place(tile.partition(view, (4, 4)), 2.0).sync()
    assert np.all(base[:, ::2] == 2.0) and np.all(base[:, 1::2] == 0.0)


def test_atomic_numpy_is_copied_back():
    c = np.zeros(1, np.int32)
    z = np.ones(64, np.float32)
    count(tile.partition(z, (16,)), tile.atomic(c)).sync()
    assert c[0] == 4 and np.all(z == 0)


def test_read_only_arrays_are_refused_when_named():
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    with pytest.raises(tile.TensorError, match=r"tile.partition\(\): this NumPy array is "
                                               r"read-only.*pass a writable NumPy array"):
        tile.partition(ro, (4,))
    with pytest.raises(tile.TensorError, match=r"tile.atomic\(\): this NumPy array is read-only"):
        tile.atomic(ro)
    with pytest.raises(tile.TensorError, match="power of two"):
        tile.partition(np.zeros(8, np.float32), (3,))


def test_an_output_may_not_alias_an_input():
    z = np.zeros(64, np.float32)
    with pytest.raises(tile.TensorError, match="share memory"):
        add(tile.partition(z, (32,)), z, np.ones(64, np.float32)).sync()


def test_prepare_says_numpy_outputs_are_copied_per_launch():
    z = np.zeros(64, np.float32)
    x = api.ones((64,)).sync()
    with pytest.raises(tile.LaunchError, match="argument `z` is a partition of a host array, "
                       "copied per launch"):
        add(tile.partition(z, (32,)), x, x).prepare()


def test_reprs_say_the_array_is_copied_back():
    z = np.zeros(64, np.float32)
    p = tile.partition(z, (32,))
    assert "copied in, and back" in repr(p)
    op = add(p, z[:0], z[:0])
    assert "partition of NumPy (64,) float32 by (32,) (copied in and back)" in repr(op)
    from tilejit.deviceops.deviceop import account_for
    account_for(op)


def test_a_float64_numpy_input_to_a_float32_kernel_suggests_astype():
    z = api.zeros((8,)).sync()
    with pytest.raises(tile.TypingError) as e:
        add(z.partition((4,)), np.ones(8), np.ones(8, np.float32)).sync()
    msg = str(e.value)
    assert "convert with .astype(tile.float32)" in msg                 # change the kernel, or
    assert "'x' is a float64 NumPy array" in msg and "x.astype(np.float32)" in msg
    with pytest.raises(tile.TypingError) as e:                         # no float64 array: no note
        add(z.partition((4,)), np.ones(8, np.int32), np.ones(8, np.int32)).sync()
    assert "int32" in str(e.value) and "NumPy array" not in str(e.value)


def test_jax_arrays_are_refused_as_outputs():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.zeros((8,), jnp.float32)
    with pytest.raises(tile.TensorError, match=r"tile.partition\(\): JAX arrays are immutable"):
        tile.partition(x, (4,))
    with pytest.raises(tile.TensorError, match=r"tile.atomic\(\): JAX arrays are immutable"):
        tile.atomic(x)
    z = np.zeros(8, np.float32)                                        # inputs are fine
    add(tile.partition(z, (4,)), x + 1, np.ones(8, np.float32)).sync()
    assert np.all(z == 2)


def test_a_cpu_torch_tensor_output_is_written_back():
    torch = pytest.importorskip("torch")
    z = torch.zeros(64)
    x = np.arange(64, dtype=np.float32)
    add(tile.partition(z, (32,)), x, x).sync()
    assert torch.equal(z, torch.from_numpy(2 * x))
    c = torch.zeros(1, dtype=torch.int32)
    count(tile.partition(np.zeros(64, np.float32), (16,)), tile.atomic(c)).sync()
    assert int(c[0]) == 4


class _GpuArrayWithoutTypestr:
    """Like a torch float8 CUDA tensor: ``__cuda_array_interface__`` raises KeyError (torch has no
    typestr for float8), and DLPack says it lives on a GPU."""
    shape, ndim = (8,), 1

    @property
    def __cuda_array_interface__(self):
        raise KeyError("torch.float8_e4m3fn")

    def __dlpack__(self, stream=None):
        raise NotImplementedError

    def __dlpack_device__(self):
        return (2, 0)


def test_a_gpu_array_whose_array_interface_raises_is_a_gpu_output():
    """torch float8 CUDA tensors as outputs (tile.atomic(c)) raised torch's KeyError (2026-11-27,
    the t09 fp8 benchmark rows)."""
    from tilejit.runtime.hostarrays import in_host_memory
    arr = _GpuArrayWithoutTypestr()
    assert not in_host_memory(arr)
    assert tile.atomic(arr).value is arr


def test_an_output_whose_elements_overlap_is_refused():
    # a stride-0 view: 4 atomic adds into one float kept 1 of them (issue 45)
    @tile.entry
    def adds(out):
        tile.atomic_add(out, tile.arange(4, tile.int32), 1.0)

    base = np.zeros(1, np.float32)
    view = np.lib.stride_tricks.as_strided(base, (4,), (0,))
    with pytest.raises(tile.TensorError, match="elements of this array overlap"):
        adds(tile.atomic(view)).grid((1, 1, 1)).sync()
    assert base.tolist() == [0.0]
    ok = np.zeros((4, 4), np.float32)[:, ::2]           # strided but not overlapping: fine
    adds(tile.atomic(ok[0])).grid((1, 1, 1)).sync()
    assert ok[0].tolist() == [1.0, 1.0]
