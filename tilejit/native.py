"""The optional C launch path (``tilejit._native``), and how to tell whether it is active.

``pip install`` builds the extension from ``tilejit/_native.c`` when a C compiler is available;
otherwise, or with ``TILEJIT_NATIVE=0``, everything runs in pure Python with the same results
(the test suite runs both ways). What it does, all on the launch hot path:

* ``launch(function, context, grid, stream, layout, params)``: pack the parameter values into a
  stack buffer and call ``cuLaunchKernel`` (making the kernel's context current if it is not),
  with no Python objects in between; thread-safe by construction.
* ``Launcher(...)`` (made by the dispatcher): a kernel's plain launches (no constants, no launch
  options) from classification to launch in C. It handles the common arguments itself (tilejit
  tensors and partitions, torch tensors and ``tile.partition(torch_tensor, tile)`` read through
  DLPack's C exchange API, Python scalars), calls ``argspec.classify`` for the others (CuPy,
  ``__cuda_array_interface__``, DLPack), and gives up (returns False) on anything unusual — a
  cache miss, a possible alias, a grid mismatch, NumPy arguments, a graph capture — so the
  Python path does that launch and reports any error with its usual message.
* ``kernel(*args)``, ``op.submit_on(s)``, ``op.sync_on(s)``, ``t.partition(tile)`` and
  ``tile.partition(torch_tensor, tile)`` are C methods for their common case; the Python
  methods they replace stay their fallback. The C code reads the runtime classes' ``__slots__``
  by offset (``set_layout``, called by the dispatcher): a class that changes shape turns these
  paths off instead of misreading it.
"""
from __future__ import annotations

from . import envvars

try:
    from . import _native as _ext
except ImportError as _e:         # not built (no compiler at install time)
    _ext = None
    _IMPORT_ERROR = str(_e)
else:
    _IMPORT_ERROR = ""
    from .scalars import PYTHON_SCALARS as _PY
    _ext.set_scalar_keys(_PY[int][0], _PY[float][0], _PY[bool][0])


_enabled = None


def enabled() -> bool:
    """Whether the C launch path is used (built, and not disabled with ``TILEJIT_NATIVE=0``).
    Decided once per process: the C methods are installed when tilejit is imported."""
    global _enabled
    if _enabled is None:
        _enabled = _ext is not None and envvars.flag("TILEJIT_NATIVE", True)
    return _enabled


def status() -> str:
    """One line for ``python -m tilejit info``."""
    if _ext is None:
        return f"pure Python (the C extension is not built: {_IMPORT_ERROR})"
    if not enabled():
        return "pure Python (TILEJIT_NATIVE=0)"
    return f"native C extension ({_ext.__file__})"


def ext():
    """The extension module when enabled, else None."""
    return _ext if enabled() else None


__all__ = ["enabled", "status", "ext"]
