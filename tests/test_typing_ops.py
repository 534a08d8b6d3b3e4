"""Result types of every kernel-language function, method, attribute and operator (API.md §2).

Pure expressions are typed as small ``@tile.function``-style helpers with ``type_function`` and
explicit argument types; side-effecting ops (stores, atomics, printf) are typed inside kernels.
"""
import pytest
from numba.core import types

import tilejit as tile
from tilejit import dtypes as dt
from tilejit import language
from tilejit.typing import (DTypeType, PartitionType, TensorPartitionViewType, TensorType,
                            TileType, type_function, type_kernel)


def T(d, *shape):
    return TileType(getattr(dt, d), shape)


F32 = lambda *s: T("float32", *s)      # noqa: E731
F16 = lambda *s: T("float16", *s)      # noqa: E731
I32 = lambda *s: T("int32", *s)        # noqa: E731
B = lambda *s: T("bool_", *s)          # noqa: E731
TEN2 = TensorType(dt.float32, 2)
TEN1 = TensorType(dt.float32, 1)
TENW = TensorType(dt.int32, 1, None, True)
PART2 = PartitionType(dt.float32, 2, (32, 64))


def rt(fn, *argtys):
    return type_function(fn, argtys).return_type


# --------------------------------------------------------------------------------------------------
# operators
def f_add(a, b): return a + b
def f_sub(a, b): return a - b
def f_mul(a, b): return a * b
def f_div(a, b): return a / b
def f_floordiv(a, b): return a // b
def f_mod(a, b): return a % b
def f_pow(a, b): return a ** b
def f_and(a, b): return a & b
def f_or(a, b): return a | b
def f_xor(a, b): return a ^ b
def f_lshift(a, b): return a << b
def f_rshift(a, b): return a >> b
def f_lt(a, b): return a < b
def f_le(a, b): return a <= b
def f_gt(a, b): return a > b
def f_ge(a, b): return a >= b
def f_eq(a, b): return a == b
def f_ne(a, b): return a != b
def f_neg(a): return -a
def f_pos(a): return +a
def f_inv(a): return ~a
def f_abs(a): return abs(a)
def f_tabs(a): return tile.abs(a)
def f_matmul(a, b): return a @ b


def f_iadd(a, b):
    a += b
    return a


BINOPS = [f_add, f_sub, f_mul, f_floordiv, f_mod]


@pytest.mark.parametrize("fn", BINOPS + [f_div])
def test_float_binops_broadcast(fn):
    assert rt(fn, F32(32, 1), F32(1, 64)) == F32(32, 64)
    assert rt(fn, F32(64), F32(32, 64)) == F32(32, 64)


@pytest.mark.parametrize("fn", [f_lt, f_le, f_gt, f_ge, f_eq, f_ne])
def test_comparisons_give_bool(fn):
    assert rt(fn, F32(8, 1), F16(8)) == B(8, 8)
    assert rt(fn, I32(4), types.int64) == B(4)
    assert rt(fn, types.int32, types.int64) == types.boolean


@pytest.mark.parametrize("fn", [f_and, f_or, f_xor])
def test_bitwise(fn):
    assert rt(fn, I32(16), I32(16)) == I32(16)
    assert rt(fn, B(16), B(1)) == B(16)
    assert rt(fn, T("uint8", 4), types.int64) == T("uint8", 4)


@pytest.mark.parametrize("fn", [f_lshift, f_rshift])
def test_shifts(fn):
    assert rt(fn, I32(8), types.int32) == I32(8)


def test_unary():
    assert rt(f_neg, F16(4)) == F16(4)
    assert rt(f_pos, I32(4)) == I32(4)
    assert rt(f_inv, I32(4)) == I32(4)
    assert rt(f_inv, B(4)) == B(4)
    assert rt(f_abs, F32(4)) == F32(4)
    assert rt(f_tabs, I32(2, 2)) == I32(2, 2)
    assert rt(f_neg, types.int32) == types.int32


def test_true_division_is_float():
    assert rt(f_div, I32(8), I32(8)) == F32(8)
    assert rt(f_div, F16(8), types.int64) == F16(8)
    assert rt(f_div, types.int32, types.int32) == types.float32


def test_pow():
    assert rt(f_pow, F32(8), types.float64) == F32(8)
    assert rt(f_pow, I32(8), types.literal(3)) == I32(8)


def test_inplace_keeps_left_type():
    assert rt(f_iadd, F16(8), F32(8)) == F16(8)
    assert rt(f_iadd, F32(8, 8), F32(8)) == F32(8, 8)


def test_matmul_operator():
    assert rt(f_matmul, F16(64, 32), F16(32, 16)) == F16(64, 16)
    assert rt(f_matmul, T("tfloat32", 16, 16), T("tfloat32", 16, 16)) == F32(16, 16)
    assert rt(f_matmul, T("int8", 16, 32), T("int8", 32, 16)) == I32(16, 16)
    assert rt(f_matmul, F16(2, 64, 32), F16(2, 32, 16)) == F16(2, 64, 16)


# --------------------------------------------------------------------------------------------------
# promotion (docs: tilejit/typing/promotion.py)
@pytest.mark.parametrize("a,b,expected", [
    ("int8", "uint8", "int16"), ("int32", "int64", "int64"), ("int16", "float16", "float16"),
    ("int64", "float32", "float32"), ("float16", "bfloat16", "float32"),
    ("float16", "float32", "float32"), ("bool_", "int8", "int8"), ("bool_", "float16", "float16"),
    ("uint16", "int32", "int32"), ("float32", "float64", "float64"),
])
def test_strong_promotion(a, b, expected):
    assert rt(f_add, T(a, 4), T(b, 4)) == T(expected, 4)
    assert rt(f_add, T(b, 4), T(a, 4)) == T(expected, 4)


@pytest.mark.parametrize("tile_dtype,scalar,expected", [
    ("float16", types.float64, "float16"),      # t * 2.0 keeps float16
    ("float16", types.float32, "float16"),      # a float32 argument is weak too
    ("int8", types.literal(3), "int8"),
    ("int8", types.int64, "int8"),
    ("int32", types.float64, "float32"),        # int tile * 0.5 -> float32, not float64
    ("bool_", types.literal(1), "int32"),
    ("bfloat16", types.int64, "bfloat16"),
    ("uint8", types.literal(200), "uint8"),
])
def test_weak_scalars(tile_dtype, scalar, expected):
    assert rt(f_mul, T(tile_dtype, 8), scalar) == T(expected, 8)
    assert rt(f_mul, scalar, T(tile_dtype, 8)) == T(expected, 8)


@pytest.mark.parametrize("a,b,expected", [
    (types.int32, types.literal(64), types.int32),       # bid(0) * 64 stays int32
    (types.float32, types.float64, types.float32),       # alpha * 2.0 stays float32
    (types.int32, types.int64, types.int64),
    (types.int64, types.float64, types.float32),          # weak float constant -> float32
    (types.float64, types.float64, types.float64),
    (types.int32, types.float32, types.float32),
])
def test_scalar_promotion(a, b, expected):
    assert rt(f_mul, a, b) == expected


def test_literal_folding():
    assert rt(f_mul, types.literal(32), types.literal(4)) == types.literal(128)
    assert rt(f_floordiv, types.literal(-7), types.literal(2)) == types.literal(-4)
    assert rt(f_mod, types.literal(-7), types.literal(2)) == types.literal(1)
    assert rt(f_lt, types.literal(3), types.literal(4)) == types.literal(True)
    assert rt(f_neg, types.literal(5)) == types.literal(-5)


def test_rank0_tiles_are_strong():
    assert rt(f_add, F16(), F32(4)) == F32(4)
    assert rt(f_add, F32(), types.float64) == F32()


# --------------------------------------------------------------------------------------------------
# creation, elementwise functions
def f_zeros(): return tile.zeros((16, 32), tile.float16)
def f_zeros_default(): return tile.zeros(64)
def f_ones(): return tile.ones((8,), tile.int32)
def f_full(v): return tile.full((4, 4), v)
def f_full_dtype(v): return tile.full((4, 4), v, tile.bfloat16)
def f_arange(): return tile.arange(128)
def f_arange_f(): return tile.arange(16, tile.float32)
def f_where(c, a, b): return tile.where(c, a, b)
def f_minimum(a, b): return tile.minimum(a, b)
def f_maximum(a, b): return tile.maximum(a, b)
def f_isnan(a): return tile.isnan(a)
def f_atan2(a, b): return tile.atan2(a, b)
def f_fma(a, b, c): return tile.fma(a, b, c)


def test_creation():
    assert rt(f_zeros) == F16(16, 32)
    assert rt(f_zeros_default) == F32(64)
    assert rt(f_ones) == I32(8)
    assert rt(f_full, types.float64) == F32(4, 4)
    assert rt(f_full, types.literal(3)) == I32(4, 4)
    assert rt(f_full, types.literal(True)) == B(4, 4)
    assert rt(f_full_dtype, types.float64) == T("bfloat16", 4, 4)
    assert rt(f_arange) == I32(128)
    assert rt(f_arange_f) == F32(16)


@pytest.mark.parametrize("name", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                                  "tan", "sinh", "cosh", "tanh", "floor", "ceil"])
def test_math_functions(name):
    fn = getattr(tile, name)

    def f(a):
        return fn(a)
    assert rt(f, F16(8, 8)) == F16(8, 8)
    assert rt(f, T("bfloat16", 8)) == T("bfloat16", 8)
    assert rt(f, I32(8)) == F32(8)
    assert rt(f, types.float32) == types.float32


def test_elementwise_functions():
    assert rt(f_where, B(8, 1), F32(8), types.float64) == F32(8, 8)
    assert rt(f_where, types.boolean, types.float64, types.float64) == types.float32
    assert rt(f_where, B(4), types.literal(1), types.literal(0)) == I32(4)
    assert rt(f_minimum, F32(4), F16(4)) == F32(4)
    assert rt(f_maximum, I32(4, 1), types.int64) == I32(4, 1)
    assert rt(f_isnan, F32(4)) == B(4)
    assert rt(f_atan2, F32(4), I32(4)) == F32(4)
    assert rt(f_fma, F16(4), F16(4), types.float64) == F16(4)


# --------------------------------------------------------------------------------------------------
# reductions and scans
def f_sum(t): return tile.sum(t)
def f_sum1(t): return tile.sum(t, axis=1)
def f_sum_keep(t): return tile.sum(t, axis=-1, keepdims=True)
def f_sum_axes(t): return tile.sum(t, axis=(0, 2))
def f_max0(t): return tile.max(t, 0)
def f_min1(t): return tile.min(t, 1)
def f_prod(t): return tile.prod(t, axis=0)
def f_argmax(t): return tile.argmax(t, axis=1)
def f_argmin_all(t): return tile.argmin(t)
def f_method_sum(t): return t.sum(axis=0)
def f_method_max(t): return t.max()
def f_cumsum(t): return tile.cumsum(t, axis=1)
def f_cumprod(t): return tile.cumprod(t, axis=0, reverse=True)


@tile.function
def _add(a, b):
    return a + b


def f_reduce(t): return tile.reduce(t, 1, _add, 0)
def f_scan(t): return tile.scan(t, 0, _add, 0, reverse=True)


def test_reductions():
    assert rt(f_sum, F32(4, 8)) == F32()
    assert rt(f_sum1, F32(4, 8)) == F32(4)
    assert rt(f_sum_keep, F16(4, 8)) == F16(4, 1)
    assert rt(f_sum_axes, F32(2, 4, 8)) == F32(4)
    assert rt(f_sum1, T("int8", 4, 8)) == I32(4)
    assert rt(f_sum, B(8)) == I32()
    assert rt(f_max0, F16(4, 8)) == F16(8)
    assert rt(f_min1, I32(4, 8)) == I32(4)
    assert rt(f_prod, T("uint8", 4, 8)) == T("uint32", 8)
    assert rt(f_argmax, F32(4, 8)) == I32(4)
    assert rt(f_argmin_all, F32(4, 8)) == I32()
    assert rt(f_method_sum, F32(4, 8)) == F32(8)
    assert rt(f_method_max, F32(4, 8)) == F32()
    assert rt(f_cumsum, F32(4, 8)) == F32(4, 8)
    assert rt(f_cumprod, T("int16", 4, 8)) == I32(4, 8)


def test_reduce_and_scan_with_a_combiner():
    typed = type_function(f_reduce, (F32(4, 8),))
    assert typed.return_type == F32(4)
    ((fn, argtys), sub), = typed.subfunctions.items()
    assert fn is _add and argtys == (F32(), F32()) and sub.return_type == F32()
    assert rt(f_scan, I32(16)) == I32(16)


# --------------------------------------------------------------------------------------------------
# matmul, shape, dtype
def f_mma(a, b, c): return tile.mma(a, b, c)
def f_matmul_fn(a, b): return tile.matmul(a, b)
def f_reshape(t): return t.reshape((8, -1))
def f_reshape_fn(t): return tile.reshape(t, (64,))
def f_permute(t): return tile.permute(t, (2, 0, 1))
def f_permute_m(t): return t.permute((1, 0, 2))
def f_T(t): return t.T
def f_transpose(t): return tile.transpose(t)
def f_transpose_axes(t): return tile.transpose(t, (0, 2, 1))
def f_transpose_m(t): return t.transpose(1, 0)
def f_broadcast(t): return tile.broadcast_to(t, (4, 16))
def f_expand(t): return tile.expand_dims(t, 0)
def f_none_index(t): return t[:, None]
def f_none_index2(t): return t[None, :, None]
def f_ellipsis(t): return t[..., None]
def f_cat(a, b): return tile.cat(a, b, 1)
def f_cat_tuple(a, b): return tile.cat((a, b), 0)
def f_extract(t): return tile.extract(t, (1, 0), (8, 16))
def f_astype(t): return t.astype(tile.bfloat16)
def f_astype_fn(t): return tile.astype(t, tile.int8)
def f_bitcast(t): return tile.bitcast(t, tile.int32)
def f_attrs(t): return t.shape, t.ndim, t.dtype, t.size


def test_mma():
    assert rt(f_mma, F16(64, 32), F16(32, 16), F32(64, 16)) == F32(64, 16)
    assert rt(f_mma, F16(64, 32), F16(32, 16), F16(64, 16)) == F16(64, 16)
    assert rt(f_mma, T("bfloat16", 16, 16), T("bfloat16", 16, 16), F32(16, 16)) == F32(16, 16)
    assert rt(f_mma, T("tfloat32", 16, 8), T("tfloat32", 8, 16), F32(16, 16)) == F32(16, 16)
    assert rt(f_mma, T("float8_e4m3fn", 16, 32), T("float8_e4m3fn", 32, 16),
              F32(16, 16)) == F32(16, 16)
    assert rt(f_mma, T("int8", 16, 32), T("int8", 32, 16), I32(16, 16)) == I32(16, 16)
    assert rt(f_mma, F16(4, 16, 32), F16(4, 32, 16), F32(4, 16, 16)) == F32(4, 16, 16)
    assert rt(f_matmul_fn, T("bfloat16", 16, 16), T("bfloat16", 16, 16)) == \
        T("bfloat16", 16, 16)


def test_shape_ops():
    assert rt(f_reshape, F32(16, 32)) == F32(8, 64)
    assert rt(f_reshape_fn, F32(8, 8)) == F32(64)
    assert rt(f_permute, F32(2, 4, 8)) == F32(8, 2, 4)
    assert rt(f_permute_m, F32(2, 4, 8)) == F32(4, 2, 8)
    assert rt(f_T, F32(2, 4)) == F32(4, 2)
    assert rt(f_transpose, F32(2, 4, 8)) == F32(8, 4, 2)
    assert rt(f_transpose_axes, F32(2, 4, 8)) == F32(2, 8, 4)
    assert rt(f_transpose_m, F32(2, 4)) == F32(4, 2)
    assert rt(f_broadcast, F32(16)) == F32(4, 16)
    assert rt(f_broadcast, types.float64) == T("float64", 4, 16)
    assert rt(f_expand, F32(16)) == F32(1, 16)
    assert rt(f_none_index, F32(16)) == F32(16, 1)
    assert rt(f_none_index2, F32(16)) == F32(1, 16, 1)
    assert rt(f_ellipsis, F32(4, 8)) == F32(4, 8, 1)
    assert rt(f_cat, F32(4, 8), F32(4, 8)) == F32(4, 16)
    assert rt(f_cat_tuple, F32(4, 8), F32(4, 8)) == F32(8, 8)
    assert rt(f_extract, F32(16, 32)) == F32(8, 16)


def test_dtype_ops_and_attributes():
    assert rt(f_astype, F32(4)) == T("bfloat16", 4)
    assert rt(f_astype_fn, types.float32) == types.int8
    assert rt(f_bitcast, F32(4)) == I32(4)
    shape, ndim, dtype, size = rt(f_attrs, F16(4, 8)).types
    assert shape == types.Tuple([types.literal(4), types.literal(8)])
    assert ndim == types.literal(2) and size == types.literal(32)
    assert dtype == DTypeType(dt.float16)


# --------------------------------------------------------------------------------------------------
# grid, tensors, partitions, views
def f_grid(): return tile.bid(0), tile.num_blocks(2), tile.cdiv(100, 32)
def f_cdiv(n): return tile.cdiv(n, 64)
def f_cdiv_tile(t): return tile.cdiv(t, 4)
def f_tensor_attrs(x): return x.shape, x.ndim, x.dtype
def f_tensor_load(x, i): return x.load((i, 0), (32, 16), padding=tile.PaddingMode.NAN,
                                       latency=3, allow_tma=False)
def f_load_fn(x): return tile.load(x, 3, (64,))
def f_part_attrs(z): return z.shape, z.block, z.tensor_shape, z.dtype, z.ndim
def f_part_load(z): return z.load()
def f_ltl(x, z): return tile.load_tile_like(x, z)
def f_view(x): return x.partition((16, 32))
def f_view_load(x, i): return x.partition((16, 32), padding=tile.PaddingMode.ZERO).load((i, 1))
def f_view_num(x): return x.partition((16, 32)).num_tiles(1)
def f_gather(x): return tile.gather(x, (tile.arange(8)[:, None], tile.arange(16)[None, :]))
def f_gather1(x): return tile.gather(x, tile.arange(32), mask=tile.arange(32) < 7, other=1.0)
def f_assume(n): return tile.assume_divisible_by(n, 16)


def test_grid():
    a, b, c = rt(f_grid).types
    assert a == types.int32 and b == types.int32 and c == types.literal(4)
    assert rt(f_cdiv, types.int64) == types.int64
    assert rt(f_cdiv, types.int32) == types.int32
    assert rt(f_cdiv_tile, I32(8)) == I32(8)


def test_tensor_and_partition_attributes():
    shape, ndim, dtype = rt(f_tensor_attrs, TEN2).types
    assert shape == types.UniTuple(types.int64, 2) and ndim == types.literal(2)
    assert dtype == DTypeType(dt.float32)
    ten32 = TensorType(dt.float32, 2, (32, 16, (16, 16), (16, 16), (False, True)))
    assert rt(f_tensor_attrs, ten32).types[0] == types.UniTuple(types.int32, 2)
    shape, block, tshape, dtype, ndim = rt(f_part_attrs, PART2).types
    assert shape == types.Tuple([types.literal(32), types.literal(64)])
    assert block == types.UniTuple(types.int32, 2)
    assert tshape == types.UniTuple(types.int64, 2)
    assert rt(f_part_load, PART2) == F32(32, 64)


def test_loads_views_gather():
    assert rt(f_tensor_load, TEN2, types.int32) == F32(32, 16)
    assert rt(f_load_fn, TEN1) == F32(64)
    assert rt(f_ltl, TEN2, PART2) == F32(32, 64)
    v = rt(f_view, TEN2)
    assert isinstance(v, TensorPartitionViewType) and v.tile_shape == (16, 32)
    assert rt(f_view_load, TEN2, types.int64) == F32(16, 32)
    assert rt(f_view_num, TEN2) == types.int32
    assert rt(f_gather, TEN2) == F32(8, 16)
    assert rt(f_gather1, TEN1) == F32(32)
    assert rt(f_assume, types.int32) == types.int32


def k_side_effects(z, x, w, n, BM: tile.Constant[int]):
    t = tile.load_tile_like(x, z)
    z.store(t)
    tile.store(z, (0,), t)
    wv = w.partition((BM,))
    tile.store(wv, (tile.bid(0),), tile.arange(BM))
    idx = tile.arange(BM)
    old = tile.atomic_add(w, idx, 1, memory_order=tile.MemoryOrder.RELAXED,
                          memory_scope=tile.MemoryScope.BLOCK)
    old = tile.atomic_max(w, idx, old)
    old = tile.atomic_min(w, idx, old, mask=idx < n)
    old = tile.atomic_xchg(w, idx, old)
    old = tile.atomic_cas(w, idx, old, 5)
    tile.scatter(z, idx, t, mask=idx < n)
    tile.scatter(w, idx, old)
    tile.printf("%d %f\n", n, t)
    print(t, n)
    tile.assert_(n > 0, "n must be positive")
    tile.assert_(t >= 0.0)
    tile.static_assert(BM == 64)


def test_side_effect_ops_in_a_kernel():
    tk = type_kernel(k_side_effects, [("partition", "float32", 1, None, (64,)),
                                      ("tensor", "float32", 1, None, False),
                                      ("tensor", "int32", 1, None, True), ("scalar", "int64", True)],
                     {"BM": 64})
    ops = {tk.call_info(s.value).op for b in tk.func_ir.blocks.values() for s in b.body
           if getattr(s, "value", None) is not None and getattr(s.value, "op", None) == "call"}
    assert {"Partition.store", "tile.store", "tile.atomic_add", "tile.atomic_max",
            "tile.atomic_min", "tile.atomic_xchg", "tile.atomic_cas", "tile.scatter",
            "tile.printf", "tile.assert_", "tile.static_assert", "Tensor.partition"} <= ops


def test_enums_are_constants():
    def f():
        return tile.PaddingMode.NEG_INF, tile.RoundingMode.RZ, tile.MemoryOrder.ACQUIRE, \
            tile.MemoryScope.SYS
    tys = rt(f).types
    assert [t.member for t in tys] == [tile.PaddingMode.NEG_INF, tile.RoundingMode.RZ,
                                       tile.MemoryOrder.ACQUIRE, tile.MemoryScope.SYS]


def test_dtype_comparison_folds():
    def f(t):
        return t.dtype == tile.float16, t.dtype != tile.float16
    a, b = rt(f, F16(4)).types
    assert a == types.literal(True) and b == types.literal(False)


# --------------------------------------------------------------------------------------------------
def test_every_language_function_is_typed():
    """Every public stub has a registered typing rule."""
    from tilejit.typing.context import get_context
    ctx = get_context()
    missing = [n for n in language.__all__
               if language.is_stub(getattr(language, n)) and
               ctx._lookup_global(getattr(language, n)) is None]
    assert not missing
    assert ctx._lookup_global(language.cdiv) is not None
    assert ctx._lookup_global(language.static_assert) is not None


def test_api_names_exist():
    names = """bid num_blocks cdiv load_tile_like gather scatter atomic_add atomic_max atomic_min
    atomic_xchg atomic_cas atomic_and atomic_or atomic_xor zeros ones full arange where minimum maximum exp exp2 log log2 sqrt
    rsqrt sin cos tan sinh cosh tanh floor ceil isnan atan2 fma sum max min prod argmax argmin
    reduce cumsum cumprod scan mma reshape permute transpose broadcast_to expand_dims cat extract
    astype bitcast printf assert_ assume_divisible_by static_assert PaddingMode RoundingMode
    MemoryOrder MemoryScope Constant function store load""".split()
    for n in names:
        assert hasattr(tile, n), n
    for m in ("ZERO", "NEG_ZERO", "NAN", "POS_INF", "NEG_INF"):
        assert hasattr(tile.PaddingMode, m)

