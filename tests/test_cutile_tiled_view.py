"""``x.tiled_view(tile_shape, *, padding_mode=..., traversal_steps=None)``: cuTile Python's
``TiledView`` (typing/templates/tiled_view.py, lowering/handlers/tiled_view.py) through
``tilejit.cutile`` and ``ct.launch``, values checked against NumPy slicing: side-by-side tiles
(partition views), overlapping and gapped tiles (``traversal_steps``), 0-d tiles, padding modes,
``num_tiles``, stores with broadcasting and implicit casts, the atomic stores, cuTile's errors,
the method in ``@tile.entry`` kernels, and Tile IR that tileiras compiles."""
import math

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")

ConstInt = ct.Constant[int]


def windows_ref(x, tile_shape, steps, out_shape=None):
    """What storing every tile of a (tile_shape, steps) view of ``x`` into zeros gives."""
    ref = np.zeros_like(x)
    grids = [range(0, n, s) for n, s in zip(x.shape, steps)]
    for origin in np.ndindex(*[len(g) for g in grids]):
        sl = tuple(slice(g[i], g[i] + t) for g, i, t in zip(grids, origin, tile_shape))
        ref[sl] = x[sl]
    return ref


# --- side-by-side tiles -------------------------------------------------------------------------
@ct.kernel
def copy_1d(x, y, TILE: ConstInt):
    bid = ct.bid(0)
    tv_x = x.tiled_view(TILE)
    ct.static_assert(tv_x.dtype == x.dtype)
    ct.static_assert(tv_x.tile_shape == (TILE,))
    ct.static_assert(tv_x.traversal_steps == (TILE,))
    y.tiled_view(TILE).store(bid, tv_x.load(bid))


@pytest.mark.parametrize("n", [64, 225])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float16, np.bool_])
def test_copy_1d_with_a_partial_last_tile(n, dtype):
    x = (np.arange(n) % 7 == 3) if dtype is np.bool_ else (np.arange(n) % 100).astype(dtype)
    y = np.zeros_like(x)
    ct.launch(0, (ct.cdiv(n, 64),), copy_1d, (x, y, 64))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def copy_2d(x, y, n, TILE_M: ConstInt, TILE_N: ConstInt):
    bidm, bidn = ct.bid(0), ct.bid(1)
    tv_x = x.tiled_view((TILE_M, TILE_N))
    y.tiled_view((TILE_M, TILE_N)).store((bidm, bidn), tv_x.load((bidm, bidn)))
    tv_n = n.tiled_view(())
    ct.static_assert(tv_n.tile_shape == ())
    ct.static_assert(tv_n.traversal_steps == (1,))
    if bidm == 0 and bidn == 0:
        tv_n.store(0, tv_x.num_tiles(0))
        tv_n.store(1, tv_x.num_tiles(-1))


@pytest.mark.parametrize("transposed", [False, True])
def test_copy_2d_and_num_tiles(transposed):
    x = np.arange(48 * 37, dtype=np.float32).reshape(48, 37)
    if transposed:                                     # a non-contiguous array
        x = np.arange(48 * 37, dtype=np.float32).reshape(37, 48).T
    y, n = np.zeros(x.shape, np.float32), np.zeros(2, np.int32)
    ct.launch(0, (3, 3), copy_2d, (x, y, n, 16, 16))
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(n, [3, 3])


# --- traversal_steps ------------------------------------------------------------------------------
@ct.kernel
def sliding(x, out, TILE: ConstInt, STEP: ConstInt):
    tv = x.tiled_view(TILE, traversal_steps=STEP)
    tv_out = out.tiled_view(TILE, traversal_steps=STEP)
    ct.static_assert(tv.traversal_steps == (STEP,))
    for i in range(tv.num_tiles(0)):
        tv_out.store(i, tv.load(i))


@pytest.mark.parametrize("tile_size,step,n", [(4, 2, 8), (4, 8, 16), (4, 3, 12), (4, 3, 13),
                                              (8, 8, 20)],
                         ids=["overlap", "gaps", "step3", "ragged", "equal"])
@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.uint8])
def test_sliding_window(tile_size, step, n, dtype):
    x = (np.arange(n) + 1).astype(dtype)
    out = np.zeros(n, dtype)
    ct.launch(0, (1,), sliding, (x, out, tile_size, step))
    np.testing.assert_array_equal(out, windows_ref(x, (tile_size,), (step,)))


@ct.kernel
def count_tiles(x, out, TILE: ConstInt, STEP: ConstInt):
    out.tiled_view(1).store(0, x.tiled_view(TILE, traversal_steps=STEP).num_tiles(0))


@pytest.mark.parametrize("n,tile_size,step", [(16, 4, 2), (17, 4, 2), (16, 2, 5), (3, 4, 4)])
def test_num_tiles_is_cdiv_of_the_extent_by_the_step(n, tile_size, step):
    out = np.zeros(1, np.float32)
    ct.launch(0, (1,), count_tiles, (np.zeros(n, np.float32), out, tile_size, step))
    assert out[0] == -(-n // step)


@ct.kernel
def box_filter(x, out, KH: ConstInt, KW: ConstInt, SH: ConstInt, SW: ConstInt,
               OUT_H: ConstInt, OUT_W: ConstInt):
    tv = x.tiled_view((KH, KW), traversal_steps=(SH, SW))
    out_tv = out.tiled_view(())
    for i in range(OUT_H):
        for j in range(OUT_W):
            out_tv.store(i * OUT_W + j, ct.sum(tv.load((i, j))))


@pytest.mark.parametrize("steps", [(1, 1), (2, 1), (1, 3)])
def test_2d_box_filter(steps):
    x = np.random.default_rng(3).integers(0, 10, (6, 7)).astype(np.int32)
    kh, kw = 2, 4
    oh, ow = (6 - kh) // steps[0] + 1, (7 - kw) // steps[1] + 1
    out = np.zeros(oh * ow, np.int32)
    ct.launch(0, (1,), box_filter, (x, out, kh, kw, *steps, oh, ow))
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw))[::steps[0], ::steps[1]]
    np.testing.assert_array_equal(out, windows.sum(axis=(-2, -1)).ravel())


@ct.kernel
def every_other(x, out, SH: ConstInt, SW: ConstInt, NH: ConstInt, NW: ConstInt):
    tv = x.tiled_view((), traversal_steps=(SH, SW))
    out_tv = out.tiled_view(())
    for i in range(NH):
        for j in range(NW):
            out_tv.store(i * NW + j, tv.load((i, j)))


@pytest.mark.parametrize("steps", [(2, 3), (1, 1)])
def test_0d_tiles_with_traversal_steps(steps):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    nh, nw = 4 // steps[0], 6 // steps[1]
    out = np.zeros(nh * nw, np.float32)
    ct.launch(0, (1,), every_other, (x, out, *steps, nh, nw))
    np.testing.assert_array_equal(out, x[::steps[0], ::steps[1]].ravel())


@ct.kernel
def strided_2d_copy(x, y, TM: ConstInt, TN: ConstInt, SM: ConstInt, SN: ConstInt):
    tv_x = x.tiled_view((TM, TN), traversal_steps=(SM, SN))
    tv_y = y.tiled_view((TM, TN), traversal_steps=(SM, SN))
    tv_y.store((ct.bid(0), ct.bid(1)), tv_x.load((ct.bid(0), ct.bid(1))))


def test_gapped_2d_tiles_on_a_sliced_column_major_array():
    x = np.asfortranarray(np.arange(30 * 20, dtype=np.float32).reshape(30, 20))
    y = np.zeros_like(x)
    ct.launch(0, (ct.cdiv(30, 12), ct.cdiv(20, 6)), strided_2d_copy, (x, y, 8, 4, 12, 6))
    np.testing.assert_array_equal(y, windows_ref(x, (8, 4), (12, 6)))


@ct.kernel
def running_count(x, N: ConstInt, STEP: ConstInt):
    tv = x.tiled_view(4, traversal_steps=STEP)
    for i in range(1, N):
        tv.store(i, tv.load(i - 1) + 1)               # reads what the last iteration stored


@pytest.mark.parametrize("step", [4, 2, 6])
def test_accesses_in_loops_are_ordered_by_tokens(step):
    x = np.zeros(64, np.int32)
    ct.launch(0, (1,), running_count, (x, 8, step))
    ref = np.zeros(64, np.int32)
    for i in range(1, 8):
        ref[i * step:i * step + 4] = ref[(i - 1) * step:(i - 1) * step + 4] + 1
    np.testing.assert_array_equal(x, ref)
    ir = running_count.inspect_tileir(x, 8, step)
    accesses = [ln for ln in ir.splitlines() if "_tko" in ln]
    operands = [ln.split("_tko", 1)[1].split(" : ")[0] for ln in accesses]
    assert len(operands) == 2 and all("token" in ops for ops in operands), accesses


# --- padding --------------------------------------------------------------------------------------
_PAD = {ct.PaddingMode.ZERO: 0.0, ct.PaddingMode.NEG_ZERO: -0.0, ct.PaddingMode.NAN: math.nan,
        ct.PaddingMode.POS_INF: math.inf, ct.PaddingMode.NEG_INF: -math.inf}


def _pad_kernel(mode, steps, index):
    @ct.kernel
    def k(x, z, TILE: ConstInt):
        tv = x.tiled_view(TILE, padding_mode=mode, traversal_steps=steps)
        ct.store(z, 0, tile=tv.load(index))
    return k


@pytest.mark.parametrize("steps,index,start", [(None, 0, 0), (96, 1, 96)],
                         ids=["partition", "strided"])
@pytest.mark.parametrize("mode", list(_PAD), ids=str)
def test_padding_modes(mode, steps, index, start):
    x = np.arange(100, dtype=np.float32) + 1
    z = np.zeros(128, np.float32)
    ct.launch(0, (1,), _pad_kernel(mode, steps, index), (x, z, 128))
    np.testing.assert_array_equal(z[:100 - start], x[start:])
    pad = z[100 - start:]
    if math.isnan(_PAD[mode]):
        assert np.isnan(pad).all()
    else:
        np.testing.assert_array_equal(pad, _PAD[mode])
        assert (np.signbit(pad) == (math.copysign(1, _PAD[mode]) < 0)).all()


def test_a_tile_outside_the_index_space_is_reported_as_for_partitions():
    x, z = np.arange(100, dtype=np.float32), np.zeros(128, np.float32)
    with pytest.raises(Exception, match="tile index .1,. is out of bounds"):
        ct.launch(0, (1,), _pad_kernel(ct.PaddingMode.ZERO, None, 1), (x, z, 128))


# --- stores ---------------------------------------------------------------------------------------
@ct.kernel
def store_broadcast(x, y, SRC_M: ConstInt, SRC_N: ConstInt, DST_M: ConstInt, DST_N: ConstInt):
    t = x.tiled_view((SRC_M, SRC_N)).load((0, 0))
    y.tiled_view((DST_M, DST_N)).store((0, 0), t)


@pytest.mark.parametrize("src,dst", [((1, 16), (8, 16)), ((16, 1), (16, 4)), ((1, 1), (4, 4))])
def test_store_broadcasts_to_the_tile_shape(src, dst):
    x = np.arange(np.prod(src), dtype=np.float32).reshape(src) + 1
    y = np.zeros(dst, np.float32)
    ct.launch(0, (1,), store_broadcast, (x, y, *src, *dst))
    np.testing.assert_array_equal(y, np.broadcast_to(x, dst))


@ct.kernel
def store_cast(x, y, s, TILE: ConstInt):
    tv = y.tiled_view(TILE, traversal_steps=TILE * 2)
    tv.store(0, ct.load(x, (0,), (TILE,)))            # int16 tile into float32: implicit
    tv.store(1, s)                                    # a scalar broadcast
    tv.store(2, 7)


def test_store_casts_implicitly_and_broadcasts_scalars():
    x = np.arange(4, dtype=np.int16) - 2
    y = np.zeros(24, np.float32)
    ct.launch(0, (1,), store_cast, (x, y, 2.5, 4))
    ref = np.zeros(24, np.float32)
    ref[0:4], ref[8:12], ref[16:20] = x, 2.5, 7
    np.testing.assert_array_equal(y, ref)


# --- atomics --------------------------------------------------------------------------------------
def add_method(tv): return tv.atomic_store_add
def max_method(tv): return tv.atomic_store_max
def min_method(tv): return tv.atomic_store_min
def and_method(tv): return tv.atomic_store_and
def or_method(tv): return tv.atomic_store_or
def xor_method(tv): return tv.atomic_store_xor


_METHOD = {"add": add_method, "max": max_method, "min": min_method, "and": and_method,
           "or": or_method, "xor": xor_method}


def _atomic_kernel(op, steps):
    method = _METHOD[op]

    @ct.kernel
    def k(x, y, TM: ConstInt, TN: ConstInt):
        bm, bn = ct.bid(0), ct.bid(1)
        tv_x = x.tiled_view((TM, TN), traversal_steps=steps)
        update = y.tiled_view((TM, TN), traversal_steps=steps).load((bm, bn))
        method(tv_x)((bm, bn), update)             # a helper returns the bound method
    return k


_OPS = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
        "or": np.bitwise_or, "xor": np.bitwise_xor}


@pytest.mark.parametrize("steps", [None, (3, 4)], ids=["partition", "overlapping"])
@pytest.mark.parametrize("op", list(_OPS))
def test_atomic_stores(op, steps):
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, (10, 12)).astype(np.int32)
    y = rng.integers(-50, 50, (10, 12)).astype(np.int32)
    ref = x.copy()
    st = steps or (4, 8)
    for r in range(0, 10, st[0]):
        for c in range(0, 12, st[1]):
            sl = (slice(r, r + 4), slice(c, c + 8))
            ref[sl] = _OPS[op](ref[sl], y[sl])
    ct.launch(0, (ct.cdiv(10, st[0]), ct.cdiv(12, st[1])), _atomic_kernel(op, steps),
              (x, y, 4, 8))
    np.testing.assert_array_equal(x, ref)


@ct.kernel
def atomic_broadcast(x, y):
    tv_x = x.tiled_view((4, 8))
    tv_x.atomic_store_add((0, 0), y.tiled_view((1, 8)).load((0, 0)))
    tv_x.atomic_store_add((1, 1), 1)
    tv_x.atomic_store_add((1, 0), ct.full((), 2, ct.float16))


def test_atomic_store_broadcasts_and_casts():
    x = np.zeros((8, 16), np.float32)
    y = np.arange(8, dtype=np.float32).reshape(1, 8)
    ct.launch(0, (1,), atomic_broadcast, (x, y))
    ref = np.zeros((8, 16), np.float32)
    ref[:4, :8] = y
    ref[4:, 8:] = 1
    ref[4:, :8] = 2
    np.testing.assert_array_equal(x, ref)


# --- the rules and their messages -----------------------------------------------------------------
def _compile_error(body_kernel, args, match):
    with pytest.raises(ct.TileTypeError, match=match):
        ct.launch(0, (1,), body_kernel, args)


@pytest.mark.parametrize("tile_shape", [(1, 2), (1, 2, 4)])
def test_rank_mismatch(tile_shape):
    @ct.kernel
    def k(x):
        x.tiled_view(tile_shape)
    _compile_error(k, (np.zeros(16, np.float32),),
                   f"Expected shape length to be 1, got {len(tile_shape)}")


@pytest.mark.parametrize("shape,tile_shape,steps", [((16,), 4, (2, 2)), ((16, 32), (4, 4), (2,)),
                                                    ((16, 32), (), ())])
def test_traversal_steps_rank_mismatch(shape, tile_shape, steps):
    @ct.kernel
    def k(x):
        x.tiled_view(tile_shape, traversal_steps=steps)
    _compile_error(k, (np.zeros(shape, np.float32),),
                   f"Expected traversal_steps length to be {len(shape)}, got {len(steps)}")


@pytest.mark.parametrize("steps", [-1, 0, (4, 0), (-1, 4)])
def test_traversal_steps_must_be_positive(steps):
    two_d = isinstance(steps, tuple)

    @ct.kernel
    def k(x):
        x.tiled_view((4, 4) if two_d else 4, traversal_steps=steps)
    _compile_error(k, (np.zeros((16, 32) if two_d else 16, np.float32),),
                   "of traversal_steps .* is not positive")


def test_tile_extents_must_be_powers_of_two():
    @ct.kernel
    def k(x):
        x.tiled_view(3)
    _compile_error(k, (np.zeros(16, np.float32),), "power of two")


def test_stored_tile_must_broadcast_to_the_tile_shape():
    @ct.kernel
    def k(x, y, TILE: ConstInt):
        y.tiled_view(TILE).store(0, ct.load(x, 0, (TILE * 2,)))
    _compile_error(k, (np.zeros(16, np.float32), np.zeros(16, np.float32), 4),
                   r"Tile shape \(8,\) is not broadcastable to the tiled view's tile shape \(4,\)")


def test_stored_tile_must_convert_implicitly():
    @ct.kernel
    def k(x, y):
        y.tiled_view(4).store(0, ct.load(x, 0, (4,)))
    _compile_error(k, (np.zeros(4, np.float32), np.zeros(4, np.int32)),
                   "cannot implicitly cast float32 to int32")


@pytest.mark.parametrize("src,dst,ok", [
    ("int8", "int16", True), ("uint8", "uint64", True), ("int16", "int8", False),
    ("uint8", "int16", False), ("int32", "uint32", False), ("int64", "float16", True),
    ("uint32", "bfloat16", True), ("bool_", "uint8", True), ("int8", "bool_", False),
    ("float16", "float32", True), ("float16", "bfloat16", False), ("bfloat16", "float16", False),
    ("bfloat16", "float64", True), ("float32", "float16", False), ("float64", "int64", False),
    ("float8_e4m3fn", "float32", False), ("tfloat32", "float32", False)])
def test_implicit_casts_follow_cutiles_table(src, dst, ok):
    from tilejit.typing.templates.tiled_view import implicit_cast_ok
    assert implicit_cast_ok(getattr(ct, src), getattr(ct, dst)) is ok


@pytest.mark.parametrize("x_dtype,y_dtype,op,match", [
    (np.float32, np.float32, "xor", "Unsupported tiled view dtype"),
    (np.int32, np.int64, "or", "to exactly match the target dtype"),
    (np.int32, np.float32, "add", "cannot implicitly cast"),
    (np.uint32, np.int32, "max", "cannot implicitly cast"),
])
def test_atomic_store_dtype_rules(x_dtype, y_dtype, op, match):
    method = _METHOD[op]

    @ct.kernel
    def k(x, y):
        method(x.tiled_view(4))(0, y.tiled_view(4).load(0))
    _compile_error(k, (np.zeros(4, x_dtype), np.zeros(4, y_dtype)), match)


def test_atomic_update_must_broadcast():
    @ct.kernel
    def k(x, y):
        x.tiled_view(16).atomic_store_add(0, y.tiled_view(8).load(0))
    _compile_error(k, (np.zeros(16, np.float32), np.zeros(8, np.float32)),
                   r"Update shape \(8,\) is not broadcastable")


def test_index_rank_must_match():
    @ct.kernel
    def k(x):
        x.tiled_view((4, 4)).load(0)
    _compile_error(k, (np.zeros((8, 8), np.float32),),
                   "Index size 1 does not match the tiled view rank 2")


def test_paths_with_different_views_are_an_error():
    @ct.kernel
    def k(x, cond: bool, A: ConstInt, B: ConstInt):
        if cond:
            tv = x.tiled_view(A)
        else:
            tv = x.tiled_view(B)
        tv.store(0, ct.full((A,), 1.0, ct.float32))
    with pytest.raises(ct.TileTypeError, match="depends on path taken"):
        ct.launch(0, (1,), k, (np.zeros(128, np.float32), True, 64, 32))


# --- check_bounds=False ---------------------------------------------------------------------------
@ct.kernel
def unchecked(x, y, TILE: ConstInt, STEP: ConstInt):
    tv_x = x.tiled_view(TILE, traversal_steps=STEP)
    tv_y = y.tiled_view(TILE, traversal_steps=STEP)
    tv_y.store(ct.bid(0), tv_x.load(ct.bid(0), check_bounds=False), check_bounds=False)


@pytest.mark.parametrize("step", [4, 8])
def test_check_bounds_false(step):
    x = np.arange(32, dtype=np.float32)
    y = np.zeros_like(x)
    ct.launch(0, (32 // step,), unchecked, (x, y, 4, step))
    np.testing.assert_array_equal(y, windows_ref(x, (4,), (step,)))
    ir = unchecked.inspect_tileir(x, y, 4, step)
    if step == 4:                       # a partition view: tileiras drops the masking
        assert ir.count("inbounds = [true]") == 2
    else:                               # element pointers without a mask
        access = [ln for ln in ir.splitlines() if "load_ptr_tko" in ln or "store_ptr_tko" in ln]
        assert len(access) == 2 and not any("xi1>" in ln for ln in access)


def test_check_bounds_false_crossing_the_edge_is_caught_by_the_simulator():
    x = np.arange(30, dtype=np.float32)
    with pytest.raises(Exception, match="check_bounds=False"):
        ct.launch(0, (8,), unchecked, (x, np.zeros_like(x), 4, 4))


# --- helpers, static branches, which arrays are written -------------------------------------------
@ct.kernel
def through_helpers(x, y, z, TILE: ConstInt, USE_X: ct.Constant[bool]):
    def get_view(arr, tile_size):
        return arr.tiled_view(tile_size)

    def copy_tile(src, dst, i):
        dst.store(i, src.load(i))

    tv = get_view(x, TILE) if USE_X else get_view(y, TILE)
    tv_z = get_view(z, TILE)
    for i in range(tv.num_tiles(0)):
        copy_tile(tv, tv_z, i)


@pytest.mark.parametrize("use_x", [True, False])
def test_views_through_helpers_and_static_branches(use_x):
    x, y = np.arange(128, dtype=np.float32), -np.arange(128, dtype=np.float32)
    z = np.zeros(128, np.float32)
    ct.launch(0, (1,), through_helpers, (x, y, z, 32, use_x))
    np.testing.assert_array_equal(z, x if use_x else y)


@ct.kernel
def reads_through_views(a, b, c, TILE: ConstInt):
    t = a.tiled_view(TILE).load(0) + b.tiled_view(TILE, traversal_steps=1).load(1)
    tv_c = c.tiled_view(TILE)
    tv_c.store(0, t)


def test_written_parameters_see_tiled_views():
    assert reads_through_views.written_parameters == ("c",)
    a, b, c = np.arange(8, dtype=np.float32), np.arange(8, dtype=np.float32), np.zeros(8,
                                                                                       np.float32)
    ct.launch(0, (1,), reads_through_views, (a, b, c, 4))
    np.testing.assert_array_equal(c[:4], a[:4] + b[1:5])


# --- @tile.entry kernels -------------------------------------------------------------------------
@tile.entry
def entry_windows(out, x, STEP: tile.Constant[int]):
    tv = x.tiled_view((8,), traversal_steps=STEP, padding_mode=tile.PaddingMode.ZERO)
    acc = tile.zeros((8,), tile.float32)
    for i in range(tv.num_tiles(0)):
        acc += tv.load(i)
    out.tiled_view(8).atomic_store_add(0, acc)


def test_in_tile_entry_kernels():
    x = np.arange(20, dtype=np.float32)
    out = api.zeros((8,)).sync()
    entry_windows(tile.atomic(out), x, 6).grid((1, 1, 1)).sync()
    ref = np.zeros(8, np.float32)
    for s in range(0, 20, 6):
        w = x[s:s + 8]
        ref[:len(w)] += w
    np.testing.assert_array_equal(out.to_numpy(), ref)


def test_read_only_tensors_refuse_stores():
    @tile.entry
    def k(z, x):
        x.tiled_view(4).store(0, z.load())
        z.store(z.load())
    with pytest.raises(tile.TypingError, match="read-only"):
        k(api.zeros((4,)).sync().partition((4,)), api.zeros((4,)).sync()).sync()


# --- tileiras ------------------------------------------------------------------------------------
@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_tileiras_compiles_every_kind_of_access():
    @ct.kernel
    def k(x, y, n, TILE: ConstInt, STEP: ConstInt):
        tv = x.tiled_view((TILE, TILE), padding_mode=ct.PaddingMode.NEG_INF)
        sv = x.tiled_view((TILE, TILE), traversal_steps=(STEP, 1))
        tv_y = y.tiled_view((TILE, TILE), traversal_steps=(STEP, 1))
        b = (ct.bid(0), ct.bid(1))
        tv_y.store(b, tv.load(b, latency=2) + sv.load(b, allow_tma=False))
        tv_y.atomic_store_add(b, 1.0)
        y.tiled_view((TILE, TILE)).store(b, tv.load(b, check_bounds=False), check_bounds=False)
        tv_n = n.tiled_view(())
        tv_n.store(0, sv.num_tiles(0))
        tv_n.atomic_store_max(1, tv.num_tiles(1))

    args = (np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32),
            np.zeros(2, np.int32), 16, 8)
    ir = k.inspect_tileir(*args)
    assert "load_ptr_tko" in ir and "load_view_tko" in ir and "atomic_rmw_tko" in ir
    assert k.compile(*args, arch="sm_90")[:4] == b"\x7fELF"
