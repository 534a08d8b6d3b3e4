"""Matrix multiply-accumulate."""
from __future__ import annotations

from . import dt_of, handles



# --- matmul ----------------------------------------------------------------------------------
@handles("tile.mma")
def _mma(lw, info, args, rty):
    a, b = lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b"))
    acc = lw.tv(lw.arg(args, "acc"))
    a, b = lw._mma_operands(a, b)
    return lw.em.mma(a, b, acc)


@handles("tile.matmul")
def _matmul(lw, info, args, rty):
    return lw.matmul(lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b")), dt_of(rty))
