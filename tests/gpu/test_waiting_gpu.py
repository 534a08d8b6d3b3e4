"""A kernel that never finishes (it waits for a flag nobody sets): ``.sync()`` gives up after
TILEJIT_SYNC_TIMEOUT, and Ctrl-C interrupts it, each with a message naming the wait. Each runs in
a process of its own, which ends with the kernel still running (the driver then frees the GPU)."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = textwrap.dedent("""\
    import os, signal, sys, threading, time
    import tilejit as tile
    from tilejit import api

    @tile.entry
    def wait_for_flag(flag):
        while tile.load(flag, (0,), (), memory_order=tile.MemoryOrder.ACQUIRE) == 0:
            pass

    flag = api.zeros((1,), tile.int32).sync()
    op = wait_for_flag(tile.atomic(flag)).grid((1, 1, 1))
""")


def _never_ending_sync(error: str, before: str = "", **env):
    """(seconds, message) of the ``error`` that ends ``op.sync()`` in a process of its own,
    which then exits with the kernel still running."""
    tail = textwrap.dedent(f"""\
        {before}
        t0 = time.perf_counter()
        try:
            op.sync()
        except {error} as e:
            print(f"{{time.perf_counter() - t0:.1f}}", e)
        sys.stdout.flush()
        os._exit(0)
    """)
    r = subprocess.run([sys.executable, "-c", KERNEL + tail], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT, **env))
    assert r.returncode == 0, r.stdout + r.stderr
    took, msg = r.stdout.split(" ", 1)
    return float(took), msg


def test_a_sync_that_never_ends_times_out():
    took, msg = _never_ending_sync("TimeoutError", TILEJIT_SYNC_TIMEOUT="3")
    assert 3.0 <= took < 30, (took, msg)
    assert "did not finish within 3 s (TILEJIT_SYNC_TIMEOUT)" in msg and "stream" in msg, msg


def test_ctrl_c_interrupts_a_sync_that_never_ends():
    took, msg = _never_ending_sync(
        "KeyboardInterrupt", "threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()")
    assert took < 30, (took, msg)
    assert msg.startswith("interrupted while waiting for the work queued on stream"), msg
