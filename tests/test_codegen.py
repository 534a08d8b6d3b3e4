"""Front-end knowledge turned into faster Tile IR: each optimization is pinned in the IR text and
its results are checked against NumPy (simulator here; tests/gpu/test_codegen_gpu.py reruns the
result checks on the GPU)."""
import math
import re

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from sample_arrays import rand

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _for_count(ir: str) -> int:
    return len(re.findall(r"= for %", ir))


def _body_of_fors(ir: str):
    """The text of each top-level ``for`` body (from ``for`` to its closing brace)."""
    bodies, lines = [], ir.splitlines()
    for i, ln in enumerate(lines):
        if re.search(r"= for %", ln):
            indent = len(ln) - len(ln.lstrip())
            body = []
            for ln2 in lines[i + 1:]:
                if ln2.strip() == "}" and len(ln2) - len(ln2.lstrip()) == indent:
                    break
                body.append(ln2)
            bodies.append("\n".join(body))
    return bodies


# --------------------------------------------------------------------------------------------------
# Loop splitting on conditions against a loop-invariant bound
@tile.entry
def masked_tail(z, x, m):
    acc = tile.zeros((16,), tile.float32)
    for j in range(0, x.shape[0] // 16):
        t = x.load((j,), (16,))
        if j >= m:
            t = t * 2.0
        acc += t
    z.store(acc)


@tile.entry
def masked_head(z, x, m):
    acc = tile.zeros((16,), tile.float32)
    for j in range(1, x.shape[0] // 16):
        t = x.load((j,), (16,))
        if m > j:               # bound on the left: j < m
            t = t - 1.0
        else:
            t = t + 3.0
        acc += t
    z.store(acc)


@tile.entry
def split_with_stores(z, w, x, m):
    """The branch stores (memory tokens flow through both loops) and is tested with <=."""
    for j in range(x.shape[0] // 16):
        t = x.load((j,), (16,))
        if j <= m:
            tile.store(w.partition((16,)), (j,), t + 1.0)
        else:
            tile.store(w.partition((16,)), (j,), t * 0.0)
    z.store(tile.zeros((16,), tile.float32))


def _ref_tail(x, m, f_true, f_false, start=0, cond=lambda j, m: j >= m):
    acc = np.zeros(16, np.float32)
    for j in range(start, x.size // 16):
        t = x[j * 16:(j + 1) * 16]
        acc += f_true(t) if cond(j, m) else f_false(t)
    return acc


@pytest.mark.parametrize("m", [-3, 0, 3, 7, 8, 100])
def test_split_loop_results(m):
    xn = rand(128)
    x = api.from_numpy(xn).sync()
    z = api.zeros((16,)).sync()
    masked_tail(z.partition((16,)), x, m).sync()
    np.testing.assert_allclose(z.to_host().sync(), _ref_tail(xn, m, lambda t: t * 2, lambda t: t),
                               rtol=1e-6)
    masked_head(z.partition((16,)), x, m).sync()
    ref = _ref_tail(xn, m, lambda t: t - 1, lambda t: t + 3, start=1, cond=lambda j, m: j < m)
    np.testing.assert_allclose(z.to_host().sync(), ref, rtol=1e-6)


@pytest.mark.parametrize("m", [-1, 2, 7])
def test_split_loop_with_stores(m):
    xn = rand(128)
    x = api.from_numpy(xn).sync()
    z, w = api.zeros((16,)).sync(), api.zeros((128,)).sync()
    split_with_stores(z.partition((16,)), tile.atomic(w), x, m).sync()
    ref = np.concatenate([xn[j * 16:(j + 1) * 16] + 1 if j <= m else np.zeros(16, np.float32)
                          for j in range(8)])
    np.testing.assert_allclose(w.to_host().sync(), ref, rtol=1e-6)


def test_split_loop_ir_has_two_branch_free_loops():
    x = api.from_numpy(rand(128)).sync()
    z = api.zeros((16,)).sync()
    for kern in (masked_tail, masked_head):
        ir = kern.inspect_tileir(z.partition((16,)), x, 3)
        assert _for_count(ir) == 2, ir
        assert all(" if " not in b and "= if" not in b for b in _body_of_fors(ir)), ir
    ir = split_with_stores.inspect_tileir(z.partition((16,)), tile.atomic(api.zeros((128,))
                                                                            .sync()), x, 3)
    assert _for_count(ir) == 2 and "= if" not in ir


@tile.entry
def not_split(z, x, m):
    acc = tile.zeros((16,), tile.float32)
    for j in range(x.shape[0] // 16):
        t = x.load((j,), (16,))
        if j == m:              # equality: no split (one iteration)
            t = t * 2.0
        acc += t
        m = m + 1 - 1           # a bound defined in the loop is not invariant
    z.store(acc)


def test_no_split_for_equality_or_varying_bounds():
    x = api.from_numpy(rand(128)).sync()
    z = api.zeros((16,)).sync()
    ir = not_split.inspect_tileir(z.partition((16,)), x, 3)
    assert _for_count(ir) == 1 and "= if" in ir


# --------------------------------------------------------------------------------------------------
# No memory tokens through store-free control flow
@tile.entry
def reduce_rows(z, x, BK: tile.Constant[int]):
    acc = tile.zeros(z.shape, tile.float32)
    for k in range(x.shape[1] // BK):
        t = x.load((z.block[0], k), (z.shape[0], BK))
        if k > 0:
            t = t * 1.0
        acc += tile.sum(t, axis=1)
    z.store(acc)


def test_store_free_loop_carries_no_tokens():
    xn = rand((64, 128))
    x = api.from_numpy(xn).sync()
    z = api.zeros((64,)).sync()
    ir = reduce_rows.inspect_tileir(z.partition((16,)), x, 32)
    loop_lines = [ln for ln in ir.splitlines() if "= for %" in ln]
    assert loop_lines and all("token" not in ln for ln in loop_lines), loop_lines
    reduce_rows(z.partition((16,)), x, 32).sync()
    np.testing.assert_allclose(z.to_host().sync(), xn.sum(axis=1), rtol=1e-5)


# --------------------------------------------------------------------------------------------------
# Block-index folding
@tile.entry
def row_copy(z, x):
    z.store(x.load(z.block, z.shape))


def test_block_index_of_a_unit_grid_axis_is_constant():
    xn = rand((64, 128))
    x = api.from_numpy(xn).sync()
    z = api.zeros((64, 128)).sync()
    ir1 = row_copy.inspect_tileir(z.partition((16, 128)), x)      # grid (4, 1, 1)
    ir2 = row_copy.inspect_tileir(z.partition((16, 64)), x)       # grid (4, 2, 1)
    load1 = [ln for ln in ir1.splitlines() if "load_view_tko" in ln][0]
    load2 = [ln for ln in ir2.splitlines() if "load_view_tko" in ln][0]
    assert "%cst_0" in load1.split("[")[1] and "%cst_0" not in load2.split("[")[1]
    for shape in ((16, 128), (16, 64)):
        z = api.zeros((64, 128)).sync()
        row_copy(z.partition(shape), x).sync()
        np.testing.assert_array_equal(z.to_host().sync(), xn)


@tile.entry
def softmax_block(z, x):
    t = x.load(z.block, z.shape).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store((e / tile.sum(e, axis=1, keepdims=True)).astype(z.dtype))


@tile.entry
def softmax_row0(z, x):
    t = x.load((z.block[0], 0), z.shape).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    z.store((e / tile.sum(e, axis=1, keepdims=True)).astype(z.dtype))


def test_idiomatic_softmax_lowers_like_the_explicit_form():
    x = api.from_numpy(rand((32, 256))).sync()
    z = api.zeros((32, 256)).sync()
    a = softmax_block.inspect_tileir(z.partition((1, 256)), x)
    b = softmax_row0.inspect_tileir(z.partition((1, 256)), x)

    def ops(text):  # op names in order, constants aside (the forms materialize 0 differently)
        return [m.group(1) for m in re.finditer(r"= (\w+) ", text) if m.group(1) != "constant"]

    assert ops(a) == ops(b)
    load = [ln for ln in a.splitlines() if "load_view_tko" in ln][0]
    assert re.search(r"\[%blockId_x, %cst_0_i32\w*\]", load), load
    assert "padding_value" not in a


# --------------------------------------------------------------------------------------------------
# Constant folding of static arithmetic
@tile.entry
def scaled(z, x):
    D = z.shape[0]
    t = tile.load_tile_like(x, z)
    z.store(t * (1.0 / D ** 0.5) + math.sqrt(D) + math.log2(D) * 0.0)


def test_static_arithmetic_folds_to_constants():
    xn = rand(64)
    x = api.from_numpy(xn).sync()
    z = api.zeros((64,)).sync()
    ir = scaled.inspect_tileir(z.partition((64,)), x)
    assert not re.search(r"\b(pow|divf|sqrt|log2)\b", ir), ir
    scaled(z.partition((64,)), x).sync()
    np.testing.assert_allclose(z.to_host().sync(), xn * (1 / 8) + 8, rtol=1e-6)


# --------------------------------------------------------------------------------------------------
# Padding dropped when every tile is whole
@tile.entry
def padded_copy(z, x):
    z.store(x.load(z.block, z.shape, padding=tile.PaddingMode.NEG_INF))


def test_padding_only_where_a_tile_can_be_partial():
    z = api.zeros((64,)).sync()
    whole = padded_copy.inspect_tileir(z.partition((16,)), api.from_numpy(rand(64)).sync())
    assert "padding_value" not in whole
    zp = api.zeros((60,)).sync()
    xp = api.from_numpy(rand(60)).sync()
    partial = padded_copy.inspect_tileir(zp.partition((16,)), xp)
    assert "padding_value = neg_inf" in partial
    padded_copy(zp.partition((16,)), xp).sync()
    np.testing.assert_array_equal(zp.to_host().sync(), xp.to_host().sync())


# --------------------------------------------------------------------------------------------------
# Transposed loads (order=) use dim_map, not a register permute
@tile.entry
def transposed(z, x):
    z.store(x.load(z.block, z.shape, order=(1, 0)))


def test_order_loads_through_dim_map():
    xn = rand((32, 64))
    x = api.from_numpy(xn).sync()
    z = api.zeros((64, 32)).sync()
    ir = transposed.inspect_tileir(z.partition((16, 8)), x)
    assert "dim_map=[1, 0]" in ir and "permute" not in ir
    transposed(z.partition((16, 8)), x).sync()
    np.testing.assert_array_equal(z.to_host().sync(), xn.T)


def test_order_must_be_a_permutation():
    x = api.from_numpy(rand((32, 64))).sync()
    z = api.zeros((64, 32)).sync()

    @tile.entry
    def bad(z, x):
        z.store(x.load(z.block, z.shape, order=(0, 0)))

    with pytest.raises(tile.TypingError, match=r"order \(0, 0\) is not a permutation"):
        bad(z.partition((16, 8)), x).sync()


# --------------------------------------------------------------------------------------------------
# Unit strides are static on every axis: a column-major operand (fp8's K-major B, a transposed
# view) tells tileiras which axis is contiguous, as a row-major one does (TMA, K-major MMA loads)
@tile.entry
def matmul_kmajor_b(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        acc = tile.mma(a.load((bm, k), (BM, BK)), b.load((k, bn), (BK, BN)), acc)
    c.store(acc.astype(c.dtype))


def _tensor_view_strides(ir: str) -> list:
    return re.findall(r"-> tensor_view<[^,]*, strides=\[([^\]]*)\]>", ir)


@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3fn"])
def test_column_major_operand_has_a_static_unit_stride(dtype):
    import ml_dtypes
    m, k, n = 32, 64, 48
    npdt = np.float16 if dtype == "float16" else ml_dtypes.float8_e4m3fn
    rng = np.random.default_rng(1)
    a_np = rng.integers(-3, 4, (m, k)).astype(npdt)
    bt_np = rng.integers(-3, 4, (n, k)).astype(npdt)                 # B^T row-major
    a = api.from_numpy(a_np).sync()
    b = api.from_numpy(bt_np).sync().permute(1, 0)                   # (K, N) column-major
    c = api.zeros((m, n), tile.float32).sync()
    args = (c.partition((16, 16)), a, b)
    ir = matmul_kmajor_b.inspect_tileir(*args, BK=32)
    assert _tensor_view_strides(ir) == ["?,1", "?,1", "1,?"]           # c, a, and B's axis 0
    matmul_kmajor_b(*args, BK=32).sync()
    ref = a_np.astype(np.float32) @ bt_np.astype(np.float32).T
    np.testing.assert_array_equal(c.to_numpy(), ref)


def test_every_unit_stride_is_static_and_compiles():
    """A (N, 1) column has unit strides on both axes (NumPy gives (1, 1) elements): both are
    static, the simulator reads it right and tileiras accepts the view."""
    x_np = np.arange(64, dtype=np.float32).reshape(64, 1)
    x, z = api.from_numpy(x_np).sync(), api.zeros((64, 1), tile.float32).sync()

    @tile.entry
    def copy_column(z, x):
        z.store(x.load((z.block[0], 0), z.shape) * 2.0)

    ir = copy_column.inspect_tileir(z.partition((16, 1)), x)
    assert _tensor_view_strides(ir) == ["1,1", "1,1"]
    copy_column(z.partition((16, 1)), x).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * x_np)
    assert copy_column.compile(z.partition((16, 1)), x, arch="sm_90")


@tile.entry
def grid_stride_rows(z, x):
    step = tile.num_blocks(0)
    for r in range(tile.bid(0), x.shape[0], step):
        tile.store(z.partition((1, 16)), (r, 0), x.load((r, 0), (1, 16)) * 2.0)


@tile.entry
def stride_from_argument(z, x, s):
    for r in range(tile.bid(0), x.shape[0], s):
        tile.store(z.partition((1, 16)), (r, 0), x.load((r, 0), (1, 16)) * 2.0)


def test_a_grid_stride_loop_is_a_plain_for_without_a_zero_step_check():
    """``range(bid, n, tile.num_blocks(0))``: the step is at least 1, so the loop is Tile IR's
    ``for`` over (bid, n, grid size) as written, with no trip-count arithmetic and no
    device assertion (a step from an argument keeps both)."""
    x = rand((40, 16))
    z = api.zeros((40, 16)).sync()
    ir = grid_stride_rows.inspect_tileir(tile.atomic(z), x)
    assert re.search(r"for %\w+ in \(%blockId_x to %\S+, step %gridSize_x\)", ir), ir
    assert "must not be zero" not in ir and "divi" not in ir
    grid_stride_rows(tile.atomic(z), x).grid((3, 1, 1)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * x)
    ir = stride_from_argument.inspect_tileir(tile.atomic(z), x, 3)
    assert "must not be zero" in ir
