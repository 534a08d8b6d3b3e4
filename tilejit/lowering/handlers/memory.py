"""Loads and stores: tensors, partitions, tile views, gather and scatter."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ... import dtypes as D
from ... import language as L
from ...typing.types import TileType as NbTile
from ..abi import ArrayParam, ViewRef
from ..emit import TV
from . import access_hints, and_user_mask, handles, padding_arg, shape_arg, ORDER, SCOPE



def unneeded_padding(arr: ArrayParam, shape, padding, order=None):
    """``padding``, or None when the key's facts prove every tile of ``shape`` is whole (each
    extent divisible by the tile extent): a padding value then changes nothing, and leaving it
    out spares tileiras the masking. Indices outside the index space are faults either way.
    Tile axis ``i`` runs along array axis ``order[i]``."""
    facts = arr.facts
    if padding is None or facts is None or len(shape) != arr.ndim:
        return padding
    order = range(arr.ndim) if order is None else order
    if all(t <= facts.shape_div[d] for t, d in zip(shape, order)):
        return None
    return padding


def access_semantics(lw, info, args):
    """``(ordering, scope)`` of a load or store: a weak access has no scope, an ordered one is
    device-wide unless ``memory_scope=`` says otherwise."""
    order = getattr(lw.static_arg(info, args, "memory_order", L.MemoryOrder.WEAK), "name", "WEAK")
    if order == "WEAK":
        return "weak", None
    scope = lw.static_arg(info, args, "memory_scope", None)
    return ORDER[order], SCOPE[getattr(scope, "name", "DEVICE")]


def _order(lw, info, args, ndim: int):
    """The ``order=`` permutation (None: the array's own order; ``"F"`` reverses the axes)."""
    order = lw.static_arg(info, args, "order")
    if order is None or order == "C":
        return None
    return tuple(range(ndim - 1, -1, -1)) if order == "F" else tuple(order)


@handles("tile.load_tile_like")
def _load_tile_like(lw, info, args, rty):
    x = lw.arg(args, "x")
    z = lw.arg(args, "z")
    if not isinstance(x, ArrayParam) or not isinstance(z, ArrayParam) or z.tile_shape is None:
        raise lw.error("tile.load_tile_like(x, z) needs a tensor x and a partition z")
    # API.md: out-of-bounds elements are unspecified here (the store that follows is masked);
    # no padding value lets tileiras skip the masking of loads.
    view = x.partition_view(lw.hoist, z.tile_shape, None)
    idx = [lw.bid(i) for i in range(len(z.tile_shape))]
    return lw.load_view(x, view, idx)


@handles("Tensor.load", "tile.load")
def _tensor_load(lw, info, args, rty):
    x = lw.arg(args, "x") if "x" in args else lw.value(info.receiver)
    if isinstance(x, ViewRef):
        x = x.array
    shape = shape_arg(lw, info, args)
    index = lw.index_tvs(lw.arg(args, "index"), D.int32)
    hints = access_hints(lw, info, args)
    sem = access_semantics(lw, info, args)
    if shape == () and sem[0] != "weak" and x.dtype.bits in (32, 64) and not x.dtype.is_bool:
        return _ordered_element_read(lw, x, index, *sem)
    if shape == ():  # one element: a 1x..x1 tile at element coordinates, reshaped to 0-d
        ones = (1,) * x.ndim
        view = x.partition_view(lw.hoist, ones, unneeded_padding(x, ones, padding_arg(
            lw, info, args)))
        return lw.em.reshape(lw.load_view(x, view, index, hints, *sem), ())
    order = _order(lw, info, args, x.ndim)
    inbounds = not lw.static_arg(info, args, "check_bounds", True)
    # a tile promised inside the array reads no padding (tileiras refuses inbounds with one)
    padding = None if inbounds else unneeded_padding(x, shape, padding_arg(lw, info, args), order)
    box = lw.static_arg(info, args, "box_width", None)
    if box is not None and order is None and _splits(x, shape, box):
        split = _split_last_axis(lw, x, box)
        tiles = tuple(shape[:-1]) + (shape[-1] // box, box)
        view = split.partition_view(lw.hoist, tiles, padding)
        t = lw.load_view(x, view, list(index) + [lw.em.const(0, D.int32)], hints, *sem,
                         inbounds=inbounds)
        return lw.em.reshape(t, tuple(shape))
    view = x.partition_view(lw.hoist, shape, padding, dim_map=order)
    return lw.load_view(x, view, index, hints, *sem, inbounds=inbounds)


def _splits(x: ArrayParam, shape, box: int) -> bool:
    """Whether ``box_width=box`` applies: a unit-stride last axis the key knows is a multiple of
    ``box`` (so the split view holds the same elements, and padding the same places), and a
    tile whose last extent is a larger multiple of it."""
    return (x.facts is not None and x.strides and x.strides[-1] is None and
            shape[-1] > box and shape[-1] % box == 0 and x.facts.shape_div[-1] % box == 0)


def _split_last_axis(lw, x: ArrayParam, box: int) -> ArrayParam:
    """``x`` seen as ``(..., n / box, box)``: the same memory, the last axis split in two
    (strides ``box`` and 1); made once per array and width in the entry block (where the
    array's own view is made where it is used, ``x.slice``, so is this one)."""
    got = x.splits.get(box)
    if got is not None:
        return got
    from ...keys import ALIGN_BYTES, Facts
    local = x.local_builder is not None
    b, em = (lw.b, lw.em) if local else (lw.hoist, lw.hoist_em)
    idt = x.index_dtype
    f = x.facts
    unit = max(1, ALIGN_BYTES // x.dtype.itemsize)
    facts = Facts(f.index_bits, f.base_div,
                  tuple(f.shape_div[:-1]) + (max(1, f.shape_div[-1] // box), box),
                  tuple(f.stride_div[:-1]) + (unit if box % unit == 0 else 1, f.stride_div[-1]),
                  tuple(f.stride_one[:-1]) + (box == 1, True))
    split = ArrayParam(x.name, x.kind, x.dtype, x.ndim + 1, facts, writable=x.writable,
                       local_builder=x.local_builder, aliases=x.aliases)
    split.base = x.base
    split.shape = list(x.shape[:-1]) + [em.binary("//", x.shape[-1], em.const(box, idt), idt),
                                        em.const(box, idt)]
    split.strides = list(x.strides[:-1]) + [em.const(box, idt), None]
    split.tview = b.make_tensor_view(split.base, [s.value for s in split.shape],
                                     [1 if s is None else s.value for s in split.strides])
    if not local:
        x.splits[box] = split
    return split


def _ordered_element_read(lw, x, index, ordering, scope):
    """An ordered read of one element as an atomic ``or 0`` of its bits.

    tileiras (13.4) replicates a block's control flow in each of its specialized warps, and a
    plain load is then performed by each of them: a spin loop on a flag (``while
    load(flag, memory_order=ACQUIRE) != v``) can see a different value in each warp, which
    desynchronizes their barriers and hangs the block (seen on an H100, 2026-11-25). An atomic's
    result is computed once and shared by the block, so every warp takes the same path. ``or 0``
    leaves memory as it was."""
    ptrs, mask = lw.element_pointers(x, tuple(index), ())
    idt = D.int32 if x.dtype.bits == 32 else D.int64
    if x.dtype.tileir != idt.tileir:
        ptrs = lw.b.ptr_to_ptr(ptrs, idt.tileir)
    zero = lw.em.const(0, idt)

    def emit(token):
        return lw.b.atomic_rmw_tko(ptrs, "or", zero.value, mask=mask.value, token=token,
                                   ordering=ordering, scope=scope)

    bits = lw.ordered_read(x, lambda t: _as_mem(lw, emit(t), idt, x.dtype), ordering)
    return bits


def _as_mem(lw, result, idt, dt):
    """``(value, token)`` of an integer atomic read back in the array's dtype."""
    value, token = result
    if dt.tileir != idt.tileir:
        value = lw.b.bitcast(value, value.type.with_element(dt.tileir))
    return value, token


@handles("Tensor.slice")
def _tensor_slice(lw, info, args, rty):
    from ...typing.templates.memory import sliced_facts
    x = lw.value(info.receiver)
    em = lw.em
    axis = lw.static_arg(info, args, "axis") % x.ndim
    idt = x.index_dtype
    n = x.shape[axis]
    # clamped like Python's slicing (no wrap-around of negative bounds)
    start = em.binary("min", em.binary("max", lw.tv(lw.arg(args, "start"), idt),
                                       em.const(0, idt), idt), n, idt)
    stop = em.binary("min", em.binary("max", lw.tv(lw.arg(args, "stop"), idt), start, idt), n,
                     idt)
    view = ArrayParam(x.name, x.kind, x.dtype, x.ndim, sliced_facts(x.facts, x.ndim, axis),
                      writable=x.writable, local_builder=lw.b)
    unit = [s is None for s in x.strides]            # static unit strides stay static
    step = em.binary("*", start, x.stride(axis, lw.hoist_em), idt)
    view.base = lw.b.offset(x.base, em.cast(step, D.int64).value)
    view.shape = [em.binary("-", stop, start, idt) if i == axis else s
                  for i, s in enumerate(x.shape)]
    view.strides = [None if u else s for u, s in zip(unit, x.strides)]
    view.tview = lw.b.make_tensor_view(view.base, [s.value for s in view.shape],
                                       [1 if u else s.value for u, s in zip(unit, x.strides)])
    return view


@handles("Tensor.partition")
def _tensor_partition(lw, info, args, rty):
    x = lw.value(info.receiver)
    shape = shape_arg(lw, info, args)
    return ViewRef(x, shape, padding_arg(lw, info, args))


@handles("TileView.load")
def _view_load(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    view = v.array.partition_view(lw.hoist, v.tile_shape,
                                  unneeded_padding(v.array, v.tile_shape, v.padding))
    hints = access_hints(lw, info, args)
    return lw.load_view(v.array, view, lw.index_tvs(lw.arg(args, "index"), D.int32), hints,
                        *access_semantics(lw, info, args))


@handles("TileView.store")
def _view_store(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    view = v.array.partition_view(lw.hoist, v.tile_shape, None,
                                  dim_map=_order(lw, info, args, v.array.ndim))
    t = lw.tv(lw.arg(args, "t") if "t" in args else lw.arg(args, "tile"), v.array.dtype)
    lw.store_view(v.array, view, lw.index_tvs(lw.arg(args, "index"), D.int32), t,
                  access_hints(lw, info, args), *access_semantics(lw, info, args))
    return None


@handles("TileView.num_tiles")
def _view_num_tiles(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    axis = lw.static_arg(info, args, "axis")
    view = v.array.partition_view(lw.hoist, v.tile_shape, v.padding)
    return TV(lw.b.get_index_space_shape(view, "i32")[axis], D.int32)


@handles("Partition.load")
def _partition_load(lw, info, args, rty):
    z: ArrayParam = lw.value(info.receiver)
    view = z.partition_view(lw.hoist, z.tile_shape, unneeded_padding(z, z.tile_shape, "zero"))
    return lw.load_view(z, view, [lw.bid(i) for i in range(len(z.tile_shape))], None,
                        *access_semantics(lw, info, args))


@handles("Partition.store")
def _partition_store(lw, info, args, rty):
    z: ArrayParam = lw.value(info.receiver)
    name = list(info.signature.pysig.parameters)[1]      # the stored tile (after the receiver)
    t = lw.tv(lw.arg(args, name), z.dtype)
    t = lw.em.broadcast(t, z.tile_shape)
    view = z.partition_view(lw.hoist, z.tile_shape, None)
    lw.store_view(z, view, [lw.bid(i) for i in range(len(z.tile_shape))], t,
                  access_hints(lw, info, args), *access_semantics(lw, info, args))
    return None


@handles("tile.store")
def _store(lw, info, args, rty):
    target = lw.arg(args, "target")
    index = lw.arg(args, "index")
    if isinstance(target, ViewRef):
        arr, shape = target.array, target.tile_shape
    elif isinstance(target, ArrayParam) and (target.tile_shape is not None or target.written):
        arr, shape = target, target.tile_shape
    else:
        raise lw.error("tile.store(target, index, t) needs a partition, a writable tensor or a "
                       "view of one")
    t = lw.tv(lw.arg(args, "t"), arr.dtype)
    if shape is None:
        # a writable tensor: the tile space of the stored tile's shape (one element per axis
        # for a scalar), as cuTile's store
        shape = t.shape or (1,) * arr.ndim
    t = lw.em.broadcast(t, shape)
    view = arr.partition_view(lw.hoist, shape, None, dim_map=_order(lw, info, args, arr.ndim))
    lw.store_view(arr, view, lw.index_tvs(index, D.int32), t,
                  access_hints(lw, info, args), *access_semantics(lw, info, args))
    return None


def _gather_scatter_target(lw, target):
    if isinstance(target, ViewRef):
        target = target.array
    if not isinstance(target, ArrayParam):
        raise lw.error("gather/scatter need a tensor or partition argument")
    return target


@handles("tile.gather")
def _gather(lw, info, args, rty):
    x = _gather_scatter_target(lw, lw.arg(args, "x"))
    shape = rty.shape if isinstance(rty, NbTile) else ()
    checked = lw.static_arg(info, args, "check_bounds", True)
    ptrs, mask = lw.element_pointers(x, lw.arg(args, "indices"), shape, checked or lw.simulated)
    mask = element_mask(lw, checked, args, mask, shape, "gather")
    mdt = D.uint8 if x.dtype.is_bool else x.dtype
    name = "padding_value" if args.get("padding_value") is not None else "other"
    other = lw.arg(args, name)
    if isinstance(other, TV):
        other = lw.em.broadcast(lw.tv(other, mdt), shape)
    else:
        other = lw.em.const(lw.static_arg(info, args, name, 0), mdt, shape)
    if mask is None:
        other = None
    order, scope = access_semantics(lw, info, args)
    hints = lw.hints(lw.static_arg(info, args, "latency", None), True)
    return lw.ordered_read(x, lambda t: lw.b.load_ptr_tko(
        ptrs, mask=mask and mask.value, padding=other and other.value, token=t, ordering=order,
        scope=scope, hints=hints), order)


def element_mask(lw, checked: bool, args, inbounds: Optional[TV], shape, op: str):
    """The mask of a gather or scatter: in bounds and the user's ``mask=``. Under
    ``check_bounds=False`` (``checked`` False) the kernel promised every index is in bounds: no
    bounds mask (None when there is no user mask either); the simulator checks the promise."""
    if checked:
        return and_user_mask(lw, args, inbounds, shape)
    user = and_user_mask(lw, args, None, shape)
    if lw.simulated:
        held = inbounds if user is None else lw.em.binary(
            "|", inbounds, lw.em.logical_not(user), D.bool_)
        lw.b.assert_(held.value, f"{op}: an index is out of bounds, but check_bounds=False "
                                 f"promised none would be (pass check_bounds=True, the default)")
    return user


def element_access(lw, info, args, value_names):
    """Target, pointers, in-bounds-and-user mask and the broadcast value tiles of a scatter or an
    atomic: ``values`` (names in ``value_names``) and index tiles broadcast together."""
    x = _gather_scatter_target(lw, lw.arg(args, "target"))
    vals = [lw.tv(lw.arg(args, n), x.dtype) for n in value_names]
    idx = lw.arg(args, "indices")
    shape = np.broadcast_shapes(*[v.shape for v in vals], *[
        i.shape for i in (idx if isinstance(idx, tuple) else (idx,)) if isinstance(i, TV)])
    # scatter has check_bounds=; the atomics check every index
    checked = "check_bounds" not in args or lw.static_arg(info, args, "check_bounds", True)
    ptrs, mask = lw.element_pointers(x, idx, shape, checked or lw.simulated)
    mask = element_mask(lw, checked, args, mask, shape, "scatter")
    return x, ptrs, mask, [lw.em.broadcast(v, shape) for v in vals]


def memory_semantics(lw, info, args):
    order = ORDER.get(getattr(lw.static_arg(info, args, "memory_order", L.MemoryOrder.ACQ_REL),
                               "name", "ACQ_REL"))
    scope = SCOPE.get(getattr(lw.static_arg(info, args, "memory_scope", L.MemoryScope.DEVICE),
                               "name", "DEVICE"), "device")
    return order, scope


@handles("tile.scatter")
def _scatter(lw, info, args, rty):
    x, ptrs, mask, (vals,) = element_access(lw, info, args, ("values",))
    vals = lw._to_mem(vals, x)
    order, scope = access_semantics(lw, info, args)
    hints = lw.hints(lw.static_arg(info, args, "latency", None), True)
    lw.ordered_write(x, lambda t: (None, lw.b.store_ptr_tko(
        ptrs, vals.value, mask=mask and mask.value, token=t, ordering=order, scope=scope,
        hints=hints)), order)
    return None
