"""Triton versions of the tutorials that benchmarks/triton_kernels.py lacks (vector add, seeded
dropout, libdevice asin, LayerNorm backward with locks, grouped GEMM, persistent matmul), written
by us following Triton's published tutorial algorithms. Imported only where triton is installed
(the GPU machine)."""
import torch
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice
except ImportError:                                   # older layouts keep it under cuda/
    from triton.language.extra.cuda import libdevice

from triton_kernels import _grouped, _output_tile


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
def grouped_gemm_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, lds, groups, NUM_SM: tl.constexpr,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the tutorial's schedule: NUM_SM programs walk group 0's tiles, then group 1's, ...
    tile_idx = tl.program_id(0)
    first = 0
    for g in range(groups):
        gm = tl.load(sizes + g * 3)
        gn = tl.load(sizes + g * 3 + 1)
        gk = tl.load(sizes + g * 3 + 2)
        num_n = tl.cdiv(gn, BN)
        tiles = tl.cdiv(gm, BM) * num_n
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


def grouped_gemm(As, Bs, Cs, BM=128, BN=128, BK=32):
    """Cs[g] = As[g] @ Bs[g] (fp16, contiguous, every size a multiple of its tile)."""
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
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    grouped_gemm_kernel[(sms,)](*ptrs, sizes, lds, len(As), NUM_SM=sms, BM=BM, BN=BN, BK=BK)


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


def matmul_persistent(a, b, c, BM=128, BN=128, BK=64, GROUP=8):
    M, K = a.shape
    N = b.shape[1]
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    matmul_persistent_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                                   GROUP=GROUP, NUM_SMS=grid[0], num_warps=8, num_stages=3)
