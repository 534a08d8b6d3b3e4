"""The C launch path in CPU CI, through a stub CUDA driver (tests/stub_driver.c, built here with
the system C compiler): do_launch, prepared launches, raw launch(), the weak-scalar checks and the
torch/CuPy readers run as on a GPU, and the packed parameter bytes of every recorded launch equal
what the Python packer (runtime.cuda_executable.ParamPacker) makes of Python's classification."""
import ctypes
import warnings

import numpy as np
import pytest

import tilejit as tile
from tilejit import api, native
from tilejit.runtime import argspec, foreign
from tilejit.runtime.stream import Stream

import stub_cuda
import tuple_arg_cases

pytestmark = pytest.mark.usefixtures("simulator_backend")


@pytest.fixture(scope="module")
def stub():
    if not native.enabled():
        pytest.skip("the C extension is not built or TILEJIT_NATIVE=0")
    if stub_cuda.compiler() is None:
        pytest.skip("no C compiler to build the stub driver (tests/stub_driver.c)")
    return stub_cuda.build()


@pytest.fixture
def stream():
    """A simulated stream with a recognizable handle (the stub records it)."""
    return Stream._make(tile.Device(0), 0x5000, None, owned=True)


@tile.entry
def mixed(z, x, n, a, flag, h, u, w, q: tile.int32):
    t = tile.load_tile_like(x, z)
    z.store(t * a + (n + u + q).astype(tile.float32) + w.astype(tile.float32) + h.astype(tile.float32) +
            tile.where(flag, 1.0, 0.0))


@tile.entry
def small(z, x, n):
    z.store(tile.load_tile_like(x, z) + n)


def _python_params(k, args, s):
    infos = [argspec.classify(v, a, s) for v, a in zip(args, k._anns)]
    try:
        return argspec.flatten_params(infos)
    finally:
        argspec.release_partitions(args)


def _warm(k, args, s):
    """Compile on the simulator (one real run), so the stub can take the compiled slots."""
    k(*args).sync_on(s)


def test_the_c_path_packs_what_the_python_packer_packs(stub, stream):
    s = stream
    x = api.from_numpy(np.arange(64, dtype=np.float32).reshape(8, 8)).sync_on(s)
    z = api.zeros((8, 8)).sync_on(s)
    scalars = (7, 0.1, True, np.float16(1.5), np.uint8(200), np.float64(0.25), 3)
    _warm(mixed, (z.partition((4, 8)), x) + scalars, s)
    with stub_cuda.installed(mixed) as stubs:
        (exe,) = stubs.values()
        assert any(":" in slot for slot in exe.packer.slots)   # checked weak scalars
        for i in range(2):
            native.reset_stats()
            args = (z.partition((4, 8)), x, 7 + i, 0.1 * i, bool(i), np.float16(1.5),
                    np.uint8(200), np.float64(0.25), 3)
            before = stub_cuda.count()
            mixed(*args).sync_on(s)
            assert stub_cuda.count() == before + 1 and exe.python_launches == 0
            grid, handle, ctx, offsets, packed = stub_cuda.last()
            assert grid == (2, 1, 1) and handle == 0x5000 and ctx == 0x1234
            assert (offsets, packed) == exe.expected(_python_params(mixed, args, s))
            assert native.stats() == {"launches": 1, "fallbacks": {}}
        # the context the launch made current is given back
        assert stub.stub_switches() >= 2
        stub.stub_set_current(None)


def test_weak_scalars_are_checked_in_c(stub, stream):
    s = stream
    x8 = api.from_numpy(np.arange(4, dtype=np.int8)).sync_on(s)
    z8 = api.zeros((4,), tile.int8).sync_on(s)
    _warm(small, (z8.partition((4,)), x8, 1), s)
    x32 = api.from_numpy(np.ones(4, np.float32)).sync_on(s)
    z32 = api.zeros((4,)).sync_on(s)
    _warm(small, (z32.partition((4,)), x32, 1.5), s)
    with stub_cuda.installed(small):
        n = stub_cuda.count()
        with pytest.raises(OverflowError, match="^Python integer 1000 out of bounds for int8$"):
            small(z8.partition((4,)), x8, 1000).sync_on(s)
        assert stub_cuda.count() == n                   # nothing launched
        small(z8.partition((4,)), x8, -128).sync_on(s)
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            small(z32.partition((4,)), x32, 1e39).sync_on(s)
        assert stub_cuda.count() == n + 2               # the overflow launches (inf), as NumPy
        assert np.frombuffer(stub_cuda.last()[4][-8:], np.float64)[0] == 1e39
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            small(z32.partition((4,)), x32, float("inf")).sync_on(s)    # inf is no overflow
        with pytest.raises(RuntimeWarning):             # a warning turned error stops it
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                small(z32.partition((4,)), x32, -1e300).sync_on(s)


def test_python_scalars_of_annotated_parameters_are_classified_in_c(stub, stream, monkeypatch):
    """``n: tile.int32`` given a Python int (cuTile's ``int`` parameters): C takes its plan from
    scalars.annotated_plans and packs what Python packs, without calling argspec.classify; a
    value the dtype cannot hold is Python's to refuse or round (as NumPy does)."""
    from tilejit import dispatcher
    calls = []

    def counting(v, ann=None, stream=None):
        calls.append(v)
        return argspec.classify(v, ann, stream)
    monkeypatch.setattr(dispatcher, "classify", counting)     # the launchers made from now on

    @tile.entry
    def annotated(z, x, n: tile.int32, a: tile.float32, d: tile.float64, f: tile.bool_,
                  u: tile.uint8):
        t = tile.load_tile_like(x, z) * a + tile.where(f, 1.0, 0.0)
        z.store(t + tile.astype(n, tile.float32) + tile.astype(u, tile.float32) +
                tile.astype(d, tile.float32))

    s = stream
    x = api.from_numpy(np.ones(8, np.float32)).sync_on(s)
    z = api.zeros((8,)).sync_on(s)
    _warm(annotated, (z.partition((8,)), x, 1, 0.5, 0.25, True, 3), s)
    with stub_cuda.installed(annotated) as stubs:
        (exe,) = stubs.values()
        for args in [(7, 0.1, 1e30, True, 255), (-2**31, -3.4e38, -0.0, False, 0),
                     (2**31 - 1, float("nan"), float("inf"), True, 1)]:
            native.reset_stats()
            calls.clear()
            full = (z.partition((8,)), x) + args
            annotated(*full).sync_on(s)
            assert native.stats() == {"launches": 1, "fallbacks": {}}
            assert calls == [] and exe.python_launches == 0, calls
            assert stub_cuda.last()[3:] == exe.expected(_python_params(annotated, full, s))
        with pytest.raises(OverflowError, match="Python integer 2147483648 out of bounds for "
                                                "int32"):
            annotated(z.partition((8,)), x, 2**31, 0.5, 0.25, True, 3).sync_on(s)
        with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint8"):
            annotated(z.partition((8,)), x, 1, 0.5, 0.25, True, -1).sync_on(s)
        big = (z.partition((8,)), x, 1, 1e39, 0.25, True, 3)
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            annotated(*big).sync_on(s)
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            assert stub_cuda.last()[3:] == exe.expected(_python_params(annotated, big, s))
        calls.clear()                   # other Python types: converted by argspec.classify
        other = (z.partition((8,)), x, True, 2, 1, 1, 3)
        annotated(*other).sync_on(s)
        assert calls == [True, 2, 1, 1] and exe.python_launches == 0
        assert stub_cuda.last()[3:] == exe.expected(_python_params(annotated, other, s))


@tile.entry
def small_plus(z, x, n, N: tile.Constant[int]):
    z.store(tile.load_tile_like(x, z) + n + N)


def test_a_call_with_constants_launches_in_c_and_drains_its_stream_on_error(stub, stream,
                                                                             monkeypatch):
    """A call passing its constants, bound in C (csrc/prepared.c submit_bound): the bound
    kernel's launch reaches the driver with the runtime values packed as Python packs them, on
    the call's grid; a failed launch raises Python's LaunchError, gives the leases back and, for
    sync_on, drains the stream first (as DeviceOp.sync_on does); submit_on does not wait."""
    s = stream
    x = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    _warm(small_plus, (z.partition((32,)), x, 2, 5), s)
    bound = small_plus._bound_for((None, None, None, 5))
    syncs = []
    monkeypatch.setattr(Stream, "synchronize", lambda self: syncs.append(self))
    with stub_cuda.installed(bound) as stubs:
        (exe,) = stubs.values()
        for grid in (None, (2, 1, 1)):
            native.reset_stats()
            op = small_plus(z.partition((32,)), x, 3, 5)
            out = (op if grid is None else op.grid(grid)).sync_on(s)
            assert native.stats() == {"launches": 1, "fallbacks": {}}
            assert out[2:] == (3, 5) and syncs == [s] and exe.python_launches == 0
            assert stub_cuda.last()[0:2] == ((2, 1, 1), 0x5000)
            assert stub_cuda.last()[3:] == exe.expected(
                _python_params(bound, (z.partition((32,)), x, 3), s))
            syncs.clear()
        n = stub_cuda.count()
        for wait in (True, False):
            stub.stub_fail_next(1)
            op = small_plus(z.partition((32,)), x, 3, 5)
            with pytest.raises(tile.LaunchError, match="launching stub"):
                op.sync_on(s) if wait else op.submit_on(s)
            assert syncs == ([s] if wait else []) and stub_cuda.count() == n
            syncs.clear()
            z.partition((64,)).unpartition()            # the failed launch gave its lease back
        assert small_plus(z.partition((32,)), x, 3, 5).submit_on(s).stream is s
        assert stub_cuda.count() == n + 1 and syncs == []


def test_prepared_and_raw_launches_through_the_stub(stub, stream):
    s = stream
    x = api.from_numpy(np.ones(64, np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    _warm(small, (z.partition((32,)), x, 2.0), s)
    with stub_cuda.installed(small) as stubs:
        exe = next(e for e in stubs.values() if e.packer.slots[-1].startswith("f64"))
        p = small(z.partition((32,)), x, 2.0).prepare(s)
        assert p._c is not None
        n = stub_cuda.count()
        for _ in range(3):
            p.launch()
        assert stub_cuda.count() == n + 3
        assert stub_cuda.last()[3:] == exe.expected(p.params)
        stub.stub_fail_next(700)                        # CUDA_ERROR_ILLEGAL_ADDRESS
        with pytest.raises(tile.LaunchError, match="launching stub") as e:
            p.launch()
        assert e.value.code == 700
        p.close()
        with pytest.raises(tile.LaunchError, match="closed"):
            p.launch()
        stub.stub_fail_next(1)                          # the lazy call's launch error
        with pytest.raises(tile.LaunchError):
            small(z.partition((32,)), x, 2.0).sync_on(s)
        z.partition((64,)).unpartition()                # the failed launch gave its lease back
        fn, ctx, layout, _ = exe._native
        params = p.params
        assert native.ext().launch(fn, ctx, 2, 1, 1, 0x77, layout, params) == 0
        assert stub_cuda.last()[0:2] == ((2, 1, 1), 0x77)
        assert stub_cuda.last()[3:] == exe.expected(params)
        with pytest.raises(ValueError, match="slots"):
            native.ext().launch(fn, ctx, 1, 1, 1, 0, layout, params[:-1])
        with pytest.raises(ValueError, match="more parameter values"):
            native.ext().launch(fn, ctx, 1, 1, 1, 0, layout, params + (1,))


def test_a_prepared_tuple_launch_runs_in_c_through_the_stub(stub, stream):
    """t08's grouped GEMM (tuples As, Bs, Cs): the prepared launch packs every element once and
    each launch() is one cuLaunchKernel from C with the bytes Python's packer makes of a plain
    launch's parameters; a Prepared C cannot pack is counted in native.stats()."""
    T, s = tuple_arg_cases.t08(), stream
    As = tuple(api.from_numpy(np.ones((n, n), np.float16)).sync_on(s) for n in (64, 32, 96))
    Cs = tuple(api.zeros(a.shape, tile.float16).sync_on(s) for a in As)

    def op():
        return T.grouped_gemm(As, As, tuple(tile.atomic(c) for c in Cs), 32, 32, 32) \
            .grid((3, 1, 1))
    op().sync_on(s)                                     # compiled on the simulator
    infos = [argspec.classify(v, None, s) for v in (As, As, tuple(tile.atomic(c) for c in Cs))]
    for i in infos:
        i.prepare(s)                                    # a plain launch's tuple hooks
    want = argspec.flatten_params(infos)
    with stub_cuda.installed(T.grouped_gemm):
        p = op().prepare(s)
        assert p._c is not None and p.params == want
        exe, n = p.executable, stub_cuda.count()
        for _ in range(3):
            p.launch()
        assert stub_cuda.count() == n + 3 and exe.python_launches == 0
        assert stub_cuda.last()[0] == (3, 1, 1) and stub_cuda.last()[3:] == exe.expected(want)
        fn, ctx, layout, _ = exe._native
        native.reset_stats()
        with pytest.raises(ValueError, match="slots"):
            native.ext().Prepared(fn, ctx, (3, 1, 1), s, layout, want[:-1], (), tile.LaunchError,
                                  exe)
        assert native.stats()["fallbacks"] == {
            "a prepared launch C could not pack (PreparedLaunch.launch runs in Python)": 1}
        p.close()
        with pytest.raises(tile.LaunchError, match="closed"):
            p.launch()
        assert stub_cuda.count() == n + 3


# --- foreign arrays: stand-ins for torch (through the stub's DLPack exchange API) and CuPy ----
class FakeDType:
    def __init__(self, name):
        self.name = name


F32 = FakeDType("float32")


class FakeTorch:
    """What the C torch readers see of a torch tensor, over a simulated tensor's memory: `_dl`
    for the exchange API (data, device type, id, code, bits, shape, strides, offset), the
    attributes for the older path, and __cuda_array_interface__ for Python's classification."""

    neg = False

    def __init__(self, t, device_type=2, contiguous_strides=True):
        self.t = t
        cai = t.__cuda_array_interface__
        self.ptr = cai["data"][0]
        self.shape = tuple(t.shape)
        self._dl = (self.ptr, device_type, 0, 2, 32, self.shape,
                    None if contiguous_strides else tuple(t.strides), 0)
        self.dtype = F32
        self.ndim = len(self.shape)

    def get_device(self):
        return 0

    def is_neg(self):
        return self.neg

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return tuple(self.t.strides)

    @property
    def __cuda_array_interface__(self):
        return self.t.__cuda_array_interface__


class FakeParameter(FakeTorch):
    pass


class FakeSubclass(FakeTorch):
    """A subclass: read through its attributes (others may override data access)."""


@pytest.fixture
def fake_torch(stub):
    ext = native.ext()
    streams = []

    def current_raw_stream(dev):
        streams.append(dev)
        return 0x5000
    cap = ctypes.pythonapi.PyCapsule_New
    cap.restype = ctypes.py_object
    cap.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = cap(stub.stub_exchange_api(), b"dlpack_exchange_api", None)
    ext.set_torch(FakeTorch, {F32: "float32"}, current_raw_stream)
    names = {(2, 32): "float32", (0, 32): "int32"}
    stub.stub_set_work_stream(0x5000, 0)
    assert ext.set_torch_exchange(capsule, FakeParameter, names)
    yield ext, capsule, names, streams
    _restore_torch()


def _restore_torch():
    """Put back the real torch registration (or none) after the stand-ins."""
    import sys
    ext = native.ext()
    ext.set_torch_exchange(None, None, {})
    foreign._readers.clear()
    if sys.modules.get("torch") is not None:      # (None: torch blocked, as in a no-torch run)
        foreign.reader_for(sys.modules["torch"].Tensor)


def test_torch_tensors_are_read_in_c_through_the_exchange_api(stub, fake_torch, stream):
    ext, capsule, names, _ = fake_torch
    s = stream
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    _warm(small, (z.partition((32,)), x, 2.0), s)
    xt, zt = FakeTorch(x), FakeParameter(z, contiguous_strides=False)
    fp = tile.partition(zt, (32,))                  # made in C (a prototype's clone)
    assert type(fp) is tile.ForeignPartition and fp.value is zt and fp._live is None
    with stub_cuda.installed(small) as stubs:
        (exe,) = [e for e in stubs.values() if e.packer.slots[-1].startswith("f64")]
        for i in range(2):
            native.reset_stats()
            small(tile.partition(zt, (32,)), xt, 2.0).sync_on(s)
            assert native.stats() == {"launches": 1, "fallbacks": {}}
            want = exe.expected(_python_params(small, (tile.partition(zt, (32,)), xt, 2.0), s))
            assert stub_cuda.last()[3:] == want
        sub = FakeSubclass(x)                       # attributes, not the exchange API
        small(z.partition((32,)), sub, 2.0).sync_on(s)
        assert stub_cuda.last()[3:] == exe.expected(
            _python_params(small, (z.partition((32,)), sub, 2.0), s))
        neg = FakeTorch(x)
        neg.neg = True                              # C refuses it; Python classifies it
        small(z.partition((32,)), neg, 2.0).sync_on(s)
        assert exe.python_launches == 0
        stub.stub_set_work_stream(0x5000, 1)        # torch has no current stream: an error
        with pytest.raises(RuntimeError, match="no current CUDA stream"):
            small(z.partition((32,)), FakeTorch(x), 2.0).sync_on(s)
        stub.stub_set_work_stream(0x6000, 0)        # another stream: the launch waits for it
        small(z.partition((32,)), FakeTorch(x), 2.0).sync_on(s)
    assert ext.torch_stream_of((1, xt)) == (0, 0x6000)
    assert ext.torch_stream_of((tile.partition(zt, (32,)),)) == (0, 0x6000)
    assert ext.torch_stream_of((sub,)) is NotImplemented
    assert ext.torch_stream_of((FakeTorch(x, device_type=1),)) is None
    assert ext.torch_stream_of((object(),)) is None
    with pytest.raises(tile.TensorError, match="power of two"):    # errors stay Python's
        tile.partition(FakeTorch(x), (3,))


def test_torch_without_the_exchange_api_reads_attributes(fake_torch, stream):
    ext, _, names, streams = fake_torch
    ext.set_torch_exchange(None, FakeParameter, names)   # torch < 2.10
    s = stream
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    _warm(small, (z.partition((32,)), x, 2.0), s)
    with stub_cuda.installed(small):
        native.reset_stats()
        small(z.partition((32,)), FakeTorch(x), 2.0).sync_on(s)
        assert native.stats() == {"launches": 1, "fallbacks": {}} and streams == [0]
        wrong = FakeTorch(x)
        wrong.get_device = lambda: 3                # another device: Python explains
        small(z.partition((32,)), wrong, 2.0).sync_on(s)


def test_packing_edges_and_driver_selection(stub):
    import ctypes.util
    import math
    from tilejit.runtime.cuda_executable import ParamPacker
    ext = native.ext()
    for v in (math.nan, -math.nan, math.inf, 1e-40):     # bf16 NaN stays a NaN, subnormals
        pk = ParamPacker(("bf16",))
        pk.pack((v,))
        assert ext.pack(b"E", (v,)) == pk.packed_bytes()
    with pytest.raises(ValueError, match="unknown parameter slot 'x'"):
        ext.pack(b"x", (1,))
    assert len(ext.pack(b"Q" * 512, (1,) * 512)) == 4096
    with pytest.raises(ValueError, match="too many kernel parameters"):
        ext.pack(b"Q" * 513, (1,) * 513)
    with pytest.raises(OSError, match="use_driver"):
        ext.use_driver("/nonexistent/libcuda.so.1")
    libc = ctypes.util.find_library("c")
    if libc:
        with pytest.raises(OSError, match="missing entry points"):
            ext.use_driver(libc)
    ext.use_driver(None)


def test_cutile_python_scalars_are_strong_and_classified_in_c(stub, fake_torch, stream,
                                                              monkeypatch):
    """``ct.launch`` of a cuTile kernel replayed in C (csrc/cutile.c): its Python scalars take
    the strong plans of scalars.annotated_plans (cuTile's int32 / float32 / bool_ values, the
    keys Python computes), a read-only torch tensor of an annotated parameter is still read in
    C, and the bytes are those Python packs."""
    import tilejit.cutile as ct
    from tilejit import dispatcher, keys
    calls = []

    def counting(v, ann=None, stream=None):
        calls.append(v)
        return argspec.classify(v, ann, stream)
    monkeypatch.setattr(dispatcher, "classify", counting)

    @ct.kernel
    def ct_scaled(x, z, a, n, f, TILE: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(TILE,)) * a + n
        ct.store(z, index=(ct.bid(0),), tile=ct.where(f, t, -t))

    s = stream
    x = api.from_numpy(np.arange(64, dtype=np.float32)).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    ct.launch(s, (2,), ct_scaled, (x, z, 0.5, 3, True, 32))         # compiles on the simulator
    s.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), np.arange(64) * 0.5 + 3)
    (bound,) = ct_scaled._bound_by_key.values()
    assert [k for k in bound._cache][0][0][2:] == (
        keys.scalar_key("float32", False), keys.scalar_key("int32", False),
        keys.scalar_key("bool_", False))
    xt = FakeTorch(x)
    with stub_cuda.installed(bound) as stubs:
        (exe,) = stubs.values()
        for args in [(0.25, 7, False), (-3.4e38, -2 ** 31, True),
                     (float("nan"), 2 ** 31 - 1, True)]:
            native.reset_stats()
            calls.clear()
            full = (xt, z) + args + (32,)
            ct.launch(s, (2,), ct_scaled, full)
            assert native.stats() == {"launches": 1, "fallbacks": {}}
            assert exe.python_launches == 0
            assert calls == [], calls
            _, values = ct_scaled._plain_launch(full)
            assert stub_cuda.last()[3:] == exe.expected(_python_params(bound, values, s))
        with pytest.raises(OverflowError, match="out of bounds for int32"):
            ct.launch(s, (2,), ct_scaled, (xt, z, 0.5, 2 ** 31, True, 32))


def test_a_dummy_shared_by_two_unwritten_outputs_launches_in_c(stub, stream):
    """One dummy tensor for two outputs the launch's constants leave unwritten (Liger's cross
    entropy without z_loss and accuracy): Python's judge accepts the pair once, the executable
    keeps it (``alias_ok``), and later launches stay in C; the same pair under constants that
    write both is still refused."""
    import tilejit.cutile as ct

    @ct.kernel
    def maybe_both(x, a, b, N: ct.Constant[int], WRITE: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(N,))
        if WRITE:
            ct.store(a, index=(ct.bid(0),), tile=t)
            ct.store(b, index=(ct.bid(0),), tile=t)

    s = stream
    x = api.from_numpy(np.arange(32, dtype=np.float32)).sync_on(s)
    d = api.zeros((32,)).sync_on(s)
    ct.launch(s, (2,), maybe_both, (x, d, d, 16, 0))              # compiles on the simulator
    s.synchronize()
    (bound,) = maybe_both._bound_by_key.values()
    with stub_cuda.installed(bound) as stubs:
        (exe,) = stubs.values()
        native.reset_stats()
        ct.launch(s, (2,), maybe_both, (x, d, d, 16, 0))          # judged in Python once
        assert native.stats()["fallbacks"] == {"an output that may overlap another argument": 1}
        assert exe.alias_ok == {(1, 2), (2, 1)} and exe.python_launches == 1
        native.reset_stats()
        ct.launch(s, (2,), maybe_both, (x, d, d, 16, 0))
        assert native.stats() == {"launches": 1, "fallbacks": {}} and exe.python_launches == 1
    with pytest.raises(tile.TensorError, match="stores into both 'a' and 'b'"):
        ct.launch(s, (2,), maybe_both, (x, d, d, 16, 1))
