"""``tile.Tensor``: device memory + dtype, shape, strides (in elements) and offset.

Tensors are created by ``tile.api`` constructors, copies (``deviceops.transfer``) and
``tile.from_dlpack``; views (``reshape``/``view``, slices, ``reinterpret``) share the storage and
cost no GPU work. Metadata never synchronizes; reading values (``to_numpy``, ``repr``) does.

Ownership (runtime checks that replace Rust's borrow checker), all ``tile.TensorError``:

* ``t.into_partition(shape)`` *moves* ``t``: using it again fails until ``p.unpartition()``.
* ``t.partition(shape)`` / ``into_partition`` need exclusive write access to the bytes the view
  covers: no other live partition may overlap them. Other views do not matter (holding a Python
  reference is not a use); an output that overlaps another argument of the same launch is refused
  at launch, and work in flight on other streams is ordered automatically.
* Tensors held by ``tile.shared()`` / ``op.shared()`` are read-only; ``try_partition`` takes one
  only when a single shared handle remains.
"""
from __future__ import annotations

import operator
from typing import Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import TensorError
from .. import layout as _layout
from .memory import Storage
from .partition import Partition

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from ..tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

# The DeviceOps behind ``Tensor.to_host()`` / ``dup()``. DeviceOps live in ``tilejit.deviceops``, one
# floor above runtime, which binds them here when it is imported (``tilejit`` always imports it).
_ops: dict = {}


def bind_ops(**factories) -> None:
    """Install the DeviceOp constructors that tensor methods return (called by ``tilejit.deviceops``)."""
    _ops.update(factories)


class Tensor:
    """A strided view of device memory. Not constructed directly: use ``tile.api`` or
    ``tile.from_dlpack``.

    ``shape``, ``strides`` (elements), ``dtype``, ``ndim``, ``size``, ``nbytes``, ``is_contiguous``,
    ``device``, ``device_id``, ``device_pointer`` (int address of element [0, ..., 0]), ``offset``
    (elements from the start of the storage).
    """

    __slots__ = ("_storage", "_shape", "_strides", "_offset_bytes", "_dtype", "_moved",
                 "_contig", "_share_count", "_info", "_info_w", "_pinfo", "_extent", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("tile.Tensor is not constructed directly: use tile.api.zeros/empty/"
                        "from_numpy(...), tile.from_dlpack(obj) or a view of an existing tensor")

    # --- construction ------------------------------------------------------------------------------
    @classmethod
    def _new(cls, storage: Storage, shape, strides, offset_bytes: int, dtype) -> "Tensor":
        return cls._wrap(storage, tuple([int(n) for n in shape]), tuple([int(s) for s in strides]),
                         int(offset_bytes), dtype)

    @classmethod
    def _wrap(cls, storage: Storage, shape: tuple, strides: tuple, offset_bytes: int,
              dtype) -> "Tensor":
        """``_new`` for callers that already hold tuples of ints (the foreign-array hot path)."""
        t = object.__new__(cls)
        t._storage = storage
        t._shape = shape
        t._strides = strides
        t._offset_bytes = offset_bytes
        t._dtype = dtype
        t._moved = False
        t._contig = None        # computed on first use (is_contiguous)
        t._share_count = 0
        t._info = None          # cached argspec.ArgInfo (read-only use)
        t._info_w = None        # cached argspec.ArgInfo (tile.atomic use)
        t._pinfo = None         # cached argspec.ArgInfo of its partitions, by tile shape
        t._extent = None        # cached byte range [start, end) (_byte_extent)
        return t

    @classmethod
    def _contiguous(cls, storage: Storage, shape, dtype) -> "Tensor":
        shape = tuple(shape)
        return cls._new(storage, shape, _layout.contiguous_strides(shape), 0, dtype)

    # --- metadata ----------------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> Tuple[int, ...]:
        """Strides in elements (not bytes, unlike NumPy)."""
        return self._strides

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return _layout.prod(self._shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def is_contiguous(self) -> bool:
        c = self._contig
        if c is None:
            c = self._contig = _layout.is_contiguous(self._shape, self._strides)
        return c

    @property
    def offset(self) -> int:
        """Offset of element [0, ..., 0] from the start of the storage, in elements."""
        return self._offset_bytes // self._dtype.itemsize

    @property
    def device(self):
        return self._storage.device

    @property
    def device_id(self) -> int:
        return self._storage.device.ordinal

    @property
    def device_pointer(self) -> int:
        """Address of element [0, ..., 0] (offset applied). A simulated address on the simulator."""
        self._check_usable("take the device pointer of")
        return self._storage.ptr + self._offset_bytes

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def is_moved(self) -> bool:
        return self._moved

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def _byte_extent(self) -> Tuple[int, int]:
        """The device byte range ``[start, end)`` this view covers (metadata only)."""
        e = self._extent
        if e is None:
            start = self._storage.ptr + self._offset_bytes
            e = self._extent = (start, start + max(_layout.span_elements(self._shape,
                                                                         self._strides), 0)
                                * self._dtype.itemsize)
        return e

    # --- checks -------------------------------------------------------------------------------------
    def _check_usable(self, what: str) -> None:
        if self._moved:
            raise TensorError(
                f"cannot {what} tensor(shape={self._shape}, dtype={self._dtype.name}): it was "
                f"moved into a partition by into_partition(); get it back with p.unpartition(), "
                f"or use t.partition(shape) to write in place without moving it")

    # --- views -------------------------------------------------------------------------------------
    def _derive(self, shape, strides, offset_bytes: int, dtype=None) -> "Tensor":
        return Tensor._new(self._storage, shape, strides, offset_bytes,
                           self._dtype if dtype is None else dtype)

    def reshape(self, *shape) -> "Tensor":
        """A zero-copy view with a new shape (one ``-1`` allowed). Needs a contiguous tensor."""
        self._check_usable("reshape")
        shape = _layout.normalize_shape(shape[0] if len(shape) == 1 else shape)
        try:
            shape = _layout.infer_reshape(shape, self.size)
        except ValueError as e:
            raise TensorError(f"{e} (tensor shape {self._shape})") from None
        if not self.is_contiguous:
            raise TensorError(f"reshape needs a contiguous tensor, but this view has shape "
                              f"{self._shape} and strides {self._strides}; make a contiguous copy "
                              f"first with api.dup(t)")
        return self._derive(shape, _layout.contiguous_strides(shape), self._offset_bytes)

    def permute(self, *dims) -> "Tensor":
        """A zero-copy view with the axes reordered (``torch.permute``/``numpy.transpose``):
        axis ``i`` of the result is axis ``dims[i]`` of this tensor."""
        self._check_usable("permute")
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        n = len(self._shape)
        norm = tuple(int(d) + n if int(d) < 0 else int(d) for d in dims)
        if sorted(norm) != list(range(n)):
            raise TensorError(f"permute: {tuple(dims)} is not a permutation of the {n} axes of a "
                              f"tensor with shape {self._shape}")
        return self._derive(tuple(self._shape[d] for d in norm),
                            tuple(self._strides[d] for d in norm), self._offset_bytes)

    def transpose(self, dim0: int = 0, dim1: int = 1) -> "Tensor":
        """A zero-copy view with axes ``dim0`` and ``dim1`` swapped (``torch.transpose``)."""
        order = list(range(len(self._shape)))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        return self.permute(order)

    @property
    def T(self) -> "Tensor":
        """The view with all axes reversed (``numpy.ndarray.T``)."""
        return self.permute(tuple(range(len(self._shape)))[::-1])

    def view(self, *shape) -> "Tensor":
        """Same as :meth:`reshape` (zero-copy; contiguous tensors only)."""
        return self.reshape(*shape)

    def reinterpret(self, dtype, shape=None) -> "Tensor":
        """View the same bytes as another dtype (zero-copy; contiguous tensors only).

        ``shape`` defaults to 1-D. The byte size must match and the pointer must be aligned to the
        new element size.
        """
        self._check_usable("reinterpret")
        dt = _dt.as_dtype(dtype)
        if not self.is_contiguous:
            raise TensorError(f"reinterpret needs a contiguous tensor, but this view has shape "
                              f"{self._shape} and strides {self._strides}; copy it with api.dup(t)")
        if shape is None:
            if self.nbytes % dt.itemsize:
                raise TensorError(f"cannot reinterpret {self.nbytes} bytes as {dt.name} "
                                  f"({dt.itemsize}-byte elements)")
            shape = (self.nbytes // dt.itemsize,)
        shape = _layout.normalize_shape(shape)
        if any(n < 0 for n in shape):
            raise TensorError(f"negative dimension in shape {shape}")
        new_bytes = _layout.prod(shape) * dt.itemsize
        if new_bytes != self.nbytes:
            raise TensorError(f"reinterpret as {dt.name}{list(shape)} needs {new_bytes} bytes but "
                              f"the tensor has {self.nbytes} ({self._dtype.name}{list(self._shape)})")
        ptr = self._storage.ptr + self._offset_bytes
        if ptr % dt.itemsize:
            raise TensorError(f"cannot reinterpret as {dt.name}: the data pointer 0x{ptr:x} is not "
                              f"aligned to {dt.itemsize} bytes")
        return self._derive(shape, _layout.contiguous_strides(shape), self._offset_bytes, dt)

    def __getitem__(self, index) -> "Tensor":
        """Zero-copy basic indexing: ints (drop the dim), slices with step >= 1, ``...``."""
        self._check_usable("index")
        if not isinstance(index, tuple):
            index = (index,)
        n_ell = sum(1 for i in index if i is Ellipsis)
        if n_ell > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        n_real = len(index) - n_ell
        if n_real > self.ndim:
            raise IndexError(f"too many indices for tensor: tensor is {self.ndim}-dimensional, "
                             f"but {n_real} were indexed")
        if n_ell:
            k = index.index(Ellipsis)
            index = index[:k] + (slice(None),) * (self.ndim - n_real) + index[k + 1:]
        else:
            index = index + (slice(None),) * (self.ndim - n_real)
        shape, strides = [], []
        offset = self._offset_bytes
        isz = self._dtype.itemsize
        for axis, (idx, n, s) in enumerate(zip(index, self._shape, self._strides)):
            if isinstance(idx, slice):
                start, stop, step = idx.indices(n)
                if idx.step is not None and step < 1:
                    raise TensorError(f"slice step must be >= 1 (got {idx.step} on axis {axis}); "
                                      f"reversed views are not supported")
                length = max(0, (stop - start + step - 1) // step)
                if length:
                    offset += start * s * isz
                shape.append(length)
                strides.append(s * step)
            elif idx is None:
                raise TensorError("None / np.newaxis indexing is not supported; use "
                                  "t.reshape(...) to add a dimension of size 1")
            else:
                try:
                    i = operator.index(idx)
                except TypeError:
                    raise TensorError(f"only integers, slices and '...' are valid tensor indices "
                                      f"(got {type(idx).__name__}); fancy indexing needs a kernel") \
                        from None
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                offset += (i % n) * s * isz
        return self._derive(shape, strides, offset)

    # --- partitions --------------------------------------------------------------------------------
    def partition(self, shape):
        """A borrowed output partition: the kernel writes into this tensor in place.

        ``shape`` is the tile shape (powers of two, rank 1-3, same rank as the tensor). No other
        live partition may cover any of its bytes (views do not count; disjoint slices of one
        tensor may be partitioned at once).
        """
        return Partition._create(self, shape, owned=False, how="partition")

    def into_partition(self, shape):
        """An owned output partition: the tensor is moved into it until ``p.unpartition()``."""
        return Partition._create(self, shape, owned=True, how="into_partition")

    def try_partition(self, shape):
        """Like :meth:`into_partition`, allowed on a shared tensor when one shared handle remains.

        Raises TensorError naming what still holds the storage otherwise.
        """
        return Partition._create(self, shape, owned=True, how="try_partition")

    # --- host transfer -----------------------------------------------------------------------------
    def to_host(self):
        """A DeviceOp that copies this tensor into a new NumPy array (C order)."""
        self._check_usable("copy")
        return _ops["to_host"](self)

    def to_numpy(self) -> np.ndarray:
        """Copy to a new NumPy array (synchronizes)."""
        return self.to_host().sync()

    def dup(self):
        """A DeviceOp producing a contiguous copy of this tensor on the same device."""
        return _ops["dup"](self)

    def to(self, device):
        """A DeviceOp producing a contiguous copy of this tensor on ``device`` (an ordinal or a
        ``tile.Device``): ``t1 = t.to(1).sync()``."""
        self._check_usable("copy")
        return _ops["to"](self, device)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("implicit conversion of a tile.Tensor to a NumPy array is not allowed: "
                        "use t.to_numpy() (a synchronizing copy)")

    # --- interop -----------------------------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .dlpack import export_capsule
        return export_capsule(self, stream=stream, max_version=max_version, dl_device=dl_device,
                              copy=copy)

    def __dlpack_device__(self):
        from .dlpack import device_tuple
        return device_tuple(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        from .dlpack import cuda_array_interface
        return cuda_array_interface(self)

    # --- display -----------------------------------------------------------------------------------
    def state(self) -> str:
        """Ownership in words: ``owned``, ``borrowed from <producer>``, ``moved into a
        partition``, ``written by a live partition``, ``shared by N handles``."""
        if self._moved:
            return "moved into a partition (p.unpartition() gives it back)"
        st = self._storage
        leases = [r() for r in (st.leases or ())]
        if any(p is not None and p._leased for p in leases):
            return "written by a live partition"
        if self._share_count:
            return f"shared by {self._share_count} handle(s) (read-only)"
        owner = st.owner
        return "owned" if owner is None else f"borrowed from {type(owner).__name__}"

    def __repr__(self) -> str:
        """Metadata, state and the values as NumPy prints them (summarized like NumPy: only the
        edges of a large tensor are read, see runtime.preview)."""
        try:
            head = (f"tile.Tensor(shape={self._shape}, dtype={self._dtype.name}, "
                    f"device={self._storage.device.label}")
            if not self.is_contiguous:
                head += f", strides={self._strides}"
            if self._moved:
                return head + ", moved into a partition)"
            state = self.state()
            head += "" if state == "owned" else f", {state}"
            from .preview import values_text
            values = values_text(self, prefix="    ")
            sep = ",\n    " if "\n" in values else ", "
            return f"{head}{sep}{values})"
        except Exception as e:  # repr must never raise
            return f"<tile.Tensor (repr failed: {type(e).__name__}: {e})>"

    def _repr_html_(self) -> str:
        import html
        try:
            rows = [("shape", self._shape), ("dtype", self._dtype.name),
                    ("device", self._storage.device.label),
                    ("state", self.state())]
            if not self.is_contiguous:
                rows.append(("strides", self._strides))
            if not self._moved:
                from .preview import values_text
                rows.append(("values", values_text(self, separator=" ")))
            body = "".join(f"<tr><th style='text-align:left'>{k}</th><td><pre style='margin:0'>"
                           f"{html.escape(str(v))}</pre></td></tr>" for k, v in rows)
            return f"<div><b>tile.Tensor</b><table>{body}</table></div>"
        except Exception as e:  # noqa: BLE001  (a repr must never raise)
            return f"<pre>{html.escape(repr(self))} ({type(e).__name__})</pre>"


__all__ = ["Tensor"]
