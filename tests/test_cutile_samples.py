"""cuTile Python's samples (our own versions, tests/cutile_samples.py, written with only
``import tilejit.cutile as ct``) on the simulator at small sizes, checked against NumPy, and
compiled for sm_90 with tileiras. tests/gpu/test_cutile_samples_gpu.py runs them at the
samples' sizes on a GPU."""
import math

import ml_dtypes
import numpy as np
import pytest

import cutile_samples as S
import tilejit as tile
from tilejit import dtypes as D
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")
needs_tileiras = pytest.mark.skipif(not tileiras.available(), reason="tileiras not installed")
rng = np.random.default_rng(25)


def randn(*shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def close(got, ref, tol):
    got, ref = np.asarray(got).astype(np.complex128), np.asarray(ref).astype(np.complex128)
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
    assert err <= tol, f"relative error {err:.3g} > {tol:g}"


# --- VectorAddition -------------------------------------------------------------------------------
@pytest.mark.parametrize("gather", [False, True], ids=["tiled", "gather"])
@pytest.mark.parametrize("shape", [(1000,), (50, 70)], ids=["1d", "2d"])
def test_vector_addition(shape, gather):
    a, b = randn(*shape), randn(*shape)
    c = np.zeros_like(a)
    S.vector_add(0, a, b, c, use_gather=gather, max_tile=256)
    np.testing.assert_array_equal(c, a + b)


# --- MatMul ---------------------------------------------------------------------------------------
def test_matmul_fp16_and_tf32():
    a, b = randn(96, 80, dtype=np.float16), randn(80, 72, dtype=np.float16)
    c = np.zeros((96, 72), np.float16)
    S.matmul(0, a, b, c, tiles=(32, 32, 16))
    close(c, a.astype(np.float32) @ b.astype(np.float32), 2e-3)
    a32, b32 = randn(70, 50), randn(50, 40)            # float32 goes through tf32
    c32 = np.zeros((70, 40), np.float32)
    S.matmul(0, a32, b32, c32, tiles=(32, 32, 16))
    close(c32, a32 @ b32, 3e-3)


def test_persistent_matmul():
    a, b = randn(96, 80, dtype=np.float16), randn(80, 72, dtype=np.float16)
    c = np.zeros((96, 72), np.float16)
    S.matmul(0, a, b, c, tiles=(32, 32, 16), persistent_blocks=4)    # 9 tiles, 4 blocks
    close(c, a.astype(np.float32) @ b.astype(np.float32), 2e-3)


@pytest.mark.parametrize("schedule", ["serial", "interleave"])
def test_split_k_matmul(monkeypatch, schedule):
    """The spin lock orders the read-modify-write of each output tile even when the simulator
    interleaves the blocks as loosely as Tile IR allows."""
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    a, b = randn(64, 96, dtype=np.float16), randn(96, 64, dtype=np.float16)
    c = np.zeros((64, 64), np.float32)
    n_tiles = 4
    locks, counts = np.zeros(n_tiles, np.int32), np.zeros(n_tiles, np.int32)
    S.split_k_matmul(0, a.astype(np.float32), b.astype(np.float32), c, locks, counts, 3,
                     tiles=(32, 32, 16))
    close(c, a.astype(np.float32) @ b.astype(np.float32), 1e-5)
    assert (locks == 0).all() and (counts == 0).all()   # every lock given back, counts wrapped


# --- BatchMatMul, Transpose ----------------------------------------------------------------------
def test_batch_matmul():
    a, b = randn(3, 40, 48, dtype=np.float16), randn(3, 48, 36, dtype=np.float16)
    c = np.zeros((3, 40, 36), np.float16)
    S.batch_matmul(0, a, b, c, tiles=(16, 16, 16))
    close(c, a.astype(np.float32) @ b.astype(np.float32), 2e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_transpose(dtype):
    x = randn(70, 50, dtype=dtype)
    y = np.zeros((50, 70), dtype)
    S.transpose(0, x, y, tiles=(16, 32))
    np.testing.assert_array_equal(y, x.T)


# --- LayerNorm ------------------------------------------------------------------------------------
def layer_norm_reference(x, w, b, dy, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(x64.var(1, keepdims=True) + eps)
    xhat = (x64 - mu) * rstd
    wdy = w * dy.astype(np.float64)
    c1 = (xhat * wdy).mean(1, keepdims=True)
    c2 = wdy.mean(1, keepdims=True)
    dx = (wdy - (xhat * c1 + c2)) * rstd
    return xhat * w + b, mu[:, 0], rstd[:, 0], dx, (dy * xhat).sum(0), dy.sum(0)


@pytest.mark.parametrize("schedule", ["serial", "interleave"])
def test_layer_norm_forward_and_backward(monkeypatch, schedule):
    monkeypatch.setenv("TILEJIT_SIM_SCHEDULE", schedule)
    m, n, eps, groups = 6, 100, 1e-5, 4
    x, w, b, dy = randn(m, n), randn(n), randn(n), randn(m, n, scale=0.1)
    y, mean, rstd = np.zeros_like(x), np.zeros(m, np.float32), np.zeros(m, np.float32)
    S.layer_norm_forward(0, x, w, b, y, mean, rstd, eps, tile_n=32)
    y_ref, mu_ref, rstd_ref, dx_ref, dw_ref, db_ref = layer_norm_reference(x, w, b, dy, eps)
    close(y, y_ref, 1e-5)
    close(mean, mu_ref, 1e-5)
    close(rstd, rstd_ref, 1e-5)
    dx, dw, db = np.zeros_like(x), np.zeros(n, np.float32), np.zeros(n, np.float32)
    dw_part, db_part = np.zeros((groups, n), np.float32), np.zeros((groups, n), np.float32)
    locks = np.zeros(groups, np.int32)
    S.layer_norm_backward(0, dy, x, w, mean, rstd, dx, dw_part, db_part, locks, dw, db,
                          tile_n=32, tile_m=4)
    close(dx, dx_ref, 1e-5)
    close(dw, dw_ref, 1e-5)
    close(db, db_ref, 1e-5)
    assert (locks == 0).all()


# --- Softmax --------------------------------------------------------------------------------------
@pytest.mark.parametrize("persistent", [False, True], ids=["tile_of_rows", "per_row"])
def test_softmax(persistent):
    x = randn(40, 64)
    y = np.zeros_like(x)
    S.softmax(0, x, y, rows_per_block=8, persistent=persistent)
    e = np.exp(x - x.max(1, keepdims=True))
    close(y, e / e.sum(1, keepdims=True), 1e-6)


# --- AttentionFMHA --------------------------------------------------------------------------------
def attention_reference(q, k, v, causal, group):
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("causal, kv_len", [(False, 64), (False, 72), (True, 64)],
                         ids=["full", "uneven_kv", "causal"])
def test_attention_fmha(causal, kv_len):
    q = randn(2, 2, 64, 32, dtype=np.float16)
    k, v = randn(2, 1, kv_len, 32, dtype=np.float16), randn(2, 1, kv_len, 32, dtype=np.float16)
    out = np.zeros_like(q)
    S.fmha(0, q, k, v, out, causal=causal, tile_m=32, tile_n=16, query_group_size=2)
    close(out, attention_reference(q, k, v, causal, 2), 2e-3)


# --- MoE ------------------------------------------------------------------------------------------
def test_mixture_of_experts():
    tokens, hidden, inter, experts, topk, tm = 20, 64, 32, 4, 2, 16
    x = randn(tokens, hidden, dtype=np.float16, scale=0.5)
    w1 = randn(experts, 2 * inter, hidden, dtype=np.float16, scale=0.2)
    w2 = randn(experts, hidden, inter, dtype=np.float16, scale=0.2)
    logits = rng.standard_normal((tokens, experts))
    ids = np.argsort(-logits, 1)[:, :topk].astype(np.int32)
    weights = np.take_along_axis(np.exp(logits), ids, 1)
    weights = (weights / weights.sum(1, keepdims=True)).astype(np.float32)
    sorted_ids, expert_of_run = S.moe_align(ids, tm, experts)
    h1 = np.zeros((tokens * topk, 2 * inter), np.float16)
    S.moe_matmul(0, x, w1, h1, weights.reshape(-1), sorted_ids, expert_of_run, False, topk,
                 tiles=(tm, 16, 16))
    h2 = np.zeros((tokens * topk, inter), np.float16)
    S.silu_and_mul(0, h1[:, :inter], h1[:, inter:], h2)      # strided views of one array
    h3 = np.zeros((tokens * topk, hidden), np.float16)
    S.moe_matmul(0, h2, w2, h3, weights.reshape(-1), sorted_ids, expert_of_run, True, 1,
                 tiles=(tm, 16, 16))
    ref = np.zeros((tokens, hidden))
    for t in range(tokens):
        for j in range(topk):
            e = ids[t, j]
            g, u = np.split(x[t].astype(np.float64) @ w1[e].astype(np.float64).T, 2)
            ref[t] += weights[t, j] * ((g / (1 + np.exp(-g)) * u) @ w2[e].astype(np.float64).T)
    close(h3.reshape(tokens, topk, hidden).astype(np.float32).sum(1), ref, 5e-3)


# --- FFT ------------------------------------------------------------------------------------------
def run_fft(factors, batch, batch_tile, pack):
    n = math.prod(factors)
    x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n)))
    xp = np.ascontiguousarray(np.stack([x.real, x.imag], -1).reshape(batch, 2 * n // pack,
                                                                      pack)).astype(np.float32)
    yp = np.zeros_like(xp)
    S.fft(0, xp, yp, S.fft_twiddles(factors, np.float32), factors, batch_tile=batch_tile,
          pack=pack)
    y = yp.reshape(batch, n, 2)
    close(y[..., 0] + 1j * y[..., 1], np.fft.fft(x, axis=-1), 1e-5)


@pytest.mark.parametrize("factors", [(2, 2, 2), (2, 4, 8)])
def test_fft_one_sequence_per_block(factors):
    run_fft(factors, batch=3, batch_tile=1, pack=2 if math.prod(factors) == 8 else 16)


def test_fft_several_sequences_per_block():
    run_fft((2, 4, 8), batch=4, batch_tile=2, pack=16)


# --- BlockScaledMatMul ----------------------------------------------------------------------------
def block_quantize(x, block=32):
    """Host side: fp8 e4m3 values and one power-of-two float8_e8m0fnu scale per ``block``
    elements of each row."""
    rows, k = x.shape
    xb = x.reshape(rows, k // block, block)
    amax = np.abs(xb).max(-1, keepdims=True)
    scale = 2.0 ** np.ceil(np.log2(np.maximum(amax / 448.0, 1e-12)))
    q = (xb / scale).astype(ml_dtypes.float8_e4m3fn).reshape(rows, k)
    return q, scale[..., 0].astype(ml_dtypes.float8_e8m0fnu)


def test_block_scaled_matmul():
    m, n, k = 64, 64, 128
    a, a_scale = block_quantize(rng.random((m, k)))
    bt, bt_scale = block_quantize(rng.random((n, k)))
    b, b_scale = np.ascontiguousarray(bt.T), np.ascontiguousarray(bt_scale.T)
    c = np.zeros((m, n), np.float32)
    S.block_scaled_matmul(0, a, a_scale, b, b_scale, c, tiles=(32, 32, 64))
    ref = (a.astype(np.float32) * np.repeat(a_scale.astype(np.float32), 32, axis=1)) @ \
        (b.astype(np.float32) * np.repeat(b_scale.astype(np.float32), 32, axis=0))
    close(c, ref, 1e-5)


# --- every sample kernel compiles for sm_90 -------------------------------------------------------
def z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


F16, I32 = np.float16, np.int32
COMPILE_CASES = {
    "vec_add_1d": (S.vec_add_1d, (z(4096), z(4096), z(4096), 1024)),
    "vec_add_2d": (S.vec_add_2d, (z(64, 256), z(64, 256), z(64, 256), 4, 256)),
    "vec_add_1d_gather": (S.vec_add_1d_gather, (z(4097), z(4097), z(4097), 1024)),
    "vec_add_2d_gather": (S.vec_add_2d_gather, (z(64, 256), z(64, 256), z(64, 256), 4, 256)),
    "matmul_kernel": (S.matmul_kernel, (z(512, 768, dtype=F16), z(768, 512, dtype=F16),
                                        z(512, 512, dtype=F16), 128, 256, 64)),
    "persistent_matmul_kernel": (S.persistent_matmul_kernel,
                                 (z(512, 768), z(768, 512), z(512, 512), 32, 32, 32)),
    "split_k_matmul_kernel": (S.split_k_matmul_kernel,
                              (z(256, 256, dtype=F16), z(256, 256, dtype=F16), z(256, 256),
                               z(4, dtype=I32), z(4, dtype=I32), 128, 128, 64, 2)),
    "batch_matmul_kernel": (S.batch_matmul_kernel, (z(4, 512, 256, dtype=F16),
                                                    z(4, 256, 1024, dtype=F16),
                                                    z(4, 512, 1024, dtype=F16), 128, 256, 128)),
    "transpose_kernel": (S.transpose_kernel, (z(1024, 512, dtype=F16), z(512, 1024, dtype=F16),
                                              128, 128)),
    "layer_norm_fwd": (S.layer_norm_fwd, (z(64, 2048), z(2048), z(2048), z(64, 2048), z(64),
                                          z(64), 1e-5, 1024)),
    "layer_norm_bwd_dx_partial_dwdb": (S.layer_norm_bwd_dx_partial_dwdb,
                                       (z(64, 2048), z(64, 2048), z(8, 2048), z(8, 2048),
                                        z(64, 2048), z(2048), z(64), z(64), z(8, dtype=I32),
                                        1024)),
    "layer_norm_bwd_dwdb": (S.layer_norm_bwd_dwdb, (z(64, 2048), z(64, 2048), z(2048), z(2048),
                                                    32, 1024)),
    "softmax_kernel": (S.softmax_kernel, (z(512, 128, dtype=F16), z(512, 128, dtype=F16), 16,
                                          128)),
    "softmax_per_row_kernel": (S.softmax_per_row_kernel, (z(512, 128), z(512, 128), 512, 128)),
    "fmha_kernel": (S.fmha_kernel, (z(2, 8, 128, 64, dtype=F16), z(2, 8, 128, 64, dtype=F16),
                                    z(2, 8, 128, 64, dtype=F16), z(2, 8, 128, 64, dtype=F16),
                                    0.125, 0, 64, 8, 128, 128, 1, True, True)),
    "fused_moe_kernel": (S.fused_moe_kernel, (z(48, 512, dtype=F16), z(8, 2048, 512, dtype=F16),
                                              z(384, 2048, dtype=F16), z(384), z(1024, dtype=I32),
                                              z(8, dtype=I32), 8, False, 128, 128, 64)),
    "silu_and_mul_kernel": (S.silu_and_mul_kernel, (z(384, 1024, dtype=F16),
                                                    z(384, 1024, dtype=F16),
                                                    z(384, 1024, dtype=F16), 1024)),
    "fft_kernel": (S.fft_kernel, (z(2, 8, 2), z(2, 8, 2)) + S.fft_twiddles((2, 2, 2), np.float32)
                   + (8, 2, 2, 2, 1, 2)),
}


@needs_tileiras
@pytest.mark.parametrize("name", sorted(COMPILE_CASES))
def test_sample_compiles_for_sm_90(name):
    kernel, args = COMPILE_CASES[name]
    cubin = kernel.compile(*args, arch="sm_90")
    assert cubin[:4] == b"\x7fELF"


def test_every_sample_kernel_is_covered():
    kernels = {n for n, v in vars(S).items() if isinstance(v, tile.Kernel)}
    assert kernels - set(COMPILE_CASES) == {"block_scaled_matmul_kernel"}
    assert D.float16 is S.ct.float16            # the samples module runs on tilejit.cutile



def test_the_benchmark_loads_this_source_under_another_import():
    """benchmarks/cutile_samples.py runs tests/cutile_samples.py with its import line replaced
    (by ``import cuda.tile as ct`` on the GPU): loaded that way, the kernels still run."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "cutile_samples.py")
    spec = importlib.util.spec_from_file_location("cutile_samples_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    again = bench.load_samples("import tilejit.cutile as ct  # loaded again", "samples_again")
    assert again.vec_add_1d is not S.vec_add_1d
    a, b = randn(100), randn(100)
    c = np.zeros_like(a)
    again.vector_add(0, a, b, c, max_tile=32)
    np.testing.assert_array_equal(c, a + b)
    assert len(bench.CASES) >= 20 and all(callable(setup) for _, setup in bench.CASES)
