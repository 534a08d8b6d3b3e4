"""Scheduling policies: which stream an op runs on when it is not given one.

A policy is any object with ``next_stream()`` returning a ``tile.Stream``. The default policy of a
device is ``StreamPoolRoundRobin(device, n=4)``: consecutive independent ops land on different
streams and may overlap. Ops chained with ``.then`` always share one stream.

``device=None`` (the default of every function here) is the calling thread's current device
(``runtime.device.current_ordinal``: the current CUDA context's, or the simulator's per-thread
one); an ordinal or a ``tile.Device`` names one.
"""
from __future__ import annotations

import itertools
import threading
from typing import Dict, List, Optional

from ..errors import SchedulingError
from ..runtime.device import Device


class SchedulingPolicy:
    """Base class (optional: anything with ``next_stream()`` works)."""

    def next_stream(self):
        raise TypeError(f"{type(self).__name__} must define next_stream() to be a scheduling "
                        f"policy")


class StreamPoolRoundRobin(SchedulingPolicy):
    """Rotate through ``n`` streams of ``device`` (created on first use; None: the current
    device when the policy is made)."""

    def __init__(self, device=None, n: int = 4):
        if int(n) < 1:
            raise ValueError(f"StreamPoolRoundRobin needs at least one stream, got n={n}")
        self.device = Device(device)
        self.n = int(n)
        self._streams: Optional[List] = None
        self._counter = itertools.count()
        self._lock = threading.Lock()

    @property
    def streams(self) -> List:
        if self._streams is None:
            with self._lock:
                if self._streams is None:
                    self._streams = [self.device.new_stream() for _ in range(self.n)]
        return self._streams

    def next_stream(self):
        streams = self.streams
        return streams[next(self._counter) % self.n]

    def __repr__(self) -> str:
        return f"StreamPoolRoundRobin({self.device!r}, n={self.n})"


class SingleStream(SchedulingPolicy):
    """Everything on one stream (``stream`` if given, else a new one of ``device``, the current
    device when None): strict order."""

    def __init__(self, device=None, stream=None):
        self.device = Device(device) if stream is None else stream.device
        self._stream = stream
        self._lock = threading.Lock()

    @property
    def stream(self):
        if self._stream is None:
            with self._lock:
                if self._stream is None:
                    self._stream = self.device.new_stream()
        return self._stream

    def next_stream(self):
        return self.stream

    def __repr__(self) -> str:
        return f"SingleStream({self.device!r})"


_defaults: Dict[Device, object] = {}
_defaults_lock = threading.Lock()


_policy_epoch = 0      # set_default_policy calls so far (what caches of has_user_policy check)


def set_default_policy(policy, device=None) -> None:
    """Use ``policy`` for ``op.sync()`` / ``await op`` / ``op.schedule()`` on ``device`` (None:
    the calling thread's current device)."""
    global _policy_epoch
    if not callable(getattr(policy, "next_stream", None)):
        raise TypeError(f"a scheduling policy needs a next_stream() method; got "
                        f"{type(policy).__name__}")
    with _defaults_lock:
        _defaults[Device(device)] = policy
        _policy_epoch += 1


def policy_epoch() -> int:
    """Changes whenever a default policy is set: a cached ``has_user_policy`` answer is valid
    while it stays the same."""
    return _policy_epoch


def default_policy(device=None):
    """The default policy of ``device`` (None: the current device; a 4-stream round robin unless
    set)."""
    dev = Device(device)
    pol = _defaults.get(dev)
    if pol is None:
        with _defaults_lock:
            pol = _defaults.get(dev)
            if pol is None:
                pol = _defaults[dev] = StreamPoolRoundRobin(dev)
                pol._builtin = True
    return pol


def has_user_policy(device=None) -> bool:
    """Whether ``set_default_policy`` chose the default policy of ``device`` (None: the current
    device)."""
    pol = _defaults.get(Device(device))
    return pol is not None and not getattr(pol, "_builtin", False)


def default_stream(device=None):
    """The next stream of ``device``'s default policy (where ``sync()`` and friends run; None:
    the calling thread's current device)."""
    return stream_from_policy(default_policy(device))


def stream_from_policy(policy):
    """``policy.next_stream()`` as a tile.Stream, with a SchedulingError naming bad policies."""
    from ..runtime.stream import Stream
    try:
        s = policy.next_stream()
    except SchedulingError:
        raise
    except Exception as e:
        raise SchedulingError(f"scheduling policy {policy!r} failed to provide a stream: "
                              f"{type(e).__name__}: {e}") from e
    if not isinstance(s, Stream):
        try:
            s = Stream.borrow_raw(s)
        except Exception:
            raise SchedulingError(f"scheduling policy {policy!r} returned {type(s).__name__}, "
                                  f"not a tile.Stream") from None
    return s


__all__ = ["SchedulingPolicy", "StreamPoolRoundRobin", "SingleStream", "set_default_policy",
           "default_policy", "default_stream", "stream_from_policy"]
