"""Programs cuTile Python refuses are refused by ``tilejit.cutile`` too, with cuTile's words
(found by running cuTile's own suite, tools/cutile_suite): the implicit conversion of stored
values, gather padding and masks."""
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _launch(kernel, *args):
    ct.launch(tile.Device(0).new_stream(), (1,), kernel, args)
    tile.Device(0).synchronize()


# --- stores convert by cuTile's implicit rule, never by an unchecked astype --------------------
@ct.kernel
def copy_by_scatter(x, y, TILE: ct.Constant[int]):
    i = ct.arange(TILE, dtype=ct.int32)
    ct.scatter(y, i, ct.gather(x, i))


@ct.kernel
def copy_by_store(x, y, TILE: ct.Constant[int]):
    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(TILE,)))


@pytest.mark.parametrize("kernel", [copy_by_scatter, copy_by_store])
@pytest.mark.parametrize("src, dst", [(np.float32, np.float16), (np.int32, np.int8),
                                      (np.float16, np.int32), (np.int32, np.uint32),
                                      (np.float32, np.bool_)])
def test_a_narrowing_store_is_refused(kernel, src, dst):
    x, y = np.ones(8, src), np.zeros(8, dst)
    with pytest.raises(ct.TileTypeError, match=r"incompatible with array's dtype: cannot "
                                               r"implicitly cast .*astype"):
        _launch(kernel, x, tile.atomic(y), 8)


@pytest.mark.parametrize("kernel", [copy_by_scatter, copy_by_store])
@pytest.mark.parametrize("src, dst", [(np.int8, np.int32), (np.float16, np.float32),
                                      (np.int32, np.float16), (np.bool_, np.float32)])
def test_a_widening_store_converts(kernel, src, dst):
    x, y = np.arange(8).astype(src), np.zeros(8, dst)
    _launch(kernel, x, tile.atomic(y), 8)
    np.testing.assert_array_equal(y, x.astype(dst))


@ct.kernel
def gather_padded(x, y, PAD: ct.Constant[int]):
    i = ct.arange(8, dtype=ct.int32)
    ct.scatter(y, i, ct.gather(x, i, padding_value=PAD))


def test_gather_padding_follows_the_implicit_rule():
    x, y = np.arange(4, dtype=np.int8), np.zeros(8, np.int32)
    _launch(gather_padded, x, tile.atomic(y), 127)
    np.testing.assert_array_equal(y, [0, 1, 2, 3, 127, 127, 127, 127])
    with pytest.raises(ct.TileValueError, match=r"Invalid padding value: 128 is out of range "
                                                r"of int8"):
        _launch(gather_padded, x, tile.atomic(y), 128)


@ct.kernel
def gather_masked(x, y, m, SIZE: ct.Constant[int]):
    i = ct.arange(8, dtype=ct.int32)
    ct.scatter(y, i, ct.gather(x, i, mask=ct.arange(SIZE, dtype=ct.int32) < m))


@ct.kernel
def gather_int_mask(x, y):
    i = ct.arange(8, dtype=ct.int32)
    ct.scatter(y, i, ct.gather(x, i, mask=i))


def test_gather_masks_are_bool_and_no_wider_than_the_indices():
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(ct.TileTypeError, match=r"mask must have boolean dtype"):
        _launch(gather_int_mask, x, tile.atomic(y))
    with pytest.raises(ct.TileTypeError, match=r"mask of shape \(4,\) is not broadcastable "
                                               r"to the indices' shape \(8,\)"):
        _launch(gather_masked, x, tile.atomic(y), 2, 4)


@tile.entry
def entry_scatter(x, y):
    i = tile.arange(8, dtype=tile.int32)
    tile.scatter(y, i, tile.gather(x, i, mask=i < 4))


def test_tile_entry_keeps_its_exact_dtype_rule():
    x, y = np.arange(8, dtype=np.int8), np.zeros(8, np.int32)
    with pytest.raises(tile.TypingError, match=r"has dtype int8 but the destination holds "
                                               r"int32"):
        entry_scatter(x, tile.atomic(y)).grid(1).sync()


# --- flush_to_zero and the APPROX/FULL roundings are float32-only in cuTile ---------------------
@ct.kernel
def sqrt_flushed(x, y, F: ct.Constant[bool]):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.sqrt(t, flush_to_zero=F))


@ct.kernel
def maximum_flushed(x, y, F: ct.Constant[bool]):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.maximum(t, t, flush_to_zero=F))


@ct.kernel
def max_flushed(x, y, F: ct.Constant[bool]):
    ct.store(y, index=(0,), tile=ct.max(ct.load(x, index=(0,), shape=(8,)), flush_to_zero=F))


@ct.kernel
def tanh_full(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.tanh(t, rounding_mode=ct.RoundingMode.FULL))


@pytest.mark.parametrize("kernel", [sqrt_flushed, maximum_flushed])
def test_flush_to_zero_needs_float32(kernel):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    _launch(kernel, x, tile.atomic(y), True)
    np.testing.assert_allclose(y, np.sqrt(x) if kernel is sqrt_flushed else x)
    with pytest.raises(ct.TileTypeError, match=r"Flush to zero can only be used for float32 "
                                               r"type"):
        _launch(kernel, x.astype(np.float16), tile.atomic(y.astype(np.float16)), True)
    _launch(kernel, x.astype(np.float16), tile.atomic(y.astype(np.float16)), False)


def test_reduction_flush_to_zero_needs_float32():
    x, y = np.arange(8, dtype=np.float16), np.zeros((), np.float16)
    with pytest.raises(ct.TileTypeError, match=r"Flush to zero can only be used for float32"):
        _launch(max_flushed, x, tile.atomic(y), True)


def test_full_rounding_needs_float32():
    x = np.linspace(-1, 1, 8).astype(np.float16)
    with pytest.raises(ct.TileTypeError, match=r"Rounding mode full can only be used for "
                                               r"float32 type, but got float16"):
        _launch(tanh_full, x, tile.atomic(np.zeros(8, np.float16)))


@tile.entry
def entry_sqrt_flushed(x, y):
    tile.store(y, (0,), tile.sqrt(tile.load(x, (0,), (8,)), flush_to_zero=True))


def test_tile_entry_flushes_float32_only_and_accepts_float16():
    x, y = np.arange(8, dtype=np.float16), np.zeros(8, np.float16)
    entry_sqrt_flushed(x, tile.atomic(y)).grid(1).sync()
    np.testing.assert_array_equal(y, np.sqrt(x))


# --- a variable keeps one type on every path ------------------------------------------------------
@ct.kernel
def int_or_float(x):
    if ct.bid(0) == 0:
        a = 1
    else:
        a = 2.0
    ct.store(x, (0,), a)


@ct.kernel
def widened_in_a_loop(x):
    a = 1
    for _ in range(3):
        a *= 2.0
    ct.store(x, (0,), a)


@pytest.mark.parametrize("kernel, line", [(int_or_float, "a = 1"), (widened_in_a_loop,
                                                                     "for _ in range(3)")])
def test_a_variable_whose_type_depends_on_the_path_is_refused(kernel, line):
    with pytest.raises(ct.TileTypeError, match=r"Type of `a` depends on path taken: ") as e:
        _launch(kernel, tile.atomic(np.zeros(1, np.float32)))
    assert line in str(e.value)         # the user's line, not the inlined ct.store's


@tile.entry
def entry_int_or_float(x):
    a = 1
    if tile.bid(0) == 0:
        a = 2.5
    tile.store(x, (0,), a)


def test_tile_entry_still_widens_at_joins():
    x = np.zeros(1, np.float32)
    entry_int_or_float(tile.atomic(x)).grid(1).sync()
    assert x[0] == 2.5


# --- MemoryScope.NONE: no scope ------------------------------------------------------------------
@ct.kernel
def copy_unscoped(x, y):
    t = ct.load(x, index=(0,), shape=(4,), memory_scope=ct.MemoryScope.NONE)
    ct.store(y, index=(0,), tile=t, memory_scope=ct.MemoryScope.NONE)


@ct.kernel
def add_unscoped(x, RAW: ct.Constant[bool]):
    if RAW:
        x.get_raw_memory().atomic_add_offset(0, 1, memory_order=ct.MemoryOrder.RELAXED,
                                             memory_scope=ct.MemoryScope.NONE)
    else:
        ct.atomic_cas(x, 0, 0, 1, memory_scope=ct.MemoryScope.NONE)


def test_memory_scope_none_is_a_weak_access_s_scope():
    x, y = np.arange(4, dtype=np.int32), np.zeros(4, np.int32)
    _launch(copy_unscoped, x, tile.atomic(y))
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("raw, op, order", [(True, "tile_atomic_rmw", "RELAXED"),
                                            (False, "tile_atomic_cas", "ACQ_REL")])
def test_an_ordered_access_needs_a_scope_other_than_none(raw, op, order):
    with pytest.raises(ct.TileTypeError, match=fr"{op} with {order} memory ordering requires a "
                                               fr"memory scope"):
        _launch(add_unscoped, tile.atomic(np.zeros(1, np.int32)), raw)


# --- cuTile sums narrow integers in their own dtype (ct.store then accepts the result) ------------
@ct.kernel
def sums_stored(x, y, z):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.cumsum(t, 0))
    ct.store(z, index=(), tile=ct.sum(t))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float16])
def test_sums_keep_the_operands_dtype(dtype):
    x = np.full(8, 100).astype(dtype)
    y, z = np.zeros(8, dtype), np.zeros((), dtype)
    _launch(sums_stored, x, tile.atomic(y), tile.atomic(z))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, np.cumsum(x, dtype=dtype))   # wraps as cuTile's does
        assert z == np.sum(x, dtype=dtype)


# --- float `//` is cuTile's floor(x / y) in the operands' dtype; @tile.entry keeps NumPy's -----
@ct.kernel
def floor_divide(x, y, z, TILE: ct.Constant[int]):
    tx, ty = ct.load(x, index=(0,), shape=(TILE,)), ct.load(y, index=(0,), shape=(TILE,))
    ct.store(z, index=(0,), tile=tx // ty)


@ct.kernel
def floor_divide_by_call(x, y, z, TILE: ct.Constant[int]):
    tx, ty = ct.load(x, index=(0,), shape=(TILE,)), ct.load(y, index=(0,), shape=(TILE,))
    ct.store(z, index=(0,), tile=ct.floordiv(tx, ty))


@pytest.mark.parametrize("kernel", [floor_divide, floor_divide_by_call])
def test_float_floordiv_floors_the_rounded_quotient(kernel):
    import ml_dtypes
    from numerics_kernels import run_floordiv_mod
    bf16 = ml_dtypes.bfloat16
    # bfloat16 1 / 0.1001 = 9.990 rounds to 10.0; 100 / 1.1016 = 90.78 rounds to 91.0
    x = np.array([1, 3, 100, -1, 7, 6, 0, 1] * 2, bf16)
    y = np.array([0.1, 0.3, 1.1, 0.1, 2, -4, 3, 0] * 2, bf16)
    z = np.zeros(16, bf16)
    _launch(kernel, x, y, tile.atomic(z), 16)
    with np.errstate(divide="ignore"):
        want = np.floor((x.astype(np.float32) / y.astype(np.float32)).astype(bf16))
    np.testing.assert_array_equal(z.astype(np.float32), want.astype(np.float32))
    assert list(z[:4].astype(np.float32)) == [10, 10, 91, -10]
    # the same operator in @tile.entry is NumPy's exact floor of the true quotient
    x256, y256 = np.resize(x, 256), np.resize(y, 256)
    q, _ = run_floordiv_mod(x256, y256)
    assert list(q[:4].astype(np.float32)) == [9, 9, 90, -10]
    np.testing.assert_array_equal(q, np.floor_divide(x256, y256))


# --- a failed ct.assert_ prints its message on stdout, as the GPU does, and still raises -------
@ct.kernel
def assert_positive(x, TILE: ct.Constant[int]):
    ct.assert_(ct.load(x, index=(ct.bid(0),), shape=(TILE,)) > 0, "x must be positive")


def test_a_failed_assert_prints_its_message_on_stdout(capsys):
    from tilejit.simulator import DeviceAssertionError
    x = np.ones(16, np.float32)
    ct.launch(tile.Device(0).new_stream(), (2,), assert_positive, (x, 8))
    tile.Device(0).synchronize()
    assert capsys.readouterr().out == ""
    x[12] = -1
    with pytest.raises(DeviceAssertionError, match="x must be positive"):
        ct.launch(tile.Device(0).new_stream(), (2,), assert_positive, (x, 8))
        tile.Device(0).synchronize()
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    # the location is the kernel's line, not the line of tilejit's ct.assert_ helper
    line = assert_positive.py_func.__code__.co_firstlineno + 2     # (the decorator's line)
    assert lines == [f"[block (1, 0, 0)] device assertion failed: x must be positive "
                     f"({__file__}:{line})"]


# --- ct.transpose without axes is for 2-d tiles only, as in cuTile ------------------------------
@ct.kernel
def transpose_default(x, y, SHAPE: ct.Constant[tuple]):
    t = ct.load(x, index=(0,) * len(SHAPE), shape=SHAPE)
    ct.store(y, index=(0,) * len(SHAPE), tile=ct.transpose(t))


@pytest.mark.parametrize("shape, match", [
    ((8,), "Cannot transpose a tile with fewer than 2 dimensions"),
    ((2, 4, 8), r"`axes` must be specified for tile with more than 2 dimensions"),
])
def test_transpose_without_axes_needs_a_2d_tile(shape, match):
    x = np.zeros(shape, np.float32)
    with pytest.raises(ct.TileTypeError, match=match):
        _launch(transpose_default, x, tile.atomic(np.zeros(shape[::-1], np.float32)), shape)


def test_transpose_without_axes_swaps_a_2d_tile():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros((8, 4), np.float32)
    _launch(transpose_default, x, tile.atomic(y), (4, 8))
    np.testing.assert_array_equal(y, x.T)


# --- mma/matmul dtypes cuTile refuses ------------------------------------------------------------
@ct.kernel
def mma_fast(a, b, c, FAST: ct.Constant[bool]):
    acc = ct.mma(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16)),
                 ct.load(c, (0, 0), (16, 16)), use_fast_acc=FAST)
    ct.store(c, (0, 0), acc)


def test_use_fast_acc_needs_fp8_inputs():
    a = np.ones((16, 16), np.float16)
    c = np.zeros((16, 16), np.float32)
    _launch(mma_fast, a, a, tile.atomic(c), False)
    np.testing.assert_array_equal(c, np.full((16, 16), 16, np.float32))
    with pytest.raises(ct.TileTypeError, match="use_fast_acc is only supported for fp8"):
        _launch(mma_fast, a, a, tile.atomic(c), True)


@ct.kernel
def matmul_mixed(a, b, c):
    ct.store(c, (0, 0), ct.matmul(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16))))


@pytest.mark.parametrize("da, db", [(np.uint8, np.int8), (np.float16, "bfloat16")])
def test_matmul_of_operands_cutile_cannot_promote_is_refused(da, db):
    import ml_dtypes
    db = ml_dtypes.bfloat16 if db == "bfloat16" else db
    a, b = np.ones((16, 16), da), np.ones((16, 16), db)
    with pytest.raises(ct.TileTypeError, match="Implicit promotion of .* is not supported"):
        _launch(matmul_mixed, a, b, tile.atomic(np.zeros((16, 16), np.int32)))


@ct.kernel
def _int8_matmul(A, B, C, N: ct.Constant[int]):
    acc = ct.matmul(ct.load(A, index=(0, 0), shape=(N, N)), ct.load(B, index=(0, 0), shape=(N, N)))
    ct.store(C, index=(0, 0), tile=acc)


def test_matmul_of_int8_returns_int8_as_cutile():
    # cuTile's matmul gives the operands' dtype (int8 wraps), where tilejit's `@` widens to int32
    a = (np.arange(256) % 32).astype(np.int8).reshape(16, 16)
    b = ((np.arange(256) * 7) % 32).astype(np.int8).reshape(16, 16)
    c = np.zeros((16, 16), np.int8)
    _launch(_int8_matmul, a, b, c, 16)
    want = (a.astype(np.int32) @ b.astype(np.int32)).astype(np.int8)
    np.testing.assert_array_equal(c, want)


@ct.kernel
def _matmul_1d(A, B, C, D, K: ct.Constant[int], N: ct.Constant[int]):
    a, b = ct.load(A, index=(0,), shape=(K,)), ct.load(B, index=(0, 0, 0), shape=(2, K, N))
    ct.store(C, index=(0, 0), tile=ct.matmul(a, b))         # (K,) @ (2, K, N) -> (2, N)
    m = ct.load(B, index=(0, 0, 0), shape=(2, K, N)).permute((0, 2, 1))
    ct.store(D, index=(0,), tile=ct.matmul(ct.matmul(m, a), ct.load(A, index=(0,), shape=(N,))))


def test_matmul_takes_1d_operands_as_numpy():
    """cuTile's matmul (test_matmul_nd): a 1-D x is a row and a 1-D y a column, and the result
    drops that axis; two 1-D operands give their dot product (tilejit's own `@` wants 2-D)."""
    a = np.arange(8, dtype=np.float32) - 3
    b = (np.arange(2 * 8 * 8, dtype=np.float32) % 5).reshape(2, 8, 8)
    c, d = np.zeros((2, 8), np.float32), np.zeros(2, np.float32)
    _launch(_matmul_1d, a, b, c, tile.atomic(d), 8, 8)
    np.testing.assert_allclose(c, a @ b)
    np.testing.assert_allclose(d, (b.transpose(0, 2, 1) @ a) @ a)


def test_matmul_promotes_two_float_dtypes_to_the_wider():
    """cuTile's test_matmul: float16 @ float32 is computed in float32 (tilejit's own `@` wants
    one dtype); float16 with bfloat16 stays refused (the test above)."""
    a = (np.arange(256) % 7).astype(np.float16).reshape(16, 16) / 4
    b = (np.arange(256) % 5).astype(np.float32).reshape(16, 16) / 3
    c = np.zeros((16, 16), np.float32)
    _launch(matmul_mixed, a, b, tile.atomic(c))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b, rtol=1e-6)


@ct.kernel
def _mma_2x2(a, b, c):
    ct.store(c, (0, 0), ct.mma(ct.load(a, (0, 0), (2, 2)), ct.load(b, (0, 0), (2, 2)),
                               ct.load(c, (0, 0), (2, 2))))


@pytest.mark.parametrize("din, dacc, message", [
    (np.int16, np.float32, "Unsupported input dtype int16"),
    ("bfloat16", np.float16, "Unsupported acc dtype float16: bfloat16 inputs need a float32"),
])
def test_mma_dtype_errors_say_what_cutile_says(din, dacc, message):
    import ml_dtypes
    din = ml_dtypes.bfloat16 if din == "bfloat16" else din
    a = np.ones((2, 2), din)
    with pytest.raises(ct.TileTypeError, match=message):
        _launch(_mma_2x2, a, a, tile.atomic(np.zeros((2, 2), dacc)))
    with pytest.raises(ct.TileTypeError, match="Unsupported input dtype int32"):
        _launch(matmul_mixed, *[np.ones((16, 16), np.int32)] * 2, np.zeros((16, 16), np.int32))
