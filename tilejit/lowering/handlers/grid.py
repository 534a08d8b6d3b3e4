"""Grid: block ids, grid size, cdiv."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ..emit import TV
from . import dt_of, handles


@handles(L.bid)
def _bid(lw, info, args, rty):
    return lw.bid(lw.static_arg(info, args, "axis"))


@handles(L.num_blocks)
def _num_blocks(lw, info, args, rty):
    axis = lw.static_arg(info, args, "axis")
    if lw.const_grid is not None:      # .const_grid(...): the grid is part of the kernel
        return lw.em.const(lw.const_grid[axis], D.int32)
    if lw.grid_ones[axis]:             # specialized on this axis having extent 1
        return lw.em.const(1, D.int32)
    return TV(lw.b.get_num_tile_blocks()[axis], D.int32)


@handles(L.cdiv)
def _cdiv(lw, info, args, rty):
    d = dt_of(rty)
    return lw.em.ceildiv(lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d), d)
