"""The per-thread submission guard: only one DeviceOp may be submitting work on a thread at a time.

``sync``/``sync_on``/``await``/``schedule`` called from inside a running op (a ``then``/``map``/
``inspect`` callback) raise :class:`tilejit.SchedulingError`, because the nested op would run on
another stream without being ordered after the outer one. ``then_unchecked`` lifts the guard for
its callback. It lives in runtime because runtime code (``Tensor.__repr__`` reading values) must
know when it runs inside an op.
"""
from __future__ import annotations

import threading

from .. import native
from ..errors import SchedulingError

REENTRANT_MSG = (
    "DeviceOp execution is non-reentrant: {what} was called while another DeviceOp is executing on "
    "this thread (inside a then/map/inspect callback?). Chain the work with .then(...) so it runs "
    "on the same stream, or use .then_unchecked(...) if you have checked there is no race")

_ext = native.ext()
if _ext is not None:
    # one flag per thread, kept by the C extension: its launch path (dispatcher._install_native)
    # takes the guard without calling back into Python
    _get, _swap = _ext.executing, _ext.swap_executing
else:
    _tls = threading.local()

    def _get() -> bool:
        return getattr(_tls, "executing", False)

    def _swap(flag: bool) -> bool:
        prev = getattr(_tls, "executing", False)
        _tls.executing = flag
        return prev


def is_executing() -> bool:
    """True while a DeviceOp is submitting work on the calling thread."""
    return _get()


def enter(what: str = "sync()") -> None:
    """Take the calling thread's execution guard; SchedulingError if it is already held."""
    if _swap(True):
        raise SchedulingError(REENTRANT_MSG.format(what=what))


def leave() -> None:
    _swap(False)


class unguarded:
    """Context manager lifting the guard for a callback (``then_unchecked``)."""

    def __enter__(self):
        self._prev = _swap(False)
        return self

    def __exit__(self, *exc):
        _swap(self._prev)
        return False


__all__ = ["is_executing", "enter", "leave", "unguarded", "REENTRANT_MSG"]
