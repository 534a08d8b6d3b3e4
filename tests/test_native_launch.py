"""The launch hot path: the C launcher (tilejit._native) and the pure-Python path must agree.

CI runs the whole suite twice, with and without the extension (TILEJIT_NATIVE=0); the tests here
pin what the C launcher does itself (plain launches of cached kernels) and where it must hand a
launch back to Python (errors keep their usual messages)."""
import contextlib
import math

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, native
from tilejit.runtime.cuda_executable import ParamPacker, native_layout

pytestmark = pytest.mark.usefixtures("simulator_backend")

needs_native = pytest.mark.skipif(not native.enabled(),
                                  reason="the C extension is not built or TILEJIT_NATIVE=0")


@tile.entry
def axpb(z, x, a, b):
    z.store(tile.load_tile_like(x, z) * a + b)


@tile.entry
def flag(z, x, on):
    t = tile.load_tile_like(x, z)
    if on:
        t = t + 1.0
    z.store(t)


def _data(n=100, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_repeated_plain_launches_are_right_and_counted():
    s = tile.Device(0).new_stream()
    a = _data()
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((100,)).sync_on(s)
    for i in range(5):                                  # first: compile; then cache hits
        axpb(z.partition((32,)), x, float(i), i).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), a * i + i, rtol=1e-6, atol=1e-6)
    assert axpb.stats.compiles == 1 and axpb.stats.launches == 5
    assert axpb.stats.cache_hits >= 4


def test_python_float_scalars_meeting_float32_are_converted_once():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.ones(32, np.float32)).sync_on(s)
    z = api.zeros((32,)).sync_on(s)
    for _ in range(2):
        axpb(z.partition((32,)), x, 0.1, 0).sync_on(s)
        assert z.to_numpy()[0] == np.float32(0.1)


def test_bool_scalars_and_new_partitions_each_call():
    s = tile.Device(0).new_stream()
    a = _data(64, 1)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    for on in (True, False, True, False):
        flag(z.partition((16,)), x, on).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), a + (1.0 if on else 0.0), rtol=1e-6, atol=1e-6)


def test_errors_after_the_cache_is_warm_keep_their_messages():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(_data(64, 2)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), x, 1.0, 0).sync_on(s)
    with pytest.raises(tile.TensorError, match="share memory"):
        axpb(z.partition((16,)), z, 1.0, 0).sync_on(s)            # output aliases an input
    w = api.zeros((64,)).sync_on(s)
    p = w.into_partition((16,))
    with pytest.raises(tile.TensorError, match="moved into a partition"):
        axpb(z.partition((16,)), w, 1.0, 0).sync_on(s)
    p.unpartition()
    with pytest.raises(OverflowError, match="out of bounds for u?int64"):
        axpb(z.partition((16,)), x, 1.0, 1 << 70).sync_on(s)
    with pytest.raises(TypeError, match="cannot pass list"):
        axpb(z.partition((16,)), x, [1.0], 0).sync_on(s)
    # and the kernel still works afterwards
    axpb(z.partition((16,)), x, 2.0, 0).sync_on(s)
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() * 2)


def test_numpy_arguments_and_lazy_inputs_take_the_general_path():
    s = tile.Device(0).new_stream()
    a = _data(64, 3)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), a, 3.0, 1).sync_on(s)                 # NumPy: copied in
    np.testing.assert_allclose(z.to_numpy(), a * 3 + 1, rtol=1e-6, atol=1e-6)
    axpb(z.partition((16,)), api.from_numpy(a), 1.0, 1).sync_on(s)  # a DeviceOp input
    np.testing.assert_allclose(z.to_numpy(), a + 1, rtol=1e-6, atol=1e-6)


def test_explicit_grid_is_respected():
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((16,)), x, 1.0, 0).sync_on(s)
    z2 = api.zeros((64,)).sync_on(s)
    axpb(z2.partition((16,)), x, 5.0, 0).grid((2, 1, 1)).sync_on(s)   # only half the blocks
    out = z2.to_numpy()
    assert (out[:32] == 5).all() and (out[32:] == 0).all()


def test_threads_launch_correctly():
    import threading
    s_x = api.from_numpy(_data(256, 4)).sync()
    errors = []

    def work(seed):
        try:
            st = tile.Device(0).new_stream()
            z = api.zeros((256,)).sync_on(st)
            for k in range(20):
                axpb(z.partition((64,)), s_x, float(seed), k).sync_on(st)
                np.testing.assert_allclose(z.to_numpy(), s_x.to_numpy() * seed + k, rtol=1e-6, atol=1e-6)
                shift_scale(z.partition((64,)), s_x, k % 3, 2.0).sync_on(st)   # bound in C
                np.testing.assert_allclose(z.to_numpy(), (s_x.to_numpy() + k % 3) * 2, rtol=1e-6)
        except Exception as e:          # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@needs_native
def test_native_packing_matches_the_python_packer():
    slots = ("u64", "i32", "i32", "f16", "i64", "bf16", "u8", "f64", "f32", "i8", "u16", "i16",
             "u32", "b1", "tf32")
    vals = (0x1234_5678_9ABC, -5, 7, 1.5, -(2 ** 40), 2.0, 255, 0.1, 3.25, -3, 65535, -2,
            4_000_000_000, 1, 1.0 / 3)
    pk = ParamPacker(slots)
    pk.pack(vals)
    assert native.ext().pack(native_layout(slots), vals) == pk.packed_bytes()
    for special in (math.inf, -math.inf, -0.0, 65504.0, 1e-8):
        one = ParamPacker(("bf16", "f16"))
        one.pack((special, special))
        assert native.ext().pack(b"Ee", (special, special)) == one.packed_bytes()
    with pytest.raises(OverflowError):
        native.ext().pack(b"i", (1 << 31,))
    with pytest.raises(ValueError, match="slots"):
        native.ext().pack(b"ii", (1,))
    assert native_layout(("f8e4m3",)) is None            # packed in Python


def test_info_reports_the_launch_path():
    line = native.status()
    assert ("native C extension" in line) == native.enabled()


def test_lazy_call_methods_agree_with_python():
    """kernel(...), op.submit_on(s) and op.sync_on(s) run in C with the extension; keywords,
    arity errors, reentrancy and non-Stream arguments go back to the Python methods."""
    from tilejit.dispatcher import Kernel, KernelLaunch
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    op = axpb(z.partition((32,)), x, 2.0, 1)
    assert type(op) is KernelLaunch and op.arity == 4 and op._simple
    fut = op.submit_on(s)
    assert type(fut) is tile.DeviceFuture and fut.stream is s
    fut.result()
    np.testing.assert_allclose(z.to_numpy(), a * 2 + 1, rtol=1e-6)
    op = axpb(z=z.partition((32,)), x=x, a=3.0, b=0)            # keywords: bound in Python
    assert op.sync_on(s)[1] is x
    np.testing.assert_allclose(z.to_numpy(), a * 3, rtol=1e-6)
    with pytest.raises(TypeError, match="axpb"):
        axpb(z.partition((32,)), x)
    with pytest.raises(TypeError):
        axpb(z.partition((32,)), x, 1.0, 2, b=3)
    axpb(z.partition((32,)), x, 1.0, 0).submit_on(s._cu if s._cu is not None else s).result()
    np.testing.assert_allclose(z.to_numpy(), a, rtol=1e-6)
    inner = []

    def nested(_):
        with pytest.raises(tile.SchedulingError, match="non-reentrant"):
            axpb(z.partition((32,)), x, 1.0, 0).submit_on(s)
        inner.append(True)
        return tile.value(None)
    api.zeros((4,)).then(nested).sync_on(s)
    assert inner == [True]
    if native.enabled():
        assert type(Kernel.__dict__["__call__"]).__name__ == "method_descriptor"
        assert type(KernelLaunch.__dict__["submit_on"]).__name__ == "method_descriptor"
        assert type(tile.Tensor.__dict__["partition"]).__name__ == "method_descriptor"


def test_tile_partition_of_torch_tensors_in_c_matches_python():
    torch = pytest.importorskip("torch")
    from tilejit.runtime import foreign
    from tilejit.runtime.partition import HostPartition
    foreign.reader_for(torch.Tensor)                  # registers torch with the extension
    z = torch.zeros(8, 4)
    tile_shape = (4, 4)
    # a CPU tensor is a host output (copied back through NumPy) on both paths; GPU tensors are
    # ForeignPartitions made in C (tests/gpu/test_native_launch_gpu.py)
    p = tile.partition(z, tile_shape)
    assert type(p) is HostPartition and p.value is z and p.tile_shape == (4, 4)
    with pytest.raises(tile.TensorError, match="in host memory and NumPy cannot view it"):
        tile.partition(torch.nn.Parameter(z), (2, 4))       # requires grad: no NumPy view
    assert tile.partition(array=z, tile_shape=(8, 4)).tile_shape == (8, 4)
    for bad, msg in [((3, 4), "power of two"), ((4,), "rank"), ((0, 4), "power of two"),
                     ((4, 4, 4, 4), "rank"), ([4, 4], None)]:
        if msg is None:
            assert tile.partition(z, bad).tile_shape == (4, 4)   # a list is normalized
            continue
        with pytest.raises(tile.TensorError, match=msg):
            tile.partition(z, bad)
    with pytest.raises(tile.TensorError, match="not a partition"):
        tile.partition(p, (4, 4))
    if native.enabled() and foreign.torch_exchange_active():
        assert tile.partition is native.ext().partition


def test_tensor_partition_in_c_keeps_the_lease_rules():
    """t.partition(shape) runs in C in its common case: the lease, conflicts and every error
    stay the Python method's."""
    from tilejit.runtime.partition import Partition
    s = tile.Device(0).new_stream()
    z = api.zeros((64,)).sync_on(s)
    p = z.partition((32,))
    assert type(p) is Partition and p.tile_shape == (32,) and p.grid == (2, 1, 1)
    assert p._leased and not p.owned and p._ref() is p
    with pytest.raises(tile.TensorError, match="cannot partition .* already partitioned"):
        z.partition((32,))
    with pytest.raises(tile.TensorError, match="cannot partition .* already partitioned"):
        z[:32].partition((32,))
    w = api.zeros((64,)).sync_on(s)
    w1, w2 = w[:32].partition((32,)), w[32:].partition((16,))   # disjoint slices may coexist
    w1.unpartition()
    w2.unpartition()
    x = api.from_numpy(_data(64)).sync_on(s)
    axpb(p, x, 1.0, 0).sync_on(s)                     # the launch ends the lease
    assert not p._leased
    for bad, msg in [((3,), "power of two"), ((4, 4), "rank"), ([32], None)]:
        if msg is None:
            z.partition(bad).unpartition()            # a list is normalized by Python
            continue
        with pytest.raises(tile.TensorError, match=msg):
            z.partition(bad)
    one = api.zeros((4,)).sync_on(s)
    b = tile.Tensor._new(one.storage, (8, 4), (0, 1), 0, one.dtype)    # stride 0: a broadcast
    with pytest.raises(tile.TensorError, match="broadcast"):
        b.partition((8, 4))
    o = z.into_partition((32,))
    with pytest.raises(tile.TensorError):
        z.partition((32,))                            # moved into o
    o.unpartition()
    z.partition((64,)).unpartition()


def test_prepared_launch_in_c_matches_python():
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    p = axpb(z.partition((32,)), x, 2.0, 1).prepare(s)
    for _ in range(3):
        p.launch()
    s.synchronize()
    np.testing.assert_allclose(z.to_numpy(), a * 2 + 1, rtol=1e-6)
    p.close()
    with pytest.raises(tile.LaunchError, match="closed"):
        p.launch()


class _CAIView:
    """A foreign array known only by its __cuda_array_interface__ (here a simulated tensor's)."""

    ndim = 1

    def __init__(self, t):
        self.t = t

    @property
    def __cuda_array_interface__(self):
        return self.t.__cuda_array_interface__

    @property
    def shape(self):
        return self.t.shape


def test_foreign_partition_imported_for_a_launch_is_released_after_it():
    """tile.partition of an array without a metadata reader on this path is imported for the
    launch (fp._live); the launch, in C or Python, drops the import and its lease afterwards."""
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    w = _CAIView(z)
    for i in range(1, 4):
        fp = tile.partition(w, (16,))
        axpb(fp, x, float(i), 0).sync_on(s)
        assert fp._live is None
        np.testing.assert_allclose(z.to_numpy(), a * i, rtol=1e-6)
    z.partition((64,)).unpartition()             # no lease left behind on the storage


def test_runtime_classes_keep_the_layout_the_c_launcher_reads():
    """The C launcher reads the runtime classes' __slots__ by offset (set_layout); a class
    without them turns every C path off, and launches stay right in Python."""
    from tilejit import dispatcher
    classes = dispatcher.layout_args()
    ext = native.ext()
    if ext is None:
        assert not dispatcher._NATIVE_LAYOUT
        return
    assert dispatcher._NATIVE_LAYOUT and ext.set_layout(*classes)
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    axpb(z.partition((32,)), x, 1.0, 0).sync_on(s)

    class NoSlots:
        pass
    try:
        assert not ext.set_layout(*classes[:-2], NoSlots, classes[-1])
        before = axpb._native.total
        for i in range(3):
            op = axpb(z.partition((32,)), x, 2.0, float(i))
            assert type(op) is dispatcher.KernelLaunch
            op.sync_on(s)
            np.testing.assert_allclose(z.to_numpy(), a * 2 + i, rtol=1e-6)
        assert axpb._native.total == before                 # nothing went through C
    finally:
        assert ext.set_layout(*classes)
    axpb(z.partition((32,)), x, 1.0, 0).sync_on(s)
    assert axpb._native.total > before


class _FakeCupyArray:
    """What the C launcher reads of a cupy.ndarray (data.ptr, data.device_id, shape, byte
    strides, dtype), over a simulated tensor's memory."""

    class _Mem:
        def __init__(self, ptr):
            self.ptr, self.device_id = ptr, 0

    def __init__(self, t, shape=None, strides=None):
        cai = t.__cuda_array_interface__
        self.t, self.data = t, self._Mem(cai["data"][0])
        self.dtype = np.dtype(cai["typestr"])
        self.shape = tuple(shape or cai["shape"])
        self.strides = tuple(strides or (self.dtype.itemsize,))
        self.ndim = len(self.shape)

    @property
    def __cuda_array_interface__(self):
        return dict(self.t.__cuda_array_interface__, shape=self.shape, strides=self.strides)


@needs_native
def test_cupy_arrays_are_read_in_c_from_their_attributes():
    """The C reader of CuPy arrays (registered by runtime.foreign's CuPy reader), exercised with
    a stand-in type: inputs and tile.partition outputs launch in C, ordered after the producer's
    stream once per launch; byte strides that are not whole elements go back to Python."""
    import sys
    if "cupy" in sys.modules:
        pytest.skip("the real CuPy is registered in this process")
    ext = native.ext()
    streams = []

    class Producer:
        ptr = 0

    def current_stream():
        streams.append(1)
        return Producer()
    ext.set_cupy(_FakeCupyArray, {np.dtype(np.float32): ("float32", 4)}, current_stream)
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    xc, zc = _FakeCupyArray(x), _FakeCupyArray(z)
    fp = tile.partition(zc, (16,))                  # made in C for a registered CuPy type
    assert type(fp) is tile.ForeignPartition and fp.value is zc and fp.tile_shape == (16,)
    with pytest.raises(tile.TensorError, match="power of two"):
        tile.partition(zc, (24,))                   # errors stay Python's
    for i in range(1, 4):
        before, n = axpb._native.total, len(streams)
        axpb(tile.partition(zc, (16,)), xc, float(i), 1).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), a * i + 1, rtol=1e-6)
        if i > 1:                                   # the first call memoized the keys in Python
            assert axpb._native.total == before + 1 and len(streams) == n + 1
    xc.shape, xc.strides = (32,), (8,)          # the same array object, relaid in place
    for _ in range(2):
        axpb(z[:32].partition((16,)), xc, 1.0, 0).sync_on(s)
        np.testing.assert_allclose(z.to_numpy()[:32], a[::2], rtol=1e-6)
    odd = _FakeCupyArray(x, shape=(16,), strides=(6,))             # 1.5 elements: refused
    with pytest.raises(tile.TensorError, match="not multiples of the element size"):
        axpb(z[:16].partition((16,)), odd, 1.0, 0).sync_on(s)


# --- calls passing their constants: the memo hit in C (csrc/prepared.c submit_bound) ----------
@tile.entry
def shift_scale(z, x, A: tile.Constant[int], F: tile.Constant[float] = 1.0):
    z.store((tile.load_tile_like(x, z) + A) * F)


_NOT_PLAIN = "constants, generics, compile options or a grid baked into the kernel"
_MISS = "no compiled specialization for these keys yet"


class _BoundCalls:
    """Calls of ``k(z.partition((32,)), x, *constants)`` counting what each one took: C's stats
    and how often Python looked the binding up (KernelLaunch._launch_bound, which C skips on a
    memo hit)."""

    def __init__(self, monkeypatch, k, s, z, x):
        from tilejit.kernel_launch import KernelLaunch
        self.k, self.s, self.z, self.x, self.python = k, s, z, x, 0
        bound = KernelLaunch._launch_bound

        def spy(op, stream, wait):
            self.python += 1
            return bound(op, stream, wait)
        monkeypatch.setattr(KernelLaunch, "_launch_bound", spy)

    def __call__(self, *consts, x=None, grid=None, options=None, wait=True):
        """(output, native.stats(), Python binding lookups) of one call"""
        op = self.k(self.z.partition((32,)), self.x if x is None else x, *consts)
        if options is not None:
            op = op.compile_options(options)
        if grid is not None:
            op = op.grid(grid)
        native.reset_stats()
        before = self.python
        out = op.sync_on(self.s) if wait else op.submit_on(self.s).result()
        return out, native.stats(), self.python - before


def test_a_call_passing_its_constants_is_bound_in_c_from_the_memo(monkeypatch):
    """The second call with the same constants' values (and options) finds its bound kernel in
    Kernel._bindings in C and launches it there, no Python frame; a value of another type that
    the memo finds equal (1, True, 1.0; 0.0, -0.0), a miss, lazy arguments and a constant
    given twice are Python's, with its kernels, results and errors. Without the extension: the same results."""
    on = native.enabled()
    k = tile.entry(shift_scale.py_func)
    s = tile.Device(0).new_stream()
    a = np.abs(_data(64)) + 1                   # x + A > 0: (x + A) * F has F's sign
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    call = _BoundCalls(monkeypatch, k, s, z, x)
    c_hit = {"launches": 1, "fallbacks": {}}

    def hit(*consts, c_stats=c_hit, **kw):
        """a call C binds itself (without the extension: Python)"""
        out, st, py = call(*consts, **kw)
        assert out[2:] == consts and all(o is c for o, c in zip(out[2:], consts))
        assert py == (0 if on else 1) and (not on or st == c_stats), (consts, st, py)
        return out

    assert call(3, 2.0)[2] == 1                              # the first: Python binds it
    for wait in (True, False):                              # sync_on, submit_on
        out = hit(3, 2.0, wait=wait)
        assert len(out) == 4 and out[1] is x                # every argument, as passed
        np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)
    assert call(4, 2.0)[2] == 1                              # other values: a miss
    hit(4, 2.0)
    np.testing.assert_allclose(z.to_numpy(), (a + 4) * 2, rtol=1e-6)
    hit(3, 2.0)                                             # both stay bound
    np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)
    # flat, float-free values: checked by their types. True is an int constant's 1 (the same
    # kernel), 1.0 is refused: both Python's, though the memo holds (1, 2) equal to them
    call(1, 2)
    compiles = k.stats.compiles
    hit(1, 2)
    assert call(True, 2)[2] == 1 and k.stats.compiles == compiles
    assert call(1, 2)[2] == 1                                # the memo now holds True's types
    hit(1, 2)
    with pytest.raises(TypeError, match="Constant\\[int\\] but got float 1.0"):
        call(1.0, 2)
    assert call(1, 2.0)[2] == 1 and k.stats.compiles == compiles   # F=2.0 is F=2's kernel
    with pytest.raises(TypeError, match="Constant\\[float\\] but got bool True"):
        call(1, True)
    # floats: checked by their bits; -0.0 binds its own kernel
    call(0, 0.0)
    hit(0, 0.0)
    assert not np.signbit(z.to_numpy()).any()
    assert call(0, -0.0)[2] == 1
    assert np.signbit(z.to_numpy()).all()
    hit(0, -0.0)
    assert np.signbit(z.to_numpy()).all()
    assert call(0, 0.0)[2] == 1 and not np.signbit(z.to_numpy()).any()
    # compile options are part of the key: an equal object hits
    opts = tile.CompileOptions(occupancy=2)
    assert call(3, 2.0, options=opts)[2] == 1
    hit(3, 2.0, options=tile.CompileOptions(occupancy=2))
    # an explicit grid: a new grid shape is given back by the bound kernel's launcher (a cache
    # miss, compiled by Python's plain path, no binding lookup), then launched in C
    call(4, 2.0)
    hit(3, 2.0, grid=(1, 1, 1), c_stats={"launches": 0, "fallbacks": {_MISS: 1}})
    hit(3, 2.0, grid=(1, 1, 1))
    np.testing.assert_allclose(z.to_numpy(), np.r_[(a[:32] + 3) * 2, (a[32:] + 4) * 2],
                               rtol=1e-6)
    # NumPy arguments: the bound kernel's launcher gives them back (copied in by Python)
    hit(3, 2.0, x=a * 2, c_stats={"launches": 0, "fallbacks": {
        "a NumPy array (copied in per launch)": 1}})
    np.testing.assert_allclose(z.to_numpy(), (a * 2 + 3) * 2, rtol=1e-6)
    # a lazy argument: the general path, counted once
    out, st, py = call(3, 2.0, x=api.from_numpy(a))
    assert py == 1 and (not on or st == {"launches": 0, "fallbacks": {_NOT_PLAIN: 1}})
    np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)
    # a grid baked into the kernel: the general path, counted once
    native.reset_stats()
    k(z.partition((32,)), x, 3, 2.0).const_grid((2, 1, 1)).sync_on(s)
    assert not on or native.stats() == {"launches": 0, "fallbacks": {_NOT_PLAIN: 1}}
    # generics with every constant passed: Python's check and error
    with pytest.raises(tile.LaunchError, match="given twice"):
        k(z.partition((32,)), x, 3, 2.0).generics(A=4).sync_on(s)
    launches = k.stats.launches
    hit(3, 2.0)
    assert k.stats.launches == launches + 1                 # every launch counted
    with pytest.raises(TypeError, match="'A'"):              # unhashable: Python explains
        call([3], 2.0)
    if on:                  # the constants' positions the C lookup takes (Kernel._const_pos)
        from tilejit.deviceops.deviceop import DeviceOp
        with pytest.raises(ValueError, match="const_pos"):
            native.ext().Launcher({}, (None,), DeviceOp, None, 2, False, (5,))


def test_bound_calls_inside_a_running_op_are_refused(monkeypatch):
    """The submission guard holds for a call C binds: Python's SchedulingError (counted as
    reentrant), and then_unchecked lifts it."""
    k = tile.entry(shift_scale.py_func)
    s = tile.Device(0).new_stream()
    x = api.from_numpy(_data(64)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    call = _BoundCalls(monkeypatch, k, s, z, x)
    call(3, 2.0)
    native.reset_stats()
    with pytest.raises(tile.SchedulingError, match="sync\\(\\)/sync_on\\(\\) was called"):
        tile.value(1).map(lambda _: k(z.partition((32,)), x, 3, 2.0).sync_on(s)).sync()
    with pytest.raises(tile.SchedulingError, match="submit_on\\(\\)/schedule\\(\\)/await"):
        tile.value(1).map(lambda _: k(z.partition((32,)), x, 3, 2.0).submit_on(s)).sync()
    if native.enabled():
        assert native.stats() == {"launches": 0, "fallbacks": {"launched inside a running op": 2}}
        native.reset_stats()
    tile.value(1).then_unchecked(
        lambda _: tile.value(k(z.partition((32,)), x, 3, 2.0).sync_on(s))).sync()
    if native.enabled():
        assert native.stats() == {"launches": 1, "fallbacks": {}}
    out, st, py = call(3, 2.0)                              # the guard was given back
    assert py == (0 if native.enabled() else 1)


def test_forgotten_bindings_are_bound_again_and_every_launch_is_counted(monkeypatch):
    """_forget_bound (past _MAX_BOUND bound kernels) clears the memo C reads: the next call is
    bound again by Python, then launched by C; kernel.stats counts every launch, those of
    forgotten bound kernels included, and nothing compiles again."""
    from tilejit import dispatcher
    k = tile.entry(shift_scale.py_func)
    s = tile.Device(0).new_stream()
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    call = _BoundCalls(monkeypatch, k, s, z, x)
    monkeypatch.setattr(dispatcher, "_MAX_BOUND", 2)
    for c in (1, 2, 1, 2):
        call(c, 2.0)
    assert k.stats.launches == 4 and len(k._bound_kernels) == 2
    assert call(3, 2.0)[2] == 1 and len(k._bound_kernels) == 1     # the others forgotten
    assert call(1, 2.0)[2] == 1                              # bound again, by Python
    assert call(1, 2.0)[2] == (0 if native.enabled() else 1)
    np.testing.assert_allclose(z.to_numpy(), (a + 1) * 2, rtol=1e-6)
    assert k.stats.launches == 7 and k.stats.compiles == 3
    k._forget_bound()
    assert call(1, 2.0)[2] == 1 and k.stats.launches == 8


_UNSET = object()


def _launch_slots(op):
    """Every __slots__ value of a KernelLaunch (its class and bases), _UNSET where unset."""
    names = [n for c in type(op).__mro__ for n in c.__dict__.get("__slots__", ())
             if n not in ("__dict__", "__weakref__")]
    return {n: getattr(op, n, _UNSET) for n in names}


@contextlib.contextmanager
def _no_layout():
    """The C extension told that KernelLaunch's slots changed shape (set_layout refuses), as a
    changed class would: every C path then takes the Python method. Restored after."""
    from tilejit import dispatcher
    classes = dispatcher.layout_args()

    class NoSlots:
        pass
    try:
        assert not native.ext().set_layout(*classes[:-2], NoSlots, classes[-1])
        yield
    finally:
        assert native.ext().set_layout(*classes)


def test_grid_copies_as_the_python_method_does(monkeypatch):
    """``op.grid((gx, gy, gz))`` of three ints in range is C's (no Python frame, no
    normalize_grid): the copy's every slot is what the Python method's
    ``KernelLaunch(kernel, args, grid, const_grid, generics, options)`` sets (generics,
    const_grid and options kept, a generics dict copied, not run), the replaced launch is
    accounted for, and the copy launches in C. Other spellings, a subclass, no layout and every
    error are the Python method's."""
    import re
    from tilejit.deviceops.deviceop import RAN_SLOT, account_for
    from tilejit.kernel_launch import KernelLaunch
    from tilejit.runtime import argspec
    on = native.enabled()
    normalize, normalized = argspec.normalize_grid, []

    def spy(g):
        normalized.append(g)
        return normalize(g)
    monkeypatch.setattr(argspec, "normalize_grid", spy)
    if on:
        assert type(KernelLaunch.__dict__["grid"]).__name__ == "method_descriptor"
    s = tile.Device(0).new_stream()
    a = np.abs(_data(64)) + 1
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    k = tile.entry(shift_scale.py_func)
    opts = tile.CompileOptions(occupancy=2)
    launches = {
        "plain": lambda: axpb(z.partition((32,)), x, 2.0, 1),
        "keywords (made in Python)": lambda: axpb(z=z.partition((32,)), x=x, a=2.0, b=1),
        "constants": lambda: k(z.partition((32,)), x, 3, 2.0),
        "generics": lambda: k(z.partition((32,)), x).generics(A=3),
        "const_grid": lambda: axpb(z.partition((32,)), x, 2.0, 1).const_grid((2, 1, 1)),
        "options": lambda: k(z.partition((32,)), x, 3, 2.0).compile_options(opts),
        "all three": lambda: k(z.partition((32,)), x).generics(A=3).const_grid((2, 1, 1))
        .compile_options(opts),
        "a grid already": lambda: axpb(z.partition((32,)), x, 2.0, 1).grid((1, 1, 1)),
    }
    for what, make in launches.items():
        for grid in ((2, 1, 1), (0, 0, 0), ((1 << 24) - 1, 65535, 1)):
            op = make()
            normalized.clear()
            copy = op.grid(grid)
            assert normalized == ([] if on else [grid]), what
            want = KernelLaunch(op.kernel, op.args, grid, op._const_grid, op._generics,
                                op._options)
            assert _launch_slots(copy) == _launch_slots(want), (what, grid)
            assert type(copy) is KernelLaunch and copy.__dict__ == {}
            assert copy.kernel is op.kernel and copy.args is op.args and copy._grid is grid
            assert copy._const_grid is op._const_grid and copy._options is op._options
            assert copy._simple is (op.kernel is axpb and what != "const_grid")
            assert (copy._generics is op._generics) == (not op._generics)   # else a copy
            assert copy._values == op._values and (op._values is None) == (not op._generics)
            assert getattr(op, RAN_SLOT) is False and not hasattr(copy, RAN_SLOT), what
            account_for(copy)
            account_for(want)
            del op, copy, want                  # their partitions' leases
    op = axpb(z.partition((32,)), x, 2.0, 1)
    op.sync_on(s)
    account_for(op.grid((2, 1, 1)))
    assert getattr(op, RAN_SLOT) is True                    # it ran: it stays so
    del op
    # the copy launches in C: a plain call, one passing its constants and one binding them
    # with .generics (the second time)
    for make, want in ((launches["plain"], a[:32] * 2 + 1), (launches["constants"],
                                                            (a[:32] + 3) * 2),
                       (launches["generics"], a[:32] + 3)):
        for i in range(2):
            api.fill(z, 0.0).sync_on(s)
            native.reset_stats()
            out = make().grid((1, 1, 1)).sync_on(s)         # only the first block
            assert out[1] is x
            assert i == 0 or not on or native.stats() == {"launches": 1, "fallbacks": {}}
            np.testing.assert_allclose(z.to_numpy(), np.r_[want, np.zeros(32)], rtol=1e-6)
    # what normalize_grid normalizes: the Python method's (the same copy)
    for g in ([2, 1, 1], (2,), 2, (2, 1), (np.int64(2), 1, 1), (2, 1, np.int32(1))):
        op = axpb(z.partition((32,)), x, 2.0, 1)
        normalized.clear()
        copy = op.grid(g)
        assert normalized == [g] and copy._grid == (2, 1, 1) and type(copy._grid) is tuple
        assert getattr(op, RAN_SLOT) is False and not hasattr(copy, RAN_SLOT)
        account_for(copy)
        del op, copy
    copy = axpb(z.partition((32,)), x, 2.0, 1).grid(grid=(2, 1, 1))
    assert copy._grid == (2, 1, 1)
    account_for(copy)
    del copy
    # errors: normalize_grid's, and the replaced launch is accounted for all the same
    for g in ((-1, 1, 1), (1, 1, -5), (1 << 24, 1, 1), (1, 1 << 24, 1), (1, 1, 1 << 70),
              (True, 1, 1), (1, False, 1), (2.0, 1, 1), (1, 2, 3, 4), (), "abc", None,
              [1, -1, 1]):
        with pytest.raises(Exception) as err:
            normalize(g)
        op = axpb(z.partition((32,)), x, 2.0, 1)
        with pytest.raises(type(err.value), match=f"^{re.escape(str(err.value))}$"):
            op.grid(g)
        assert getattr(op, RAN_SLOT) is False, g
        del op
    op = axpb(z.partition((32,)), x, 2.0, 1)
    with pytest.raises(TypeError, match=r"grid\(\) missing 1 required positional argument"):
        op.grid()
    with pytest.raises(TypeError, match=r"grid\(\) takes 2 positional arguments but 3 were"):
        op.grid((1, 1, 1), (1, 1, 1))
    with pytest.raises(TypeError, match=r"grid\(\) got an unexpected keyword argument 'g'"):
        op.grid(g=(1, 1, 1))
    account_for(op)
    del op

    class Sub(KernelLaunch):
        __slots__ = ()
    op = Sub(axpb, (z.partition((32,)), x, 2.0, 1))
    normalized.clear()
    copy = op.grid((2, 1, 1))
    assert normalized == [(2, 1, 1)] and type(copy) is KernelLaunch
    account_for(copy)
    account_for(op)
    del op, copy
    if on:                  # no layout: every C path is Python's
        with _no_layout():
            normalized.clear()
            copy = axpb(z.partition((32,)), x, 2.0, 1).grid((2, 1, 1))
            assert normalized == [(2, 1, 1)] and not hasattr(copy, RAN_SLOT)
            account_for(copy)


# --- .generics(**named) in C (csrc/prepared.c klaunch_generics) ---------------------------------
@tile.entry
def scale_mid(z, A: tile.Constant[int], x, F: tile.Constant[float] = 1.0,
              G: tile.Constant[int] = 2):
    z.store((tile.load_tile_like(x, z) + A) * F + G)


def _python_generics(monkeypatch):
    """A list the Python ``KernelLaunch.generics`` appends its launch to (it calls
    ``account_for(self)`` first; C's copy does not call it), and the kernels'
    ``_with_generics`` calls (C computes the values itself)."""
    from tilejit import kernel_launch
    from tilejit.dispatcher import Kernel
    calls, with_generics = [], []
    account_for, rule = kernel_launch.account_for, Kernel._with_generics

    def spy(op):
        calls.append(op)
        return account_for(op)

    def spy_rule(k, args, generics):
        with_generics.append(k)
        return rule(k, args, generics)
    monkeypatch.setattr(kernel_launch, "account_for", spy)
    monkeypatch.setattr(Kernel, "_with_generics", spy_rule)
    return calls, with_generics


def test_generics_copies_as_the_python_method_does(monkeypatch):
    """``op.generics(NAME=value, ...)``, keywords naming the kernel's constants, is C's (no Python
    frame): the copy's every slot is what the Python method's ``KernelLaunch(kernel, args, grid,
    const_grid, dict(op._generics) updated with the keywords, options)`` sets: the generics in
    the same order, ``_values`` by Kernel._with_generics's rule (runtime arguments or every
    parameter, defaults, MISSING, None for a constant given twice or another arity), not simple,
    not run; the replaced launch is accounted for. Positional values, a subclass, kernel tables
    other than Kernel.__init__ makes and no layout are the Python method's (the same copy)."""
    import types
    from tilejit.deviceops.deviceop import RAN_SLOT, account_for
    from tilejit.dispatcher import _MISSING
    from tilejit.kernel_launch import KernelLaunch
    on = native.enabled()
    if on:
        assert type(KernelLaunch.__dict__["generics"]).__name__ == "method_descriptor"
    python, rule = _python_generics(monkeypatch)
    s = tile.Device(0).new_stream()
    x = api.from_numpy(np.abs(_data(64)) + 1).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    k, m = tile.entry(shift_scale.py_func), tile.entry(scale_mid.py_func)
    opts = tile.CompileOptions(occupancy=2)
    P = object()            # stands for the call's partition in the expected values
    cases = [   # (what, the launch, keywords, the copy's _values: None, or P for the partition)
        ("runtime arguments", lambda zp: k(zp, x), dict(A=3), (P, x, 3, 1.0)),
        ("runtime arguments, A missing", lambda zp: k(zp, x), dict(F=2.0), (P, x, _MISSING, 2.0)),
        ("both", lambda zp: k(zp, x), dict(A=3, F=2.0), (P, x, 3, 2.0)),
        ("both, other order", lambda zp: k(zp, x), dict(F=2.0, A=3), (P, x, 3, 2.0)),
        ("every parameter, A missing", lambda zp: k(z=zp, x=x), dict(A=5), (P, x, 5, 1.0)),
        ("every parameter, F given twice", lambda zp: k(z=zp, x=x), dict(F=2.0), None),
        ("every parameter, both", lambda zp: k(z=zp, x=x), dict(A=5, F=1.0), None),
        ("every parameter passed", lambda zp: k(zp, x, 3, 2.0), dict(A=3), None),
        ("another arity", lambda zp: KernelLaunch(k, (zp, x, 3)), dict(A=3), None),
        ("chained", lambda zp: k(zp, x).generics(A=1), dict(F=2.0), (P, x, 1, 2.0)),
        ("chained, again", lambda zp: k(zp, x).generics(A=9, F=0.5), dict(A=3), (P, x, 3, 0.5)),
        ("grid before", lambda zp: k(zp, x).grid((1, 1, 1)), dict(A=3), (P, x, 3, 1.0)),
        ("grid of a list before", lambda zp: k(zp, x).grid([2, 1, 1]), dict(A=3),
         (P, x, 3, 1.0)),
        ("options before", lambda zp: k(zp, x).compile_options(opts), dict(A=3), (P, x, 3, 1.0)),
        ("const_grid before", lambda zp: k(zp, x).const_grid((2, 1, 1)), dict(A=3, F=2.0),
         (P, x, 3, 2.0)),
        ("all before", lambda zp: k(zp, x).generics(A=1).grid((1, 1, 1)).compile_options(opts),
         dict(F=2.0), (P, x, 1, 2.0)),
        ("constants between", lambda zp: m(zp, x), dict(G=5), (P, _MISSING, x, 1.0, 5)),
        ("constants between, two", lambda zp: m(zp, x), dict(F=0.5, A=1), (P, 1, x, 0.5, 2)),
        ("constants between, keywords", lambda zp: m(z=zp, x=x), dict(A=3), (P, 3, x, 1.0, 2)),
        ("constants between, given", lambda zp: m(z=zp, x=x, A=2), dict(A=3), None),
        ("constants only", lambda zp: fill_const(zp), dict(A=7), (P, 7)),
    ]
    for what, make, named, values in cases:
        op = make(z.partition((32,)))
        python.clear()
        rule.clear()
        copy = op.generics(**named)
        assert python == ([] if on else [op]) and rule == ([] if on else [op.kernel]), what
        g = dict(op._generics)
        g.update(named)
        want = KernelLaunch(op.kernel, op.args, op._grid, op._const_grid, g, op._options)
        assert _launch_slots(copy) == _launch_slots(want), what
        assert type(copy) is KernelLaunch and copy.__dict__ == {}, what
        assert copy.kernel is op.kernel and copy.args is op.args and copy.arity == op.arity
        assert copy._grid is op._grid and copy._const_grid is op._const_grid, what
        assert copy._options is op._options and copy._simple is False, what
        assert type(copy._generics) is dict and copy._generics is not op._generics, what
        assert list(copy._generics.items()) == list(want._generics.items()), what  # in order
        assert all(copy._generics[n] is v for n, v in want._generics.items()), what
        if values is None:
            assert copy._values is None and want._values is None, what
        else:
            assert type(copy._values) is tuple and len(copy._values) == len(values), what
            assert all(c is w for c, w in zip(copy._values, want._values)), what
            assert all(c is (op.args[0] if v is P else v) for c, v in zip(copy._values, values)
                       if type(v) is not float), what
            assert [c for c in copy._values if type(c) is float] == \
                [v for v in values if type(v) is float], what
        assert getattr(op, RAN_SLOT) is False and not hasattr(copy, RAN_SLOT), what
        account_for(copy)
        account_for(want)
        python.clear()
        del op, copy, want                  # their partitions' leases
    op = k(z.partition((32,)), x).generics(A=3)
    op.sync_on(s)
    account_for(op.generics(A=4))
    assert getattr(op, RAN_SLOT) is True                    # it ran: it stays so
    del op
    # the Python method's forms, and launches that are not what C copies: Python's copy
    zp = z.partition((32,))

    class Sub(KernelLaunch):
        __slots__ = ()
    for what, make, call, want in [
        ("one value", lambda: k(zp, x), lambda op: op.generics(3), {"A": 3}),
        ("a list", lambda: k(zp, x), lambda op: op.generics([3, 2.0]), {"A": 3, "F": 2.0}),
        ("values and keywords", lambda: k(zp, x), lambda op: op.generics(3, F=2.0),
         {"A": 3, "F": 2.0}),
        ("nothing", lambda: k(zp, x).generics(A=1), lambda op: op.generics(), {"A": 1}),
        ("nothing bound", lambda: k(zp, x), lambda op: op.generics(), {}),
        ("a dict", lambda: k(zp, x), lambda op: op.generics(**{"A": 3}), None),
        ("a subclass", lambda: Sub(k, (zp, x)), lambda op: op.generics(A=3), {"A": 3}),
    ]:
        op = make()
        python.clear()
        copy = call(op)
        if want is None:                    # **{...} is keywords: C's
            assert python == ([] if on else [op]) and copy._generics == {"A": 3}
        else:
            assert python == [op], what
            assert dict(copy._generics) == want and type(copy) is KernelLaunch, what
        g = KernelLaunch(k, op.args, op._grid, op._const_grid, copy._generics, op._options)
        assert _launch_slots(copy) == _launch_slots(g), what
        assert getattr(op, RAN_SLOT) is False and not hasattr(copy, RAN_SLOT), what
        account_for(copy)
        account_for(g)
        del op, copy, g
    # kernel tables other than Kernel.__init__ makes: Python's (the same copy)
    monkeypatch.setattr(k, "_constant_defaults", types.MappingProxyType({"F": 1.0}))
    op = k(zp, x)
    python.clear()
    copy = op.generics(A=3)
    assert python == [op] and copy._values == (zp, x, 3, 1.0)
    account_for(copy)
    monkeypatch.undo()
    python, rule = _python_generics(monkeypatch)
    if on:                  # no layout: every C path is Python's
        with _no_layout():
            op = k(zp, x)
            copy = op.generics(A=3)
            assert python == [op] and copy._values == (zp, x, 3, 1.0)
            account_for(copy)


def test_generics_errors_are_the_python_methods(monkeypatch):
    """An unknown name or too many values: the Python method's LaunchError, word for word, and
    the launch is accounted for all the same."""
    import re
    from tilejit.deviceops.deviceop import RAN_SLOT, account_for
    python, _ = _python_generics(monkeypatch)
    s = tile.Device(0).new_stream()
    x = api.from_numpy(_data(64)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    k = tile.entry(shift_scale.py_func)
    zp = z.partition((32,))
    unknown = "shift_scale has no tile.Constant parameter '{}' (constant parameters: A, F)"
    for make, call, msg in [
        (lambda: k(zp, x), lambda op: op.generics(B=1), unknown.format("B")),
        (lambda: k(zp, x), lambda op: op.generics(A=1, B=1), unknown.format("B")),
        (lambda: k(zp, x), lambda op: op.generics(a=1), unknown.format("a")),
        (lambda: k(zp, x).generics(A=1), lambda op: op.generics(F=1.0, x=1), unknown.format("x")),
        (lambda: k(zp, x), lambda op: op.generics(1, 2.0, 3),
         "shift_scale has 2 constant parameter(s), 3 values given"),
        (lambda: k(zp, x), lambda op: op.generics([1, 2.0, 3], A=1),
         "shift_scale has 2 constant parameter(s), 3 values given"),
        (lambda: axpb(zp, x, 1.0, 0), lambda op: op.generics(S=1),
         "axpb has no tile.Constant parameter 'S' (constant parameters: none)"),
    ]:
        op = make()
        python.clear()
        with pytest.raises(tile.LaunchError, match=f"^{re.escape(msg)}$"):
            call(op)
        assert python == [op] and getattr(op, RAN_SLOT) is False, msg
        del op
    op = k(zp, x)
    with pytest.raises(TypeError, match="keywords must be strings"):
        op.generics(**{1: 2})
    account_for(op)


def test_a_generics_copy_launches_and_warns_as_the_python_one(monkeypatch):
    """The copy C makes launches (in C, the second time: the bound kernel from the memo) with
    the right values; the replaced launch never warns, the copy warns when dropped unrun (once,
    also when the arguments are lazy) and not once it ran."""
    import gc
    import warnings

    def never_run(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
            gc.collect()
        return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)
                and "was never run" in str(w.message)]

    on = native.enabled()
    s = tile.Device(0).new_stream()
    a = np.abs(_data(64)) + 1
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    k = tile.entry(shift_scale.py_func)
    half = np.zeros(32)
    for make, want in [
        (lambda: k(z.partition((32,)), x).generics(A=3, F=2.0), (a + 3) * 2),
        (lambda: k(z.partition((32,)), x).generics(A=4), a + 4),
        (lambda: k(z.partition((32,)), x).generics(F=0.5).generics(A=2), (a + 2) * 0.5),
        (lambda: k(z=z.partition((32,)), x=x).generics(A=5), a + 5),
        (lambda: k(z.partition((32,)), x).grid((1, 1, 1)).generics(A=3),
         np.r_[a[:32] + 3, half]),
        (lambda: k(z.partition((32,)), x).generics(A=3).grid((1, 1, 1)),
         np.r_[a[:32] + 3, half]),
    ]:
        for i in range(2):
            api.fill(z, 0.0).sync_on(s)
            native.reset_stats()
            out = make().sync_on(s)
            assert out[1] is x                              # the arguments as passed
            assert i == 0 or not on or native.stats() == {"launches": 1, "fallbacks": {}}
            np.testing.assert_allclose(z.to_numpy(), want, rtol=1e-6)
        fut = make().submit_on(s)
        fut.result()
        np.testing.assert_allclose(z.to_numpy(), want, rtol=1e-6)
    # the never-run warning: the copy's only
    for what, make, name in [
        ("a copy", lambda: k(z.partition((32,)), x).generics(A=3), "A=3"),
        ("a copy of a copy", lambda: k(z.partition((32,)), x).generics(A=3).generics(F=2.0),
         "F=2.0"),
        ("a copy of a lazy argument", lambda: k(z.partition((32,)), api.dup(x)).generics(A=3),
         "A=3"),
        ("a grid copy of a copy", lambda: k(z.partition((32,)), x).generics(A=3).grid((1, 1, 1)),
         "grid (1, 1, 1)"),
    ]:
        ws = never_run(make)
        assert len(ws) == 1 and name in ws[0] and "shift_scale" in ws[0], (what, ws)
    assert never_run(lambda: k(z.partition((32,)), x).generics(A=3).sync_on(s)) == []
    assert never_run(lambda: k(z.partition((32,)), api.dup(x)).generics(A=3).sync_on(s)) == []

    def refused():
        with pytest.raises(tile.LaunchError, match="no tile.Constant parameter 'B'"):
            k(z.partition((32,)), x).generics(B=3)
    assert never_run(refused) == []


def test_a_generics_copy_launches_through_the_stub_driver(monkeypatch):
    """Through the stub CUDA driver, as on a GPU: ``k(...).generics(...)`` reaches the driver
    once, from C, with the bound kernel's runtime values packed as the Python packer packs
    them."""
    import stub_cuda
    from tilejit.runtime import argspec
    from tilejit.runtime.stream import Stream
    if not native.enabled():
        pytest.skip("the C extension is not built or TILEJIT_NATIVE=0")
    if stub_cuda.compiler() is None:
        pytest.skip("no C compiler to build the stub driver (tests/stub_driver.c)")
    stub_cuda.build()
    s = Stream._make(tile.Device(0), 0x5000, None, owned=True)
    x = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    k = tile.entry(shift_scale.py_func)
    k(z.partition((32,)), x).generics(A=3, F=2.0).sync_on(s)       # compiled on the simulator
    k(z.partition((32,)), x).generics(A=3, F=2.0).grid((1, 1, 1)).sync_on(s)
    bound = k._bound_for((None, None, 3, 2.0))
    monkeypatch.setattr(Stream, "synchronize", lambda self: None)
    with stub_cuda.installed(bound) as stubs:
        (exe,) = stubs.values()
        for grid in (None, (1, 1, 1)):
            native.reset_stats()
            before = stub_cuda.count()
            op = k(z.partition((32,)), x)
            op = op.generics(A=3, F=2.0) if grid is None else op.grid(grid).generics(A=3, F=2.0)
            out = op.sync_on(s)
            assert native.stats() == {"launches": 1, "fallbacks": {}}
            assert stub_cuda.count() == before + 1 and exe.python_launches == 0
            assert out[1] is x and stub_cuda.last()[0:2] == (grid or (2, 1, 1), 0x5000)
            args = (z.partition((32,)), x)
            infos = [argspec.classify(v, ann, s) for v, ann in zip(args, bound._anns)]
            try:
                params = argspec.flatten_params(infos)
            finally:
                argspec.release_partitions(args)
            assert stub_cuda.last()[3:] == exe.expected(params)


# --- drift is loud: every argument kind, C and Python side by side (issue 22 item 2) ----------
@tile.entry
def copy_in(z, x):
    z.store(tile.load_tile_like(x, z))


@tile.entry
def copy_beside(z, acc, x):
    z.store(tile.load_tile_like(x, z))
    tile.atomic_add(acc, 0, 1.0)


@tile.entry
def fill_with(z, a):
    z.store(tile.full(z.shape, a, z.dtype))


@tile.entry
def widen(z, a):
    z.store(tile.full(z.shape, 0.0, z.dtype) + a.astype(z.dtype))


def test_generics_launch_the_kernel_bound_to_their_values(monkeypatch):
    """``kernel(runtime args).generics(...)`` (cuTile Rust's spelling) launches the kernel bound
    to those constants, the one a call passing them as arguments gets: no general path, no
    second compile; a default fills an unbound constant. With the extension a memo hit is C's
    (csrc/prepared.c submit_bound keys on the values KernelLaunch.__init__ filled in once,
    ``_values``): no Python lookup. What the general path explains (a constant missing, or
    given twice) still raises there."""
    from tilejit.deviceops.deviceop import account_for
    from tilejit.dispatcher import _MISSING
    on = native.enabled()
    k = tile.entry(shift_scale.py_func)
    s = tile.Device(0).new_stream()
    a = np.abs(_data(64)) + 1
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    call = _BoundCalls(monkeypatch, k, s, z, x)
    launched = {"launches": 1, "fallbacks": {}}        # by the bound kernel's C launcher
    opts = tile.CompileOptions(occupancy=2)

    def run(op):
        native.reset_stats()
        before = call.python
        out = op.sync_on(s)
        return out, native.stats(), call.python - before

    def generics(*values, out=z, **named):
        return run(k(out.partition((32,)), x).generics(*values, **named))

    def hit(make, want, st_want=launched):
        """the launch make() makes, whose binding C finds (without the extension: Python)"""
        api.fill(z, 0.0).sync_on(s)
        op = make()
        out, st, py = run(op)
        assert py == (0 if on else 1) and (not on or st == st_want), (st, py)
        assert len(out) == len(op.args) and all(o is v for o, v in zip(out, op.args))
        np.testing.assert_allclose(z.to_numpy(), want, rtol=1e-6)
    out, _, py = generics(A=3, F=2.0)
    assert py == 1 and len(out) == 2 and out[1] is x     # the output: the arguments passed
    np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)
    compiles, bound = k.stats.compiles, len(k._bound_kernels)
    for values, named in (((), dict(A=3, F=2.0)), (([3, 2.0],), {}), ((3, 2.0), {})):
        fresh = api.zeros((64,)).sync_on(s)
        out, st, py = generics(*values, out=fresh, **named)
        assert py == (0 if on else 1) and (not on or st == launched), (values, named, st)
        assert len(out) == 2 and out[1] is x
        np.testing.assert_allclose(fresh.to_numpy(), (a + 3) * 2, rtol=1e-6)
    out, st, py = call(3, 2.0)                           # passed as arguments: the same kernel
    assert py == (0 if on else 1) and (not on or st == launched)
    assert (k.stats.compiles, len(k._bound_kernels)) == (compiles, bound)
    # the values keyed on: the arguments with the constants in place, computed once
    op = k(z.partition((32,)), x).generics(A=3, F=2.0)
    assert op._values == (op.args[0], x, 3, 2.0) and type(op._values) is tuple
    account_for(op)
    del op
    op = k(z.partition((32,)), x, 3, 2.0)
    assert op._values is None
    account_for(op)
    del op
    hit(lambda: k(z.partition((32,)), x).generics(A=3, F=2.0), (a + 3) * 2)
    assert generics(A=5)[2] == 1                         # F's default, 1.0: bound by Python
    np.testing.assert_allclose(z.to_numpy(), a + 5, rtol=1e-6)
    assert len(k._bound_kernels) == bound + 1
    hit(lambda: k(z.partition((32,)), x).generics(A=5), a + 5)   # then C's
    out, st, py = generics(A=5, F=1.0)                   # the same binding as the default's
    assert not on or st == launched
    assert len(k._bound_kernels) == bound + 1
    # keywords pass every parameter, A left missing and F's default applied: .generics binds
    # A in place (F again: given twice)
    op = k(z=z.partition((32,)), x=x).generics(A=5)
    assert op.args[2] is _MISSING and op._values == (op.args[0], x, 5, 1.0)
    account_for(op)
    del op
    hit(lambda: k(z=z.partition((32,)), x=x).generics(A=5), a + 5)
    # a value of another type the memo finds equal: Python's check (True is A=1's kernel, 1.0
    # refused; -0.0 binds its own kernel)
    generics(A=1, F=2.0)
    hit(lambda: k(z.partition((32,)), x).generics(A=1, F=2.0), (a + 1) * 2)
    assert generics(A=True, F=2.0)[2] == 1 and len(k._bound_kernels) == bound + 2
    with pytest.raises(TypeError, match="Constant\\[int\\] but got float 1.0"):
        generics(A=1.0, F=2.0)
    assert generics(A=0, F=-0.0)[2] == 1 and np.signbit(z.to_numpy()).all()
    hit(lambda: k(z.partition((32,)), x).generics(A=0, F=-0.0), -np.zeros(64))
    assert np.signbit(z.to_numpy()).all()
    assert generics(A=0, F=0.0)[2] == 1 and not np.signbit(z.to_numpy()).any()
    # every copy carries the values: .generics on .generics, .grid either side, options
    op = k(z.partition((32,)), x).generics(A=9).generics(A=3).generics(F=2.0)
    assert op._values == (op.args[0], x, 3, 2.0)
    account_for(op)
    del op
    hit(lambda: k(z.partition((32,)), x).generics(A=9).generics(A=3).generics(F=2.0),
        (a + 3) * 2)
    half = np.r_[(a[:32] + 3) * 2, np.zeros(32)]
    run(k(z.partition((32,)), x).generics(A=3, F=2.0).grid((1, 1, 1)))   # a new grid: compiles
    hit(lambda: k(z.partition((32,)), x).generics(A=3, F=2.0).grid((1, 1, 1)), half)
    hit(lambda: k(z.partition((32,)), x).grid((1, 1, 1)).generics(A=3, F=2.0), half)
    hit(lambda: k(z.partition((32,)), x).generics(A=3).grid([1, 1, 1]).generics(F=2.0), half)
    assert run(k(z.partition((32,)), x).generics(A=3, F=2.0).compile_options(opts))[2] == 1
    hit(lambda: k(z.partition((32,)), x).generics(A=3, F=2.0).compile_options(opts),
        (a + 3) * 2)
    hit(lambda: k(z.partition((32,)), x).compile_options(opts).generics(A=3, F=2.0),
        (a + 3) * 2)
    op = k(z.partition((32,)), x).generics(A=3).compile_options(opts).grid((1, 1, 1))
    assert op._values == (op.args[0], x, 3, 1.0) and op._options is opts
    account_for(op)
    del op
    # a grid baked in: the general path (its values kept all the same)
    op = k(z.partition((32,)), x).generics(A=3, F=2.0).const_grid((2, 1, 1))
    assert op._values == (op.args[0], x, 3, 2.0)
    out, st, py = run(op)
    assert py == 1 and (not on or st == {"launches": 0, "fallbacks": {_NOT_PLAIN: 1}})
    np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)
    # missing, given twice (even equal): the general path and its errors, counted there
    native.reset_stats()
    op = k(z.partition((32,)), x).generics(F=2.0)
    assert op._values == (op.args[0], x, _MISSING, 2.0)
    with pytest.raises(tile.LaunchError, match="no value for the tile.Constant parameter"):
        op.sync_on(s)
    del op
    with pytest.raises(tile.LaunchError, match="no value for the tile.Constant parameter"):
        k(z.partition((32,)), x).generics(F=2.0).grid((1, 1, 1)).sync_on(s)
    with pytest.raises(tile.LaunchError, match="given twice"):
        k(z.partition((32,)), x, 3, 2.0).generics(A=4).sync_on(s)
    with pytest.raises(tile.LaunchError, match="given twice"):
        k(z=z.partition((32,)), x=x).generics(A=3, F=2.0).sync_on(s)
    op = k(z.partition((32,)), x, 3, 2.0).generics(A=3)
    copy = op.grid((2, 1, 1))
    assert op._values is None and copy._values is None
    account_for(copy)
    del copy
    op.sync_on(s)                                                      # twice, equal: general
    assert not on or native.stats()["fallbacks"] == {_NOT_PLAIN: 5}   # each of the five
    np.testing.assert_allclose(z.to_numpy(), (a + 3) * 2, rtol=1e-6)


@tile.entry
def fill_const(z, A: tile.Constant[int]):
    z.store(tile.full(z.shape, A, z.dtype))


class _DLPackOnly:
    """A producer known only through DLPack (no reader, no __cuda_array_interface__)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def _scalar_cases():
    import ml_dtypes
    cases = [3, 0.5, True, np.bool_(True), ml_dtypes.bfloat16(2.5)]
    cases += [np.dtype(d).type(5) for d in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                            "f2", "f4", "f8")]
    return [(f"scalar {type(v).__name__}", v) for v in cases]


def _kinds(s):
    """(name, kernel, args factory, fallback reason or None) for every argument kind."""
    a = _data(64)
    x = api.from_numpy(a).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    w = api.zeros((4,)).sync_on(s)
    kinds = [
        ("tilejit tensor", copy_in, lambda: (z.partition((32,)), x), None),
        ("partition", copy_in, lambda: (z.partition((32,)), x), None),
        ("tensor view", copy_in, lambda: (z.partition((32,)), x[0:64]), None),
        ("CuPy array (stand-in)", copy_in, lambda: (z.partition((32,)), _FakeCupyArray(x)), None),
        ("tile.partition of a CuPy array", copy_in,
         lambda: (tile.partition(_FakeCupyArray(z), (32,)), x), None),
        ("__cuda_array_interface__ array", copy_in, lambda: (z.partition((32,)), _CAIView(x)), None),
        ("DLPack producer (imported)", copy_in, lambda: (z.partition((32,)), _DLPackOnly(x)),
         None),
        ("tile.atomic(tensor)", copy_beside, lambda: (z.partition((32,)), tile.atomic(w), x),
         None),
        ("tile.atomic(CuPy array)", copy_beside,
         lambda: (z.partition((32,)), tile.atomic(_FakeCupyArray(w)), x), None),
        ("NumPy array", copy_in, lambda: (z.partition((32,)), a), "a NumPy array"),
        ("tile.atomic(NumPy array)", copy_in,
         lambda: (z.partition((32,)), tile.atomic(a.copy())), "hooks"),
        ("DeviceOp argument", copy_in, lambda: (z.partition((32,)), api.from_numpy(a)), "lazy"),
        # a call passing its constants launches the kernel bound to them: C too
        ("tile.Constant", fill_const, lambda: (z.partition((32,)), 3), None),
    ]
    for name, v in _scalar_cases():
        zt = api.from_numpy(np.zeros(64, np.asarray(v).dtype if not isinstance(v, (int, float))
                                     else np.float32)).sync_on(s)
        kinds.append((name, fill_with, lambda zt=zt, v=v: (zt.partition((32,)), v), None))
    import ml_dtypes
    for v in (ml_dtypes.float8_e4m3fn(1.5), ml_dtypes.float8_e5m2(2.0)):    # fp8 scalars
        kinds.append((f"scalar {type(v).__name__}", widen,
                      lambda v=v: (z.partition((32,)), v), None))
    try:
        import torch
    except ImportError:
        return kinds
    from tilejit.runtime import foreign
    foreign.reader_for(torch.Tensor)
    tz = torch.zeros(64)
    kinds.append(("torch CPU tensor (host memory: imported)", copy_in,
                  lambda: (z.partition((32,)), torch.from_numpy(a)), None))
    return kinds


@needs_native
def test_every_argument_kind_launches_in_c_the_second_time(monkeypatch):
    """Each kind twice: the second launch is made by C with no fallback where C handles the
    kind; where it is meant to go back to Python, stats() names the reason."""
    import sys
    from tilejit.kernel_launch import KernelLaunch
    if "cupy" in sys.modules:
        pytest.skip("the real CuPy is registered in this process")
    ext = native.ext()
    ext.set_cupy(_FakeCupyArray, {np.dtype(np.float32): ("float32", 4)}, lambda: _NoStream())
    s = tile.Device(0).new_stream()
    assert set(native.ext().fallback_reasons()) >= {"a NumPy array (copied in per launch)"}
    copy_in(*_kinds(s)[0][2]()).grid((2, 1, 1)).sync_on(s)
    native.reset_stats()
    copy_in(*_kinds(s)[0][2]()).grid((2, 1, 1)).sync_on(s)     # an explicit grid: C too
    assert native.stats() == {"launches": 1, "fallbacks": {}}
    copy_in(*_kinds(s)[0][2]()).const_grid((2, 1, 1)).sync_on(s)
    native.reset_stats()
    copy_in(*_kinds(s)[0][2]()).const_grid((2, 1, 1)).sync_on(s)   # baked in: Python's
    assert native.stats()["fallbacks"] == {
        "constants, generics, compile options or a grid baked into the kernel": 1}
    fill_const(*_kinds(s)[0][2]()[:1]).generics(A=3).sync_on(s)    # generics: bound, then
    native.reset_stats()                                                # found and launched
    python = []                                                         # in C
    bound = KernelLaunch._launch_bound
    monkeypatch.setattr(KernelLaunch, "_launch_bound", lambda *a: python.append(a) or bound(*a))
    fill_const(*_kinds(s)[0][2]()[:1]).generics(A=3).sync_on(s)
    assert native.stats() == {"launches": 1, "fallbacks": {}} and python == []
    monkeypatch.undo()
    for name, k, make, reason in _kinds(s):
        k(*make()).sync_on(s)
        native.reset_stats()
        k(*make()).sync_on(s)
        st = native.stats()
        if reason is None:
            assert st == {"launches": 1, "fallbacks": {}}, (name, st)
        else:
            assert st["launches"] == 0 and len(st["fallbacks"]) == 1, (name, st)
            assert reason in next(iter(st["fallbacks"])), (name, st)


class _NoStream:
    ptr = 0x5000


@needs_native
def test_c_and_python_classify_alike_field_by_field():
    """Launcher.describe (C's classification, nothing launched) against argspec.classify for
    each argument kind C handles: key, ABI values, storage, writable flag, byte extent, grid."""
    import sys
    from tilejit.runtime import argspec
    if "cupy" in sys.modules:
        pytest.skip("the real CuPy is registered in this process")
    native.ext().set_cupy(_FakeCupyArray, {np.dtype(np.float32): ("float32", 4)},
                          lambda: _NoStream())
    from tilejit.runtime.stream import Stream
    # a stream as on a GPU (a driver handle), so Python reads foreign arrays from their metadata
    # as C does; nothing is launched on it
    s = Stream._make(tile.Device(0), _NoStream.ptr, _NoStream.ptr, owned=True)
    compared = 0
    for name, k, make, reason in _kinds(tile.Device(0).new_stream()):
        if reason is not None:
            continue
        args = make()
        if k.constant_names:            # the kernel bound to the constants is what C launches
            k, args = k._bound_for(args), tuple(args[i] for i in k._runtime_pos)
        c_side = k._native.describe(args, s)
        assert c_side is not None, name
        py_side = [argspec.classify(v, ann, s) for v, ann in zip(args, k._anns)]
        for c, p in zip(c_side, py_side):
            assert c["key"] == p.key, name
            assert c["writable"] == bool(p.writable), name
            assert c["grid"] == p.grid, name
            e = None if p.kind == "scalar" else tuple(argspec._extent(p))
            if "imported" in name:      # each classification imports it anew (a new address)
                assert tuple(c["params"])[1:] == tuple(p.params)[1:], name
                assert c["extent"][1] - c["extent"][0] == e[1] - e[0], name
                continue
            assert tuple(c["params"]) == tuple(p.params), name
            assert c["storage"] is p.storage, name
            assert c["extent"] == e, name
        argspec.release_partitions(args)
        compared += 1
    assert compared >= 20
    with pytest.raises(TypeError, match="arity"):
        copy_in._native.describe((1,), s)
    z = api.zeros((4,)).sync()
    assert copy_in._native.describe((z.partition((4,)), np.ones(4, np.float32)), s) is None


def test_a_missing_extension_warns_once_at_the_first_launch(monkeypatch):
    """Without a compiler at install time the first launch says what is missing, what it costs
    and how to build it (and `python -m tilejit info` says the same)."""
    import warnings
    s = tile.Device(0).new_stream()
    x = api.from_numpy(_data(32)).sync_on(s)
    z = api.zeros((32,)).sync_on(s)
    monkeypatch.setattr(native, "missing", True)
    monkeypatch.setattr(native, "_IMPORT_ERROR", "No module named 'tilejit._native'")
    with pytest.warns(RuntimeWarning) as rec:
        axpb(z.partition((32,)), x, 1.0, 0)._sync_plain(s)
    msg = str(rec[0].message)
    assert "TILEJIT_NATIVE" in msg and "30 µs" in msg and "C compiler" in msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        axpb(z.partition((32,)), x, 1.0, 0)._sync_plain(s)
    monkeypatch.setattr(native, "_ext", None)
    assert "not built" in native.status() and "30 µs" in native.status()


def test_c_methods_keep_the_python_docstrings():
    from tilejit.kernel_launch import KernelLaunch
    assert "views do not count" in tile.Tensor.partition.__doc__
    assert "without waiting" in KernelLaunch.submit_on.__doc__
    assert "explicit runtime grid" in KernelLaunch.grid.__doc__
    assert "Bind ``tile.Constant`` parameters" in KernelLaunch.generics.__doc__
