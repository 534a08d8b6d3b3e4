"""Known tileiras miscompiles, pinned on the GPU: each test states the right answer and is a
strict xfail while tileiras gets it wrong, so a tileiras that fixes it fails the suite and the
workaround (NOTES.md, tileiras quirks) can go. tests/test_tileiras_quirks.py runs the same
kernels on the simulator, which gets them right."""
import numpy as np
import pytest

from test_tileiras_quirks import _run

pytestmark = pytest.mark.gpu


@pytest.mark.xfail(strict=True, reason="tileiras 13.4: a (4, 4096) fp16 tile carried to the next "
                                       "iteration of a persistent loop comes out as the next "
                                       "row block (seen on an H100, 2026-11-25)")
def test_a_tile_loaded_one_iteration_ahead():
    got, ref = _run(8192, 4096, 4, 264)
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
