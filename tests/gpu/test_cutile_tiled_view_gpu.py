"""``x.tiled_view(...)`` on a GPU: every test of tests/test_cutile_tiled_view.py (NumPy arrays
through ``ct.launch``, values checked against NumPy slicing) run by the GPU backend instead of the
simulator, but those that check the simulator's own fault reports."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from test_cutile_tiled_view import *  # noqa: E402,F401,F403  (collected here, on the GPU)
import test_cutile_tiled_view as _cases  # noqa: E402

pytestmark = pytest.mark.gpu

# undefined behaviour on a GPU; the simulator reports it (tested there)
del test_check_bounds_false_crossing_the_edge_is_caught_by_the_simulator  # noqa: F821
del test_a_tile_outside_the_index_space_is_reported_as_for_partitions  # noqa: F821
assert _cases.pytestmark                 # the CPU module forces the simulator; this one does not
