"""The IR clean-ups (fma, hoisting, transposed loads) give the same results on the GPU."""
import pytest

from test_tileir_optimize import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
