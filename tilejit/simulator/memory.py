"""Simulated device memory for the CPU simulator backend.

The simulator gives every allocation a fake *device address*: a plain Python ``int`` that is nonzero,
256-byte aligned and never reused, even after the allocation is freed (so a stale pointer is always
detected as a use-after-free instead of silently reading someone else's data). Each allocation is
backed by a NumPy ``uint8`` buffer. Allocations are separated by an unmapped guard gap, so running off
the end of one buffer never lands inside the next one.

Several simulated devices (``TILEJIT_SIM_DEVICES``) share this one address space, as GPUs share
one virtual address space under CUDA's unified addressing: every allocation belongs to one device
(``alloc(n, device=1)``, :meth:`SimulatedMemory.device_of`), host-side copies reach any of them,
and a kernel sees memory through :meth:`SimulatedMemory.on_device`, which faults on another
device's memory as a GPU kernel does without peer access.

Kernel parameters (contract C1) carry these addresses exactly as a GPU kernel receives real pointers:
``base + sum(index_i * stride_i) * itemsize``. The interpreter therefore computes element addresses
with ordinary int64 arithmetic and hands whole arrays of them to :meth:`SimulatedMemory.load` and
:meth:`SimulatedMemory.store`, which resolve all of them at once.

Typical interpreter use::

    from tilejit.simulator.memory import memory          # the process-wide address space
    addrs = base + (rows[:, None] * stride0 + cols[None, :] * stride1) * itemsize  # int64 array
    tile = memory.load(addrs, np.float32, mask=in_bounds, other=0.0)
    memory.store(addrs, tile * 2, np.float32, mask=in_bounds)

All errors are :class:`tilejit.DeviceError` with the faulting address in hex, e.g.
``out-of-bounds access at 0x100000110 (16 bytes past allocation 0x100000000 of 256 bytes)``.
"""
from __future__ import annotations

import collections
import os
import threading
from typing import Dict, Optional, Tuple

import numpy as np

from ..errors import DeviceError, DeviceMemoryError

ALIGNMENT = 256            # like cudaMalloc: every base address is a multiple of 256
_GUARD = 1 << 16           # unmapped bytes between allocations (catches overruns into neighbours)
_FIRST_BASE = 1 << 32     # above 4 GiB, so an address truncated to 32 bits is detected as invalid
_FREED_HISTORY = 1 << 16   # freed allocations remembered for "use after free" messages
CAPACITY = 16 << 30        # bytes of the simulated device (what Device.total_memory reports)
_HOST_CHECK = 64 << 20     # allocations from this size on are also checked against host memory


def host_available() -> Optional[int]:
    """Bytes of host memory available now (Linux's MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


class SimulatedMemory:
    """A simulated device address space: allocations are NumPy ``uint8`` buffers keyed by address.

    Thread-safe: allocation and freeing take a lock, and every access resolves its addresses
    against one snapshot of the allocation tables. Loads and stores from several threads to the
    same bytes work like racy device accesses (no ordering guarantees between threads).
    Finalizers free through :meth:`release`, which only queues the address: a finalizer may run
    from a garbage collection triggered while this thread holds the lock or iterates the tables.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = _FIRST_BASE
        self._buffers: Dict[int, np.ndarray] = {}       # base -> uint8 buffer (live allocations)
        self._devices: Dict[int, int] = {}              # base -> device ordinal, where not 0
        self._freed: Dict[int, int] = {}                # base -> size (freed allocations, for messages)
        self._pending: collections.deque = collections.deque()   # released, not yet freed
        self._bytes_in_use = 0
        # Sorted lookup tables over live allocations, rebuilt lazily after alloc/free, as one
        # immutable snapshot (bases, ends, buffers, devices or None when all are on device 0)
        # that is replaced whole: a reader resolves its addresses and picks its buffers from the
        # same snapshot, whatever other threads do.
        self._dirty = True
        self._snapshot = (np.zeros(0, np.int64), np.zeros(0, np.int64), [], None)

    # --- allocation -------------------------------------------------------------------------------
    def alloc(self, nbytes: int, device: int = 0) -> int:
        """Allocate ``nbytes`` (zero allowed) on simulated ``device`` and return the base address
        (nonzero, 256-aligned, unique across devices).

        The contents are *not* zeroed on a real GPU; here they are filled with a recognisable
        garbage pattern (0xCD) so that reading uninitialised memory shows up in tests.
        """
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        self._check_room(nbytes)
        try:
            buf = np.full(nbytes, 0xCD, dtype=np.uint8)
        except MemoryError:         # NumPy's _ArrayMemoryError: say it in the device's terms
            raise DeviceMemoryError(nbytes, host_available(), "the simulated device",
                                    "the host could not provide the memory") from None
        with self._lock:
            self._drain_locked()
            base = self._next
            self._next = _round_up(base + max(nbytes, 1) + _GUARD, ALIGNMENT)
            self._buffers[base] = buf
            if device:
                self._devices[base] = int(device)
            self._bytes_in_use += nbytes
            self._dirty = True
        return base

    def _check_room(self, nbytes: int) -> None:
        """DeviceMemoryError unless ``nbytes`` fit in the simulated device next to what is
        allocated, and (for big requests) in the host memory backing it."""
        free = CAPACITY - self.bytes_in_use
        if nbytes > free:
            raise DeviceMemoryError(nbytes, max(free, 0), "the simulated device",
                                    f"the simulated device has {CAPACITY >> 30} GiB in all")
        host = host_available() if nbytes >= _HOST_CHECK else None
        if host is not None and nbytes > host:
            raise DeviceMemoryError(nbytes, host, "the simulated device",
                                    "the simulator keeps device memory in host memory, which is short")

    def free(self, addr: int) -> None:
        """Free the allocation whose base address is ``addr``. Freeing twice is a DeviceError."""
        addr = int(addr)
        with self._lock:
            self._drain_locked()
            self._free_locked(addr)

    def release(self, addr: int) -> None:
        """Free ``addr`` later, from a finalizer: never blocks, never raises.

        ``deque.append`` runs no Python code, so this is safe from a garbage collection that
        interrupts this object mid-update; the next operation performs the free.
        """
        self._pending.append(int(addr))

    def _drain(self) -> None:
        if self._pending:
            with self._lock:
                self._drain_locked()

    def _drain_locked(self) -> None:
        while self._pending:
            addr = self._pending.popleft()
            if addr in self._buffers:          # a finalizer must not turn a bug into an error here
                self._free_locked(addr)

    def _free_locked(self, addr: int) -> None:
        buf = self._buffers.pop(addr, None)
        if buf is None:
            if addr in self._freed:
                raise DeviceError(f"double free of simulated allocation 0x{addr:x}")
            raise DeviceError(f"free of 0x{addr:x}, which is not the base of a live simulated "
                              f"allocation")
        self._devices.pop(addr, None)
        self._freed[addr] = buf.size
        if len(self._freed) > _FREED_HISTORY:            # keep messages cheap and memory bounded
            self._freed.pop(next(iter(self._freed)))
        self._bytes_in_use -= buf.size
        self._dirty = True

    def is_live(self, addr: int) -> bool:
        """True if ``addr`` is the base of, or lies inside, a live allocation."""
        addr = int(addr)
        self._drain()
        if addr in self._buffers:
            return True
        try:
            self._locate(addr, 1)
            return True
        except DeviceError:
            return False

    def allocation_of(self, addr: int) -> Tuple[int, int]:
        """``(base, nbytes)`` of the live allocation containing ``addr``; DeviceError if none."""
        base, buf = self._locate(int(addr), 0)
        return base, buf.size

    def device_of(self, addr: int) -> int:
        """The device ordinal of the live allocation containing ``addr``; DeviceError if none."""
        base, _ = self._locate(int(addr), 0)
        return self._devices.get(base, 0)

    def on_device(self, device: int) -> "DeviceMemory":
        """This memory as a kernel running on simulated ``device`` sees it (``load``/``store``
        fault on other devices' allocations)."""
        return DeviceMemory(self, int(device))

    @property
    def bytes_in_use(self) -> int:
        self._drain()
        return self._bytes_in_use

    @property
    def num_allocations(self) -> int:
        self._drain()
        return len(self._buffers)

    # --- byte access -----------------------------------------------------------------------------
    def read(self, addr: int, nbytes: int) -> np.ndarray:
        """A *copy* of ``nbytes`` bytes starting at ``addr`` (uint8 array)."""
        return self.host_view(addr, nbytes).copy()

    def write(self, addr: int, data) -> None:
        """Copy ``data`` (bytes, bytearray, memoryview or any NumPy array: its raw bytes) to ``addr``."""
        if isinstance(data, np.ndarray):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            raw = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        self.host_view(addr, raw.size)[:] = raw

    def view(self, addr: int, dtype, count: int) -> np.ndarray:
        """A writable NumPy view of ``count`` elements of ``dtype`` starting at ``addr``.

        The view aliases simulated memory (writes through it are device writes). ``addr`` must be
        aligned to the element size, like on the GPU.
        """
        dt = np.dtype(dtype)
        addr = int(addr)
        if dt.itemsize > 1 and addr % dt.itemsize:
            raise DeviceError(f"misaligned access at 0x{addr:x}: {dt} needs {dt.itemsize}-byte "
                              f"alignment")
        return self.host_view(addr, int(count) * dt.itemsize).view(dt)

    def host_view(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of ``nbytes`` bytes at ``addr`` (for host-side interop such as DLPack)."""
        addr, nbytes = int(addr), int(nbytes)
        base, buf = self._locate(addr, nbytes)
        start = addr - base
        return buf[start:start + nbytes]

    # --- vectorized element access (the interpreter's hot path) -----------------------------------
    def load(self, addrs, np_dtype, mask=None, other=0, device=None) -> np.ndarray:
        """Gather elements: ``result[i] = *(np_dtype*)addrs[i]`` for every element of ``addrs``.

        ``addrs``: integer array (any shape, 0-d included) of byte addresses. ``mask``: optional
        bool array broadcastable to ``addrs``; lanes where it is False are not accessed (they may
        hold any address, even 0) and read as ``other``. Returns a new array of ``addrs.shape`` and
        ``np_dtype``. Raises DeviceError on a misaligned address or one outside every live
        allocation (freed allocations included), or, when ``device`` is given, one on another
        device.
        """
        dt = np.dtype(np_dtype)
        addrs = np.asarray(addrs, dtype=np.int64)
        flat = addrs.reshape(-1)
        if mask is None:
            return self._gather(flat, dt, device).reshape(addrs.shape)
        lanes = np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), addrs.shape))
        out = np.full(flat.size, np.asarray(other).astype(dt), dtype=dt)
        if lanes.size:
            out[lanes] = self._gather(flat[lanes], dt, device)
        return out.reshape(addrs.shape)

    def store(self, addrs, values, np_dtype, mask=None, device=None) -> None:
        """Scatter elements: ``*(np_dtype*)addrs[i] = values[i]`` where ``mask`` is True (or everywhere).

        ``values`` is broadcast to ``addrs.shape`` and converted to ``np_dtype`` (C-style cast).
        When several lanes write the same address the last one in C order wins (a GPU gives no
        such guarantee; kernels must not rely on it). Nothing is written if any unmasked lane is
        out of bounds (or, when ``device`` is given, on another device).
        """
        dt = np.dtype(np_dtype)
        addrs = np.asarray(addrs, dtype=np.int64)
        vals = np.broadcast_to(np.asarray(values).astype(dt, copy=False), addrs.shape).reshape(-1)
        flat = addrs.reshape(-1)
        if mask is None:
            self._scatter(flat, vals, dt, device)
            return
        lanes = np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), addrs.shape))
        self._scatter(flat[lanes], vals[lanes], dt, device)

    # --- internals ---------------------------------------------------------------------------------
    def _tables(self):
        """The current ``(bases, ends, buffers, devices)`` snapshot (never mutated once
        published; ``devices`` is None while every allocation is on device 0)."""
        if self._dirty or self._pending:
            with self._lock:
                self._drain_locked()
                if self._dirty:
                    bases = sorted(self._buffers)
                    order = [self._buffers[b] for b in bases]
                    ends = [b + self._buffers[b].size for b in bases]
                    devs = np.asarray([self._devices.get(b, 0) for b in bases], dtype=np.int64) \
                        if self._devices else None
                    self._snapshot = (np.asarray(bases, dtype=np.int64),
                                      np.asarray(ends, dtype=np.int64), order, devs)
                    self._dirty = False
                return self._snapshot
        return self._snapshot

    def _locate(self, addr: int, nbytes: int):
        """(base, buffer) of the live allocation holding [addr, addr + nbytes)."""
        bases, ends, order, _ = self._tables()
        i = int(np.searchsorted(bases, addr, side="right")) - 1
        if i >= 0 and addr + nbytes <= int(ends[i]):
            return int(bases[i]), order[i]
        raise DeviceError(self._describe_fault(addr, nbytes))

    def _resolve(self, addrs: np.ndarray, itemsize: int, tables):
        """Allocation index of every address in ``tables``; raises on the first bad one."""
        bases, ends = tables[0], tables[1]
        idx = np.searchsorted(bases, addrs, side="right") - 1
        safe = np.maximum(idx, 0)
        ok = (idx >= 0) & (addrs + itemsize <= ends[safe]) if bases.size else np.zeros(
            addrs.shape, dtype=bool)
        if not ok.all():
            bad = int(addrs[np.argmin(ok)])
            raise DeviceError(self._describe_fault(bad, itemsize))
        if itemsize > 1:
            mis = addrs % itemsize
            if mis.any():
                bad = int(addrs[np.argmax(mis != 0)])
                raise DeviceError(f"misaligned access at 0x{bad:x}: a {itemsize}-byte element "
                                  f"needs a {itemsize}-byte aligned address")
        return idx

    def _groups(self, addrs: np.ndarray, itemsize: int, device=None):
        """Yield (buffer, base, lane selector or None) per allocation touched by ``addrs``;
        ``device``: the device of the kernel accessing them (None: the host)."""
        tables = self._tables()
        bases, ends, order, devs = tables
        if addrs.size and bases.size:
            # common case: every address in one allocation, found from the lowest and highest
            # (an allocation is one range), on the kernel's device and aligned
            lo, hi = int(addrs.min()), int(addrs.max())
            i = int(np.searchsorted(bases, lo, side="right")) - 1
            if i >= 0 and hi + itemsize <= int(ends[i]) and \
                    (device is None or (int(devs[i]) if devs is not None else 0) == device) and \
                    (itemsize == 1 or not (addrs % itemsize).any()):
                yield order[i], int(bases[i]), None
                return
        idx = self._resolve(addrs, itemsize, tables)
        if device is not None:
            self._check_device(addrs, idx, devs, device)
        first = int(idx[0])
        if (idx == first).all():                       # common case: one allocation
            yield order[first], int(bases[first]), None
            return
        for k in np.unique(idx):
            yield order[int(k)], int(bases[int(k)]), idx == k

    @staticmethod
    def _check_device(addrs: np.ndarray, idx: np.ndarray, devs, device: int) -> None:
        on = devs[idx] if devs is not None else None
        if on is None and device == 0 or on is not None and (on == device).all():
            return
        k = 0 if on is None else int(np.argmax(on != device))
        other = 0 if on is None else int(on[k])
        raise DeviceError(f"a kernel on simulated device {device} accessed 0x{int(addrs[k]):x}, "
                          f"memory of simulated device {other}: a kernel may only access its own "
                          f"device's memory (GPUs fault here without peer access); copy the data "
                          f"first (t.to({device}))")

    def _gather(self, addrs: np.ndarray, dt: np.dtype, device=None) -> np.ndarray:
        out = np.empty(addrs.shape, dtype=dt)
        if addrs.size == 0:
            return out
        for buf, base, sel in self._groups(addrs, dt.itemsize, device):
            typed = buf[:buf.size - buf.size % dt.itemsize].view(dt)
            if sel is None:
                out[...] = typed[(addrs - base) // dt.itemsize]
            else:
                out[sel] = typed[(addrs[sel] - base) // dt.itemsize]
        return out

    def _scatter(self, addrs: np.ndarray, vals: np.ndarray, dt: np.dtype, device=None) -> None:
        if addrs.size == 0:
            return
        for buf, base, sel in self._groups(addrs, dt.itemsize, device):
            typed = buf[:buf.size - buf.size % dt.itemsize].view(dt)
            if sel is None:
                typed[(addrs - base) // dt.itemsize] = vals
            else:
                typed[(addrs[sel] - base) // dt.itemsize] = vals[sel]

    def _describe_fault(self, addr: int, nbytes: int) -> str:
        where = f"access at 0x{addr:x}"
        if addr == 0:
            return f"null pointer {where}"
        with self._lock:                   # another thread may be freeing right now
            freed = list(self._freed.items())
        for base, size in reversed(freed):
            if base <= addr < base + max(size, 1):
                return (f"use after free: {where} ({addr - base} bytes into freed allocation "
                        f"0x{base:x} of {size} bytes)")
        bases, ends = self._tables()[:2]
        i = int(np.searchsorted(bases, addr, side="right")) - 1
        if i >= 0:
            base, end = int(bases[i]), int(ends[i])
            if addr < end:     # starts inside, runs past the end
                return (f"out-of-bounds {where} ({addr + nbytes - end} bytes past allocation "
                        f"0x{base:x} of {end - base} bytes: a {nbytes}-byte access starting "
                        f"{end - addr} bytes before its end)")
            return (f"out-of-bounds {where} ({addr - end} bytes past allocation 0x{base:x} of "
                    f"{end - base} bytes)")
        if bases.size:
            return (f"out-of-bounds {where} ({int(bases[0]) - addr} bytes before allocation "
                    f"0x{int(bases[0]):x}, the lowest live one)")
        return f"out-of-bounds {where}: there is no live allocation"


class DeviceMemory:
    """:class:`SimulatedMemory` as a kernel on one simulated device sees it: ``load`` and
    ``store`` fault on memory of other devices; everything else is the shared memory's."""

    __slots__ = ("memory", "device")

    def __init__(self, memory: SimulatedMemory, device: int):
        self.memory = memory
        self.device = device

    def load(self, addrs, np_dtype, mask=None, other=0) -> np.ndarray:
        return self.memory.load(addrs, np_dtype, mask, other, self.device)

    def store(self, addrs, values, np_dtype, mask=None) -> None:
        self.memory.store(addrs, values, np_dtype, mask, self.device)

    def __getattr__(self, name):
        return getattr(self.memory, name)


#: The process-wide simulated address space used by the simulator backend.
memory = SimulatedMemory()

__all__ = ["SimulatedMemory", "DeviceMemory", "memory", "ALIGNMENT"]
