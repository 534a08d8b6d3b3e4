"""Waits for the GPU that Ctrl-C and TILEJIT_SYNC_TIMEOUT can end (runtime/waiting.py), with
stand-ins for the driver's query and blocking wait (the GPU case: tests/gpu/test_waiting_gpu.py)."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tilejit.errors import DriverError
from tilejit.runtime import waiting


class Work:
    """GPU work as the driver shows it: ``query()`` until ``finish()``, ``block()`` until then."""

    def __init__(self, done=False):
        self.finished = threading.Event()
        if done:
            self.finished.set()
        self.queries = 0
        self.blocked_in = []

    def query(self):
        self.queries += 1
        return self.finished.is_set()

    def block(self):
        self.blocked_in.append(threading.current_thread().name)
        self.finished.wait()


def test_finished_work_is_never_waited_for():
    w = Work(done=True)
    waiting.wait(w.query, w.block, "x")
    assert w.queries == 1 and w.blocked_in == []


def test_work_that_ends_while_polled_needs_no_helper_thread():
    w = Work()

    def query():                        # done at the third look
        if w.queries == 2:
            w.finished.set()
        return w.query()
    waiting.wait(query, w.block, "x")
    assert w.queries == 3 and w.blocked_in == []


def _helpers():
    return len([t for t in threading.enumerate() if t.name == "tilejit-wait"])


def test_longer_work_blocks_in_a_reused_helper_thread():
    before = _helpers()
    for _ in range(2):
        w = Work()
        threading.Timer(0.3, w.finished.set).start()
        t0 = time.perf_counter()
        waiting.wait(w.query, w.block, "x")
        assert w.finished.is_set() and time.perf_counter() - t0 >= 0.29
        assert w.blocked_in == ["tilejit-wait"]
    assert _helpers() - before <= 1     # the second wait took the first one's helper


def test_a_thread_other_than_the_main_one_blocks_itself():
    w = Work()
    threading.Timer(0.05, w.finished.set).start()
    t = threading.Thread(target=waiting.wait, args=(w.query, w.block, "x"), name="mine")
    t.start()
    t.join(5)
    assert w.blocked_in == ["mine"]


def test_the_drivers_error_reaches_the_waiting_thread():
    def block():
        time.sleep(0.01)
        raise DriverError("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS")
    with pytest.raises(DriverError, match="ILLEGAL_ADDRESS"):
        waiting.wait(lambda: False, block, "x")


def test_no_query_goes_straight_to_the_helper():
    w = Work()
    threading.Timer(0.05, w.finished.set).start()
    waiting.wait(None, w.block, "x")
    assert w.blocked_in == ["tilejit-wait"]


def test_timeout_names_what_was_waited_for(monkeypatch):
    monkeypatch.setenv("TILEJIT_SYNC_TIMEOUT", "0.3")
    w = Work()
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError) as e:
        waiting.wait(w.query, w.block, "the work queued on stream 0x7 of device 0")
    assert 0.3 <= time.perf_counter() - t0 < 2
    msg = str(e.value)
    assert msg.startswith("the work queued on stream 0x7 of device 0 did not finish within "
                          "0.3 s (TILEJIT_SYNC_TIMEOUT)") and "restart the process" in msg
    w.finished.set()                    # the helper stuck on it is freed


def test_ctrl_c_interrupts_a_wait_with_what_it_was_waiting_for():
    script = textwrap.dedent("""\
        import os, signal, threading
        from tilejit.runtime import waiting
        never = threading.Event()
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            waiting.wait(lambda: False, never.wait, "the work queued on stream 0x7 of device 0")
        except KeyboardInterrupt as e:
            print("interrupted:", e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, TILEJIT_SIMULATE="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "interrupted: interrupted while waiting for the work queued on stream 0x7 of device 0; "
        "the GPU work goes on (a kernel that never finishes holds the device until the "
        "process ends)")
