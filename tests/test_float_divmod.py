"""Float ``//`` and ``%`` give ``np.floor_divide`` / ``np.remainder``'s bits on a dense grid of
edge values (infinities, NaN, signed zeros, subnormals, zero divisors), issue 21 item 8. The
same grid runs on the GPU in tests/gpu/test_numerics_gpu.py."""
import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from numerics_kernels import check_floordiv_mod, edge_pairs, floordiv_mod, run_floordiv_mod

pytestmark = pytest.mark.usefixtures("simulator_backend")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16],
                         ids=["float16", "float32", "float64", "bfloat16"])
def test_edge_grid_matches_numpy_bitwise(dtype):
    check_floordiv_mod(*edge_pairs(dtype))


@pytest.mark.parametrize("a,b,q,r", [
    (np.inf, 2.0, np.nan, np.nan), (3.0, -np.inf, -1.0, -np.inf), (-0.0, 3.0, -0.0, 0.0),
    (3.0, np.inf, 0.0, 3.0), (-3.0, np.inf, -1.0, np.inf), (1.0, 0.0, np.inf, np.nan),
    (0.0, -3.0, -0.0, -0.0), (np.nan, 1.0, np.nan, np.nan), (-7.0, 2.0, -4.0, 1.0),
])
def test_named_edges(a, b, q, r):
    x, y = np.full(256, a, np.float32), np.full(256, b, np.float32)
    got_q, got_r = run_floordiv_mod(x, y)
    for got, want in ((got_q[0], q), (got_r[0], r)):
        assert (np.isnan(got) and np.isnan(want)) or \
            (got == want and np.signbit(got) == np.signbit(want)), (a, b, got, want)


def test_random_values_match_numpy():
    rng = np.random.default_rng(1)
    n = 4096
    for dtype in (np.float16, np.float32, np.float64):
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
        b = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
        check_floordiv_mod(a, b)


def test_the_lowering_emits_the_ops_the_gpu_runs():
    """The NumPy semantics live in the Tile IR (fmod, floor, sign fix-ups), not in the simulator."""
    a = api.from_numpy(np.ones(256, np.float32)).sync()
    q, r = api.zeros((256,), tile.float32).sync(), api.zeros((256,), tile.float32).sync()
    ir = floordiv_mod.inspect_tileir(q.partition((256,)), r.partition((256,)), a, a)
    assert ir.count("remf") == 2 and "floor" in ir and "-0.000000e+00" in ir
