"""``import tilejit.cutile as ct``: cuTile Python's kernel language and launch over tilejit (the
samples are in test_cutile_samples.py): which arrays a kernel writes, ``ct.launch``'s streams,
arrays and errors, cuTile's semantics where tilejit's defaults differ, the adapters' spellings,
``ByTarget`` hints."""
import math

import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api
from tilejit import compiler as _compiler
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")


# --- which parameters a kernel stores into ---------------------------------------------------------
def store_through(dst, src, TILE):
    ct.store(dst, index=(0,), tile=ct.load(src, index=(0,), shape=(TILE,)))


@ct.kernel
def writes_many(a, b, c, d, e, f, g, n, TILE: ct.Constant[int]):
    t = ct.load(a, index=(0,), shape=(TILE,)) + ct.gather(b, ct.arange(TILE, dtype=ct.int32))
    ct.scatter(c, ct.arange(TILE, dtype=ct.int32), t)
    ct.atomic_add(d, 0, n)
    store_through(e, f, TILE)                       # a plain helper stores into its parameter
    if g.shape[0] > ct.num_tiles(a, 0, (TILE,)) and g.dtype == ct.float32:
        pass


def test_written_parameters_are_read_from_the_source():
    assert writes_many.written_parameters == ("c", "d", "e")


@ct.kernel
def aliases(a, b, TILE: ct.Constant[int]):
    x = a                                       # an alias: the analysis stays on the safe side
    ct.store(x, index=(0,), tile=ct.load(b, index=(0,), shape=(TILE,)))


def test_a_use_the_analysis_does_not_know_counts_as_a_write():
    assert aliases.written_parameters == ("a",)
    a, b = np.zeros(8, np.float32), np.arange(8, dtype=np.float32)
    ct.launch(0, (1,), aliases, (a, b, 8))
    np.testing.assert_array_equal(a, b)


# --- ct.launch -----------------------------------------------------------------------------------
@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) +
             ct.load(b, index=(i,), shape=(TILE,)))


class CudaStreamProtocol:
    def __cuda_stream__(self):
        return (0, 0)


@pytest.mark.parametrize("stream", [0, "tilejit", CudaStreamProtocol()],
                         ids=["int", "tile.Stream", "__cuda_stream__"])
def test_launch_on_any_stream_with_numpy_arrays(stream):
    if stream == "tilejit":
        stream = tile.Device(0).new_stream()
    a, b = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    c = np.zeros(100, np.float32)
    ct.launch(stream, (ct.cdiv(100, 32),), vec_add, (a, b, c, 32))
    np.testing.assert_array_equal(c, a + 1)      # written back before launch returns


def test_launch_with_tilejit_tensors_and_lists():
    a = api.from_numpy(np.arange(64, dtype=np.float32)).sync()
    b = api.ones((64,)).sync()
    c = api.zeros((64,)).sync()
    s = tile.Device(0).new_stream()
    ct.launch(s, [2], vec_add, [a, b, c, 32])    # lists for the grid and the arguments too
    s.synchronize()
    np.testing.assert_array_equal(c.to_numpy(), np.arange(64) + 1)


def test_a_ct_kernel_is_also_a_tilejit_kernel():
    a, b = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    c = api.zeros((64,)).sync()
    vec_add(a, b, tile.atomic(c), 32).grid((2, 1, 1)).sync()
    np.testing.assert_array_equal(c.to_numpy(), a + 1)
    assert "store_view_tko" in vec_add.inspect_tileir(a, b, c, 32)


@pytest.mark.parametrize("call, error, message", [
    (lambda: ct.launch(None, (1,), vec_add, (1, 2, 3, 4)), TypeError, "needs a stream"),
    (lambda: ct.launch(0, (1,), vec_add, (1, 2, 3)), TypeError,
     "Kernel expects 4 arguments but 3 were given"),
    (lambda: ct.launch(0, (1,), vec_add, np.zeros(4)), TypeError, "must be a tuple"),
    (lambda: ct.launch(0, (1,), vec_add.py_func, ()), TypeError, "expects a @ct.kernel"),
    (lambda: ct.launch(0, (1,), tile.entry(vec_add.py_func), ()), TypeError,
     r"kernel\(\*args\).grid"),
    (lambda: ct.launch(0, (1, 1, 1, 1), vec_add, (np.zeros(4),) * 3 + (4,)), tile.LaunchError,
     "1 to 3 dimensions"),
    (lambda: ct.launch(0, (1 << 24,), vec_add, (np.zeros(4),) * 3 + (4,)), tile.LaunchError,
     "too large"),
])
def test_launch_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_read_only_numpy_array_cannot_be_written():
    a = np.ones(32, np.float32)
    c = np.zeros(32, np.float32)
    c.flags.writeable = False
    with pytest.raises(tile.TensorError, match="writable NumPy array"):
        ct.launch(0, (1,), vec_add, (a, a, c, 32))


@ct.kernel
def add_scalar(x, n: int, f: float, TILE: ct.Constant[int]):
    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(TILE,)) + n + f)


def test_int_and_float_annotations_are_cutile_scalars():
    x = np.zeros(8, np.float32)
    ct.launch(0, (1,), add_scalar, (x, 5, 0.5, 8))
    np.testing.assert_array_equal(x, 5.5)
    assert "n: Tile[int32, ()], f: Tile[float32, ()]" in add_scalar.inspect_types(x, 5, 0.5, 8)
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        ct.launch(0, (1,), add_scalar, (x, 2 ** 31, 0.5, 8))


# --- cuTile's semantics where tilejit's defaults differ ----------------------------------------------
@ct.kernel
def nan_reductions(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    ct.store(out, index=(0,), tile=ct.reshape(ct.max(t), (1,)))
    ct.store(out, index=(1,), tile=ct.reshape(ct.min(t), (1,)))
    ct.store(out, index=(2,), tile=ct.reshape(ct.max(t, propagate_nan=True), (1,)))
    ct.store(out, index=(3,), tile=ct.reshape(ct.argmax(t).astype(ct.float32), (1,)))
    pair = ct.maximum(t, ct.full((TILE,), 1.5, dtype=ct.float32))
    ct.store(out, index=(4,), tile=ct.reshape(ct.sum(pair), (1,)))
    pair = ct.minimum(t, 1.5, propagate_nan=True)
    ct.store(out, index=(5,), tile=ct.reshape(ct.sum(pair), (1,)))


def test_max_and_min_ignore_nan_unless_asked():
    x = np.array([1, np.nan, 3, 2], np.float32)
    out = np.zeros(6, np.float32)
    ct.launch(0, (1,), nan_reductions, (x, out, 4))
    np.testing.assert_array_equal(out[:2], [3, 1])
    assert np.isnan(out[2])
    assert out[3] == 2                              # the first maximum, not the NaN
    assert out[4] == 1.5 + 1.5 + 3 + 2              # maximum(NaN, 1.5) is 1.5
    assert np.isnan(out[5])


# --- the adapters' spellings --------------------------------------------------------------------------
@ct.kernel
def spellings(x, y, ints, out, TILE: ct.Constant[int]):
    t = ct.load(x, (0, 0), (TILE, TILE), padding_mode=ct.PaddingMode.ZERO, allow_tma=False,
                latency=3)
    ct.store(y, index=(0, 0), tile=ct.transpose(t), latency=2, allow_tma=False)
    ct.store(y, index=(1, 0), tile=ct.load(x, (0, 0), (TILE, TILE), order="F"))
    ar = ct.arange(TILE, dtype=ct.int32, start=3, step=2)
    i = ct.load(ints, (0,), (TILE,))
    both = ct.cat((ar, i), axis=0)
    ct.store(ints, index=(1,), tile=both)
    v = ct.add(ct.mul(i, 3), ct.sub(ar, 1)) + ct.floordiv(ar, 2) - ct.mod(ar, 3)
    v = ct.bitwise_xor(ct.bitwise_and(v, 255), ct.bitwise_lshift(1, 2)) | \
        ct.bitwise_rshift(ct.bitwise_not(0), 30)
    ct.store(ints, index=(4,), tile=ct.where(ct.greater_equal(v, 8) & ct.not_equal(v, 9), v,
                                             ct.negative(v)))
    row = ct.gather(x, (ct.arange(TILE, dtype=ct.int32) + TILE - 1, 0), padding_value=-1.0)
    ct.store(out, index=(0,), tile=row)
    ct.store(out, index=(TILE,), tile=ct.sum(ct.full((TILE,), 2.0, dtype=ct.float32)))
    ct.store(out, index=(TILE + 1,), tile=ct.reshape(ct.prod(ct.pow(ct.full((2,), 3.0,
                                                                           ct.float32), 2)),
                                                     ()))
    ct.store(out, index=(TILE + 2,), tile=ct.num_tiles(x, 1, (TILE, 2), order="F"))
    ct.store(out, index=(TILE + 3,),
             tile=ct.extract(ct.cumsum(ct.ones((TILE,), ct.float32)), (TILE - 1,), (1,)))
    ct.atomic_add(ints, 7 * TILE, 5, memory_order=ct.MemoryOrder.RELAXED)
    old = ct.atomic_cas(ints, 7 * TILE + 1, 0, 9)
    ct.store(ints, index=(7 * TILE + 2,), tile=old)


def test_adapters_follow_cutiles_signatures():
    T = 4
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    y = np.zeros((8, 4), np.float32)
    ints = np.zeros(8 * T, np.int32)
    ints[:T] = [1, 2, 3, 4]
    out = np.zeros(2 * T, np.float32)
    ct.launch(0, (1,), spellings, (x, y, ints, out, T))
    np.testing.assert_array_equal(y[:4], x[:4, :4].T)
    np.testing.assert_array_equal(y[4:], x[:4, :4].T)      # order="F": tile (0, 0) of x.T
    ar = 3 + 2 * np.arange(T)
    np.testing.assert_array_equal(ints[2 * T:4 * T], np.concatenate([ar, [1, 2, 3, 4]]))
    i = np.array([1, 2, 3, 4])
    v = i * 3 + (ar - 1) + ar // 2 - ar % 3
    v = ((v & 255) ^ (1 << 2)) | (~0 >> 30)
    np.testing.assert_array_equal(ints[4 * T:5 * T], np.where((v >= 8) & (v != 9), v, -v))
    np.testing.assert_array_equal(out[:T], [x[3, 0], x[4, 0], x[5, 0], -1.0])
    assert list(out[T:T + 4]) == [2.0 * T, 81.0, 6 // 2, T]     # x.T is 8 x 6
    assert list(ints[7 * T:7 * T + 3]) == [5, 9, 0]


def sum_rounding(x, out):
    ct.store(out, index=(0,), tile=ct.sum(ct.load(x, (0,), (4,)), rounding_mode=ct.RoundingMode.RZ))


def transpose_3d(x, out):
    ct.store(out, index=(0, 0, 0), tile=ct.transpose(ct.load(x, (0, 0, 0), (2, 2, 2)), 1, 2))


def test_sum_takes_cutiles_rounding_mode():
    # 1 + 0.75 ulp is the one inexact addition in any order: RZ keeps 1, nearest rounds up
    x = np.array([1.0, 0.75 * 2.0 ** -23, 0.0, 0.0], np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(0, (1,), ct.kernel(sum_rounding), (x, out))
    assert out[0] == np.float32(1.0)


def test_transpose_of_two_axes_of_a_3d_tile():
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    out = np.zeros((2, 2, 2), np.float32)
    ct.launch(0, (1,), ct.kernel(transpose_3d), (x, out))
    assert np.array_equal(out, np.swapaxes(x, 1, 2))



def misplaced(x, y):
    t = ct.load(x, (0,), (4,))
    ct.store(y, index=(0,), tile=t @ t)      # <- the user's line


def test_errors_name_the_users_line():
    with pytest.raises(tile.CompileError) as info:
        ct.launch(0, (1,), ct.kernel(misplaced), (np.zeros(4, np.float32),
                                                  np.zeros(4, np.float32)))
    assert info.value.loc.filename == __file__
    assert "the user's line" in info.value.loc.source_line()


# --- hints ---------------------------------------------------------------------------------------
def test_by_target_hints_are_resolved_per_architecture(monkeypatch):
    seen = []
    real = _compiler.compile

    def spy(pyfunc, keys, constants, target, options=None, **kw):
        seen.append((target, options.occupancy, options.num_cta_in_cga, options.plain_helpers))
        return real(pyfunc, keys, constants, target, options, **kw)

    monkeypatch.setattr(_compiler, "compile", spy)
    k = ct.kernel(vec_add.py_func, occupancy=ct.ByTarget(sm_90=2, default=1),
                  num_ctas=ct.ByTarget(sm_100=2))
    args = tuple(np.zeros(64, np.float32) for _ in range(3)) + (32,)
    ct.launch(0, (2,), k, args)
    if tileiras.available():
        k.compile(*args, arch="sm_90")
        k.compile(*args, arch="sm_100")
    assert seen[0] == ("sim", 1, None, True)
    assert seen[1:] in ([], [("sm_90", 2, None, True), ("sm_100", 1, 2, True)])
    assert repr(ct.ByTarget(sm_100=2, default=1)) == "ByTarget(sm_100=2, default=1)"
    with pytest.raises(ValueError, match="Invalid GPU architecture name"):
        ct.ByTarget(hopper=2)


def test_num_worker_warps_is_taken_not_ignored(recwarn):
    k = ct.kernel(vec_add.py_func, num_worker_warps=ct.ByTarget(sm_90=8))
    args = tuple(np.zeros(64, np.float32) for _ in range(3)) + (32,)
    ct.launch(0, (2,), k, args)
    assert not [w for w in recwarn if "num_worker_warps" in str(w.message)]
    assert k.options.num_worker_warps is None          # resolved per architecture
    if tileiras.available():
        assert k.compile(*args, arch="sm_90")[:4] == b"\x7fELF"
    flat = ct.kernel(vec_add.py_func, num_worker_warps=8)
    assert "num_worker_warps_per_cta = 8" in flat.inspect_tileir(*args)


def test_replace_hints_makes_a_new_kernel():
    k = vec_add.replace_hints(occupancy=4)
    assert k is not vec_add and k.options.occupancy == 4 and k.options.plain_helpers
    with pytest.raises(TypeError, match="unknown hint"):
        vec_add.replace_hints(num_warps=4)


def test_function_decorator():
    @ct.function
    def twice(t):
        return t * 2

    @ct.kernel
    def k(x, TILE: ct.Constant[int]):
        ct.store(x, index=(0,), tile=twice(ct.load(x, index=(0,), shape=(TILE,))))

    x = np.arange(8, dtype=np.float32)
    ct.launch(0, (1,), k, (x, 8))
    np.testing.assert_array_equal(x, np.arange(8) * 2)
    assert ct.function(host=True)(math.sqrt) is math.sqrt


# --- the launch hot path ---------------------------------------------------------------------------
@ct.kernel
def scaled_copy(x, y, SCALE: ct.Constant[float], FLAG: ct.Constant[bool], TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    if FLAG:
        t = t * SCALE
    ct.store(y, index=(ct.bid(0),), tile=t)


def test_constants_bind_one_kernel_per_value_set():
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync()
    y = api.zeros((64,)).sync()
    s = tile.Device(0).new_stream()
    bound = scaled_copy._bound_by_key

    def run(scale, flag):
        before = len(bound)
        ct.launch(s, (2,), scaled_copy, (x, y, scale, flag, 32))
        s.synchronize()
        expect = np.arange(64) * scale if flag else np.arange(64)
        np.testing.assert_array_equal(y.to_numpy(), expect.astype(np.float32))
        return len(bound) - before

    bound.clear()
    assert run(2.0, True) == 1 and run(2.0, True) == 0 and run(2.0, False) == 1
    assert run(float("nan"), True) == 1 and run(float("nan"), True) == 0   # NaN finds itself
    assert run(-0.0, True) == 1 and run(0.0, True) == 1                    # by their bits
    assert scaled_copy.stats.launches == 7
    with pytest.raises(TypeError, match="'FLAG' is annotated tile.Constant\\[bool\\] but got int"):
        ct.launch(s, (2,), scaled_copy, (x, y, 2.0, 1, 32))                # 1 is not a bool


@pytest.mark.skipif(not tile.native.enabled(), reason="the C launch path is not built")
def test_ct_launch_takes_the_c_path():
    from tilejit import native
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync()
    y = api.zeros((64,)).sync()
    s = tile.Device(0).new_stream()
    ct.launch(s, (2,), scaled_copy, (x, y, 3.0, True, 32))     # compiles (Python)
    native.reset_stats()
    ct.launch(s, (2,), scaled_copy, (x, y, 3.0, True, 32))
    s.synchronize()
    assert native.stats() == {"launches": 1, "fallbacks": {}}
    np.testing.assert_array_equal(y.to_numpy(), np.arange(64) * 3)


def test_launch_with_cpu_torch_tensors():
    torch = pytest.importorskip("torch")
    a, b = torch.arange(100, dtype=torch.float32), torch.ones(100)
    c = torch.zeros(100)
    ct.launch(0, (4,), vec_add, (a, b, c, 32))
    assert torch.equal(c, a + b)            # written back into the CPU tensor


def test_kernels_may_name_numpy_and_torch_dtypes():
    """cuTile's samples write dtype=torch.int32 and np.float32 inside kernels; both are the
    tilejit dtypes there (and such a kernel still has a digest for the warm-start index)."""
    torch = pytest.importorskip("torch")
    from tilejit import fingerprint

    def body(a, c, TILE: ct.Constant[int]):
        idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=torch.int32)
        low = ct.full((TILE,), -np.inf, dtype=np.float32)
        keep = ct.full((TILE,), True, dtype=np.bool_) & (idx % 2 == 0)
        ct.scatter(c, idx, ct.where(keep, ct.gather(a, idx).astype(torch.float32), low))

    a = np.arange(64, dtype=np.float16)
    c = np.zeros(64, np.float32)
    ct.launch(0, (2,), ct.kernel(body), (a, c, 32))
    np.testing.assert_array_equal(c, np.where(np.arange(64) % 2 == 0, a, -np.inf))
    assert fingerprint.function_digest(body) is not None


# --- ct.mma(use_fast_acc=True): the float8 tensor-core sum, as tile.mma(fast_acc=True) -----------
@ct.kernel
def fp8_mma_fast(a, b, c, FAST: ct.Constant[bool]):
    acc = ct.full((16, 16), 0.0, dtype=ct.float32)
    acc = ct.mma(ct.load(a, index=(0, 0), shape=(16, 32)), ct.load(b, index=(0, 0), shape=(32, 16)),
                 acc, use_fast_acc=FAST)
    ct.store(c, index=(0, 0), tile=acc)


@pytest.mark.parametrize("fast", [False, True])
def test_use_fast_acc_reaches_the_mma(fast):
    import ml_dtypes
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (16, 32)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-4, 5, (32, 16)).astype(ml_dtypes.float8_e4m3fn)
    c = np.zeros((16, 16), np.float32)
    ir = fp8_mma_fast.inspect_tileir(a, b, c, fast)
    (line,) = [ln for ln in ir.splitlines() if "= mmaf " in ln]
    assert ("fast_acc" in line) is fast
    ct.launch(0, (1,), fp8_mma_fast, (a, b, c, fast))
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@ct.kernel
def unchecked_rows(a, c, TILE: ct.Constant[int], CHECK: ct.Constant[bool]):
    cols = ct.arange(TILE, dtype=ct.int32)
    v = ct.gather(a, (ct.bid(0), cols), check_bounds=CHECK, padding_value=0.0, latency=2)
    ct.scatter(c, (ct.bid(0), cols), v * 2.0, check_bounds=CHECK)


def test_gather_scatter_check_bounds_false_drops_the_bounds_masks():
    """Liger's kernels pass ``check_bounds=False`` on aligned rows: the accesses lose their
    bounds compares and masks, as in cuTile (tilejit.cutile dropped the argument)."""
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    c = np.zeros_like(a)
    ct.launch(tile.Device(0).new_stream(), (4,), unchecked_rows, (a, tile.atomic(c), 8, False))
    tile.Device(0).synchronize()
    np.testing.assert_array_equal(c, 2 * a)
    ir = unchecked_rows.inspect_tileir(a, tile.atomic(c), 8, False)
    assert "cmpi" not in ir and "xi1>" not in ir and "latency = 2" in ir
    assert "cmpi" in unchecked_rows.inspect_tileir(a, tile.atomic(c), 8, True)


def _forward(func):
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


@_forward
def _forwarded(x):
    return x * 10


@ct.kernel
def _calls_forwarded(y):
    ct.scatter(y, (), _forwarded(5))


@ct.kernel
def _np_call_of_a_tuple(x, TILE: ct.Constant[int]):
    ct.store(x, index=(ct.bid(0),), tile=ct.full((TILE,), np.float32((1, 2, 3)), np.float32))


def test_unsupported_python_is_a_clear_error_not_an_internal_one():
    """Two of cuTile's tests that were tilejit internal errors: a decorator's ``**kwargs``
    forwarding wrapper and ``np.float32((1, 2, 3))``."""
    y = np.zeros((), np.int32)
    with pytest.raises(tile.UnsupportedError, match=r"forwards keyword arguments"):
        ct.launch(tile.Device(0).new_stream(), (1,), _calls_forwarded, (tile.atomic(y),))
    x = np.zeros(8, np.float32)
    with pytest.raises(ct.TileTypeError, match=r"cannot call"):
        ct.launch(tile.Device(0).new_stream(), (1,), _np_call_of_a_tuple, (tile.atomic(x), 8))
