"""Every corpus kernel runs through @tile.entry on the CPU simulator and matches NumPy."""
import pytest

from tilejit.runtime import backend

from corpus import CASES
from corpus_runner import run_case


@pytest.fixture(autouse=True, scope="module")
def _simulator():
    with backend.force("simulator"):
        yield


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_matches_numpy(case):
    run_case(case, seed=1)
