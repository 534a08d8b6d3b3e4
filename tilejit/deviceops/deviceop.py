"""``DeviceOp``: a lazy description of GPU work (API.md §4).

Nothing runs until an execution method is called:

* ``op.sync()`` -- on a stream from the default policy, then wait; returns the output.
* ``op.sync_on(stream)`` -- on ``stream``, then wait.
* ``await op`` -- submit on the default policy, then wait without blocking the event loop.
* ``op.schedule(policy=None)`` -- submit now, return a :class:`DeviceFuture`.

Writing an op: subclass :class:`DeviceOp` and implement ``_execute(self, ctx)``, which queues work on
``ctx.stream`` (never synchronizes) and returns the output. Ops it runs (inputs that are
themselves DeviceOps, ops it makes) are executed in the same context with :func:`execute_input`
so that everything is ordered on one stream and they count as run. Set the class attributes ``graph_safe`` (no allocation or free: may be recorded into a CUDA
graph) and ``allocates`` truthfully; graph capture will rely on them (and on the allocation guard
in ``runtime.memory`` for ops such as ``then`` whose behaviour is only known at run time).

An op that is dropped without ever running warns (``RuntimeWarning: DeviceOp ... was never run``),
as an un-awaited coroutine does: a forgotten ``.sync()`` would otherwise leave its outputs silently
unchanged. Running sets the op's ``_ran`` slot (:data:`RAN_SLOT`; the C launcher sets the same slot
on the launches it runs), so the check costs one slot read when the op is freed. An op consumed by
another (``then``, ``zip``, a launch argument, a graph) runs with its consumer; when the consumer
itself is dropped unrun, only the outermost op warns.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Optional

from ..errors import SchedulingError
from . import execution as _ex
from .execution import ExecutionContext

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from ..tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402


#: The slot of every DeviceOp that records whether it ran: unset (never run), True (ran, or its
#: consumer ran it), False (accounted for without running: part of a composed op that was
#: dropped, or an op whose construction failed). _native.c sets it by this name (set_layout).
RAN_SLOT = "_ran"


_TENSOR_ATTRIBUTES = frozenset({"to_numpy", "numpy", "shape", "dtype", "partition", "ndim",
                                "strides", "nbytes", "device", "to", "copy_to_host", "item"})


class DeviceOp:
    """Base class of lazy GPU work. Subclasses implement ``_execute(ctx)``."""

    def __getattr__(self, name):
        # only reached for attributes the op does not have: a tensor's, asked of the lazy op
        # that would make it (api.zeros(n).to_numpy() without .sync())
        if name in _TENSOR_ATTRIBUTES:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '{name}': it is a lazy "
                f"DeviceOp, not a tensor yet; run it first: op.sync().{name}")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    # one slot and no per-instance dict here, so a subclass may keep its hot state in __slots__
    # (KernelLaunch, which the C launcher fills and reads by offset); subclasses without
    # __slots__ get a dict
    __slots__ = (RAN_SLOT,)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_tracks_failure", False):
            cls.__init__ = _failed_init_never_warns(init)

    def __del__(self):
        try:
            if self._ran is True:       # the common case: one slot read
                return
            unrun = False
        except AttributeError:
            unrun = True
        except Exception:               # interpreter shutdown
            return
        try:
            _dropped_unrun(self, unrun)
        except Exception:               # a finalizer must never raise
            pass

    #: may be recorded into a CUDA graph (launches, memcpy into existing buffers, values)
    graph_safe: bool = False
    #: allocates or frees device memory when executed
    allocates: bool = False
    #: number of outputs when the output is a tuple of known length (for ``unzip()``), else None
    arity: Optional[int] = None

    def _execute(self, ctx: ExecutionContext):
        # abstract: every concrete op defines how it queues its work
        raise TypeError(f"{type(self).__name__} is not a complete DeviceOp: subclasses must define "
                        f"_execute(ctx)")

    # --- execution ---------------------------------------------------------------------------------
    def sync(self):
        """Run on a stream of the default policy and wait for completion; return the output."""
        self._ran = True
        return self.sync_on(self._default_stream())

    def _default_stream(self):
        """Where ``sync()``/``schedule()``/``await`` run this op: the default policy's next
        stream (kernel launches with torch tensors prefer torch's current stream)."""
        from .scheduling import default_stream
        return default_stream()

    def sync_on(self, stream):
        """Run on ``stream`` and wait for completion; return the output.

        Args:
            stream: A ``tile.Stream``, or a foreign stream ``Stream.borrow_raw`` accepts (an
                int ``CUstream``, a ``torch.cuda.Stream``, a CuPy stream...).
        """
        self._ran = True
        stream = _as_stream(stream)
        _ex.enter("sync()/sync_on()")
        try:
            out = self._submit(stream)
        except BaseException:
            _ex.leave()
            _sync_quietly(stream)
            raise
        _ex.leave()
        stream.synchronize()
        return out

    def submit_on(self, stream) -> "DeviceFuture":
        """Queue the work on ``stream`` without waiting; the future's ``result()`` waits.

        Args:
            stream: A ``tile.Stream`` or a foreign stream, as for :meth:`sync_on`.
        """
        self._ran = True
        stream = _as_stream(stream)
        _ex.enter("submit_on()/schedule()/await")
        try:
            out = self._submit(stream)
        finally:
            _ex.leave()
        return DeviceFuture(out, stream)

    def schedule(self, policy=None) -> "DeviceFuture":
        """Submit now on ``policy.next_stream()``; return a future.

        Args:
            policy: A scheduling policy (``tile.StreamPoolRoundRobin``, ``tile.SingleStream`` or
                any object with ``next_stream()``); None uses the default policy.
        """
        from .scheduling import stream_from_policy
        self._ran = True
        return self.submit_on(stream_from_policy(policy) if policy is not None
                              else self._default_stream())

    def __await__(self):
        return self.schedule().__await__()

    def _submit(self, stream):
        self._ran = True
        with stream.device.current():
            return self._execute(ExecutionContext(stream))

    # --- composition -------------------------------------------------------------------------------
    def then(self, fn) -> "DeviceOp":
        """Run ``fn(output)``, which must return a DeviceOp, on the same stream after this op.

        Args:
            fn: Called with this op's output when the composed op runs; returns the next op.
        """
        from .combinators import Then
        return Then(self, fn)

    def then_unchecked(self, fn) -> "DeviceOp":
        """Like ``then``, but ``fn`` may itself call ``sync``/``sync_on`` (you vouch for ordering)."""
        from .combinators import Then
        return Then(self, fn, checked=False)

    def then_with_context(self, fn) -> "DeviceOp":
        """Like ``then``, with ``fn(ctx, output)`` (``ctx.stream`` for raw driver calls)."""
        from .combinators import Then
        return Then(self, fn, with_context=True)

    def map(self, fn) -> "DeviceOp":
        """Transform the output on the host: ``fn(output)`` (no GPU work; must not sync).

        Args:
            fn: Called with this op's output; its result is the new op's output.
        """
        from .combinators import Map
        return Map(self, fn)

    def inspect(self, fn) -> "DeviceOp":
        """Call ``fn(output)`` for its side effect and pass the output through unchanged."""
        from .combinators import Inspect
        return Inspect(self, fn)

    def first(self) -> "DeviceOp":
        """The first element of a tuple output (e.g. the partition of a kernel launch)."""
        from .combinators import Select
        return Select(self, 0, "first()")

    def last(self) -> "DeviceOp":
        """The last element of a tuple output."""
        from .combinators import Select
        return Select(self, -1, "last()")

    def unzip(self, n: Optional[int] = None) -> tuple:
        """Split a tuple-producing op into ``n`` ops; the upstream runs at most once."""
        from .combinators import unzip
        return unzip(self, n)

    def shared(self) -> "DeviceOp":
        """An op that runs this one at most once and gives every consumer the same output."""
        from .combinators import SharedOp
        return SharedOp(self)

    def boxed(self) -> "DeviceOp":
        """Type erasure is free in Python: returns the op itself."""
        return self

    # --- tensor conveniences -----------------------------------------------------------------------
    def reshape(self, *shape) -> "DeviceOp":
        """Reshape the output tensor (zero-copy)."""
        shp = shape[0] if len(shape) == 1 else shape
        return self.map(lambda t: t.reshape(shp))

    def partition(self, shape) -> "DeviceOp":
        """Turn the output tensor into an owned partition (``t.into_partition(shape)``)."""
        return self.map(lambda t: t.into_partition(shape))

    def unpartition(self) -> "DeviceOp":
        """Turn an output partition back into its tensor."""
        def _unpartition(p):
            if not hasattr(p, "unpartition"):
                raise SchedulingError(f"unpartition() needs an op whose output is a Partition, got "
                                      f"{type(p).__name__}; use .first() to pick it from a tuple")
            return p.unpartition()
        return self.map(_unpartition)

    def to_host(self) -> "DeviceOp":
        """Copy the output tensor to a NumPy array (on the same stream)."""
        from .transfer import to_host
        return self.then(to_host)

    # --- CUDA graphs (API.md §5) -----------------------------------------------------------------
    def graph(self):
        """Capture this op into a CUDA graph on a stream of the default policy, on the device
        ``sync()`` would pick (its arguments', else the current device)."""
        from .scheduling import default_stream
        stream = self._default_stream()
        if stream.is_borrowed:          # torch's current stream: capture on a policy stream
            stream = default_stream(stream.device)
        return self.graph_on(stream)

    def graph_on(self, stream):
        """Capture this op into a :class:`~tilejit.deviceops.graph.CudaGraph` by executing it once on
        ``stream``; ``graph.take_output()`` gives its output, ``graph.launch()`` replays it.

        Args:
            stream: The stream to capture on and replay on (as for :meth:`sync_on`).
        """
        from .graph import CudaGraph
        return CudaGraph.capture(self, stream)

    def describe(self, depth: int = 0) -> str:
        """What this op will do, in words (``repr`` and notebooks show it; nothing runs)."""
        return getattr(self, "display_name", None) or type(self).__name__

    def __repr__(self) -> str:
        from . import describe
        return describe.op_repr(self)

    def _repr_html_(self) -> str:
        from . import describe
        return describe.op_html(self)


def execute_input(value, ctx: ExecutionContext):
    """The value of an op input: DeviceOps are executed in ``ctx`` (same stream), others as is.
    Ops run inside another op's ``_execute`` go through here (it marks them as run)."""
    if isinstance(value, DeviceOp):
        value._ran = True
        return value._execute(ctx)
    return value


def account_for(op) -> None:
    """Mark ``op`` as accounted for without running (replaced by a copy, consumed by something
    that is not an op): it will not warn when dropped, and neither will its inputs."""
    if isinstance(op, DeviceOp):
        try:
            op._ran
        except AttributeError:
            op._ran = False


def has_run(op) -> bool:
    """True once ``op`` has run (submitted, synced, or executed by an op that ran)."""
    return getattr(op, RAN_SLOT, None) is True


def _failed_init_never_warns(init):
    # an op whose __init__ raised was never handed to anyone, and the error is about the ops it
    # was given: none of them warns when freed
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except BaseException:
            self._ran = False
            for a in (*args, *kwargs.values()):
                account_for(a)
            raise
    __init__._tracks_failure = True
    return __init__


def _inputs(op):
    """The DeviceOps ``op`` holds as inputs (attributes, tuples of them, its ``args``)."""
    values = list(getattr(op, "__dict__", {}).values())
    args = getattr(op, "args", None)        # KernelLaunch keeps its arguments in a slot
    if isinstance(args, tuple):
        values.append(args)
    once = getattr(op, "_once", None)       # shared()/unzip(): the op run once
    if once is not None:
        values.append(getattr(once, "op", None))
    for v in values:
        if isinstance(v, DeviceOp):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from (x for x in v if isinstance(x, DeviceOp))


def _dropped_unrun(op, warn: bool) -> None:
    """``op`` is being freed without having run: warn if nobody else accounts for it (``warn``),
    and let its inputs go quietly (the warning is about the outermost op only)."""
    for inner in _inputs(op):
        account_for(inner)
    if warn:
        from .describe import name, op as describe
        # stacklevel 3: the user's line that let go of the op (this runs inside __del__)
        warnings.warn(f"DeviceOp {name(op)} ({describe(op)}) was never run; call .sync() (or .sync_on(stream), "
                      f"await it, .schedule()) to run it", RuntimeWarning, stacklevel=3)


def into_op(value) -> DeviceOp:
    """A DeviceOp as is; anything else wrapped in ``tile.value``."""
    if isinstance(value, DeviceOp):
        return value
    from .combinators import Value
    return Value(value)


_Stream = None      # runtime.stream.Stream, imported on first use (runtime imports this module)


def _as_stream(stream):
    global _Stream
    if _Stream is None:
        from ..runtime.stream import Stream as _Stream
    if isinstance(stream, _Stream):
        return stream
    if stream is None:
        raise SchedulingError("sync_on(None): pass a tile.Stream (device.new_stream()), or use "
                              "sync() for the default policy")
    return _Stream.borrow_raw(stream)


def _sync_quietly(stream) -> None:
    try:
        stream.synchronize()
    except Exception:
        pass


# --- futures ----------------------------------------------------------------------------------------
_waiters = None     # a concurrent.futures.ThreadPoolExecutor, made (and imported) on first use

_SPIN_QUERIES = 8          # cheap event queries before handing the wait to a worker thread


def _waiter_pool():
    global _waiters
    if _waiters is None:
        import concurrent.futures
        _waiters = concurrent.futures.ThreadPoolExecutor(max_workers=4,
                                                         thread_name_prefix="tilejit-wait")
    return _waiters


class DeviceFuture:
    """Work already queued on a stream. ``result()`` waits (blocking), ``done()`` polls,
    ``await fut`` waits without blocking the event loop.

    A future waits for its stream as a whole (everything queued on it up to the wait), which is
    what its own work needs; recording a CUDA event per submission would cost more host time than
    the launch itself.
    """

    __slots__ = ("_out", "stream", "_done")

    def __init__(self, output: Any, stream):
        self._out = output
        self.stream = stream
        self._done = stream.is_simulated

    def done(self) -> bool:
        if not self._done and self.stream.query():
            self._done = True
        return self._done

    def result(self, timeout: Optional[float] = None):
        """Wait for the work and return the output (``timeout`` is not supported by the driver's
        blocking wait; it is accepted for concurrent.futures compatibility and polls instead)."""
        if _ex.is_executing():
            raise SchedulingError(_ex.REENTRANT_MSG.format(what="DeviceFuture.result()"))
        if not self._done:
            if timeout is None:
                self.stream.synchronize()
            else:
                import time
                deadline = time.monotonic() + timeout
                while not self.stream.query():
                    if time.monotonic() > deadline:
                        import concurrent.futures
                        raise concurrent.futures.TimeoutError(
                            f"GPU work did not finish within {timeout} s")
                    time.sleep(50e-6)
            self._done = True
        return self._out

    async def _wait(self):
        if not self._done:
            for _ in range(_SPIN_QUERIES):
                if self.stream.query():
                    break
            else:
                import asyncio          # not at import time: asyncio costs ~30 ms to import
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(_waiter_pool(), self.stream.synchronize)
            self._done = True
        return self._out

    def __await__(self):
        return self._wait().__await__()

    def __repr__(self) -> str:
        return f"<DeviceFuture {'done' if self.done() else 'pending'} on {self.stream!r}>"


__all__ = ["DeviceOp", "DeviceFuture", "execute_input", "into_op", "account_for", "has_run",
           "RAN_SLOT"]
