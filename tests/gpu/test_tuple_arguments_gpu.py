"""Tuples of arrays as one argument on the device (issue 25 item 1): a grouped GEMM whose group
is chosen at run time per block (16 groups of different sizes, ~2000 blocks) and an all-gather
matmul over shards of different sizes."""
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
