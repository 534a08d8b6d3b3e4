"""In-kernel views and memory features (issue 25 item 1) on the simulator: ``x.slice(axis,
start, stop)`` (loads, tile views, gathers and atomics through it), ``x.strides``,
``load(..., check_bounds=False)``, ``gather(..., padding_value=)``, atomics on tile views and
bfloat16 ``atomic_add``; tileiras accepts them."""
import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

import memory_view_cases as C

pytestmark = pytest.mark.usefixtures("simulator_backend")
A = np.arange(12 * 40, dtype=np.float32).reshape(12, 40)


@tile.entry
def sliced(z, x, axis: tile.Constant[int], s, e):
    v = x.slice(axis, s, e)
    z.store(v.load((0, 0), (16, 64), padding=tile.PaddingMode.NEG_INF))


@pytest.mark.parametrize("axis,s,e", [(0, 2, 9), (1, 5, 30), (1, 0, 40), (0, 11, 12),
                                      (0, -3, 4), (1, 30, 100)])
def test_slice_loads_a_view(axis, s, e):
    z = api.zeros((16, 64)).sync()
    sliced(z.partition((16, 64)), api.from_numpy(A).sync(), axis, s, e).sync()
    cs = max(0, min(s, A.shape[axis]))                # clamped like Python slicing
    ce = max(cs, min(e, A.shape[axis]))
    part = A[cs:ce] if axis == 0 else A[:, cs:ce]
    want = np.full((16, 64), -np.inf, np.float32)
    want[:part.shape[0], :part.shape[1]] = part
    np.testing.assert_array_equal(z.to_numpy(), want)


def test_a_load_from_an_empty_slice_is_outside_it():
    z = api.zeros((16, 64)).sync()
    with pytest.raises(tile.TileJitError, match="is out of bounds"):
        sliced(z.partition((16, 64)), api.from_numpy(A).sync(), 0, 9, 3).sync()


def test_variable_length_segments():
    x = np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)
    got, want = C.run_segment_sums(x, [0, 7, 7, 20, 33, 50])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_slices_of_slices_strides_and_stores_through_views():
    @tile.entry
    def k(z, w, x, s):
        v = x.slice(1, s, s + 16).slice(0, 1, 9)       # rows 1..8, columns s..s+15
        t = v.load((0, 0), (8, 16))
        st = x.strides
        out = w.slice(0, 2, 10)                         # a writable view of w
        tile.store(out.partition((8, 16)), (0, 0), t * 2.0)
        z.store(tile.full((2,), 0, tile.int64) + tile.where(tile.arange(2) == 0, st[0], st[1]))
    x = api.from_numpy(A).sync()
    xt = x[:, 4:36]                                     # a strided view: strides (40, 1)
    w = np.zeros((12, 16), np.float32)
    z = api.zeros((2,), tile.int64).sync()
    k(z.partition((2,)), tile.atomic(w), xt, 3).sync()
    np.testing.assert_array_equal(z.to_numpy(), [40, 1])
    want = np.zeros((12, 16), np.float32)
    want[2:10] = A[1:9, 7:23] * 2
    np.testing.assert_array_equal(w, want)


def test_check_bounds_false():
    @tile.entry
    def k(z, x):
        z.store(x.load((tile.bid(0), 0), (4, 8), check_bounds=False))
    x = api.from_numpy(A[:, :8].copy()).sync()
    z = api.zeros((12, 8)).sync()
    k(z.partition((4, 8)), x).sync()
    np.testing.assert_array_equal(z.to_numpy(), A[:, :8])
    assert "inbounds = [true, true]" in k.inspect_tileir(z.partition((4, 8)), x)
    z = api.zeros((16, 8)).sync()                      # the last tile crosses the edge
    with pytest.raises(tile.TileJitError, match="check_bounds=False"):
        k(z.partition((4, 8)), x).sync()


@tile.entry
def hinted_stores(z, w, x):
    t = x.load((tile.bid(0), 0), (4, 8))
    z.store(t, allow_tma=False, latency=2)
    tile.store(w.partition((4, 8)), (tile.bid(0), 0), t * 2, allow_tma=False)
    tile.store(w.partition((4, 8)), (tile.bid(0) + 3, 0), t * 3, latency=7)


def _hinted_args():
    x = api.from_numpy(A[:, :8].copy()).sync()
    return api.zeros((12, 8)).sync(), api.zeros((24, 8)).sync(), x


def test_store_hints():
    """Stores take a load's ``latency=`` / ``allow_tma=`` hints (cuTile's ``ct.store`` too): the
    values are the same, the hints reach the Tile IR store."""
    z, w, x = _hinted_args()
    hinted_stores(z.partition((4, 8)), tile.atomic(w), x).sync()
    np.testing.assert_array_equal(z.to_numpy(), A[:, :8])
    np.testing.assert_array_equal(w.to_numpy(), np.concatenate([A[:, :8] * 2, A[:, :8] * 3]))
    stores = [ln for ln in hinted_stores.inspect_tileir(z.partition((4, 8)), tile.atomic(w), x)
              .splitlines() if "store_view" in ln]
    assert len(stores) == 3
    assert "allow_tma = false" in stores[0] and "latency = 2" in stores[0]
    assert "allow_tma = false" in stores[1] and "latency" not in stores[1]
    assert "latency = 7" in stores[2] and "allow_tma" not in stores[2]


@pytest.mark.parametrize("hint,match", [("latency=11", "latency must be None or a constant"),
                                        ("allow_tma=n > 0", "allow_tma must be a compile-time")])
def test_store_hint_errors(hint, match):
    src = f"def k(z, x, n):\n    z.store(x.load((0, 0), (4, 8)), {hint})\n"
    ns = {}
    exec(compile(src, "<hint>", "exec"), ns)
    k = tile.entry(ns["k"])
    with pytest.raises(tile.TileJitError, match=match):
        k(api.zeros((4, 8)).sync().partition((4, 8)), api.from_numpy(A).sync(), 3).sync()


def test_gather_padding_value():
    @tile.entry
    def k(z, x):
        idx = tile.arange(16) * 3 - 6
        z.store(tile.gather(x, idx, padding_value=-1.0) + tile.gather(x, idx, other=0.5) * 0.0)
    x = np.arange(20, dtype=np.float32)
    z = api.zeros((16,)).sync()
    k(z.partition((16,)), api.from_numpy(x).sync()).sync()
    idx = np.arange(16) * 3 - 6
    want = np.where((idx >= 0) & (idx < 20), x[np.clip(idx, 0, 19)], -1.0)
    np.testing.assert_array_equal(z.to_numpy(), want)

    @tile.entry
    def both(z, x):
        z.store(tile.gather(x, tile.arange(16), other=1.0, padding_value=2.0))
    with pytest.raises(tile.TypingError, match="not both"):
        both(z.partition((16,)), api.from_numpy(x).sync()).sync()


def test_atomics_on_tile_views_and_slices():
    @tile.entry
    def k(z, w):
        view = w.partition((8,))
        tile.atomic_add(view, tile.arange(8) + 4, 1)           # element coordinates of w
        tile.atomic_max(w.slice(0, 14, 24), tile.arange(8), 7)   # w[14:22]
        z.store(tile.zeros((8,), tile.int32))
    w = np.zeros(24, np.int32)
    z = api.zeros((8 * 4,), tile.int32).sync()
    k(z.partition((8,)), tile.atomic(w)).sync()
    want = np.zeros(24, np.int32)
    want[4:12] += 4                                            # 4 blocks
    want[14:22] = 7
    np.testing.assert_array_equal(w, want)


def test_bfloat16_atomic_add():
    w, want = C.run_histogram(2048, 16)           # counts below 256 are exact in bfloat16
    np.testing.assert_array_equal(w[1:].astype(np.float32), want.astype(np.float32))
    assert w[0] == 0


def test_slice_refusals():
    @tile.entry
    def k(z, x):
        z.store(x.slice(0, 1.5, 3).load((0, 0), (4, 8)))
    with pytest.raises(tile.TypingError, match="start must be an integer"):
        k(api.zeros((4, 8)).sync().partition((4, 8)), api.from_numpy(A).sync()).sync()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_tileiras_accepts_views_and_bf16_atomics(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    x = np.zeros((64, 16), np.float32)
    z = api.zeros((5, 16)).sync()
    assert C.segment_sums.compile(z.partition((1, 16)), api.from_numpy(x).sync(),
                                  api.zeros((6,), tile.int32).sync(), 8, 16,
                                  arch="sm_90")[:4] == b"\x7fELF"
    w = api.zeros((17,), tile.bfloat16).sync()
    z = api.zeros((256,), tile.int32).sync()
    assert C.histogram_bf16.compile(z.partition((256,)), tile.atomic(w),
                                    api.zeros((256,), tile.int32).sync(), 256,
                                    arch="sm_90")[:4] == b"\x7fELF"

    @tile.entry
    def k(z, x):
        z.store(x.load((tile.bid(0), 0), (4, 8), check_bounds=False))
    zz = api.zeros((12, 8)).sync()
    assert k.compile(zz.partition((4, 8)), api.zeros((12, 8)).sync(), arch="sm_90")[:4] == \
        b"\x7fELF"
    z, w, x = _hinted_args()
    assert hinted_stores.compile(z.partition((4, 8)), tile.atomic(w), x, arch="sm_90")[:4] == \
        b"\x7fELF"
