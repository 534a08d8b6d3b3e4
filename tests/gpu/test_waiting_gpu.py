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


def _run(tail: str, **env):
    r = subprocess.run([sys.executable, "-c", KERNEL + textwrap.dedent(tail)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT, **env))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_sync_that_never_ends_times_out():
    out = _run("""\
        t0 = time.perf_counter()
        try:
            op.sync()
        except TimeoutError as e:
            print(f"{time.perf_counter() - t0:.1f}", e)
        sys.stdout.flush()
        os._exit(0)
    """, TILEJIT_SYNC_TIMEOUT="3")
    took, msg = out.split(" ", 1)
    assert 3.0 <= float(took) < 30, out
    assert "did not finish within 3 s (TILEJIT_SYNC_TIMEOUT)" in msg and "stream" in msg, msg


def test_ctrl_c_interrupts_a_sync_that_never_ends():
    out = _run("""\
        threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.perf_counter()
        try:
            op.sync()
        except KeyboardInterrupt as e:
            print(f"{time.perf_counter() - t0:.1f}", e)
        sys.stdout.flush()
        os._exit(0)
    """)
    took, msg = out.split(" ", 1)
    assert float(took) < 30, out
    assert msg.startswith("interrupted while waiting for the work queued on stream"), msg
