"""``mma``/``@``/``matmul`` broadcast the leading batch axis like ``numpy.matmul`` (issue 25
item 1): ``(B, M, K) @ (K, N)``, ``(1, M, K) @ (B, K, N)``, ``(M, K) @ (B, K, N)``,
``(B, M, K) @ (1, K, N)``, on the simulator against NumPy and compiled by tileiras."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")
B, M, K, N = 4, 16, 32, 8
SHAPES = [((B, M, K), (K, N)), ((1, M, K), (B, K, N)), ((M, K), (B, K, N)),
          ((B, M, K), (1, K, N)), ((1, M, K), (K, N)), ((B, M, K), (B, K, N))]


@tile.entry
def products(z_at, z_mma, z_matmul, a, b, SA: tile.Constant[tuple], SB: tile.Constant[tuple]):
    ta = a.load((0,) * len(SA), SA)
    tb = b.load((0,) * len(SB), SB)
    z_at.store(ta @ tb)
    z_mma.store(tile.mma(ta, tb, tile.full(z_mma.shape, 1.0, tile.float32)))
    z_matmul.store(tile.matmul(ta, tb))


def _launch(sa, sb, dtype=np.float16, compile_only=False):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a = rng.integers(-3, 4, sa).astype(dtype)
    b = rng.integers(-3, 4, sb).astype(dtype)
    want = np.matmul(a.astype(np.float32), b.astype(np.float32))
    outs = [api.zeros(want.shape, d).sync() for d in (dtype, np.float32, dtype)]
    args = [o.partition(want.shape) for o in outs] + [api.from_numpy(a).sync(),
                                                       api.from_numpy(b).sync(), sa, sb]
    if compile_only:
        return products.compile(*args, arch="sm_90")
    products(*args).sync()
    return want, [o.to_numpy().astype(np.float32) for o in outs]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_batch_axis_broadcasts_like_numpy_matmul(sa, sb):
    want, (at, mma, mm) = _launch(sa, sb)
    np.testing.assert_array_equal(at, want)
    np.testing.assert_array_equal(mma, want + 1)
    np.testing.assert_array_equal(mm, want)


def test_integer_and_float32_operands_broadcast():
    want, got = _launch((B, M, K), (K, N), np.float32)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)

    @tile.entry
    def k8(z, a, b):
        z.store(a.load((0, 0, 0), (B, M, K)) @ b.load((0, 0), (K, N)))
    a = np.random.default_rng(0).integers(-100, 100, (B, M, K)).astype(np.int8)
    b = np.random.default_rng(1).integers(-100, 100, (K, N)).astype(np.int8)
    z = api.zeros((B, M, N), tile.int32).sync()
    k8(z.partition((B, M, N)), api.from_numpy(a).sync(), api.from_numpy(b).sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), np.matmul(a.astype(np.int32), b.astype(np.int32)))


def test_one_big_product_for_a_batched_left_operand():
    a, b = api.zeros((B, M, K), tile.float16).sync(), api.zeros((K, N), tile.float16).sync()
    outs = [api.zeros((B, M, N), d).sync() for d in (tile.float16, tile.float32, tile.float16)]
    ir = products.inspect_tileir(*(o.partition((B, M, N)) for o in outs), a, b, (B, M, K), (K, N))
    assert f"tile<{B * M}x{K}xf16>, tile<{K}x{N}xf16>" in ir     # (B*M, K) @ (K, N)


@pytest.mark.parametrize("sa,sb", [((2, M, K), (4, K, N)), ((B, M, K), (B, 16, N))])
def test_incompatible_batches_are_refused(sa, sb):
    outs = [api.zeros((B, M, N), d).sync() for d in (tile.float16, tile.float32, tile.float16)]
    a, b = api.zeros(sa, tile.float16).sync(), api.zeros(sb, tile.float16).sync()
    with pytest.raises(tile.TypingError, match="shape mismatch"):
        products(*(o.partition((B, M, N)) for o in outs), a, b, sa, sb).sync()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
@pytest.mark.parametrize("sa,sb", SHAPES[:3], ids=[f"{a}@{b}" for a, b in SHAPES[:3]])
def test_tileiras_accepts_broadcast_mma(sa, sb, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    assert _launch(sa, sb, compile_only=True)[:4] == b"\x7fELF"
