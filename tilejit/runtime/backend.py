"""Backend selection (contract C3): ``"cuda"`` or ``"simulator"``.

:func:`choose` decides from explicit inputs (testable); :func:`current` applies it to this process
once and caches the answer. When the simulator is chosen a one-line notice goes to stderr, once.
:func:`force` overrides the choice temporarily (tests, notebooks).

:func:`sim_devices` is the simulator's device count: ``TILEJIT_SIM_DEVICES`` (default 1), read once
like the backend, so multi-device code runs in CPU CI with the same rules as on several GPUs.
:func:`sim_current` is the calling thread's current simulated device (0 until
``tile.Device(n).make_current()`` or ``with tile.Device(n).current():`` changes it), the
simulator's counterpart of the thread's current CUDA context.
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Optional, Tuple

from .. import envvars

CUDA = "cuda"
SIMULATOR = "simulator"

_lock = threading.Lock()
_current: Optional[str] = None
_reason: str = ""
_forced: list = []          # stack of forced (backend, simulated device count or None)
_sim_devices: Optional[int] = None
_notice_printed = False
_sim_thread = threading.local()     # .ordinal: the thread's current simulated device


def choose(simulate_env: Optional[str], driver_ok: bool, device_count: int) -> Tuple[str, str]:
    """``(backend, reason)`` from the value of ``TILEJIT_SIMULATE``, driver health and GPU count.

    ``TILEJIT_SIMULATE=1`` (also ``true``/``yes``/``on``) forces the simulator; ``0`` or unset uses
    CUDA when a driver and at least one device exist; any other value is an error.
    """
    if envvars.parse_flag("TILEJIT_SIMULATE", simulate_env):
        return SIMULATOR, "TILEJIT_SIMULATE=1"
    if not driver_ok:
        return SIMULATOR, "no CUDA driver found"
    if device_count <= 0:
        return SIMULATOR, "no CUDA device found"
    return CUDA, "CUDA device found"


def _detect() -> Tuple[str, str]:
    env = envvars.raw("TILEJIT_SIMULATE")
    if envvars.get("TILEJIT_SIMULATE"):
        return choose(env, False, 0)        # never touch the driver when told to simulate
    from . import driver
    ok = driver.driver_available()
    return choose(env, ok, driver.device_count() if ok else 0)


def current() -> str:
    """The active backend, ``"cuda"`` or ``"simulator"`` (decided once, then cached)."""
    if _forced:
        return _forced[-1][0]
    global _current, _reason
    if _current is None:
        with _lock:
            if _current is None:
                backend, reason = _detect()
                _reason = reason
                _current = backend
                if backend == SIMULATOR:
                    _print_notice(reason)
    return _current


def is_simulator() -> bool:
    return current() == SIMULATOR


def sim_devices() -> int:
    """How many devices the simulator backend has: ``TILEJIT_SIM_DEVICES`` (default 1; a bad
    value raises ``EnvironmentVariableError`` each time it is asked), or what :func:`force` set."""
    for _, n in reversed(_forced):
        if n is not None:
            return n
    global _sim_devices
    if _sim_devices is None:
        _sim_devices = envvars.sim_devices()
    return _sim_devices


def sim_current() -> int:
    """The calling thread's current simulated device (0 in a thread that never set one)."""
    return getattr(_sim_thread, "ordinal", 0)


def set_sim_current(ordinal: int) -> None:
    """Make ``ordinal`` the calling thread's current simulated device (``Device.make_current``)."""
    _sim_thread.ordinal = ordinal


def reason() -> str:
    """Why :func:`current` chose its backend (for ``python -m tilejit info``)."""
    current()
    return _reason if not _forced else "forced by tilejit.runtime.backend.force()"


def _print_notice(reason: str) -> None:
    global _notice_printed
    if _notice_printed:
        return
    _notice_printed = True
    print(f"tilejit: {reason}; running on the CPU simulator (slow; set up a GPU for real runs)",
          file=sys.stderr)


@contextlib.contextmanager
def force(backend: str, sim_devices: Optional[int] = None):
    """Run a block with ``backend`` active, whatever the machine has (tests, debugging);
    ``sim_devices``: the simulator's device count meanwhile (as ``TILEJIT_SIM_DEVICES``).
    The calling thread's current simulated device is restored afterwards."""
    if backend not in (CUDA, SIMULATOR):
        raise ValueError(f"unknown backend {backend!r}; expected 'cuda' or 'simulator'")
    if sim_devices is not None:
        if backend != SIMULATOR:
            raise ValueError("sim_devices is the simulator's device count; force('simulator', "
                             "sim_devices=n)")
        if isinstance(sim_devices, bool) or not isinstance(sim_devices, int) or sim_devices < 1:
            raise ValueError(f"sim_devices must be an int >= 1, got {sim_devices!r}")
    _forced.append((backend, sim_devices))
    current_sim = sim_current()
    try:
        yield backend
    finally:
        _forced.pop()
        set_sim_current(current_sim)


def _reset_for_tests() -> None:
    global _current, _reason, _notice_printed, _sim_devices
    with _lock:
        _current = None
        _sim_devices = None
        _reason = ""
        _notice_printed = False


__all__ = ["CUDA", "SIMULATOR", "choose", "current", "is_simulator", "reason", "force",
           "sim_devices", "sim_current", "set_sim_current"]
