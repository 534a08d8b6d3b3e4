"""Every corpus kernel compiles through tileiras for Hopper and Blackwell (no GPU needed)."""
import pytest

from tilejit.toolchain import tileiras

from corpus import CASES
from corpus_runner import compile_case, kernel_of

pytestmark = pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_compiles(case, arch):
    cubin = compile_case(case, arch)
    assert cubin[:4] == b"\x7fELF"
    assert kernel_of(case).__name__.encode() in cubin
