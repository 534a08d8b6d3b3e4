"""Shared test setup: make the helper modules in tests/ (corpus, tileir_cases, ...) importable
from every test directory, and the fixtures several modules share."""
import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skip_summary import pytest_terminal_summary  # noqa: E402,F401  (skips grouped by reason)
# test bodies shared by several test modules: their asserts explain failures as test modules' do
pytest.register_assert_rewrite("multidevice_cases")

# Every test session starts from an empty disk cache (cubins and the warm-start index), so compile
# counts are the same on a fresh machine and on the tenth run; tests of the cache set their own.
if "TILEJIT_TEST_KEEP_CACHE" not in os.environ:
    os.environ["TILEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilejit-test-cache-")


@pytest.fixture
def simulator_backend():
    """Run the test on the CPU simulator, whatever the machine has. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("simulator_backend")``."""
    from tilejit.runtime import backend
    with backend.force("simulator"):
        yield


@pytest.fixture
def dev():
    """Buffers in the simulated memory (``simulator_helpers.Device``), freed after the test."""
    from simulator_helpers import Device
    d = Device()
    yield d
    d.free()


@pytest.fixture
def fake_tileiras(tmp_path, monkeypatch):
    """``install(script)``: a shell script stands in for tileiras (TILEJIT_TILEIRAS) for the test;
    returns its path. What tilejit learned about the real one (path, version) is forgotten
    before and after."""
    from tilejit.toolchain import tileiras

    def forget():
        for fn in (tileiras.find_toolchain, tileiras.version_text, tileiras._probe_versions):
            fn.cache_clear()

    def install(script: str):
        p = tmp_path / "tileiras"
        p.write_text("#!/bin/sh\n" + script)
        p.chmod(0o755)
        monkeypatch.setenv("TILEJIT_TILEIRAS", str(p))
        forget()
        return p

    yield install
    monkeypatch.undo()
    forget()
