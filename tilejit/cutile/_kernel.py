"""cuTile Python's host side over tilejit: ``@ct.kernel``, ``ct.function``, ``ct.ByTarget`` and
``ct.launch(stream, grid, kernel, args)``.

A ``ct.kernel`` is a :class:`tilejit.Kernel` compiled with cuTile's rules: undecorated Python
functions it calls are inlined (``CompileOptions.plain_helpers``), run-time Python scalars are
strong values as in cuTile (a bool is ``bool_``, an int ``int32``, a float ``float32``, whatever
the annotation says, except a dtype's such as ``ct.ScalarInt64``: ``x_f16 + y`` with ``y=5.0``
computes in float32; ``scalars.StrongScalar``), and hints may be :class:`ByTarget` values
(resolved for each architecture it compiles for).

``ct.launch`` stores into arrays as cuTile does, without partitions: the kernel's source says
which array parameters it stores into (``_writes.written_parameters``, read once per kernel
without compiling anything), and those arguments are passed writable (``tile.atomic``); the
others stay read-only. Arrays may be torch or CuPy arrays, tilejit tensors or NumPy arrays
(copied in, and back when written).
"""
from __future__ import annotations

import dataclasses
import inspect
import operator
import re
import typing
from typing import Optional

from .. import dtypes as D
from .. import keys as _keys
from .. import native as _native
from .. import scalars as _scalars
from ..dispatcher import Kernel as _TileKernel
from ..dispatcher import _native_launcher
from ..language import TileFunction
from ..memo import BoundedMemo
from ._annotations import array_annotations, check_keys
from ._writes import written_parameters

# The launch side (NumPy, the runtime, whether the C path is in) loads at the first ct.launch or
# inspection (_load), not when tilejit.cutile is imported or a kernel defined: a cold start as
# cheap as cuTile Python's. _load binds these names; read from outside before, they load it.
_LAUNCH_SIDE = frozenset((
    "np", "_GRID_LIMIT", "atomic", "normalize_grid", "current_ordinal", "ForeignPartition",
    "Partition", "Stream", "_object_device", "_stream_handle", "_C_PATH"))
_loaded = False


def _load() -> None:
    global np, _GRID_LIMIT, atomic, normalize_grid, current_ordinal, ForeignPartition, \
        Partition, Stream, _object_device, _stream_handle, _C_PATH, _loaded
    import numpy
    from .. import dispatcher
    from ..runtime import argspec
    from ..runtime.device import current_ordinal as _ordinal
    from ..runtime.partition import ForeignPartition as _foreign, Partition as _partition
    from ..runtime.stream import Stream as _stream, _object_device as _device_of, \
        _stream_handle as _handle_of
    np, _GRID_LIMIT = numpy, argspec.MAX_GRID_DIM
    atomic, normalize_grid, current_ordinal = argspec.atomic, argspec.normalize_grid, _ordinal
    ForeignPartition, Partition = _foreign, _partition
    Stream, _object_device, _stream_handle = _stream, _device_of, _handle_of
    # whether ct.launch records the plans its C entry replays: the C path's layout installed
    _C_PATH = bool(dispatcher._runtime()._NATIVE_LAYOUT)
    _loaded = True


def __getattr__(name):
    if name in _LAUNCH_SIDE:
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_UNSPECIFIED = object()
_SM = re.compile(r"sm_\d+[a-z]?")


class ByTarget:
    """A hint that depends on the GPU architecture: ``ByTarget(sm_100=2, default=1)``."""

    __slots__ = ("_default", "_by_target")

    def __init__(self, *, default=_UNSPECIFIED, **value_by_target):
        for sm in value_by_target:
            if not _SM.fullmatch(sm):
                raise ValueError(f"Invalid GPU architecture name: {sm}, expected "
                                 f"sm_<major><minor>")
        self._default = default
        self._by_target = dict(value_by_target)

    def resolve(self, target: Optional[str]):
        """The value for ``target`` (``"sm_90"``; None or ``"sim"``: the default), None when
        unspecified (the compiler's choice)."""
        v = self._by_target.get(target, self._default)
        return None if v is _UNSPECIFIED else v

    def __repr__(self):
        items = [f"{k}={v!r}" for k, v in self._by_target.items()]
        if self._default is not _UNSPECIFIED:
            items.append(f"default={self._default!r}")
        return f"ByTarget({', '.join(items)})"

    def __eq__(self, other):
        return isinstance(other, ByTarget) and self._default == other._default and \
            self._by_target == other._by_target

    def __hash__(self):
        return hash((repr(self._default), tuple(sorted(self._by_target.items()))))


def _for_target(value, target: Optional[str]):
    return value.resolve(target) if isinstance(value, ByTarget) else value




def _strong_annotation(ann):
    """A parameter annotation as the launcher's (scalars.strong): a dtype's, cuTile's defaults
    otherwise; ``tuple[A, B]`` one per item (a tuple), ``tuple[A, ...]`` ``(A's, ...)``."""
    if isinstance(ann, D.DType):
        return _scalars.strong(ann)
    if typing.get_origin(ann) is tuple and typing.get_args(ann):
        items = typing.get_args(ann)
        if len(items) == 2 and items[1] is Ellipsis:
            return (_strong_annotation(items[0]), Ellipsis)
        return tuple(_strong_annotation(a) for a in items)
    return _scalars.strong()


class Kernel(_TileKernel):
    """A ``@ct.kernel``: launch it with ``ct.launch(stream, grid, kernel, args)``.

    It is also a tilejit kernel: ``kernel(*args).grid(g)`` is a lazy launch (pass the arrays it
    stores into as ``tile.atomic(a)``), and ``inspect_tileir`` / ``compile(arch=...)`` work."""

    def __init__(self, pyfunc, *, num_ctas=None, occupancy=None, opt_level=3,
                 num_worker_warps=None):
        self._hints = {"num_ctas": num_ctas, "occupancy": occupancy, "opt_level": opt_level,
                       "num_worker_warps": num_worker_warps}
        for name, v in self._hints.items():
            if not (v is None or isinstance(v, ByTarget) or
                    (isinstance(v, int) and not isinstance(v, bool) and v >= 0)):
                raise TypeError(f"ct.kernel: {name} must be a non-negative int or a "
                                f"ct.ByTarget, got {v!r}")
        level = _for_target(opt_level, None)
        super().__init__(pyfunc, occupancy=_for_target(occupancy, None),
                         num_ctas=_for_target(num_ctas, None),
                         opt_level=3 if level is None else level,
                         num_worker_warps=_for_target(num_worker_warps, None))
        self.options = dataclasses.replace(self.options, plain_helpers=True)
        self._array_anns = array_annotations(pyfunc)      # ct.ArrayAnnotation / ListAnnotation
        self._by_target = any(isinstance(v, ByTarget) for v in self._hints.values())
        self._write_positions = None
        names = self.param_names
        self._const_pos = tuple(i for i, n in enumerate(names) if n in self.constant_names)
        runtime_pos = [i for i, n in enumerate(names) if n not in self.constant_names]
        # ct.launch's getters (itemgetter: in C) of the constants' values (one value, or a
        # tuple of several) and of the runtime values: a tuple with the first repeated at the
        # end (so that one runtime parameter gives a tuple too), which _plain_launch drops
        self._constants_of = operator.itemgetter(*self._const_pos) if self._const_pos else None
        self._runtime_of = operator.itemgetter(*runtime_pos, *runtime_pos[:1]) \
            if runtime_pos else (lambda args: ((),))
        # the constants' values as passed -> (the kernel bound to them (_Bound), those values,
        # their types when flat and float-free, else None): a hit counts when the values have
        # the same types and floats the same bits (keys.same_constants; 1 == True == 1.0 and
        # 0.0 == -0.0 as keys); and the same kernels by their checked key
        self._bound = BoundedMemo(f"{self.__name__}._bound", 256, register=False)
        self._bindings = None           # ct.launch binds constants itself (self._bound)
        self._bound_by_key = BoundedMemo(f"{self.__name__}._bound_by_key", 256, register=False)
        self._ct_plan = None        # what the C launcher replays (_launch_plan), once launched

    @staticmethod
    def _scalar_annotations(pyfunc):
        # cuTile types a run-time Python scalar strongly, by its type (bool, int32, float32;
        # ``int``/``float``/``bool`` annotations change nothing: an int passed to ``c: bool``
        # stays that int), or as a dtype annotation says (ct.ScalarInt64): scalars.strong
        anns = getattr(pyfunc, "__annotations__", {})
        return {name: _strong_annotation(anns.get(name))
                for name in inspect.signature(pyfunc).parameters}

    def _compile(self, keys, consts, target, options, *args, **kwargs):
        if self._array_anns:
            check_keys(self._array_anns, self.runtime_names, keys)
        if self._by_target and options == self.options:
            h = self._hints
            level = _for_target(h["opt_level"], target)
            options = dataclasses.replace(
                options, occupancy=_for_target(h["occupancy"], target),
                num_cta_in_cga=_for_target(h["num_ctas"], target),
                num_worker_warps=_for_target(h["num_worker_warps"], target),
                opt_level=3 if level is None else level)
        return super()._compile(keys, consts, target, options, *args, **kwargs)

    @property
    def stats(self):
        """This kernel's counters, ``ct.launch``'s launches included (the kernels bound to
        constant values count into the same object)."""
        for b in list(self._bound_by_key.values()):
            _TileKernel.stats.fget(b)       # folds in what b's C launcher counted
        return _TileKernel.stats.fget(self)

    def _plain_launch(self, args):
        """(the kernel to launch, its runtime values) of ``ct.launch(..., args)``: the kernel
        bound to the values of its ``ct.Constant`` parameters, so the launch is a plain one (the
        C path), with the arrays it stores into passed writable. (The launch hot path.)"""
        if not _loaded:
            _load()
        if self._constants_of is not None:
            raw = self._constants_of(args)
            try:
                hit = self._bound.get(raw)
            except TypeError:             # an unhashable value: constant_value explains
                hit = None
            if hit is not None and _keys.same_binding(raw, hit):
                b = hit[0]
            else:
                b = self._bound_to(raw)
            values = list(self._runtime_of(args))
            values.pop()
        else:
            b, values = self, list(args)
        wrap = b._write_positions
        if wrap is None:
            wrap = b._writes()
        for i in wrap:
            v = values[i]
            array = _ARRAY_TYPES.get(type(v))
            if array is None:
                array = _ARRAY_TYPES.put(type(v), _array_kind(v))
            if array == _SEQUENCE:
                values[i] = _writable_items(v)
                continue
            if array:
                if array == _MAY_BE_HOST and v.is_cpu:  # a CPU torch tensor: written back via NumPy
                    # (one that requires grad too, through its detached view: cuTile writes
                    # a tensor's memory whatever autograd says, as tilejit a CUDA tensor's)
                    values[i] = atomic(v.detach() if v.requires_grad else v)
                    continue
                w = _new_atomic(atomic)
                w.value = v
                values[i] = w
        return b, values

    def _bound_to(self, raw):
        values = raw if len(self._const_pos) > 1 else (raw,)
        consts = {n: _keys.constant_value(n, v, self._constant_types[n])
                  for n, v in zip(self.constant_names, values)}
        key = _keys.constant_key(consts)
        b = self._bound_by_key.get(key)
        if b is None:
            b = self._bound_by_key.put(key, _Bound(self, consts))
        try:
            self._bound.put(raw, (b, raw, _keys.flat_types(raw, values)))
        except TypeError:
            pass
        return b

    def _launch_plan(self) -> tuple:
        """What ``ct.launch``'s C path replays (csrc/cutile.c): the positions of the constants
        and of the runtime values, which runtime values are written arrays, and the memos."""
        written = set(self._writes())
        rt = tuple(i for i in range(len(self.param_names)) if i not in self._const_pos)
        return (len(self.param_names), self._const_pos, rt, tuple(i in written for i in rt),
                self._bound if self._const_pos else None, _ARRAY_TYPES, _streams, _GRID_LIMIT)

    def replace_hints(self, **hints) -> "Kernel":
        """A new kernel with some hints replaced (it has its own compiled specializations)."""
        bad = set(hints) - set(self._hints)
        if bad:
            raise TypeError(f"replace_hints(): unknown hint(s) {', '.join(sorted(bad))}; hints: "
                            f"{', '.join(self._hints)}")
        return Kernel(self.py_func, **{**self._hints, **hints})

    @property
    def written_parameters(self) -> tuple:
        """The parameters ``ct.launch`` passes writable (the kernel may store into them)."""
        return tuple(self.param_names[i] for i in self._writes())

    def _writes(self) -> tuple:
        w = self._write_positions
        if w is None:
            names = written_parameters(self.py_func)
            w = self._write_positions = tuple(i for i, n in enumerate(self.param_names)
                                              if n in names and n not in self.constant_names)
        return w

    def _alias_conflict(self, infos, consts, a: int, b: int) -> Optional[str]:
        """Whether runtime arguments ``a`` and ``b`` (positions in ``infos``), which share memory,
        may do so in this launch (``argspec.check_launch_aliasing`` asks only then): None when
        they may, else why not. As cuTile, aliases are accepted when at most one of them is
        stored into under the launch's constants: one dummy array for the outputs a call does
        not request (Liger's cross entropy: ``z_loss`` and ``token_accuracy`` under
        ``RETURN_Z_LOSS=0``, ``RETURN_TOKEN_ACCURACY=0``), or an update in place (Liger's GRPO
        backward writes the gradient over the logits it reads). The kernel specialized for the
        launch's constants and argument types (its typed IR, dead ``if CONST:`` arms gone) says
        which parameters it stores into (``_writes.specialized_accesses``). Host arrays are
        copied in and back one by one, so one stored into may not alias another that is copied
        back (its copy would overwrite the results).

        Memory tokens order a kernel's accesses array by array (``lowering/tokens.py``; loads
        of a read-only argument take none): a load through one alias is not ordered after a
        store through the other, so an in-place kernel reads each element before it writes it
        (as Liger's do: the stored value depends on the loaded one)."""
        names = self.runtime_names
        na, nb = names[a], names[b]
        stored, _ = self._specialized_accesses(tuple(i.key for i in infos), consts)
        if na in stored and nb in stored:
            return f"under these constants the kernel stores into both '{na}' and '{nb}'"
        for w, o in ((a, b), (b, a)):
            if names[w] in stored and infos[o].host is not None and infos[o].writable:
                return (f"the kernel stores into '{names[w]}', and '{names[o]}' is a host array "
                        f"copied back too, which may overwrite the results")
        return None

    def _specialized_accesses(self, keys: tuple, consts) -> tuple:
        """``(stored, accessed)`` parameter names of this kernel typed for argument ``keys`` and
        its constants (memoized per key)."""
        consts = getattr(self, "_consts", None) or dict(consts or {})
        memo = self.__dict__.setdefault("_accesses", {})
        key = (keys, _keys.constant_key(consts))
        hit = memo.get(key)
        if hit is None:
            from ..typing.pipeline import type_kernel
            from ._writes import specialized_accesses
            typed = type_kernel(self.py_func, list(keys), consts,
                                plain_helpers=self.options.plain_helpers)
            hit = memo[key] = specialized_accesses(typed)
        return hit

    def _keys_for(self, args, generics=None):
        # inspect_tileir / inspect_types / compile(arch=...) take the arguments ct.launch takes
        if len(args) == len(self.param_names):
            args = self._launch_values(args)
        return super()._keys_for(args, generics)

    def _launch_values(self, args) -> tuple:
        """``args`` with lists as tuples and the arrays the kernel stores into passed
        writable."""
        if not _loaded:
            _load()
        values = list(as_launch_args(args))
        for i in self._writes():
            v = values[i]
            kind = _array_kind(v)
            if kind == _SEQUENCE:
                values[i] = _writable_items(v)
            elif kind:
                values[i] = atomic(v)
        return tuple(values)


class _Bound(Kernel):
    """A ``ct.kernel`` with its ``ct.Constant`` parameters bound to one set of values: it has
    only runtime parameters, so ``ct.launch`` makes a plain launch of it (the C path); it
    compiles with the bound values, as the kernel would."""

    def __init__(self, parent: Kernel, consts: dict):
        super().__init__(parent.py_func, **parent._hints)
        self._hints = parent._hints
        self._stats = parent._stats         # one set of counters for the kernel
        self._consts = consts
        self.constant_names = ()
        self._constant_types = {}
        self.param_names = self.runtime_names
        self._simple = True
        self._write_positions = None
        self._native = _native_launcher(self)

    def _compile(self, keys, consts, target, options, *args, **kwargs):
        return super()._compile(keys, self._consts, target, options, *args, **kwargs)


_MAY_BE_HOST = 2
# a tuple or list whose arrays are wrapped one by one (csrc/cutile.c leaves kinds above
# _MAY_BE_HOST to Python's path)
_SEQUENCE = 3


def _array_kind(v) -> int:
    """0 for what ``tile.atomic`` does not wrap (scalars, partitions), ``_SEQUENCE`` for a tuple
    or list, else an array: ``_MAY_BE_HOST`` when its type can hold host memory (torch:
    ``is_cpu``), 1 otherwise. Decided by the type (``_ARRAY_TYPES`` remembers it)."""
    if not _loaded:
        _load()
    if isinstance(v, (tuple, list)):
        return _SEQUENCE
    if not hasattr(v, "shape") or isinstance(
            v, (np.generic, Partition, ForeignPartition, atomic)):
        return 0
    return _MAY_BE_HOST if hasattr(type(v), "is_cpu") else 1


def _writable_items(v) -> tuple:
    """A tuple argument the kernel may store into, its arrays passed writable (a CPU torch
    tensor that requires grad through its detached view, as a plain argument)."""
    out = []
    for x in v:
        kind = _array_kind(x)
        if kind == _MAY_BE_HOST and x.requires_grad:
            x = x.detach()
        out.append(atomic(x) if kind in (1, _MAY_BE_HOST) else x)
    return tuple(out)


def list_argument(v: list) -> tuple:
    """cuTile's list argument as the tuple tilejit passes: a non-empty list of arrays of one
    dtype and rank (cuTile's rules and messages). A kernel indexes it as a tuple (``len``,
    ``xs[i]`` with a run-time ``i``); it is compiled for each length."""
    if not v:
        raise TypeError("Empty lists are not supported as kernel arguments")
    first = None
    for j, x in enumerate(v):
        if _array_kind(x) not in (1, _MAY_BE_HOST) and not isinstance(x, atomic):
            raise TypeError(f"Expected list items to be arrays, got {type(x).__name__} "
                            f"(item #{j})")
        a = x.value if isinstance(x, atomic) else x
        sig = (str(a.dtype), len(a.shape))
        if first is None:
            first = sig
        elif sig[0] != first[0]:
            raise TypeError(f"Arrays in list vary in data type ({first[0]} vs {sig[0]})")
        elif sig[1] != first[1]:
            raise TypeError(f"Arrays in list vary in rank ({first[1]} vs {sig[1]})")
    return tuple(v)


def as_launch_args(args) -> tuple:
    """``args`` with each list argument as its tuple (:func:`list_argument`)."""
    return tuple(list_argument(a) if type(a) is list else a for a in args)


# type of a written argument -> whether it is wrapped in tile.atomic (the launch hot path)
_ARRAY_TYPES = BoundedMemo("cutile.array_types", 256)
_new_atomic = object.__new__        # tile.atomic(v) for a plain array: its checks are done


def kernel(function=None, /, *, num_ctas=None, occupancy=None, opt_level=3,
           num_worker_warps=None):
    """``@ct.kernel`` or ``@ct.kernel(num_ctas=, occupancy=, opt_level=, num_worker_warps=)``: a
    tile kernel in cuTile Python's language; hints may be :class:`ByTarget` values."""
    def wrap(f):
        if isinstance(f, _TileKernel):
            f = f.py_func
        if not callable(f) or not hasattr(f, "__code__"):
            raise TypeError("`kernel` decorator must be applied to a Python function")
        return Kernel(f, num_ctas=num_ctas, occupancy=occupancy, opt_level=opt_level,
                      num_worker_warps=num_worker_warps)
    return wrap if function is None else wrap(function)


def function(func=None, /, *, host=False, tile=True):
    """``@ct.function``: a helper callable from kernels (inlined). Undecorated functions are
    helpers too; ``host=True`` keeps the function callable on the host as well."""
    def wrap(f):
        return f if host else TileFunction(f)
    return wrap if func is None else wrap(func)


# --------------------------------------------------------------------------------------------------
# ct.launch
_streams = BoundedMemo("cutile.streams", 64)


def _stream_of(obj) -> Stream:
    """A tilejit Stream for ``obj``: a tile.Stream, a torch or CuPy stream, a ``cuda.core``
    stream or an int handle. Foreign streams get one long-lived wrapper per handle, so
    consecutive launches on one stream are ordered by the stream itself (no events)."""
    if not _loaded:
        _load()
    if type(obj) is Stream:
        return obj
    handle = getattr(obj, "cuda_stream", None)       # torch, with its device (every device
    if type(handle) is int:                          # has a default stream 0)
        s = _streams.get((handle, getattr(obj, "device_index", None)))
        if s is not None:
            return s
    if obj is None or isinstance(obj, bool):
        raise TypeError(f"ct.launch() needs a stream, got {obj!r}: pass "
                        f"torch.cuda.current_stream(), a CuPy stream, an int CUstream handle or "
                        f"a tile.Stream")
    if isinstance(obj, int) and obj < 0:
        raise ValueError(f"ct.launch(): stream handle {obj} is negative: pass a CUstream "
                         f"handle (0 is the default stream), a torch or CuPy stream, or a "
                         f"tile.Stream")
    handle = _stream_handle(obj)
    key = (handle, getattr(obj, "device_index", None) if type(getattr(
        obj, "cuda_stream", None)) is int else _object_device(obj))
    if key[1] is None and handle in (0, 1, 2):
        # a default stream names the current device's: keyed by it, never (handle, None), so
        # csrc/cutile.c (which looks int handles up as (handle, None)) leaves these to Python
        key = (handle, current_ordinal())
    s = _streams.get(key)
    if s is None:
        s = Stream.borrow_raw(obj)
        if not s.is_simulated:
            s = Stream.of_producer(handle, s.device)
        s = _streams.put(key, s)
    return s


def launch(stream, grid, kernel, kernel_args, /) -> None:
    """``ct.launch(stream, grid, kernel, args)``: queue ``kernel`` on ``stream`` over ``grid``
    (1 to 3 dimensions) with the arguments ``args`` (a tuple: arrays, scalars and the values of
    the ``ct.Constant`` parameters, in parameter order). Arrays the kernel stores into are
    written in place (NumPy arrays are copied in and back before this returns)."""
    # the Python path: checks, binds the constants, launches, records the plan C replays
    if not _loaded:
        _load()
    if not isinstance(kernel, Kernel):
        hint = (" (a tilejit @tile.entry kernel runs with kernel(*args).grid(g).sync())"
                if isinstance(kernel, _TileKernel) else "")
        raise TypeError(f"ct.launch() expects a @ct.kernel, got {type(kernel).__name__}{hint}")
    if not isinstance(kernel_args, (tuple, list)):
        raise TypeError(f"ct.launch(): the kernel arguments must be a tuple, got "
                        f"{type(kernel_args).__name__}")
    n = len(kernel.param_names)
    if len(kernel_args) != n:
        raise TypeError(f"Kernel expects {n} arguments but {len(kernel_args)} were given "
                        f"({kernel.__name__}{kernel._sig})")
    grid = _grid3(grid)
    stream = _stream_of(stream)
    if list in map(type, kernel_args):
        # tilejit passes a list as a tuple: launches with lists take this path (csrc/cutile.c
        # would hand a list to the kernel call as it is)
        kernel_args = as_launch_args(kernel_args)
        kernel._ct_plan = False
    k, values = kernel._plain_launch(kernel_args)
    op = k(*values)           # a KernelLaunch (made in C with the extension)
    op._grid = grid           # as op.grid(g), without a copy
    op.submit_on(stream)
    if _C_PATH and kernel._ct_plan is None:
        kernel._ct_plan = kernel._launch_plan()


# With the C extension built and wanted, ct.launch is the C entry itself from the import on
# (csrc/cutile.c: ct_entry), whatever names were bound to it: a replayed launch runs no Python
# frame, and the Python function above runs when it cannot replay (before the runtime has loaded
# and the C path's layout is installed (_C_PATH), no kernel has a plan to replay).
launch = _native.ct_entry(launch)


def _grid3(grid) -> tuple:
    """``grid`` as a checked 3-tuple (a 3-tuple of small ints as is)."""
    if not _loaded:
        _load()
    if type(grid) is tuple and len(grid) == 3:
        x, y, z = grid
        if type(x) is int and type(y) is int and type(z) is int and \
                0 <= x < _GRID_LIMIT and 0 <= y < _GRID_LIMIT and 0 <= z < _GRID_LIMIT:
            return grid
    return normalize_grid(grid)


__all__ = ["ByTarget", "Kernel", "kernel", "function", "launch"]
