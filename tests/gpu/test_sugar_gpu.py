"""Every test of tests/test_sugar.py run by the GPU backend instead of the simulator: ``with``
over @contextmanager functions, tuple comprehensions, static_iter sequences and and/or values
checked on the hardware and tileiras, not only in the simulator."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_sugar import *  # noqa: E402,F401,F403  (collected here, on the GPU)

pytestmark = pytest.mark.gpu
