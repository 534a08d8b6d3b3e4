"""Tiled views (``x.tiled_view(...)``, cuTile's ``TiledView``; typing: ``typing/templates/
tiled_view.py``).

A tiled view whose tiles lie side by side (``traversal_steps`` equal to the tile shape, the
default) is a partition view of its array: loads and stores are ``load_view_tko`` /
``store_view_tko`` through the array's cached partition view (TMA where tileiras can), exactly as
``x.partition(shape)``'s. A 0-d tile is a 1x..x1 box reshaped.

With other steps (overlapping or gapped tiles) the tile at index ``i`` covers elements
``i[d] * steps[d] + arange(tile[d])`` of each axis ``d``: loads and stores go through element
pointers (``load_ptr_tko`` / ``store_ptr_tko`` with the in-bounds mask, the padding value
where it is masked off), as ``tile.gather`` / ``tile.scatter`` do; ``num_tiles(axis)`` is
``cdiv(shape[axis], steps[axis])``. The atomic stores are element-wise ``atomic_rmw_tko``
(relaxed, device scope) over the same pointers, for either kind of view.

``check_bounds=False`` promises the tile is inside the array: the partition view's access gets
Tile IR 13.4's ``inbounds`` attribute and no padding; a pointer access drops its mask (an
out-of-bounds element is then undefined behaviour on the GPU and a fault on the simulator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ... import dtypes as D
from ...tileir.types import TOKEN
from ..abi import ArrayParam
from ..emit import TV
from . import PADDING, handles
from .memory import unneeded_padding

#: a padding mode's value for float elements (integers and bools pad with zero)
_PAD_VALUES = {"zero": 0.0, "neg_zero": -0.0, "nan": float("nan"), "pos_inf": float("inf"),
               "neg_inf": float("-inf")}


@dataclass
class TiledViewRef:
    """A tiled view inside the kernel: the array, the tile shape as given (``()``: elements),
    the Tile IR padding value (None: unspecified) and the traversal steps."""

    array: ArrayParam
    tile_shape: Tuple[int, ...]
    padding: Optional[str]
    traversal_steps: Tuple[int, ...]

    @property
    def box(self) -> Tuple[int, ...]:
        return self.tile_shape or (1,) * self.array.ndim

    @property
    def strided(self) -> bool:
        return self.traversal_steps != self.box

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim


@handles("Tensor.tiled_view")
def _tiled_view(lw, info, args, rty):
    x = lw.value(info.receiver)
    if not isinstance(x, ArrayParam):
        raise lw.error("x.tiled_view(...) needs a tensor parameter (or a slice of one)")
    pad = rty.padding
    padding = None if pad is None else PADDING.get(pad.name)      # UNDETERMINED: none
    return TiledViewRef(x, tuple(rty.tile_shape), padding, tuple(rty.traversal_steps))


def _view(lw, info) -> TiledViewRef:
    v = lw.value(info.receiver)
    if not isinstance(v, TiledViewRef):
        raise lw.error(f"internal error: expected a tiled view, got {type(v).__name__} "
                       f"(please report this)")
    return v


def _index(lw, args):
    return lw.index_tvs(lw.arg(args, "index"), D.int32)


def _element_pointers(lw, v: TiledViewRef, index, checked: bool = True):
    """Pointers to the elements of tile ``index`` of ``v`` (shape ``v.box``) and their in-bounds
    mask (None when ``checked`` is False: the caller promised the tile is inside)."""
    em = lw.em
    arr = v.array
    idt = arr.index_dtype
    box = v.box
    rank = len(box)
    coords = []
    for d in range(rank):
        start = em.binary("*", lw.tv(index[d], idt), em.const(v.traversal_steps[d], idt), idt)
        along = em.reshape(em.iota(box[d], idt), tuple(box[d] if k == d else 1
                                                        for k in range(rank)))
        coords.append(em.binary("+", em.broadcast(start, along.shape), along, idt))
    ptrs, mask = lw.element_pointers(arr, tuple(coords), box)
    return ptrs, (mask if checked else None)


def _hints(lw, info, args, pointer: bool = False):
    latency = lw.static_arg(info, args, "latency", None)
    allow_tma = lw.static_arg(info, args, "allow_tma", None)
    # a pointer access never uses TMA: the hint would only be noise
    return lw.hints(latency, True if pointer else allow_tma is not False)


def _to_tile_shape(lw, t: TV, v: TiledViewRef) -> TV:
    return lw.em.reshape(t, ()) if not v.tile_shape else t


@handles("TiledView.load")
def _load(lw, info, args, rty):
    v = _view(lw, info)
    arr = v.array
    index = _index(lw, args)
    checked = lw.static_arg(info, args, "check_bounds", True)
    if not v.strided:
        padding = None if not checked else unneeded_padding(arr, v.box, v.padding)
        view = arr.partition_view(lw.hoist, v.box, padding)
        t = lw.load_view(arr, view, index, _hints(lw, info, args), inbounds=not checked)
        return _to_tile_shape(lw, t, v)
    ptrs, mask = _element_pointers(lw, v, index, checked)
    pad = None
    if mask is not None and v.padding is not None:
        mdt = D.uint8 if arr.dtype.is_bool else arr.dtype
        value = _PAD_VALUES[v.padding] if arr.dtype.is_float else 0
        pad = lw.em.const(value, mdt, v.box).value
    hints = _hints(lw, info, args, pointer=True)
    t = lw.ordered_read(arr, lambda tok: lw.b.load_ptr_tko(
        ptrs, mask=None if mask is None else mask.value, padding=pad, token=tok, hints=hints))
    return _to_tile_shape(lw, t, v)


def _stored(lw, v: TiledViewRef, value) -> TV:
    """The stored value in the array's dtype, broadcast to the box (typing checked that it
    converts implicitly and broadcasts)."""
    return lw.em.broadcast(lw.tv(value, v.array.dtype), v.box)


@handles("TiledView.store")
def _store(lw, info, args, rty):
    v = _view(lw, info)
    arr = v.array
    index = _index(lw, args)
    checked = lw.static_arg(info, args, "check_bounds", True)
    t = _stored(lw, v, lw.arg(args, "tile"))
    if not v.strided:
        view = arr.partition_view(lw.hoist, v.box, None)
        hints = _hints(lw, info, args)
        if checked or lw.version < (13, 4):
            lw.store_view(arr, view, index, t, hints)
            return None
        mem = lw._to_mem(t, arr)
        idx = [i.value for i in index]
        lw.ordered_write(arr, lambda tok: (None, lw.b.create(
            "store_view_tko", [mem.value, view, idx, tok], [TOKEN],
            {"memory_ordering_semantics": "weak", "optimization_hints": hints,
             "inbounds": (True,) * len(idx)}).results[0]), tile_index=idx)
        return None
    ptrs, mask = _element_pointers(lw, v, index, checked)
    mem = lw._to_mem(t, arr)
    hints = _hints(lw, info, args, pointer=True)
    lw.ordered_write(arr, lambda tok: (None, lw.b.store_ptr_tko(
        ptrs, mem.value, mask=None if mask is None else mask.value, token=tok, hints=hints)))
    return None


@handles("TiledView.num_tiles")
def _num_tiles(lw, info, args, rty):
    v = _view(lw, info)
    arr = v.array
    axis = lw.static_arg(info, args, "axis") % arr.ndim
    if not v.strided:
        view = arr.partition_view(lw.hoist, v.box, None)
        return TV(lw.b.get_index_space_shape(view, "i32")[axis], D.int32)
    idt = arr.index_dtype
    n = lw.em.ceildiv(arr.shape[axis], lw.em.const(v.traversal_steps[axis], idt), idt)
    return lw.em.cast(n, D.int32)


def _atomic_store(int_mode: str, float_mode: Optional[str]):
    def handler(lw, info, args, rty):
        v = _view(lw, info)
        arr = v.array
        ptrs, mask = _element_pointers(lw, v, _index(lw, args))
        mode = float_mode if arr.dtype.is_float else int_mode
        if mode in ("max", "min") and arr.dtype.is_unsigned:
            mode = "u" + mode
        u = _stored(lw, v, lw.arg(args, "update"))
        lw.ordered_write(arr, lambda tok: lw.b.atomic_rmw_tko(
            ptrs, mode, u.value, mask=mask.value, token=tok, ordering="relaxed",
            scope="device"), "relaxed")
        return None
    return handler


for _name, _modes in {"add": ("add", "addf"), "max": ("max", None), "min": ("min", None),
                      "and": ("and", None), "or": ("or", None), "xor": ("xor", None)}.items():
    handles(f"TiledView.atomic_store_{_name}")(_atomic_store(*_modes))
