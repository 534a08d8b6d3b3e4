"""CUDA graphs (API.md §5): capture DeviceOps once, replay them for about a microsecond per kernel.

::

    graph = forward_op.graph_on(stream)          # captures by executing once
    out = graph.take_output()
    for tok in tokens:
        graph.update(api.memcpy(input_buf, tok)) # runs now, on the graph's stream
        graph.launch().sync_on(stream)

    with tile.CudaGraph.scope(stream) as s:      # imperative capture
        s.record(kernel1(out.partition((128,)), w))
        s.record(api.memcpy(a, b))
    graph = s.graph

Rules:

* Pointers are baked in at capture. The graph keeps every buffer it touched alive.
* Nothing may allocate while capturing: allocate buffers first and pass them in. An allocation
  raises ``tile.SchedulingError``, and ``record`` rejects ops that are not graph-safe (only kernel
  launches, memcpy and values are).
* The device is synchronized when a capture begins, so the captured work never waits on work from
  outside the graph.
* Capturing runs the captured work once (on the GPU the graph is launched right after it is
  instantiated), so outputs are valid after ``graph_on`` / the ``scope`` block; each
  ``launch()`` runs it again.
* On the CPU simulator, a graph records its ops and replays them in order.
"""
from __future__ import annotations

from typing import Any, List, Optional

from ..errors import SchedulingError
from ..runtime.memory import forbid_allocation, use_all
from . import execution as _ex
from .deviceop import DeviceOp, _as_stream, account_for, execute_input
from .execution import ExecutionContext

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from ..tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402


class GraphLaunch(DeviceOp):
    """Replay a :class:`CudaGraph` on the stream it is executed on (output: None)."""

    def __init__(self, graph: "CudaGraph"):
        self.graph = graph          # keeps the graph (and everything it uses) alive

    def describe(self, depth: int = 0) -> str:
        return f"replay {self.graph!r}"

    def _default_stream(self):
        """``sync()``: the default policy of the device the graph was captured on."""
        from .scheduling import default_stream
        return default_stream(self.graph.stream.device)

    def _execute(self, ctx: ExecutionContext):
        g = self.graph
        if g._closed:
            raise SchedulingError("this CUDA graph was closed")
        if g._exec is None:
            for op in g._ops:       # no driver graph (the simulator): replay the recorded ops
                op._execute(ctx)
            return None
        use_all(g._storages, ctx.stream)
        g._exec.launch(ctx.stream)
        return None


class CudaGraph:
    """An instantiated CUDA graph. Build it with ``op.graph_on(stream)`` or
    ``CudaGraph.scope(stream)``."""

    def __init__(self, stream, exec_=None, storages=(), ops=(), output=None):
        self.stream = stream
        self._exec = exec_          # runtime GraphExec, or None where the ops are replayed
        self._storages = list(storages)
        self._ops = list(ops)
        self._output = output
        self._closed = False

    # --- construction -----------------------------------------------------------------------------
    @classmethod
    def capture(cls, op: DeviceOp, stream) -> "CudaGraph":
        """Capture ``op`` by executing it once on ``stream``."""
        stream = _as_stream(stream)
        scope = GraphScope(stream)
        with scope:
            out = scope._run(op)
        scope.graph._output = out
        return scope.graph

    @staticmethod
    def scope(stream) -> "GraphScope":
        """A context manager that records ops into a new graph (``s.graph`` after the block)."""
        return GraphScope(_as_stream(stream))

    # --- use --------------------------------------------------------------------------------------
    def take_output(self) -> Any:
        """The output of the captured op (once; None afterwards)."""
        out, self._output = self._output, None
        return out

    def update(self, op: DeviceOp) -> Any:
        """Run ``op`` now on the graph's stream, without waiting (e.g. ``api.memcpy`` into an
        input buffer before the next ``launch()``); returns its output."""
        _ex.enter("CudaGraph.update()")
        try:
            return op._submit(self.stream)
        finally:
            _ex.leave()

    def launch(self) -> GraphLaunch:
        """A DeviceOp that replays the graph: ``graph.launch().sync_on(stream)``."""
        return GraphLaunch(self)

    def close(self) -> None:
        """Destroy the driver objects (also done when the graph is garbage-collected)."""
        if self._closed:
            return
        self._closed = True
        if self._exec is not None:
            self._exec.close()
        self._storages = []
        self._ops = []

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        what = f"{len(self._ops)} recorded op(s)" if self._exec is None else "instantiated"
        return f"<tile.CudaGraph {what} on {self.stream!r}>"


class GraphScope:
    """Imperative capture: ``with CudaGraph.scope(stream) as s: s.record(op) ...``."""

    def __init__(self, stream):
        self.stream = stream
        self.graph: Optional[CudaGraph] = None
        self._ops: List[DeviceOp] = []
        self._cap = None
        self._guard = None
        self._active = False

    def __enter__(self) -> "GraphScope":
        s = self.stream
        if s._capture is not None:
            raise SchedulingError("this stream is already capturing a CUDA graph")
        if _ex.is_executing():
            raise SchedulingError(_ex.REENTRANT_MSG.format(what="CudaGraph capture"))
        s.device.synchronize()
        self._cap = s.begin_capture()
        self._guard = forbid_allocation("while capturing a CUDA graph")
        self._guard.__enter__()
        self._active = True
        return self

    def record(self, op: DeviceOp) -> Any:
        """Execute ``op`` into the graph now; only graph-safe ops (kernel launches, memcpy,
        values) are accepted. Returns the op's output."""
        account_for(op)         # refused or recorded, it is not a forgotten op
        if not self._active:
            raise SchedulingError("record() must be called inside `with CudaGraph.scope(stream)`")
        if not isinstance(op, DeviceOp):
            raise TypeError(f"record() takes a DeviceOp, got {type(op).__name__}")
        if not op.graph_safe:
            raise SchedulingError(
                f"cannot record {op!r} into a CUDA graph: only graph-safe ops (kernel launches, "
                f"api.memcpy, tile.value) may be recorded; ops that allocate or copy from the host "
                f"must run before the capture")
        return self._run(op)

    def _run(self, op: DeviceOp) -> Any:
        _ex.enter("CudaGraph capture")
        try:
            out = execute_input(op, ExecutionContext(self.stream))
        finally:
            _ex.leave()
        self._ops.append(op)
        return out

    def __exit__(self, exc_type, exc, tb):
        s = self.stream
        self._guard.__exit__(None, None, None)
        self._active = False
        storages = self._cap.storages
        self._cap = None
        exec_ = s.end_capture(keep=exc_type is None)
        if exec_ is not None:
            # A capture records without running; run it once so that, as on the simulator (which
            # executes while recording), the work has happened.
            exec_.launch(s)
            s.synchronize()
        if exc_type is None:
            self.graph = CudaGraph(s, exec_, storages, self._ops)
        return False


__all__ = ["CudaGraph", "GraphScope", "GraphLaunch"]
