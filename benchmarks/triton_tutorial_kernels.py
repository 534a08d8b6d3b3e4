"""Triton versions of the tutorials that benchmarks/triton_kernels.py lacks (vector add, seeded
dropout, libdevice asin, LayerNorm backward with locks, attention backward, grouped GEMM,
persistent matmul with pointers and with TMA descriptors), written by us following Triton's
published tutorial algorithms. Imported only where triton is installed (the GPU machine)."""
import torch
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice
except ImportError:                                   # older layouts keep it under cuda/
    from triton.language.extra.cuda import libdevice

from triton_kernels import _grouped, _output_tile

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:                                   # Triton before 3.4: no host descriptors
    TensorDescriptor = None


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def add(x, y, out, BLOCK=1024):
    n = out.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p                    # the mask regenerated from the seed
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def seeded_dropout(x, out, p, seed, BLOCK=1024):
    n = out.numel()
    seeded_dropout_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, p, seed, BLOCK=BLOCK)


@triton.jit
def asin_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, libdevice.asin(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def asin(x, out, BLOCK=1024):
    n = out.numel()
    asin_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)


@triton.jit
def layer_norm_bwd_dx_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # one row per program: dx, then its dw/db row added to row (row % GROUP) of the partial
    # buffers under that row's lock; Count (after the GROUP locks) marks a buffer row written
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    lock_id = row % GROUP
    lock = Lock + lock_id
    count = Lock + GROUP + lock_id
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + row * stride + cols, ((wdy - (xhat * c1 + c2)) * rstd).to(DX.dtype.element_ty),
             mask=mask)
    dw = dy * xhat
    db = dy
    DW += lock_id * N + cols
    DB += lock_id * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        dw += tl.load(DW, mask=mask)
        db += tl.load(DB, mask=mask)
    tl.store(DW, dw, mask=mask)
    tl.store(DB, db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def column_sum_kernel(DW, DB, FINAL_DW, FINAL_DB, M, N, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    dw = tl.zeros((BM, BN), dtype=tl.float32)
    db = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(0, M, BM):
        rows = i + tl.arange(0, BM)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)


def layer_norm_bwd(x, w, dy, mean, rstd, dx, dw, db, group=64):
    """dx, dw, db (float32 dw/db) of LayerNorm; the lock, count and partial buffers are made
    per call, as in the tutorial (their zeroing is part of the backward's cost)."""
    m, n = x.shape
    block = triton.next_power_of_2(n)
    locks = torch.zeros(2 * group, dtype=torch.int32, device=x.device)
    dw_part = torch.zeros((group, n), dtype=torch.float32, device=x.device)
    db_part = torch.zeros((group, n), dtype=torch.float32, device=x.device)
    layer_norm_bwd_dx_kernel[(m,)](dx, dy, dw_part, db_part, x, w, mean, rstd, locks,
                                   x.stride(0), n, GROUP=group, BLOCK=block,
                                   num_warps=min(max(block // 256, 1), 8))
    column_sum_kernel[(triton.cdiv(n, 128),)](dw_part, db_part, dw, db, group, n, BM=32, BN=128)


@triton.jit
def _group_tiles(sizes, g, BM: tl.constexpr, BN: tl.constexpr):
    """Group g's (M, N, K), its column count of output tiles and its number of output tiles."""
    gm = tl.load(sizes + g * 3)
    gn = tl.load(sizes + g * 3 + 1)
    gk = tl.load(sizes + g * 3 + 2)
    num_n = tl.cdiv(gn, BN)
    return gm, gn, gk, num_n, tl.cdiv(gm, BM) * num_n


@triton.jit
def grouped_gemm_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, lds, groups, NUM_SM: tl.constexpr,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the tutorial's schedule: NUM_SM programs walk group 0's tiles, then group 1's, ...
    tile_idx = tl.program_id(0)
    first = 0
    for g in range(groups):
        gm, gn, gk, num_n, tiles = _group_tiles(sizes, g, BM, BN)
        while tile_idx >= first and tile_idx < first + tiles:
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            a_ptr = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
            t = tile_idx - first
            rm = (t // num_n) * BM + tl.arange(0, BM)
            rn = (t % num_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a = a_ptr + rm[:, None] * lda + rk[None, :]
            b = b_ptr + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for _ in range(0, tl.cdiv(gk, BK)):
                acc += tl.dot(tl.load(a), tl.load(b))      # sizes: multiples of the tiles
                a += BK
                b += BK * ldb
            tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16))
            tile_idx += NUM_SM
        first = first + tiles


@triton.jit
def grouped_gemm_tma_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, lds, groups, NUM_SM: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the tutorial's TMA variant: the same schedule, each group's tiles through tensor
    # descriptors made on the device (B (K, N) row-major here, so no transpose)
    tile_idx = tl.program_id(0)
    first = 0
    for g in range(groups):
        gm, gn, gk, num_n, tiles = _group_tiles(sizes, g, BM, BN)
        if tile_idx >= first and tile_idx < first + tiles:
            a_desc = tl.make_tensor_descriptor(
                tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16)), shape=[gm, gk],
                strides=[tl.load(lds + g * 3), 1], block_shape=[BM, BK])
            b_desc = tl.make_tensor_descriptor(
                tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16)), shape=[gk, gn],
                strides=[tl.load(lds + g * 3 + 1), 1], block_shape=[BK, BN])
            c_desc = tl.make_tensor_descriptor(
                tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16)), shape=[gm, gn],
                strides=[tl.load(lds + g * 3 + 2), 1], block_shape=[BM, BN])
            while tile_idx >= first and tile_idx < first + tiles:
                t = tile_idx - first
                om = (t // num_n) * BM
                on = (t % num_n) * BN
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for kk in range(0, tl.cdiv(gk, BK)):
                    acc += tl.dot(a_desc.load([om, kk * BK]), b_desc.load([kk * BK, on]))
                c_desc.store([om, on], acc.to(tl.float16))
                tile_idx += NUM_SM
        first = first + tiles


def grouped_gemm(As, Bs, Cs, BM=128, BN=128, BK=32, tma=False):
    """Cs[g] = As[g] @ Bs[g] (fp16, contiguous, every size a multiple of its tile); ``tma``:
    the tutorial's TMA variant (device-made tensor descriptors, Triton 3.4+)."""
    dev = As[0].device
    for a, b in zip(As, Bs):
        assert a.shape[0] % BM == 0 and b.shape[1] % BN == 0 and a.shape[1] % BK == 0, \
            "the tutorial's grouped GEMM has no masks: sizes must be multiples of the tiles"
    ptrs = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=dev)
            for ts in (As, Bs, Cs)]
    sizes = torch.tensor([[a.shape[0], b.shape[1], a.shape[1]] for a, b in zip(As, Bs)],
                         dtype=torch.int32, device=dev)
    lds = torch.tensor([[a.stride(0), b.stride(0), c.stride(0)] for a, b, c in zip(As, Bs, Cs)],
                       dtype=torch.int32, device=dev)
    sms = _sm_count(dev)
    kernel = grouped_gemm_kernel
    if tma:
        if not hasattr(tl, "make_tensor_descriptor"):
            raise RuntimeError(f"Triton {triton.__version__} has no device tensor descriptors "
                               "(tl.make_tensor_descriptor, Triton 3.4+)")
        # descriptors made on the device live in a global scratch buffer Triton asks for
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                     device=dev))
        kernel = grouped_gemm_tma_kernel
    kernel[(sms,)](*ptrs, sizes, lds, len(As), NUM_SM=sms, BM=BM, BN=BN, BK=BK)


@triton.jit
def matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             GROUP: tl.constexpr, NUM_SMS: tl.constexpr):
    # one program per SM, each walking the output tiles (grouped order) with a stride of the grid
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS):
        pid_m, pid_n = _grouped(t, num_m, num_n, GROUP)
        _output_tile(a_ptr, b_ptr, c_ptr, pid_m, pid_n, M, N, K, sam, sak, sbk, sbn, scm, scn,
                     BM, BN, BK)


def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def matmul_persistent(a, b, c, BM=128, BN=128, BK=64, GROUP=8, sms=None):
    M, K = a.shape
    N = b.shape[1]
    sms = sms or _sm_count(a.device)
    grid = (min(sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    matmul_persistent_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                                   GROUP=GROUP, NUM_SMS=grid[0], num_warps=8, num_stages=3)


@triton.jit
def matmul_tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr,
                                 BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                                 NUM_SMS: tl.constexpr, B_T: tl.constexpr):
    # the tutorial's TMA persistent variant: tiles move through host-made tensor descriptors
    # (the TMA unit; out-of-bounds parts read as zero and are not written); B_T: b_desc holds
    # B transposed, (N, K) row-major, as the tutorial gives fp8's B
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS):
        pid_m, pid_n = _grouped(t, num_m, num_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            if B_T:
                b = b_desc.load([pid_n * BN, ki * BK]).T
            else:
                b = b_desc.load([ki * BK, pid_n * BN])
            acc = tl.dot(a_desc.load([pid_m * BM, ki * BK]), b, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


def matmul_tma_persistent(a, b, c, BM=128, BN=128, BK=64, GROUP=8, sms=None):
    """C = A @ B with TMA descriptors (A (M, K) and C row-major; B (K, N) row-major, or the
    transpose of a row-major (N, K) tensor as the tutorial's fp8 B), one wave of SMs."""
    if TensorDescriptor is None:
        raise RuntimeError(f"Triton {triton.__version__} has no host tensor descriptors "
                           "(triton.tools.tensor_descriptor, Triton 3.4+)")
    M, K = a.shape
    N = b.shape[1]
    sms = sms or _sm_count(a.device)
    grid = (min(sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    b_t = b.stride(0) == 1 and b.stride(1) != 1            # K contiguous: describe (N, K)
    descs = [TensorDescriptor.from_tensor(t, block) for t, block in
             ((a, [BM, BK]), (b.T, [BN, BK]) if b_t else (b, [BK, BN]), (c, [BM, BN]))]
    matmul_tma_persistent_kernel[grid](*descs, M, N, K, BM=BM, BN=BN, BK=BK, GROUP=GROUP,
                                       NUM_SMS=grid[0], B_T=b_t, num_warps=8, num_stages=3)


@triton.jit
def attn_bwd_preprocess_kernel(O, DO, Delta, S, BM: tl.constexpr, D: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    bh = tl.program_id(1)
    offs = bh.to(tl.int64) * S * D + offs_m[:, None] * D + tl.arange(0, D)[None, :]
    o = tl.load(O + offs)
    do = tl.load(DO + offs).to(tl.float32)
    tl.store(Delta + bh * S + offs_m, tl.sum(o * do, axis=1))


@triton.jit
def _attn_bwd_dkdv(dk, dv, Q, k, v, DO, M, Delta, start_n, start_m, num_steps,
                   BM1: tl.constexpr, BN1: tl.constexpr, D: tl.constexpr, MASK: tl.constexpr):
    # dK and dV of one K/V block over num_steps query blocks, working on the transposes
    offs_n = start_n + tl.arange(0, BN1)
    offs_d = tl.arange(0, D)
    curr_m = start_m
    for _ in range(num_steps):
        offs_m = curr_m + tl.arange(0, BM1)
        qT = tl.load(Q + offs_m[None, :] * D + offs_d[:, None])
        m = tl.load(M + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) - m[None, :])          # k is pre-scaled
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(DO + offs_m[:, None] * D + offs_d[None, :])
        dv += tl.dot(pT.to(tl.float16), do)
        Di = tl.load(Delta + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = (pT * (dpT - Di[None, :])).to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        curr_m += BM1
    return dk, dv


@triton.jit
def _attn_bwd_dq(dq, q, K, V, do, m, Di, start_m, start_n, num_steps, BM2: tl.constexpr,
                 BN2: tl.constexpr, D: tl.constexpr, MASK: tl.constexpr):
    # dQ of one query block over num_steps K/V blocks
    offs_m = start_m + tl.arange(0, BM2)
    offs_d = tl.arange(0, D)
    curr_n = start_n
    for _ in range(num_steps):
        offs_n = curr_n + tl.arange(0, BN2)
        kT = tl.load(K + offs_n[None, :] * D + offs_d[:, None])
        vT = tl.load(V + offs_n[None, :] * D + offs_d[:, None])
        p = tl.math.exp2(tl.dot(q, kT) - m)
        if MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = (p * (dp - Di[:, None])).to(tl.float16)
        dq += tl.dot(ds, tl.trans(kT))
        curr_n += BN2
    return dq


@triton.jit
def attn_bwd_kernel(Q, K, V, sm_scale, DO, DQ, DK, DV, M, Delta, S, BM1: tl.constexpr,
                    BN1: tl.constexpr, BM2: tl.constexpr, BN2: tl.constexpr,
                    SLICE: tl.constexpr, D: tl.constexpr):
    # the tutorial's causal backward: program pid computes dK/dV of K/V block pid (the diagonal
    # query blocks in slices of BM1 / SLICE with the mask, the rest without), then dQ of query
    # block pid (diagonal K/V blocks masked, in slices, then the ones left of them)
    LN2: tl.constexpr = 0.6931471824645996
    bh = tl.program_id(2)
    adj = bh.to(tl.int64) * S * D
    pid = tl.program_id(0)
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += bh.to(tl.int64) * S
    Delta += bh.to(tl.int64) * S
    offs_d = tl.arange(0, D)

    start_n = pid * BN1
    MASK_BM1: tl.constexpr = BM1 // SLICE
    offs_n = start_n + tl.arange(0, BN1)
    dv = tl.zeros([BN1, D], dtype=tl.float32)
    dk = tl.zeros([BN1, D], dtype=tl.float32)
    k = tl.load(K + offs_n[:, None] * D + offs_d[None, :])
    v = tl.load(V + offs_n[:, None] * D + offs_d[None, :])
    num_steps = BN1 // MASK_BM1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, DO, M, Delta, start_n, start_n, num_steps,
                            MASK_BM1, BN1, D, True)
    start_m = start_n + num_steps * MASK_BM1
    num_steps = (S - start_m) // BM1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, DO, M, Delta, start_n, start_m, num_steps,
                            BM1, BN1, D, False)
    tl.store(DV + offs_n[:, None] * D + offs_d[None, :], dv.to(DV.dtype.element_ty))
    tl.store(DK + offs_n[:, None] * D + offs_d[None, :], (dk * sm_scale).to(DK.dtype.element_ty))

    start_m = pid * BM2
    end_n = start_m + BM2
    MASK_BN2: tl.constexpr = BN2 // SLICE
    offs_m = start_m + tl.arange(0, BM2)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    do = tl.load(DO + offs_m[:, None] * D + offs_d[None, :])
    m = tl.load(M + offs_m)[:, None]
    Di = tl.load(Delta + offs_m)
    dq = tl.zeros([BM2, D], dtype=tl.float32)
    num_steps = BM2 // MASK_BN2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, Di, start_m, end_n - num_steps * MASK_BN2, num_steps,
                      BM2, MASK_BN2, D, True)
    end_n -= num_steps * MASK_BN2
    num_steps = end_n // BN2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, Di, start_m, end_n - num_steps * BN2, num_steps,
                      BM2, BN2, D, False)
    tl.store(DQ + offs_m[:, None] * D + offs_d[None, :], (dq * LN2).to(DQ.dtype.element_ty))


def attention_bwd(q, k, v, o, do, M, dq, dk, dv, sm_scale):
    """The tutorial's backward (causal only, as the tutorial's): dq, dk, dv of
    ``triton_kernels.attention(..., causal=True, M=M)``; all (batch * heads, S, D) contiguous
    fp16, S a multiple of 128. Its tiles: BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 32, 128, 128, 32,
    BLK_SLICE_FACTOR 2, 4 warps, 5 stages; K pre-scaled by sm_scale / ln 2 (timed, as there)."""
    bh, s, d = q.shape
    assert s % 128 == 0, "the tutorial's backward has no masks for a ragged end"
    bm1, bn1, bm2, bn2 = 32, 128, 128, 32
    arg_k = k * (sm_scale * 1.4426950408889634)
    delta = torch.empty_like(M)
    attn_bwd_preprocess_kernel[(s // 128, bh)](o, do, delta, s, BM=128, D=d)
    attn_bwd_kernel[(s // bn1, 1, bh)](q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta, s,
                                       BM1=bm1, BN1=bn1, BM2=bm2, BN2=bn2, SLICE=2, D=d,
                                       num_warps=4, num_stages=5)
