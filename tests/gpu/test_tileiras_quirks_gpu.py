"""Known tileiras miscompiles, pinned on the GPU. The standalone repro of each is a strict xfail
while tileiras gets it wrong, so a tileiras that fixes it fails the suite and the workaround
(NOTES.md, tileiras quirks) can go; the kernels tilejit compiles with the workaround must come
out right. tests/test_tileiras_quirks.py runs the same kernels on the simulator."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from test_tileiras_quirks import _run

pytestmark = pytest.mark.gpu

REPRO = (pathlib.Path(__file__).resolve().parents[2] / "tools" / "tileiras_repros"
         / "loop_carried_tile")


def _run_repro(name):
    """run.py of the standalone repro on one bytecode file: (exit status, its output)."""
    r = subprocess.run([sys.executable, str(REPRO / "run.py"), str(REPRO / f"{name}.tileirbc")],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("m,n,rows", [(8192, 4096, 4), (8192, 1024, 8)])
def test_a_tile_loaded_one_iteration_ahead(m, n, rows):
    """tileiras 13.4-13.5 read such a tile from the buffer of the next iteration's TMA load
    (8188 of 8192 rows wrong on an H100, 2026-11-25; test_the_standalone_repro below);
    tilejit takes the loads of a carried tile off the TMA unit (tileir/tileiras_workarounds.py),
    so the kernel as written comes out right."""
    got, ref = _run(m, n, rows, 264)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("m,n,rows", [(8192, 4096, 4), (8192, 4096, 2), (65536, 1024, 8)])
def test_a_tile_carried_in_registers_is_right(m, n, rows):
    """The same loop with the loads kept off the TMA unit (``allow_tma=False``, loaded into
    registers) comes out right: the miscompile is in reusing the shared-memory buffer of a
    carried TMA load (2026-11-27 H200: the register form is right for 1-8 rows of 1K-4K, and no
    faster than loading each row block in the iteration that uses it, which tileiras already
    pipelines; BENCHMARKS.md)."""
    got, ref = _run(m, n, rows, 264, tma=False)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.xfail(strict=True, reason="tileiras 13.4 and 13.5: the standalone repro of the "
                                       "carried tile (tools/tileiras_repros/loop_carried_tile)")
def test_the_standalone_repro():
    rc, out = _run_repro("kernel")
    assert rc == 0, out


@pytest.mark.parametrize("name", ["kernel_no_tma", "kernel_not_carried", "kernel_f32_input"])
def test_the_standalone_repros_controls_are_right(name):
    """Each control differs from the repro in one thing and comes out right: a wrong one would
    mean the runner, not tileiras, is at fault."""
    rc, out = _run_repro(name)
    assert rc == 0 and "0 of 8192 row sums wrong" in out, out
