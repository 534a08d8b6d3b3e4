"""The launch hot path: the C launcher (tilejit._native) and the pure-Python path must agree.

CI runs the whole suite twice, with and without the extension (TILEJIT_NATIVE=0); the tests here
pin what the C launcher does itself (plain launches of cached kernels) and where it must hand a
launch back to Python (errors keep their usual messages)."""
import math

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, native
from tilejit.runtime.launch import ParamPacker, native_layout

pytestmark = pytest.mark.usefixtures("simulator_backend")

needs_native = pytest.mark.skipif(not native.enabled(),
                                  reason="the C extension is not built or TILEJIT_NATIVE=0")


@tile.entry
def axpb(z, x, a, b):
    z.store(tile.load_tile_like(x, z) * a + b)


@tile.entry
def flag(z, x, on):
    t = tile.load_tile_like(x, z)
    if on:
        t = t + 1.0
    z.store(t)


def _data(n=100, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_repeated_plain_launches_are_right_and_counted():
    s = tile.Device(0).new_stream()
    a = _data()
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((100,)).sync_on(s)
    for i in range(5):                                  # first: compile; then cache hits
        axpb(z.partition((32,)), x, float(i), i).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), a * i + i, rtol=1e-6, atol=1e-6)
    assert axpb.stats.compiles == 1 and axpb.stats.launches == 5
    assert axpb.stats.cache_hits >= 4


def test_python_float_scalars_are_rounded_to_float32_like_the_gpu():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.ones(32, np.float32)).sync_on(s)
    z = api.zeros((32,)).sync_on(s)
    for _ in range(2):
        axpb(z.partition((32,)), x, 0.1, 0).sync_on(s)
        assert z.to_numpy()[0] == np.float32(0.1)


def test_bool_scalars_and_new_partitions_each_call():
    s = tile.Device(0).new_stream()
    a = _data(64, 1)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    for on in (True, False, True, False):
        flag(z.partition((16,)), x, on).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), a + (1.0 if on else 0.0), rtol=1e-6, atol=1e-6)


def test_errors_after_the_cache_is_warm_keep_their_messages():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(_data(64, 2)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), x, 1.0, 0).sync_on(s)
    with pytest.raises(tile.TensorError, match="share memory"):
        axpb(z.partition((16,)), z, 1.0, 0).sync_on(s)            # output aliases an input
    w = api.zeros((64,)).sync_on(s)
    p = w.into_partition((16,))
    with pytest.raises(tile.TensorError, match="moved into a partition"):
        axpb(z.partition((16,)), w, 1.0, 0).sync_on(s)
    p.unpartition()
    with pytest.raises(OverflowError, match="does not fit int64"):
        axpb(z.partition((16,)), x, 1.0, 1 << 70).sync_on(s)
    with pytest.raises(TypeError, match="cannot pass list"):
        axpb(z.partition((16,)), x, [1.0], 0).sync_on(s)
    # and the kernel still works afterwards
    axpb(z.partition((16,)), x, 2.0, 0).sync_on(s)
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() * 2)


def test_numpy_arguments_and_lazy_inputs_take_the_general_path():
    s = tile.Device(0).new_stream()
    a = _data(64, 3)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), a, 3.0, 1).sync_on(s)                 # NumPy: copied in
    np.testing.assert_allclose(z.to_numpy(), a * 3 + 1, rtol=1e-6, atol=1e-6)
    axpb(z.partition((16,)), api.from_numpy(a), 1.0, 1).sync_on(s)  # a DeviceOp input
    np.testing.assert_allclose(z.to_numpy(), a + 1, rtol=1e-6, atol=1e-6)


def test_explicit_grid_is_respected():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), x, 1.0, 0).sync_on(s)
    z2 = api.zeros((64,)).sync_on(s)
    axpb(z2.partition((16,)), x, 5.0, 0).grid((2, 1, 1)).sync_on(s)   # only half the blocks
    out = z2.to_numpy()
    assert (out[:32] == 5).all() and (out[32:] == 0).all()


def test_threads_launch_correctly():
    import threading
    s_x = api.from_numpy(_data(256, 4)).sync()
    errors = []

    def work(seed):
        try:
            st = tile.Device(0).new_stream()
            z = api.zeros((256,)).sync_on(st)
            for k in range(20):
                axpb(z.partition((64,)), s_x, float(seed), k).sync_on(st)
                np.testing.assert_allclose(z.to_numpy(), s_x.to_numpy() * seed + k, rtol=1e-6, atol=1e-6)
        except Exception as e:          # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@needs_native
def test_native_packing_matches_the_python_packer():
    slots = ("u64", "i32", "i32", "f16", "i64", "bf16", "u8", "f64", "f32", "i8", "u16", "i16",
             "u32", "b1", "tf32")
    vals = (0x1234_5678_9ABC, -5, 7, 1.5, -(2 ** 40), 2.0, 255, 0.1, 3.25, -3, 65535, -2,
            4_000_000_000, 1, 1.0 / 3)
    pk = ParamPacker(slots)
    pk.pack(vals)
    assert native.ext().pack(native_layout(slots), vals) == pk.packed_bytes()
    for special in (math.inf, -math.inf, -0.0, 65504.0, 1e-8):
        one = ParamPacker(("bf16", "f16"))
        one.pack((special, special))
        assert native.ext().pack(b"Ee", (special, special)) == one.packed_bytes()
    with pytest.raises(OverflowError):
        native.ext().pack(b"i", (1 << 31,))
    with pytest.raises(ValueError, match="slots"):
        native.ext().pack(b"ii", (1,))
    assert native_layout(("f8e4m3",)) is None            # packed in Python


def test_info_reports_the_launch_path():
    line = native.status()
    assert ("native C extension" in line) == native.enabled()
