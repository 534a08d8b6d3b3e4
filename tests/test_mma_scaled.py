"""Block-scaled matmul (``tile.mma_scaled``) and the float8_e8m0fnu / float4_e2m1fn dtypes
(issue 25 item 1): on the simulator through both lowerings (Blackwell's ``mmaf_scaled`` for
``sm_100``; the tf32 emulation for ``sm_90``, whose Tile IR has neither type), conversions into
the formats, float4 in memory (one value per byte, as ml_dtypes), refusals, and tileiras
accepting both forms."""
import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

import mma_scaled_cases as C

pytestmark = pytest.mark.usefixtures("simulator_backend")
ARCHS = ["sm_90", "sm_100"]


@pytest.fixture(params=ARCHS)
def arch(request, monkeypatch):
    monkeypatch.setenv("TILEJIT_ARCH", request.param)
    return request.param


@pytest.mark.parametrize("idt,sdt,block", C.FORMATS, ids=C.IDS)
def test_block_scaled_matmul_matches_numpy(idt, sdt, block, arch):
    C.check(idt, sdt, block)


def test_native_op_on_blackwell_emulation_before(monkeypatch):
    a, sa, b, sb = C.operands(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, 32)
    c = api.zeros((64, 32)).sync()
    args = [c.partition((32, 32))] + [api.from_numpy(x).sync() for x in (a, sa, b, sb)] + \
        [32, 32, 64, 32]
    monkeypatch.setenv("TILEJIT_ARCH", "sm_100")
    ir = C.scaled_matmul.inspect_tileir(*args)
    assert "mmaf_scaled" in ir and "f8E8M0FNU" in ir
    monkeypatch.setenv("TILEJIT_ARCH", "sm_90")
    ir = C.scaled_matmul.inspect_tileir(*args)
    assert "mmaf_scaled" not in ir and "E8M0" not in ir and "tf32" in ir


def test_batch_axis_broadcasts(arch):
    @tile.entry
    def k(z, a, sa, b, sb):
        z.store(tile.mma_scaled(a.load((0, 0, 0), (2, 16, 64)), sa.load((0, 0, 0), (2, 16, 2)),
                                b.load((0, 0), (64, 16)), sb.load((0, 0), (2, 16)),
                                tile.full((2, 16, 16), 1.0, tile.float32)))
    rng = np.random.default_rng(4)
    a = rng.uniform(-4, 4, (2, 16, 64)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.uniform(-4, 4, (64, 16)).astype(ml_dtypes.float8_e4m3fn)
    sa = (2.0 ** rng.integers(-3, 3, (2, 16, 2))).astype(ml_dtypes.float8_e8m0fnu)
    sb = (2.0 ** rng.integers(-3, 3, (2, 16))).astype(ml_dtypes.float8_e8m0fnu)
    z = api.zeros((2, 16, 16)).sync()
    k(z.partition((2, 16, 16)), *(api.from_numpy(x).sync() for x in (a, sa, b, sb))).sync()
    want = np.stack([C.reference(a[i], sa[i], b, sb) for i in range(2)]) + 1
    np.testing.assert_allclose(z.to_numpy(), want, rtol=1e-6)


def _convert(x, dtype, rounding=None, out=None):
    """``x`` (float32) converted in a kernel to ``dtype`` and stored into an ``out`` array (a
    float4/e8m0 tensor, or float32 by default)."""
    rm = f", rounding_mode=tile.RoundingMode.{rounding}" if rounding else ""
    src = ("import tilejit as tile\n@tile.entry\ndef k(z, x):\n"
           f"    z.store(tile.load_tile_like(x, z).astype(tile.{dtype}{rm}).astype(z.dtype))\n")
    ns = {}
    exec(compile(src, "<convert>", "exec"), ns)
    z = api.zeros(x.shape, out or tile.float32).sync()
    ns["k"](z.partition(x.shape), api.from_numpy(x).sync()).sync()
    return z.to_numpy()


def test_conversion_to_float4_rounds_to_nearest_even_and_saturates(arch):
    x = np.array([0.0, -0.0, 0.24, 0.25, 0.26, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, 6.0, 7.0,
                  1e30, -np.inf, -0.3, -2.6, -5.5, 0.5, 1.0, 3.0, 4.0, -6.0, 1e-40, 2.9, 3.1,
                  0.1, -0.7, -1.3, 0.6, 4.9], np.float32)
    want = x.astype(ml_dtypes.float4_e2m1fn)
    got = _convert(x, "float4_e2m1fn")
    np.testing.assert_array_equal(got, want.astype(np.float32))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want.astype(np.float32)))
    stored = _convert(x, "float4_e2m1fn", out=tile.float4_e2m1fn)     # one code per byte
    np.testing.assert_array_equal(stored.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("rounding", [None, "RZ", "RP"])
def test_conversion_to_e8m0_rounds_to_powers_of_two(rounding, arch):
    x = np.array([1.0, 0.75, 1.5, 3.0, 4.0, 2.0 ** -127, 2.0 ** -130, 1e-40, 2.0 ** 127,
                  3e38, np.inf, 0.5, 0.3, 1000.0, 2.0 ** -126, 1e-38], np.float32)
    m, e = np.frexp(x.astype(np.float64))
    e = np.where(np.isinf(x), 127, e - 1 + ((rounding == "RP") & (m != 0.5)))    # saturates
    want = 2.0 ** np.clip(e, -127, 127)
    np.testing.assert_array_equal(_convert(x, "float8_e8m0fnu", rounding), want.astype(np.float32))
    codes = _convert(x, "float8_e8m0fnu", rounding, out=tile.float8_e8m0fnu).view(np.uint8)
    np.testing.assert_array_equal(codes, np.clip(e, -127, 127) + 127)
    nan = _convert(np.array([0.0, -1.0, np.nan, -0.0], np.float32), "float8_e8m0fnu", rounding)
    assert np.isnan(nan).all()


def test_float4_and_e8m0_tensors_load_their_values(arch):
    codes = np.arange(16, dtype=np.uint8)
    f4 = codes.view(ml_dtypes.float4_e2m1fn)
    e8 = np.array([0, 1, 126, 127, 128, 200, 254, 255] * 2, np.uint8).view(ml_dtypes.float8_e8m0fnu)

    @tile.entry
    def k(z, x, y):
        z.store(tile.load_tile_like(x, z).astype(tile.float32) +
                tile.load_tile_like(y, z).astype(tile.float32) * 0.0 + y.load((0,), (16,))
                .astype(tile.float32) * 0.0)
    z = api.zeros((16,)).sync()
    k(z.partition((16,)), api.from_numpy(f4).sync(), api.from_numpy(np.ones(16, np.float32))
      .sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), f4.astype(np.float32))
    z2 = api.zeros((16,)).sync()
    k(z2.partition((16,)), api.from_numpy(e8).sync(), api.from_numpy(np.ones(16, np.float32))
      .sync()).sync()
    np.testing.assert_array_equal(z2.to_numpy(), e8.astype(np.float32))


@pytest.mark.parametrize("call,match", [
    ("tile.mma_scaled(a8, s8, b8, s8t, acc)", "scale blocks of 32"),            # block 64
    ("tile.mma_scaled(a8, s8x, b8, s8xt, acc.astype(tile.float16))", "float32 tile"),
    ("tile.mma_scaled(a8, s8x.astype(tile.float8_e4m3fn), b8, s8xt.astype(tile.float8_e4m3fn), "
     "acc)", "not supported"),
    ("tile.mma_scaled(a8, s8x, b8.astype(tile.float8_e5m2), s8xt, acc)", "share a dtype"),
    ("tile.mma_scaled(a8, s8x, b8, s8, acc)", "does not fit"),
    ("acc + a8.astype(tile.float8_e8m0fnu, rounding_mode=tile.RoundingMode.RN).astype("
     "tile.float32)", "toward zero"),
    ("acc + a8.astype(tile.float4_e2m1fn) * 2", "no arithmetic|not supported"),
])
def test_refusals(call, match):
    src = ("import tilejit as tile\n@tile.entry\ndef k(z, x):\n"
           "    acc = tile.zeros((16, 16), tile.float32)\n"
           "    a8 = tile.full((16, 64), 1.0, tile.float8_e4m3fn)\n"
           "    b8 = tile.full((64, 16), 1.0, tile.float8_e4m3fn)\n"
           "    s8 = tile.full((16, 1), 1.0, tile.float8_e8m0fnu)\n"
           "    s8t = tile.full((1, 16), 1.0, tile.float8_e8m0fnu)\n"
           "    s8x = tile.full((16, 2), 1.0, tile.float8_e8m0fnu)\n"
           "    s8xt = tile.full((2, 16), 1.0, tile.float8_e8m0fnu)\n"
           f"    z.store({call})\n")
    ns = {}
    exec(compile(src, "<mma_scaled>", "exec"), ns)
    z = api.zeros((16, 16)).sync()
    with pytest.raises(tile.TypingError, match=match):
        ns["k"](z.partition((16, 16)), api.zeros((16, 16)).sync()).sync()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
@pytest.mark.parametrize("idt,sdt,block", C.FORMATS[::2], ids=C.IDS[::2])
def test_tileiras_accepts_both_forms(idt, sdt, block, target, monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    a, sa, b, sb = C.operands(idt, sdt, block)
    c = api.zeros((64, 32)).sync()
    cubin = C.scaled_matmul.compile(c.partition((32, 32)),
                                    *(api.from_numpy(x).sync() for x in (a, sa, b, sb)),
                                    32, 32, 64, block, arch=target)
    assert cubin[:4] == b"\x7fELF"


def test_float4_tensors_round_trip_numpy_but_not_dlpack():
    x = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)
    t = api.from_numpy(x).sync()
    np.testing.assert_array_equal(t.to_numpy().view(np.uint8), np.arange(16))
    with pytest.raises(BufferError, match="no DLPack form"):
        t.__dlpack__()
    assert tile.dtypes.from_numpy(ml_dtypes.float8_e8m0fnu) is tile.float8_e8m0fnu
