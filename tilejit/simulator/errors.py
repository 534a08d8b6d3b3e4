"""Errors raised by the Tile IR interpreter.

Every failure while running a kernel on the simulator is a :class:`SimulatorError` (a
:class:`tilejit.DeviceError`, like a failed launch on a GPU) whose message names the op, the tile
block and, when the op carries one, the user's source line.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..errors import DeviceError


class SimulatorError(DeviceError):
    """A kernel failed on the CPU simulator. ``op`` is the op's name, ``block`` the tile block."""

    def __init__(self, message: str, *, op: Optional[str] = None,
                 block: Optional[Tuple[int, int, int]] = None, kernel: Optional[str] = None,
                 loc=None):
        self.detail = message
        self.op = op
        self.block = block
        self.kernel = kernel
        self.loc = loc
        super().__init__(_render(message, op, block, kernel, loc))


class SimulatorMemoryError(SimulatorError):
    """A load, store or atomic touched an address outside every live allocation (or misaligned)."""


class DeviceAssertionError(SimulatorError):
    """An ``assert`` op found a false element. ``message`` is the kernel's message."""

    def __init__(self, message: str, *, indices: Sequence[Tuple[int, ...]] = (), count: int = 0,
                 **kw):
        self.message = message
        self.indices = [tuple(i) for i in indices]
        self.count = count
        where = ""
        if self.indices:
            shown = ", ".join(str(list(i)) for i in self.indices)
            more = f" and {count - len(self.indices)} more" if count > len(self.indices) else ""
            where = f" (false at element {shown}{more} of the condition tile)"
        super().__init__(f"device assertion failed: {message}{where}", **kw)


class SimulatorUnsupportedError(SimulatorError):
    """The module uses an op (or an op form) that the simulator cannot execute."""


class SimulatorHangError(SimulatorError):
    """Under the interleave schedule the running blocks stopped making progress (they spin on a
    lock or flag that no block will change)."""


class KernelFault(Exception):
    """Raised by an op's runner; the enclosing block runner re-raises it as ``cls`` (a
    :class:`SimulatorError` subclass) with the op, tile block and source location filled in."""

    def __init__(self, message: str, cls=SimulatorError, **kw):
        super().__init__(message)
        self.message = message
        self.cls = cls
        self.kw = kw


def _render(message, op, block, kernel, loc) -> str:
    where = []
    if op:
        where.append(f"op '{op}'")
    if block is not None:
        where.append(f"tile block {tuple(int(b) for b in block)}")
    if kernel:
        where.append(f"kernel '{kernel}'")
    s = f"{message} [{', '.join(where)}]" if where else message
    if loc is not None:
        s += f"\n  at {loc}"
        try:
            text = loc.source_line().strip()
        except Exception:  # a loc without a readable file
            text = ""
        if text:
            s += f": {text}"
    return s


__all__ = ["SimulatorError", "SimulatorMemoryError", "DeviceAssertionError",
           "SimulatorUnsupportedError", "SimulatorHangError", "KernelFault"]
