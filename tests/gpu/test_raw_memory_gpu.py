"""Every test of tests/test_raw_memory.py run by the GPU backend instead of the simulator:
``x.get_raw_memory()`` (loads, stores and atomics by element offset) checked on the hardware and
tileiras, not only in the simulator."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_raw_memory import *  # noqa: E402,F401,F403  (collected here, on the GPU)

pytestmark = pytest.mark.gpu
