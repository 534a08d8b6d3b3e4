"""Bad and edge input found by trying tilejit as a new user would (issue 10): each case used to
give a silent wrong result or a weak error."""
import math
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


# --- constants ------------------------------------------------------------------------------------
@tile.entry
def recip(z, C: tile.Constant[float]):
    z.store(tile.full(z.shape, 1.0, tile.float32) / C)


@tile.entry
def rows(z, N: tile.Constant[int]):
    z.store(tile.full(z.shape, N, tile.float32))


def test_float_constants_are_keyed_by_their_bits():
    z = api.zeros((16,)).sync()
    recip(z.partition((16,)), 0.0).sync()
    assert (z.to_numpy() == np.inf).all()
    recip(z.partition((16,)), -0.0).sync()                 # used to reuse the +0.0 kernel
    assert (z.to_numpy() == -np.inf).all()
    n = recip.stats.compiles
    for _ in range(5):
        recip(z.partition((16,)), float("nan")).sync()     # used to compile on every call
    assert recip.stats.compiles == n + 1 and np.isnan(z.to_numpy()).all()


def test_constants_are_checked_against_their_annotation():
    z = api.zeros((16,)).sync()
    with pytest.raises(TypeError, match=r"annotated tile.Constant\[int\] but got float 2.5"):
        rows(z.partition((16,)), 2.5).sync()
    rows(z.partition((16,)), np.int64(3)).sync()           # NumPy ints are ints
    assert (z.to_numpy() == 3).all()
    with pytest.raises(TypeError, match="got a NumPy array"):
        rows(z.partition((16,)), np.arange(3)).sync()
    with pytest.raises(TypeError, match="pass a tuple instead"):
        rows(z.partition((16,)), [1, 2]).sync()


# --- Python call semantics ------------------------------------------------------------------------
@tile.entry
def scaled(z, x, s=2.0):
    z.store(tile.load_tile_like(x, z) * s)


def test_calls_bind_like_python():
    x = api.ones((16,)).sync()
    z = api.zeros((16,)).sync()
    scaled(z.partition((16,)), x).sync()                   # the default applies
    assert (z.to_numpy() == 2).all()
    scaled(z.partition((16,)), x=x, s=3.0).sync()
    assert (z.to_numpy() == 3).all()
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        scaled(z.partition((16,)), x, x=x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        scaled(z.partition((16,)), x, y=1)


# --- partitions of slices -------------------------------------------------------------------------
@tile.entry
def copy_in(z, x):
    z.store(tile.load_tile_like(x, z))


def test_a_slice_is_an_output_while_its_parent_is_alive():
    parent = api.from_numpy(np.arange(100, dtype=np.float32)).sync()
    src = api.from_numpy(np.full(40, -1.0, np.float32)).sync()
    copy_in(parent[10:50].partition((16,)), src).sync()
    out = parent.to_numpy()
    assert (out[10:50] == -1).all() and (out[:10] == np.arange(10)).all()
    # read the rest of the same tensor in the same launch: disjoint bytes are fine
    copy_in(parent[0:10].partition((16,)), parent[60:70]).sync()
    assert (parent.to_numpy()[:10] == np.arange(60, 70)).all()
    with pytest.raises(tile.TensorError, match="share memory"):
        copy_in(parent[0:40].partition((16,)), parent[20:60]).sync()


def test_first_to_host_of_a_launch():
    x = api.from_numpy(np.arange(16, dtype=np.float32)).sync()
    z = api.zeros((16,)).sync()
    host = copy_in(z.partition((16,)), x).first().to_host().sync()
    assert np.array_equal(host, np.arange(16))


# --- kernel code ----------------------------------------------------------------------------------
def _kernel(body: str, params: str = "z"):
    src = f"import tilejit as tile\n@tile.entry\ndef k({params}):\n" + textwrap.indent(body, "    ")
    ns = {}
    exec(compile(src, "<robustness kernel>", "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("rng", ["range(0, n, 0.5)", "range(0, 2.5)", "range(1.0)"])
def test_range_with_floats_is_a_type_error(rng):
    k = _kernel(f"acc = tile.zeros(z.shape, tile.float32)\nfor i in {rng}:\n"
                f"    acc = acc + 1.0\nz.store(acc)\n", "z, n")
    with pytest.raises(tile.TypingError, match="range\\(\\) bounds must be integer scalars.*float"):
        k(api.zeros((4,)).sync().partition((4,)), 4).sync()


def test_a_zero_step_at_run_time_is_a_device_assertion():
    k = _kernel("acc = tile.zeros(z.shape, tile.float32)\nfor i in range(0, n, s):\n"
                "    acc = acc + 1.0\nz.store(acc)\n", "z, n, s")
    z = api.zeros((4,)).sync()
    k(z.partition((4,)), 4, 2).sync()
    assert (z.to_numpy() == 2).all()
    with pytest.raises(tile.DeviceError, match="range\\(\\) arg 3 must not be zero"):
        k(z.partition((4,)), 4, 0).sync()


def test_negative_tile_index_is_reported_signed():
    k = _kernel("z.store(x.load((i,), z.shape))\n", "z, x, i")
    x = api.arange(64, tile.float32).sync()
    with pytest.raises(tile.DeviceError, match=r"tile index \(-1,\) .*negative index"):
        k(api.zeros((16,)).sync().partition((16,)), x, -1).sync()


LIST_GLOBAL = [1, 2, 3]


@pytest.mark.parametrize("body,msg", [
    ("z.store(tile.full(z.shape, LIST_GLOBAL[0], tile.float32))\n", "is a list.*use a tuple"),
    ("z.store(tile.full(z.shape, len('abc'), tile.float32))\n", "len\\(\\) of a string"),
    ("t = (1.0, z)\nz.store(tile.full(z.shape, t[i], tile.float32))\n",
     "can only be indexed with a compile-time constant"),
])
def test_plain_language_errors(body, msg):
    src = ("import tilejit as tile\nLIST_GLOBAL = [1, 2, 3]\n@tile.entry\ndef k(z, i):\n"
           + textwrap.indent(body, "    "))
    ns = {}
    exec(compile(src, "<robustness kernel>", "exec"), ns)
    with pytest.raises(tile.TypingError, match=msg):
        ns["k"](api.zeros((4,)).sync().partition((4,)), 1).sync()


GLOBAL_SCALE = 2.0


@tile.entry
def uses_global(z):
    z.store(tile.full(z.shape, GLOBAL_SCALE, tile.float32))


def test_changed_globals_recompile_with_a_warning_naming_them():
    global GLOBAL_SCALE
    z = api.zeros((4,)).sync()
    uses_global(z.partition((4,))).sync()
    try:
        GLOBAL_SCALE = 7.0
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                uses_global(z.partition((4,))).sync()
        msgs = [str(x.message) for x in w if "recompiling" in str(x.message)]
        assert len(msgs) == 1 and "GLOBAL_SCALE" in msgs[0]
        assert (z.to_numpy() == 7.0).all()                   # never the stale value
        assert "GLOBAL_SCALE = 7.0" in uses_global.inspect_types(z.partition((4,)))
    finally:
        GLOBAL_SCALE = 2.0


def test_big_endian_arrays_name_the_byte_order():
    with pytest.raises(TypeError, match="byte order.*newbyteorder"):
        api.from_numpy(np.arange(4, dtype=">f4")).sync()


# --- environment and cache ------------------------------------------------------------------------
def _python(code, **env):
    e = dict(os.environ, TILEJIT_SIMULATE="1")
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=120)


@pytest.mark.parametrize("var,value,msg", [
    ("TILEJIT_SIMULATE", "maybe", "TILEJIT_SIMULATE='maybe' is not understood"),
    ("TILEJIT_DUMP", "tileirr", "unknown stage\\(s\\) tileirr; TILEJIT_DUMP accepts a "
                     "comma-separated list of typed, tileir"),
    ("TILEJIT_NATIVE", "sometimes", "TILEJIT_NATIVE='sometimes' is not understood"),
])
def test_unknown_environment_values_are_rejected(var, value, msg):
    import re
    code = ("import tilejit as tile\nfrom tilejit import api\n"
            "@tile.entry\ndef k(z):\n    z.store(tile.zeros(z.shape, tile.float32))\n"
            "k(api.empty((4,)).sync().partition((4,))).sync()\n")
    r = _python(code, **{var: value, "TILEJIT_SIMULATE": "1" if var != "TILEJIT_SIMULATE" else
                         value})
    assert r.returncode != 0 and re.search(msg, r.stderr), r.stderr[-2000:]


def test_unusable_cache_dir_is_reported_once_and_in_info(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    code = ("import tilejit as tile\nfrom tilejit import api\n"
            "@tile.entry\ndef k(z):\n    z.store(tile.zeros(z.shape, tile.float32))\n"
            "x = api.empty((4,)).sync()\n"
            "for _ in range(3):\n    k.compile(x.partition((4,)), arch='sm_90')\n")
    r = _python(code, TILEJIT_CACHE_DIR=str(blocker / "cache"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("is not usable") == 1 and "TILEJIT_CACHE_DIR" in r.stderr
    info = _python("import tilejit.__main__ as m; m.main(['info'])",
                   TILEJIT_CACHE_DIR=str(blocker / "cache"))
    assert "NOT USABLE" in info.stdout


def test_tilde_is_expanded_in_the_cache_dir(tmp_path):
    from tilejit.toolchain import cache
    old = os.environ.get("TILEJIT_CACHE_DIR")
    os.environ["TILEJIT_CACHE_DIR"] = "~/tilejit-test-cache"
    try:
        assert cache.cache_dir() == os.path.expanduser("~/tilejit-test-cache")
        assert "~" not in cache.cache_dir()
    finally:
        if old is None:
            del os.environ["TILEJIT_CACHE_DIR"]
        else:
            os.environ["TILEJIT_CACHE_DIR"] = old


def test_a_failed_cache_write_leaves_no_temporary_file(tmp_path):
    from tilejit.toolchain import cache
    target = tmp_path / "ab" / "x.cubin"
    target.mkdir(parents=True)                  # the rename onto a directory fails
    assert not cache.write_atomic(target, b"data")
    assert sorted(p.name for p in (tmp_path / "ab").iterdir()) == ["x.cubin"]


def test_stale_temporary_files_are_evicted(tmp_path):
    from tilejit.toolchain import cache
    d = cache.DiskCache(str(tmp_path))
    (tmp_path / "ab").mkdir()
    old = tmp_path / "ab" / ".tmp-dead"
    old.write_bytes(b"x")
    t = time.time() - 2 * cache.STALE_TEMP_AGE
    os.utime(old, (t, t))
    fresh = tmp_path / "ab" / ".tmp-writing"
    fresh.write_bytes(b"x")
    d.put("ab" + "0" * 62, b"cubin")
    assert not old.exists() and fresh.exists()
    d.clear()
    assert not fresh.exists()


# --- tileiras -------------------------------------------------------------------------------------
def test_a_timed_out_tileiras_is_killed_with_its_children(tmp_path, fake_tileiras):
    from tilejit.toolchain import tileiras
    pidfile = tmp_path / "child.pid"
    fake_tileiras(f"sleep 300 &\necho $! > {pidfile}\nsleep 300\n")
    t0 = time.time()
    with pytest.raises(tile.ToolchainError, match="did not finish within 1 s"):
        tileiras.compile_bytecode(b"\x7fTileIR\x00", "sm_90", timeout=1, keep_failed=False)
    assert time.time() - t0 < 30
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("tileiras' child process outlived the timeout")


def test_tileiras_exiting_0_without_a_cubin_says_so(fake_tileiras):
    from tilejit.toolchain import tileiras
    fake_tileiras("exit 0\n")
    with pytest.raises(tile.ToolchainError, match="exited successfully but wrote no cubin"):
        tileiras.compile_bytecode(b"\x7fTileIR\x00", "sm_90", keep_failed=False)


def test_math_inf_helpers_are_still_fine():
    # a sanity check that the constant checks accept what users pass most
    z = api.zeros((16,)).sync()
    recip(z.partition((16,)), math.inf).sync()
    assert (z.to_numpy() == 0).all()
