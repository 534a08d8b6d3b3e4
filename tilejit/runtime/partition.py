"""``tile.Partition``: a tensor split into disjoint power-of-two tiles, one per block, for writing.

A partition holds an exclusive write *lease* on the bytes its tensor covers from creation until

* the launch that consumes it completes (the dispatcher calls :meth:`Partition._release`; passing
  the same partition to another launch takes the lease again, with the same checks),
* ``p.unpartition()``, or
* the partition is garbage collected.

While the lease is held, no other partition covering any of those bytes can be created
(partitions of disjoint slices of one tensor may coexist). Other views of the memory do not
matter: holding a Python reference is not a use. Conflicts between the arguments of one launch
are checked at launch (``argspec.check_launch_aliasing``), and work in flight on other streams is
ordered by the storage's stream tracking.
"""
from __future__ import annotations

import sys
import weakref

import numpy as np
from typing import Tuple

from ..errors import TensorError
from .. import layout as _layout
from .hostarrays import in_host_memory, is_jax_array, writable_host_array

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from ..tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

# IPython keeps every displayed value (Out[n], _, __): a lazy op shown in a cell holds its
# partitions until that history is cleared.
_NOTEBOOK_HINT = ("; in IPython/Jupyter a displayed DeviceOp stays alive in Out[n] and _ (end the "
                  "cell with ';' to not display it, or run %reset -f out)")

MAX_RANK = 3


_valid_tiles: dict = {}     # (tile shape as given, rank) -> the checked tuple of ints
_last_tile: dict = {}       # (tile shape, rank) -> (that tuple object, the checked shape)
_INTS = ((), (int,), (int, int), (int, int, int))


def checked_tile(shape, nd: int, owner) -> Tuple[int, ...]:
    """``shape`` as a checked tile shape for an array of rank ``nd`` (``owner``: the array, named
    in errors); TensorError unless powers of two, rank 1-3, rank ``nd``."""
    # Hottest path: the very tuple object seen before (a literal in the caller's code is one
    # object at every call), keyed by value and checked by identity.
    seen = _last_tile.get((shape, nd)) if type(shape) is tuple else None
    if seen is not None and seen[0] is shape:
        return seen[1]
    # a tuple of plain ints seen before (True == 1 and np.int64(4) == 4 hash alike, so other
    # element types always take the full check)
    plain = type(shape) is tuple and len(shape) < 4 and tuple(map(type, shape)) == _INTS[len(shape)]
    tile = _valid_tiles.get((shape, nd)) if plain else None
    if tile is None:
        tile = _check_tile_shape(shape, nd, _shape_of(owner))
        if plain and len(_valid_tiles) < 4096:
            _valid_tiles[(shape, nd)] = tile
    if plain and len(_last_tile) < 4096:
        _last_tile[(shape, nd)] = (shape, tile)
    return tile


def validate_tile_shape(shape, tensor) -> Tuple[int, ...]:
    """The tile shape as a tuple; TensorError unless powers of two, rank 1-3, rank of ``tensor``,
    and ``tensor`` not a broadcast (stride 0) view."""
    tile = checked_tile(shape, len(tensor._shape), tensor)
    if 0 in tensor._strides:
        for axis, (n, s) in enumerate(zip(tensor.shape, tensor.strides)):
            if s == 0 and n > 1:
                raise TensorError(f"cannot partition a broadcast tensor (stride 0 on axis "
                                  f"{axis}): blocks would write the same memory; copy it with "
                                  f"api.dup(t)")
    return tile


def _check_tile_shape(shape, nd: int, tensor_shape) -> Tuple[int, ...]:
    try:
        tile = _layout.normalize_shape(shape, "partition tile shape")
    except TypeError as e:
        raise TensorError(str(e)) from None
    if not 1 <= len(tile) <= MAX_RANK:
        raise TensorError(f"partition tile shape {tile} has rank {len(tile)}; partitions have rank "
                          f"1 to {MAX_RANK} (reshape the tensor first)")
    if len(tile) != nd:
        raise TensorError(f"partition tile shape {tile} has rank {len(tile)} but the tensor has "
                          f"rank {nd} (shape {tuple(tensor_shape)}); give one tile extent per dimension")
    for axis, n in enumerate(tile):
        if n < 1 or n & (n - 1):
            raise TensorError(f"partition tile shape {tile}: extent {n} on axis {axis} is not a "
                              f"power of two; tile extents must be powers of two (1, 2, 4, ..., "
                              f"e.g. {_suggest(tile)})")
    return tile


def _suggest(tile) -> tuple:
    return tuple(_layout.pow2_ceil(n) for n in tile)


class Partition:
    """An output view of a tensor split into tiles of ``tile_shape``; the launch grid is
    ``ceil(tensor.shape / tile_shape)`` per axis (``grid``, padded to 3 dims with 1s)."""

    __slots__ = ("_tensor", "tile_shape", "owned", "_leased", "_consumed", "_info", "_grid",
                 "_extent", "_ref", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("create partitions with t.partition(shape), t.into_partition(shape) or "
                        "t.try_partition(shape)")

    @classmethod
    def _create(cls, tensor, shape, owned: bool, how: str) -> "Partition":
        if tensor._moved:
            tensor._check_usable(how)
        tile = validate_tile_shape(shape, tensor)
        if tensor._share_count and how != "try_partition":
            raise TensorError(
                f"cannot {how} a shared tensor (held by {tensor._share_count} tile.shared()/"
                f".shared() handle(s)): shared tensors are read-only. Use t.try_partition(shape), "
                f"which succeeds when only one shared handle remains, or partition a copy "
                f"(api.dup(t))")
        if how == "try_partition" and tensor._share_count > 1:
            raise TensorError(f"try_partition: the tensor is held by {tensor._share_count} shared "
                              f"handles; drop the others first (del them) or partition a copy")
        p = cls._new(tensor, tile, owned)
        p._acquire(how)
        if owned:
            tensor._moved = True
        return p

    @classmethod
    def _new(cls, tensor, tile, owned: bool) -> "Partition":
        """The one constructor: every field is set here (the C launcher clones a partition made
        by it, a prototype, and sets only the tensor, tile, extent and weakref)."""
        p = object.__new__(cls)
        p._tensor = tensor
        p.tile_shape = tile
        p.owned = owned
        p._leased = False
        p._consumed = False
        p._info = None
        p._grid = None
        p._extent = None if tensor is None else tensor._extent or tensor._byte_extent()
        p._ref = weakref.ref(p)
        return p

    # --- lease -------------------------------------------------------------------------------------
    def _acquire(self, how: str = "partition") -> None:
        """Take the write lease: no other live partition may cover any of the same bytes."""
        if self._leased:
            return
        st = self._tensor._storage
        leases = st.leases
        if leases is None:
            leases = st.leases = []
        elif leases:
            s0, e0 = self._extent
            for ref in leases:
                q = ref()
                if q is None or q is self or not q._leased:
                    continue
                s1, e1 = q._extent
                if s0 < e1 and s1 < e0:
                    t, other_tile = self._tensor, q.tile_shape
                    q = None        # the traceback must not keep the other partition alive
                    raise TensorError(
                        f"cannot {how} tensor(shape={t.shape}, dtype={t.dtype.name}): its memory "
                        f"is already partitioned (live partition with tile shape {other_tile}); "
                        f"finish or drop that partition first (p.unpartition() or del p)"
                        f"{_NOTEBOOK_HINT if 'IPython' in sys.modules else ''}")
            if len(leases) > 8:                 # forget partitions that are gone
                leases[:] = [r for r in leases if r() is not None]
        leases.append(self._ref)
        self._leased = True

    def _release(self) -> None:
        """End the write lease (the dispatcher calls this when the consuming launch completes)."""
        if self._leased:
            self._leased = False
            try:
                self._tensor._storage.leases.remove(self._ref)
            except ValueError:
                pass

    def _check_usable(self, what: str = "use") -> None:
        if self._consumed:
            raise TensorError(f"cannot {what} this partition: unpartition() was already called on "
                              f"it; partition the tensor again")

    # --- public ------------------------------------------------------------------------------------
    @property
    def tensor(self):
        """The partitioned tensor (for owned partitions prefer ``unpartition()``)."""
        return self._tensor

    @property
    def dtype(self):
        return self._tensor.dtype

    @property
    def ndim(self) -> int:
        return len(self.tile_shape)

    @property
    def tensor_shape(self) -> Tuple[int, ...]:
        return self._tensor.shape

    @property
    def shape(self) -> Tuple[int, ...]:
        """The tile shape (what a kernel sees as ``z.shape``)."""
        return self.tile_shape

    @property
    def grid(self) -> Tuple[int, int, int]:
        g = self._grid
        if g is None:          # a tensor's shape never changes
            g = tuple(-(-n // t) for n, t in zip(self._tensor.shape, self.tile_shape))
            g = self._grid = g + (1,) * (3 - len(g))
        return g

    @property
    def is_owned(self) -> bool:
        return self.owned

    def unpartition(self):
        """Give the tensor back (un-moving it for owned partitions) and end the lease."""
        self._check_usable("unpartition")
        self._consumed = True
        self._release()
        t = self._tensor
        t._moved = False
        return t

    def __repr__(self) -> str:
        t = self._tensor
        state = "consumed" if self._consumed else ("owned" if self.owned else "borrowed")
        return (f"tile.Partition(tile_shape={self.tile_shape}, grid={self.grid}, "
                f"tensor_shape={t.shape}, dtype={t.dtype.name}, {state})")


__all__ = ["Partition", "ForeignPartition", "HostPartition", "partition", "validate_tile_shape"]


class ForeignPartition:
    """``tile.partition(array, tile_shape)`` of a foreign GPU array (PyTorch, CuPy, ...): an
    output partition read from the array's metadata at launch, with no tilejit tensor made.

    It holds no lease between launches (tilejit does not own the memory); within a launch the
    usual checks apply (no other argument may overlap it). On paths that need a real tensor (the
    simulator, DLPack-only producers) the launch imports the array for its duration.
    """

    __slots__ = ("value", "tile_shape", "_live")
    wraps_foreign = True

    def __init__(self, value, tile_shape):
        self.value = value
        self.tile_shape = tile_shape
        self._live = None            # the imported Partition while a general-path launch runs

    @property
    def shape(self):
        return _shape_of(self.value)

    def __repr__(self) -> str:
        return f"tile.partition({type(self.value).__name__}{self.shape}, tile={self.tile_shape})"


class HostPartition:
    """``tile.partition(np_array, tile_shape)``: an array in host memory as a kernel output, as in
    Numba. Each launch copies it to the device, runs, and copies the results back into it once
    the kernel has finished (``array`` is the NumPy array written back; ``value`` what was
    passed, e.g. a CPU torch tensor viewed through ``array``)."""

    __slots__ = ("array", "tile_shape", "value")

    def __init__(self, array: np.ndarray, tile_shape, value=None):
        self.array = array
        self.tile_shape = tile_shape
        self.value = array if value is None else value

    @property
    def shape(self):
        return self.array.shape

    def __repr__(self) -> str:
        return (f"tile.partition({type(self.value).__name__}{self.shape}, tile={self.tile_shape}; "
                f"copied in, and back after each launch)")


_Tensor = None


def _shape_of(array) -> Tuple[int, ...]:
    shape = getattr(array, "shape", None)
    if shape is None:
        shape = array.__cuda_array_interface__["shape"]
    return tuple(shape)


def partition(array, tile_shape):
    """An output partition of ``array`` with tiles of ``tile_shape`` (powers of two, one per
    axis): ``t.partition(tile_shape)`` for a ``tile.Tensor``; for a GPU array of another library
    (a torch tensor, a CuPy array, ...) a lightweight partition read from its metadata at each
    launch, the cheap way to write kernel outputs into them; for a NumPy array (or another host
    array NumPy can write through, such as a CPU torch tensor) a partition copied to the device
    and back around each launch, as in Numba. JAX arrays and read-only arrays are refused: the
    results could not be written back into them.

    Args:
        array: A ``tile.Tensor``, a GPU array of another library (DLPack or
            ``__cuda_array_interface__``), or a writable NumPy array.
        tile_shape: The tile each block writes: one power of two per axis of ``array`` (rank
            1-3). The launch grid is ``ceil(array.shape / tile_shape)`` per axis.
    """
    global _Tensor
    tp = type(array)
    if tp in _foreign_types:            # the hot path: a foreign array type seen before
        return ForeignPartition(array, checked_tile(tile_shape, array.ndim, array))
    if _Tensor is None:                 # tensor.py imports this module: bind the class late
        from .tensor import Tensor as _Tensor
    if tp is _Tensor or isinstance(array, _Tensor):
        return array.partition(tile_shape)
    if isinstance(array, (Partition, ForeignPartition, HostPartition)):
        raise TensorError("tile.partition() takes an array, not a partition")
    if in_host_memory(array) or is_jax_array(array):
        # copied in and back around each launch (runtime.hostarrays): NumPy arrays and host
        # arrays NumPy can write through; JAX and read-only arrays are refused here
        host = writable_host_array(array, "tile.partition()")
        return HostPartition(host, checked_tile(tile_shape, host.ndim, host), array)
    if not (hasattr(array, "__dlpack__") or hasattr(array, "__cuda_array_interface__")):
        raise TensorError(f"tile.partition() needs a tile.Tensor or a DLPack / "
                          f"__cuda_array_interface__ GPU array, got {type(array).__name__}")
    tile = checked_tile(tile_shape, len(_shape_of(array)), array)
    if isinstance(getattr(array, "ndim", None), int):
        _foreign_types.add(tp)          # the checks above hold for every array of this type
    return ForeignPartition(array, tile)


_foreign_types: set = set()     # array types tile.partition accepted (with an int `ndim`)


def _use_native():
    # With the C extension a torch tensor or CuPy array and a tuple of powers of two is
    # partitioned in C (one call, no Python frame) once the dispatcher has registered the
    # runtime's layout; everything else, every error included, comes back here.
    global partition
    from .. import native
    ext = native.ext()
    if ext is not None:
        ext.set_partition_fallback(partition)
        partition = ext.partition


_use_native()

