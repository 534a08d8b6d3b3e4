"""Errors raised by the Tile IR interpreter.

Every failure while running a kernel on the simulator is a :class:`SimulatorError` (a
:class:`tilejit.DeviceError`, like a failed launch on a GPU) whose message names the op, the tile
block and, when the op carries one, the user's source line.
"""
from __future__ import annotations

import re
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

    user_error = True

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


class TileIndexError(SimulatorError):
    """A load or store at a tile index outside its array (``x.load(index, shape)``,
    ``tile.store(view, index, t)``...), said in the kernel's words: which array, the index, the
    array's shape and how many tiles it has. ``index``/``tiles``/``tile`` are in the load's
    order (``order=``), ``shape`` in the array's."""

    user_error = True

    def __init__(self, message: str, *, index, tiles, shape, tile, order=None, **kw):
        self.index, self.tiles, self.shape, self.tile = index, tiles, shape, tile
        self.order = order
        op, loc = kw.get("op"), kw.get("loc")
        name = array_name(loc, op)
        verb = _OP_WORDS.get(op, "access")
        who = f"array '{name}'" if name else "the array"
        how = "" if not order or tuple(order) == tuple(range(len(order))) else \
            f" read with order={tuple(order)}"
        neg = (" (a negative index: Tile IR reads tile indices as unsigned)"
               if any(i < 0 for i in index) else "")
        bad = [f"{i} on axis {a}" for a, (i, n) in enumerate(zip(index, tiles)) if not 0 <= i < n]
        msg = (f"{name + '.' if name else ''}{verb}: tile index {tuple(index)} is out of bounds"
               f"{neg}: {who} of shape {tuple(shape)}{how} has {tuple(tiles)} tiles of shape "
               f"{tuple(tile)}, so the index must be below {tuple(tiles)} on every axis "
               f"({', '.join(bad)} is not)")
        super().__init__(msg, **kw)


def array_name(loc, op) -> Optional[str]:
    """The kernel variable a load/store at ``loc`` reads or writes, from its source line
    (``x.load(...)``, ``x.partition(t).load(...)``, ``tile.store(x, ...)``, ``x.store(...)``)
    when exactly one candidate is there; None otherwise."""
    if loc is None:
        return None
    try:
        text = loc.source_line()
    except Exception:  # noqa: BLE001  (no readable file)
        return None
    patterns = _NAME_PATTERNS.get(op)
    if not text or patterns is None:
        return None
    names = {m.group(1) for p in patterns for m in re.finditer(p, text)} - _MODULES
    return names.pop() if len(names) == 1 else None


_MODULES = {"tile", "ct", "tilejit", "language"}      # tile.store(...) names no array


_OP_WORDS = {"load_view_tko": "load", "store_view_tko": "store", "load_ptr_tko": "gather",
             "store_ptr_tko": "scatter", "atomic_rmw_tko": "atomic update",
             "atomic_cas_tko": "atomic_cas"}
_VIEW = r"(?:\.partition\([^()]*(?:\([^()]*\)[^()]*)*\))?"      # an optional .partition(tile)
_NAME_PATTERNS = {
    "load_view_tko": (rf"(\w+){_VIEW}\.load\(", r"\bload\(\s*(\w+)\s*,"),
    "store_view_tko": (rf"\bstore\(\s*(\w+){_VIEW}\s*,", r"(\w+)\.store\("),
}


class SimulatorUnsupportedError(SimulatorError):
    """The module uses an op (or an op form) that the simulator cannot execute."""


class SimulatorHangError(SimulatorError):
    """The running blocks stopped making progress (they spin on a lock or flag that no block
    will change), under any schedule (:mod:`.schedule`)."""


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
    if block is not None:
        where.append(f"block {tuple(int(b) for b in block)}")
    if kernel:
        where.append(f"kernel '{kernel}'")
    if op:
        where.append(f"Tile IR op '{op}'")
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


__all__ = ["SimulatorError", "SimulatorMemoryError", "DeviceAssertionError", "TileIndexError",
           "SimulatorUnsupportedError", "SimulatorHangError", "KernelFault", "array_name"]
