"""``@tile.entry``: the kernel object, its specializations and the launch DeviceOp.

Calling a kernel returns a lazy :class:`KernelLaunch`. When it executes, the arguments are
classified (``runtime.argspec``: plain-tuple keys, never Numba types), the key is looked up in the
kernel's in-memory cache, and on a miss the kernel is compiled once per key (thread-safe):
Numba typing -> structurize -> Tile IR -> verify -> bytecode -> tileiras (through the disk cache)
-> module load. Without a GPU the Tile IR module runs on the CPU simulator instead.
"""
from __future__ import annotations

import inspect
import re
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from . import backends
from . import compiler as _compiler
from . import dtypes as D
from . import envvars
from . import fingerprint
from . import keys as _keys
from . import language as L
from . import native
from .compiler import CompileOptions, Compiled
from .errors import CompileError, LaunchError
from .ops.deviceop import (DeviceFuture, DeviceOp, _as_stream, _sync_quietly, account_for,
                           execute_input)
from .ops.execution import ExecutionContext
from .ops.scheduling import default_stream, has_user_policy, policy_epoch
from .runtime import argspec
from .runtime.hostarrays import float64_hint
from .runtime.argspec import (check_launch_aliasing, check_launch_devices, classify,
                               grid_from_partitions, release_partitions)
from .runtime import foreign as _foreign
from .runtime.device import Device, default_arch
from .runtime.launch import launch_infos
from .runtime import submission as _submission
from .runtime.memory import Storage, _FreeState, use_all
from .runtime.partition import ForeignPartition, Partition
from .runtime.stream import Stream
from .runtime.tensor import Tensor

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from .tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

_ARCH_RE_DOC = "an architecture name such as 'sm_90'"
_MISSING = object()         # a Constant left for .generics(...) to bind
NO_GRID_FACTS = (False, False, False)


def grid_ones(grid) -> tuple:
    """Which axes of a launch grid have extent 1 (part of the specialization key: ``tile.bid``
    of such an axis is the constant 0, which lets tileiras prove more loads in bounds)."""
    return (grid[0] == 1, grid[1] == 1, grid[2] == 1)
_new_launch = object.__new__


@dataclass
class KernelStats:
    """Counters of one kernel object (``kernel.stats``)."""

    compiles: int = 0             # specializations built by the front end
    cache_hits: int = 0           # in-memory hits
    disk_hits: int = 0            # cubins taken from the disk cache (tileiras skipped)
    index_hits: int = 0           # warm-start index hits (no front end at all)
    launches: int = 0
    typing_s: float = 0.0
    lowering_s: float = 0.0
    tileiras_s: float = 0.0
    index_s: float = 0.0
    load_s: float = 0.0

    def __repr__(self) -> str:
        return (f"KernelStats(compiles={self.compiles}, cache_hits={self.cache_hits}, "
                f"disk_hits={self.disk_hits}, index_hits={self.index_hits}, "
                f"launches={self.launches}, typing={self.typing_s * 1e3:.1f} ms, "
                f"lowering={self.lowering_s * 1e3:.1f} ms, tileiras={self.tileiras_s * 1e3:.1f} ms, "
                f"index={self.index_s * 1e3:.1f} ms, load={self.load_s * 1e3:.1f} ms)")


class Kernel:
    """A ``@tile.entry`` kernel. ``kernel(*args)`` returns a lazy :class:`KernelLaunch`."""

    __tilejit_entry__ = True     # lets the front end reject calls to kernels from kernels

    def __init__(self, pyfunc, *, occupancy=None, num_ctas=None, opt_level=3, fma=True, cache=True,
                 max_divisibility=None):
        if isinstance(pyfunc, Kernel):
            pyfunc = pyfunc.py_func
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"@tile.entry expects a Python function, got {pyfunc!r}")
        self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc
        self.options = CompileOptions(occupancy, num_ctas, max_divisibility, opt_level, fma)
        self.use_disk_cache = cache
        sig = inspect.signature(pyfunc)
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"kernel '{self.__name__}': parameter '{p.name}' must be a plain "
                                f"positional parameter (*args, **kwargs and keyword-only "
                                f"parameters are not supported)")
        self._sig = sig
        self.param_names = tuple(sig.parameters)
        self._constant_types = L.constant_annotations(pyfunc)
        self.constant_names = tuple(self._constant_types)
        self.runtime_names = tuple(n for n in self.param_names if n not in self.constant_names)
        annotations = self._scalar_annotations(pyfunc)
        self._cache: Dict[tuple, Compiled] = {}
        self._fast: Dict[tuple, Any] = {}      # (arg keys, device) -> executable
        self._simple = not self.constant_names
        self._anns = tuple(annotations.get(n) for n in self.runtime_names)
        self._locks: Dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._stats = KernelStats()
        self._native = _native_launcher(self)
        self._frozen = None           # the global values the first compile froze in
        self._warned_globals = False

    @property
    def stats(self) -> KernelStats:
        """This kernel's counters (compiles, cache hits, launches, timings)."""
        st = self._stats
        if self._native is not None:        # launches the C launcher made since the last look
            n = self._native.take_launches()
            st.launches += n
            st.cache_hits += n
        return st

    @staticmethod
    def _scalar_annotations(pyfunc):
        out = {}
        for name, ann in getattr(pyfunc, "__annotations__", {}).items():
            if isinstance(ann, D.DType):
                out[name] = ann
            elif ann in (int, float, bool):
                out[name] = D.as_dtype(ann)
        return out

    def __repr__(self) -> str:
        n = len(self._cache)
        return (f"<tile.entry {self.__name__}{self._sig}: {n} compiled "
                f"specialization{'s' if n != 1 else ''}, {self.stats.launches} launches>")

    def _repr_html_(self) -> str:
        import html
        rows = "".join(
            f"<tr><td><code>{html.escape(', '.join(_keys.as_key(a).describe() for a in keys))}</code></td>"
            f"<td><code>{html.escape(', '.join(f'{n}={v!r}' for n, v in consts))}</code></td>"
            f"<td>{html.escape(str(target))}</td></tr>"
            for (keys, consts, _opts, target, *_rest) in self._cache)
        table = (f"<table><tr><th>arguments</th><th>constants</th><th>target</th></tr>{rows}"
                 f"</table>") if rows else "<p>nothing compiled yet</p>"
        return (f"<div><b>tile.entry</b> <code>{html.escape(self.__name__)}"
                f"{html.escape(str(self._sig))}</code>{table}"
                f"<p><code>{html.escape(repr(self.stats))}</code></p></div>")

    # --- launching -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs) -> "KernelLaunch":
        if kwargs or len(args) not in (len(self.param_names), len(self.runtime_names)):
            args = self._bind(args, kwargs)
        op = _new_launch(KernelLaunch)
        op.kernel = self
        op.args = args
        op.arity = len(args)
        op._simple = self._simple and len(args) == len(self.runtime_names)
        op._grid = op._const_grid = op._options = None
        op._generics = {}
        return op

    def _bind(self, args, kwargs) -> tuple:
        """All parameter values in order, bound like a Python call (defaults applied; a Constant
        left out is ``_MISSING``, for ``.generics(...)`` to bind)."""
        try:
            bound = self._sig.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        bound.apply_defaults()
        values = bound.arguments
        missing = [n for n in self.runtime_names if n not in values]
        if missing:
            raise TypeError(f"{self.__name__}() missing {len(missing)} required argument(s): "
                            f"{', '.join(repr(n) for n in missing)}")
        return tuple(values.get(n, _MISSING) for n in self.param_names)

    def _split(self, values, generics: Dict[str, Any]):
        """(runtime values in order, checked constants by name) from the passed values."""
        names = self.param_names
        if len(values) == len(names):
            consts = {n: v for n, v in zip(names, values)
                      if n in self._constant_types and v is not _MISSING}
            rt = [v for n, v in zip(names, values) if n not in self._constant_types]
            for n, v in generics.items():
                if n in consts and consts[n] != v:
                    raise LaunchError(f"{self.__name__}: constant '{n}' given twice with different "
                                      f"values ({consts[n]!r} and {v!r})")
                consts[n] = v
        elif len(values) == len(self.runtime_names):
            rt = list(values)
            consts = dict(generics)
        else:
            raise LaunchError(
                f"{self.__name__}() takes {len(names)} arguments ({', '.join(names)}), "
                f"{len(values)} given"
                + (f"; constants ({', '.join(self.constant_names)}) may also be bound with "
                   f".generics(...)" if self.constant_names else ""))
        missing = [n for n in self.constant_names if n not in consts]
        if missing:
            raise LaunchError(f"{self.__name__}: no value for the tile.Constant parameter(s) "
                              f"{', '.join(missing)}; pass them as arguments or bind them with "
                              f".generics({missing[0]}=...)")
        types = self._constant_types
        return rt, {n: _keys.constant_value(n, v, types[n]) for n, v in consts.items()}

    # --- compilation -------------------------------------------------------------------------------
    def specialize(self, keys: Sequence[tuple], consts: Dict[str, Any], target: str,
                   options: Optional[CompileOptions] = None, const_grid=None,
                   grid_ones=NO_GRID_FACTS) -> Compiled:
        """The compiled specialization for argument keys, constants and target (``"sim"`` or an
        architecture such as ``"sm_90"``); compiles once per key, also under concurrency.
        ``const_grid`` (a 3-tuple) is baked in: ``tile.num_blocks`` folds to its entries;
        ``grid_ones`` says which grid axes have extent 1 (``tile.bid`` there is 0)."""
        options = options or self.options
        key = (tuple(keys), _keys.constant_key(consts), options, target, const_grid,
               tuple(grid_ones))
        c = self._cache.get(key)
        if c is not None:
            self.stats.cache_hits += 1
            return c
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            c = self._cache.get(key)
            if c is not None:
                self.stats.cache_hits += 1
                return c
            c = self._compile(list(keys), consts, target, options, const_grid, key=key,
                              grid_ones=tuple(grid_ones))
            self._cache[key] = c
            return c

    def _compile(self, keys, consts, target, options, const_grid=None, key=None,
                 grid_ones=NO_GRID_FACTS) -> Compiled:
        if self._frozen is None:
            self._frozen = fingerprint.frozen_globals(self.py_func)
        else:
            self.check_globals()
        try:
            c = _compiler.compile(self.py_func, keys, consts, target, options,
                                  const_grid=const_grid, name=self.__name__, key=key,
                                  use_disk_cache=self.use_disk_cache, grid_ones=grid_ones)
        except CompileError as e:
            if envvars.flag("TILEJIT_FULL_TRACEBACK"):
                raise
            # The message already points at the user's line; tilejit's own frames (and Numba's
            # chained exceptions) would bury it, in notebooks especially.
            raise e.with_traceback(None) from None
        st = self.stats
        t = c.timings
        if "index" in t:
            st.index_hits += 1
            st.index_s += t["index"]
        else:
            st.compiles += 1
            st.disk_hits += int(c.disk_hit)
        st.typing_s += t.get("typing", 0.0)
        st.lowering_s += t.get("lowering", 0.0)
        st.tileiras_s += t.get("tileiras", 0.0)
        return c

    def check_globals(self) -> None:
        """Warn (once) when a global the compiled code froze in has changed since: compiled
        specializations keep the old value (as in Numba); pass it as an argument instead."""
        if self._frozen is None or self._warned_globals:
            return
        changed = fingerprint.changed_globals(self._frozen,
                                              fingerprint.frozen_globals(self.py_func))
        if changed:
            self._warned_globals = True
            warnings.warn(
                f"kernel '{self.__name__}' reads global(s) {', '.join(changed)} whose value changed "
                f"after it was compiled; globals are frozen into the compiled kernel at compile "
                f"time (as in Numba), so it keeps the old value(s). Pass such values as arguments "
                f"or tile.Constant parameters", RuntimeWarning, stacklevel=3)

    def executable(self, compiled: Compiled, device):
        """``compiled`` loaded on ``device`` by its backend (once per device)."""
        exe = compiled.executables.get(device)
        if exe is None:
            with self._lock:
                exe = compiled.executables.get(device)
                if exe is None:
                    t0 = time.perf_counter()
                    exe = backends.of(device).load(compiled, device)
                    self.stats.load_s += time.perf_counter() - t0
                    compiled.executables[device] = exe
        return exe

    # --- tooling (no GPU needed) ---------------------------------------------------------------------
    def _keys_for(self, args, generics=None):
        if len(args) not in (len(self.param_names), len(self.runtime_names)):
            args = self._bind(tuple(args), {})
        rt, consts = self._split(tuple(args), dict(generics or {}))
        try:
            infos = [classify(v, a) for v, a in zip(rt, self._anns)]
            try:
                ones = grid_ones(grid_from_partitions(infos))
            except LaunchError:         # no partition: the grid is only known at launch
                ones = NO_GRID_FACTS
            return [i.key for i in infos], consts, ones
        finally:
            release_partitions(rt)

    def inspect_types(self, *args, **generics) -> str:
        """The typed Numba IR and region tree of the specialization for ``args``.

        Args:
            *args: Launch arguments (tensors, partitions, arrays, scalars) or just their keys;
                nothing runs.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        from .lowering.structurize import structurize
        from .typing.pipeline import type_kernel
        keys, consts, _ = self._keys_for(args, generics)
        typed = type_kernel(self.py_func, keys, consts)
        frozen = fingerprint.frozen_globals(self.py_func)
        note = ("globals frozen into the compiled code (later changes are not seen): "
                + ", ".join(f"{k} = {v!r}" for k, v in frozen.items())) if frozen else \
            "globals frozen into the compiled code: none"
        return typed.dump() + "\n\n" + structurize(typed).dump() + "\n\n" + note

    def inspect_tileir(self, *args, **generics) -> str:
        """The Tile IR text (``tileirdisasm`` syntax) for ``args``; needs no GPU.

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        from .tileir import print_module
        keys, consts, ones = self._keys_for(args, generics)
        _, module, _ = _compiler.front_end(self.py_func, keys, consts, _compiler.SIM_TARGET,
                                           self.options, name=self.__name__, grid_ones=ones)
        return print_module(module)

    def inspect_bytecode(self, *args, **generics) -> bytes:
        """The Tile IR bytecode tileiras would compile for ``args``.

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        from .tileir import LATEST, write_bytecode
        from .toolchain import tileiras
        keys, consts, ones = self._keys_for(args, generics)
        version = tileiras.max_bytecode_version() if tileiras.available() else LATEST
        _, module, _ = _compiler.front_end(self.py_func, keys, consts, _compiler.SIM_TARGET,
                                           self.options, name=self.__name__, version=version,
                                           grid_ones=ones)
        return write_bytecode(module, version)

    def compile(self, *args, arch: Optional[str] = None, **generics) -> bytes:
        """Ahead-of-time compile for ``args`` and return the cubin bytes (no GPU needed).

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            arch: Target architecture such as ``"sm_90"``; default: the current GPU's, else
                ``TILEJIT_ARCH``.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        arch = arch_or_raise(default_arch() if arch is None else arch)
        keys, consts, ones = self._keys_for(args, generics)
        return self._compile(keys, consts, arch, self.options, grid_ones=ones).cubin

    @property
    def signatures(self) -> list:
        """The argument keys of every compiled specialization."""
        return [k[0] for k in self._cache]


def arch_or_raise(arch: str) -> str:
    """``arch`` if it names an architecture (``"sm_90"``), else ValueError."""
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d{2,3}[a-z]?", arch):
        raise ValueError(f"arch must be {_ARCH_RE_DOC}, got {arch!r}")
    return arch


# (device ordinal, torch's current stream there) -> (policy epoch, the Stream sync() runs on)
_torch_streams: Dict[tuple, tuple] = {}


class KernelLaunch(DeviceOp):
    """A lazy kernel launch. Its output is the tuple of the arguments you passed."""

    # slots: the C launcher (_native.c, set_layout) makes and reads plain launches by offset
    __slots__ = ("kernel", "args", "arity", "_simple", "_grid", "_const_grid", "_options",
                 "_generics", "__dict__", "__weakref__")

    @property
    def graph_safe(self) -> bool:  # type: ignore[override]
        """A launch is graph-safe when its lazy inputs are (NumPy arguments are copied in, which
        allocates, and are caught by the allocation guard)."""
        return all(a.graph_safe for a in self.args if isinstance(a, DeviceOp))

    def __init__(self, kernel: Kernel, args, grid=None, const_grid=None, generics=None,
                 options: Optional[CompileOptions] = None):
        self.kernel = kernel
        self.args = tuple(args)
        self._grid = grid
        self._const_grid = const_grid
        self._generics = dict(generics or {})
        self._options = options
        self.arity = len(self.args)
        # no constants, generics, options or const_grid: the hot path keys on argument keys only
        self._simple = kernel._simple and not self._generics and options is None \
            and const_grid is None and len(self.args) == len(kernel.runtime_names)

    # With the C extension, submit_on and sync_on are replaced by C methods (_install_native)
    # that launch plain calls themselves and fall back to these.
    def submit_on(self, stream) -> DeviceFuture:
        """Queue the launch on ``stream`` without waiting (the hot path of a kernel call)."""
        self._ran = True        # no "never run" warning (the C methods set it too: RAN_SLOT)
        if type(stream) is not Stream:
            stream = _as_stream(stream)
        if not self._simple:
            return DeviceOp.submit_on(self, stream)
        return self._submit_plain(stream, True)

    def sync_on(self, stream):
        """Run on ``stream`` and wait for completion; return the output."""
        self._ran = True
        if type(stream) is not Stream:
            stream = _as_stream(stream)
        if not self._simple:
            return DeviceOp.sync_on(self, stream)
        return self._sync_plain(stream, True)

    def _submit_plain(self, stream, try_native=False) -> DeviceFuture:
        _submission.enter("submit_on()/schedule()/await")
        try:
            out = self._launch_plain(stream, try_native)
        finally:
            _submission.leave()
        return DeviceFuture(out, stream)

    def _sync_plain(self, stream, try_native=False):
        _submission.enter("sync()/sync_on()")
        try:
            out = self._launch_plain(stream, try_native)
        except BaseException:
            _submission.leave()
            _sync_quietly(stream)
            raise
        _submission.leave()
        stream.synchronize()
        return out

    def _default_stream(self):
        # The device of the arguments, and there: DLPack producers order their consumers after
        # their pending work, so when torch made the tensors, running on torch's current stream
        # needs no ordering at all.
        prod = _foreign.torch_stream_of(self.args)
        if prod is not None:
            epoch = policy_epoch()
            hit = _torch_streams.get(prod)
            if hit is not None and hit[0] == epoch:
                return hit[1]
            if not has_user_policy(prod[0]):
                s = Stream.of_producer(prod[1], Device(prod[0]))
                if not s._owned and s._owner is not None and len(_torch_streams) < 64:
                    _torch_streams[prod] = (epoch, s)     # a producer wrapper: never destroyed
                return s
            return default_stream(prod[0])
        for a in self.args:
            t = a._tensor if type(a) is Partition else a
            if type(t) is Tensor:
                return default_stream(t._storage.device)
        return default_stream()

    def _launch_plain(self, stream, try_native=True):
        """Launch a kernel without constants or launch options: the native launcher when it
        knows the arguments, else the general path (which compiles on a miss)."""
        k = self.kernel
        native = k._native
        if try_native and native is not None and self._grid is None and \
                native.launch(self.args, stream):
            if not native.total & 255:      # now and then: did a frozen global change?
                k.check_globals()
            return self.args
        with stream.device.current():
            return self._execute(ExecutionContext(stream))

    def describe(self, depth: int = 0) -> str:
        from .ops.describe import value
        k = self.kernel
        names = k.param_names if len(self.args) == len(k.param_names) else k.runtime_names
        parts = [f"{n}={value(a, depth)}" for n, a in zip(names, self.args)
                 if a is not _MISSING]
        parts += [f"{n}={v!r}" for n, v in self._generics.items()]
        grid = f"grid {self._grid}" if self._grid is not None else "grid from the partitions"
        return f"launch {k.__name__}({', '.join(parts)}), {grid}"

    def _copy(self, **kw):
        d = dict(grid=self._grid, const_grid=self._const_grid, generics=self._generics,
                 options=self._options)
        d.update(kw)
        return KernelLaunch(self.kernel, self.args, **d)

    def grid(self, grid) -> "KernelLaunch":
        """Launch on an explicit runtime grid ``(gx, gy, gz)`` instead of the partitions' grid."""
        account_for(self)   # the copy (or the error) replaces it: only the copy warns if never run
        return self._copy(grid=argspec.normalize_grid(grid))

    def const_grid(self, grid) -> "KernelLaunch":
        """Like ``grid`` but baked into the kernel (part of the specialization key)."""
        account_for(self)
        g = argspec.normalize_grid(grid)
        return self._copy(grid=g, const_grid=g)

    def generics(self, *values, **named) -> "KernelLaunch":
        """Bind ``tile.Constant`` parameters: ``.generics([64, 32])`` (in parameter order) or
        ``.generics(BM=64, BK=32)``."""
        account_for(self)
        g = dict(self._generics)
        if values:
            vals = values[0] if len(values) == 1 and isinstance(values[0], (list, tuple)) else values
            if len(vals) > len(self.kernel.constant_names):
                raise LaunchError(f"{self.kernel.__name__} has {len(self.kernel.constant_names)} "
                                  f"constant parameter(s), {len(vals)} values given")
            g.update(zip(self.kernel.constant_names, vals))
        for k, v in named.items():
            if k not in self.kernel.constant_names:
                raise LaunchError(f"{self.kernel.__name__} has no tile.Constant parameter '{k}' "
                                  f"(constant parameters: {', '.join(self.kernel.constant_names) or 'none'})")
            g[k] = v
        return self._copy(generics=g)

    def compile_options(self, options: CompileOptions) -> "KernelLaunch":
        account_for(self)
        if not isinstance(options, CompileOptions):
            raise TypeError(f"compile_options() takes a tile.CompileOptions, got {type(options).__name__}")
        return self._copy(options=options)

    def prepare(self, stream=None) -> "PreparedLaunch":
        """Validate, specialize and pack this launch once, for a hot loop of identical launches:
        ``p = kernel(z.partition(t), x).prepare(stream); for ...: p.launch()``.

        The arguments are classified, checked (ownership, aliasing, grid) and compiled now; each
        ``launch()`` then costs one kernel launch plus stream bookkeeping. Partitions stay leased
        until ``close()`` (or until the prepared launch is garbage-collected). Arguments must be
        tensors and scalars (not DeviceOps or NumPy arrays, whose copies are per launch).
        """
        return PreparedLaunch(self, _as_stream(stream) if stream is not None else default_stream())

    def _execute(self, ctx):
        k = self.kernel
        values = tuple([execute_input(a, ctx) if isinstance(a, DeviceOp) else a
                        for a in self.args])
        simple = self._simple
        if simple:
            rt, consts = values, None
        else:
            rt, consts = k._split(values, self._generics)
            values = tuple([v for v in values if v is not _MISSING])
        stream = ctx.stream
        infos = [classify(v, a, stream) for v, a in zip(rt, k._anns)]
        try:
            grid, exe = self._specialize_for(infos, consts, stream, simple)
        except BaseException as e:
            release_partitions(rt)
            if isinstance(e, CompileError):     # float64 NumPy arguments: say so
                e._add_hint(float64_hint(e.message, infos, k.runtime_names))
            raise
        launch_infos(exe, infos, grid, stream, rt)
        k.stats.launches += 1
        if not k.stats.launches & 255:
            k.check_globals()
        return values

    def _specialize_for(self, infos, consts, stream, simple: bool):
        """Check the classified arguments (aliasing, grid) and find their specialization loaded
        on the stream's device: ``(grid, executable)``. The caller releases the partitions on
        error."""
        k = self.kernel
        device = stream.device
        check_launch_devices(infos, device, k.runtime_names)
        check_launch_aliasing(infos, k.runtime_names)
        grid = grid_from_partitions(infos, self._grid, k.runtime_names)
        keys = tuple([i.key for i in infos])
        ones = grid_ones(grid)
        if simple:
            # hot path: a plain dict hit on (argument keys, device, grid axes of extent 1)
            exe = k._fast.get((keys, device, ones))
            if exe is not None:
                k.stats.cache_hits += 1
                return grid, exe
        backend = backends.of(device)
        compiled = k.specialize(keys, consts or {}, backend.target(device),
                                self._options or k.options, const_grid=self._const_grid,
                                grid_ones=ones)
        exe = k.executable(compiled, device)
        if simple:
            k._fast[(keys, device, ones)] = exe
        return grid, exe


class PreparedLaunch:
    """A launch validated and packed once (see :meth:`KernelLaunch.prepare`)."""

    def __init__(self, op: KernelLaunch, stream):
        account_for(op)             # consumed: its launches (and inputs) are this object's
        k = op.kernel
        for a in op.args:
            if isinstance(a, DeviceOp):
                raise LaunchError("prepare(): arguments must be tensors, partitions or scalars, "
                                  "not DeviceOps (run them first with .sync())")
        rt, consts = k._split(op.args, op._generics)
        infos = [classify(v, a, stream) for v, a in zip(rt, k._anns)]
        try:
            for i in infos:
                if i.prepare is not None:
                    raise LaunchError("prepare(): NumPy arrays are copied per launch; pass "
                                      "api.from_numpy(array).sync() tensors instead")
            self.grid, self.executable = op._specialize_for(infos, consts, stream, simple=False)
        except BaseException:
            release_partitions(rt)
            raise
        self.kernel = k
        self.stream = stream
        self.args = op.args                 # keeps every argument alive
        self.infos = infos
        self._values = rt
        self._storages = [i.storage for i in infos if i.storage is not None]
        self.params = argspec.flatten_params(infos)
        self._nonempty = all(self.grid)
        self._closed = False
        self._c = _native_prepared(self)
        if self._c is not None:
            self.launch = self._c.launch        # the whole launch in C, no Python frame

    def launch(self) -> None:
        """Queue the kernel on the prepared stream (no wait)."""
        if self._closed:
            raise LaunchError("this prepared launch was closed")
        stream = self.stream
        use_all(self._storages, stream)
        if self._nonempty:
            self.executable.launch(self.grid, self.params, stream)

    def close(self) -> None:
        """Release the partitions' leases."""
        if not self._closed:
            self._closed = True
            if self._c is not None:
                self._c.close()
            release_partitions(self._values)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _native_launcher(kernel):
    """The C launcher of ``kernel``'s plain launches, or None (pure Python)."""
    ext = native.ext()
    if ext is None or not _NATIVE_LAYOUT:
        return None
    return ext.Launcher(kernel._fast, kernel._anns, DeviceOp, classify, argspec.array_keys,
                        len(kernel.param_names), kernel._simple)


def _native_prepared(p: PreparedLaunch):
    """The C object that launches ``p`` (packed once), or None (pure Python, the simulator, or
    values only the Python packer converts)."""
    ext = native.ext()
    nat = getattr(p.executable, "_native", None)
    if ext is None or nat is None:
        return None
    try:
        return ext.Prepared(nat[0], nat[1], tuple(p.grid), p.stream, nat[2], tuple(p.params),
                            tuple(p._storages), LaunchError, p.executable)
    except (ValueError, OverflowError, TypeError):
        return None


def _install_native() -> bool:
    """With the C extension, ``kernel(...)``, ``op.submit_on(s)``, ``op.sync_on(s)`` and
    ``t.partition(shape)`` run in C for plain launches; the Python methods stay as their fallback
    (and as the pure-Python build). The C code reads the runtime classes' __slots__ by offset:
    if one changed shape, set_layout says so and everything stays in Python."""
    ext = native.ext()
    if ext is None or not ext.set_layout(Tensor, Partition, Storage, _FreeState, Stream,
                                         argspec.ArgInfo, KernelLaunch, ForeignPartition,
                                         DeviceFuture):
        return False
    ext.install(Kernel, Kernel.__call__, KernelLaunch.submit_on, KernelLaunch.sync_on,
                KernelLaunch._submit_plain, KernelLaunch._sync_plain, _sync_quietly,
                Tensor.partition)
    ext.install_finalizer(DeviceOp.__del__)     # the "never run" check of launches, in C
    return True


_NATIVE_LAYOUT = _install_native()


def entry(fn=None, *, occupancy=None, num_ctas=None, opt_level=3, fma=True, cache=True,
          max_divisibility=None):
    """Mark a kernel: ``@tile.entry`` or ``@tile.entry(occupancy=4, num_ctas=2, opt_level=3)``.

    Args:
        fn: The kernel function (when used as ``@tile.entry`` without parentheses).
        occupancy: Blocks per SM that tileiras should plan registers for (1-32); None lets it
            choose.
        num_ctas: CTAs per cluster (a power of two, 1-16; Hopper and later).
        opt_level: tileiras optimization level, 0-3.
        fma: Contract ``a * b + c`` into one fused multiply-add (as C compilers and cuTile
            Python do); ``False`` keeps a rounded product and a rounded sum.
        cache: Keep compiled cubins in the on-disk cache (``TILEJIT_CACHE_DIR``).
        max_divisibility: Cap on the power-of-two divisibility facts the specialization key
            records for pointers, shapes and strides (fewer facts: fewer specializations).

    Returns:
        A :class:`Kernel`: calling it returns a lazy :class:`KernelLaunch`.
    """
    def wrap(f):
        return Kernel(f, occupancy=occupancy, num_ctas=num_ctas, opt_level=opt_level, fma=fma,
                      cache=cache, max_divisibility=max_divisibility)
    if fn is None:
        return wrap
    return wrap(fn)
