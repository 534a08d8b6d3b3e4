"""The tilejit exception hierarchy (API.md §4).

    TileJitError
    ├── DeviceError ── DriverError, ContextError, KernelCacheError, SchedulingError, LaunchError,
    │                  InternalError, DeviceMemoryError (also a MemoryError)
    ├── CompileError ─ TypingError (StaticEvalError), UnsupportedError, ToolchainError
    └── TensorError

Compile errors carry the user's source location; ``str(err)`` renders ``file:line``, the source line
and a caret so that notebooks and terminals show the problem where it is.
"""
from __future__ import annotations

import linecache
import re
import sys
from dataclasses import dataclass
from typing import Optional


class TileJitError(Exception):
    """Base class of every error tilejit raises on purpose."""

    #: a mistake in the user's code or arguments, explained by the message: notebooks (IPython)
    #: and pytest show the traceback without tilejit's own frames (tilejit.tracebacks;
    #: TILEJIT_FULL_TRACEBACK=1 keeps them)
    user_error = False


# --------------------------------------------------------------------------------------------------
# Device side
class DeviceError(TileJitError):
    """Something went wrong talking to the GPU or scheduling work on it."""


class DriverError(DeviceError):
    """A CUDA driver call failed. ``code`` is the ``CUresult`` value (an int) when known."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.code = code


class DeviceMemoryError(DeviceError, MemoryError):
    """An allocation asked for more device memory than is available: CUDA_ERROR_OUT_OF_MEMORY on
    a GPU, the simulated device's capacity (or the host's free memory) on the simulator.
    ``requested`` and ``available`` are in bytes (``available`` None when unknown); ``code`` is
    the CUresult on a GPU, as for DriverError."""

    def __init__(self, requested: int, available: Optional[int], where: str, detail: str = "",
                 code: Optional[int] = None):
        free = f"{format_size(available)} available" if available is not None else \
            "the available amount is unknown"
        super().__init__(f"cannot allocate {format_size(requested)} ({requested} bytes) on {where}: "
                         f"{free}{'; ' + detail if detail else ''}. Free tensors you no longer "
                         f"need (del t), or use smaller shapes")
        self.requested = requested
        self.available = available
        self.code = code


def format_size(n: int) -> str:
    """``1.5 GiB``: a byte count for messages."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class ContextError(DeviceError):
    """No usable CUDA context / device (bad ordinal, no driver, wrong device)."""


class KernelCacheError(DeviceError):
    """The in-memory or on-disk kernel cache could not provide a kernel."""


class SchedulingError(DeviceError):
    """A DeviceOp was executed in a way its rules forbid (re-entrant sync, allocation in a graph...)."""


class LaunchError(DeviceError):
    """A kernel launch was rejected (bad grid, argument count, missing partition...)."""


class InternalError(DeviceError):
    """A bug in tilejit. Please report it with the message."""


# --------------------------------------------------------------------------------------------------
# Compile side
def notebook_cell(filename: str) -> Optional[str]:
    """``"Cell In[7]"`` when ``filename`` is the code of an IPython/Jupyter cell (IPython names it
    after a hash of the source; its own tracebacks show the cell number instead), else None."""
    if "IPython" not in sys.modules:
        return None
    try:
        from IPython import get_ipython
        shell = get_ipython()
        n = shell.compile._filename_map.get(filename) if shell is not None else None
    except Exception:       # another IPython layout: fall back to the file name
        return None
    return f"Cell In[{n}]" if n is not None else None


@dataclass(frozen=True)
class SourceLocation:
    """A place in the user's Python source. ``col`` is 0-based and optional."""

    filename: str
    line: int
    col: Optional[int] = None
    end_col: Optional[int] = None
    function: Optional[str] = None

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.line).rstrip("\n")

    def render(self) -> str:
        """``file:line`` plus the source line and a caret under the offending code."""
        cell = notebook_cell(self.filename)
        head = f"{cell}, line {self.line}" if cell else f'File "{self.filename}", line {self.line}'
        if self.function:
            head += f", in {self.function}"
        text = self.source_line()
        if not text:
            return head
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        if self.col is not None and self.col >= indent:
            start = self.col - indent
            width = max(1, (self.end_col - self.col) if self.end_col else 1)
        else:
            start, width = 0, max(1, len(stripped))
        return f"{head}\n    {stripped}\n    {' ' * start}{'^' * width}"

    def __str__(self) -> str:
        cell = notebook_cell(self.filename)
        return f"{cell}, line {self.line}" if cell else f"{self.filename}:{self.line}"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text: str) -> str:
    """Numba highlights its messages with terminal colour codes; ours are plain text."""
    return _ANSI.sub("", text)


class CompileError(TileJitError):
    """A kernel could not be compiled. ``loc`` points at the user's code when known."""

    user_error = True

    def __init__(self, message: str, loc: Optional[SourceLocation] = None):
        message = strip_ansi(message)
        super().__init__(message)
        self.message = message
        self.loc = loc

    def _add_hint(self, text: str) -> None:
        """Append ``text`` (which starts with a newline) to the message, e.g. what the launch's
        arguments suggest about the fix."""
        if text and text not in self.message:
            self.message += text
            self.args = (self.message,) + self.args[1:]

    def __str__(self) -> str:
        if self.loc is None:
            return self.message
        return f"{self.loc}: {self.message}\n{self.loc.render()}"


class TypingError(CompileError, TypeError):
    """A kernel does not type-check (wrong dtype, shape mismatch, unknown attribute...)."""


class StaticEvalError(TypingError):
    """``static_eval(expr)`` could not compute ``expr`` at compile time."""


class UnsupportedError(CompileError):
    """A Python construct that tile kernels do not support (lists, try, closures...)."""


class ToolchainError(CompileError):
    """tileiras is missing or failed. ``command`` and ``bytecode_path`` say how to reproduce it."""

    def __init__(self, message: str, loc: Optional[SourceLocation] = None, *,
                 command: Optional[list] = None, bytecode_path: Optional[str] = None,
                 stderr: str = ""):
        super().__init__(message, loc)
        self.command = command
        self.bytecode_path = bytecode_path
        self.stderr = stderr


# --------------------------------------------------------------------------------------------------
class TensorError(TileJitError, ValueError):
    """A tensor was used in a way the ownership rules forbid, or has the wrong dtype/shape."""

    user_error = True


__all__ = [
    "TileJitError", "DeviceError", "DriverError", "ContextError", "KernelCacheError",
    "DeviceMemoryError",
    "SchedulingError", "LaunchError", "InternalError", "SourceLocation", "CompileError",
    "TypingError", "UnsupportedError", "ToolchainError", "TensorError",
]
