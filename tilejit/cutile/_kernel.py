"""cuTile Python's host side over tilejit: ``@ct.kernel``, ``ct.function``, ``ct.ByTarget`` and
``ct.launch(stream, grid, kernel, args)``.

A ``ct.kernel`` is a :class:`tilejit.Kernel` compiled with cuTile's rules: undecorated Python
functions it calls are inlined (``CompileOptions.plain_helpers``), ``int``/``float``/``bool``
annotations of scalar parameters mean int32/float32/bool (cuTile's scalar types), and hints may
be :class:`ByTarget` values (resolved for each architecture it compiles for).

``ct.launch`` stores into arrays as cuTile does, without partitions: the kernel's source says
which array parameters it stores into (``_writes.written_parameters``, read once per kernel
without compiling anything), and those arguments are passed writable (``tile.atomic``); the
others stay read-only. Arrays may be torch or CuPy arrays, tilejit tensors or NumPy arrays
(copied in, and back when written).
"""
from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Optional

import numpy as np

from .. import dtypes as D
from ..dispatcher import Kernel as _TileKernel
from ..kernel_launch import KernelLaunch
from ..language import TileFunction
from ..memo import BoundedMemo
from ..runtime.argspec import atomic, normalize_grid
from ..runtime.device import Device
from ..runtime.partition import ForeignPartition, Partition
from ..runtime.stream import Stream, _object_device, _stream_handle
from ._writes import written_parameters

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


# cuTile's scalar parameter types for Python annotations
_SCALAR_ANNOTATIONS = {int: D.int32, float: D.float32, bool: D.bool_}


class Kernel(_TileKernel):
    """A ``@ct.kernel``: launch it with ``ct.launch(stream, grid, kernel, args)``.

    It is also a tilejit kernel: ``kernel(*args).grid(g)`` is a lazy launch (pass the arrays it
    stores into as ``tile.atomic(a)``), and ``inspect_tileir`` / ``compile(arch=...)`` work."""

    def __init__(self, pyfunc, *, num_ctas=None, occupancy=None, opt_level=3,
                 num_worker_warps=None):
        self._hints = {"num_ctas": num_ctas, "occupancy": occupancy, "opt_level": opt_level,
                       "num_worker_warps": num_worker_warps}
        if num_worker_warps is not None:
            warnings.warn("ct.kernel(num_worker_warps=...) is a hint tilejit does not take "
                          "(tileiras chooses the warps); it is ignored", RuntimeWarning,
                          stacklevel=3)
        level = _for_target(opt_level, None)
        super().__init__(pyfunc, occupancy=_for_target(occupancy, None),
                         num_ctas=_for_target(num_ctas, None),
                         opt_level=3 if level is None else level)
        self.options = dataclasses.replace(self.options, plain_helpers=True)
        self._by_target = any(isinstance(v, ByTarget) for v in self._hints.values())
        self._write_positions = None

    @staticmethod
    def _scalar_annotations(pyfunc):
        out = {}
        for name, ann in getattr(pyfunc, "__annotations__", {}).items():
            if isinstance(ann, D.DType):
                out[name] = ann
            elif ann in _SCALAR_ANNOTATIONS:
                out[name] = _SCALAR_ANNOTATIONS[ann]
        return out

    def _compile(self, keys, consts, target, options, *args, **kwargs):
        if self._by_target and options == self.options:
            h = self._hints
            level = _for_target(h["opt_level"], target)
            options = dataclasses.replace(
                options, occupancy=_for_target(h["occupancy"], target),
                num_cta_in_cga=_for_target(h["num_ctas"], target),
                opt_level=3 if level is None else level)
        return super()._compile(keys, consts, target, options, *args, **kwargs)

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

    def _keys_for(self, args, generics=None):
        # inspect_tileir / inspect_types / compile(arch=...) take the arguments ct.launch takes
        if len(args) == len(self.param_names):
            args = self._launch_values(args)
        return super()._keys_for(args, generics)

    def _launch_values(self, args) -> tuple:
        """``args`` with the arrays the kernel stores into passed writable."""
        values = list(args)
        for i in self._writes():
            v = values[i]
            if _is_plain_array(v):
                values[i] = atomic(v)
        return tuple(values)


def _is_plain_array(v) -> bool:
    """An array that ``tile.atomic`` makes writable (not a scalar, tuple or partition)."""
    return hasattr(v, "shape") and not isinstance(
        v, (np.generic, Partition, ForeignPartition, atomic, tuple, list))


def kernel(function=None, /, *, num_ctas=None, occupancy=None, opt_level=3,
           num_worker_warps=None):
    """``@ct.kernel`` or ``@ct.kernel(num_ctas=, occupancy=, opt_level=)``: a tile kernel in
    cuTile Python's language; hints may be :class:`ByTarget` values."""
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
    if type(obj) is Stream:
        return obj
    if obj is None or isinstance(obj, bool):
        raise TypeError(f"ct.launch() needs a stream, got {obj!r}: pass "
                        f"torch.cuda.current_stream(), a CuPy stream, an int CUstream handle or "
                        f"a tile.Stream")
    handle = _stream_handle(obj)
    key = (handle, _object_device(obj))
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
    s = _stream_of(stream)
    KernelLaunch(kernel, kernel._launch_values(kernel_args),
                 grid=normalize_grid(grid)).submit_on(s)


__all__ = ["ByTarget", "Kernel", "kernel", "function", "launch"]
