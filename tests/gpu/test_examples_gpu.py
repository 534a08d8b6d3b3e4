"""Every gallery script at its GPU size, checking its own result."""
import pytest

from test_examples import EXAMPLES, _run

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_on_the_gpu(name):
    r = _run(f"examples/{name}.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{name}: " in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout
