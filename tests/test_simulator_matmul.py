"""Simulator: mmaf/mmai in K loops (fp16, bf16, tf32, fp8, int8), batched 3-D mma, and an
attention-like loop (online softmax) against NumPy."""
import time

import numpy as np
import pytest

from tilejit.tileir import I32, Module, attrs as A, ptr, tile
from simulator_helpers import NP, fn, random_tile, run

from tileir_cases import matmul_module


def matmul(mem_elem, mma_elem=None, acc_elem="f32", bm=32, bn=32, bk=16, signed=(True, True)):
    """C[M,N] (acc_elem) = A[M,K] @ B[K,N] with a ``for`` over K tiles; inputs are converted to
    ``mma_elem`` in the kernel when it differs from the memory type."""
    mma_elem = mma_elem or mem_elem
    arr = [ptr(mem_elem), I32, I32, I32]
    f, b = fn("mm", [ptr(acc_elem), I32, I32, I32] + arr + arr)
    bx, by, _ = b.get_tile_block_id()

    def view(i, ts):
        p, m, n, s = f.args[4 * i:4 * i + 4]
        return b.make_partition_view(b.make_tensor_view(p, [m, n], [s, 1]), ts, padding="zero")
    c, a, bb = view(0, (bm, bn)), view(1, (bm, bk)), view(2, (bk, bn))
    zero, one = b.constant(0, I32), b.constant(1, I32)
    acc0 = b.constant(0, tile(acc_elem, (bm, bn)))
    loop = b.for_(zero, b.get_index_space_shape(a)[1], one, [acc0])
    k, acc = loop.regions[0].args
    with b.at(loop.regions[0]):
        ta, _ = b.load_view_tko(a, [bx, k])
        tb, _ = b.load_view_tko(bb, [k, by])
        if mma_elem != mem_elem:
            ta, tb = b.ftof(ta, mma_elem), b.ftof(tb, mma_elem)
        if acc_elem == "i32":
            r = b.mmai(ta, tb, acc, *signed)
        else:
            r = b.mmaf(ta, tb, acc)
        b.continue_([r])
    b.store_view_tko(loop.results[0], c, [bx, by])
    b.return_()
    return Module("mm", [f])


def _run_mm(dev, module, A_, B_, acc_dt, bm, bn):
    M, K = A_.shape
    N = B_.shape[1]
    pc = dev.put(np.zeros((M, N), acc_dt))
    run(module, (-(-M // bm), -(-N // bn), 1),
        [pc, M, N, N, dev.put(A_), M, K, K, dev.put(B_), K, N, N])
    return dev.get(pc, (M, N), acc_dt)


@pytest.mark.parametrize("mem_elem,mma_elem,tol", [("f16", None, 1e-5), ("bf16", None, 1e-5),
                                                   ("f32", "tf32", 1e-5), ("f32", None, 1e-5),
                                                   ("f16", "f8E4M3FN", 1e-5),
                                                   ("f32", "f8E5M2", 1e-5)])
def test_matmul_k_loop_ragged_sizes(dev, mem_elem, mma_elem, tol):
    M, N, K = 70, 45, 50                         # no dimension is a multiple of its tile
    A_ = random_tile(mem_elem, (M, K), 1, -2, 2)
    B_ = random_tile(mem_elem, (K, N), 2, -2, 2)
    got = _run_mm(dev, matmul(mem_elem, mma_elem), A_, B_, np.float32, 32, 32)
    ea, eb = A_.astype(np.float32), B_.astype(np.float32)
    if mma_elem == "tf32":
        from tilejit.simulator.numerics import round_tf32
        ea, eb = round_tf32(ea), round_tf32(eb)
    elif mma_elem:
        m = 448.0 if mma_elem == "f8E4M3FN" else 57344.0
        ea, eb = (np.clip(x, -m, m).astype(NP[mma_elem]).astype(np.float32) for x in (ea, eb))
    ref = ea.astype(np.float64) @ eb.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_matmul_f16_accumulator(dev):
    A_ = random_tile("f16", (40, 24), 3, -1, 1)
    B_ = random_tile("f16", (24, 40), 4, -1, 1)
    got = _run_mm(dev, matmul("f16", acc_elem="f16"), A_, B_, np.float16, 32, 32)
    ref = A_.astype(np.float32) @ B_.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), ref,
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("signed", [(True, True), (False, True), (False, False)])
def test_mmai_int8(dev, signed):
    M, N, K = 40, 36, 70
    A_, B_ = random_tile("i8", (M, K), 5), random_tile("i8", (K, N), 6)
    got = _run_mm(dev, matmul("i8", acc_elem="i32", signed=signed), A_, B_, np.int32, 32, 32)
    a = A_.astype(np.int64) if signed[0] else A_.view(np.uint8).astype(np.int64)
    b = B_.astype(np.int64) if signed[1] else B_.view(np.uint8).astype(np.int64)
    np.testing.assert_array_equal(got, (a @ b).astype(np.int32))


def test_batched_3d_mmaf(dev):
    f, b = fn("bmm", [ptr("f32"), ptr("f16"), ptr("f16")])
    z = b.constant(0, I32)

    def load(p, shape):
        tv = b.make_tensor_view(p, list(shape), [shape[1] * shape[2], shape[2], 1])
        return b.load_view_tko(b.make_partition_view(tv, shape), [z, z, z])[0]
    a, bb = load(f.args[1], (3, 16, 8)), load(f.args[2], (3, 8, 32))
    r = b.mmaf(a, bb, b.constant(1.5, tile("f32", (3, 16, 32))))
    tv = b.make_tensor_view(f.args[0], [3, 16, 32], [512, 32, 1])
    b.store_view_tko(r, b.make_partition_view(tv, (3, 16, 32)), [z, z, z])
    b.return_()
    A_, B_ = random_tile("f16", (3, 16, 8), 7), random_tile("f16", (3, 8, 32), 8)
    out = dev.empty((3, 16, 32), np.float32)
    run(Module("bmm", [f]), (1, 1, 1), [out, dev.put(A_), dev.put(B_)])
    ref = A_.astype(np.float64) @ B_.astype(np.float64) + 1.5
    np.testing.assert_allclose(dev.get(out, (3, 16, 32), np.float32), ref, rtol=1e-5)


def test_matmul_module_256_cubed_fp16(dev):
    M = N = K = 256
    A_ = random_tile("f16", (M, K), 9, -1, 1)
    B_ = random_tile("f16", (K, N), 10, -1, 1)
    pc = dev.put(np.zeros((M, N), np.float32))
    t0 = time.perf_counter()
    run(matmul_module(), (4, 4, 1), [pc, M, N, N, 1, dev.put(A_), M, K, K, 1, dev.put(B_), K, N,
                                     N, 1])
    elapsed = time.perf_counter() - t0
    ref = A_.astype(np.float64) @ B_.astype(np.float64)
    np.testing.assert_allclose(dev.get(pc, (M, N), np.float32), ref, rtol=1e-4, atol=1e-4)
    print(f"256^3 fp16 matmul (64x64x32 tiles): {elapsed * 1e3:.1f} ms")


# --- attention ---------------------------------------------------------------------------------
def attention_module(bm=64, bn=64, d=64, scale=0.125):
    """O = softmax(Q K^T * scale) V, one (bm, d) query tile per block, online softmax over key
    tiles; keys past the sequence length are masked with -inf."""
    f, b = fn("attn", [ptr("f32"), ptr("f16"), ptr("f16"), ptr("f16"), I32])
    po, pq, pk, pv, S = f.args
    bx = b.get_tile_block_id()[0]
    zero, one = b.constant(0, I32), b.constant(1, I32)

    def tv(p):
        return b.make_tensor_view(b.assume(p, A.DivBy(16)), [S, d], [d, 1])
    q, _ = b.load_view_tko(b.make_partition_view(tv(pq), (bm, d), padding="zero"), [bx, zero])
    kt_view = b.make_partition_view(tv(pk), (d, bn), dim_map=(1, 0), padding="zero")
    v_view = b.make_partition_view(tv(pv), (bn, d), padding="zero")
    nkv = b.get_index_space_shape(v_view)[0]
    m0 = b.constant(float("-inf"), tile("f32", (bm,)))
    l0 = b.constant(0.0, tile("f32", (bm,)))
    acc0 = b.constant(0.0, tile("f32", (bm, d)))
    cols = b.broadcast(b.reshape(b.iota(tile("i32", (bn,))), (1, bn)), (bm, bn))
    loop = b.for_(zero, nkv, one, [m0, l0, acc0])
    j, m, l_, acc = loop.regions[0].args

    def rows(x):                                    # (bm,) -> (bm, n)
        return lambda n: b.broadcast(b.reshape(x, (bm, 1)), (bm, n))

    def reduce(x, name, ident):
        r = b.reduce([x], 1, [A.TypedValue(ident, "f32")])
        with b.at(r.regions[0]):
            e, a = r.regions[0].args
            b.yield_([b.binary(name, e, a, **({"rounding_mode": "nearest_even"}
                                              if name == "addf" else {}))])
        return r.results[0]
    with b.at(loop.regions[0]):
        kt, _ = b.load_view_tko(kt_view, [zero, j])
        s = b.mmaf(q, kt, b.constant(0.0, tile("f32", (bm, bn))))
        s = b.mulf(s, b.constant(scale, tile("f32", (bm, bn))))
        start = b.broadcast(b.reshape(b.binary("muli", j, b.constant(bn, I32)), (1, 1)), (bm, bn))
        valid = b.cmpi("less_than", b.binary("addi", cols, start),
                       b.broadcast(b.reshape(S, (1, 1)), (bm, bn)), "signed")
        s = b.select(valid, s, b.constant(float("-inf"), tile("f32", (bm, bn))))
        m_new = b.binary("maxf", m, reduce(s, "maxf", float("-inf")))
        alpha = b.unary("exp", b.subf(m, m_new))
        p = b.unary("exp", b.subf(s, rows(m_new)(bn)))
        l_new = b.addf(b.mulf(l_, alpha), reduce(p, "addf", 0.0))
        vt, _ = b.load_view_tko(v_view, [j, zero])
        acc_new = b.mmaf(b.ftof(p, "f16"), vt, b.mulf(acc, rows(alpha)(d)))
        b.continue_([m_new, l_new, acc_new])
    out = b.divf(loop.results[2], rows(loop.results[1])(d))
    ov = b.make_partition_view(b.make_tensor_view(po, [S, d], [d, 1]), (bm, d))
    b.store_view_tko(out, ov, [bx, zero])
    b.return_()
    return Module("attn", [f])


def attention_reference(q, k, v, scale):
    s = q.astype(np.float64) @ k.astype(np.float64).T * scale
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("seq", [200, 512])
def test_attention_like_loop(dev, seq):
    d = 64
    q, k, v = (random_tile("f16", (seq, d), s, -1, 1) for s in (11, 12, 13))
    out = dev.put(np.zeros((seq, d), np.float32))
    t0 = time.perf_counter()
    run(attention_module(d=d), (-(-seq // 64), 1, 1), [out, dev.put(q), dev.put(k), dev.put(v),
                                                       seq])
    elapsed = time.perf_counter() - t0
    np.testing.assert_allclose(dev.get(out, (seq, d), np.float32),
                               attention_reference(q, k, v, 0.125), rtol=2e-2, atol=2e-3)
    print(f"attention seq={seq} d={d}: {elapsed * 1e3:.1f} ms")

