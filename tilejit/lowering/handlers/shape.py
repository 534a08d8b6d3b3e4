"""Shape ops: reshape, permute, transpose, swapaxes, broadcast, expand_dims, cat, extract."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ...typing.templates.shape import permutation, swap_permutation, transpose_axes
from ..emit import TV
from . import dt_of, handles


# --- shapes ----------------------------------------------------------------------------------
@handles(L.reshape)
def _reshape(lw, info, args, rty):
    return lw.em.reshape(lw.tv(lw.arg(args, "t")), rty.shape)


@handles(L.permute)
def _permute(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    return lw.em.permute(t, permutation(lw.static_arg(info, args, "axes"), len(t.shape),
                                        "permute"))


@handles(L.transpose, "Tile.transpose")
def _transpose(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    swap = tuple(lw.arg(args, n) for n in ("axis0", "axis1"))       # t.transpose(axis0=, axis1=)
    if swap != (None, None):
        return lw.em.permute(t, swap_permutation(*swap, len(t.shape)))
    axes = lw.arg(args, "axes")                  # *axes: a tuple; tile.transpose: one value
    return lw.em.permute(t, transpose_axes(axes if isinstance(axes, tuple) else (axes,),
                                           len(t.shape)))


@handles("Tile.item")
def _item(lw, info, args, rty):
    return lw.em.reshape(lw.tv(lw.arg(args, "t")), ())


@handles(L.swapaxes, "Tile.swapaxes")
def _swapaxes(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    perm = swap_permutation(lw.static_arg(info, args, "axis1"), lw.static_arg(info, args, "axis2"),
                            len(t.shape))
    return t if perm == tuple(range(len(perm))) else lw.em.permute(t, perm)


@handles(L.broadcast_to)
def _broadcast_to(lw, info, args, rty):
    return lw.em.broadcast(lw.tv(lw.arg(args, "t")), rty.shape)


@handles(L.expand_dims)
def _expand_dims(lw, info, args, rty):
    return lw.em.reshape(lw.tv(lw.arg(args, "t")), rty.shape)


@handles(L.cat)
def _cat(lw, info, args, rty):
    d = dt_of(rty)
    a, b = lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d)
    axis = lw.static_arg(info, args, "axis", 0)
    if axis < 0:
        axis += len(a.shape)
    return lw.em.cat(a, b, axis)


@handles(L.extract)
def _extract(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    index = lw.arg(args, "index")
    idx = [lw.tv(i, D.int32).value for i in (index if isinstance(index, tuple) else (index,))]
    if rty.shape == () and t.shape:         # one element (cuTile's shape=())
        return lw.em.reshape(TV(lw.b.extract(t.value, idx, (1,) * len(t.shape)), t.dtype), ())
    return TV(lw.b.extract(t.value, idx, rty.shape), t.dtype)
