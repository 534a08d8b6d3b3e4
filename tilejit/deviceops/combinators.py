"""The DeviceOp combinators: value, then, map, inspect, zip, unzip, first/last, shared, with_context."""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Optional

from ..errors import SchedulingError
from . import execution as _ex
from .deviceop import DeviceOp, account_for, execute_input, into_op

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from ..tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402


def _callable_name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


class Value(DeviceOp):
    """``tile.value(x)``: an op whose output is ``x`` (no GPU work)."""

    graph_safe = True

    def __init__(self, x):
        self.x = x
        self.arity = len(x) if isinstance(x, tuple) else None

    def describe(self, depth: int = 0) -> str:
        from .describe import value
        return f"the value {value(self.x, depth)}"

    def _execute(self, ctx):
        return self.x


def value(x) -> Value:
    """An op that produces ``x`` (no GPU work)."""
    return Value(x)


class Then(DeviceOp):
    """``op.then(fn)``: run ``op``, then the op ``fn(output)`` returns, on the same stream."""

    def __init__(self, op: DeviceOp, fn, checked: bool = True, with_context: bool = False):
        if not callable(fn):
            raise TypeError(f"then() needs a callable, got {type(fn).__name__}")
        self.op = into_op(op)
        self.fn = fn
        self.checked = checked
        self.with_context = with_context

    def describe(self, depth: int = 0) -> str:
        from .describe import op
        return f"{op(self.op, depth + 1)}, then {_callable_name(self.fn)}(output)"

    def _execute(self, ctx):
        out = execute_input(self.op, ctx)
        with contextlib.nullcontext() if self.checked else _ex.unguarded():
            nxt = self.fn(ctx, out) if self.with_context else self.fn(out)
        if not isinstance(nxt, DeviceOp):
            raise TypeError(f"then(fn): fn must return a DeviceOp, got {type(nxt).__name__}; use "
                            f".map(fn) for host-side transforms or return tile.value(x)")
        return execute_input(nxt, ctx)


class Map(DeviceOp):
    """``op.map(fn)``: ``fn(output)`` on the host."""

    _what = "map()"

    def __init__(self, op: DeviceOp, fn):
        if not callable(fn):
            raise TypeError(f"{self._what} needs a callable, got {type(fn).__name__}")
        self.op = into_op(op)
        self.fn = fn

    def describe(self, depth: int = 0) -> str:
        from .describe import op
        verb = "inspected by" if isinstance(self, Inspect) else "mapped by"
        return f"{op(self.op, depth + 1)}, {verb} {_callable_name(self.fn)}"

    @property
    def graph_safe(self):  # type: ignore[override]
        return self.op.graph_safe

    def _execute(self, ctx):
        return self.fn(execute_input(self.op, ctx))


class Inspect(Map):
    """``op.inspect(fn)``: call ``fn(output)``, pass the output through."""

    _what = "inspect()"

    def __init__(self, op: DeviceOp, fn):
        super().__init__(op, fn)
        self.arity = self.op.arity

    def _execute(self, ctx):
        out = execute_input(self.op, ctx)
        self.fn(out)
        return out


class Zip(DeviceOp):
    """``tile.zip(a, b, ...)``: run the ops one after another on one stream; output a tuple."""

    def __init__(self, *ops):
        self.ops = tuple(into_op(o) for o in ops)
        self.arity = len(self.ops)

    def describe(self, depth: int = 0) -> str:
        from .describe import op
        return "zip of " + "; ".join(op(o, depth + 1) for o in self.ops)

    @property
    def graph_safe(self):  # type: ignore[override]
        return all(o.graph_safe for o in self.ops)

    @property
    def allocates(self):  # type: ignore[override]
        return any(o.allocates for o in self.ops)

    def _execute(self, ctx):
        return tuple(execute_input(o, ctx) for o in self.ops)


def zip(*ops) -> Zip:  # noqa: A001  (public name: tile.zip)
    """Combine ops (or plain values) into one op producing the tuple of their outputs."""
    return Zip(*ops)


class Select(DeviceOp):
    """Pick one element of a tuple output (``first()``, ``last()``)."""

    def __init__(self, op: DeviceOp, index: int, what: str):
        self.op = into_op(op)
        self.index = index
        self.what = what

    @property
    def graph_safe(self):  # type: ignore[override]
        return self.op.graph_safe

    def describe(self, depth: int = 0) -> str:
        from .describe import op
        return f"{op(self.op, depth + 1)}, then its {self.what}"

    def _execute(self, ctx):
        out = execute_input(self.op, ctx)
        if not isinstance(out, tuple):
            raise SchedulingError(f"{self.what} needs an op whose output is a tuple, got "
                                  f"{type(out).__name__}")
        if not out:
            raise SchedulingError(f"{self.what} on an op whose output is an empty tuple")
        return out[self.index]


class _Once:
    """Runs an op at most once (thread-safe) and remembers where its output was produced."""

    def __init__(self, op: Optional[DeviceOp], output=None, done: bool = False):
        self.op = op
        self.output = output
        self.done = done
        self.stream = None
        self.epoch = 0
        self.event = None
        self.lock = threading.Lock()

    def get(self, ctx):
        if not self.done:
            with self.lock:
                if not self.done:
                    self.output = execute_input(self.op, ctx)
                    self.stream = ctx.stream
                    self.epoch = ctx.stream._epoch
                    if ctx.stream._ephemeral:       # a raw foreign stream may not outlive us
                        self.event = ctx.stream.record_event()
                    self.op = None
                    self.done = True
                    return self.output
        # A consumer on another stream must wait for the producing stream's work.
        s = self.stream
        if s is not None and s is not ctx.stream and s.is_pending(self.epoch):
            if self.event is not None:
                ctx.stream.wait_event(self.event)
            else:
                ctx.stream.wait_stream(s)
        return self.output


class SharedOp(DeviceOp):
    """``op.shared()`` / ``tile.shared(x)``: runs at most once; every use gets the same output.

    Tensors in the output are marked shared (read-only: ``partition`` refuses them and
    ``try_partition`` needs this to be the only shared handle) while this op is alive.
    """

    def __init__(self, op: Optional[DeviceOp] = None, *, _value=None, _done: bool = False):
        self._once = _Once(op, _value, _done)
        self.arity = op.arity if op is not None else (
            len(_value) if isinstance(_value, tuple) else None)
        self._marked = False
        if _done:
            self._ran = True        # already computed: nothing to run
            self._mark(_value)

    @property
    def graph_safe(self):  # type: ignore[override]
        return self._once.done

    def describe(self, depth: int = 0) -> str:
        from .describe import op, value
        once = self._once
        if once.done:
            return f"shared {value(once.output, depth)}"
        return f"shared, run once: {op(once.op, depth + 1)}"

    def _mark(self, out) -> None:
        from ..runtime.tensor import Tensor
        if self._marked:
            return
        self._marked = True
        items = out if isinstance(out, tuple) else (out,)
        tensors = [t for t in items if isinstance(t, Tensor)]
        for t in tensors:
            t._share_count += 1
        if tensors:
            weakref.finalize(self, _unmark, tensors)

    def _execute(self, ctx):
        out = self._once.get(ctx)
        self._mark(out)
        return out

    @property
    def is_done(self) -> bool:
        return self._once.done


def _unmark(tensors) -> None:
    for t in tensors:
        t._share_count = max(0, t._share_count - 1)


def shared(x) -> SharedOp:
    """Wrap an existing value (e.g. a weight tensor) as an already-computed shared op."""
    if isinstance(x, DeviceOp):
        return x.shared()
    return SharedOp(_value=x, _done=True)


class _UnzipBranch(DeviceOp):
    display_name = "unzip"

    def __init__(self, once: _Once, index: int, n: int):
        self._once = once
        self.index = index
        self.n = n

    def describe(self, depth: int = 0) -> str:
        from .describe import op
        src = "an op that already ran" if self._once.op is None else op(self._once.op, depth + 1)
        return f"output {self.index} of {self.n} of {src}"

    def _execute(self, ctx):
        out = self._once.get(ctx)
        if not isinstance(out, tuple) or len(out) != self.n:
            got = f"a tuple of {len(out)}" if isinstance(out, tuple) else type(out).__name__
            raise SchedulingError(f"unzip({self.n}): the op produced {got}, not a tuple of "
                                  f"{self.n}")
        return out[self.index]


def unzip(op: DeviceOp, n: Optional[int] = None) -> tuple:
    account_for(op)         # the branches run it (each warns if never run)
    n = n if n is not None else op.arity
    if n is None:
        raise SchedulingError("unzip(): the number of outputs of this op is not known before it "
                              "runs; pass it: op.unzip(n)")
    once = _Once(op)
    return tuple(_UnzipBranch(once, i, int(n)) for i in range(int(n)))


class WithContext(DeviceOp):
    """``tile.with_context(fn)``: ``fn(ctx)`` runs at execution time with the stream in ``ctx``.

    If ``fn`` returns a DeviceOp it is executed in the same context; otherwise its return value is
    the output.
    """

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"with_context() needs a callable, got {type(fn).__name__}")
        self.fn = fn

    def describe(self, depth: int = 0) -> str:
        return f"{_callable_name(self.fn)}(ctx) on the executing stream"

    def _execute(self, ctx):
        r = self.fn(ctx)
        if isinstance(r, DeviceOp):
            return execute_input(r, ctx)
        return r


def with_context(fn) -> WithContext:
    """An op running ``fn(ctx)`` on the executing stream (``ctx.stream``, ``ctx.cuda_stream``)."""
    return WithContext(fn)


__all__ = ["Value", "value", "Then", "Map", "Inspect", "Zip", "zip", "Select", "SharedOp", "shared",
           "unzip", "WithContext", "with_context"]
