"""Kernel argument classification: specialization keys (contract C2) and ABI values (contract C1).

``classify(value)`` returns an :class:`ArgInfo`:

* ``key``: a :mod:`tilejit.keys` key (``TensorKey``, ``PartitionKey`` or ``ScalarKey``; their
  definitions, the facts and the ABI-slot rules live there).
* ``params``: the C1 parameter values as Python ints/floats, in ABI order
  (``base, shape..., stride...`` for arrays; one value for scalars).
* ``slots``: the C type of each ABI value (``"u64"``, ``"i32"``, ``"f16"`` ...; ``key.abi_slots()``),
  which :class:`tilejit.runtime.cuda_executable.ParamPacker` turns into a byte layout. Slots depend only on
  the key, so one packer serves every launch of a compiled specialization.
* ``grid`` (partitions), ``tensor``, ``storage``, ``writable``, ``value`` (what the caller passed).
* ``prepare(stream)`` / ``finish(stream)``: hooks or None. NumPy arrays are copied to the device in
  ``prepare`` (their ``params`` are only known then) and, when passed writable through
  ``tile.atomic(array)``, copied back in ``finish``.

Tensors and partitions cache their ArgInfo (metadata is immutable), so classifying them on the
launch hot path is a type check and an attribute load. Cached infos are shared: never mutate them.
"""
from __future__ import annotations

import weakref
from typing import Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from .. import keys as _keys
from .. import scalars as _scalars
from ..errors import LaunchError, TensorError
from ..keys import Facts, array_slots, scalar_slot
from . import foreign as _foreign
from .. import layout as _layout
from ..memo import BoundedMemo
from .hostarrays import (broadcast_axes, broadcast_input, one_per_run, output_array,
                         run_strides, writable_host_array)
from .partition import ForeignPartition, HostPartition, Partition
from .tensor import Tensor

MAX_GRID_DIM = 1 << 24          # grid dims must be < 2^24 (tileiras / driver limit for tile kernels)


class atomic:
    """``tile.writable(x)``, also spelled ``tile.atomic(x)``: pass ``x`` (a Tensor, DLPack/CAI
    object or NumPy array) as a *writable* tensor, which the kernel may store into at any index
    (``tile.store``, ``tile.scatter``) and update with atomics (``tile.atomic_add``). NumPy arrays
    are copied back after the launch.

    Args:
        value: The array the kernel may write (JAX and read-only arrays are refused).
    """

    __slots__ = ("value",)

    def __init__(self, value):
        if isinstance(value, atomic):
            value = value.value
        if isinstance(value, Partition):
            raise TensorError("tile.atomic() takes a tensor, not a partition (partitions are "
                              "already writable)")
        # host arrays are written back through NumPy; JAX and read-only arrays are refused
        self.value = output_array(value, "tile.atomic()")

    def __repr__(self) -> str:
        return f"tile.atomic({self.value!r})"


class ArgInfo:
    """Everything the dispatcher needs about one launch argument (see the module docstring)."""

    __slots__ = ("kind", "key", "params", "slots", "value", "tensor", "partition", "tile_shape",
                 "grid", "writable", "storage", "prepare", "finish", "host", "extent", "sealed")

    def __init__(self, kind, key, params, slots, value=None, tensor=None, partition=None,
                 tile_shape=None, grid=None, writable=False, storage=None, prepare=None,
                 finish=None, host=None):
        self.kind = kind
        self.key = key
        self.params = params
        self.slots = slots
        self.value = value
        self.tensor = tensor
        self.partition = partition
        self.tile_shape = tile_shape
        self.grid = grid
        self.writable = writable
        self.storage = storage
        self.extent = False                 # byte range [start, end), computed on first use
        self.prepare = prepare
        self.finish = finish
        self.host = host            # the NumPy array for copied-in arguments
        self.sealed = None          # what the C launcher reads, in one tuple (seal())

    def seal(self) -> "ArgInfo":
        """Freeze a cached tensor/partition info for the C launcher: ``sealed`` = (key, params,
        storage, writable, start, end, grid), read with one attribute load per launch."""
        if self.prepare is None and self.finish is None and type(self.params) is tuple and \
                type(self.extent) is tuple:
            self.sealed = (self.key, self.params, self.storage, bool(self.writable),
                         self.extent[0], self.extent[1], self.grid)
        return self

    def __repr__(self) -> str:
        return f"ArgInfo({self.kind}, key={self.key!r}, params={self.params!r})"


class _LightInfo:
    """An :class:`ArgInfo` for arguments that own no tilejit memory (scalars, foreign arrays):
    the same attributes, with the rarely set ones as class-level defaults, so one is cheap to
    make on every launch."""

    __slots__ = ("key", "params", "slots", "value")
    tensor = partition = tile_shape = grid = storage = prepare = finish = host = sealed = None
    writable = False

    def __repr__(self) -> str:
        return f"ArgInfo({self.kind}, key={self.key!r}, params={self.params!r})"


class ScalarInfo(_LightInfo):
    __slots__ = ()
    kind = "scalar"
    extent = None


class ForeignInfo(_LightInfo):
    """A foreign GPU array read from its metadata (``runtime.foreign``); ``extent`` is its byte
    range and ``device`` its CUDA ordinal (for the aliasing check)."""

    __slots__ = ("extent", "device", "writable")
    kind = "tensor"


class ForeignPartitionInfo(ForeignInfo):
    """A foreign GPU array passed as ``tile.partition(array, tile_shape)``."""

    __slots__ = ("grid", "tile_shape")
    kind = "partition"


class TupleInfo(_LightInfo):
    """A tuple of tensors and scalars passed as one argument: ``items`` are its elements' infos.
    Its ``prepare`` hook runs theirs (NumPy copies), orders their storages on the stream and
    gathers their parameters; ``finish`` runs theirs (so the C launcher leaves it to Python)."""

    __slots__ = ("items", "writable", "prepare", "finish")
    kind = "tuple"
    extent = None


def _item_annotations(annotation, n: int) -> tuple:
    """The annotations of a tuple argument's ``n`` items: a StrongScalar one applies to each
    (cuTile's rule for its items); a tuple gives one per item (``(a, Ellipsis)``: ``a`` for
    each); anything else none."""
    if type(annotation) is _scalars.StrongScalar:
        return (annotation,) * n
    if type(annotation) is tuple:
        if len(annotation) == 2 and annotation[1] is Ellipsis:
            return (annotation[0],) * n
        if len(annotation) != n:
            raise TypeError(f"Received a tuple of length {n} for a parameter annotated as a "
                            f"tuple of length {len(annotation)}")
        return annotation
    return (None,) * n


def _tuple_info(value: tuple, stream, annotation=None) -> TupleInfo:
    anns = _item_annotations(annotation, len(value))
    items = []
    for j, v in enumerate(value):
        if type(v) in (Partition, ForeignPartition, tuple, list):
            raise TypeError(f"a tuple argument holds tensors and scalars; element {j} is a "
                            f"{type(v).__name__}: pass partitions (and nested tuples) as separate "
                            f"arguments")
        items.append(classify(v, anns[j], stream))
    info = TupleInfo()
    info.items = tuple(items)
    info.key = _keys.tuple_key([i.key for i in items])
    info.slots = info.key.abi_slots()
    info.value = value
    info.params = None
    info.writable = any(i.writable for i in items)

    def prepare(stream, info=info):
        from .memory import use_all
        params = ()
        for i in info.items:
            if i.prepare is not None:
                i.prepare(stream)
            params += i.params
        use_all([i.storage for i in info.items if i.storage is not None], stream)
        info.params = params

    def finish(stream, info=info):
        for i in info.items:
            if i.finish is not None:
                i.finish(stream)

    info.prepare, info.finish = prepare, finish
    return info


def flat_infos(infos, names=None):
    """``infos`` with each tuple argument replaced by its items, and the matching names
    (``xs[1]``), for the checks that look at every array of a launch."""
    out, out_names = [], []
    for k, info in enumerate(infos):
        name = names[k] if names is not None and k < len(names) else str(k)
        if info.kind == "tuple":
            for j, i in enumerate(info.items):
                out.append(i)
                out_names.append(f"{name}[{j}]")
        else:
            out.append(info)
            out_names.append(name)
    return out, out_names


# --- keys of array arguments, memoized -----------------------------------------------------------
# (kind, dtype name, shape, strides, ptr % 16, writable or tile shape) -> (key, slots, span, grid).
# Shared with the C launcher (tilejit/csrc/memo.c looks keys up here and calls array_key_named on
# a miss), so an array layout seen once costs a dict lookup afterwards, whoever classifies it.
array_keys = BoundedMemo("argspec.array_keys", 8192)


def array_key(kind: str, dtype, shape, strides, ptr: int, extra):
    """``(key, slots, span_bytes, grid)`` of an array argument (``grid`` for partitions only);
    ``extra`` is the writable flag of a tensor or the tile shape of a partition."""
    memo = (kind, dtype.name, shape, strides, ptr & 15, extra)
    hit = array_keys.get(memo)
    if hit is None:
        hit = array_keys.put(memo, _array_key(kind, dtype, tuple(shape), tuple(strides), ptr,
                                              extra))
    return hit


def array_key_named(kind: str, dtype_name: str, shape, strides, ptr: int, extra):
    """:func:`array_key` for a dtype given by name (the C launcher's memo misses)."""
    return array_key(kind, _dt.from_name(dtype_name), shape, strides, ptr, extra)


def _array_key(kind, dtype, shape, strides, ptr, extra):
    if any(s < 0 for s in strides):
        raise TensorError(f"negative strides {strides} are not supported by tilejit kernels; pass "
                          f"a contiguous copy (e.g. t.contiguous() or cupy.ascontiguousarray(a))")
    facts = Facts.of(ptr, shape, strides, dtype.itemsize)
    if kind == "partition":
        key = _keys.partition_key(dtype.name, len(shape), facts, extra)
        grid = tuple(-(-n // t) for n, t in zip(shape, extra))
        grid += (1,) * (3 - len(grid))
    else:
        key = _keys.tensor_key(dtype.name, len(shape), facts, bool(extra))
        grid = None
    span = max(_layout.span_elements(shape, strides), 0) * dtype.itemsize
    return key, array_slots(len(shape), facts[0]), span, grid


# --- tensors and partitions ----------------------------------------------------------------------
def _tensor_info(t: Tensor, writable: bool, value, cached: bool = False, ptr=None) -> ArgInfo:
    """``ptr``: the data pointer when the caller already has it (skips ``t.device_pointer``'s
    usability check)."""
    if ptr is None:
        ptr = t.device_pointer
    key, slots, span, _ = array_key("tensor", t._dtype, t._shape, t._strides, ptr, writable)
    # An info cached on its tensor refers back to it weakly: a reference cycle would keep the
    # tensor (and its device memory) alive until the garbage collector runs.
    ref = weakref.proxy(t) if cached else t
    info = ArgInfo("tensor", key, (ptr,) + t._shape + t._strides, slots,
                   value=None if cached else value, tensor=ref, writable=writable,
                   storage=t._storage)
    info.extent = (ptr, ptr + span)
    return info.seal() if cached else info


def _partition_info(p: Partition) -> ArgInfo:
    t = p._tensor
    # the tensor's own (cached) info already holds the facts, params and slots
    ti = t._info
    if ti is None:
        # t may be moved into p: read the pointer without device_pointer's usability check
        ti = t._info = _tensor_info(t, False, None, cached=True,
                                    ptr=t._storage.ptr + t._offset_bytes)
    # one info per (tensor, tile shape), shared by all its partitions: a new partition of a
    # tensor seen before costs a dict lookup
    tile = p.tile_shape
    by_tile = t._pinfo
    if by_tile is None:
        by_tile = t._pinfo = {}
    info = by_tile.get(tile)
    if info is None:
        ptr = ti.params[0]
        key, _, _, grid = array_key("partition", t._dtype, t._shape, t._strides, ptr, tile)
        # weak references only (see _tensor_info)
        info = ArgInfo("partition", key, ti.params, ti.slots, value=None, tensor=ti.tensor,
                       tile_shape=tile, grid=grid, writable=True, storage=t._storage)
        info.extent = ti.extent
        by_tile[tile] = info.seal()
    return info


# --- NumPy arrays (copied in, and out when writable) --------------------------------------------------
# (NumPy dtype, shape, writable or tile, broadcast axes) -> (DType, key, slots, grid)
_numpy_keys = BoundedMemo("argspec.numpy_keys", 4096)


def _numpy_info(arr: np.ndarray, writable: bool, value, tile=None) -> ArgInfo:
    """A NumPy argument: copied in; copied back when ``writable`` (tile.atomic) or an output
    partition (``tile``: tile.partition(array, tile)). An input's broadcast axes (stride 0)
    stay stride 0 on the device: one element is copied per repeated run."""
    shape = arr.shape
    rep = () if writable else broadcast_axes(arr)
    memo = (arr.dtype, shape, writable if tile is None else tile, rep)
    hit = _numpy_keys.get(memo)
    if hit is None:
        hit = _numpy_keys.put(memo, _numpy_key(arr, writable, tile, rep))
    dt, key, slots, grid = hit
    if writable and not arr.flags.writeable:
        raise TensorError("tile.atomic(array) needs a writable NumPy array (it is copied back after "
                          "the launch)")
    info = ArgInfo("tensor" if tile is None else "partition", key, None, slots, value=value,
                   writable=writable, host=arr, tile_shape=tile, grid=grid)

    def prepare(stream, info=info, dt=dt, rep=rep):
        from .stream_transfers import upload
        t = upload(one_per_run(info.host, rep), stream, dt, staged=True)
        info.tensor = t
        info.storage = t._storage
        info.params = (t.device_pointer,) + info.host.shape + run_strides(t.strides, rep)

    def finish(stream, info=info, writable=writable):
        # after the launch is queued: copy back (tile.atomic), then the buffer may serve the
        # next launch on this stream (runtime.staging)
        t, info.tensor = info.tensor, None
        if writable:
            from .copy import download
            info.host[...] = download(t, stream)
        from .staging import give_back
        give_back(t._storage, stream)

    info.prepare = prepare
    info.finish = finish
    return info


def _numpy_key(arr: np.ndarray, writable: bool, tile=None, rep=()):
    try:
        dt = _dt.from_numpy(arr.dtype)
    except TypeError as e:
        raise TypeError(f"cannot pass a NumPy array of dtype {arr.dtype} to a kernel: {e}") from None
    shape = tuple(arr.shape)
    strides = run_strides(_layout.contiguous_strides(one_per_run(arr, rep).shape), rep)
    facts = Facts.of(0, shape, strides, dt.itemsize)          # the device copy is 256-byte aligned
    slots = array_slots(len(shape), facts[0])
    if tile is None:
        return dt, _keys.tensor_key(dt.name, len(shape), facts, writable), slots, None
    grid = tuple(-(-n // t) for n, t in zip(shape, tile))
    return dt, _keys.partition_key(dt.name, len(shape), facts, tile), slots, \
        grid + (1,) * (3 - len(grid))


# --- scalars --------------------------------------------------------------------------------------------
def _light_scalar(key, slot, value, param) -> ScalarInfo:
    info = ScalarInfo()
    info.key = key
    info.params = (param,)
    info.slots = slot
    info.value = value
    return info


def _scalar_info(value, annotation):
    if type(annotation) is _scalars.StrongScalar:
        return _strong_scalar_info(value, annotation.dtype)
    if annotation is None:
        hit = _scalars.python_scalar(value)
        if hit is not None:             # weak: travels exactly (tilejit.scalars)
            return _light_scalar(hit[0], (hit[1],), value, value)
        if type(value) is int:          # beyond every int dtype: NumPy's words
            _scalars.check_int_fits(value, _dt.int64 if value < 0 else _dt.uint64)
    if annotation is not None:
        dt = _dt.as_dtype(annotation)
    elif isinstance(value, (bool, np.bool_)):
        dt = _dt.bool_
    elif isinstance(value, np.generic):       # before float: np.float64 subclasses float
        dt = _dt.from_numpy(value.dtype)
    elif isinstance(value, int):
        dt = _dt.int64
    elif isinstance(value, float):
        dt = _dt.float64
    else:
        raise TypeError(f"unsupported scalar argument of type {type(value).__name__}")
    # Python scalars are weak (they adopt a tile's dtype), NumPy scalars strong (NEP 50)
    weak = not isinstance(value, np.generic)
    return _light_scalar(_keys.scalar_key(dt.name, weak), (scalar_slot(dt),), value,
                         _scalar_value(value, dt))


def _strong_scalar_info(value, dt):
    """A scalar passed where Python scalars are strong (``scalars.StrongScalar``: cuTile's
    rule): a rank-0 tile of ``dt``, or of the value's default dtype when ``dt`` is None."""
    if dt is None:
        if isinstance(value, np.generic):
            dt = _dt.from_numpy(value.dtype)
        else:
            dt = _scalars.STRONG_DEFAULTS[bool if isinstance(value, bool) else
                                          int if isinstance(value, int) else float]
    if dt is _dt.int32 and isinstance(value, int) and not -2 ** 31 <= value < 2 ** 31:
        raise OverflowError(f"Python integer {value} out of bounds for int32: a cuTile kernel "
                            f"takes a Python int argument as int32; annotate the parameter "
                            f"ct.ScalarInt64 to pass it as int64")
    return _light_scalar(_keys.scalar_key(dt.name, False), (scalar_slot(dt),), value,
                         _scalar_value(value, dt))


def _scalar_value(value, dt):
    """The C1 value of a scalar in ``dt``, as a Python int or float (range-checked)."""
    if dt.is_bool:
        return 1 if value else 0
    if dt.is_integer:
        if isinstance(value, (float, np.floating)):
            raise TypeError(f"a float ({value!r}) cannot be passed as {dt.name}; convert it with "
                            f"int(...) first")
        v = int(value)
        _scalars.check_int_fits(v, dt)
        return v
    # floats: round to the target precision, so host and simulator see what the GPU sees
    return float(np.asarray(value).astype(dt.np_dtype))


# --- classify ------------------------------------------------------------------------------------------
def classify(value, annotation=None, stream=None) -> ArgInfo:
    """The :class:`ArgInfo` of one launch argument.

    ``annotation``: a dtype for scalars (``int`` -> int64 otherwise). ``stream``: the stream the
    launch will run on (used to order DLPack imports after the producer's work). A partition's
    write lease is the launch's to take (:func:`acquire_partitions`), not classification's.
    """
    tp = type(value)
    if tp is Tensor:
        if value._moved:
            value._check_usable("pass to a kernel")
        info = value._info
        if info is None:
            info = value._info = _tensor_info(value, False, value, cached=True)
        return info
    if tp is Partition:
        value._check_usable("pass to a kernel")
        info = value._info
        if info is None:
            info = value._info = _partition_info(value)
        return info
    if tp is ForeignPartition:
        return _foreign_partition_info(value, stream)
    if tp is atomic:
        inner = value.value
        if isinstance(inner, np.ndarray):
            return _numpy_info(inner, True, value)
        if stream is not None and stream._cu is not None and not isinstance(inner, Tensor):
            view = _foreign.read(inner)
            if view is not None and view.device >= 0:
                return foreign_info(view, True, value, stream)
        t = inner if isinstance(inner, Tensor) else _wrap_foreign(inner, stream)
        t._check_usable("pass to a kernel")
        if t is inner:
            info = t._info_w
            if info is None:
                info = t._info_w = _tensor_info(t, True, value, cached=True)
            return info
        return _tensor_info(t, True, value)
    if tp is bool or tp is int or tp is float or isinstance(value, (np.generic, bool, int, float)):
        return _scalar_info(value, annotation)
    if tp is tuple:
        return _tuple_info(value, stream, annotation)
    if isinstance(value, np.ndarray):
        return _numpy_info(value, False, value)
    if tp is HostPartition:                 # tile.partition(np_array, tile): copied in and out
        return _numpy_info(value.array, True, value, value.tile_shape)
    if isinstance(value, Tensor):           # subclasses
        return _tensor_info(value, False, value)
    reader = _foreign.reader_for(tp)
    if reader is not None and stream is not None and stream._cu is not None:
        view = reader(value)
        if view.device >= 0:
            return foreign_info(view, False, value, stream)
    if hasattr(value, "__dlpack__") or hasattr(value, "__cuda_array_interface__"):
        t = _wrap_foreign(value, stream, read_only=True)
        return _tensor_info(t, False, value)
    raise TypeError(f"cannot pass {type(value).__name__} to a kernel: expected a tile.Tensor, a "
                    f"partition (t.partition(shape)), a DLPack / __cuda_array_interface__ array, a "
                    f"NumPy array, tile.atomic(...), a scalar or a tuple of these")


# --- foreign arrays (runtime.foreign) ----------------------------------------------------------------
def foreign_info(view, writable: bool, value, stream) -> ForeignInfo:
    """The ArgInfo of a foreign GPU array from its :class:`~tilejit.runtime.foreign.View`, with
    ``stream`` ordered after the producer's pending work (DLPack's rule; free when the launch runs
    on the producer's stream)."""
    dev = stream.device.ordinal
    if view.device != dev:
        raise TensorError(f"a {type(value).__name__} on cuda:{view.device} was passed to a launch "
                          f"on cuda:{dev}: every array of a launch must be on the launch's device. "
                          f"Copy it first (e.g. t.to('cuda:{dev}')) or launch on "
                          f"tile.Device({view.device})")
    if writable and view.readonly:
        raise TensorError(f"tile.atomic() needs a writable array, but this "
                          f"{type(value).__name__} is read-only")
    ptr = view.ptr
    key, slots, span, _ = array_key("tensor", view.dtype, view.shape, view.strides, ptr, writable)
    if view.stream is not None:
        stream.wait_raw(view.stream)
    info = ForeignInfo()
    info.key = key
    info.params = (ptr,) + tuple(view.shape) + tuple(view.strides)
    info.slots = slots
    info.value = value
    info.extent = (ptr, ptr + span)
    info.device = view.device
    info.writable = writable
    return info


def _foreign_partition_info(fp: ForeignPartition, stream):
    """A foreign GPU array as an output partition: from its metadata when a reader knows it, else
    imported for this launch (``fp._live`` holds the partition until release_partitions)."""
    inner = fp.value
    view = _foreign.read(inner)
    on_gpu = stream is not None and stream._cu is not None
    if view is not None and view.device >= 0 and on_gpu:
        dev = stream.device.ordinal
        if view.device != dev:
            raise TensorError(f"tile.partition of a {type(inner).__name__} on cuda:{view.device} "
                              f"was passed to a launch on cuda:{dev}: every array of a launch "
                              f"must be on the launch's device")
        if view.readonly:
            raise TensorError(f"tile.partition() needs a writable array, but this "
                              f"{type(inner).__name__} is read-only")
        ptr = view.ptr
        key, slots, span, grid = array_key("partition", view.dtype, view.shape, view.strides, ptr,
                                           fp.tile_shape)
        if view.stream is not None:
            stream.wait_raw(view.stream)
        info = ForeignPartitionInfo()
        info.key, info.slots, info.value = key, slots, fp
        info.params = (ptr,) + tuple(view.shape) + tuple(view.strides)
        info.extent = (ptr, ptr + span)
        info.device = view.device
        info.writable = True
        info.grid = grid
        info.tile_shape = fp.tile_shape
        return info
    host = (view is not None and view.device < 0) or isinstance(inner, np.ndarray) or \
        _dlpack_on_host(inner)
    if host:        # e.g. a CPU torch tensor: copied in and back, written through NumPy
        return _numpy_info(writable_host_array(inner, "tile.partition()"), True, fp,
                           fp.tile_shape)
    fp._live = _wrap_foreign(inner, stream).partition(fp.tile_shape)
    return classify(fp._live, None, stream)


def _dlpack_on_host(obj) -> bool:
    fn = getattr(obj, "__dlpack_device__", None)
    if fn is None:
        return False
    try:
        return int(fn()[0]) in (1, 3)        # kDLCPU, kDLCUDAHost
    except Exception:  # noqa: BLE001  (a broken producer: let the import report it)
        return False


def _wrap_foreign(obj, stream, read_only: bool = False) -> Tensor:
    from .dlpack import from_dlpack
    if isinstance(obj, np.ndarray):
        raise TypeError("internal: NumPy arrays are copied, not wrapped")
    t = broadcast_input(obj, stream) if read_only else None     # a CPU torch .expand()
    return from_dlpack(obj, stream=stream) if t is None else t


def fixed_params(infos, names) -> Tuple[tuple, list]:
    """``(params, storages)`` of a launch packed once (``KernelLaunch.prepare``): the ABI values in
    order and the storages each launch orders on its stream, a tuple argument's taken from its
    elements (its ``prepare`` hook only gathers them, except for NumPy elements). LaunchError
    naming the argument when one is copied per launch (a NumPy array, or a host array passed
    through ``tile.atomic`` / ``tile.partition``)."""
    params, storages = (), []
    for k, info in enumerate(infos):
        name = names[k] if k < len(names) else str(k)
        parts = [(f"argument `{name}`", info)]
        if info.kind == "tuple":
            parts = [(f"element {j} of the tuple `{name}`", i) for j, i in enumerate(info.items)]
        for what, i in parts:
            if i.prepare is not None or i.params is None:
                raise _copied_per_launch(what, i)
            params += i.params
            if i.storage is not None:
                storages.append(i.storage)
    return params, storages


def _copied_per_launch(what: str, info) -> LaunchError:
    if info.kind == "partition":
        form = "a partition of a host array, copied per launch (in, and back after it)"
        fix = "api.from_numpy(array).sync() once and pass its .partition(tile_shape)"
    elif info.writable:
        form = "tile.atomic of a NumPy array, copied per launch (in, and back after it)"
        fix = "t = api.from_numpy(array).sync() once and pass tile.atomic(t)"
    else:
        form = "a NumPy array, copied per launch"
        fix = "api.from_numpy(array).sync() once and pass that tensor"
    back = "; read the result back with .to_numpy()" if info.writable else ""
    return LaunchError(f"prepare(): {what} is {form}, but a prepared launch reuses the same "
                       f"device memory every time. Make the device copy yourself: {fix} (or pass "
                       f"a torch CUDA tensor){back}")


def key_of(infos) -> tuple:
    """The argument part of the specialization key."""
    return tuple(i.key for i in infos)


def flatten_params(infos) -> tuple:
    """All ABI values in order (after ``prepare`` hooks have run)."""
    out = ()
    for i in infos:
        out += i.params
    return out


def abi_slots(infos) -> Tuple[str, ...]:
    """All ABI slot types in order (depends only on the keys)."""
    out = ()
    for i in infos:
        out += i.slots
    return out


def slots_from_key(key) -> Tuple[str, ...]:
    """ABI slot types of one argument, from its key alone (for AOT compilation)."""
    return _keys.as_key(key).abi_slots()


# --- grid -----------------------------------------------------------------------------------------------
def normalize_grid(grid) -> Tuple[int, int, int]:
    """``8`` / ``(8,)`` / ``(8, 4)`` / ``(8, 4, 2)`` -> a 3-tuple, checked against the limits."""
    if type(grid) is tuple and len(grid) == 3:      # the common spelling, checked inline
        x, y, z = grid
        if type(x) is int and type(y) is int and type(z) is int and \
                0 <= x < MAX_GRID_DIM and 0 <= y < MAX_GRID_DIM and 0 <= z < MAX_GRID_DIM:
            return grid
    try:
        g = _layout.normalize_shape(grid, "grid")
    except TypeError as e:
        raise LaunchError(str(e)) from None
    if not 1 <= len(g) <= 3:
        raise LaunchError(f"grid {g} must have 1 to 3 dimensions")
    g = tuple(g) + (1,) * (3 - len(g))
    _check_grid_limits(g, "grid")
    return g


def _check_grid_limits(g, what: str) -> None:
    for axis, n in enumerate(g):
        if n < 0:
            raise LaunchError(f"{what} {g} has a negative dimension")
        if n >= MAX_GRID_DIM:
            raise LaunchError(f"{what} {g} is too large: dimension {axis} is {n}, but grid "
                              f"dimensions must be < 2^24 ({MAX_GRID_DIM}); use larger tiles")


def grid_from_partitions(infos, grid=None, names: Optional[Sequence[str]] = None):
    """The launch grid: ``grid`` if given, else ``ceil(shape / tile)`` of the partitioned outputs.

    Several partitions must agree. A grid with a zero dimension (an empty tensor) is valid and
    means there is nothing to launch.
    """
    if grid is not None:
        return normalize_grid(grid)
    parts = [(k, i) for k, i in enumerate(infos) if i.kind == "partition"]
    if not parts:
        host = any(getattr(i, "host", None) is not None for i in infos)
        how = ("t.partition(tile_shape) for a tilejit tensor, tile.partition(array, tile_shape) "
               "for a NumPy or other array (NumPy's own ndarray.partition sorts the array)"
               if host else "t.partition(tile_shape)")
        raise LaunchError(f"cannot infer the launch grid: no argument is a partition. Pass the "
                          f"output as {how}, or give the grid explicitly with "
                          f"kernel(...).grid((gx, gy, gz))")
    k0, i0 = parts[0]
    g = i0.grid
    for k, i in parts[1:]:
        if i.grid != g:
            desc = "; ".join(f"{_name(names, kk)}: tensor {_shape_of(ii)} / tile {ii.tile_shape}"
                             f" -> grid {ii.grid}" for kk, ii in parts)
            raise LaunchError(f"partitioned arguments imply different launch grids ({desc}); "
                              f"choose tile shapes that give the same grid, or pass .grid(...)")
    _check_grid_limits(g, f"launch grid inferred from {_name(names, k0)}")
    return g


NO_GRID_FACTS = _keys.NO_GRID_FACTS


def grid_ones(grid) -> tuple:
    """Which axes of a launch grid have extent 1 (part of the specialization key: ``tile.bid``
    of such an axis is the constant 0, which lets tileiras prove more loads in bounds)."""
    return (grid[0] == 1, grid[1] == 1, grid[2] == 1)


def _shape_of(info) -> tuple:
    t = info.tensor if info.tensor is not None else getattr(info.value, "value", None)
    return tuple(getattr(t, "shape", ()))


def _name(names, k: int) -> str:
    if names is not None and k < len(names) and names[k]:
        return f"argument '{names[k]}'"
    return f"argument {k}"


# --- aliasing -------------------------------------------------------------------------------------------
def _extent(info):
    e = info.extent
    if e is not False:
        return e
    t = info.tensor          # NumPy copies: the device tensor exists once ``prepare`` ran
    e = None if t is None else t._byte_extent()
    if info.prepare is None:                # NumPy copies get their device tensor late
        info.extent = e
    return e


def _device_of(info) -> int:
    st = info.storage
    return st.device.ordinal if st is not None else info.device


def acquire_partitions(values) -> None:
    """Take the write leases of the partitions among the launch arguments ``values`` (each
    launch holds them until it is queued: :func:`release_partitions`)."""
    for v in values:
        if type(v) is Partition and not v._leased:
            try:
                v._acquire("pass to a kernel")
            except BaseException:
                release_partitions(values)
                raise


def release_partitions(values) -> None:
    """End the leases the partitions among the launch arguments ``values`` took for a launch,
    and drop the arrays imported for foreign partitions."""
    for v in values:
        tp = type(v)
        if tp is Partition:
            v._release()
        elif tp is ForeignPartition and v._live is not None:
            v._live._release()
            v._live = None


def check_launch_devices(infos, device, names: Optional[Sequence[str]] = None) -> None:
    """TensorError when an array argument lives on another device than the launch's."""
    if any(i.kind == "tuple" for i in infos):
        infos, names = flat_infos(infos, names)
    for k, info in enumerate(infos):
        st = info.storage
        if st is not None and st.device is not device:
            raise TensorError(
                f"{_name(names, k)} is on {st.device.label} but the launch runs on "
                f"{device.label}: every array of a launch must be on the launch's device. "
                f"Copy it first (t.to({device.ordinal}) or api.dup(t, device={device.ordinal})), "
                f"or launch on a stream of tile.Device({st.device.ordinal})")


def check_launch_aliasing(infos, names: Optional[Sequence[str]] = None, kernel=None,
                          consts=None) -> frozenset:
    """TensorError when an output (partition or tile.atomic tensor) shares memory with another
    argument of the same launch.

    A ``kernel`` with an ``_alias_conflict(infos, consts, k, j)`` method (``ct.kernel``) judges
    each aliased pair of runtime arguments ``k``, ``j`` itself: None when they may alias (as
    cuTile: the kernel specialized for the launch's constants stores into at most one of
    them), else the reason, added to the message. It is asked only when two arguments alias.
    Returns the pairs it accepted, both ways round: the launch's executable keeps them
    (``alias_ok``), so the C launcher accepts the same pairs without asking again."""
    accepted = set()
    outs = [k for k, i in enumerate(infos) if i.writable]
    if not outs:
        return frozenset()
    judge = getattr(kernel, "_alias_conflict", None)
    if any(i.kind == "tuple" for i in infos):
        infos, names = flat_infos(infos, names)
        outs = [k for k, i in enumerate(infos) if i.writable]
        judge = None                    # flattened positions are not the kernel's parameters
    for k in outs:
        a = infos[k]
        for j, b in enumerate(infos):
            if j == k or b.kind == "scalar" or (j in outs and j < k):
                continue
            if _aliases(a, b):
                why = judge(infos, consts, k, j) if judge is not None else ""
                if why is None:
                    accepted.update(((k, j), (j, k)))
                    continue
                what = "partition" if a.kind == "partition" else "writable (tile.atomic) tensor"
                raise TensorError(
                    f"{_name(names, k)} ({what}) and {_name(names, j)} share memory"
                    f"{f' ({why})' if why else ''}: an output may "
                    f"not alias another argument of the same launch. Pass a copy of the input "
                    f"(api.dup(x)) or write to a separate tensor")
    return frozenset(accepted)


def _aliases(a: ArgInfo, b: ArgInfo) -> bool:
    if a.host is not None or b.host is not None:
        if a.host is not None and b.host is not None:
            return bool(np.may_share_memory(a.host, b.host))
        return False
    ea, eb = _extent(a), _extent(b)
    if ea is None or eb is None:
        return a.storage is not None and a.storage is b.storage
    if _device_of(a) != _device_of(b):
        return False
    return ea[0] < eb[1] and eb[0] < ea[1] and ea[0] != ea[1] and eb[0] != eb[1]


__all__ = ["ArgInfo", "atomic", "classify", "key_of", "flatten_params", "fixed_params",
           "abi_slots", "slots_from_key", "grid_from_partitions", "grid_ones", "normalize_grid",
           "check_launch_aliasing", "check_launch_devices", "acquire_partitions",
           "release_partitions", "array_key", "array_key_named", "MAX_GRID_DIM", "NO_GRID_FACTS"]
