"""The codegen tests on the GPU: split loops, folded block indices, dropped padding, transposed
loads and folded constants give the same results there."""
import pytest

from test_codegen import *  # noqa: F401,F403

pytestmark = pytest.mark.gpu   # replaces the imported pytestmark (it forces the simulator)
