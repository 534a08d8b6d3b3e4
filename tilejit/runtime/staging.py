"""Reusable device buffers for NumPy kernel arguments, which are copied in on every launch.

Allocating and freeing a buffer per argument per call costs two driver calls, as much as the
copy itself for small arrays. Instead each stream tilejit owns keeps a few buffers of the sizes
it has seen. Reuse needs no wait: every use of a buffer from a stream's pool (the copy in, the
kernel, the copy back) is queued on that stream, so stream order puts the next copy after the
last kernel that read it. Borrowed foreign streams, graph captures and large arrays (where the
allocation is small next to the copy) allocate as before.
"""
from __future__ import annotations

from .memory import Storage, allocate, check_allocation_allowed

MAX_BYTES = 1 << 20        # larger arrays allocate per call
PER_SIZE = 4               # buffers kept per size and stream
SIZES = 16                 # sizes kept per stream


def _pool(stream, nbytes: int):
    """``stream``'s free list for ``nbytes``, or None when this stream does not pool it."""
    if nbytes > MAX_BYTES or stream._ephemeral or stream._capture is not None:
        return None
    pools = stream._staging
    if pools is None:
        pools = stream._staging = {}
    free = pools.get(nbytes)
    if free is None and len(pools) < SIZES:
        free = pools[nbytes] = []
    return free


def take(nbytes: int, stream) -> Storage:
    """A device buffer of ``nbytes`` for work queued on ``stream`` (from its pool when it has one;
    give it back with :func:`give_back` once the work using it is queued)."""
    check_allocation_allowed()
    free = _pool(stream, nbytes)
    if free:
        try:
            return free.pop()
        except IndexError:          # another thread took the last one
            pass
    return allocate(nbytes, stream)


def give_back(storage: Storage, stream) -> None:
    """Return a buffer from :func:`take` to ``stream``'s pool (dropped when the pool is full or
    the buffer was last used on another stream)."""
    if storage._h.stream is not stream:
        return
    free = _pool(stream, storage.nbytes)
    if free is not None and len(free) < PER_SIZE:
        free.append(storage)


__all__ = ["take", "give_back", "MAX_BYTES"]
