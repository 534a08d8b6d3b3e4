"""Tensor views, partition views, and tile loads/stores through them.

A tensor view is a :class:`TensorView` (base address, shape, strides in elements). A partition
view adds only static facts (tile shape, ``dim_map``, padding), so at run time it *is* its tensor
view. Tile dimension ``i`` walks tensor dimension ``dim_map[i]``: element ``t`` of a tile at index
``idx`` sits at tensor coordinate ``coord[dim_map[i]] = idx[i] * tile[i] + t[i]``.

Loads read the padding value (zero without one) where the tile runs past the tensor; stores skip
those elements. An index outside the view's index space is undefined behaviour in Tile IR; the
simulator reports it.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from .elements import memory_dtype, padding_value, unsigned, wrap
from .errors import KernelFault, TileIndexError
from .registry import LAUNCH, elem_of, impl
from .sem_pointer import to_tile


class TensorView:
    __slots__ = ("base", "shape", "strides")

    def __init__(self, base: int, shape: Tuple[int, ...], strides: Tuple[int, ...]):
        self.base = base
        self.shape = shape
        self.strides = strides

    def __repr__(self) -> str:
        return f"TensorView(0x{self.base:x}, shape={self.shape}, strides={self.strides})"


def _uint(env, s, e) -> int:
    return int(unsigned(env[s], e))


@impl("make_tensor_view")
def _make_tensor_view(op, c):
    tv = op.result.type
    base = c.slot(op.operand("base"))
    dyn_shape = iter([(c.slot(v), elem_of(v)) for v in op.group("dynamicShape")])
    dyn_strides = iter([(c.slot(v), elem_of(v)) for v in op.group("dynamicStrides")])
    shape = [d if d is not None else next(dyn_shape) for d in tv.shape]
    strides = [d if d is not None else next(dyn_strides) for d in tv.strides]
    o = c.slot(op.result)
    if all(isinstance(d, int) for d in shape + strides):
        st_shape, st_strides = tuple(shape), tuple(strides)

        def run_static(env):
            env[o] = TensorView(int(env[base]), st_shape, st_strides)
        return run_static

    def get(env, d):
        return d if isinstance(d, int) else _uint(env, *d)

    def run(env):
        env[o] = TensorView(int(env[base]), tuple(get(env, d) for d in shape),
                            tuple(get(env, d) for d in strides))
    return run


@impl("make_partition_view")
def _make_partition_view(op, c):
    c.alias(op.result, op.operand("tensor_view"))
    return None


@impl("get_tensor_shape")
def _get_tensor_shape(op, c):
    src = c.slot(op.operand("src"))
    outs = [(c.slot(r), elem_of(r)) for r in op.results]

    def run(env):
        shape = env[src].shape
        for (s, e), d in zip(outs, shape):
            env[s] = wrap(np.uint64(d), e)[()]
    return run


@impl("get_index_space_shape")
def _get_index_space_shape(op, c):
    pv = op.operand("src").type
    src = c.slot(op.operand("src"))
    outs = [(c.slot(r), elem_of(r)) for r in op.results]
    tile, dim_map = pv.tile_shape, pv.dim_map

    def run(env):
        shape = env[src].shape
        for i, (s, e) in enumerate(outs):
            n = -(-shape[dim_map[i]] // tile[i])
            env[s] = wrap(np.uint64(n), e)[()]
    return run


class _TileAccess:
    """Addresses (and the in-bounds mask) of one tile of a partition view."""

    def __init__(self, op, c):
        pv = op.operand("view").type
        self.pv = pv
        self.elem = pv.tensor_view.element
        self.mdt = memory_dtype(self.elem)
        self.itemsize = self.mdt.itemsize
        self.tile = pv.tile_shape
        self.dim_map = pv.dim_map
        r = len(self.tile)
        self.aranges = [np.arange(t, dtype=np.int64).reshape([t if k == i else 1 for k in range(r)])
                        for i, t in enumerate(self.tile)]
        self.index = [(c.slot(v), elem_of(v)) for v in op.group("index")]
        self.inbounds = tuple(op.attrs.get("inbounds") or (False,) * r)
        self.view = c.slot(op.operand("view"))

    def addresses(self, env):
        tv: TensorView = env[self.view]
        idx = [_uint(env, s, e) for s, e in self.index]
        isz = self.itemsize
        addr = tv.base
        parts = []
        mask = None
        for i, (t, d) in enumerate(zip(self.tile, self.dim_map)):
            start = idx[i] * t
            extent = tv.shape[d]
            if start >= extent:
                space = tuple(-(-tv.shape[dd] // tt) for tt, dd in zip(self.tile, self.dim_map))
                # indices are unsigned in Tile IR; name the signed value the kernel computed
                signed = tuple(int(env[s]) for s, _ in self.index)
                neg = (" (a negative index: Tile IR reads it as the unsigned "
                       f"{tuple(idx)})") if any(v < 0 for v in signed) else ""
                raise KernelFault(f"tile index {signed} is outside the index space {space} of "
                                  f"{self.pv} (tensor shape {tv.shape}){neg}", cls=TileIndexError,
                                  index=signed, tiles=space, shape=tuple(tv.shape),
                                  tile=tuple(self.tile), order=tuple(self.dim_map))
            step = tv.strides[d] * isz
            addr += start * step
            parts.append(self.aranges[i] * step)
            if start + t > extent and self.inbounds[i]:
                raise KernelFault(f"tile {tuple(int(env[s]) for s, _ in self.index)} of "
                                  f"{self.pv} crosses the edge of the tensor (shape {tv.shape}) "
                                  f"but the load promised it would not (check_bounds=False)")
            if start + t > extent:
                m = self.aranges[i] < (extent - start)
                mask = m if mask is None else mask & m
        addrs = np.int64(addr)
        for p in parts:
            addrs = addrs + p
        if mask is not None:
            mask = np.broadcast_to(mask, self.tile)
        return np.asarray(addrs), mask


@impl("load_view_tko")
def _load_view(op, c):
    acc = _TileAccess(op, c)
    elem, mdt = acc.elem, acc.mdt
    mpad = padding_value(acc.pv.padding, elem).astype(mdt)
    o = c.slot(op.results[0])

    def run(env):
        addrs, mask = acc.addresses(env)
        env[o] = to_tile(env[LAUNCH].memory.load(addrs, mdt, mask=mask, other=mpad), elem)
    return run


@impl("store_view_tko")
def _store_view(op, c):
    acc = _TileAccess(op, c)
    mdt = acc.mdt
    t = c.slot(op.operand("tile"))

    def run(env):
        addrs, mask = acc.addresses(env)
        env[LAUNCH].memory.store(addrs, env[t], mdt, mask=mask)
    return run

