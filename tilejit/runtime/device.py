"""``tile.Device``: one GPU (its primary CUDA context), or the simulated device of the simulator backend.

``Device(n)`` returns the same object every time (per backend). Attributes never synchronize.
On the simulator backend the devices report the architecture in ``TILEJIT_ARCH`` (default
``sm_90``) so that compile keys and AOT builds stay meaningful without a GPU; there are
``TILEJIT_SIM_DEVICES`` of them (default 1), with the rules of several GPUs: memory, streams and
loaded kernels belong to one device, and a launch refuses arrays of another.

The default device (where an op with no device of its own runs: ``api.zeros(...).sync()``, a
launch with only NumPy arguments) is the calling thread's current device, as in CuPy and the CUDA
runtime: :func:`current_ordinal`. On a GPU that is the device of the thread's current CUDA
context (``torch.cuda.set_device``, ``cudaSetDevice``, ``with cupy.cuda.Device(n):``), 0 without
one; on the simulator a per-thread ordinal that ``make_current()`` and ``with dev.current():``
set, 0 by default.
"""
from __future__ import annotations

import os
import re
import threading
from typing import Dict, Optional, Tuple

from .. import envvars
from ..errors import ContextError
from . import backend as _backend
from . import driver as _d

_DEFAULT_ARCH = "sm_90"


def parse_arch(arch: str) -> Tuple[int, int]:
    """``"sm_90"`` -> ``(9, 0)``, ``"sm_100a"`` -> ``(10, 0)``, ``"sm_120"`` -> ``(12, 0)``."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(\d)[af]?", arch.strip().lower())
    if not m:
        raise ValueError(f"cannot parse GPU architecture {arch!r}; expected a name like 'sm_90'")
    return int(m.group(1)), int(m.group(2))


def default_arch() -> str:
    """The target architecture when none is given: the current GPU's, else ``TILEJIT_ARCH``,
    else sm_90."""
    if _backend.current() == _backend.CUDA:
        return Device(current_ordinal()).arch
    return _env_arch()


#: primary contexts tilejit retains (int handle -> ordinal): retained until exit, so a handle is
#: never reused by another device's context and the answer never goes stale
_primary_ordinals: Dict[int, int] = {}


def current_ordinal() -> int:
    """The calling thread's current device, the default device of every op with no device of its
    own: on a GPU the device of the thread's current CUDA context (0 when it has none, as a new
    thread does); on the simulator the thread's current simulated device (0 unless
    ``Device(n).make_current()`` or ``with Device(n).current():`` set it).

    One ``cuCtxGetCurrent`` on a GPU when the context is a device's primary context (what torch,
    CuPy and the runtime make current); another context costs a ``cuCtxGetDevice`` too.
    """
    if _backend.current() == _backend.SIMULATOR:
        return _backend.sim_current()
    drv = _d.drv
    try:
        err, ctx = drv.cuCtxGetCurrent()
        if err != _d.SUCCESS:
            return 0
        handle = int(ctx)
        if not handle:
            return 0                     # no current context: a new thread
        ordinal = _primary_ordinals.get(handle)
        if ordinal is None:              # a context tilejit did not retain (cuCtxCreate, ...)
            err, dev = drv.cuCtxGetDevice()
            if err != _d.SUCCESS:
                return 0
            ordinal = int(dev)
        return ordinal
    except Exception:                    # no driver (backend.force("cuda") in tests)
        return 0


def current_device() -> "Device":
    """``tile.current_device()``: the calling thread's current device as a ``tile.Device``
    (:func:`current_ordinal`), where ops with no device of their own run."""
    return Device(current_ordinal())


def _env_arch() -> str:
    arch = envvars.get("TILEJIT_ARCH") or _DEFAULT_ARCH
    major, minor = parse_arch(arch)
    return f"sm_{major}{minor}"


class Device:
    """A GPU (ordinal) and its primary context; on the simulator, the simulated device.
    ``Device()`` with no ordinal is the calling thread's current device (:func:`current_ordinal`).

    ``name``, ``compute_capability`` (e.g. ``(9, 0)``), ``arch`` (``"sm_90"``),
    ``multiprocessor_count``, ``total_memory``, ``properties`` (a dict of common attributes),
    ``attribute(name)`` for any ``CU_DEVICE_ATTRIBUTE_*``, ``new_stream()``, ``synchronize()``.
    """

    _cache: Dict[Tuple[str, int], "Device"] = {}
    _cache_lock = threading.Lock()

    def __new__(cls, ordinal: Optional[int] = None):
        if isinstance(ordinal, Device):
            return ordinal
        ordinal = current_ordinal() if ordinal is None else int(ordinal)
        be = _backend.current()
        key = (be, ordinal)
        dev = cls._cache.get(key)
        if dev is not None:
            if ordinal and dev.is_simulated:    # the count may have shrunk (backend.force)
                _check_simulated_ordinal(ordinal)
            return dev
        with cls._cache_lock:
            dev = cls._cache.get(key)
            if dev is None:
                dev = object.__new__(cls)
                dev._setup(ordinal, be, ctx=None)
                cls._cache[key] = dev
        return dev

    def __init__(self, ordinal: Optional[int] = None):
        pass  # all state is set once, in _setup (instances are cached)

    # --- construction ------------------------------------------------------------------------------
    def _setup(self, ordinal: int, be: str, ctx) -> None:
        self.ordinal = ordinal
        self.backend = be
        self.is_simulated = be == _backend.SIMULATOR
        # Re-entrant: a free finalizer, run by a collection inside new_stream, may need the stream.
        self._streams_lock = threading.RLock()
        self._internal_stream = None
        self._attr_cache: Dict[str, int] = {}
        self._pool_ready = False
        if self.is_simulated:
            _check_simulated_ordinal(ordinal)
            self._cu_dev = None
            self._ctx = None
            self._arch = _env_arch()
            self.name = f"tilejit CPU simulator ({self._arch})"
            return
        _d.init()
        count = _d.device_count()
        if not 0 <= ordinal < count:
            raise ContextError(f"CUDA device {ordinal} does not exist: this machine has {count} "
                               f"CUDA device(s) (valid ordinals: 0..{count - 1})")
        drv = _d.drv
        self._cu_dev = _d.check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
        if ctx is None:
            self._ctx = _d.check(drv.cuDevicePrimaryCtxRetain(self._cu_dev),
                                 "cuDevicePrimaryCtxRetain")
            _primary_ordinals[int(self._ctx)] = ordinal
        else:
            self._ctx = ctx
        raw = _d.check(drv.cuDeviceGetName(256, self._cu_dev), "cuDeviceGetName")
        self.name = raw.split(b"\0", 1)[0].decode(errors="replace")
        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        self._arch = f"sm_{major}{minor}"

    @staticmethod
    def count() -> int:
        """Number of devices of the active backend (the simulator's: ``TILEJIT_SIM_DEVICES``)."""
        if _backend.current() == _backend.SIMULATOR:
            return _backend.sim_devices()
        return _d.device_count()

    @classmethod
    def borrow_raw(cls, ctx, ordinal: Optional[int] = None) -> "Device":
        """Wrap a CUDA context owned by someone else (an int handle or a ``CUcontext``).

        The context is made current when tilejit runs work on this device and is never destroyed
        or released by tilejit. ``ordinal`` is looked up from the context when not given (on the
        simulator, which has no contexts: ``Device(ordinal)``, the current device by default).
        """
        if _backend.current() == _backend.SIMULATOR:
            return Device(ordinal)
        _d.init()
        drv = _d.drv
        cu_ctx = ctx if isinstance(ctx, drv.CUcontext) else drv.CUcontext(int(ctx))
        if ordinal is None:
            ordinal = _ctx_device_ordinal(cu_ctx)
        dev = object.__new__(cls)
        dev._setup(int(ordinal), _backend.CUDA, ctx=cu_ctx)
        return dev

    # --- properties --------------------------------------------------------------------------------
    @property
    def arch(self) -> str:
        """``"sm_90"`` on an H100/H200."""
        return self._arch

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return parse_arch(self._arch)

    def attribute(self, name: str) -> int:
        """A ``CU_DEVICE_ATTRIBUTE_<name>`` value, e.g. ``attribute("MULTIPROCESSOR_COUNT")``."""
        key = name.upper()
        if key.startswith("CU_DEVICE_ATTRIBUTE_"):
            key = key[len("CU_DEVICE_ATTRIBUTE_"):]
        val = self._attr_cache.get(key)
        if val is not None:
            return val
        if self.is_simulated:
            val = _SIMULATED_ATTRIBUTES.get(key)
            if val is None:
                major, minor = self.compute_capability
                val = {"COMPUTE_CAPABILITY_MAJOR": major, "COMPUTE_CAPABILITY_MINOR": minor}.get(key)
            if val is None:
                raise ContextError(f"device attribute {name!r} is not simulated; known: "
                                   f"{sorted(_SIMULATED_ATTRIBUTES)}")
        else:
            enum = getattr(_d.drv.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + key, None)
            if enum is None:
                raise ValueError(f"unknown device attribute {name!r}")
            val = int(_d.check(_d.drv.cuDeviceGetAttribute(enum, self._cu_dev),
                               f"cuDeviceGetAttribute({key})"))
        self._attr_cache[key] = val
        return val

    @property
    def multiprocessor_count(self) -> int:
        return self.attribute("MULTIPROCESSOR_COUNT")

    @property
    def total_memory(self) -> int:
        """Device memory in bytes (the simulator reports 16 GiB)."""
        if self.is_simulated:
            return 16 << 30
        return int(_d.check(_d.drv.cuDeviceTotalMem(self._cu_dev), "cuDeviceTotalMem"))

    @property
    def properties(self) -> dict:
        """Common attributes as a dict (names in lower case)."""
        out = {"name": self.name, "arch": self.arch, "compute_capability": self.compute_capability,
               "total_memory": self.total_memory}
        for key in _COMMON_ATTRIBUTES:
            try:
                out[key.lower()] = self.attribute(key)
            except Exception:
                pass
        return out

    @property
    def device_id(self) -> int:
        return self.ordinal

    # --- context and streams -----------------------------------------------------------------------
    def make_current(self) -> None:
        """Make this device the calling thread's current device: its context on a GPU (as
        ``cudaSetDevice`` does), the thread's simulated device on the simulator. Ops with no
        device of their own then run here. ``with device.current():`` does it for a block."""
        if self.is_simulated:
            _backend.set_sim_current(self.ordinal)
        elif self._ctx is not None:
            _d.check(_d.drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")

    def current(self):
        """``with device.current():`` runs the block with this device current (its context on a
        GPU, the thread's simulated device on the simulator) and restores the calling thread's
        previous current device afterwards."""
        if self.is_simulated:
            return _sim_context(self.ordinal)
        return _d.context(self._ctx)

    def new_stream(self, priority: int = 0):
        """A new stream owned by tilejit (non-blocking w.r.t. the legacy default stream)."""
        from .stream import Stream
        return Stream._create(self, priority)

    def internal_stream(self):
        """A tilejit-owned stream for bookkeeping work (DLPack imports, reads for ``repr``)."""
        if self._internal_stream is None:
            with self._streams_lock:
                if self._internal_stream is None:
                    s = self.new_stream()
                    if self._internal_stream is None:      # a nested call may have made one
                        self._internal_stream = s
        return self._internal_stream

    def synchronize(self) -> None:
        """Wait for all work on this device (every stream)."""
        if self.is_simulated:
            return
        from .stream import synchronize_device
        synchronize_device(self)

    @property
    def context_handle(self) -> int:
        """The raw CUcontext as an int (0 on the simulator)."""
        return int(self._ctx) if self._ctx is not None else 0

    @property
    def label(self) -> str:
        """``cuda:N`` or ``sim:N`` (the simulator's devices), as reprs show it."""
        return f"{'sim' if self.is_simulated else 'cuda'}:{self.ordinal}"

    def __repr__(self) -> str:
        return f"<tilejit.Device {self.label} {self.name!r} {self.arch}>"

    def __reduce__(self):
        return (Device, (self.ordinal,))


class _sim_context:
    """``with Device(n).current():`` on the simulator: the thread's current simulated device is
    ``n`` for the block, then what it was."""

    __slots__ = ("ordinal", "prev")

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.prev = None

    def __enter__(self):
        self.prev = _backend.sim_current()
        _backend.set_sim_current(self.ordinal)
        return self

    def __exit__(self, *exc):
        prev, self.prev = self.prev, None
        if prev is not None:
            _backend.set_sim_current(prev)
        return False


def _check_simulated_ordinal(ordinal: int) -> None:
    n = _backend.sim_devices()
    if not 0 <= ordinal < n:
        fix = (f"set TILEJIT_SIM_DEVICES={ordinal + 1} before the first use of tilejit for more"
               if ordinal > 0 else "ordinals start at 0")
        raise ContextError(f"simulated device {ordinal} does not exist: the simulator has {n} "
                           f"device(s) (TILEJIT_SIM_DEVICES={n}; valid ordinals: 0..{n - 1}); "
                           f"{fix}")


def _ctx_device_ordinal(cu_ctx) -> int:
    drv = _d.drv
    fn = getattr(drv, "cuCtxGetDevice_v2", None)
    if fn is not None:
        try:
            return int(_d.check(fn(cu_ctx), "cuCtxGetDevice_v2"))
        except Exception:
            pass
    _d.check(drv.cuCtxPushCurrent(cu_ctx), "cuCtxPushCurrent")
    try:
        return int(_d.check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
    finally:
        _d.check(drv.cuCtxPopCurrent(), "cuCtxPopCurrent")


_COMMON_ATTRIBUTES = (
    "MULTIPROCESSOR_COUNT", "WARP_SIZE", "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "L2_CACHE_SIZE",
    "MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z", "CLOCK_RATE", "MEMORY_CLOCK_RATE",
    "GLOBAL_MEMORY_BUS_WIDTH", "CLUSTER_LAUNCH", "MEMORY_POOLS_SUPPORTED",
)

_SIMULATED_ATTRIBUTES = {
    "MULTIPROCESSOR_COUNT": max(1, os.cpu_count() or 1),
    "WARP_SIZE": 32,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
    "L2_CACHE_SIZE": 50 * 1024 * 1024,
    "MAX_GRID_DIM_X": 2**31 - 1,
    "MAX_GRID_DIM_Y": 65535,
    "MAX_GRID_DIM_Z": 65535,
    "MEMORY_POOLS_SUPPORTED": 1,
}

__all__ = ["Device", "current_device", "current_ordinal", "default_arch", "parse_arch"]
