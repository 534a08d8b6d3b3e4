"""The optional C launch path (``tilejit._native``, sources in ``tilejit/csrc/``), and how to
tell whether it is active.

``pip install`` builds the extension when a C compiler is available; otherwise, or with
``TILEJIT_NATIVE=0``, everything runs in pure Python with the same results (the test suite runs
both ways), only slower: about 30 µs of host time per kernel call with torch tensors instead of
about 6. The first launch without the extension says so once (a RuntimeWarning).

**One set of launch rules.** Every rule of a launch is written once, in Python; the C code
*replays what Python recorded* and hands everything else back:

* keys: ``runtime.argspec`` computes every argument key; C looks them up in the shared memo
  (``argspec.array_keys``, filled through ``argspec.array_key_named`` on a miss), reads the
  sealed tuple a tensor or partition caches (``ArgInfo.seal``), and takes the keys of Python
  scalars from ``tilejit.scalars.PYTHON_SCALARS`` (``set_scalar_keys``) and, for a Python
  scalar passed to an annotated parameter (``n: tile.int32``), its plan from
  ``scalars.annotated_plans`` (``set_annotated_scalars``); any other argument is
  classified by calling ``argspec.classify``;
* packing: the slot layout and the weak-scalar range checks of a specialization are computed
  once in Python (``runtime.cuda_executable.native_layout`` / ``native_checks``); C packs by those codes,
  and a value out of range calls back into Python for NumPy's error or warning;
* objects: a ``KernelLaunch``, ``Partition`` or ``ForeignPartition`` made in C is a clone of a
  prototype made by the class's one Python constructor, with only the call's fields set;
* checks: devices, aliasing, the grid, leases and stream ordering are decided by Python; C takes
  only the case it can prove fine and otherwise gives the launch back (it never raises an error
  of its own), so messages are always Python's;
* globals: the kernel's reads (``fingerprint.global_reads``) are checked by identity in C too.

Drift is loud: :func:`stats` counts the launches C made and, per reason, the ones it gave back;
the tests launch every argument kind twice and require the second in C, compare C's and
Python's classification field by field (``Launcher.describe``) and the packed bytes through a
stub driver (``use_driver``), so the C sources run in CPU CI.

What C does, on the launch hot path: ``kernel(*args)``, ``op.grid(g)``, ``op.submit_on(s)``,
``op.sync_on(s)``, ``t.partition(tile)`` and ``tile.partition(torch_tensor or cupy_array,
tile)`` are C methods for their common case (a call passing its constants: the kernel bound to
them, from the kernel's ``_bindings`` memo); ``Launcher.launch`` classifies, checks, finds the
executable (remembering the last lookup), orders storages on the stream, packs and calls
``cuLaunchKernel``; ``Prepared.launch`` replays a launch packed once; ``ct.launch``
(``tilejit.cutile``) replays its kernel's memos (csrc/cutile.c) and then makes the same lazy
call. The runtime classes are read by ``__slots__`` offset (``set_layout``): a class that
changes shape turns these paths off instead of misreading.
"""
from __future__ import annotations

import warnings

from . import envvars

try:
    from . import _native as _ext
except ImportError as _e:         # not built (no compiler at install time)
    _ext = None
    _IMPORT_ERROR = str(_e)
else:
    _IMPORT_ERROR = ""

COST = "about 30 µs of host time per kernel call with torch tensors instead of about 6"
BUILD_HINT = ("install a C compiler (e.g. `apt install gcc` or `conda install gcc`) and reinstall "
              "tilejit (`pip install --force-reinstall --no-deps tilejit`, or `pip install -e .` "
              "in a checkout)")

_enabled = None
#: True until the first launch without the extension has warned (KernelLaunch._execute reads it)
missing = True


def enabled() -> bool:
    """Whether the C launch path is used (built, and not disabled with ``TILEJIT_NATIVE=0``).
    Decided once per process, at the first call (a kernel's first launch), which also gives the C
    side its scalar plans."""
    global _enabled, missing
    if _enabled is None:
        wanted = _wanted()
        if _ext is not None and wanted:
            # the scalar plans need NumPy: set up here, not at import (tilejit.cutile's import
            # takes ct_entry() only)
            from .scalars import PYTHON_SCALARS as _PY, annotated_plans as _plans
            _ext.set_scalar_keys(_PY[int][0], _PY[float][0], _PY[bool][0])
            _ext.set_annotated_scalars(_plans())
        _enabled = _ext is not None and wanted
        missing = _ext is None and wanted
    return _enabled


def _wanted() -> bool:
    return envvars.flag("TILEJIT_NATIVE", True)


def ct_entry(fallback):
    """``ct.launch``: the C entry over ``fallback`` (its Python path) when the C path is built and
    wanted, else ``fallback``. Cheap (nothing of the launch side is set up): the entry replays
    only the plans Python records once the C path is installed, and hands everything else to
    ``fallback``."""
    return _ext.set_ct_fallback(fallback) if _ext is not None and _wanted() else fallback


def warn_missing() -> None:
    """Warn once that the C launch path is not built (called by the first Python launch)."""
    global missing
    if not missing:
        return
    missing = False
    warnings.warn(f"tilejit's C launch path is not built ({_IMPORT_ERROR}); kernel launches run "
                  f"in pure Python: {COST}. To build it, {BUILD_HINT}. Set TILEJIT_NATIVE=0 to "
                  f"choose the pure-Python path and silence this warning",
                  RuntimeWarning, stacklevel=3)


def status() -> str:
    """One line for ``python -m tilejit info``."""
    if _ext is None:
        return (f"pure Python (the C extension is not built: {_IMPORT_ERROR}; {COST}; to build "
                f"it, {BUILD_HINT})")
    if not enabled():
        return "pure Python (TILEJIT_NATIVE=0)"
    return f"native C extension ({_ext.__file__})"


def ext():
    """The extension module when enabled, else None."""
    return _ext if enabled() else None


def stats() -> dict:
    """``{"launches": n, "fallbacks": {reason: count}}``: the launches the C launcher made since
    the last :func:`reset_stats`, and those it gave back to Python, by reason (empty without
    the extension)."""
    e = ext()
    return e.stats() if e is not None else {"launches": 0, "fallbacks": {}}


def not_plain() -> None:
    """Count in :func:`stats` a launch that takes the general path because it binds more than
    its constants (generics, compile options, a baked grid) or cannot be bound."""
    e = ext()
    if e is not None:
        e.not_plain()


def reset_stats() -> None:
    """Zero :func:`stats`."""
    e = ext()
    if e is not None:
        e.reset_stats()


__all__ = ["enabled", "status", "ext", "stats", "reset_stats", "warn_missing"]
