"""The Triton side of the benchmarks, written by us following Triton's published tutorial
algorithms (grouped-ordering matmul, also batched; one-row-per-program softmax, LayerNorm and
RMSNorm; fused attention). Imported only where triton is installed (the GPU machine)."""
import triton
import triton.language as tl


@triton.jit
def _grouped(pid, num_m, num_n, GROUP: tl.constexpr):
    """The tutorial's grouped ordering: GROUP row tiles share each column of B in L2."""
    width = GROUP * num_n
    first_m = (pid // width) * GROUP
    size_m = tl.minimum(num_m - first_m, GROUP)
    return first_m + (pid % width) % size_m, (pid % width) // size_m


@triton.jit
def _k_loop(a, b, K, rk, sak, sbk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The tutorial's K loop: masked (BM, BK) x (BK, BN) tiles accumulated in float32."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        av = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        bv = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(av, bv, acc)
        a += BK * sak
        b += BK * sbk
    return acc


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid_m, pid_n = _grouped(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    _output_tile(a_ptr, b_ptr, c_ptr, pid_m, pid_n, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM, BN, BK)


@triton.jit
def _output_tile(a_ptr, b_ptr, c_ptr, pid_m, pid_n, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Tile (pid_m, pid_n) of C = A @ B, computed and stored (masked at the edges)."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = _k_loop(a, b, K, rk, sak, sbk, BM, BN, BK)
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, c, BM=128, BN=128, BK=64, GROUP=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, GROUP=GROUP, num_warps=8,
                        num_stages=3)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols,
                other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty),
             mask=cols < n_cols)


def softmax(x, out):
    rows, n = x.shape
    block = triton.next_power_of_2(n)
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), n, BLOCK=block,
                            num_warps=16 if block >= 8192 else 8)


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # the grouped matmul above, one batch per program_id(1)
    bid = tl.program_id(1)
    pid_m, pid_n = _grouped(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + bid * sab + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + bid * sbb + rk[:, None] * sbk + rn[None, :] * sbn
    acc = _k_loop(a, b, K, rk, sak, sbk, BM, BN, BK)
    c = c_ptr + bid * scb + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def bmm(a, b, c, BM=128, BN=128, BK=64, GROUP=8):
    nb, M, K = a.shape
    N = b.shape[2]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), nb)
    bmm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=BM, BN=BN,
                     BK=BK, GROUP=GROUP, num_warps=8, num_stages=3)


@triton.jit
def layer_norm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    # Triton's LayerNorm tutorial: one row per program, mean and variance in BLOCK chunks
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + cols, ((x - mean) * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, y, mean, rstd, eps):
    rows, n = x.shape
    block = min(65536 // x.element_size(), triton.next_power_of_2(n))   # the tutorial's choice
    layer_norm_kernel[(rows,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK=block,
                               num_warps=min(max(block // 256, 1), 8))


@triton.jit
def rms_norm_kernel(X, Y, W, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rs = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride + cols, (x * rs * w).to(Y.dtype.element_ty), mask=mask)


def rms_norm(x, w, y, eps):
    rows, n = x.shape
    block = triton.next_power_of_2(n)
    rms_norm_kernel[(rows,)](x, y, w, x.stride(0), n, eps, BLOCK=block,
                             num_warps=min(max(block // 256, 1), 8))


@triton.jit
def _attn_block(acc, l_i, m_i, q, K, V, k_base, v_base, stride_ks, stride_vs, stride_vd, offs_m,
                offs_n, offs_d, lo, hi, qk_scale, BN: tl.constexpr, MASK: tl.constexpr):
    # V through its own strides: Triton's fp8 forward (triton_tutorial_kernels.py) transposes it
    for start_n in range(lo, hi, BN):
        cols = start_n + offs_n
        k = tl.load(K + k_base + cols[None, :] * stride_ks + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        if MASK:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + v_base + cols[:, None] * stride_vs + offs_d[None, :] * stride_vd)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])   # fp8: P in V's e5m2
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attn_kernel(Q, K, V, O, M, sm_scale, S, stride_h, stride_s, stride_vh, stride_vs, stride_vd,
                D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr,
                STORE_M: tl.constexpr):
    # Triton's fused-attention tutorial (FlashAttention-2 forward): off-diagonal key blocks
    # without a mask, then the diagonal ones with it; with STORE_M each row's M = m + log2(l)
    # (the scaled log2 domain) is saved for the backward
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * stride_h
    v_base = bh * stride_vh
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :])
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        acc, l_i, m_i = _attn_block(acc, l_i, m_i, q, K, V, base, v_base, stride_s, stride_vs,
                                    stride_vd, offs_m, offs_n, offs_d, 0, start_m * BM, qk_scale,
                                    BN, False)
        acc, l_i, m_i = _attn_block(acc, l_i, m_i, q, K, V, base, v_base, stride_s, stride_vs,
                                    stride_vd, offs_m, offs_n, offs_d, start_m * BM,
                                    (start_m + 1) * BM, qk_scale, BN, True)
    else:
        acc, l_i, m_i = _attn_block(acc, l_i, m_i, q, K, V, base, v_base, stride_s, stride_vs,
                                    stride_vd, offs_m, offs_n, offs_d, 0, S, qk_scale, BN, False)
    if STORE_M:
        tl.store(M + bh * S + offs_m, m_i + tl.math.log2(l_i))
    o = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * stride_s + offs_d[None, :], o.to(O.dtype.element_ty))


def attention(q, k, v, o, sm_scale, causal, BM=128, BN=64, M=None):
    """q, k, o: contiguous (batch * heads, S, D); v the same shape with any strides (the
    tutorial's fp8 forward stores it transposed); ``M`` (B * H, S) float32, if given, receives
    each row's log2-sum-exp for triton_tutorial_kernels.attention_bwd."""
    bh, s, d = q.shape
    attn_kernel[(s // BM, bh)](q, k, v, o, M, sm_scale, s, q.stride(0), q.stride(1), *v.stride(),
                               D=d, BM=BM, BN=BN, CAUSAL=causal, STORE_M=M is not None,
                               num_warps=4 if BM == 64 else 8,
                               num_stages=3 if BN == 64 else 2)
