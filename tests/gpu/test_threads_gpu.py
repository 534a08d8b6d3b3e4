"""The threaded stress tests of the simulator (tests/test_threads_simulator.py), on the GPU."""
import pytest

from test_threads_simulator import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
