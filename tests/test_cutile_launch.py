"""``ct.launch``'s hot path (issue 25): after a kernel's first launch, a launch whose constants,
stream and array types were seen before binds nothing again -- with the C extension it is
replayed in C (csrc/cutile.c) without calling ``Kernel._plain_launch`` -- and keeps the
semantics of the slow path: constants by type and float bits (-0.0, NaN), a changed constant
binds and compiles its own kernel, written arrays stay writable, CPU torch tensors are written
back, ``kernel.stats`` counts. Runs on both launch paths (CI runs it with ``TILEJIT_NATIVE=0``
too). Python scalars passed to annotated parameters (``x: float`` is float32 in cuTile) are
classified in C: test_native_stub.py checks their packed bytes."""
import math

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api, keys, native
from tilejit.cutile import _kernel as ctk

pytestmark = pytest.mark.usefixtures("simulator_backend")

C_PATH = ctk._ct_launch is not None


@ct.kernel
def scale_by(x, y, SCALE: ct.Constant[float], TILE: ct.Constant[int]):
    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)) * SCALE)


@ct.kernel
def fill_tile(y, TILE: ct.Constant[int]):
    ct.store(y, index=(ct.bid(0),), tile=ct.full((TILE,), TILE, dtype=ct.float32))


@ct.kernel
def scaled_sum(x, y, scale: float, offset: int, TILE: ct.Constant[int], NEG: ct.Constant[bool]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,)) * scale + offset
    if NEG:
        t = -t
    ct.store(y, index=(ct.bid(0),), tile=t)


@pytest.fixture
def no_rebinding(monkeypatch):
    """forbid(kernel): from now on, binding constants (``_bound_to``, ``keys.constant_value``)
    raises; with the C path, so does ``_plain_launch`` (the launch must be replayed in C)."""
    def forbid(kernel):
        def boom(*a, **k):
            raise AssertionError("a repeated launch bound its constants again")
        monkeypatch.setattr(kernel, "_bound_to", boom)
        monkeypatch.setattr(keys, "constant_value", boom)
        if C_PATH:
            monkeypatch.setattr(kernel, "_plain_launch", boom)
    return forbid


def _stream():
    return tile.Device(0).new_stream()


@pytest.mark.parametrize("scale", [2.0, -0.0, 0.0, math.nan, math.inf])
def test_a_repeated_launch_binds_nothing_again(scale, no_rebinding):
    s = _stream()
    x = np.linspace(-4, 4, 64).astype(np.float32)
    y = np.zeros(64, np.float32)
    ct.launch(s, (2,), scale_by, (x, y, scale, 32))
    launches = scale_by.stats.launches
    no_rebinding(scale_by)
    for _ in range(2):
        y[:] = 7
        ct.launch(s, (2,), scale_by, (x, y, scale, 32))   # NumPy y: written back (atomic)
        np.testing.assert_array_equal(y, x * np.float32(scale))
    assert scale_by.stats.launches == launches + 2


def test_signed_zeros_and_nans_bind_their_own_kernels():
    s = _stream()
    x = np.full(32, -1.0, np.float32)
    y = np.zeros(32, np.float32)
    for scale in (0.0, -0.0, 0.0, -0.0, float("nan"), -0.0):   # 0.0 == -0.0 as memo keys
        ct.launch(s, (1,), scale_by, (x, y, scale, 32))
        if math.isnan(scale):
            assert np.isnan(y).all()
        else:                    # -1 * 0.0 is -0.0, -1 * -0.0 is 0.0
            assert (np.signbit(y) == (not math.copysign(1, scale) < 0)).all(), scale
    before = len(scale_by._bound_by_key)
    ct.launch(s, (1,), scale_by, (x, y, float("nan"), 32))        # another NaN object, same bits
    assert len(scale_by._bound_by_key) == before
    assert np.isnan(y).all()


def test_a_changed_constant_binds_and_compiles_its_own_kernel():
    s = _stream()
    fill_tile._bound_by_key.clear()
    for tile_size in (8, 16, 8, 16):
        y = np.zeros(32, np.float32)
        ct.launch(s, (32 // tile_size,), fill_tile, (y, tile_size))
        np.testing.assert_array_equal(y, np.full(32, tile_size, np.float32))
    assert len(fill_tile._bound_by_key) == 2
    st = fill_tile.stats
    assert st.compiles + st.disk_hits + st.index_hits >= 2 and st.launches >= 4


def test_one_and_true_are_different_constants():
    s = _stream()
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    ct.launch(s, (1,), scaled_sum, (x, y, 1.0, 0, 32, False))
    np.testing.assert_array_equal(y, x)
    with pytest.raises(TypeError, match="'NEG' is annotated tile.Constant\\[bool\\] but got int"):
        ct.launch(s, (1,), scaled_sum, (x, y, 1.0, 0, 32, 0))    # 0 == False as a memo key
    ct.launch(s, (1,), scaled_sum, (x, y, 1.0, 0, 32, True))
    np.testing.assert_array_equal(y, -x)


def test_written_tensors_stay_writable_on_the_replayed_path(no_rebinding):
    s = _stream()
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync_on(s)
    y = api.zeros((64,)).sync_on(s)
    ct.launch(s, (2,), scaled_sum, (x, y, 0.5, 3, 32, True))      # compiles (slow path)
    no_rebinding(scaled_sum)
    native.reset_stats()
    for offset in (1, 2):       # runtime scalars change freely: int and float annotations
        ct.launch(s, (2,), scaled_sum, (x, y, 0.25, offset, 32, True))
        s.synchronize()
        np.testing.assert_array_equal(y.to_numpy(), -(np.arange(64) * 0.25 + offset))
    if C_PATH:
        assert native.stats() == {"launches": 2, "fallbacks": {}}


def test_cpu_torch_tensors_are_written_back_every_time():
    torch = pytest.importorskip("torch")
    x = torch.arange(64, dtype=torch.float32)
    for scale in (2.0, 3.0, 3.0):
        y = torch.zeros(64)
        ct.launch(0, (2,), scale_by, (x, y, scale, 32))
        assert torch.equal(y, x * scale)


def test_a_new_stream_or_grid_spelling_takes_the_slow_path_once():
    s = _stream()
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    ct.launch(s, (1,), scale_by, (x, y, 2.0, 32))

    class TorchLikeStream:          # cuda_stream/device_index: memoized in cutile.streams
        cuda_stream = s.handle
        device_index = 0
    for stream in (TorchLikeStream(), 0):
        for grid in ([1], 1, (1, 1), (1, 1, 1)):
            y[:] = 0
            ct.launch(stream, grid, scale_by, (x, y, 2.0, 32))
            np.testing.assert_array_equal(y, x * 2)
    assert (s.handle, 0) in ctk._streams and (0, None) in ctk._streams
    with pytest.raises(tile.LaunchError, match="too large"):
        ct.launch(s, (1 << 24, 1, 1), scale_by, (x, y, 2.0, 32))
    with pytest.raises(TypeError, match="Kernel expects 4 arguments but 3 were given"):
        ct.launch(s, (1,), scale_by, (x, y, 2.0))
