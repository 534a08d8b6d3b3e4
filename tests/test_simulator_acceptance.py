"""Issue-level acceptance sizes on the CPU simulator through the whole @tile.entry path:
a 256x256x256 fp16 matmul and a 1x4x256x64 attention forward (timings are in NOTES.md)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

from corpus import matmul as corpus_matmul


pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_matmul_256_fp16():
    k = tile.entry(corpus_matmul.matmul)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = api.zeros((256, 256), tile.float32).sync()
    k(c.partition((64, 64)), api.from_numpy(a).sync(), api.from_numpy(b).sync(), 32).sync()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.to_numpy(), ref, rtol=2e-3, atol=2e-3)


def test_attention_1x4x256x64():
    k = tile.entry(corpus_matmul.flash_attention)
    rng = np.random.default_rng(1)
    q, kk, v = (rng.standard_normal((4, 256, 64)).astype(np.float16) for _ in range(3))
    o = api.zeros((4, 256, 64), tile.float16).sync()
    k(o.partition((1, 64, 64)), api.from_numpy(q).sync(), api.from_numpy(kk).sync(),
      api.from_numpy(v).sync(), 64, True).sync()
    qf, kf, vf = (x.astype(np.float32) for x in (q, kk, v))
    s = qf @ kf.transpose(0, 2, 1) / 8.0
    s = np.where(np.tril(np.ones((256, 256), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ vf
    np.testing.assert_allclose(o.to_numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
