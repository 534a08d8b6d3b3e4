"""Tensors, partitions and tile views: attributes, loads, stores, gather and scatter.

=====================================  ==========================================================
``x.shape`` / ``z.tensor_shape``        ``UniTuple(index type, ndim)`` (int32 when index_bits=32)
``z.shape`` / ``v.tile_shape``          tuple of int literals (static tile shape)
``z.block``                             ``UniTuple(int32, ndim)`` (the block index of each axis)
``x.ndim`` / ``x.dtype``                int literal / ``DTypeType``
``load_tile_like(x, z)``                ``Tile[x.dtype, z.shape]``
``x.load(index, shape, padding=ZERO, latency=None, allow_tma=True, order=None)``
                                        ``Tile[x.dtype, shape]`` (``shape=()``: one element;
                                        ``order``: a permutation, ``"C"`` or ``"F"``)
``x.partition(shape, padding=None)``    ``TensorPartitionViewType``; ``v.load(index)``,
                                        ``v.num_tiles(axis)`` (int32), ``tile.store(v, index, t)``
``z.load()`` / ``z.store(t)``           the block's own tile of a partition
``tile.store(w, index, t)``             a writable tensor ``w``: the tile space of ``t``'s shape
``gather`` / ``scatter``                element-wise through index tiles (see language.py)
``memory_order=``, ``memory_scope=``    on every load and store above: loads WEAK, RELAXED or
                                        ACQUIRE, stores WEAK, RELAXED or RELEASE (Tile IR's rule)
``latency=``, ``allow_tma=``            hints on every load and store above but ``z.load()``
=====================================  ==========================================================
"""
from __future__ import annotations

from numba.core import types

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import broadcast_shapes, category
from ..types import (DTypeType, PartitionType, TensorPartitionViewType, TensorType, TileType,
                     dtype_of, is_scalar)
from ._base import (attribute_rule, bool_arg, enum_arg, function_rule, int_arg, is_none,
                    method_rule, read_only_error, shape_arg, static_value)

ARRAYS = (TensorType, PartitionType)


# --------------------------------------------------------------------------------------------------
# Argument checks
def array_arg(ty, what: str, write_action: str = ""):
    """A tensor or partition argument; with ``write_action`` (e.g. "scatter into") it must be
    writable."""
    if isinstance(ty, ARRAYS):
        if write_action and not ty.writable:
            raise read_only_error(write_action, ty)
        return ty
    raise TileTypingError(f"{what} must be a tensor or partition argument, got {describe_type(ty)}")


def _is_int_scalar(ty) -> bool:
    d = dtype_of(ty)
    return d is not None and d.is_integer and (is_scalar(ty) or
                                               (isinstance(ty, TileType) and ty.ndim == 0))


def index_arg(ty, ndim: int, what: str):
    """A tile index: ``ndim`` integer scalars (a bare int for rank 1)."""
    items = tuple(ty.types) if isinstance(ty, types.BaseTuple) else (ty,)
    if len(items) != ndim or not all(_is_int_scalar(t) for t in items):
        raise TileTypingError(f"{what} must be a tuple of {ndim} integer scalar(s) (tile "
                              f"coordinates, in units of tiles), got {describe_type(ty)}")
    return items


def hint_args(b):
    """A load's or store's ``latency=`` and ``allow_tma=`` hints: compile-time constants."""
    latency_arg(b.latency)
    bool_arg(b.allow_tma, "allow_tma")


def latency_arg(ty):
    v = int_arg(ty, "latency", allow_none=True)
    if v is not None and not 1 <= v <= 10:
        raise TileTypingError(f"latency must be None or a constant between 1 and 10, got {v}")
    return v


def padding_arg(ty):
    return enum_arg(ty, language.PaddingMode, "padding")


_MO = language.MemoryOrder
LOAD_ORDERS = (_MO.WEAK, _MO.RELAXED, _MO.ACQUIRE)
STORE_ORDERS = (_MO.WEAK, _MO.RELAXED, _MO.RELEASE)
ATOMIC_ORDERS = (_MO.RELAXED, _MO.ACQUIRE, _MO.RELEASE, _MO.ACQ_REL)


def memory_order_arg(b, allowed, what: str):
    """``memory_order=`` and ``memory_scope=`` of a memory operation: an order in ``allowed``
    (Tile IR's rule for the operation) and a scope, which a weak access cannot have."""
    # the messages start with cuTile's words, which name its operations
    op = ("tile_load" if allowed is LOAD_ORDERS else "tile_store" if allowed is STORE_ORDERS
          else "tile_atomic_cas" if "cas" in what else "tile_atomic_rmw")
    order = enum_arg(b.memory_order, language.MemoryOrder, f"{what}: memory_order",
                     allow_none=False)
    if order not in allowed:
        ok = ", ".join(f"tile.MemoryOrder.{m.name}" for m in allowed)
        raise TileTypingError(f"Invalid memory order for {op}: {what}: memory_order="
                              f"tile.MemoryOrder.{order.name} is not valid here; use one of {ok}")
    scope = enum_arg(b.memory_scope, language.MemoryScope, f"{what}: memory_scope")
    if scope is language.MemoryScope.NONE:
        if order is not _MO.WEAK:
            raise TileTypingError(f"{op} with {order.name} memory ordering requires a memory "
                                  f"scope: {what}: pass memory_scope=tile.MemoryScope.DEVICE "
                                  f"(or BLOCK, SYS) instead of MemoryScope.NONE")
        scope = None
    if order is _MO.WEAK and scope is not None:
        raise TileTypingError(f"{op} with WEAK memory ordering cannot specify a memory scope: "
                              f"{what}: memory_scope=tile.MemoryScope.{scope.name} needs an "
                              f"ordered access: a weak one has no scope; pass memory_order="
                              f"tile.MemoryOrder.RELAXED (or stronger) with it, or drop "
                              f"memory_scope")
    return order, scope


def gather_shape(ty, ndim: int, what: str):
    """Broadcast shape of element-index tiles: one int tile (rank-1 arrays) or ``ndim`` of them."""
    items = tuple(ty.types) if isinstance(ty, types.BaseTuple) else (ty,)
    if len(items) != ndim:
        raise TileTypingError(f"{what} must give {ndim} index tile(s) (one per axis of the "
                              f"{ndim}-d array), got {describe_type(ty)}")
    shapes = []
    for t in items:
        d = dtype_of(t)
        if not (d is not None and d.is_integer and (isinstance(t, TileType) or is_scalar(t))):
            raise TileTypingError(f"{what} must be integer tiles or scalars, got {describe_type(t)}")
        shapes.append(t.shape if isinstance(t, TileType) else ())
    return broadcast_shapes(*shapes, what=f"the index tiles of {what}")


def mask_arg(ty, shape, what: str):
    if is_none(ty):
        return None
    d = dtype_of(ty)
    if d is not dt.bool_ or not (isinstance(ty, TileType) or is_scalar(ty)):
        raise TileTypingError(f"{what} must have boolean dtype (a bool tile, e.g. a "
                              f"comparison), got {describe_type(ty)}")
    # the access's shape is the indices' alone: a mask that would widen it is an error
    if isinstance(ty, TileType) and not _broadcasts_to(ty.shape, tuple(shape)):
        raise TileTypingError(f"{what} of shape {ty.shape} is not broadcastable to the indices' "
                              f"shape {tuple(shape)}")
    return ty


def _broadcasts_to(src, dst) -> bool:
    return len(src) <= len(dst) and all(s in (1, d) for s, d in zip(reversed(src),
                                                                      reversed(dst)))


def value_arg(ty, dtype, shape, what: str, exact_shape: bool = False):
    """A value stored into ``dtype`` elements of ``shape``: tiles must match the dtype (and
    broadcast to ``shape``); scalars are weak and must not be of a higher category."""
    if isinstance(ty, TileType):
        if ty.dtype is not dtype:
            raise TileTypingError(f"{what} has dtype {ty.dtype} but the destination holds {dtype}; "
                                  f"convert with .astype(tile.{dtype.name})")
        if exact_shape and ty.shape != tuple(shape) and ty.ndim > 0:
            raise TileTypingError(f"{what} has shape {ty.shape} but the destination tile shape is "
                                  f"{tuple(shape)}; use tile.broadcast_to(t, {tuple(shape)}) to "
                                  f"broadcast explicitly")
        broadcast_shapes(ty.shape, shape, what=f"{what} and the destination")
        if broadcast_shapes(ty.shape, shape) != tuple(shape):
            raise TileTypingError(f"{what} of shape {ty.shape} does not fit the destination shape "
                                  f"{tuple(shape)}")
        return ty
    if is_scalar(ty):
        if category(dtype_of(ty)) > category(dtype):
            raise TileTypingError(f"{what} is {describe_type(ty)} but the destination holds "
                                  f"{dtype}; convert explicitly with tile.astype(v, "
                                  f"tile.{dtype.name})")
        return ty
    raise TileTypingError(f"{what} must be a tile or scalar, got {describe_type(ty)}")


# --------------------------------------------------------------------------------------------------
# Attributes
def _shape_literals(shape):
    return types.Tuple([types.literal(int(s)) for s in shape])


for _cls in (TensorType, PartitionType):
    attribute_rule(_cls, "ndim")(lambda ty: types.literal(ty.ndim))
    attribute_rule(_cls, "dtype")(lambda ty: DTypeType(ty.dtype))

attribute_rule(TensorType, "shape")(lambda ty: types.UniTuple(ty.index_type, ty.ndim))
for _cls in (TensorType, PartitionType):        # the array's strides in elements (runtime)
    attribute_rule(_cls, "strides")(lambda ty: types.UniTuple(ty.index_type, ty.ndim))
attribute_rule(PartitionType, "shape")(lambda ty: _shape_literals(ty.tile_shape))
attribute_rule(PartitionType, "tensor_shape")(lambda ty: types.UniTuple(ty.index_type, ty.ndim))
attribute_rule(PartitionType, "block")(lambda ty: types.UniTuple(types.int32, ty.ndim))

attribute_rule(TensorPartitionViewType, "tile_shape")(lambda ty: _shape_literals(ty.tile_shape))
attribute_rule(TensorPartitionViewType, "ndim")(lambda ty: types.literal(ty.ndim))
attribute_rule(TensorPartitionViewType, "dtype")(lambda ty: DTypeType(ty.dtype))


# --------------------------------------------------------------------------------------------------
# Loads
@function_rule(language.load_tile_like)
def _load_tile_like(b):
    z = b.z
    if not isinstance(z, PartitionType):
        raise TileTypingError(f"load_tile_like(x, z): z must be a partition argument (it gives the "
                              f"block position and tile shape), got {describe_type(z)}")
    x = array_arg(b.x, "load_tile_like(x, z): x")
    if x.ndim != z.ndim:
        raise TileTypingError(f"load_tile_like(x, z): x has rank {x.ndim} but the partition z has "
                              f"rank {z.ndim}; they must match")
    return TileType(x.dtype, z.tile_shape)


def _tile_shape_arg(ty, x, what: str, allow_element: bool = False):
    """A tile shape for tensor ``x``: one static power-of-two extent per dimension (``()`` for a
    single element where ``allow_element``)."""
    shape = shape_arg(ty, f"{what}: shape")
    if allow_element and shape == ():
        return shape
    if len(shape) != x.ndim:
        raise TileTypingError(f"{what}: shape {shape} has {len(shape)} entries but the tensor has "
                              f"rank {x.ndim}")
    return shape


def order_arg(ty, ndim: int, what: str):
    """``order=``: None or a static permutation of ``range(ndim)``; ``"C"`` is None (no
    permutation) and ``"F"`` reverses the axes (NumPy's and cuTile's spellings)."""
    if is_none(ty):
        return None
    v = static_value(ty)
    if isinstance(v, str):
        if v not in ("C", "F"):
            raise TileTypingError(f"{what}: order must be 'C', 'F' or a tuple of axes, got {v!r}")
        return None if v == "C" else tuple(range(ndim - 1, -1, -1))
    if not (isinstance(v, tuple) and all(isinstance(i, int) for i in v)):
        raise TileTypingError(f"{what}: order must be a constant tuple of axes such as (1, 0), "
                              f"got {describe_type(ty)}")
    if sorted(v) != list(range(ndim)):
        raise TileTypingError(f"{what}: order {v} is not a permutation of the {ndim} axes "
                              f"{tuple(range(ndim))}")
    return v


def _load_rule(b):
    x = array_arg(b.x, "load: the tensor")
    shape = _tile_shape_arg(b.shape, x, "load", allow_element=True)
    order = order_arg(b.order, x.ndim, "load")
    if order is not None and shape == ():
        raise TileTypingError("load: order= has no meaning for a single-element load (shape=())")
    index_arg(b.index, x.ndim, "load: index")
    padding_arg(b.padding)
    hint_args(b)
    memory_order_arg(b, LOAD_ORDERS, "load")
    bool_arg(b.check_bounds, "load: check_bounds")
    box_width_arg(b.box_width)
    return TileType(x.dtype, shape)


def box_width_arg(ty):
    """``box_width=``: None or a constant power of two (a hint; lowering applies it where it can)."""
    v = int_arg(ty, "load: box_width", allow_none=True)
    if v is not None and (v < 1 or v & (v - 1)):
        raise TileTypingError(f"load: box_width must be None or a constant power of two (64 for "
                              f"one 128-byte line of fp16), got {v}")
    return v


function_rule(language.load)(_load_rule)
method_rule(TensorType, "load", language.load)(_load_rule)


def _partition_sig(x, shape, padding=None):
    """x.partition(shape, padding=None)"""


@method_rule(TensorType, "partition", _partition_sig, op="Tensor.partition")
def _tensor_partition(b):
    x = b.x
    shape = _tile_shape_arg(b.shape, x, "partition")
    return TensorPartitionViewType(x, shape, padding_arg(b.padding))


def _slice_sig(x, axis, start, stop):
    """x.slice(axis, start, stop)"""


@method_rule(TensorType, "slice", _slice_sig, op="Tensor.slice")
def _tensor_slice(b):
    """A view of ``x`` restricted to ``start:stop`` along ``axis``: a tensor of the same kind
    whose facts forget what the slice may change (base alignment, that axis's extent)."""
    x = b.x
    from ._base import axis_arg
    axis = axis_arg(b.axis, x.ndim, "slice: axis")
    for name in ("start", "stop"):
        if not _is_int_scalar(getattr(b, name)):
            raise TileTypingError(f"slice: {name} must be an integer scalar (or 0-d tile), got "
                                  f"{describe_type(getattr(b, name))}")
    return TensorType(x.dtype, x.ndim, sliced_facts(x.facts, x.ndim, axis), x.writable)


def sliced_facts(facts, ndim, axis):
    from ...keys import Facts
    f = facts or Facts.unknown(ndim)
    shape_div = tuple(1 if i == axis else d for i, d in enumerate(f.shape_div))
    return Facts(f.index_bits, 1, shape_div, tuple(f.stride_div), tuple(f.stride_one))


def _partition_load_sig(z, memory_order=_MO.WEAK, memory_scope=None):
    """z.load(memory_order=WEAK, memory_scope=None)"""


@method_rule(PartitionType, "load", _partition_load_sig, op="Partition.load")
def _partition_load(b):
    memory_order_arg(b, LOAD_ORDERS, "load")
    return TileType(b.z.dtype, b.z.tile_shape)


def _partition_store_sig(z, t, memory_order=_MO.WEAK, memory_scope=None, latency=None,
                         allow_tma=True):
    """z.store(t, memory_order=WEAK, memory_scope=None, latency=None, allow_tma=True)"""


@method_rule(PartitionType, "store", _partition_store_sig, op="Partition.store")
def _partition_store(b):
    z = b.z
    value_arg(b.t, z.dtype, z.tile_shape, "store: the stored tile", exact_shape=True)
    memory_order_arg(b, STORE_ORDERS, "store")
    hint_args(b)
    return types.none


def _view_load_sig(v, index, latency=None, allow_tma=True, memory_order=_MO.WEAK,
                   memory_scope=None):
    """v.load(index, latency=None, allow_tma=True, memory_order=WEAK, memory_scope=None)"""


@method_rule(TensorPartitionViewType, "load", _view_load_sig, op="TileView.load")
def _view_load(b):
    v = b.v
    index_arg(b.index, v.ndim, "load: index")
    hint_args(b)
    memory_order_arg(b, LOAD_ORDERS, "load")
    return TileType(v.dtype, v.tile_shape)


def _view_num_tiles_sig(v, axis):
    """v.num_tiles(axis)"""


@method_rule(TensorPartitionViewType, "num_tiles", _view_num_tiles_sig, op="TileView.num_tiles")
def _view_num_tiles(b):
    a = int_arg(b.axis, "num_tiles: axis")
    if not -b.v.ndim <= a < b.v.ndim:
        raise TileTypingError(f"num_tiles: axis {a} is out of bounds for a {b.v.ndim}-d view")
    return types.int32


def stored_shape(t, ndim: int, what: str):
    """The tile shape a store of ``t`` into a rank-``ndim`` tensor writes: ``t``'s own shape,
    or one element per axis for a scalar or 0-d tile (cuTile's ``store``)."""
    if isinstance(t, TileType) and t.ndim:
        if t.ndim != ndim:
            raise TileTypingError(f"{what}: the stored tile has rank {t.ndim} but the tensor has "
                                  f"rank {ndim}; reshape the tile (t.reshape(...)) to the "
                                  f"tensor's rank")
        return t.shape
    if isinstance(t, TileType) or is_scalar(t):
        return (1,) * ndim
    raise TileTypingError(f"{what}: the stored value must be a tile or scalar, got "
                          f"{describe_type(t)}")


def _store_rule(b):
    target = b.target
    if isinstance(target, TensorType):
        if not target.writable:
            raise read_only_error("store to", target)
        shape = stored_shape(b.t, target.ndim, "store")
    elif isinstance(target, TensorPartitionViewType):
        if not target.writable:
            raise read_only_error("store to a view of", target.source)
        shape = target.tile_shape
    elif isinstance(target, PartitionType):
        shape = target.tile_shape
    else:
        raise TileTypingError(f"store: target must be a partition argument, a writable tensor "
                              f"or a tile view, got {describe_type(target)}")
    index_arg(b.index, target.ndim, "store: index")
    order = order_arg(getattr(b, "order", types.none), target.ndim, "store")
    if order is not None and isinstance(target, PartitionType):
        raise TileTypingError("store: order= applies to tile views (w.partition(shape)); a "
                              "partition parameter's layout is fixed by the host")
    value_arg(b.t, target.dtype, shape, "store: the stored tile", exact_shape=True)
    memory_order_arg(b, STORE_ORDERS, "store")
    hint_args(b)
    return types.none


function_rule(language.store)(_store_rule)


def _view_store_sig(target, index, t, order=None, memory_order=_MO.WEAK, memory_scope=None,
                    latency=None, allow_tma=True):
    """v.store(index, t, order=None, memory_order=WEAK, memory_scope=None, latency=None,
    allow_tma=True)"""


method_rule(TensorPartitionViewType, "store", _view_store_sig, op="TileView.store")(_store_rule)


# --------------------------------------------------------------------------------------------------
# Gather / scatter
@function_rule(language.gather)
def _gather(b):
    x = array_arg(b.x, "gather: x")
    shape = gather_shape(b.indices, x.ndim, "gather: indices")
    mask_arg(b.mask, shape, "gather: mask")
    other, name = b.other, "other"
    if not is_none(b.padding_value):                  # cuTile's name for it
        if static_value(b.other) != 0:
            raise TileTypingError("gather: give other= or padding_value= (the same thing), not "
                                  "both")
        other, name = b.padding_value, "padding_value"
    if not (is_scalar(other) or (isinstance(other, TileType))):
        raise TileTypingError(f"gather: {name} must be a scalar or tile, got "
                              f"{describe_type(other)}")
    # the default padding 0 (or 1) reads as False (True) from a bool array
    if not (x.dtype.is_bool and isinstance(other, types.IntegerLiteral) and
            other.literal_value in (0, 1)):
        value_arg(other, x.dtype, shape, f"gather: {name}")
    memory_order_arg(b, LOAD_ORDERS, "gather")
    _element_hints(b, "gather")
    return TileType(x.dtype, shape)


def _element_hints(b, op: str) -> None:
    """``check_bounds`` (a constant bool) and ``latency`` of a gather or scatter."""
    bool_arg(b.check_bounds, f"{op}: check_bounds")
    latency_arg(b.latency)


@function_rule(language.scatter)
def _scatter(b):
    x = array_arg(b.target, "scatter: target", write_action="scatter into")
    shape = gather_shape(b.indices, x.ndim, "scatter: indices")
    mask_arg(b.mask, shape, "scatter: mask")
    value_arg(b.values, x.dtype, shape, "scatter: values")
    memory_order_arg(b, STORE_ORDERS, "scatter")
    _element_hints(b, "scatter")
    return types.none
