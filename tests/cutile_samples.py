"""cuTile Python's published samples, written by us in cuTile's language from their algorithms
(VectorAddition, MatMul with its persistent and split-K forms, BatchMatMul, Transpose, LayerNorm
forward and backward, Softmax, AttentionFMHA, MoE, FFT, BlockScaledMatMul).

The only tilejit-specific line is the import below: ``benchmarks/cutile_samples.py`` runs this
very source under ``import cuda.tile as ct`` too. The host functions take a stream and arrays
(NumPy arrays on the simulator, torch tensors on a GPU; both have ``shape``/``ndim``/``dtype``)
and launch with the samples' grids; tile sizes default to the samples' and may be made smaller
for the simulator. No test code here (tests/test_cutile_samples.py and
tests/gpu/test_cutile_samples_gpu.py check the results).
"""
import math

import tilejit.cutile as ct

ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]
ZERO_PAD = ct.PaddingMode.ZERO
LOG2_E = 1.0 / math.log(2.0)


def next_pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


# ==================================================================================================
# VectorAddition: tiled loads/stores and gather/scatter, 1-D and 2-D
@ct.kernel
def vec_add_1d(a, b, c, TILE: ConstInt):
    i = ct.bid(0)
    total = ct.load(a, index=(i,), shape=(TILE,)) + ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=total)


@ct.kernel
def vec_add_2d(a, b, c, TX: ConstInt, TY: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    ta = ct.load(a, index=(i, j), shape=(TX, TY))
    tb = ct.load(b, index=(i, j), shape=(TX, TY))
    ct.store(c, index=(i, j), tile=ta + tb)


@ct.kernel
def vec_add_1d_gather(a, b, c, TILE: ConstInt):
    offsets = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(c, offsets, ct.gather(a, offsets) + ct.gather(b, offsets))


@ct.kernel
def vec_add_2d_gather(a, b, c, TX: ConstInt, TY: ConstInt):
    rows = (ct.bid(0) * TX + ct.arange(TX, dtype=ct.int32))[:, None]
    cols = (ct.bid(1) * TY + ct.arange(TY, dtype=ct.int32))[None, :]
    ct.scatter(c, (rows, cols), ct.gather(a, (rows, cols)) + ct.gather(b, (rows, cols)))


def vector_add(stream, a, b, c, use_gather=False, max_tile=1024):
    if a.ndim == 1:
        n = a.shape[0]
        t = min(max_tile, next_pow2(n))
        k = vec_add_1d_gather if use_gather else vec_add_1d
        ct.launch(stream, (ct.cdiv(n, t), 1, 1), k, (a, b, c, t))
    else:
        m, n = a.shape
        ty = min(max_tile, next_pow2(n))
        tx = max(1, max_tile // ty)
        k = vec_add_2d_gather if use_gather else vec_add_2d
        ct.launch(stream, (ct.cdiv(m, tx), ct.cdiv(n, ty), 1), k, (a, b, c, tx, ty))


# ==================================================================================================
# MatMul: a grouped ("swizzled") 1-D grid; float32 inputs go through tf32 tensor cores
def grouped_tile(M, N, tm, tn, group, linear):
    """The (row, column) output tile of the ``linear``-th block: blocks walk ``group`` rows
    of tiles at a time, so neighbouring blocks share their A and B tiles in L2."""
    tiles_m = ct.cdiv(M, tm)
    tiles_n = ct.cdiv(N, tn)
    per_group = group * tiles_n
    first_m = (linear // per_group) * group
    rows = min(tiles_m - first_m, group)
    return first_m + (linear % rows), (linear % per_group) // rows


def mma_dtype_of(dtype):
    return ct.tfloat32 if dtype == ct.float32 else dtype


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2))
def matmul_kernel(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    bm, bn = grouped_tile(A.shape[0], B.shape[1], tm, tn, 8, ct.bid(0))
    op_dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ZERO_PAD).astype(op_dtype)
        b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ZERO_PAD).astype(op_dtype)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=ct.astype(acc, C.dtype))


@ct.kernel
def persistent_matmul_kernel(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    M, N = A.shape[0], B.shape[1]
    op_dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    k_tiles = ct.num_tiles(A, axis=1, shape=(tm, tk))
    out_tiles = ct.cdiv(M, tm) * ct.cdiv(N, tn)
    for t in range(ct.bid(0), out_tiles, ct.num_blocks(0)):
        bm, bn = grouped_tile(M, N, tm, tn, 8, t)
        acc = ct.full((tm, tn), 0, dtype=ct.float32)
        for k in range(k_tiles):
            a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ZERO_PAD).astype(op_dtype)
            b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ZERO_PAD).astype(op_dtype)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(bm, bn), tile=ct.astype(acc, C.dtype))


@ct.kernel
def split_k_matmul_kernel(A, B, C, LOCKS, COUNTS, tm: ConstInt, tn: ConstInt, tk: ConstInt,
                          SPLIT_K: ConstInt):
    """Block (t, s) sums the K tiles s, s + SPLIT_K, ... of output tile t, then adds its part
    into C under a spin lock; the first to arrive stores, the others accumulate."""
    bm, bn = grouped_tile(A.shape[0], B.shape[1], tm, tn, 8, ct.bid(0))
    op_dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    part = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.bid(1), ct.num_tiles(A, axis=1, shape=(tm, tk)), SPLIT_K):
        a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ZERO_PAD).astype(op_dtype)
        b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ZERO_PAD).astype(op_dtype)
        part = ct.mma(a, b, part)
    part = ct.astype(part, C.dtype)
    slot = ct.bid(0)
    while ct.atomic_cas(LOCKS, slot, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    arrived = ct.gather(COUNTS, slot)
    if arrived == 0:
        ct.store(C, index=(bm, bn), tile=part)
    else:
        ct.store(C, index=(bm, bn), tile=ct.load(C, index=(bm, bn), shape=(tm, tn)) + part)
    ct.scatter(COUNTS, slot, (arrived + 1) % SPLIT_K)
    ct.atomic_xchg(LOCKS, slot, 0, memory_order=ct.MemoryOrder.RELEASE)


def matmul_tiles(dtype):
    return (128, 256, 64) if dtype.itemsize == 2 else (32, 32, 32)


def matmul(stream, A, B, C, tiles=None, persistent_blocks=None):
    """C = A @ B; ``persistent_blocks``: launch that many blocks of the persistent form."""
    tm, tn, tk = tiles or matmul_tiles(A.dtype)
    grid = ct.cdiv(A.shape[0], tm) * ct.cdiv(B.shape[1], tn)
    if persistent_blocks:
        ct.launch(stream, (min(grid, persistent_blocks), 1, 1), persistent_matmul_kernel,
                  (A, B, C, tm, tn, tk))
    else:
        ct.launch(stream, (grid, 1, 1), matmul_kernel, (A, B, C, tm, tn, tk))


def split_k_matmul(stream, A, B, C, locks, counts, split_k, tiles=None):
    """``locks``/``counts``: zeroed int32 arrays with one entry per output tile."""
    tm, tn, tk = tiles or matmul_tiles(A.dtype)
    grid = ct.cdiv(A.shape[0], tm) * ct.cdiv(B.shape[1], tn)
    ct.launch(stream, (grid, split_k, 1), split_k_matmul_kernel,
              (A, B, C, locks, counts, tm, tn, tk, split_k))


# ==================================================================================================
# BatchMatMul: a 3-D grid (batch, row tile, column tile), 3-D loads reshaped for mma
@ct.kernel
def batch_matmul_kernel(A, B, C, tm: ConstInt, tn: ConstInt, tk: ConstInt):
    b_idx, bm, bn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, index=(b_idx, bm, k), shape=(1, tm, tk),
                               padding_mode=ZERO_PAD), (tm, tk))
        b = ct.reshape(ct.load(B, index=(b_idx, k, bn), shape=(1, tk, tn),
                               padding_mode=ZERO_PAD), (tk, tn))
        acc = ct.mma(a, b, acc=acc)
    ct.store(C, index=(b_idx, bm, bn), tile=ct.reshape(ct.astype(acc, C.dtype), (1, tm, tn)))


def batch_matmul(stream, A, B, C, tiles=(128, 256, 128)):
    tm, tn, tk = tiles
    batch, M, _ = A.shape
    grid = (batch, ct.cdiv(M, tm), ct.cdiv(B.shape[2], tn))
    ct.launch(stream, grid, batch_matmul_kernel, (A, B, C, tm, tn, tk))


# ==================================================================================================
# Transpose: load a tile, transpose it in registers, store it at the mirrored index
@ct.kernel
def transpose_kernel(x, y, tm: ConstInt, tn: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, index=(j, i), tile=ct.transpose(ct.load(x, index=(i, j), shape=(tm, tn))))


def transpose(stream, x, y, tiles=None):
    tm, tn = tiles or ((128, 128) if x.dtype.itemsize == 2 else (32, 32))
    m, n = x.shape
    ct.launch(stream, (ct.cdiv(m, tm), ct.cdiv(n, tn), 1), transpose_kernel, (x, y, tm, tn))


# ==================================================================================================
# LayerNorm: forward (one row per block, three passes over the row), backward in two kernels
# (dX and per-group partial dW/dB under a spin lock, then the partials summed per column)
@ct.kernel
def layer_norm_fwd(X, W, B, Y, Mean, Rstd, eps, TILE_N: ConstInt):
    row = ct.bid(0)
    N = X.shape[1]
    chunks = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    total = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        total += ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
    mean = ct.sum(total, axis=1) / N
    ct.store(Mean, index=(row,), tile=mean)
    sq = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
        inside = (j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)) < N
        d = ct.where(inside, x - mean, 0)
        sq += d * d
    rstd = 1 / ct.sqrt(ct.sum(sq, axis=1) / N + eps)
    ct.store(Rstd, index=(row,), tile=rstd)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=ZERO_PAD)
        b = ct.load(B, index=(j,), shape=(TILE_N,), padding_mode=ZERO_PAD)
        ct.store(Y, index=(row, j), tile=((x - mean) * rstd * w + b).astype(Y.dtype))


def layer_norm_terms(X, W, DY, row, j, mean, rstd, TILE_N, N):
    """x-hat and w * dy of one chunk of a row (zero past the row's end), and dy."""
    x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
    w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=ZERO_PAD)
    dy = ct.load(DY, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
    inside = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32) < N
    xhat = ct.where(inside, (x - mean) * rstd, 0)
    wdy = ct.where(inside, w * dy, 0)
    return dy, xhat, wdy


@ct.kernel
def layer_norm_bwd_dx_partial_dwdb(DX, DY, DW, DB, X, W, Mean, Rstd, Locks, TILE_N: ConstInt):
    row = ct.bid(0)
    N = X.shape[1]
    chunks = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    group = row % DW.shape[0]
    mean = ct.load(Mean, index=(row,), shape=(1,))
    rstd = ct.load(Rstd, index=(row,), shape=(1,))
    c1 = ct.full((1, TILE_N), 0, dtype=ct.float32)
    c2 = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        _, xhat, wdy = layer_norm_terms(X, W, DY, row, j, mean, rstd, TILE_N, N)
        c1 += xhat * wdy
        c2 += wdy
    c1 = ct.sum(c1, axis=1) / N
    c2 = ct.sum(c2, axis=1) / N
    for j in range(chunks):
        dy, xhat, wdy = layer_norm_terms(X, W, DY, row, j, mean, rstd, TILE_N, N)
        ct.store(DX, index=(row, j), tile=((wdy - (xhat * c1 + c2)) * rstd).astype(DX.dtype))
        dw = (dy * xhat).astype(DW.dtype)
        db = dy.astype(DB.dtype)
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        dw += ct.load(DW, index=(group, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
        db += ct.load(DB, index=(group, j), shape=(1, TILE_N), padding_mode=ZERO_PAD)
        ct.store(DW, index=(group, j), tile=dw)
        ct.store(DB, index=(group, j), tile=db)
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


@ct.kernel
def layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, TILE_M: ConstInt, TILE_N: ConstInt):
    col = ct.bid(0)
    dw = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    db = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    for i in range(ct.num_tiles(DW, axis=0, shape=(TILE_M, TILE_N))):
        dw += ct.load(DW, index=(i, col), shape=(TILE_M, TILE_N), padding_mode=ZERO_PAD)
        db += ct.load(DB, index=(i, col), shape=(TILE_M, TILE_N), padding_mode=ZERO_PAD)
    ct.store(FINAL_DW, index=(col,), tile=ct.sum(dw, axis=0).astype(FINAL_DW.dtype))
    ct.store(FINAL_DB, index=(col,), tile=ct.sum(db, axis=0).astype(FINAL_DB.dtype))


def layer_norm_forward(stream, x, w, b, y, mean, rstd, eps, tile_n=1024):
    ct.launch(stream, (x.shape[0],), layer_norm_fwd, (x, w, b, y, mean, rstd, eps, tile_n))


def layer_norm_backward(stream, dy, x, w, mean, rstd, dx, dw_part, db_part, locks, dw, db,
                        tile_n=1024, tile_m=32):
    """``dw_part``/``db_part``: zeroed float32 (groups, N); ``locks``: zeroed int32 (groups,)."""
    ct.launch(stream, (x.shape[0],), layer_norm_bwd_dx_partial_dwdb,
              (dx, dy, dw_part, db_part, x, w, mean, rstd, locks, tile_n))
    ct.launch(stream, (ct.cdiv(x.shape[1], tile_n),), layer_norm_bwd_dwdb,
              (dw_part, db_part, dw, db, tile_m, tile_n))


# ==================================================================================================
# Softmax: B whole rows per block, and one row at a time in a persistent loop
@ct.kernel
def softmax_kernel(x, y, B: ConstInt, N: ConstInt):
    rows = ct.load(x, index=(ct.bid(0), 0), shape=(B, N))
    e = ct.exp(rows - ct.max(rows, axis=1, keepdims=True))
    ct.store(y, index=(ct.bid(0), 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def softmax_per_row_kernel(x, y, ROWS: ConstInt, N: ConstInt):
    for r in range(ct.bid(0), ROWS, ct.num_blocks(0)):
        row = ct.load(x, index=(r, 0), shape=(1, N))
        e = ct.exp(row - ct.max(row, axis=1, keepdims=True))
        ct.store(y, index=(r, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


def softmax(stream, x, y, rows_per_block=16, persistent=False):
    m, n = x.shape
    grid = (ct.cdiv(m, rows_per_block), 1, 1)
    if persistent:
        ct.launch(stream, grid, softmax_per_row_kernel, (x, y, m, n))
    else:
        ct.launch(stream, grid, softmax_kernel, (x, y, rows_per_block, n))


# ==================================================================================================
# AttentionFMHA: online softmax over K/V tiles, causal or not, grouped-query heads
@ct.kernel(occupancy=2)
def fmha_kernel(Q, K, V, Out, qk_scale: float, input_pos: int, TILE_D: ConstInt, H: ConstInt,
                TILE_M: ConstInt, TILE_N: ConstInt, QUERY_GROUP_SIZE: ConstInt,
                CAUSAL: ConstBool, EVEN_K: ConstBool):
    qt = ct.bid(0)
    batch, head = ct.bid(1) // H, ct.bid(1) % H
    kv_head = head // QUERY_GROUP_SIZE
    scale = qk_scale * LOG2_E                   # exp2 below: fold log2(e) into the scale
    q_pos = (qt * TILE_M + ct.arange(TILE_M, dtype=ct.int32) + input_pos)[:, None]
    k_offs = ct.arange(TILE_N, dtype=ct.int32)[None, :]
    m_i = ct.full((TILE_M, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((TILE_M, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TILE_M, TILE_D), 0.0, dtype=ct.float32)
    q = ct.load(Q, index=(batch, head, qt, 0), shape=(1, 1, TILE_M, TILE_D)).reshape(
        (TILE_M, TILE_D))
    kv_len = K.shape[2]
    if CAUSAL:
        last = input_pos + (qt + 1) * TILE_M
        masked_from = min((input_pos + qt * TILE_M) // TILE_N, kv_len // TILE_N)
        kv_tiles = ct.cdiv(min(last, kv_len), TILE_N)
    else:
        masked_from = kv_len // TILE_N
        kv_tiles = ct.cdiv(kv_len, TILE_N)
    for j in range(0, kv_tiles):
        kt = ct.load(K, index=(batch, kv_head, 0, j), shape=(1, 1, TILE_D, TILE_N),
                     order=(0, 1, 3, 2), latency=2).reshape((TILE_D, TILE_N))
        s = ct.mma(q, kt, ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32))
        if (CAUSAL or not EVEN_K) and j >= masked_from:
            k_pos = j * TILE_N + k_offs
            keep = ct.full((TILE_M, TILE_N), True, dtype=ct.bool_)
            if not EVEN_K:
                keep = keep & (k_pos < kv_len)
            if CAUSAL:
                keep = keep & (q_pos >= k_pos)
            s += ct.where(keep, 0.0, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=-1, keepdims=True) * scale)
        p = ct.exp2(s * scale - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.load(V, index=(batch, kv_head, j, 0), shape=(1, 1, TILE_N, TILE_D),
                    latency=4).reshape((TILE_N, TILE_D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_new
    out = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(batch, head, qt, 0),
             tile=out.reshape((1, 1, TILE_M, TILE_D)).astype(Out.dtype))


def fmha(stream, Q, K, V, Out, causal=False, qk_scale=None, input_pos=0, tile_m=128,
         tile_n=128, query_group_size=1):
    batch, heads, q_len, d = Q.shape
    kv_len = K.shape[2]
    if qk_scale is None:
        qk_scale = 1.0 / math.sqrt(d)
    ct.launch(stream, (ct.cdiv(q_len, tile_m), batch * heads, 1), fmha_kernel,
              (Q, K, V, Out, qk_scale, input_pos, d, heads, tile_m, tile_n, query_group_size,
               causal, kv_len % tile_n == 0))


# ==================================================================================================
# MoE: tokens sorted by expert in TILE_M groups; gather token rows, multiply by the expert's
# weights (loaded transposed through order=), scatter the rows back; SiLU(gate) * up between
@ct.kernel
def fused_moe_kernel(A, B, C, topk_weights, sorted_token_ids, sorted_expert_ids,
                     num_token_replicas: int, mul_routed_weight: ConstBool, TILE_M: ConstInt,
                     TILE_N: ConstInt, TILE_K: ConstInt):
    bm, bn = grouped_tile(sorted_token_ids.shape[0], B.shape[1], TILE_M, TILE_N, 8, ct.bid(0))
    token_ids = ct.gather(sorted_token_ids, bm * TILE_M + ct.arange(TILE_M, dtype=ct.int32))
    rows = token_ids // num_token_replicas
    expert = ct.load(sorted_expert_ids, index=bm, shape=())
    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(B.shape[2], TILE_K)):
        cols = k * TILE_K + ct.arange(TILE_K, dtype=ct.int32)
        a = ct.gather(A, (rows[:, None], cols[None, :]))
        w = ct.load(B, (expert, k, bn), shape=(1, TILE_K, TILE_N), order=(0, 2, 1),
                    padding_mode=ZERO_PAD).reshape((TILE_K, TILE_N))
        acc = ct.mma(a, w, acc)
    if mul_routed_weight:
        acc = acc * ct.gather(topk_weights, token_ids)[:, None]
    out_cols = bn * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
    ct.scatter(C, (token_ids[:, None], out_cols[None, :]), ct.astype(acc, C.dtype))


@ct.kernel
def silu_and_mul_kernel(A, B, C, TILE_N: ConstInt):
    row = ct.bid(0)
    a = ct.load(A, (row, 0), (1, TILE_N)).astype(ct.float32)
    b = ct.load(B, (row, 0), (1, TILE_N)).astype(ct.float32)
    sig = ct.truediv(1.0, ct.add(1, ct.exp(-a), flush_to_zero=True), flush_to_zero=True,
                     rounding_mode=ct.RoundingMode.APPROX)
    ct.store(C, (row, 0), ct.mul(ct.mul(a, sig, flush_to_zero=True), b,
                                 flush_to_zero=True).astype(C.dtype))


def moe_align(topk_ids, tile_m, num_experts):
    """Host side (NumPy): the token-replica ids sorted by expert, each expert's run padded to
    a multiple of ``tile_m`` with the id ``num_tokens * topk`` (out of bounds: skipped), and
    the expert of each ``tile_m`` run. Returns int32 arrays."""
    import numpy as np
    flat = np.asarray(topk_ids).reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=num_experts)
    runs = (counts + tile_m - 1) // tile_m
    ids = np.full(int(runs.sum()) * tile_m, flat.size, np.int32)
    experts = np.repeat(np.arange(num_experts, dtype=np.int32), runs)
    start, taken = 0, 0
    for e in range(num_experts):
        ids[start:start + counts[e]] = order[taken:taken + counts[e]]
        start += runs[e] * tile_m
        taken += counts[e]
    return ids, experts


def moe_matmul(stream, A, B, C, topk_weights, sorted_ids, expert_ids, mul_routed_weight,
               num_token_replicas, tiles=(64, 64, 64)):
    """C[t] (+)= A[t // replicas] @ B[expert].T for every sorted token-replica t."""
    tm, tn, tk = tiles
    grid = (ct.cdiv(sorted_ids.shape[0], tm) * ct.cdiv(B.shape[1], tn),)
    ct.launch(stream, grid, fused_moe_kernel,
              (A, B, C, topk_weights, sorted_ids, expert_ids, num_token_replicas,
               mul_routed_weight, tm, tn, tk))


def silu_and_mul(stream, gate, up, out):
    ct.launch(stream, (gate.shape[0],), silu_and_mul_kernel,
              (gate, up, out, next_pow2(gate.shape[1])))


# ==================================================================================================
# FFT: a batched 1-D FFT of size N = F0 * F1 * F2 as three small DFT matmuls with twiddles
# between them (real and imaginary parts packed in the last axis)
@ct.kernel
def fft_kernel(x_packed, y_packed, W0, W1, W2, T0, T1, N: ConstInt, F0: ConstInt,
               F1: ConstInt, F2: ConstInt, BS: ConstInt, D: ConstInt):
    F1F2, F0F2, F0F1 = F1 * F2, F0 * F2, F0 * F1
    X = ct.reshape(ct.load(x_packed, index=(ct.bid(0), 0, 0), shape=(BS, N * 2 // D, D)),
                   (BS, N, 2))
    xr = ct.reshape(ct.extract(X, index=(0, 0, 0), shape=(BS, N, 1)), (BS, F0, F1F2))
    xi = ct.reshape(ct.extract(X, index=(0, 0, 1), shape=(BS, N, 1)), (BS, F0, F1F2))
    w0 = ct.load(W0, index=(0, 0, 0), shape=(F0, F0, 2))
    w0r = ct.reshape(ct.extract(w0, index=(0, 0, 0), shape=(F0, F0, 1)), (1, F0, F0))
    w0i = ct.reshape(ct.extract(w0, index=(0, 0, 1), shape=(F0, F0, 1)), (1, F0, F0))
    w1 = ct.load(W1, index=(0, 0, 0), shape=(F1, F1, 2))
    w1r = ct.reshape(ct.extract(w1, index=(0, 0, 0), shape=(F1, F1, 1)), (1, F1, F1))
    w1i = ct.reshape(ct.extract(w1, index=(0, 0, 1), shape=(F1, F1, 1)), (1, F1, F1))
    w2 = ct.load(W2, index=(0, 0, 0), shape=(F2, F2, 2))
    w2r = ct.reshape(ct.extract(w2, index=(0, 0, 0), shape=(F2, F2, 1)), (1, F2, F2))
    w2i = ct.reshape(ct.extract(w2, index=(0, 0, 1), shape=(F2, F2, 1)), (1, F2, F2))
    t0 = ct.load(T0, index=(0, 0, 0), shape=(F0, F1F2, 2))
    t0r = ct.reshape(ct.extract(t0, index=(0, 0, 0), shape=(F0, F1F2, 1)), (N, 1))
    t0i = ct.reshape(ct.extract(t0, index=(0, 0, 1), shape=(F0, F1F2, 1)), (N, 1))
    t1 = ct.load(T1, index=(0, 0, 0), shape=(F1, F2, 2))
    t1r = ct.reshape(ct.extract(t1, index=(0, 0, 0), shape=(F1, F2, 1)), (F1F2, 1))
    t1i = ct.reshape(ct.extract(t1, index=(0, 0, 1), shape=(F1, F2, 1)), (F1F2, 1))
    # stage 1: DFT of size F0 along axis 1, twiddle, bring F1 to the front
    yr = ct.reshape(ct.matmul(w0r, xr) - ct.matmul(w0i, xi), (BS, N, 1))
    yi = ct.reshape(ct.matmul(w0i, xr) + ct.matmul(w0r, xi), (BS, N, 1))
    xr = ct.reshape(ct.permute(ct.reshape(t0r * yr - t0i * yi, (BS, F0, F1, F2)),
                               (0, 2, 3, 1)), (BS, F1, F0F2))
    xi = ct.reshape(ct.permute(ct.reshape(t0i * yr + t0r * yi, (BS, F0, F1, F2)),
                               (0, 2, 3, 1)), (BS, F1, F0F2))
    # stage 2: DFT of size F1, twiddle, bring F2 to the front
    yr = ct.reshape(ct.matmul(w1r, xr) - ct.matmul(w1i, xi), (BS, F1F2, F0))
    yi = ct.reshape(ct.matmul(w1i, xr) + ct.matmul(w1r, xi), (BS, F1F2, F0))
    xr = ct.reshape(ct.permute(ct.reshape(t1r * yr - t1i * yi, (BS, F1, F2, F0)),
                               (0, 2, 3, 1)), (BS, F2, F0F1))
    xi = ct.reshape(ct.permute(ct.reshape(t1i * yr + t1r * yi, (BS, F1, F2, F0)),
                               (0, 2, 3, 1)), (BS, F2, F0F1))
    # stage 3: DFT of size F2, then the digit-reversed order back to natural order
    yr = ct.matmul(w2r, xr) - ct.matmul(w2i, xi)
    yi = ct.matmul(w2i, xr) + ct.matmul(w2r, xi)
    xr = ct.reshape(ct.permute(ct.reshape(yr, (BS, F2, F0, F1)), (0, 1, 3, 2)), (BS, N, 1))
    xi = ct.reshape(ct.permute(ct.reshape(yi, (BS, F2, F0, F1)), (0, 1, 3, 2)), (BS, N, 1))
    ct.store(y_packed, index=(ct.bid(0), 0, 0),
             tile=ct.reshape(ct.cat((xr, xi), axis=-1), (BS, N * 2 // D, D)))


def fft_twiddles(factors, dtype):
    """Host side (NumPy): the DFT matrices W0, W1, W2 and the twiddles T0, T1 of the
    decomposition, real and imaginary parts in a last axis of 2."""
    import numpy as np
    f0, f1, f2 = factors
    n = f0 * f1 * f2

    def table(rows, cols, m):
        i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        w = np.exp(-2j * np.pi * (i * j) / m)
        return np.ascontiguousarray(np.stack([w.real, w.imag], axis=-1).astype(dtype))
    return (table(f0, f0, f0), table(f1, f1, f1), table(f2, f2, f2), table(f0, f1 * f2, n),
            table(f1, f2, f1 * f2))


def fft(stream, x_packed, y_packed, twiddles, factors, batch_tile=1, pack=64):
    """``x_packed``/``y_packed``: (batch, 2N // pack, pack) interleaved real/imaginary parts."""
    f0, f1, f2 = factors
    n = f0 * f1 * f2
    ct.launch(stream, (ct.cdiv(x_packed.shape[0], batch_tile), 1, 1), fft_kernel,
              (x_packed, y_packed, *twiddles, n, f0, f1, f2, batch_tile, pack))


# ==================================================================================================
# BlockScaledMatMul: fp8 A and B with one float8_e8m0fnu scale per 32 elements along K
@ct.kernel(num_ctas=ct.ByTarget(sm_100=2))
def block_scaled_matmul_kernel(A, A_scale, B, B_scale, C, tm: ConstInt, tn: ConstInt,
                               tk: ConstInt, BLOCK: ConstInt):
    bm, bn = grouped_tile(A.shape[0], B.shape[1], tm, tn, 8, ct.bid(0))
    tks = tk // BLOCK
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ZERO_PAD)
        sa = ct.load(A_scale, index=(bm, k), shape=(tm, tks), padding_mode=ZERO_PAD)
        b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ZERO_PAD)
        sb = ct.load(B_scale, index=(k, bn), shape=(tks, tn), padding_mode=ZERO_PAD)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, index=(bm, bn), tile=acc)


def mxfp8_quantize(t, block=32):
    """Host side (torch): e4m3 values of ``t`` (rows of K) and one power-of-two e8m0 scale per
    ``block`` elements of each row, so that every block's largest value fits e4m3 (448)."""
    import torch
    tb = t.reshape(t.shape[0], -1, block)
    scale = torch.pow(2.0, torch.ceil(torch.log2(
        torch.clamp(tb.abs().amax(-1, keepdim=True) / 448.0, min=1e-12))))
    return (tb / scale).to(torch.float8_e4m3fn).reshape(t.shape), \
        scale.squeeze(-1).to(torch.float8_e8m0fnu)


def block_scaled_matmul(stream, A, A_scale, B, B_scale, C, tiles=(256, 256, 128), block=32):
    tm, tn, tk = tiles
    grid = (ct.cdiv(A.shape[0], tm) * ct.cdiv(B.shape[1], tn), 1, 1)
    ct.launch(stream, grid, block_scaled_matmul_kernel,
              (A, A_scale, B, B_scale, C, tm, tn, tk, block))
