"""CUDA graphs on the GPU (the same tests as the CPU suite, which replays on the simulator)."""
import pytest

from test_graph import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
