"""``x.get_raw_memory()`` (cuTile Python's ``RawArrayMemory``): loads, stores and atomics by
element offset from an array's base pointer, in ``ct.kernel`` and ``@tile.entry`` kernels; the
typing checks cuTile makes (offset and mask kinds, broadcasting to the offset's shape, implicit
casts, the dtypes each atomic supports, writability)."""
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _launch(kernel, grid, args):
    s = tile.Device(0).new_stream()
    ct.launch(s, grid, kernel, args)
    s.synchronize()


@ct.kernel
def copy_by_offset(x, y, TILE: ct.Constant[int]):
    src, dst = x.get_raw_memory(), y.get_raw_memory()
    off = ct.arange(TILE, dtype=ct.int64) + ct.bid(0) * TILE
    dst.store_offset(off, src.load_offset(off))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.int64, np.bool_])
def test_copy_by_element_offsets(dtype):
    x = (np.arange(64) % 5).astype(dtype)
    y = np.zeros(64, dtype)
    _launch(copy_by_offset, (4,), (x, y, 16))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def strided_column(x, y, N: ct.Constant[int]):
    """Offsets ignore the array's shape and strides: every N-th element of a 2-d array."""
    col = x.get_raw_memory().load_offset(ct.arange(N, dtype=ct.int32) * N + 1)
    y.get_raw_memory().store_offset(ct.arange(N, dtype=ct.int32), col)


def test_offsets_address_memory_not_the_shape():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    y = np.zeros(4, np.float32)
    _launch(strided_column, (1,), (x, y, 4))
    np.testing.assert_array_equal(y, x[:, 1])


@ct.kernel
def masked(x, y, pad: ct.Constant[float]):
    src, dst = x.get_raw_memory(), y.get_raw_memory()
    off = ct.arange(8, dtype=ct.int64)
    t = src.load_offset(off, mask=off < 5, padding_value=pad, latency=3)
    dst.store_offset(off, t, mask=off != 6)
    dst.store_offset(7, src.dtype(2.5))          # a scalar offset: one element


def test_mask_padding_and_scalar_offsets():
    x = np.arange(100, 108, dtype=np.float32)
    y = np.full(8, 9.0, np.float32)
    _launch(masked, (1,), (x, y, -1.0))
    np.testing.assert_array_equal(y, [100, 101, 102, 103, 104, -1, 9, 2.5])


@ct.kernel
def broadcast_store(y, v: ct.Constant[float]):
    off = ct.reshape(ct.arange(8, dtype=ct.int64), (4, 2))
    y.get_raw_memory().store_offset(off, ct.full((4, 1), v, dtype=ct.float32))


def test_a_stored_value_broadcasts_to_the_offsets_shape():
    y = np.zeros(8, np.float32)
    _launch(broadcast_store, (1,), (y, 7.0))
    np.testing.assert_array_equal(y, 7.0)


def _add_of(x):
    return x.get_raw_memory().atomic_add_offset


@ct.kernel
def atomics(x, y, old, TILE: ct.Constant[int]):
    off = ct.arange(TILE, dtype=ct.int64)
    add = ct.static_eval(_add_of)(x)              # a bound method through a helper (cuTile's tests)
    ct.scatter(old, off, add(off, ct.gather(y, off)))
    m = x.get_raw_memory()
    m.atomic_max_offset(0, 100, memory_order=ct.MemoryOrder.RELAXED)
    m.atomic_xor_offset(off + TILE, ct.full((TILE,), 3, dtype=ct.int32), mask=off < 2)
    was = m.atomic_cas_offset(off + 2 * TILE, 5, ct.arange(TILE, dtype=ct.int32))
    ct.scatter(old, off + TILE, was)


def test_atomics_return_the_old_values():
    x = np.ones(12, np.int32)
    x[8:] = [5, 0, 5, 0]
    y = np.arange(4, dtype=np.int32)
    old = np.zeros(8, np.int32)
    _launch(atomics, (1,), (x, y, old, 4))
    np.testing.assert_array_equal(x, [100, 2, 3, 4, 2, 2, 1, 1, 0, 0, 2, 0])
    np.testing.assert_array_equal(old, [1, 1, 1, 1, 5, 0, 5, 0])


@tile.entry
def entry_raw(x, out):
    m = x.get_raw_memory()
    off = tile.arange(4, dtype=tile.int32)
    m.atomic_add_offset(off, m.load_offset(off) * 2.0)
    out.store(m.load_offset(off))


def test_tile_entry_kernels_use_raw_memory_too():
    x = api.from_numpy(np.arange(4, dtype=np.float32)).sync()
    out = api.zeros((4,)).sync()
    entry_raw(tile.atomic(x), out.partition((4,))).sync()
    np.testing.assert_array_equal(out.to_numpy(), [0, 3, 6, 9])


def _typing_error(body: str, x_dtype=np.float32, match=""):
    src = ("import tilejit.cutile as ct\n@ct.kernel\ndef k(x, y):\n    m = x.get_raw_memory()\n"
           "    off = ct.arange(4, dtype=ct.int32)\n    " + body + "\n    ct.scatter(y, off, 1)\n")
    ns: dict = {}
    exec(compile(src, "<raw_memory_case>", "exec"), ns)   # noqa: S102
    with pytest.raises(tile.TypingError, match=match):
        _launch(ns["k"], (1,), (np.zeros(8, x_dtype), np.zeros(8, np.float32)))


@pytest.mark.parametrize("body, dtype, match", [
    ("m.load_offset(off.astype(ct.float32))", np.float32, "offset must be an integer"),
    ("m.load_offset(off, mask=off)", np.float32, "mask must have a boolean dtype"),
    ("m.load_offset(off, mask=ct.full((8,), True, dtype=ct.bool_))", np.float32,
     r"shape \(8,\) is not broadcastable to the offset shape \(4,\)"),
    ("m.store_offset(off, ct.full((4,), 1.5, dtype=ct.float64))", np.float32,
     "cannot implicitly cast float64 to float32"),
    ("m.atomic_add_offset(off, 1)", np.int8, "Unsupported array dtype: int8"),
    ("m.atomic_max_offset(off, 1.0)", np.float32, "Unsupported array dtype: float32"),
    ("m.atomic_and_offset(off, ct.full((4,), 1, dtype=ct.int64))", np.int32,
     r"require the update dtype \(int64\) to exactly match the target dtype \(int32\)"),
    ("m.atomic_add_offset(off, 1, memory_order=ct.MemoryOrder.WEAK)", np.int32,
     "Invalid memory order for tile_atomic_rmw: WEAK"),
])
def test_typing_errors(body, dtype, match):
    _typing_error(body, dtype, match)


@tile.entry
def entry_store_read_only(x, out):
    x.get_raw_memory().store_offset(0, 1.0)
    out.store(tile.zeros((4,), tile.float32))


def test_storing_needs_a_writable_array():
    x = api.zeros((4,)).sync()
    with pytest.raises(tile.TypingError, match="cannot store_offset into a read-only"):
        entry_store_read_only(x, api.zeros((4,)).sync().partition((4,))).sync()


def test_load_offset_alone_leaves_the_array_read_only():
    @ct.kernel
    def reads(x, y):
        y.get_raw_memory().store_offset(0, x.get_raw_memory().load_offset(0))
    assert reads.written_parameters == ("y",)


# --- ct.atomic_* (element indices) convert their operands as the raw-memory atomics do ------------
@ct.kernel
def ct_atomics(x, y, old):
    off = ct.arange(4, dtype=ct.int64)
    ct.scatter(old, off, ct.atomic_add(x, off, ct.gather(y, off)))     # int32 into float32
    ct.atomic_cas(x, 0, 1, ct.full((), 7, dtype=ct.int32))


def test_ct_atomics_convert_updates_implicitly():
    x = np.ones(4, np.float32)
    old = np.zeros(4, np.float32)
    _launch(ct_atomics, (1,), (x, np.arange(4, dtype=np.int32), old))
    np.testing.assert_array_equal(x, [7, 2, 3, 4])
    np.testing.assert_array_equal(old, 1)


@pytest.mark.parametrize("body, dtype, match", [
    ("ct.atomic_add(x, off, ct.full((4,), 1.5, dtype=ct.float32))", np.int32,
     "cannot implicitly cast float32 to int32"),
    ("ct.atomic_xor(x, off, ct.full((4,), 1, dtype=ct.int64))", np.int32,
     r"require the update dtype \(int64\) to exactly match the target dtype \(int32\)"),
    ("ct.atomic_cas(x, off, 0, ct.full((4,), 1.5, dtype=ct.float64))", np.float32,
     "Desired value is incompatible with the target dtype: cannot implicitly cast float64"),
    ("ct.atomic_and(x, off, ct.full((4,), 1, dtype=ct.int32))", np.float32,
     "atomic_and: Unsupported array dtype: float32"),         # checked before the update
])
def test_ct_atomics_refuse_what_cutile_refuses(body, dtype, match):
    _typing_error(body, dtype, match)


def _tileiras():
    from tilejit.toolchain import tileiras
    try:
        tileiras.find_toolchain()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"tileiras is not installed ({e})")


@pytest.mark.parametrize("kernel, args", [
    (copy_by_offset, (np.zeros(64, np.bool_), np.zeros(64, np.bool_), 16)),
    (masked, (np.zeros(8, np.float32), np.zeros(8, np.float32), -1.0)),
    (broadcast_store, (np.zeros(8, np.float32), 7.0)),
    (atomics, (np.zeros(12, np.int32), np.zeros(4, np.int32), np.zeros(8, np.int32), 4)),
    (ct_atomics, (np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(4, np.float32))),
])
def test_tileiras_compiles_raw_memory_accesses(kernel, args):
    _tileiras()
    assert len(kernel.compile(*args, arch="sm_90")) > 0


def test_the_implicit_cast_stub_is_kernel_code_only():
    from tilejit.implicit_casts import implicit_cast
    with pytest.raises(tile.TileJitError, match="only be called inside"):
        implicit_cast(1, tile.int32, "value")
