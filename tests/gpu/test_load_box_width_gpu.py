"""load(box_width=...) on the GPU: tiles read through split views (TMA boxes of one 128-byte
line) are the same tiles, padding included, in a plain kernel and in the gallery norms of 1K-2K
fp16 rows (1K rows take ROW_BOX), checked against NumPy."""
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from test_load_box_width import row_max  # noqa: E402  (the CPU tests' kernel)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import layernorm as LN  # noqa: E402
import rmsnorm as RN  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n,box", [(1024, 64), (960, 64), (4000, 32), (1000, 8)])
def test_split_loads_read_the_same_tile(n, box):
    rng = np.random.default_rng(n)
    xn = rng.standard_normal((4096, n)).astype(np.float16)
    wn = rng.standard_normal(n).astype(np.float16)
    bn = 1 << (n - 1).bit_length()
    x, w = api.from_numpy(xn).sync(), api.from_numpy(wn).sync()
    z = api.full((4096, n), np.nan, tile.float16).sync()
    row_max(z.partition((4, bn)), x, w, box).sync()
    xf = xn.astype(np.float32)
    ref = xf + xf.max(1, keepdims=True) + wn.astype(np.float32)
    np.testing.assert_allclose(z.to_numpy().astype(np.float32), ref, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("n", [1024, 2048, 1016])
def test_the_gallery_norms_of_1k_2k_rows(n):
    rng = np.random.default_rng(n)
    m = 8192
    xn = (rng.standard_normal((m, n)) + 1.0).astype(np.float16)
    wn, bn_ = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    x, w, b = (api.from_numpy(a).sync() for a in (xn, wn, bn_))
    width = 1 << (n - 1).bit_length()
    xf, wf, bf = (a.astype(np.float32) for a in (xn, wn, bn_))
    y = api.full((m, n), np.nan, tile.float16).sync()
    mean, rstd = api.zeros((m,)).sync(), api.zeros((m,)).sync()
    LN.layernorm_fwd(y.partition((8, width)), x, w, b, tile.atomic(mean), tile.atomic(rstd),
                     1e-5).sync()
    mu, sd = xf.mean(1, keepdims=True), np.sqrt(xf.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.to_numpy().astype(np.float32), (xf - mu) / sd * wf + bf,
                               rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(mean.to_numpy(), mu[:, 0], rtol=1e-3, atol=1e-3)
    z = api.full((m, n), np.nan, tile.float16).sync()
    RN.rmsnorm.kernel(z.partition((8, width)), x, w, 1e-6).sync()
    ref = xf / np.sqrt((xf * xf).mean(1, keepdims=True) + 1e-6) * wf
    np.testing.assert_allclose(z.to_numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
