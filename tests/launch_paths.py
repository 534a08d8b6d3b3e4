"""One lazy launch by either launch path, for tests parametrized over both."""
import pytest

from tilejit import native
from tilejit.deviceops.deviceop import account_for


def run(op, path: str, s):
    """Run ``op`` on stream ``s`` by the C launcher (``"c"``) or KernelLaunch's pure-Python
    path (``"python"``); ``"c"`` without the extension skips, the launch accounted for (not run
    on purpose: no "never run" warning in a later test)."""
    if path == "c":
        if not native.enabled():
            account_for(op)
            pytest.skip("the C extension is not built or TILEJIT_NATIVE=0")
        return op.sync_on(s)
    return op._sync_plain(s)
