"""What a user sees of a compile: TILEJIT_DUMP headers per kernel without tilejit's own kernels,
inspect_types() on the compiled signatures, parameter names in inspect_tileir (issue 23 item 9)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

pytestmark = pytest.mark.usefixtures("simulator_backend")

SCRIPT = textwrap.dedent("""\
    import tilejit as tile
    from tilejit import api

    @tile.entry
    def twice(z, x):
        z.store(tile.load_tile_like(x, z) * 2)

    x = api.arange(64, tile.float32).sync()          # an internal kernel (api.arange)
    z = api.zeros((64,)).sync()                      # another one
    twice(z.partition((16,)), x).sync()
    assert (z.to_numpy() == 2 * x.to_numpy()).all()
""")


def _dump(tmp_path, stages):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TILEJIT_DUMP=stages, TILEJIT_SIMULATE="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return script, r.stderr


def _no_facts(text: str) -> str:
    """``text`` without the specialization facts signatures show after each array
    (`` [extents (÷64), strides (1), base ÷16, 32-bit indices]``)."""
    return re.sub(r" \[[^\]]*indices\]", "", text)


def test_tileir_dump_has_a_header_per_kernel_and_skips_internal_kernels(tmp_path):
    script, err = _dump(tmp_path, "tileir")
    headers = [_no_facts(ln) for ln in err.splitlines() if ln.startswith("// ==== tilejit")]
    assert headers == [
        f"// ==== tilejit tileir: twice(z: partition float32 1-d tile (16,), x: tensor float32 "
        f"1-d) for the simulator, defined at {script}:4 ===="]
    assert "entry @twice" in err and "entry @arange" not in err and "entry @fill" not in err
    assert "//   x: %arg3 base, %arg4 shape[0], %arg5 strides[0]" in err


def test_internal_kernels_are_dumped_when_asked(tmp_path):
    _, err = _dump(tmp_path, "tileir,internal")
    assert "entry @twice" in err and "entry @arange" in err
    assert err.count("// ==== tilejit tileir:") >= 3


def test_timings_skip_internal_kernels_too(tmp_path):
    _, err = _dump(tmp_path, "timings")
    lines = [ln for ln in err.splitlines() if ln.startswith("tilejit: compiled")]
    assert len(lines) == 1 and lines[0].startswith("tilejit: compiled twice for sim")


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_remarks_dump_prints_tileirass_remarks_under_a_header(tmp_path):
    script = tmp_path / "aot.py"
    script.write_text(textwrap.dedent("""\
        import tilejit as tile
        from tilejit import api

        @tile.entry
        def narrow_copy(z, x):
            z.store(2 * x.load(z.block, z.shape))

        x = api.ones((64, 3), tile.float16).sync()
        z = api.zeros((64, 3), tile.float16).sync()
        assert narrow_copy.compile(z.partition((16, 4)), x, arch="sm_90")[:4] == b"\\x7fELF"
    """))
    env = dict(os.environ, TILEJIT_DUMP="remarks", TILEJIT_SIMULATE="1",
               TILEJIT_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):      # the second process would find the kernel in the warm-start index
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    heads = [i for i, ln in enumerate(lines) if ln.startswith("// ==== tilejit remarks:")]
    assert len(heads) == 1, r.stderr                    # internal kernels left out
    assert _no_facts(lines[heads[0]]) == (
        f"// ==== tilejit remarks: narrow_copy(z: partition float16 2-d tile (16, 4), x: tensor "
        f"float16 2-d) for sm_90, defined at {script}:4 ====")
    assert f"{script}:6: failed [Memory] Failed to select TMA load instruction (Reason = stride " \
           f"not 16-byte aligned)" in lines[heads[0] + 1:]


@tile.entry
def scale(z, x, a, BN: tile.Constant[int]):
    z.store(tile.load_tile_like(x, z) * a + BN)


def test_inspect_types_without_arguments_shows_every_compiled_signature():
    assert "no compiled specializations yet" in scale.inspect_types()
    x32 = api.ones((64,)).sync()
    z32 = api.zeros((64,)).sync()
    x64 = api.ones((64,), tile.float64).sync()
    z64 = api.zeros((64,), tile.float64).sync()
    scale(z32.partition((16,)), x32, 2.0, 1).sync()
    scale(z64.partition((32,)), x64, 3, 2).sync()
    text = scale.inspect_types()
    assert text == scale.inspect_types()
    text = _no_facts(text)
    assert ("# scale(z: partition float32 1-d tile (16,), x: tensor float32 1-d, "
            "a: float64 scalar (weak); BN=1)") in text
    assert ("# scale(z: partition float64 1-d tile (32,), x: tensor float64 1-d, "
            "a: int64 scalar (weak); BN=2)") in text
    assert text.count("tile kernel scale(") == 2


def test_inspect_tileir_names_parameters_after_the_python_ones():
    x = api.ones((8, 64)).sync()
    z = api.zeros((8, 64)).sync()
    ir = scale.inspect_tileir(z.partition((8, 16)), x, 2.0, 4)
    head, body = ir.split("entry @scale", 1)
    assert head.splitlines() == [
        "// parameters:",
        "//   z: %arg0 base, %arg1 shape[0], %arg2 shape[1], %arg3 strides[0], %arg4 strides[1]",
        "//   x: %arg5 base, %arg6 shape[0], %arg7 shape[1], %arg8 strides[0], %arg9 strides[1]",
        "//   a: %arg10",
    ]
    assert "(%arg0: tile<ptr<f32>>" in body and "%arg11" not in body   # BN is a constant
