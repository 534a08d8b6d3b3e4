"""cuTile's advanced indexing: ``ct.load_advanced_indexing``/``ct.store_advanced_indexing``
with ``ct.Slice``.

``indices`` has one entry per array axis: exactly one 1-D integer tile (the *sparse* axis:
each value picks one slice of the array there) and a ``ct.Slice(start, length)`` for every other
axis (the *dense* axes: ``[start, start + length)``, ``length`` a constant power of two). The
tile read or written has shape ``(len_0, ..., len_{n-1})``.

That is an outer-product gather: element ``[i0, ..., in-1]`` is ``array[v0[i0], ..., vn-1[in-1]]``
where ``vk`` is axis k's index vector (the sparse tile, or ``start + arange(length)``). So both
ops are ``tile.gather``/``tile.scatter`` with one index tile per axis, shaped to broadcast along
its own axis only: out-of-bounds elements read as the padding and are skipped on stores, as in
cuTile. (cuTile lowers them to Tile IR 13.3's gather/scatter view, TMA on Blackwell; tilejit's
element-wise gather gives the same values.)

``ct.Slice(start, length)`` is a pair ``(_Index.SLICE, start + arange(length))``: the tag tells
it from a sparse tile when the indices are checked at compile time (``static_eval``).
"""
from __future__ import annotations

import enum

from .. import language as L
from ..dtypes import int32 as _int32
from ..implicit_casts import implicit_cast as _implicit_cast
from ..language import PaddingMode, TileFunction, static_eval, static_iter

_BOTH = "load_advanced_indexing/store_advanced_indexing"
#: the padding a load's out-of-bounds elements get (UNDETERMINED: any value; 0 here)
_PADDING = {PaddingMode.UNDETERMINED: 0, PaddingMode.ZERO: 0, PaddingMode.NEG_ZERO: -0.0,
            PaddingMode.NAN: float("nan"), PaddingMode.POS_INF: float("inf"),
            PaddingMode.NEG_INF: float("-inf")}


class _Index(enum.Enum):
    SLICE = 0


# --- compile-time checks and shapes (run by static_eval on the indices' types) ---------------
def _is_slice(ix) -> bool:
    return isinstance(ix, tuple) and len(ix) == 2 and ix[0] is _Index.SLICE


def _vector(ix):
    """Axis ``ix``'s 1-D index tile."""
    return ix[1] if _is_slice(ix) else ix


def _along(ndim: int, axis: int, ix) -> tuple:
    """The shape that puts axis ``axis``'s index vector along that axis only."""
    return tuple(_vector(ix).shape[0] if j == axis else 1 for j in range(ndim))


def _slice_problem(start, length) -> str:
    if not isinstance(length, int) or isinstance(length, bool):
        return "ct.Slice(start, length): length must be a compile-time constant int"
    if length <= 0 or length & (length - 1):
        return f"ct.Slice(start, length): length {length} must be a power of two"
    dtype = getattr(start, "dtype", None)
    if isinstance(start, bool) or not isinstance(start, int) and \
            (dtype is None or not dtype.is_integer or not dtype.is_signed):
        return f"ct.Slice(start, length): start must be a signed integer scalar, got {start!r}"
    return ""


def _problem(op: str, ndim: int, indices, tile=None) -> str:
    """What is wrong with ``op``'s arguments (cuTile's words), or ""."""
    if ndim < 2:
        other = "ct.gather()" if op.startswith("load") else "ct.scatter()"
        return f"{op} requires a 2D or higher-rank array; use {other} for 1D arrays"
    if not isinstance(indices, tuple):
        return f"{op}: indices must be a tuple with one entry per array axis"
    if len(indices) != ndim:
        return f"{_BOTH} index length {len(indices)} does not match array rank {ndim}"
    sparse = [d for d, ix in enumerate(indices) if not _is_slice(ix)]
    for d in sparse:
        nd, dtype = getattr(indices[d], "ndim", None), getattr(indices[d], "dtype", None)
        if nd is None or dtype is None:
            return (f"{_BOTH} index at dim {d} must be a 1D integer Tile (sparse dim) or "
                    f"ct.Slice(start, length) (dense dim), got {indices[d]!r}")
        if nd != 1:
            return f"Sparse index at dim {d} must be a 1D integer tile, got {nd}D"
        if not dtype.is_integer:
            return f"Sparse index at dim {d} must be an integer tile, got dtype {dtype}"
    if len(sparse) != 1:
        found = "none found" if not sparse else f"found {len(sparse)} at dims {sparse}"
        return f"{_BOTH}: exactly one index must be a 1D integer Tile (the sparse dim); {found}"
    if op.startswith("store"):
        implied = tuple(_vector(ix).shape[0] for ix in indices)
        shape = getattr(tile, "shape", None)
        if not isinstance(shape, tuple):
            return f"{op}: the value stored must be a tile of shape {implied}, got {tile!r}"
        if tuple(shape) != implied:
            return (f"Tile shape {tuple(shape)} does not match the shape implied by indices "
                    f"{implied}")
    return ""


# --- the kernel language ----------------------------------------------------------------------
@TileFunction
def Slice(start, length, /):
    """``ct.Slice(start, length)``: the dense range ``[start, start + length)`` of one axis in
    ``ct.load_advanced_indexing``/``ct.store_advanced_indexing`` (``length``: a constant power
    of two)."""
    problem = static_eval(_slice_problem(start, length))
    L.static_assert(problem == "", problem)
    return (_Index.SLICE, L.arange(length, dtype=_int32) + start)


@TileFunction
def _index_tiles(array, indices, op, tile):
    nd = array.ndim
    problem = static_eval(_problem(op, nd, indices, tile))
    L.static_assert(problem == "", problem)
    return tuple(L.reshape(static_eval(_vector(ix)), static_eval(_along(nd, i, ix)))
                 for i, ix in static_iter(enumerate(indices)))


@TileFunction
def load_advanced_indexing(array, indices, /, *, padding_mode=PaddingMode.UNDETERMINED,
                           latency=None, allow_tma=None):
    """``ct.load_advanced_indexing``: the tile ``array[v0 x v1 x ...]`` (one index vector per
    axis: the sparse tile or a ``ct.Slice``); out-of-bounds elements read as ``padding_mode``
    says. ``allow_tma`` has no effect (an element-wise gather)."""
    return L.gather(array, _index_tiles(array, indices, "load_advanced_indexing", None),
                    other=_implicit_cast(static_eval(_PADDING[padding_mode]), array.dtype,
                                         "Invalid padding value"),
                    latency=latency)


@TileFunction
def store_advanced_indexing(array, indices, tile, /, *, latency=None, allow_tma=None):
    """``ct.store_advanced_indexing``: ``tile`` (of exactly the shape the indices imply) into
    those elements of ``array``, converted by cuTile's implicit rule; out-of-bounds elements
    are skipped. A sparse index repeated is a race (undefined which value lands)."""
    L.scatter(array, _index_tiles(array, indices, "store_advanced_indexing", tile),
              _implicit_cast(tile, array.dtype, "Stored tile dtype is incompatible with array "
                             "dtype"),
              latency=latency)
