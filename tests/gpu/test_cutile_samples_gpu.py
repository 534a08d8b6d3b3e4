"""cuTile Python's samples (our versions, tests/cutile_samples.py, ``import tilejit.cutile as ct``)
on a GPU at the samples' own sizes, launched with ``ct.launch(torch.cuda.current_stream(), ...)``
on torch tensors and checked against torch. The split-K matmul and LayerNorm backward run
thousands of blocks through their spin locks."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import cutile_samples as S  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    torch.manual_seed(25)
    return torch


def stream(torch):
    return torch.cuda.current_stream()


def done(torch):
    torch.cuda.synchronize()


# --- VectorAddition (1,000,000 and 1,000,001 elements; 2048x1024 and 2000x1000) -----------------
@pytest.mark.parametrize("shape, gather", [((1_000_000,), False), ((1_000_001,), True),
                                           ((2048, 1024), False), ((2000, 1000), True)])
def test_vector_addition(torch, shape, gather):
    a, b = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
    c = torch.full(shape, float("nan"), device="cuda")
    S.vector_add(stream(torch), a, b, c, use_gather=gather)
    done(torch)
    assert torch.equal(c, a + b)


# --- MatMul (512x768 @ 768x512 fp16 and tf32, 1000x700 @ 700x500, persistent) -------------------
@pytest.fixture
def tf32(torch):
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True        # the reference rounds to tf32 as well
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


@pytest.mark.parametrize("dtype, m, k, n, persistent", [
    ("float16", 512, 768, 512, False), ("float32", 512, 768, 512, False),
    ("float32", 1000, 700, 500, False), ("float32", 512, 768, 512, True),
    ("float16", 4096, 4096, 4096, True)])
def test_matmul(torch, tf32, dtype, m, k, n, persistent):
    dt = getattr(torch, dtype)
    a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if persistent else None
    S.matmul(stream(torch), a, b, c, persistent_blocks=sms)
    done(torch)
    # fp16 output rounding and tf32 inputs (the reference rounds to tf32 too): |c| ~ sqrt(k)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-3 * math.sqrt(k),
                               rtol=1e-2)


def test_split_k_matmul_under_contention(torch):
    """2048x4096 @ 4096x2048 fp16 in 128x128 tiles, K split 8 ways: 2048 blocks, 8 per lock."""
    m, k, n, split = 2048, 4096, 2048, 8
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda")
    tiles = (128, 128, 64)
    n_tiles = (m // 128) * (n // 128)
    locks = torch.zeros(n_tiles, dtype=torch.int32, device="cuda")
    counts = torch.zeros(n_tiles, dtype=torch.int32, device="cuda")
    for _ in range(3):                     # the counts wrap to 0, so the launch repeats as is
        c.fill_(float("nan"))
        S.split_k_matmul(stream(torch), a, b, c, locks, counts, split, tiles=tiles)
        done(torch)
        torch.testing.assert_close(c, a.float() @ b.float(), atol=2e-2, rtol=1e-3)
        assert int(locks.abs().sum()) == 0 and int(counts.abs().sum()) == 0


# --- BatchMatMul (4 x 512x256 @ 256x1024 fp16), Transpose (1024x512 fp16/f32, 1000x500) ---------
def test_batch_matmul(torch):
    a = torch.randn(4, 512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(4, 256, 1024, device="cuda", dtype=torch.float16)
    c = torch.full((4, 512, 1024), float("nan"), device="cuda", dtype=torch.float16)
    S.batch_matmul(stream(torch), a, b, c)
    done(torch)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype, m, n", [("float16", 1024, 512), ("float32", 1024, 512),
                                         ("float32", 1000, 500)])
def test_transpose(torch, dtype, m, n):
    x = torch.randn(m, n, device="cuda", dtype=getattr(torch, dtype))
    y = torch.full((n, m), float("nan"), device="cuda", dtype=x.dtype)
    S.transpose(stream(torch), x, y)
    done(torch)
    assert torch.equal(y, x.T)


# --- LayerNorm (1024 x 2048 bf16, forward and backward against torch autograd) -----------------
def test_layer_norm_forward_and_backward(torch):
    m, n, eps, groups = 1024, 2048, 1e-5, 64
    dt = torch.bfloat16
    x = (-2.3 + 0.5 * torch.randn(m, n, device="cuda", dtype=dt)).requires_grad_()
    w = torch.randn(n, device="cuda", dtype=dt, requires_grad=True)
    b = torch.randn(n, device="cuda", dtype=dt, requires_grad=True)
    dy = 0.1 * torch.randn(m, n, device="cuda", dtype=dt)
    y_ref = torch.nn.functional.layer_norm(x, (n,), w, b, eps)
    y_ref.backward(dy)
    with torch.no_grad():
        y = torch.empty_like(x)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        S.layer_norm_forward(stream(torch), x, w, b, y, mean, rstd, eps)
        dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
        dw_part = torch.zeros(groups, n, device="cuda")
        db_part = torch.zeros(groups, n, device="cuda")
        locks = torch.zeros(groups, dtype=torch.int32, device="cuda")
        S.layer_norm_backward(stream(torch), dy, x, w, mean, rstd, dx, dw_part, db_part, locks,
                              dw, db)
        done(torch)
    xf = x.detach().float()
    torch.testing.assert_close(mean, xf.mean(1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rstd, 1 / torch.sqrt(xf.var(1, unbiased=False) + eps),
                               atol=1e-3, rtol=1e-3)
    for got, ref in ((y, y_ref), (dx, x.grad), (dw, w.grad), (db, b.grad)):
        torch.testing.assert_close(got, ref, atol=1e-2, rtol=1e-2)
    assert int(locks.abs().sum()) == 0


# --- Softmax (512 x 128, 16 rows per block; one row at a time in a persistent loop) -------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("persistent", [False, True], ids=["tile_of_rows", "per_row"])
def test_softmax(torch, dtype, persistent):
    x = torch.randn(512, 128, device="cuda", dtype=getattr(torch, dtype))
    y = torch.full_like(x, float("nan"))
    S.softmax(stream(torch), x, y, rows_per_block=16, persistent=persistent)
    done(torch)
    tol = (1e-5, 1e-4) if dtype == "float32" else (1e-2, 1e-2)
    torch.testing.assert_close(y, torch.softmax(x.float(), 1).to(x.dtype), atol=tol[0],
                               rtol=tol[1])


# --- AttentionFMHA (B2 H8 S128 D64 fp16; causal or not; grouped-query heads) ----------------------
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("group", [1, 4])
def test_attention_fmha(torch, causal, group):
    q = torch.randn(2, 8, 128, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(2, 8 // group, 128, 64, device="cuda", dtype=torch.float16)
    v = torch.randn(2, 8 // group, 128, 64, device="cuda", dtype=torch.float16)
    out = torch.full_like(q, float("nan"))
    S.fmha(stream(torch), q, k, v, out, causal=causal, query_group_size=group)
    done(torch)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1),
        is_causal=causal)
    torch.testing.assert_close(out.float(), ref, atol=1e-3 * 4, rtol=1e-3 * 4)


def test_attention_fmha_uneven_kv_length(torch):
    q = torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(2, 8, 200, 64, device="cuda", dtype=torch.float16)
    v = torch.randn(2, 8, 200, 64, device="cuda", dtype=torch.float16)
    out = torch.full_like(q, float("nan"))
    S.fmha(stream(torch), q, k, v, out, causal=False)
    done(torch)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    torch.testing.assert_close(out.float(), ref, atol=4e-3, rtol=4e-3)


# --- MoE (48 tokens, hidden 512, 64 experts, intermediate 1024, top-8, bf16) ---------------------
def moe_reference(torch, x, w1, w2, weights, ids):
    out = torch.zeros(x.shape, device="cuda", dtype=torch.float32)
    inter = w2.shape[2]
    for e in range(w1.shape[0]):
        tok, slot = torch.where(ids == e)
        if tok.numel() == 0:
            continue
        h = x[tok].float() @ w1[e].float().T
        act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        out.index_add_(0, tok, (act @ w2[e].float().T) * weights[tok, slot][:, None])
    return out


def test_mixture_of_experts(torch):
    tokens, hidden, experts, inter, topk, tm = 48, 512, 64, 1024, 8, 128
    dt = torch.bfloat16
    x = torch.randn(tokens, hidden, device="cuda", dtype=dt)
    w1 = torch.randn(experts, 2 * inter, hidden, device="cuda", dtype=dt) / math.sqrt(hidden)
    w2 = torch.randn(experts, hidden, inter, device="cuda", dtype=dt) / math.sqrt(inter)
    ids = torch.stack([torch.randperm(experts, device="cuda")[:topk] for _ in range(tokens)])
    weights = torch.softmax(torch.randn(tokens, topk, device="cuda"), -1)
    sorted_ids, expert_of_run = (torch.from_numpy(a).cuda()
                                 for a in S.moe_align(ids.cpu().numpy(), tm, experts))
    s = stream(torch)
    h1 = torch.zeros(tokens * topk, 2 * inter, device="cuda", dtype=dt)
    S.moe_matmul(s, x, w1, h1, weights.reshape(-1), sorted_ids, expert_of_run, False, topk,
                 tiles=(tm, 128, 64))
    h2 = torch.zeros(tokens * topk, inter, device="cuda", dtype=dt)
    S.silu_and_mul(s, h1[:, :inter], h1[:, inter:], h2)
    h3 = torch.zeros(tokens * topk, hidden, device="cuda", dtype=dt)
    S.moe_matmul(s, h2, w2, h3, weights.reshape(-1), sorted_ids, expert_of_run, True, 1,
                 tiles=(tm, 128, 64))
    done(torch)
    got = h3.reshape(tokens, topk, hidden).float().sum(1)
    torch.testing.assert_close(got, moe_reference(torch, x, w1, w2, weights, ids), atol=1e-1,
                               rtol=1e-1)


# --- FFT (batch 2, N = 8 = 2*2*2, packing 2; and batch 64, N = 256 = 4*8*8) ----------------------
def run_fft(torch, batch, factors, pack, batch_tile):
    n = math.prod(factors)
    x = torch.randn(batch, n, dtype=torch.complex64, device="cuda")
    xp = torch.view_as_real(x).reshape(batch, 2 * n // pack, pack).contiguous()
    yp = torch.full_like(xp, float("nan"))
    tw = tuple(torch.from_numpy(t).cuda() for t in S.fft_twiddles(factors, np.float32))
    S.fft(stream(torch), xp, yp, tw, factors, batch_tile=batch_tile, pack=pack)
    done(torch)
    y = torch.view_as_complex(yp.reshape(batch, n, 2))
    torch.testing.assert_close(y, torch.fft.fft(x, dim=-1), atol=1e-4 * math.sqrt(n), rtol=1e-4)


@pytest.mark.parametrize("batch, factors, pack", [(2, (2, 2, 2), 2), (64, (4, 8, 8), 64)])
def test_fft(torch, batch, factors, pack):
    run_fft(torch, batch, factors, pack, batch_tile=1)


def test_fft_several_sequences_per_block(torch):
    run_fft(torch, 64, (4, 8, 8), 64, batch_tile=4)


# --- BlockScaledMatMul (512x768 @ 768x512, MXFP8 with 32-element scale blocks) -----------------
def test_block_scaled_matmul(torch):
    m, k, n, block = 512, 768, 512, 32
    a, a_scale = S.mxfp8_quantize(torch.rand(m, k, device="cuda"), block)
    bt, bt_scale = S.mxfp8_quantize(torch.rand(n, k, device="cuda"), block)
    b, b_scale = bt.T, bt_scale.T
    c = torch.full((m, n), float("nan"), device="cuda")
    S.block_scaled_matmul(stream(torch), a, a_scale, b, b_scale, c)
    done(torch)
    ref = (a.float() * a_scale.float().repeat_interleave(block, 1)) @ \
        (b.float() * b_scale.float().repeat_interleave(block, 0))
    torch.testing.assert_close(c, ref, atol=1e-4, rtol=1e-3)


# --- the launch itself ----------------------------------------------------------------------------
def test_launch_on_streams_and_array_kinds(torch):
    """An int handle, a torch stream and a tilejit stream; torch and CuPy arrays and tilejit
    tensors; two launches on one side stream in order."""
    import tilejit as tile
    from tilejit import api
    n = 1 << 20
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    ours = tile.Device(0).new_stream()
    for s in (torch.cuda.current_stream().cuda_stream, torch.cuda.Stream(), ours):
        c, c2 = torch.full_like(a, float("nan")), torch.full_like(a, float("nan"))
        S.vector_add(s, a, b, c)
        S.vector_add(s, c, b, c2)               # ordered after the first on the same stream
        if isinstance(s, int):
            done(torch)
        else:
            s.synchronize()
        assert torch.equal(c, a + b) and torch.equal(c2, a + b + b)
    ta, tb = tile.from_dlpack(a), tile.from_dlpack(b)
    tc = api.zeros((n,)).sync()
    S.vector_add(torch.cuda.current_stream(), ta, tb, tc)
    done(torch)
    assert np.array_equal(tc.to_numpy(), (a + b).cpu().numpy())
    cp = pytest.importorskip("cupy")
    ca, cb = cp.asarray(a), cp.asarray(b)
    cc = cp.empty_like(ca)
    S.vector_add(cp.cuda.get_current_stream(), ca, cb, cc)
    cp.cuda.get_current_stream().synchronize()
    assert bool((cc == ca + cb).all())
