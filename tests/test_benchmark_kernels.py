"""The benchmark kernels (benchmarks/tilejit_kernels.py) give correct results at small sizes on
the simulator, so a GPU benchmark run never times a wrong kernel."""
import math
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import tilejit_kernels as K  # noqa: E402
from flash_attention import reference as _attention_ref  # noqa: E402  (examples/, on the path)

pytestmark = pytest.mark.usefixtures("simulator_backend")


def dev(a):
    return api.from_numpy(a).sync()


def test_matmul_grouped():
    r = np.random.default_rng(0)
    a = r.standard_normal((96, 64)).astype(np.float16)
    b = r.standard_normal((64, 80)).astype(np.float16)
    c = api.zeros((96, 80), tile.float16).sync()
    g = math.ceil(96 / 32) * math.ceil(80 / 32)
    K.matmul_grouped(tile.atomic(c), dev(a), dev(b), 32, 32, 16, 2).grid((g, 1, 1)).sync()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.to_host().sync().astype(np.float32), ref, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("kern", [K.softmax_rows, K.softmax_rows_explicit])
def test_softmax(kern):
    x = np.random.default_rng(1).standard_normal((8, 100)).astype(np.float32)
    z = api.zeros((8, 128), tile.float32).sync()
    zz = z[:, :100]
    kern(zz.partition((1, 128)), dev(x)).sync()
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(zz.to_host().sync(), e / e.sum(1, keepdims=True), rtol=1e-5)


def test_layer_norm():
    r = np.random.default_rng(2)
    x, w, b = (r.standard_normal(s).astype(np.float32) for s in ((4, 100), (100,), (100,)))
    y = api.zeros((4, 100)).sync()
    mean, rstd = api.zeros((4,)).sync(), api.zeros((4,)).sync()
    K.layer_norm_fwd(tile.atomic(y), dev(x), dev(w), dev(b), tile.atomic(mean),
                     tile.atomic(rstd), 1e-5, 32).grid((4, 1, 1)).sync()
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    np.testing.assert_allclose(y.to_host().sync(), (x - mu) / np.sqrt(var + 1e-5) * w + b,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rstd.to_host().sync(), 1 / np.sqrt(var[:, 0] + 1e-5), rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_both_forms(causal):
    r = np.random.default_rng(3)
    BH, S, D = 2, 192, 32
    q, k, v = (r.standard_normal((BH, S, D)).astype(np.float16) for _ in range(3))
    ref = _attention_ref(q, k, v, causal)
    o = api.zeros((BH, S, D), tile.float16).sync()
    K.fmha(tile.atomic(o), dev(q), dev(k), dev(v), 1 / math.sqrt(D), D, 64, 32, causal) \
        .grid((S // 64, BH, 1)).sync()
    np.testing.assert_allclose(o.to_host().sync().astype(np.float64), ref, atol=3e-3)
    o = api.zeros((BH, S, D), tile.float16).sync()
    K.attention(o.permute(1, 0, 2).partition((64, 1, D)), dev(q), dev(k), dev(v), 32,
                causal).sync()
    np.testing.assert_allclose(o.to_host().sync().astype(np.float64), ref, atol=3e-3)
    ir = K.attention.inspect_tileir(o.permute(1, 0, 2).partition((64, 1, D)), dev(q), dev(k),
                                    dev(v), 32, causal)
    assert ir.count("= for %") == 2 and "= if " not in ir   # the mask's if is split out
