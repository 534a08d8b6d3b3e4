"""Every corpus kernel runs through @tile.entry on the CPU simulator and matches NumPy."""
import pytest

from corpus import CASES
from corpus_runner import run_case


pytestmark = pytest.mark.usefixtures("simulator_backend")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_matches_numpy(case):
    run_case(case, seed=1)
