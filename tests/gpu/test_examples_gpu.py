"""Every gallery script at its GPU size, checking its own result."""
import os

import pytest

from test_examples import EXAMPLES, TRITON_TUTORIALS, _run

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", EXAMPLES + TRITON_TUTORIALS)
def test_example_runs_on_the_gpu(name):
    r = _run(f"examples/{name}.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{os.path.basename(name)}: " in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout
