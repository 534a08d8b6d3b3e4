"""``tile.Stream`` and ``tile.Event``.

A stream is owned (created by tilejit, destroyed when garbage-collected) or borrowed
(:meth:`Stream.borrow_raw`: an int handle, ``torch.cuda.Stream``, a CuPy stream, a ``cuda.core``
stream or anything with ``__cuda_stream__``; never destroyed by tilejit, and the foreign object is
kept alive while the wrapper lives).

On the simulator backend every stream executes work immediately, so synchronizing is free.

Completion tracking: each stream counts ``synchronize()`` calls in *epochs*. Work recorded at epoch
``e`` is known complete once a synchronize that started at epoch ``>= e`` has returned. Storage uses
this to skip cross-stream waits for work that is already finished (see ``memory.Storage.use``).
"""
from __future__ import annotations

import threading
import time
import weakref
from typing import Optional

from ..errors import ContextError, SchedulingError
from . import driver as _d
from . import waiting as _waiting
from .device import Device
from .memory import Capture


class Stream:
    """A CUDA stream (or a simulated one). Use ``dev.new_stream()`` or ``Stream.borrow_raw(x)``."""

    __slots__ = ("device", "handle", "_cu", "_owned", "_owner", "_epoch", "_done_epoch",
                 "_order_event", "_raw_event", "_lock", "_finalizer", "_ephemeral", "_capture",
                 "_staging", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("create streams with device.new_stream() or wrap one with "
                        "tile.Stream.borrow_raw(handle)")

    @classmethod
    def _make(cls, device: Device, handle: int, cu, owned: bool, owner=None) -> "Stream":
        s = object.__new__(cls)
        s.device = device
        s.handle = int(handle)
        s._cu = cu
        s._owned = owned
        s._owner = owner
        s._epoch = 1
        s._done_epoch = 0
        s._order_event = None
        s._raw_event = None
        s._lock = threading.Lock()
        s._finalizer = None
        # A raw foreign handle may be destroyed behind our back at any time: memory used on it is
        # tracked with events instead of the stream itself (see memory.Storage.use).
        s._ephemeral = cu is not None and not owned and owner is None
        s._capture = None          # the graph capture in progress on this stream (deviceops.graph)
        s._staging = None          # reusable upload buffers for NumPy arguments (staging.py)
        return s

    @classmethod
    def _create(cls, device: Device, priority: int = 0) -> "Stream":
        if device.is_simulated:
            return cls._make(device, 0, None, owned=True)
        drv = _d.drv
        with device.current():
            cu = _d.check(drv.cuStreamCreateWithPriority(
                drv.CUstream_flags.CU_STREAM_NON_BLOCKING, int(priority)),
                "cuStreamCreateWithPriority")
        s = cls._make(device, int(cu), cu, owned=True)
        s._finalizer = weakref.finalize(s, _destroy_stream, cu)
        _owned_streams[s.handle] = s
        return s

    @classmethod
    def borrow_raw(cls, obj, device: Optional[Device] = None) -> "Stream":
        """Wrap a stream owned by someone else without taking ownership.

        ``obj``: a ``tile.Stream`` (returned as is), an int ``CUstream`` handle, a
        ``cuda.bindings.driver.CUstream``, ``torch.cuda.Stream`` (``.cuda_stream``), a CuPy stream
        (``.ptr``), a ``cuda.core`` stream (``__cuda_stream__``), or a Numba stream (``.handle``).
        """
        if isinstance(obj, Stream):
            return obj
        handle = _stream_handle(obj)
        mine = _owned_streams.get(handle) if handle else None
        if mine is not None:                 # one of our own streams, by its raw handle
            return mine
        if device is None:
            device = _object_device(obj)
        if device is None:
            device = _stream_device(handle)
        device = Device(device) if not isinstance(device, Device) else device
        if device.is_simulated:
            return cls._make(device, handle, None, owned=False, owner=obj)
        cu = _d.drv.CUstream(handle)
        raw = isinstance(obj, (int, _d.drv.CUstream))       # nothing keeps a raw handle alive
        return cls._make(device, handle, cu, owned=False, owner=None if raw else obj)

    @classmethod
    def of_producer(cls, handle: int, device: Device) -> "Stream":
        """A long-lived foreign stream by its raw handle (torch's current stream): one wrapper per
        handle, tracked like a tilejit stream. Use it only for streams that outlive the process'
        use of them (torch's default and pool streams are never destroyed)."""
        key = (device, handle)
        s = _producer_streams.get(key)
        if s is None:
            mine = _owned_streams.get(handle) if handle else None
            if mine is not None:
                return mine
            s = cls._make(device, handle, _d.drv.CUstream(handle), owned=False, owner=_PRODUCER)
            _producer_streams[key] = s
        return s

    # --- properties --------------------------------------------------------------------------------
    @property
    def is_simulated(self) -> bool:
        return self._cu is None

    @property
    def is_borrowed(self) -> bool:
        return not self._owned

    @property
    def cuda_stream(self) -> int:
        """The raw handle as an int (PyTorch spelling)."""
        return self.handle

    def __cuda_stream__(self):
        """The ``cuda.core`` stream protocol: ``(version, handle)``."""
        return (0, self.handle)

    # --- synchronization ---------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Block until all work queued on this stream has finished (from any thread; Ctrl-C
        interrupts the wait, and TILEJIT_SYNC_TIMEOUT bounds it: runtime/waiting.py)."""
        epoch = self._epoch
        self._epoch = epoch + 1
        cu = self._cu
        if cu is not None:
            if self.handle in _DEFAULT_HANDLES:     # the context current once, for every poll
                with self.device.current():
                    _wait_for_stream(self.device, self.handle, cu)
            else:
                _wait_for_stream(self.device, self.handle, cu)
        if epoch > self._done_epoch:
            self._done_epoch = epoch

    def query(self) -> bool:
        """True when all queued work has finished (never blocks)."""
        if self._cu is None:
            return True
        return _ready(_on_device(self.device, self.handle, _d.drv.cuStreamQuery, self._cu)[0],
                      "cuStreamQuery")

    def is_pending(self, epoch: int) -> bool:
        """Whether work recorded at ``epoch`` may still be running."""
        return self._cu is not None and epoch > self._done_epoch

    def record_event(self, event: Optional["Event"] = None) -> "Event":
        """Record an event on this stream (a new one unless given) and return it."""
        ev = event if event is not None else Event(self.device)
        ev.record(self)
        return ev

    def wait_event(self, event: "Event") -> None:
        """Make future work on this stream wait for ``event``."""
        if self._cu is None or event._cu is None:
            return
        _d.check(_on_device(self.device, self.handle, _d.drv.cuStreamWaitEvent, self._cu,
                            event._cu, 0), "cuStreamWaitEvent")

    def wait_stream(self, other: "Stream") -> None:
        """Make future work on this stream wait for the work queued so far on ``other``
        (which must still exist)."""
        if other is self or self._cu is None or other._cu is None:
            return
        with other._lock:
            if other._order_event is None:
                other._order_event = Event(other.device)
            ev = other._order_event
            ev.record(other)
            # cuStreamWaitEvent captures the event's current state, so the event may be
            # re-recorded right after this call.
            self.wait_event(ev)

    # --- graph capture (driven by tilejit.deviceops.graph) -------------------------------------------------
    def begin_capture(self) -> "Capture":
        """Start recording this stream's work into a CUDA graph (relaxed mode); returns the
        capture state, which collects the memory the captured work uses. On the simulator
        nothing is recorded: the caller replays what it ran."""
        if self._capture is not None:
            raise SchedulingError("this stream is already capturing a CUDA graph")
        cap = Capture()
        # marked before the driver call (under the lock a device-wide wait takes), unmarked
        # after the end: another thread must never wait on this stream while it captures
        with _capture_lock:
            self._capture = cap
            if self._cu is not None:
                drv = _d.drv
                try:
                    with self.device.current():
                        _d.check(drv.cuStreamBeginCapture(
                            self._cu, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
                            "cuStreamBeginCapture")
                except BaseException:
                    self._capture = None
                    raise
        return cap

    def end_capture(self, keep: bool = True) -> Optional["GraphExec"]:
        """Stop recording. With ``keep``, instantiate the graph and return it (None on the
        simulator); otherwise discard it. Frees deferred during the capture happen here."""
        cap = self._capture
        if cap is None:
            raise SchedulingError("end_capture() without begin_capture()")
        try:
            if self._cu is None:
                return None
            drv = _d.drv
            with self.device.current():
                err, graph = drv.cuStreamEndCapture(self._cu)
            if not keep:
                if graph is not None:
                    drv.cuGraphDestroy(graph)
                return None
            _d.check((err,), "cuStreamEndCapture")
            return GraphExec(graph, self)
        finally:
            self._capture = None
            cap.flush_deferred_frees()

    def wait_raw(self, handle: int) -> None:
        """Make future work on this stream wait for the work queued so far on the raw stream
        ``handle`` of the same device (a producer's stream: torch's current stream, a CAI
        ``stream``). Free when ``handle`` is this stream."""
        if handle == self.handle or self._cu is None:
            return
        drv = _d.drv
        with self._lock:
            ev = self._raw_event
            if ev is None:
                ev = self._raw_event = Event(self.device)
            _d.check(_on_device(self.device, handle, drv.cuEventRecord, ev._cu,
                                drv.CUstream(handle)), "cuEventRecord")
            self.wait_event(ev)

    def __eq__(self, other) -> bool:
        # Two wrappers of one CUDA handle are the same stream; simulated streams compare by identity.
        if other is self:
            return True
        return (isinstance(other, Stream) and self._cu is not None and other._cu is not None
                and other.handle == self.handle)

    def __hash__(self) -> int:
        return hash(self.handle) if self._cu is not None else id(self)

    def __repr__(self) -> str:
        kind = "simulated" if self._cu is None else ("borrowed" if not self._owned else "owned")
        return f"<tilejit.Stream {kind} 0x{self.handle:x} on {self.device.arch}:{self.device.ordinal}>"


_owned_streams: "weakref.WeakValueDictionary[int, Stream]" = weakref.WeakValueDictionary()
_producer_streams: dict = {}        # (device, handle) -> Stream (of_producer)
_PRODUCER = "long-lived producer stream"


# Held while a stream enters a graph capture and while a device-wide wait decides how to wait:
# cuCtxSynchronize while any stream of the context captures fails and invalidates that capture.
_capture_lock = threading.Lock()


def _known_streams(device):
    return [s for s in list(_owned_streams.values()) + list(_producer_streams.values())
            if s.device is device and s._cu is not None]


def synchronize_device(device) -> None:
    """``Device.synchronize``: one device-wide wait, or, while another thread captures a graph on
    the device (which forbids that wait), a wait for every other stream tilejit knows (its own
    and the producer streams it tracks)."""
    with _capture_lock:
        streams = _known_streams(device)
        if not any(s._capture is not None for s in streams):
            def block():
                with device.current():
                    _d.check(_d.drv.cuCtxSynchronize(), "cuCtxSynchronize")
            _waiting.wait(None, block, f"the work on device {device.ordinal}")
            return
    for s in streams:
        if s._capture is None:
            s.synchronize()


#: CUstream handles that name a stream of whichever context is current: 0 (the NULL stream),
#: CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
_DEFAULT_HANDLES = (0, 1, 2)


def _on_device(device, handle: int, fn, *args):
    """``fn(*args)`` (a driver call about stream ``handle`` or an event of ``device``) from any
    thread, leaving the thread's current context as it was.

    A default stream handle means "of the current context", so its device's context must be
    current (a new thread has none; another device's would silently name the wrong stream).
    Any other handle names its own context; only a thread without a current context gets
    CUDA_ERROR_INVALID_CONTEXT, and the call is retried with the device's context current."""
    if handle in _DEFAULT_HANDLES:
        with device.current():
            return fn(*args)
    ret = fn(*args)
    if ret[0] == _d.drv.CUresult.CUDA_ERROR_INVALID_CONTEXT:
        with device.current():
            return fn(*args)
    return ret


def _wait_for_stream(dev, h: int, cu) -> None:
    """Stream ``cu``'s work done: polled here, then waited for by runtime/waiting.py (Ctrl-C,
    TILEJIT_SYNC_TIMEOUT). A default handle (``h``) has ``dev``'s context current already, so
    each poll names the stream as one of its own context would (handle -1 to _on_device)."""
    def done() -> bool:
        return _ready(_on_device(dev, -1, _d.drv.cuStreamQuery, cu)[0], "cuStreamQuery")
    if not done():
        _waiting.wait(done, lambda: _d.check(_on_device(dev, h, _d.drv.cuStreamSynchronize, cu),
                                             "cuStreamSynchronize"),
                      f"the work queued on stream {h:#x} of device {dev.ordinal}")


def _ready(err, what: str) -> bool:
    """The result of a ``cuStreamQuery`` / ``cuEventQuery`` (named ``what``): True when the work
    has finished, False while it is running; DriverError for any other error."""
    if err == _d.SUCCESS:
        return True
    if err == _d.drv.CUresult.CUDA_ERROR_NOT_READY:
        return False
    _d.check((err,), what)
    return False


def _destroy_stream(cu) -> None:
    try:
        _d.drv.cuStreamDestroy(cu)
    except Exception:  # interpreter shutdown or a dead context: nothing useful to do
        pass


def _stream_handle(obj) -> int:
    if isinstance(obj, bool):
        raise TypeError("a bool is not a stream handle")
    if isinstance(obj, int):
        return obj
    drv = _d.drv
    if drv is not None and isinstance(obj, drv.CUstream):
        return int(obj)
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        val = proto() if callable(proto) else proto
        return int(val[1])
    for attr in ("cuda_stream", "ptr"):              # PyTorch, CuPy
        val = getattr(obj, attr, None)
        if isinstance(val, int):
            return val
    handle = getattr(obj, "handle", None)            # Numba: .handle is a ctypes c_void_p or an int
    if handle is not None:
        val = getattr(handle, "value", handle)
        if val is None:
            return 0
        try:
            return int(val)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"cannot use {type(obj).__name__} as a CUDA stream: pass an int handle, a "
                    f"torch.cuda.Stream, a CuPy stream or an object with __cuda_stream__")


def _object_device(obj) -> Optional[int]:
    """The device a stream object says it belongs to (torch: ``.device``; CuPy: ``.device_id``),
    or None. Needed for the default streams (handles 0-2), which every device has."""
    dev = getattr(obj, "device", None)
    idx = getattr(dev, "index", None)
    if isinstance(idx, int) and idx >= 0:
        return idx
    did = getattr(obj, "device_id", None)
    return did if isinstance(did, int) and did >= 0 else None


def _stream_device(handle: int) -> Device:
    """The device of a foreign stream handle: the driver's answer, else (a default stream, 0-2,
    which every device has; the simulator) the calling thread's current device."""
    from . import backend as _backend
    if _backend.current() == _backend.SIMULATOR:
        return Device()
    _d.init()
    fn = getattr(_d.drv, "cuStreamGetDevice", None)
    if fn is not None and handle not in (0, 1, 2):
        try:
            return Device(int(_d.check(fn(_d.drv.CUstream(handle)), "cuStreamGetDevice")))
        except Exception:
            pass
    return Device()         # a default stream (0-2) is the current context's


class GraphExec:
    """An instantiated CUDA graph (``cuGraphInstantiate``), uploaded to its stream's device."""

    __slots__ = ("_graph", "_exec", "device", "__weakref__")

    def __init__(self, graph, stream: Stream):
        drv = _d.drv
        self._graph = graph
        self.device = stream.device
        try:
            with stream.device.current():
                self._exec = _d.check(drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
                _d.check(drv.cuGraphUpload(self._exec, stream._cu), "cuGraphUpload")
        except BaseException:
            drv.cuGraphDestroy(graph)
            raise

    def launch(self, stream: Stream) -> None:
        """Replay the graph on ``stream``."""
        with stream.device.current():
            _d.check(_d.drv.cuGraphLaunch(self._exec, stream._cu), "cuGraphLaunch")

    def close(self) -> None:
        """Destroy the driver objects (idempotent)."""
        ex, self._exec = self._exec, None
        if ex is not None:
            try:
                _d.drv.cuGraphExecDestroy(ex)
                _d.drv.cuGraphDestroy(self._graph)
            except Exception:      # interpreter shutdown or a dead context
                pass


class Event:
    """A CUDA event (timing disabled unless ``timing=True``); trivially complete on the simulator."""

    __slots__ = ("device", "_cu", "_time", "_finalizer", "__weakref__")

    def __init__(self, device=None, timing: bool = False):
        self.device = Device(device)          # None: the current device
        self._time = None
        self._finalizer = None
        if self.device.is_simulated:
            self._cu = None
            return
        drv = _d.drv
        flags = 0 if timing else int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        with self.device.current():
            self._cu = _d.check(drv.cuEventCreate(flags), "cuEventCreate")
        self._finalizer = weakref.finalize(self, _destroy_event, self._cu)

    def record(self, stream: Stream) -> "Event":
        if self._cu is None or stream._cu is None:
            if stream._cu is not None:
                raise ContextError("cannot record a simulated event on a CUDA stream")
            self._time = time.perf_counter()
            return self
        _d.check(_on_device(stream.device, stream.handle, _d.drv.cuEventRecord, self._cu,
                            stream._cu), "cuEventRecord")
        return self

    def query(self) -> bool:
        """True when the work before the record point has finished."""
        if self._cu is None:
            return True
        return _ready(_on_device(self.device, -1, _d.drv.cuEventQuery, self._cu)[0],
                      "cuEventQuery")

    def synchronize(self) -> None:
        """Block until the event has completed (the GIL released; Ctrl-C interrupts the wait,
        and TILEJIT_SYNC_TIMEOUT bounds it)."""
        cu = self._cu
        if cu is not None and not self.query():
            dev = self.device
            _waiting.wait(self.query,
                          lambda: _d.check(_on_device(dev, -1, _d.drv.cuEventSynchronize, cu),
                                           "cuEventSynchronize"),
                          f"an event of device {dev.ordinal}")

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds from this event to ``end`` (both recorded; created with ``timing=True``)."""
        if self._cu is None:
            return (end._time - self._time) * 1e3
        return float(_d.check(_on_device(self.device, -1, _d.drv.cuEventElapsedTime, self._cu,
                                         end._cu), "cuEventElapsedTime"))

    @property
    def handle(self) -> int:
        return int(self._cu) if self._cu is not None else 0


def _destroy_event(cu) -> None:
    try:
        _d.drv.cuEventDestroy(cu)
    except Exception:
        pass


__all__ = ["Stream", "Event", "GraphExec", "synchronize_device"]
