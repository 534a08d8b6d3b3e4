"""Fuzzing: random elementwise / reduction kernels (tests/fuzz_kernels.py) over random shapes and
dtypes, checked against NumPy on the simulator and (marked gpu) the GPU against the simulator.
Seeded and reproducible; a failure prints the kernel's source."""
import numpy as np
import pytest

import fuzz_kernels as F

CPU_CASES = 150
GPU_CASES = 40


@pytest.mark.parametrize("seed", range(CPU_CASES))
def test_random_kernel_on_the_simulator(seed, simulator_backend):
    rng = np.random.default_rng(1000 + seed)
    case = F.make_case(rng)
    a, b = F.inputs(case, rng)
    F.check(case, F.run(case, a, b), F.expected(case, a, b))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(GPU_CASES))
def test_random_kernel_gpu_matches_simulator(seed):
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        pytest.skip("needs an NVIDIA GPU")
    rng = np.random.default_rng(5000 + seed)
    case = F.make_case(rng)
    a, b = F.inputs(case, rng)
    got = F.run(case, a, b)
    with backend.force("simulator"):
        want = F.run(case, a, b)
    F.check(case, got, want)
