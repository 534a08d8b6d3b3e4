"""Tracebacks of user errors that stop at the user's call (issue 23).

An error that is the user's (``TileJitError.user_error``: compile errors, ``TensorError``, the
simulator's index and assertion errors) is explained by its message; tilejit's own frames above
it only bury that message, in notebooks especially. So:

* IPython and Jupyter call an exception's ``_render_traceback_()`` to get the lines they show;
  tilejit's errors answer with IPython's own formatting of the traceback *without* tilejit's
  frames (:func:`install` puts the method on ``TileJitError``; ``errors`` stays free of
  imports);
* pytest hides the frames of every module whose ``__tracebackhide__`` is
  :func:`hide_frames_of_user_errors`, and that function says yes for user errors;
* plain scripts print an uncaught exception through ``sys.excepthook``: :func:`install` wraps
  the hook in place at import, to print a user error's traceback without tilejit's frames and
  pass everything else on unchanged.

``TILEJIT_FULL_TRACEBACK=1`` keeps every frame in all three.
"""
from __future__ import annotations

import sys
import types

from .envvars import flag
from .errors import TileJitError


def full_traceback() -> bool:
    """TILEJIT_FULL_TRACEBACK=1: keep tilejit's frames in tracebacks of user errors."""
    return flag("TILEJIT_FULL_TRACEBACK")


def _is_tilejit_frame(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "tilejit" or name.startswith("tilejit.")


def user_traceback(tb):
    """The traceback ``tb`` without tilejit's frames: from the user's call straight to the
    error (new traceback objects; ``tb`` is not changed). None when every frame is tilejit's."""
    kept = []
    while tb is not None:
        if not _is_tilejit_frame(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def ipython_traceback(exc) -> list:
    """The structured traceback IPython shows for ``exc``: its own formatting, of the user's
    frames only when ``exc`` is a user error."""
    from IPython import get_ipython
    shell = get_ipython()
    tb = exc.__traceback__
    if exc.user_error and not full_traceback():
        tb = user_traceback(tb) or tb
    if shell is None:                   # IPython without a shell: the plain formatter
        import traceback
        return traceback.format_exception(type(exc), exc, tb)
    return shell.InteractiveTB.structured_traceback(type(exc), exc, tb)


def hide_frames_of_user_errors(excinfo) -> bool:
    """pytest's ``__tracebackhide__`` hook (set at module level in the modules a user error
    passes through): hide those frames when the error is the user's."""
    exc = getattr(excinfo, "value", None)
    return bool(getattr(exc, "user_error", False)) and not full_traceback()


def _keep_every_frame() -> bool:
    try:
        return full_traceback()
    except Exception:  # noqa: BLE001  (a bad TILEJIT_FULL_TRACEBACK must not hide the error)
        return False


def _script_hook(previous):
    def tilejit_excepthook(tp, value, tb):
        if isinstance(value, TileJitError) and value.user_error and not _keep_every_frame():
            tb = user_traceback(tb) or tb
            value = value.with_traceback(tb)     # Python's hook prints the value's own
        previous(tp, value, tb)
    tilejit_excepthook.previous = previous
    return tilejit_excepthook


def install() -> None:
    """IPython's ``_render_traceback_`` hook on every tilejit error, and the scripts' one
    (``sys.excepthook``, wrapped once whatever it was)."""
    TileJitError._render_traceback_ = ipython_traceback
    if getattr(sys.excepthook, "__name__", "") != "tilejit_excepthook":
        sys.excepthook = _script_hook(sys.excepthook)


install()

__all__ = ["user_traceback", "ipython_traceback", "hide_frames_of_user_errors", "full_traceback"]
