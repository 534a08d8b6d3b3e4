"""Device memory: :class:`Storage` (one allocation, or borrowed foreign memory) and :func:`allocate`.

CUDA allocations come from the driver's stream-ordered allocator (``cuMemAllocAsync`` on the
device's default memory pool). A storage remembers the stream that last used it (``use(stream)``)
and is freed with ``cuMemFreeAsync`` **on that stream** when the last reference goes away, so the
memory returns to the pool only after every kernel queued on it has finished.

Cross-stream ordering: when a storage is used on stream B after stream A, and A's work on it may
still be running (A has not been synchronized since), B is made to wait for A with an event. Work
that is already known complete costs nothing; this keeps the launch hot path to two attribute loads
per tensor argument in the common case.

On the simulator backend the memory lives in :mod:`tilejit.simulator.memory` (which records the
simulated device of each allocation) and is freed immediately (all simulated work is already
complete).

Ownership bookkeeping for the runtime checks that replace Rust's borrow checker also lives on the
storage: ``leases`` (weak references to the partitions holding write leases on its bytes).
"""
from __future__ import annotations

import gc
import threading
import weakref
from typing import Optional

from .. import envvars
from ..errors import DeviceMemoryError, SchedulingError, format_size
from . import driver as _d
from .device import Device


class _FreeState:
    """What the finalizer needs, kept apart from the Storage so it does not keep it alive.

    ``stream``/``epoch``: the last stream that used the memory and its epoch then. ``event``: an
    event recorded after that use when the stream is a raw foreign handle (which may be destroyed
    before the memory is freed); waits and the final free then go through the event.
    ``producer``: for foreign memory imported from its metadata, the raw handle of the producer's
    stream; the first use waits for it (DLPack's rule), then it is forgotten.
    """

    __slots__ = ("ptr", "device", "stream", "epoch", "event", "producer")

    def __init__(self, ptr: int, device: Device, stream, producer=None):
        self.ptr = ptr
        self.device = device
        self.stream = stream
        self.epoch = stream._epoch if stream is not None else 0
        self.event = None
        self.producer = producer    # raw stream handle of a foreign producer, until first use
        if stream is not None and stream._ephemeral:
            self.event = stream.record_event()


def _order_after(stream, h: _FreeState) -> None:
    """Make ``stream`` wait for the last recorded use in ``h``."""
    if h.event is not None:
        stream.wait_event(h.event)
    else:
        stream.wait_stream(h.stream)


class Storage:
    """A block of device memory: ``ptr`` (int; a simulated address on the simulator), ``nbytes``.

    Owned storage is freed when garbage-collected; foreign storage (DLPack, CUDA Array Interface)
    keeps its ``owner`` alive instead and is never freed by tilejit.
    """

    __slots__ = ("ptr", "nbytes", "device", "owner", "_h", "_finalizer", "leases", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, device: Device, stream=None, owner=None,
                 producer=None):
        self.ptr = int(ptr)
        self.nbytes = int(nbytes)
        self.device = device
        self.owner = owner
        self._h = _FreeState(self.ptr, device, stream, producer)
        self._finalizer = None
        self.leases = None         # weakrefs to the partitions holding write leases on it

    # --- stream tracking ------------------------------------------------------------------------------
    @property
    def last_stream(self):
        """The stream that last used this memory (the one it will be freed on)."""
        return self._h.stream

    def use(self, stream) -> None:
        """Record that work touching this memory is being queued on ``stream``.

        Call it *before* queuing the work: if another stream may still be using the memory, the new
        stream is made to wait for it first.

        :func:`use_all` inlines the case ``stream._capture is None and not stream._ephemeral and
        self._h.stream is stream`` as ``self._h.epoch = stream._epoch``: keep it in step when
        changing this method.
        """
        h = self._h
        cap = stream._capture
        if cap is not None:
            # Inside a graph capture: the device was synchronized when it began (no waits needed,
            # and waiting on an event from outside the capture is illegal); the graph keeps the
            # memory alive since its pointers are baked into the graph. Captured work does not
            # run now, so it is not recorded as the memory's last use: other streams (another
            # thread's capture among them) must never wait on a capturing stream.
            cap.storages.add(self)
            return
        if h.producer is not None:
            producer, h.producer = h.producer, None
            stream.wait_raw(producer)
        last = h.stream
        if last is not stream:
            if self.is_pending() and last._capture is None:
                _order_after(stream, h)
            h.stream = stream
            h.event = None
        h.epoch = stream._epoch
        if stream._ephemeral:
            h.event = stream.record_event(h.event)

    def is_pending(self) -> bool:
        """Whether work queued on this memory may still be running."""
        h = self._h
        return h.producer is not None or (h.stream is not None and h.stream.is_pending(h.epoch))

    def order_before(self, stream) -> None:
        """Make ``stream`` wait for pending work on this memory (without recording a use)."""
        h = self._h
        if h.producer is not None:
            stream.wait_raw(h.producer)
        if (h.stream is not None and h.stream is not stream and h.stream._capture is None
                and h.stream.is_pending(h.epoch)):
            _order_after(stream, h)

    def ready_stream(self):
        """A live stream after which all queued work on this memory is complete, or None when
        nothing is pending (for ``__cuda_array_interface__``'s ``stream``)."""
        if not self.is_pending():
            return None
        h = self._h
        if h.event is not None or h.producer is not None or h.stream is None:
            s = self.device.internal_stream()
            self.order_before(s)
            return s
        return h.stream

    @property
    def is_owned(self) -> bool:
        return self._finalizer is not None

    def __repr__(self) -> str:
        kind = "owned" if self.is_owned else "foreign"
        return f"<Storage {kind} 0x{self.ptr:x} {self.nbytes} bytes on {self.device!r}>"


def use_all(storages, stream) -> None:
    """``st.use(stream)`` for every storage, with the launch hot path's common case inlined: on a
    stream tilejit tracks, outside a graph capture, memory last used on the same stream only needs
    its epoch updated."""
    if stream._capture is None and not stream._ephemeral:
        epoch = stream._epoch
        for st in storages:
            h = st._h
            if h.stream is stream:
                h.epoch = epoch
            else:
                st.use(stream)
    else:
        for st in storages:
            st.use(stream)


class Capture:
    """What a graph capture in progress collects (``stream._capture`` points here): every Storage
    the captured work used (the graph keeps them alive, since their pointers are baked in), and
    frees that arrived meanwhile (a free must not become a node of the graph)."""

    def __init__(self):
        self.storages = set()
        self.deferred = []

    def flush_deferred_frees(self) -> None:
        """Perform the frees deferred during the capture (call once it has ended)."""
        deferred, self.deferred = self.deferred, []
        for h in deferred:
            _free_cuda(h)


# --- allocation ---------------------------------------------------------------------------------------
_pool_lock = threading.Lock()
_alloc_guard = threading.local()


def check_allocation_allowed() -> None:
    """SchedulingError when this thread may not allocate now (see :class:`forbid_allocation`)."""
    reason = getattr(_alloc_guard, "reason", None)
    if reason:
        raise SchedulingError(f"this operation allocates device memory, which is not allowed "
                              f"{reason}; allocate buffers before and pass them in")


def allocate(nbytes: int, stream, device: Optional[Device] = None) -> Storage:
    """Allocate ``nbytes`` on ``stream``'s device, stream-ordered on ``stream``.

    Raises SchedulingError inside a graph capture that forbids allocation (see
    :func:`forbid_allocation`), DriverError when out of memory (after one garbage collection and
    retry).
    """
    check_allocation_allowed()
    device = device if device is not None else stream.device
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError(f"cannot allocate {nbytes} bytes")
    if device.is_simulated:
        from ..simulator.memory import memory as sim
        ptr = sim.alloc(nbytes, device.ordinal)
        st = Storage(ptr, nbytes, device, stream)
        st._finalizer = weakref.finalize(st, _free_simulated, ptr)
        st._finalizer.atexit = False
        return st
    _ensure_pool(device)
    with device.current():
        ptr = _cuda_alloc(max(nbytes, 1), stream)
    st = Storage(ptr, nbytes, device, stream)
    st._finalizer = weakref.finalize(st, _free_cuda, st._h)
    st._finalizer.atexit = False       # the process is exiting: the driver frees everything
    return st


class forbid_allocation:
    """Context manager: any :func:`allocate` on this thread raises SchedulingError (graph capture)."""

    def __init__(self, reason: str = "while recording a CUDA graph"):
        self.reason = reason
        self._prev = None

    def __enter__(self):
        self._prev = getattr(_alloc_guard, "reason", None)
        _alloc_guard.reason = self.reason
        return self

    def __exit__(self, *exc):
        _alloc_guard.reason = self._prev
        return False


def _cuda_alloc(nbytes: int, stream) -> int:
    drv = _d.drv
    for attempt in range(2):
        err, ptr = drv.cuMemAllocAsync(nbytes, stream._cu)
        if err == _d.SUCCESS:
            return int(ptr)
        if err == drv.CUresult.CUDA_ERROR_OUT_OF_MEMORY and attempt == 0:
            # Tensors caught in reference cycles may still hold memory: collect them and retry.
            gc.collect()
            stream.synchronize()
            continue
        if err == drv.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise _out_of_memory(nbytes, stream.device, int(err))
        # "allocating N bytes on <device> failed: <error>", plus the driver module's hint
        raise _d._driver_error(err, f"allocating {nbytes} bytes on {stream.device.name}")
    raise AssertionError("unreachable")


def _out_of_memory(nbytes: int, device, code: int) -> DeviceMemoryError:
    """CUDA_ERROR_OUT_OF_MEMORY as the simulator reports it: what was asked, what is free."""
    err, free, total = _d.drv.cuMemGetInfo()        # the device's context is current here
    if err != _d.SUCCESS:
        return DeviceMemoryError(nbytes, None, device.name, "CUDA_ERROR_OUT_OF_MEMORY", code)
    return DeviceMemoryError(nbytes, int(free), device.name,
                             f"CUDA_ERROR_OUT_OF_MEMORY; the GPU has {format_size(int(total))} "
                             f"in all", code)


def _ensure_pool(device: Device) -> None:
    """Let the default pool keep freed memory cached (up to a threshold) across synchronizations.

    The driver's default threshold is 0, which returns memory to the OS at every synchronize and
    makes the next allocation slow. ``TILEJIT_POOL_RELEASE_THRESHOLD`` (bytes) overrides the
    default of a quarter of the device memory, which leaves room for other libraries (PyTorch's
    caching allocator does not draw from this pool).
    """
    if device._pool_ready:
        return
    with _pool_lock:
        if device._pool_ready:
            return
        drv = _d.drv
        configured = envvars.get("TILEJIT_POOL_RELEASE_THRESHOLD")    # a bad value raises
        try:
            pool = _d.check(drv.cuDeviceGetDefaultMemPool(device._cu_dev),
                            "cuDeviceGetDefaultMemPool")
            threshold = device.total_memory // 4 if configured is None else configured
            _d.check(drv.cuMemPoolSetAttribute(
                pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                drv.cuuint64_t(threshold)), "cuMemPoolSetAttribute")
        except Exception:
            pass       # a tuning knob only; allocation works without it
        device._pool_ready = True


def trim(device=None) -> None:
    """Return all cached, unused pool memory of ``device`` (None: the current device) to the
    system."""
    dev = Device(device)
    if dev.is_simulated:
        return
    drv = _d.drv
    dev.synchronize()
    pool = _d.check(drv.cuDeviceGetDefaultMemPool(dev._cu_dev), "cuDeviceGetDefaultMemPool")
    _d.check(drv.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")


def _free_cuda(h: _FreeState) -> None:
    stream = h.stream
    if stream is not None and stream._capture is not None and h.ptr:
        stream._capture.deferred.append(h)      # a free must not become a node of the graph
        return
    ptr, h.ptr = h.ptr, 0
    if not ptr:
        return
    try:
        drv = _d.drv
        with h.device.current():   # finalizers run anywhere: leave the thread as found
            stream = h.stream
            if stream is None or stream._cu is None or h.event is not None:
                # A raw foreign stream may be gone: free on our own stream, after the last use.
                own = h.device.internal_stream()
                if h.event is not None:
                    own.wait_event(h.event)
                stream = own
            drv.cuMemFreeAsync(drv.CUdeviceptr(ptr), stream._cu)
    except Exception:   # never raise from a finalizer (interpreter shutdown, dead context)
        pass


def _free_simulated(ptr: int) -> None:
    try:
        from ..simulator.memory import memory as sim
        sim.release(ptr)
    except Exception:
        pass


__all__ = ["Storage", "Capture", "use_all", "allocate", "forbid_allocation", "trim"]
