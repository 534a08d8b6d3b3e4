"""Every corpus kernel runs on the GPU and matches NumPy."""
import pytest

from corpus import CASES
from corpus_runner import run_case

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_on_gpu(case):
    run_case(case, seed=2)
