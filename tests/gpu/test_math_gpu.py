"""The math functions of issue 25 item 1 on the device: the simulator's accuracy cases
(tests/math_cases.py) within the documented ulp plus the error of the Tile IR ops they are built
from (CUDA's exp, log, atan2 and sqrt are within 2 ulp), special values exact."""
import numpy as np
import pytest

from tilejit import language

import math_cases as M

pytestmark = pytest.mark.gpu
#: extra ulp allowed on the GPU for the error of CUDA's own exp/log/atan2 inside the formulas
GPU_SLACK = 2


@pytest.mark.parametrize("name", sorted(M.cases(np.float32)))
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_accuracy_on_the_device(name, dt):
    err, bad = M.measure(name, dt)
    bound = language.MATH_ACCURACY[name][dt == np.float64]
    assert bad == [], f"{name}: special values differ at {bad[:8]}"
    assert err <= bound + (GPU_SLACK if bound else 0), f"{name} {dt.__name__}: {err:.2f} ulp"


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "expm1", "log1p"])
def test_large_random_inputs_on_the_device(name):
    rng = np.random.default_rng(5)                # reference is a Python loop: fewer there)
    n = 1 << 15 if name == "erfinv" else 1 << 21  # up to 2048 blocks of 1024 (the erfinv
    if name == "erfinv":
        x = rng.uniform(-1, 1, n).astype(np.float32)
    else:
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 1, n)).astype(np.float32)
    x64, ref = x.astype(np.float64), dict(M.cases(np.float32))[name][1]
    with np.errstate(all="ignore"):
        want = ref(x64)
    got = M.apply(name, x).astype(np.float64)
    assert M.ulp_error(got, want, np.float32) <= language.MATH_ACCURACY[name][0] + GPU_SLACK
