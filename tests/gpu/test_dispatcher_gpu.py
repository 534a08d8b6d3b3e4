"""@tile.entry semantics on the GPU (the same tests as the CPU suite)."""
import pytest

from test_dispatcher import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
