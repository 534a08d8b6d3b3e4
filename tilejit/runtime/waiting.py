"""Waiting for the GPU without freezing Python.

``cuStreamSynchronize`` and its kin block inside the driver, where Ctrl-C cannot reach: a kernel
that never finishes (a block waiting on a lock or flag no block gives back) would freeze the
interpreter, and a notebook could only be restarted. :func:`wait` first polls for a moment (short
work ends as fast as with a blocking wait), then leaves the blocking call to a helper thread and
waits for it in slices, so Ctrl-C raises ``KeyboardInterrupt`` and ``TILEJIT_SYNC_TIMEOUT`` (unset:
no limit) raises a ``TimeoutError`` that says what was being waited for.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, List, Optional

from .. import envvars

#: seconds of polling before the wait moves to a helper thread (a handoff costs ~20-50 us)
POLL_S = 2e-4
#: how often the waiting thread wakes to let Ctrl-C in
SLICE_S = 0.1


class _Outcome:
    __slots__ = ("done", "error")

    def __init__(self):
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class _Waiter(threading.Thread):
    """A daemon thread that runs blocking waits; one stuck forever on a hung kernel is left to
    it (and new waiters serve the rest), and being a daemon it never holds up the exit."""

    def __init__(self):
        super().__init__(name="tilejit-wait", daemon=True)
        self.jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self.start()

    def run(self) -> None:
        while True:
            block, out = self.jobs.get()
            try:
                block()
            except BaseException as e:  # noqa: BLE001  (handed to the waiting thread)
                out.error = e
            _idle.append(self)          # before done: the caller's next wait finds it idle
            out.done.set()


_idle: List[_Waiter] = []


def _hand_off(block: Callable[[], None]) -> _Outcome:
    try:
        w = _idle.pop()
    except IndexError:
        w = _Waiter()
    out = _Outcome()
    w.jobs.put((block, out))
    return out


def wait(query: Optional[Callable[[], bool]], block: Callable[[], None], what: str) -> None:
    """Return once the GPU work ``what`` names (``"the work queued on stream 0x..."``) has
    finished.

    ``query()`` says whether it has (raising the driver's error, if any; None: no way to ask);
    ``block()`` waits for it in the driver. A thread other than the main one, without a time
    limit, simply blocks: only the main thread receives Ctrl-C."""
    t0 = time.perf_counter()
    if query is not None:
        while True:             # the clock read every 8 polls: a poll is a driver call
            for _ in range(8):
                if query():
                    return
            if time.perf_counter() - t0 >= POLL_S:
                break
    limit = envvars.get("TILEJIT_SYNC_TIMEOUT")
    if limit is None and threading.current_thread() is not threading.main_thread():
        block()
        return
    out = _hand_off(block)
    try:
        while not out.done.wait(SLICE_S):
            if limit is not None and time.perf_counter() - t0 > limit:
                raise TimeoutError(
                    f"{what} did not finish within {limit:g} s (TILEJIT_SYNC_TIMEOUT). A kernel "
                    f"that waits for a lock or flag no block gives back never finishes; the GPU "
                    f"may still be running it, so restart the process to free the device (or "
                    f"raise TILEJIT_SYNC_TIMEOUT for work that is just long).") from None
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            f"interrupted while waiting for {what}; the GPU work goes on (a kernel that never "
            f"finishes holds the device until the process ends)") from None
    if out.error is not None:
        raise out.error
