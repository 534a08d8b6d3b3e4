"""Argument classification: specialization keys and facts (C2), ABI values (C1), grid, aliasing."""
import numpy as np
import pytest
import ml_dtypes

import tilejit as tile
from tilejit import keys
from tilejit.runtime import argspec
from tilejit.deviceops import transfer as T
from tilejit.runtime.argspec import classify
from tilejit.runtime.device import Device
from tilejit.runtime.memory import Storage
from tilejit.runtime.tensor import Tensor
from sample_arrays import rand_tensor


pytestmark = pytest.mark.usefixtures("simulator_backend")


def fake(shape, strides=None, ptr=0x10000, dtype=tile.float32, offset_bytes=0):
    """A tensor over a fake address (never dereferenced): facts without allocating."""
    from tilejit.layout import contiguous_strides
    st = Storage(ptr, 1 << 40, Device(0))
    strides = contiguous_strides(shape) if strides is None else strides
    return Tensor._new(st, shape, strides, offset_bytes, dtype)


def test_tensor_key_and_params():
    t = fake((64, 48))
    info = classify(t)
    assert info.kind == "tensor" and not info.writable
    assert info.key == ("tensor", "float32", 2, (32, 16, (64, 16), (4, 1), (False, True)), False)
    assert info.params == (0x10000, 64, 48, 48, 1)
    assert info.slots == ("u64", "i32", "i32", "i32", "i32")
    assert info.tensor == t and info.storage is t.storage
    # the cached info refers to its tensor weakly: no cycle keeps the tensor alive
    import weakref
    r = weakref.ref(t)
    del t, info
    assert r() is None


@pytest.mark.parametrize("shape,strides,offset,facts", [
    # odd extents and strides
    ((7, 5), (5, 1), 0, (32, 16, (1, 1), (1, 1), (False, True))),
    # a slice: base offset 12 bytes -> not 16-byte aligned; rows of 96 bytes are
    ((3, 6), (24, 1), 12, (32, 1, (1, 1), (4, 1), (False, True))),
    # column view: stride-one in dim 0 only; below 16, extents are keyed from one 16-byte
    # vector of elements (4 float32): 8 is, 2 is not
    ((8, 2), (1, 8), 0, (32, 16, (8, 1), (1, 4), (True, False))),
    # 1-D, extent 12 (÷4), stride 2 (8 bytes: not a multiple of 16)
    ((12,), (2,), 8, (32, 1, (4,), (1,), (False,))),
    # zero stride (broadcast) counts as a multiple of 16 bytes; extents 4 and 32 are keyed
    ((4, 32), (0, 1), 0, (32, 16, (4, 32), (4, 1), (False, True))),
    # 6 and 10 float32 (÷2) are not
    ((6, 10), (10, 1), 0, (32, 16, (1, 1), (1, 1), (False, True))),
    # extents divisible by 16..256 are keyed (whole tiles), strides as multiples of 16 bytes
    ((48, 512), (1024, 1), 0, (32, 16, (16, 256), (4, 1), (False, True))),
])
def test_facts_on_crafted_views(shape, strides, offset, facts):
    info = classify(fake(shape, strides, offset_bytes=offset))
    assert info.key[3] == facts
    assert info.params[0] == 0x10000 + offset


def test_index_bits_switch_to_64_for_large_views():
    assert classify(fake((1 << 16, 1 << 15))).key[3][0] == 64          # 2^31 elements
    assert classify(fake(((1 << 16) - 1, 1 << 15))).key[3][0] == 32
    big_stride = classify(fake((2, 4), (1 << 31, 1)))
    assert big_stride.key[3][0] == 64 and big_stride.slots[1:] == ("i64",) * 4
    assert keys.index_bits_for((1 << 31,), (1,)) == 64


def test_dtype_and_rank_enter_the_key():
    keys = {classify(fake((4, 4), dtype=d)).key for d in (tile.float16, tile.bfloat16, tile.int8)}
    assert len(keys) == 3
    assert classify(fake((16,))).key[2] == 1


def test_tensor_info_is_cached_per_view():
    t = rand_tensor((8, 8))
    assert classify(t) is classify(t)
    v = t[2:6]
    assert classify(v) is not classify(t)
    assert classify(v).params[0] == t.device_pointer + 64


def test_partition_key_grid_and_slots():
    t = rand_tensor((30, 40))
    p = t.partition((16, 8))
    info = classify(p)
    assert info.kind == "partition" and info.writable
    assert info.key[0] == "partition" and info.key[4] == (16, 8)
    assert info.key[3] == (32, 16, (1, 8), (4, 1), (False, True))      # 40 = 8 x 5 float32
    assert info.grid == (2, 5, 1) and info.tile_shape == (16, 8)
    assert info.params == (t.device_pointer, 30, 40, 40, 1)
    assert info.tensor == t
    assert argspec.slots_from_key(info.key) == info.slots
    p.unpartition()
    assert classify(t.partition((16, 8))) is info           # shared per (tensor, tile shape)
    import weakref
    r = weakref.ref(p)
    del p, info
    assert r() is None


@pytest.mark.parametrize("value,annotation,key,param,slot", [
    (3, None, ("scalar", "int64", True), 3, "i64"),
    (-7, tile.int32, ("scalar", "int32", True), -7, "i32"),
    (2.5, None, ("scalar", "float64", True), 2.5, "f64"),
    (0.1, None, ("scalar", "float64", True), 0.1, "f64"),        # exact: NumPy 2's weak float
    (True, None, ("scalar", "bool_", True), True, "i32"),
    (np.bool_(False), None, ("scalar", "bool_", False), 0, "i32"),
    (np.float16(1.5), None, ("scalar", "float16", False), 1.5, "f16"),
    (np.uint8(200), None, ("scalar", "uint8", False), 200, "u8"),
    (np.int16(-3), None, ("scalar", "int16", False), -3, "i16"),
    (np.float64(0.1), None, ("scalar", "float64", False), 0.1, "f64"),
    (np.uint64(2**63 + 5), None, ("scalar", "uint64", False), 2**63 + 5, "u64"),
    (1.0009765625, tile.bfloat16, ("scalar", "bfloat16", True), 1.0, "bf16"),
    (ml_dtypes.bfloat16(3.0), None, ("scalar", "bfloat16", False), 3.0, "bf16"),
    (5, np.float32, ("scalar", "float32", True), 5.0, "f32"),
])
def test_scalars(value, annotation, key, param, slot):
    """Python scalars are weak (third key element True) and travel exactly, NumPy scalars
    strong."""
    info = classify(value, annotation)
    assert info.kind == "scalar" and info.key == key
    assert info.params == (param,) and info.slots == (slot,)
    assert type(info.params[0]) in (int, float, bool)
    assert argspec.slots_from_key(key) == (slot,)


def test_scalar_range_errors():
    with pytest.raises(OverflowError, match="Python integer 18446744073709551616 out of bounds "
                                            "for uint64"):
        classify(2**64)
    with pytest.raises(OverflowError, match="Python integer -9223372036854775809 out of bounds "
                                            "for int64"):
        classify(-2**63 - 1)
    wide = classify(2**63)               # NumPy 2 takes it where it meets uint64
    assert wide.key == ("scalar", "uint64", True) and wide.slots == ("u64",)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        classify(300, tile.int8)
    with pytest.raises(TypeError, match="cannot be passed as int32"):
        classify(1.5, tile.int32)


def test_numpy_arrays_are_copied_in_at_prepare():
    from tilejit.runtime.stream import Stream
    a = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    info = classify(a)
    assert info.key == ("tensor", "float32", 2, (32, 16, (1, 1), (1, 1), (False, True)), False)
    assert info.params is None and info.prepare is not None and info.finish is not None
    stream = tile.Device(0).new_stream()
    info.prepare(stream)
    assert info.params[1:] == (5, 3, 3, 1) and info.params[0] == info.tensor.device_pointer
    assert isinstance(stream, Stream)
    t = info.tensor
    info.finish(stream)                 # the launch is queued: the buffer goes back to the pool
    assert info.tensor is None and stream._staging[60] == [t.storage]
    assert np.array_equal(t.to_numpy(), a)


def test_atomic_numpy_arrays_are_copied_back():
    a = np.arange(6, dtype=np.int32)
    info = classify(tile.atomic(a))
    assert info.writable and info.key[4] is True
    stream = tile.Device(0).new_stream()
    info.prepare(stream)
    T.copy_from_host(info.tensor, np.full(6, 9, np.int32)).sync()      # "the kernel" writes
    info.finish(stream)
    assert (a == 9).all()
    with pytest.raises(tile.TensorError, match="writable NumPy array"):
        ro = np.zeros(3)
        ro.flags.writeable = False
        classify(tile.atomic(ro))


def test_atomic_tensor_key_is_writable_and_cached_separately():
    t = rand_tensor((4,))
    w = classify(tile.atomic(t))
    assert w.writable and w.key[4] is True and w.tensor == t
    assert classify(tile.atomic(t)) is w and classify(t) is not w
    assert classify(t).key[:4] == w.key[:4]
    with pytest.raises(tile.TensorError, match="not a partition"):
        tile.atomic(t.partition((4,)))


def test_foreign_arrays_are_wrapped_zero_copy():
    t = rand_tensor((6,))

    class CAI:
        __cuda_array_interface__ = t.__cuda_array_interface__

    info = classify(CAI())
    assert info.kind == "tensor" and info.params[0] == t.device_pointer
    assert info.key == classify(t).key


def test_unsupported_arguments():
    with pytest.raises(TypeError, match="cannot pass str"):
        classify("x")
    with pytest.raises(TypeError, match="cannot pass list"):
        classify([1, 2])


def test_helpers_flatten_keys_and_slots():
    t = rand_tensor((4, 4))
    infos = [classify(t.partition((2, 2))), classify(rand_tensor((4, 4), seed=1)), classify(3.0)]
    assert argspec.key_of(infos) == tuple(i.key for i in infos)
    assert argspec.flatten_params(infos) == infos[0].params + infos[1].params + (3.0,)
    assert argspec.abi_slots(infos) == ("u64",) + ("i32",) * 4 + ("u64",) + ("i32",) * 4 + ("f64",)


# --- grid ---------------------------------------------------------------------------------------
def test_grid_from_partitions():
    z = rand_tensor((33, 64))
    w = rand_tensor((17, 32), seed=1)
    infos = [classify(z.partition((16, 32))), classify(w.partition((8, 16))), classify(1)]
    assert argspec.grid_from_partitions(infos) == (3, 2, 1)
    assert argspec.grid_from_partitions(infos, grid=(5,)) == (5, 1, 1)
    assert argspec.grid_from_partitions(infos, grid=7) == (7, 1, 1)


def test_grid_errors():
    z = rand_tensor((32, 32))
    w = rand_tensor((32, 32), seed=1)
    with pytest.raises(tile.LaunchError, match="no argument is a partition.*\\.grid"):
        argspec.grid_from_partitions([classify(z), classify(2)])
    bad = [classify(z.partition((16, 16))), classify(w.partition((8, 8)))]
    with pytest.raises(tile.LaunchError, match="argument 'z'.*grid \\(2, 2, 1\\).*argument 'w'.*"
                                              "grid \\(4, 4, 1\\)"):
        argspec.grid_from_partitions(bad, names=["z", "w"])
    with pytest.raises(tile.LaunchError, match="must be < 2\\^24"):
        argspec.grid_from_partitions([], grid=(1 << 24, 1, 1))
    with pytest.raises(tile.LaunchError, match="1 to 3 dimensions"):
        argspec.normalize_grid((1, 1, 1, 1))
    big = fake((1 << 25,))
    with pytest.raises(tile.LaunchError, match="must be < 2\\^24.*larger tiles"):
        argspec.grid_from_partitions([classify(big.partition((1,)))])
    ok = fake((1 << 25,), ptr=0x20000)
    assert argspec.grid_from_partitions([classify(ok.partition((4,)))]) == (1 << 23, 1, 1)


def test_empty_tensor_grid_is_zero():
    e = T.empty((0, 8), tile.float32).sync()
    assert argspec.grid_from_partitions([classify(e.partition((4, 4)))]) == (0, 2, 1)


# --- aliasing -----------------------------------------------------------------------------------
def test_output_aliasing_an_input_is_refused():
    t = rand_tensor((16, 16))
    p = t.partition((4, 4))
    with pytest.raises(tile.TensorError, match="argument 'z' \\(partition\\) and argument 'x' "
                                               "share memory.*api.dup"):
        argspec.check_launch_aliasing([classify(p), classify(t)], names=["z", "x"])


def test_aliasing_through_another_view_and_atomics():
    t = rand_tensor((64,))
    p = t[0:32].partition((8,))
    b = t[32:64]                                   # created after the partition: allowed
    argspec.check_launch_aliasing([classify(p), classify(b)])   # disjoint bytes: allowed
    with pytest.raises(tile.TensorError, match="share memory"):
        argspec.check_launch_aliasing([classify(p), classify(t[24:40])])    # overlapping
    del p
    w = rand_tensor((8,), seed=2)
    with pytest.raises(tile.TensorError, match="writable \\(tile.atomic\\) tensor"):
        argspec.check_launch_aliasing([classify(tile.atomic(w)), classify(w[2:4])])


def test_aliasing_detected_across_foreign_wrappers():
    t = rand_tensor((16,))

    class CAI:
        __cuda_array_interface__ = t.__cuda_array_interface__

    p = t.partition((4,))
    with pytest.raises(tile.TensorError, match="share memory"):
        argspec.check_launch_aliasing([classify(p), classify(CAI())])


def test_no_aliasing_is_fine():
    z, x, y = rand_tensor((8, 8)), rand_tensor((8, 8), seed=1), rand_tensor((8, 8), seed=2)
    infos = [classify(z.partition((4, 4))), classify(x), classify(y), classify(1.0), classify(x)]
    argspec.check_launch_aliasing(infos)           # x twice as read-only input is fine
    a = np.zeros(4, np.float32)
    argspec.check_launch_aliasing([classify(tile.atomic(a)), classify(np.ones(4, np.float32))])
    with pytest.raises(tile.TensorError, match="share memory"):
        argspec.check_launch_aliasing([classify(tile.atomic(a)), classify(a[1:])])
