"""Every test of tests/test_cutile_scalars.py run by the GPU backend instead of the simulator:
``ct.kernel``'s strong Python scalars checked on the hardware and tileiras, not only in the
simulator."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_cutile_scalars import *  # noqa: E402,F401,F403  (collected here, on the GPU)

pytestmark = pytest.mark.gpu
