"""Python scalars by NumPy 2's rules on the GPU (the same tests as the CPU suite): the f64
parameter and its conversion in real Tile IR, the range checks in both launch paths."""
import pytest

from test_weak_scalars import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
