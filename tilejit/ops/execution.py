"""Execution state shared by every DeviceOp: the context handed to ``_execute`` and the
per-thread non-reentrancy guard.

Only one DeviceOp may be *submitting* work on a thread at a time: ``sync``/``sync_on``/``await``/
``schedule`` called from inside a running op (a ``then``/``map``/``inspect`` callback) raise
:class:`tilejit.SchedulingError`, because the nested op would run on another stream without being
ordered after the outer one. ``then_unchecked`` lifts the guard for its callback.
"""
from __future__ import annotations

import threading

from ..errors import SchedulingError

_tls = threading.local()

_REENTRANT_MSG = (
    "DeviceOp execution is non-reentrant: {what} was called while another DeviceOp is executing on "
    "this thread (inside a then/map/inspect callback?). Chain the work with .then(...) so it runs "
    "on the same stream, or use .then_unchecked(...) if you have checked there is no race")


def is_executing() -> bool:
    """True while a DeviceOp is submitting work on the calling thread."""
    return getattr(_tls, "executing", False)


def enter(what: str = "sync()") -> None:
    """Take the calling thread's execution guard; SchedulingError if it is already held."""
    if getattr(_tls, "executing", False):
        raise SchedulingError(_REENTRANT_MSG.format(what=what))
    _tls.executing = True


def leave() -> None:
    _tls.executing = False


class unguarded:
    """Context manager lifting the guard for a callback (``then_unchecked``)."""

    def __enter__(self):
        self._prev = getattr(_tls, "executing", False)
        _tls.executing = False
        return self

    def __exit__(self, *exc):
        _tls.executing = self._prev
        return False


class ExecutionContext:
    """What an op's ``_execute(ctx)`` gets: the stream to queue work on (``ctx.stream``), its device,
    and the capture state.

    ``ctx.cuda_stream`` is the raw ``CUstream`` handle (int) for raw driver calls; ``ctx.alloc(n)``
    allocates stream-ordered device memory (and refuses during a graph capture).
    """

    __slots__ = ("stream", "device")

    def __init__(self, stream):
        self.stream = stream
        self.device = stream.device

    @property
    def capturing(self) -> bool:
        """True while the stream is recording a CUDA graph."""
        return self.stream._capture is not None

    @property
    def cuda_stream(self) -> int:
        return self.stream.handle

    def get_cuda_stream(self) -> int:
        """Same as ``cuda_stream`` (the cuTile Rust spelling)."""
        return self.stream.handle

    @property
    def is_simulated(self) -> bool:
        return self.device.is_simulated

    def alloc(self, nbytes: int):
        """A new :class:`~tilejit.runtime.memory.Storage` of ``nbytes``, ordered on this stream."""
        from ..runtime.memory import allocate
        return allocate(nbytes, self.stream)

    def __repr__(self) -> str:
        return f"<ExecutionContext stream={self.stream!r}>"


__all__ = ["ExecutionContext", "is_executing", "enter", "leave", "unguarded"]
