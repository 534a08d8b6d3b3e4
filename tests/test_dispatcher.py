"""@tile.entry: launch semantics, specialization cache, constants, grids, tooling."""
import threading

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

import launch_paths
from lowered import lowered_function
from sample_arrays import rand

# CPU suite: always the simulator. tests/gpu/test_dispatcher_gpu.py reruns these tests on CUDA
# (it star-imports this module and sets its own pytestmark, so it does not inherit this one).
pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def add(z, x, y):
    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))


@tile.entry
def scale(z, x, alpha):
    z.store(tile.load_tile_like(x, z) * alpha)


@tile.entry
def blocked_sum(z, x, BK: tile.Constant[int]):
    acc = tile.zeros(z.shape, tile.float32)
    for k in range(BK):
        acc = acc + tile.load_tile_like(x, z)
    z.store(acc)


def test_launch_returns_the_arguments_and_is_lazy():
    xn, yn = rand(1000), rand(1000, seed=1)
    x, y = api.from_numpy(xn).sync(), api.from_numpy(yn).sync()
    z = api.zeros((1000,)).sync()
    op = add(z.partition((128,)), x, y)
    assert isinstance(op, tile.DeviceOp)
    assert (z.to_numpy() == 0).all()             # nothing ran yet
    out = op.sync()
    assert len(out) == 3 and out[1] is x and out[2] is y
    np.testing.assert_array_equal(z.to_numpy(), xn + yn)
    # .first().unpartition() gives the output tensor back
    zz = api.zeros((1000,)).sync()
    t = add(zz.into_partition((128,)), x, y).first().unpartition().sync()
    np.testing.assert_array_equal(t.to_numpy(), xn + yn)


def test_one_compile_per_key_and_shapes_are_not_in_the_key():
    k = tile.entry(add.py_func)
    for n in (512, 1024, 4096):                  # same facts (multiples of 16, contiguous)
        x = api.from_numpy(rand(n)).sync()
        z = api.zeros((n,)).sync()
        k(z.partition((256,)), x, x).sync()
    assert k.stats.compiles == 1 and k.stats.cache_hits == 2
    x16 = api.from_numpy(rand(512, np.float16)).sync()
    z16 = api.zeros((512,), tile.float16).sync()
    k(z16.partition((256,)), x16, x16).sync()
    assert k.stats.compiles == 2 and len(k.signatures) == 2


def test_concurrent_launches_compile_once():
    k = tile.entry(add.py_func)
    x = api.from_numpy(rand(256)).sync()
    outs = [api.zeros((256,)).sync() for _ in range(8)]
    errors = []

    def run(z):
        try:
            k(z.partition((64,)), x, x).sync()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(z,)) for z in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and k.stats.compiles == 1
    for z in outs:
        np.testing.assert_array_equal(z.to_numpy(), 2 * x.to_numpy())


def test_scalars_weak_and_strong():
    xn = rand(300, np.float16)
    x = api.from_numpy(xn).sync()
    z = api.zeros((300,), tile.float16).sync()
    scale(z.partition((128,)), x, 2.0).sync()       # a Python float adopts float16
    np.testing.assert_array_equal(z.to_numpy(), xn * np.float16(2))
    z32 = api.zeros((300,), tile.float32).sync()
    scale(z32.partition((128,)), x, np.float32(0.1)).sync()   # NumPy scalars are strong (NEP 50)
    np.testing.assert_allclose(z32.to_numpy(), xn.astype(np.float32) * np.float32(0.1), rtol=1e-6)


def test_constants_specialize_and_generics_bind_them():
    k = tile.entry(blocked_sum.py_func)
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    k(z.partition((64,)), x, 3).sync()
    np.testing.assert_allclose(z.to_numpy(), 3 * x.to_numpy(), rtol=1e-6)
    k(z.partition((64,)), x).generics(BK=5).sync()
    np.testing.assert_allclose(z.to_numpy(), 5 * x.to_numpy(), rtol=1e-6)
    k(z.partition((64,)), x).generics([5]).sync()
    assert k.stats.compiles == 2
    with pytest.raises(tile.LaunchError, match="BK"):
        k(z.partition((64,)), x).sync()
    with pytest.raises(tile.LaunchError, match="no tile.Constant parameter 'BN'"):
        k(z.partition((64,)), x).generics(BN=2)


@tile.entry
def scaled_copy(z, x, S: tile.Constant[int] = 3, NEG: tile.Constant[bool] = False):
    t = x.load(z.block, z.shape) * S
    if NEG:
        t = -t
    z.store(t)


def test_a_constant_left_out_takes_its_python_default():
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    scaled_copy(z.partition((64,)), x).sync()
    np.testing.assert_allclose(z.to_numpy(), 3 * x.to_numpy(), rtol=1e-6)
    scaled_copy(z.partition((64,)), x, 5).sync()                    # given: the default yields
    np.testing.assert_allclose(z.to_numpy(), 5 * x.to_numpy(), rtol=1e-6)
    scaled_copy(z.partition((64,)), x).generics(NEG=True).sync()   # one bound, one default
    np.testing.assert_allclose(z.to_numpy(), -3 * x.to_numpy(), rtol=1e-6)
    scaled_copy(z.partition((64,)), x, NEG=True).sync()
    np.testing.assert_allclose(z.to_numpy(), -3 * x.to_numpy(), rtol=1e-6)
    assert scaled_copy.stats.compiles == 3


def test_numpy_inputs_are_copied_in():
    xn = rand(200)
    z = api.zeros((200,)).sync()
    add(z.partition((64,)), xn, xn).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * xn)


def test_argument_errors():
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    with pytest.raises(TypeError, match="add\\(\\) missing 1 required argument.*'y'"):
        add(z.partition((64,)), x)                  # bound like a Python call, at call time
    with pytest.raises(tile.TensorError):
        add(z.partition((64,)), z, x).sync()      # output aliases an input
    with pytest.raises(TypeError, match="cannot pass list"):
        add(z.partition((64,)), [1.0], x).sync()


@tile.entry
def no_partition(x, n):
    tile.printf("%d\n", n)


def test_grid_is_required_without_partitions():
    x = api.from_numpy(rand(8)).sync()
    with pytest.raises(tile.LaunchError, match="grid"):
        no_partition(x, 3).sync()
    no_partition(x, 3).grid((2, 1, 1)).sync()


def test_inspect_and_aot_compile_need_no_gpu(monkeypatch):
    x = api.from_numpy(rand(256)).sync()
    z = api.zeros((256,)).sync()
    p = z.partition((128,))
    text = add.inspect_tileir(p, x, x)
    assert text.startswith("// parameters:\n//   z: %arg0 base")       # names, as comments
    text = "".join(ln for ln in text.splitlines(True) if not ln.startswith("//"))
    assert text.startswith("entry @add(") and "load_view_tko" in text and "addf" in text
    types = add.inspect_types(p, x, x)
    assert "for" in types or "block" in types
    if not tileiras.available():
        pytest.skip("tileiras is not installed")
    if tileiras.disassembler_available():
        assert tileiras.disassemble(add.inspect_bytecode(p, x, x)) == text
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    cubin = add.compile(p, x, x, arch="sm_90")
    assert cubin[:4] == b"\x7fELF" and b"add" in cubin
    with pytest.raises(ValueError, match="sm_90"):
        add.compile(p, x, x, arch="hopper")


def test_dump_env(monkeypatch, capsys):
    monkeypatch.setenv("TILEJIT_DUMP", "tileir")
    k = tile.entry(add.py_func)
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    k(z.partition((64,)), x, x).sync()
    assert "entry @add(" in capsys.readouterr().err


def test_compile_options_take_num_ctas_as_tile_entry_and_config_do():
    a = tile.CompileOptions(occupancy=2, num_ctas=2)
    assert a.num_cta_in_cga == 2 and a == tile.CompileOptions(occupancy=2, num_cta_in_cga=2)
    assert hash(a) == hash(tile.CompileOptions(occupancy=2, num_cta_in_cga=2))
    with pytest.raises(ValueError, match="disagree"):
        tile.CompileOptions(num_ctas=2, num_cta_in_cga=4)
    with pytest.raises(ValueError, match="power of two"):
        tile.CompileOptions(num_ctas=3)


def test_num_worker_warps_is_an_entry_hint():
    """num_worker_warps (cuTile's name) writes tileiras's num_worker_warps_per_cta hint (bytecode
    13.3 and newer); powers of two in [1, 32], others are refused."""
    k = tile.entry(num_worker_warps=8)(add.py_func)
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    assert "num_worker_warps_per_cta = 8" in k.inspect_tileir(z.partition((64,)), x, x)
    assert "num_worker_warps" not in add.inspect_tileir(z.partition((64,)), x, x)
    k(z.partition((64,)), x, x).sync()
    np.testing.assert_allclose(z.to_numpy(), 2 * x.to_numpy())
    with pytest.raises(ValueError, match="power of two in \\[1, 32\\]"):
        tile.CompileOptions(num_worker_warps=3)
    two = tile.entry(num_worker_warps=2)(add.py_func)
    assert "num_worker_warps_per_cta = 2" in two.inspect_tileir(z.partition((64,)), x, x)
    with pytest.raises(tile.CompileError, match="num_worker_warps=8 needs tileiras 13.3"):
        lowered_function(k, z.partition((64,)), x, x, version=(13, 2))
    cfg = tile.Config(tile=(64,), num_worker_warps=8)
    assert tile.Config.from_dict(cfg.as_dict()).num_worker_warps == 8
    assert "num_worker_warps=8" in repr(cfg)
    if tileiras.available():
        assert k.compile(z.partition((64,)), x, x, arch="sm_90")[:4] == b"\x7fELF"


@pytest.mark.parametrize("release", [(13, 4, 92), (13, 5, 37)])
def test_worker_warps_tileiras_would_ignore_are_refused(monkeypatch, release):
    """tileiras 13.4 honours 4 and 8 worker warps and silently ignores 1, 2, 16 and 32; 13.5
    honours every power of two. A count the installed tileiras would ignore is an error that
    names the release to install, never a kernel compiled without it."""
    from tilejit import compiler
    monkeypatch.setattr(tileiras, "version", lambda: release)
    for w in (4, 8):
        compiler.check_worker_warps(tile.CompileOptions(num_worker_warps=w))
    for w in (1, 2, 16, 32):
        opts = tile.CompileOptions(num_worker_warps=w)
        if release >= (13, 5):
            compiler.check_worker_warps(opts)
        else:
            with pytest.raises(tile.CompileError, match=f"num_worker_warps={w} needs tileiras "
                               "13.5 or newer .*13.4 takes 4 or 8.*nvidia-cuda-tileiras==13.5"):
                compiler.check_worker_warps(opts)


@pytest.mark.skipif(not tileiras.available(), reason="needs tileiras")
def test_worker_warps_reach_tileiras_or_fail_clearly():
    """Through a real compile: with tileiras 13.5 one worker warp compiles (a cubin); with 13.4
    it fails with the release to install."""
    k = tile.entry(num_worker_warps=1)(add.py_func)
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    if tileiras.version()[:2] >= (13, 5):
        assert k.compile(z.partition((64,)), x, x, arch="sm_90")[:4] == b"\x7fELF"
    else:
        with pytest.raises(tile.CompileError, match="needs tileiras 13.5"):
            k.compile(z.partition((64,)), x, x, arch="sm_90")


def test_compile_options_are_validated_and_keyed():
    with pytest.raises(ValueError, match="occupancy"):
        tile.CompileOptions(occupancy=0)
    with pytest.raises(ValueError, match="power of two"):
        tile.CompileOptions(num_cta_in_cga=3)
    k = tile.entry(add.py_func)
    x = api.from_numpy(rand(64)).sync()
    z = api.zeros((64,)).sync()
    k(z.partition((64,)), x, x).compile_options(tile.CompileOptions(occupancy=2)).sync()
    k(z.partition((64,)), x, x).sync()
    assert k.stats.compiles == 2
    with pytest.raises(TypeError):
        add(z.partition((64,)), x, x).compile_options({"occupancy": 2})


def test_prepared_launch_repeats_cheaply_and_holds_the_partition():
    x = api.from_numpy(rand(512)).sync()
    acc = api.zeros((512,)).sync()

    @tile.entry
    def accumulate(z, x):
        z.store(tile.load_tile_like(z, z) + tile.load_tile_like(x, z))

    s = tile.Device(0).new_stream()
    with accumulate(acc.partition((128,)), x).prepare(s) as p:
        for _ in range(5):
            p.launch()
        with pytest.raises(tile.TensorError, match="already partitioned"):
            acc.partition((128,))
    s.synchronize()
    np.testing.assert_allclose(acc.to_numpy(), 5 * x.to_numpy(), rtol=1e-6)
    acc.partition((128,))                       # released by close()
    with pytest.raises(tile.LaunchError, match="argument `z` is a DeviceOp"):
        accumulate(api.zeros((4,)), x).prepare(s)
    with pytest.raises(tile.LaunchError, match="argument `x` is a NumPy array"):
        accumulate(acc.partition((128,)), rand(512)).prepare(s)


@tile.entry
def store_then_reload(z, x):
    z.store(tile.load_tile_like(x, z) * 2.0)
    again = z.load()                      # must see the store above (token ordering)
    z.store(again + 1.0)


def test_a_load_after_a_store_sees_it():
    xn = rand(1000)
    z = api.zeros((1000,)).sync()
    store_then_reload(z.partition((256,)), api.from_numpy(xn).sync()).sync()
    np.testing.assert_allclose(z.to_numpy(), xn * 2 + 1, rtol=1e-6)
    text = store_then_reload.inspect_tileir(z.partition((256,)), api.from_numpy(xn).sync())
    # the reload takes the first store's token, the second store the reload's
    assert text.count("store_view_tko") == 2 and "token = " in text


@tile.entry(occupancy=2, num_ctas=2)
def hinted(z, x):
    z.store(tile.load_tile_like(x, z).astype(z.dtype, tile.RoundingMode.RZ))


def test_entry_hints_and_rounding_reach_tile_ir():
    x = api.from_numpy(np.array([1.005859375, -1.005859375] * 64, np.float32)).sync()
    z = api.zeros((128,), tile.bfloat16).sync()
    text = hinted.inspect_tileir(z.partition((128,)), x)
    assert "optimization_hints=<default = {num_cta_in_cga = 2, occupancy = 2}>" in text
    assert "ftof" in text and "rounding<zero>" in text
    hinted(z.partition((128,)), x).sync()
    # round toward zero: both values truncate to +-1.0 (nearest-even would give +-1.0078125)
    np.testing.assert_array_equal(z.to_numpy().astype(np.float32), np.array([1.0, -1.0] * 64))
    if tileiras.available():
        assert hinted.compile(z.partition((128,)), x, arch="sm_90")[:4] == b"\x7fELF"


@tile.entry
def block_counts(z):
    z.store(tile.full(z.shape, tile.num_blocks(0) * 100 + tile.num_blocks(1), tile.int32))


def test_const_grid_is_baked_into_the_kernel_and_keyed():
    from tilejit.tileir import print_module
    k = tile.entry(block_counts.py_func)
    z = api.zeros((8,), tile.int32).sync()
    k(z.partition((4,))).sync()                                  # runtime grid (2, 1, 1)
    assert (z.to_numpy() == 201).all()
    k(z.partition((4,))).const_grid((2, 1)).sync()               # same grid, baked
    assert (z.to_numpy() == 201).all()
    k(z.partition((4,))).const_grid((1, 3)).sync()               # block 0 writes tile 0 only
    assert z.to_numpy().tolist() == [103] * 4 + [201] * 4
    assert k.stats.compiles == 3                                 # each const grid is a kernel
    texts = [print_module(c.module) for c in k._cache.values()]
    assert sum("get_num_tile_blocks" in t for t in texts) == 1   # only the runtime-grid kernel
    p = k(z.partition((4,))).const_grid((2, 1)).prepare()        # prepared launches share it
    p.launch()
    p.close()
    assert k.stats.compiles == 3


# --- globals a kernel reads (issue 23 item 3) ------------------------------------------------------
SCALE = 2.0


@tile.function
def offset_of(t):
    return t + 1.0


def _built(k) -> int:
    """Specializations made: compiled, or found in the disk cache or the warm-start index (the
    GPU suite shares one cache, so another test may have compiled the same source)."""
    st = k.stats
    return st.compiles + st.disk_hits + st.index_hits


@pytest.mark.parametrize("path", ["c", "python"])
def test_a_changed_global_recompiles_at_the_next_call(path):
    """Globals are checked at every call (by identity, in C too): a new value recompiles with a
    RuntimeWarning naming it; rebinding an equal value does not; a redefined helper recompiles."""
    import warnings
    from tilejit import native
    global SCALE, offset_of
    k = tile.entry(lambda z, x: z.store(offset_of(tile.load_tile_like(x, z)) * SCALE))
    s = tile.Device(0).new_stream()
    xn = rand(64)
    x = api.from_numpy(xn).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    saved_scale, saved_helper = SCALE, offset_of
    try:
        launch_paths.run(k(z.partition((64,)), x), path, s)
        np.testing.assert_allclose(z.to_numpy(), (xn + 1) * 2, rtol=1e-6)
        assert _built(k) == 1
        SCALE = 3.0
        native.reset_stats()
        with pytest.warns(RuntimeWarning, match="reads global.*SCALE.*recompiling"):
            launch_paths.run(k(z.partition((64,)), x), path, s)
        np.testing.assert_allclose(z.to_numpy(), (xn + 1) * 3, rtol=1e-6)
        assert _built(k) == 2
        if path == "c":                 # C saw the change and gave the launch to Python
            assert native.stats()["fallbacks"] == {"a global the kernel reads changed": 1}
        SCALE = float("3.0")            # a new object, the same value: nothing to recompile
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):
                launch_paths.run(k(z.partition((64,)), x), path, s)
        assert _built(k) == 2
        if path == "c":
            native.reset_stats()
            launch_paths.run(k(z.partition((64,)), x), path, s)
            assert native.stats() == {"launches": 1, "fallbacks": {}}

        @tile.function
        def offset_of(t):               # noqa: F811  (a notebook cell run again, edited)
            return t + 5.0
        with pytest.warns(RuntimeWarning, match="offset_of"):
            launch_paths.run(k(z.partition((64,)), x), path, s)
        np.testing.assert_allclose(z.to_numpy(), (xn + 5) * 3, rtol=1e-6)
        assert _built(k) == 3
    finally:
        SCALE, offset_of = saved_scale, saved_helper


# --- sizes and the specialization key (issue 23 item 4) ----------------------------------------
def test_sizes_share_a_specialization_unless_the_code_changes():
    """Divisibility below 16 and below one 16-byte vector (4 float32) changes no code, so
    n = 1001, 1002, 1003, 1005 compile once; n = 1000 (÷8: whole vectors) and n = 1024 (÷256:
    whole 128-tiles) are each their own specialization; the kernel's repr shows what tells
    them apart."""
    k = tile.entry(add.py_func)

    def run(n):
        x, y = api.from_numpy(rand(n)).sync(), api.from_numpy(rand(n, seed=1)).sync()
        z = api.zeros((n,)).sync()
        k(z.partition((128,)), x, y).sync()
        np.testing.assert_allclose(z.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)
    for n in (1001, 1002, 1003, 1005):
        run(n)
    assert _built(k) == 1
    run(1000)
    assert _built(k) == 2
    run(1024)
    assert _built(k) == 3
    rows = repr(k).split("\n")[1:]
    assert len(rows) == 3 and len(set(rows)) == 3
    for shown in ("extents (÷256)", "extents (÷8)", "extents (-)"):
        assert any(shown in r for r in rows) and shown in k._repr_html_()


def test_a_ragged_fp16_row_of_whole_vectors_tells_the_compiler():
    """fp16 rows of 1016 elements (8 x 127) are keyed ÷8, and the kernel assumes it of the
    extent: tileiras then keeps 128-bit stores for a 1024-wide tile over them (64 2-byte stores
    a thread without it, LayerNorm on an H200)."""
    from tilejit.keys import Facts
    assert Facts.of(0x1000, (64, 1016), (1016, 1), 2).shape_div == (64, 8)
    assert Facts.of(0x1000, (64, 1012), (1012, 1), 2).shape_div == (64, 1)    # ÷4: no vector
    assert Facts.of(0x1000, (64, 1012), (1012, 1), 4).shape_div == (64, 4)    # float32's is 4

    @tile.entry
    def scale_rows(y, x):
        y.store(tile.load_tile_like(x, y) * 2.0)
    x = np.zeros((64, 1016), np.float16)
    ir = scale_rows.inspect_tileir(tile.partition(np.zeros_like(x), (8, 1024)), x)
    assert "div_by<8>" in ir, ir


def test_facts_keep_16_byte_alignment_for_vector_and_tma_access():
    from tilejit.keys import Facts
    f32 = Facts.of(0x1000, (100, 1004), (1004, 1), 4)       # rows of 4016 bytes: 16B multiples
    assert f32 == (32, 16, (4, 4), (4, 1), (False, True))
    f16 = Facts.of(0x1008, (64, 1000), (1000, 1), 2)        # 2000-byte rows, 8-byte base
    assert f16 == (32, 1, (64, 8), (8, 1), (False, True))
    odd = Facts.of(0x1000, (64, 1001), (1001, 1), 4)
    assert odd.stride_div == (1, 1)
    assert Facts.of(0x1000, (16, 16), (0, 1), 1).stride_div == (16, 1)    # broadcast: zero
    assert len({f32.describe(), f16.describe(), odd.describe()}) == 3


@tile.entry
def shifted_scaled(z, x, S: tile.Constant[float], SHIFT: tile.Constant[int] = 0,
                   NEG: tile.Constant[bool] = False):
    t = x.load(z.block, z.shape) * S + SHIFT
    if NEG:
        t = -t
    z.store(t)


def test_a_call_passing_its_constants_launches_the_kernel_bound_to_them():
    """``kernel(z, x, 2.0)`` launches a kernel bound to the constants' values (and compile
    options): a plain launch (in C when built), with the call's output, counters and errors
    unchanged. Equal values of other types, and -0.0 against 0.0, bind kernels of their own
    values."""
    from tilejit import native
    k = tile.entry(shifted_scaled.py_func)
    s = tile.Device(0).new_stream()
    xn = rand(64)
    x = api.from_numpy(xn).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    out = k(z.partition((64,)), x, 2.0).sync_on(s)
    assert len(out) == 5 and out[2:] == (2.0, 0, False)     # every argument, defaults applied
    np.testing.assert_allclose(z.to_numpy(), 2 * xn, rtol=1e-6)
    native.reset_stats()
    for _ in range(3):
        k(z.partition((64,)), x, 2.0).sync_on(s)
    if native.enabled():
        assert native.stats() == {"launches": 3, "fallbacks": {}}
    assert k.stats.launches == 4 and k.stats.compiles == 1
    assert len(k._bound_kernels) == 1
    k(z.partition((64,)), x, 2, 0, False).sync_on(s)        # 2 == 2.0: the same specialization
    k(z.partition((64,)), x, 2.0, SHIFT=1).sync_on(s)       # a keyword: bound as well
    np.testing.assert_allclose(z.to_numpy(), 2 * xn + 1, rtol=1e-6)
    assert k.stats.compiles == 2 and len(k._bound_kernels) == 2
    k(z.partition((64,)), x, -0.0).sync_on(s)
    k(z.partition((64,)), x, 0.0).sync_on(s)
    assert k.stats.compiles == 4                            # the sign of zero is in the key
    assert repr(k).count("\n  (") == 4                      # the kernel lists all four
    assert k(z.partition((64,)), x, 1.5, 0, True).submit_on(s).result()[4] is True
    np.testing.assert_allclose(z.to_numpy(), -1.5 * xn, rtol=1e-6)
    opts = tile.CompileOptions(occupancy=2)                 # compile options bind too
    for _ in range(2):
        native.reset_stats()
        k(z.partition((64,)), x, 2.0).compile_options(opts).sync_on(s)
    if native.enabled():
        assert native.stats() == {"launches": 1, "fallbacks": {}}
    assert k.stats.compiles == 6                            # the options are in the key
    with pytest.raises(TypeError, match="SHIFT"):           # a bad value: the same error
        k(z.partition((64,)), x, 2.0, 1.5).sync_on(s)
    with pytest.raises(tile.LaunchError, match="given twice"):
        k(z.partition((64,)), x, 2.0).generics(S=3.0).sync_on(s)
    k(z.partition((64,)), x).generics(S=2.0, NEG=True).sync_on(s)       # generics: as before
    np.testing.assert_allclose(z.to_numpy(), -2 * xn, rtol=1e-6)


def test_a_changed_global_recompiles_kernels_bound_to_constants():
    """The bound kernels share their parent's globals check: a new value recompiles every one
    of them (the C launchers watch the same globals)."""
    global SCALE
    k = tile.entry(lambda z, x, S: z.store(tile.load_tile_like(x, z) * S * SCALE))
    k.py_func.__annotations__["S"] = tile.Constant[int]
    k = tile.entry(k.py_func)
    s = tile.Device(0).new_stream()
    xn = rand(64)
    x = api.from_numpy(xn).sync_on(s)
    z = api.zeros((64,)).sync_on(s)
    saved = SCALE
    try:
        for c in (1, 2):
            k(z.partition((64,)), x, c).sync_on(s)
        SCALE = 5.0
        with pytest.warns(RuntimeWarning, match="SCALE"):
            k(z.partition((64,)), x, 1).sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), 5 * xn, rtol=1e-6)
        k(z.partition((64,)), x, 2).sync_on(s)           # the other bound kernel: new code too
        np.testing.assert_allclose(z.to_numpy(), 10 * xn, rtol=1e-6)
    finally:
        SCALE = saved
