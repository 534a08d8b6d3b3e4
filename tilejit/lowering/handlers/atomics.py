"""Atomic read-modify-write and compare-and-swap (their memory order also orders the block's
other memory operations: see ``lowering/tokens.py``)."""
from __future__ import annotations

from ..emit import TV
from . import CALLS, handles
from .memory import element_access, memory_semantics


def _atomic(mode_int, mode_float):
    def handler(lw, info, args, rty):
        x, ptrs, mask, (vals,) = element_access(lw, info, args, ("values",))
        mode = mode_float if x.dtype.is_float else mode_int
        if mode in ("max", "min") and x.dtype.is_unsigned:
            mode = "u" + mode
        order, scope = memory_semantics(lw, info, args)
        old = lw.ordered_write(x, lambda t: lw.b.atomic_rmw_tko(
            ptrs, mode, vals.value, mask=mask.value, token=t, ordering=order, scope=scope), order)
        return TV(old, x.dtype)
    return handler


CALLS["tile.atomic_add"] = _atomic("add", "addf")
CALLS["tile.atomic_max"] = _atomic("max", "max")
CALLS["tile.atomic_min"] = _atomic("min", "min")
CALLS["tile.atomic_xchg"] = _atomic("xchg", "xchg")
CALLS["tile.atomic_and"] = _atomic("and", "and")
CALLS["tile.atomic_or"] = _atomic("or", "or")
CALLS["tile.atomic_xor"] = _atomic("xor", "xor")


@handles("tile.atomic_cas")
def _atomic_cas(lw, info, args, rty):
    x, ptrs, mask, (exp, des) = element_access(lw, info, args, ("expected", "desired"))
    order, scope = memory_semantics(lw, info, args)
    old = lw.ordered_write(x, lambda t: lw.b.atomic_cas_tko(
        ptrs, exp.value, des.value, mask=mask.value, token=t, ordering=order, scope=scope), order)
    return TV(old, x.dtype)
