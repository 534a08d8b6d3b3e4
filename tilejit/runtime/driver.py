"""A thin wrapper over ``cuda.bindings.driver`` (cuda-python >= 13).

* :func:`check` turns the ``(CUresult, *outputs)`` tuples of cuda-bindings into return values or a
  :class:`tilejit.DriverError` carrying the error's name and description.
* ``cuInit`` runs lazily, once, on first use (:func:`init`).
* Importing this module never fails: without a CUDA driver (``libcuda`` missing) cuda-bindings still
  imports but every call raises; :func:`driver_available` then returns False and :func:`init`
  raises :class:`tilejit.ContextError` saying how to get a driver or use the simulator.

Use ``drv`` (the ``cuda.bindings.driver`` module, or None when cuda-bindings is not installed) for
calls that have no wrapper here.
"""
from __future__ import annotations

import threading
from typing import Optional

from ..errors import ContextError, DriverError

try:  # cuda-bindings imports without a driver; only calls fail
    from cuda.bindings import driver as drv
except Exception as _exc:  # pragma: no cover - cuda-bindings is a hard dependency
    drv = None
    _IMPORT_ERROR: Optional[BaseException] = _exc
else:
    _IMPORT_ERROR = None

SUCCESS = drv.CUresult.CUDA_SUCCESS if drv is not None else 0

_init_lock = threading.Lock()
_init_done = False
_init_error: Optional[BaseException] = None


def error_text(code) -> str:
    """``"CUDA_ERROR_OUT_OF_MEMORY (out of memory)"`` for a CUresult (best effort, never raises)."""
    name = getattr(code, "name", None) or f"CUresult {int(code)}"
    desc = ""
    if drv is not None:
        try:
            err, s = drv.cuGetErrorString(code)
            if err == SUCCESS and s:
                desc = s.decode() if isinstance(s, bytes) else str(s)
        except Exception:
            pass
    return f"{name} ({desc})" if desc else name


def check(ret, what: str = ""):
    """Unpack a cuda-bindings result tuple; raise DriverError on a non-success CUresult.

    Returns None for calls with no outputs, the output for one, a tuple for several.
    ``what`` names the operation for the message (default: nothing).
    """
    err = ret[0]
    if err != SUCCESS:
        raise _driver_error(err, what)
    n = len(ret)
    if n == 1:
        return None
    if n == 2:
        return ret[1]
    return ret[1:]


def _driver_error(err, what: str) -> DriverError:
    text = error_text(err)
    msg = f"{what} failed: {text}" if what else f"CUDA driver call failed: {text}"
    name = getattr(err, "name", "")
    if name == "CUDA_ERROR_OUT_OF_MEMORY":
        msg += "; free tensors you no longer need (del t) or use smaller shapes"
    elif name == "CUDA_ERROR_LAUNCH_FAILED":
        # a failed tile.assert_ traps and ends here too (seen on an H100: its lines print first)
        msg += ("; a kernel stopped: a failed tile.assert_ (its message is printed above) or an "
                "invalid memory access. The CUDA context is now unusable: restart the process. "
                "Run with TILEJIT_SIMULATE=1 to get the failing block and elements, or the "
                "faulting address")
    elif name in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS"):
        msg += ("; a kernel accessed invalid memory. The CUDA context is now unusable: restart "
                "the process. Run with TILEJIT_SIMULATE=1 to get the faulting address")
    return DriverError(msg, code=int(err))


class context:
    """``with context(ctx):`` makes ``ctx`` (a CUcontext) current for the block and gives the
    calling thread its previous context back afterwards, so work tilejit does never changes the
    current device of the caller (PyTorch and the CUDA runtime read it)."""

    __slots__ = ("ctx", "prev")

    def __init__(self, ctx):
        self.ctx = ctx
        self.prev = None

    def __enter__(self):
        ctx = self.ctx
        if ctx is None:
            return self
        err, cur = drv.cuCtxGetCurrent()
        if err == SUCCESS and int(cur) == int(ctx):
            return self
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self.prev = cur if err == SUCCESS else None
        return self

    def __exit__(self, *exc):
        prev, self.prev = self.prev, None
        if prev is not None:
            drv.cuCtxSetCurrent(prev)
        return False


def init() -> None:
    """Run ``cuInit(0)`` once. Raises ContextError (with the reason) when there is no usable driver."""
    global _init_done, _init_error
    if _init_done:
        return
    with _init_lock:
        if _init_done:
            return
        if _init_error is None:
            _init_error = _try_init()
        if _init_error is not None:
            raise ContextError(f"no usable CUDA driver: {_init_error}. Install the NVIDIA driver, "
                               f"or set TILEJIT_SIMULATE=1 to run on the CPU simulator") \
                from _init_error
        _init_done = True


def _try_init() -> Optional[BaseException]:
    if drv is None:
        return _IMPORT_ERROR or ImportError("cuda.bindings is not installed")
    try:
        check(drv.cuInit(0), "cuInit")
    except DriverError as e:
        return e
    except Exception as e:  # DynamicLibNotFoundError (no libcuda), OSError ...
        return e
    return None


def driver_available() -> bool:
    """True when libcuda loads and ``cuInit`` succeeds (there may still be zero devices)."""
    try:
        init()
        return True
    except ContextError:
        return False


def device_count() -> int:
    """Number of CUDA devices (0 without a driver)."""
    if not driver_available():
        return 0
    return int(check(drv.cuDeviceGetCount(), "cuDeviceGetCount"))


def driver_version() -> Optional[tuple]:
    """``(major, minor)`` of the installed driver's CUDA version, or None without a driver."""
    if not driver_available():
        return None
    v = int(check(drv.cuDriverGetVersion(), "cuDriverGetVersion"))
    return (v // 1000, (v % 1000) // 10)


def _reset_for_tests() -> None:
    """Forget the cached cuInit outcome (tests only)."""
    global _init_done, _init_error
    with _init_lock:
        _init_done = False
        _init_error = None


__all__ = ["drv", "SUCCESS", "check", "init", "driver_available", "device_count",
           "driver_version", "error_text"]
