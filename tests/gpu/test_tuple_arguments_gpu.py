"""Tuples of arrays as one argument on the device (issue 25 item 1): a grouped GEMM whose group
is chosen at run time per block (16 groups of different sizes, ~2000 blocks) and an all-gather
matmul over shards of different sizes; t08's grouped GEMM prepared once on torch tensors."""
import numpy as np
import pytest

import tuple_arg_cases as C

pytestmark = pytest.mark.gpu


def test_grouped_gemm_on_the_device():
    sizes = [int(s) for s in np.random.default_rng(3).integers(100, 2000, 16)]
    got, want = C.run_grouped_gemm(sizes, n=512, k=256, bm=64, bn=64, bk=64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-2, atol=2e-2)


def test_all_gather_matmul_on_the_device():
    got, want = C.run_all_gather_matmul([1024, 512, 2048, 256], k=256, n=512, bm=64, bn=64,
                                        bk=64)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_a_prepared_grouped_gemm_matches_torch():
    """Triton tutorial 08's kernel on torch CUDA tensors (the outputs ``tile.atomic`` in a tuple),
    prepared once, launched on two sets of inputs written in place; the C path takes it."""
    torch = pytest.importorskip("torch")
    import tilejit as tile
    from tilejit import native
    T = C.t08()
    sizes = [1024, 384, 200]                        # 200: partial tiles
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(n):
        return torch.randn(n, n, device="cuda", dtype=torch.float16, generator=gen)
    As, Bs = tuple(randn(n) for n in sizes), tuple(randn(n) for n in sizes)
    Cs = tuple(torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
               for n in sizes)
    torch.cuda.synchronize()
    s = tile.Device(0).new_stream()
    blocks = tile.Device(0).multiprocessor_count
    with T.grouped_gemm(As, Bs, tuple(tile.atomic(c) for c in Cs), 128, 128, 32) \
            .grid((blocks, 1, 1)).prepare(s) as p:
        assert (p._c is not None) == native.enabled()
        for _ in range(2):
            p.launch()
            s.synchronize()
            for a, b, c in zip(As, Bs, Cs):
                torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2,
                                           atol=0.1)
            for t in As + Bs:
                t.copy_(randn(t.shape[0]))          # the next launch reads the same memory
            for c in Cs:
                c.fill_(float("nan"))
            torch.cuda.synchronize()
