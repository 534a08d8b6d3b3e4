"""Numerics on the device (issue 21 items 3 and 8): float32 matmul multiplies in float32 (TF32
only when asked), and float ``//``/``%`` give NumPy's bits on the edge grid the simulator tests
use (tests/test_float_divmod.py, tests/test_matmul_precision.py)."""
import ml_dtypes
import numpy as np
import pytest

from numerics_kernels import check_floordiv_mod, edge_pairs, matmul_error

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16],
                         ids=["float16", "float32", "float64", "bfloat16"])
def test_floordiv_mod_edge_grid_matches_numpy_bitwise(dtype):
    check_floordiv_mod(*edge_pairs(dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_floordiv_mod_random_values_match_numpy(dtype):
    rng = np.random.default_rng(7)
    n = 1 << 20                                   # 4096 blocks of 256
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    b = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    check_floordiv_mod(a, b)


@pytest.mark.parametrize("precision", [None, "ieee", "tf32x3"])
@pytest.mark.parametrize("n", [256, 1024])
def test_float32_matmul_is_float32_on_the_device(precision, n):
    err, ir = matmul_error(precision, n=n)
    assert err < 1e-5, err
    assert ("tf32" in ir) == (precision == "tf32x3")


@pytest.mark.parametrize("precision", ["tf32", "astype"])
def test_tf32_matmul_on_the_device(precision):
    err, ir = matmul_error(precision)
    assert 5e-5 < err < 2e-3, err                 # ~3e-4: 10 mantissa bits per input
    assert "tf32" in ir
