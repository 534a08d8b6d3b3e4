"""tile.api constructors and copies on the GPU (the same tests as the CPU suite)."""
import pytest

from test_api import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
