"""Execution state shared by every DeviceOp: the context handed to ``_execute``, and the
per-thread non-reentrancy guard (defined in :mod:`tilejit.runtime.submission`)."""
from __future__ import annotations

from ..runtime.memory import allocate
from ..runtime.submission import (REENTRANT_MSG, enter, is_executing, leave,  # noqa: F401
                                  unguarded)


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

    @property
    def is_simulated(self) -> bool:
        return self.device.is_simulated

    def alloc(self, nbytes: int):
        """A new :class:`~tilejit.runtime.memory.Storage` of ``nbytes``, ordered on this stream."""
        return allocate(nbytes, self.stream)

    def __repr__(self) -> str:
        return f"<ExecutionContext stream={self.stream!r}>"


__all__ = ["ExecutionContext", "is_executing", "enter", "leave", "unguarded"]
