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

C_PATH = ctk._C_PATH


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
    assert (s.handle, 0) in ctk._streams
    # a default stream (0-2) is the current device's: keyed by it, so C (which looks int handles
    # up as (handle, None)) leaves it to Python, which follows the current device
    assert (0, 0) in ctk._streams and (0, None) not in ctk._streams
    with pytest.raises(tile.LaunchError, match="too large"):
        ct.launch(s, (1 << 24, 1, 1), scale_by, (x, y, 2.0, 32))
    with pytest.raises(TypeError, match="Kernel expects 4 arguments but 3 were given"):
        ct.launch(s, (1,), scale_by, (x, y, 2.0))


# --- the samples' launch shapes (benchmarks/launch_stub.py --cutile times them) ----------------
def _tensors(s, *arrays):
    return [api.from_numpy(np.ascontiguousarray(a)).sync_on(s) for a in arrays]


def _replays_in_c(kernel, launch, check, no_rebinding, repeats=3):
    """``launch(out)`` into a new zeroed output (so a launch that did nothing shows) once (the
    Python path records the plan), then ``repeats`` times more, each result checked by
    ``check(out)``; with the C path every repeat is replayed in C (the Python path would bind
    again, and native.stats() counts a fallback)."""
    check(launch())
    no_rebinding(kernel)
    native.reset_stats()
    for _ in range(repeats):
        check(launch())
    if C_PATH:
        assert native.stats() == {"launches": repeats, "fallbacks": {}}


def test_fft_with_seven_arrays_and_six_constants_replays(no_rebinding):
    """The fft sample's launch: 2 arrays + 5 twiddle tensors + 6 constants."""
    import cutile_samples as S
    s = _stream()
    factors, batch, pack = (2, 2, 2), 2, 2
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 8)) + 1j * rng.standard_normal((batch, 8))
    xp_np = np.stack([x.real, x.imag], -1).reshape(batch, 16 // pack, pack).astype(np.float32)
    xp, = _tensors(s, xp_np)
    tw = tuple(_tensors(s, *S.fft_twiddles(factors, np.float32)))

    def launch():
        yp, = _tensors(s, np.zeros_like(xp_np))
        S.fft(s, xp, yp, tw, factors, batch_tile=1, pack=pack)
        return yp

    def check(yp):
        s.synchronize()
        y = yp.to_numpy().reshape(batch, 8, 2)
        np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], np.fft.fft(x, axis=-1),
                                   atol=1e-5)

    _replays_in_c(S.fft_kernel, launch, check, no_rebinding)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_transpose_with_a_two_dimensional_cdiv_grid_replays(dtype, no_rebinding):
    import cutile_samples as S
    s = _stream()
    x_np = np.random.default_rng(2).standard_normal((48, 32)).astype(dtype)
    x, = _tensors(s, x_np)

    def launch():
        y, = _tensors(s, np.zeros((32, 48), dtype))
        S.transpose(s, x, y, tiles=(16, 16))
        return y

    def check(y):
        s.synchronize()
        np.testing.assert_array_equal(y.to_numpy(), x_np.T)

    _replays_in_c(S.transpose_kernel, launch, check, no_rebinding)


@pytest.mark.parametrize("shape", [(1000,), (40, 24)])
def test_vector_add_one_and_two_dimensional_replays(shape, no_rebinding):
    import cutile_samples as S
    s = _stream()
    rng = np.random.default_rng(3)
    a_np, b_np = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    a, b = _tensors(s, a_np, b_np)

    def launch():
        c, = _tensors(s, np.zeros(shape, np.float32))
        S.vector_add(s, a, b, c, max_tile=128)
        return c

    def check(c):
        s.synchronize()
        np.testing.assert_array_equal(c.to_numpy(), a_np + b_np)

    kernel = S.vec_add_1d if len(shape) == 1 else S.vec_add_2d
    _replays_in_c(kernel, launch, check, no_rebinding)


def test_ct_launch_is_called_like_the_python_function():
    """With the C path ct.launch is a builtin (no Python frame on a replayed launch): its
    signature, name and errors are those of the Python function."""
    import inspect
    assert str(inspect.signature(ct.launch)).startswith("(stream, grid, kernel, kernel_args, /)")
    assert ct.launch.__name__ == "launch" and "ct.Constant" in ct.launch.__doc__
    x = np.zeros(32, np.float32)
    with pytest.raises(TypeError, match=r"launch\(\) missing 1 required positional argument"):
        ct.launch(0, (1,), scale_by)
    with pytest.raises(TypeError, match=r"launch\(\) got an unexpected keyword argument"):
        ct.launch(0, (1,), scale_by, (x, x, 1.0, 32), sync=True)
    with pytest.raises(TypeError, match="expects a @ct.kernel"):
        ct.launch(0, (1,), scale_by.py_func, (x, x, 1.0, 32))
    ct.launch(0, (1,), scale_by, (np.ones(32, np.float32), x, 3.0, 32))
    assert ct.launch(0, (1,), scale_by, (np.ones(32, np.float32), x, 3.0, 32)) is None
    np.testing.assert_array_equal(x, np.full(32, 3, np.float32))
