"""``@tile.entry``: the kernel object and its specializations (the compile side).

Calling a kernel returns a lazy :class:`~tilejit.kernel_launch.KernelLaunch` (the launch side,
``kernel_launch.py``). When it runs, its arguments' keys are looked up in the kernel's in-memory
cache (:meth:`Kernel.executable_for`), and on a miss the kernel is compiled once per key
(thread-safe): Numba typing -> structurize -> Tile IR -> verify -> bytecode -> tileiras (through
the disk cache) -> module load. Without a GPU the Tile IR module runs on the CPU simulator instead.

The globals a kernel reads are frozen into its code; every launch checks them by identity (in
C too) and a changed value recompiles, with a RuntimeWarning naming it.
"""
from __future__ import annotations

import inspect
import re
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from . import compiler as _compiler
from . import dtypes as D
from . import envvars
from . import fingerprint
from . import keys as _keys
from . import language as L
from .compiler import CompileOptions, Compiled
from .errors import CompileError, LaunchError
from .keys import MISSING as _MISSING
from .keys import NO_GRID_FACTS
from .memo import BoundedMemo

# The launch side (kernel_launch, the runtime, NumPy, the CUDA bindings, the C launcher) loads at
# a kernel's first launch, compile or inspection (_runtime()), not when a kernel is defined: a
# cold start as cheap as cuTile Python's. _load_runtime binds these names; read from outside
# before that, they load it (__getattr__).
_LAUNCH_SIDE = frozenset((
    "KernelLaunch", "PreparedLaunch", "backends", "classify", "grid_from_partitions", "grid_ones",
    "release_partitions", "default_arch", "native", "argspec", "DeviceOp", "DeviceFuture",
    "_sync_quietly", "_NATIVE_LAYOUT"))     # _NATIVE_LAYOUT: whether the C launch path is in
_loaded = False
_RUNTIME_LOCK = threading.Lock()
_WITHOUT_LAUNCHER = weakref.WeakSet()   # kernels made before the runtime loaded: no C launcher yet

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from .tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

_ARCH_RE_DOC = "an architecture name such as 'sm_90'"


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
                 max_divisibility=None, num_worker_warps=None):
        if isinstance(pyfunc, Kernel):
            pyfunc = pyfunc.py_func
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"@tile.entry expects a Python function, got {pyfunc!r}")
        self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc
        self.options = CompileOptions(occupancy, num_ctas, max_divisibility, opt_level, fma,
                                      num_worker_warps=num_worker_warps)
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
        # a Constant's Python default, used where a launch leaves it out
        self._constant_defaults = {n: sig.parameters[n].default for n in self.constant_names
                                   if sig.parameters[n].default is not inspect.Parameter.empty}
        self.runtime_names = tuple(n for n in self.param_names if n not in self.constant_names)
        annotations = self._scalar_annotations(pyfunc)
        self._cache: Dict[tuple, Compiled] = {}
        # (arg keys, device, grid axes of extent 1) -> executable: plain launches' lookup
        self._executables = BoundedMemo(f"{self.__name__}._executables", 1024, register=False)
        self._simple = not self.constant_names
        self._anns = tuple(annotations.get(n) for n in self.runtime_names)
        self._locks: Dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._stats = KernelStats()
        self._frozen = None           # the global values the compiled code froze in
        self._digest = None           # fingerprint.function_digest when they were frozen
        self._reads = ()              # (globals dict, name, value) checked at every launch
        names, params = self.param_names, list(sig.parameters.values())
        self._const_pos = tuple(i for i, n in enumerate(names) if n in self._constant_types)
        self._runtime_pos = tuple(i for i, n in enumerate(names) if n not in self._constant_types)
        # a positional call may leave out trailing parameters that have defaults (no inspect)
        first = len(params)
        while first and params[first - 1].default is not inspect.Parameter.empty:
            first -= 1
        self._first_default = first
        self._tail_defaults = tuple(p.default for p in params[first:])
        # a call passing its constants (and compile options) launches a kernel bound to them
        # (_BoundKernel: a plain launch, the C path): (the constants' values as passed, the
        # options) -> (that kernel, the values, their types when flat and float-free, else None:
        # keys.same_constants), and the bound kernels by (checked constants' key, options)
        self._bindings: Optional[dict] = {}
        self._bound_kernels: Dict[tuple, "_BoundKernel"] = {}
        self._native = _native_launcher(self)     # last: it reads _bindings and _const_pos

    @property
    def stats(self) -> KernelStats:
        """This kernel's counters (compiles, cache hits, launches, timings)."""
        st = self._stats
        for k in (self, *list(self._bound_kernels.values())):
            if k._native is not None:       # launches the C launchers made since the last look
                n = k._native.take_launches()
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
        rows = "".join(f"\n  {row}" for row in self._specialization_rows())
        return (f"<tile.entry {self.__name__}{self._sig}: {n} compiled "
                f"specialization{'s' if n != 1 else ''}, {self.stats.launches} launches{rows}>")

    def _specialization_rows(self) -> list:
        """One line per compiled specialization: every fact of its key (two specializations
        never read alike), then its constants and target."""
        rows = []
        for keys, consts, _opts, target, *_rest in self._cache:
            args = "; ".join(_keys.as_key(a).describe() for a in keys)
            c = ", ".join(f"{n}={v!r}" for n, v in consts)
            rows.append(f"({args})" + (f" with {c}" if c else "") + f" for {target}")
        return rows

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
        n = len(args)
        if kwargs or n not in (len(self.param_names), len(self.runtime_names)):
            if not kwargs and self._first_default <= n < len(self.param_names):
                args += self._tail_defaults[n - self._first_default:]
            else:
                args = self._bind(args, kwargs)
        if not _loaded:
            _runtime()
        return KernelLaunch(self, args)

    def _bound_for(self, values, options=None) -> Optional["_BoundKernel"]:
        """The kernel bound to the constants among ``values`` (every parameter, in order) and
        to ``options``, or None where they cannot key the memo (unhashable, or left for
        ``.generics``). A value that is no valid constant raises the launch's TypeError."""
        raw = tuple([values[i] for i in self._const_pos])
        try:
            hit = self._bindings.get((raw, options))
        except TypeError:               # unhashable: the general path explains
            return None
        if hit is not None and _keys.same_binding(raw, hit):
            return hit[0]
        if any(v is _MISSING for v in raw):
            return None
        types = self._constant_types
        consts = {n: _keys.constant_value(n, v, types[n])
                  for n, v in zip([self.param_names[i] for i in self._const_pos], raw)}
        key = (_keys.constant_key(consts), options)
        with self._lock:
            b = self._bound_kernels.get(key)
            if b is None:
                if len(self._bound_kernels) >= _MAX_BOUND:
                    self._forget_bound()
                b = self._bound_kernels[key] = _BoundKernel(self, consts, options)
            if len(self._bindings) >= 4 * _MAX_BOUND:     # values as passed (each NaN its own)
                self._bindings.clear()
            self._bindings[(raw, options)] = (b, raw, _keys.flat_types(raw, raw))
        return b

    def _forget_bound(self) -> None:
        """Drop the bound kernels (their launch counts folded into ``stats`` first)."""
        self.stats                          # noqa: B018  (folds the C launchers' counts)
        self._bound_kernels.clear()
        self._bindings.clear()

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

    def _with_generics(self, args, generics: Dict[str, Any]) -> Optional[list]:
        """Every parameter's value in order: ``args`` (all parameters, or the runtime ones) with
        the constants ``.generics`` binds (and the defaults) in place; None where the general
        path must decide (a constant given twice, an arity it explains)."""
        names = self.param_names
        if len(args) == len(names):
            values = list(args)
            for i in self._const_pos:
                if names[i] in generics:
                    if values[i] is not _MISSING:
                        return None
                    values[i] = generics[names[i]]
        elif len(args) == len(self.runtime_names):
            values = [_MISSING] * len(names)
            for i, v in zip(self._runtime_pos, args):
                values[i] = v
            for i in self._const_pos:
                values[i] = generics.get(names[i], self._constant_defaults.get(names[i], _MISSING))
        else:
            return None
        return values

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
        for n in missing:
            if n in self._constant_defaults:
                consts[n] = self._constant_defaults[n]
        missing = [n for n in missing if n not in consts]
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
            self._freeze_globals()
        else:
            self.check_globals()
        try:
            c = _compiler.compile(self.py_func, keys, consts, target, options,
                                  const_grid=const_grid, name=self.__name__, key=key,
                                  use_disk_cache=self.use_disk_cache, grid_ones=grid_ones)
        except CompileError as e:
            if _full_traceback():
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

    # --- globals -----------------------------------------------------------------------------------
    def _freeze_globals(self) -> None:
        self._frozen = fingerprint.frozen_globals(self.py_func)
        self._digest = fingerprint.function_digest(self.py_func)
        self._watch(fingerprint.global_reads(self.py_func))

    def _watch(self, reads) -> None:
        self._reads = tuple(reads)
        for k in (self, *self._bound_kernels.values()):
            k._reads = self._reads
            k._watch_in_c()

    def _watch_in_c(self) -> None:
        if self._native is not None:        # the C launcher checks the same, by identity
            self._native.set_watch(tuple(x for r in self._reads for x in r) or None)

    def check_globals(self) -> None:
        """Called at every launch: the globals the compiled code read, by identity. One that
        changed (to a different value, or a redefined helper) recompiles the kernel, with a
        RuntimeWarning naming it (Triton raises here; a stale value is never used)."""
        for g, name, v in self._reads:
            if g.get(name, _MISSING) is not v:
                self._globals_moved()
                return

    def _globals_moved(self) -> None:
        reads = fingerprint.global_reads(self.py_func)
        digest = fingerprint.function_digest(self.py_func)
        before = {name: v for _, name, v in self._reads}
        changed = fingerprint.changed_globals(self._frozen or {},
                                              fingerprint.frozen_globals(self.py_func))
        changed += sorted(name for _, name, v in reads
                          if fingerprint.is_helper(v) and before.get(name) is not v)
        if (digest is not None and digest == self._digest) or (digest is None and not changed):
            self._watch(reads)              # rebound to equal values: nothing to recompile
            return
        warnings.warn(
            f"kernel '{self.__name__}' reads global(s) {', '.join(changed) or '(a helper)'} "
            f"whose value changed since it was compiled; recompiling it with the new value(s). "
            f"Globals are frozen into the compiled code: pass values that change as arguments "
            f"or tile.Constant parameters", RuntimeWarning, stacklevel=4)
        with self._lock:
            self._cache.clear()
            for k in (self, *self._bound_kernels.values()):
                k._executables.clear()
                if k._native is not None:
                    k._native.forget()
            self._freeze_globals()

    def executable(self, compiled: Compiled, device):
        """``compiled`` loaded on ``device`` by its backend (once per device)."""
        exe = compiled.executables.get(device)
        if exe is None:
            with self._lock:
                exe = compiled.executables.get(device)
                if exe is None:
                    t0 = time.perf_counter()
                    exe = _runtime().backends.of(device).load(compiled, device)
                    self.stats.load_s += time.perf_counter() - t0
                    compiled.executables[device] = exe
        return exe

    def executable_for(self, keys: tuple, device, ones: tuple, consts=None,
                       options: Optional[CompileOptions] = None, const_grid=None,
                       simple: bool = False):
        """The executable of the specialization for argument ``keys`` on ``device`` (``ones``:
        which grid axes have extent 1), compiled on a miss. Globals are checked first."""
        if self._reads:
            self.check_globals()
        if simple:
            # hot path: a plain dict hit on (argument keys, device, grid axes of extent 1)
            exe = self._executables.get((keys, device, ones))
            if exe is not None:
                self.stats.cache_hits += 1
                return exe
        backend = _runtime().backends.of(device)
        compiled = self.specialize(keys, consts or {}, backend.target(device),
                                   options or self.options, const_grid=const_grid,
                                   grid_ones=ones)
        exe = self.executable(compiled, device)
        if simple:
            self._executables.put((keys, device, ones), exe)
        return exe

    # --- tooling (no GPU needed) ---------------------------------------------------------------------
    def _keys_for(self, args, generics=None):
        if len(args) not in (len(self.param_names), len(self.runtime_names)):
            args = self._bind(tuple(args), {})
        rt, consts = self._split(tuple(args), dict(generics or {}))
        _runtime()
        try:
            infos = [classify(v, a) for v, a in zip(rt, self._anns)]
            try:
                ones = grid_ones(grid_from_partitions(infos))
            except LaunchError:         # no partition: the grid is only known at launch
                ones = NO_GRID_FACTS
            return [i.key for i in infos], consts, ones
        finally:
            release_partitions(rt)      # as a launch would (and foreign arrays imported)

    def inspect_types(self, *args, **generics) -> str:
        """The typed Numba IR and region tree of the specialization for ``args``; without
        arguments, of every specialization compiled so far (as Numba's ``inspect_types()``).

        Args:
            *args: Launch arguments (tensors, partitions, arrays, scalars) or just their keys;
                nothing runs.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        from .lowering.structurize import structurize
        from .typing.pipeline import type_kernel
        if not args and not generics and self.runtime_names:
            return self._inspect_compiled()
        keys, consts, _ = self._keys_for(args, generics)
        typed = type_kernel(self.py_func, keys, consts, plain_helpers=self.options.plain_helpers)
        frozen = fingerprint.frozen_globals(self.py_func)
        note = ("globals frozen into the compiled code (later changes are not seen): "
                + ", ".join(f"{k} = {v!r}" for k, v in frozen.items())) if frozen else \
            "globals frozen into the compiled code: none"
        return typed.dump() + "\n\n" + structurize(typed).dump() + "\n\n" + note

    def _inspect_compiled(self) -> str:
        """``inspect_types()`` of every compiled specialization, each under its signature."""
        from .lowering.structurize import structurize
        from .typing.pipeline import type_kernel
        seen, parts = set(), []
        for c in list(self._cache.values()):
            sig = _compiler.signature_text(self.py_func, c.keys, c.constants)
            if sig in seen:             # the same types for two targets or grids
                continue
            seen.add(sig)
            typed = c.typed or type_kernel(self.py_func, list(c.keys), c.constants,
                                           plain_helpers=self.options.plain_helpers)
            parts.append(f"# {sig}\n{typed.dump()}\n\n{structurize(typed).dump()}")
        if not parts:
            return (f"# kernel '{self.__name__}' has no compiled specializations yet: launch it "
                    f"first, or pass arguments (inspect_types(*args)) to type it for them")
        return ("\n\n" + "#" * 80 + "\n").join(parts)

    def inspect_tileir(self, *args, **generics) -> str:
        """The Tile IR text (``tileirdisasm`` syntax) for ``args``, after comments naming each
        ``%argN`` after its Python parameter; needs no GPU.

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        from .tileir import print_module
        keys, consts, ones = self._keys_for(args, generics)
        _, module, _ = _compiler.front_end(self.py_func, keys, consts, _compiler.SIM_TARGET,
                                           self.options, name=self.__name__, grid_ones=ones,
                                           for_gpu=True)
        return _compiler.parameter_comment(self.py_func, keys, consts) + "\n" + \
            print_module(module)

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
                                           grid_ones=ones, for_gpu=True)
        return write_bytecode(module, version)

    def compile(self, *args, arch: Optional[str] = None, **generics) -> bytes:
        """Ahead-of-time compile for ``args`` and return the cubin bytes (no GPU needed).

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            arch: Target architecture such as ``"sm_90"``; default: the current GPU's, else
                ``TILEJIT_ARCH``.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        arch = arch_or_raise(_runtime().default_arch() if arch is None else arch)
        keys, consts, ones = self._keys_for(args, generics)
        return self._compile(keys, consts, arch, self.options, grid_ones=ones).cubin

    def inspect_remarks(self, *args, arch: Optional[str] = None, **generics) -> list:
        """tileiras's optimization remarks for ``args``: for each load, store and MMA, the
        instruction it chose (TMA or not, tensor cores or not, in which shape), with its source
        line; a list of ``tile.Remark``, in source order (needs ``tileiras``, not a GPU).

        Args:
            *args: Launch arguments, as for :meth:`inspect_types`.
            arch: Target architecture, as for :meth:`compile`.
            **generics: Values of ``tile.Constant`` parameters not among ``args``.
        """
        arch = arch_or_raise(_runtime().default_arch() if arch is None else arch)
        keys, consts, ones = self._keys_for(args, generics)
        try:
            return _compiler.remarks(self.py_func, keys, consts, arch, self.options,
                                     name=self.__name__, grid_ones=ones)
        except CompileError as e:
            if _full_traceback():
                raise
            raise e.with_traceback(None) from None

    @property
    def signatures(self) -> list:
        """The argument keys of every compiled specialization."""
        return [k[0] for k in self._cache]


def _full_traceback() -> bool:
    """``TILEJIT_FULL_TRACEBACK``, read while a compile error is being raised: a bad value is
    reported as a warning, so it does not replace the user's own error."""
    try:
        return envvars.flag("TILEJIT_FULL_TRACEBACK")
    except envvars.EnvironmentVariableError as bad:
        warnings.warn(str(bad), RuntimeWarning, stacklevel=4)
        return False


def arch_or_raise(arch: str) -> str:
    """``arch`` if it names an architecture (``"sm_90"``), else ValueError."""
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d{2,3}[a-z]?", arch):
        raise ValueError(f"arch must be {_ARCH_RE_DOC}, got {arch!r}")
    return arch


#: bound kernels a kernel keeps (one per set of constant values launched); past it they are
#: dropped and made again as launched
_MAX_BOUND = 256


class _BoundKernel(Kernel):
    """A ``@tile.entry`` kernel with its ``tile.Constant`` parameters bound to one set of
    values, and its compile options to one set (``kernel(x, y, 64)`` and
    ``kernel(x, y).compile_options(o)`` launch one). It has only runtime parameters, so its
    launches are plain ones: the C launcher replays them. Specializations, globals and counters
    are its parent's: it compiles through the parent, with the bound values."""

    def __init__(self, parent: Kernel, consts: dict, options=None):  # noqa: no super().__init__
        self.__dict__.update(parent.__dict__)         # the parent's state, shared
        self._parent = parent
        self._consts = consts
        self.options = options or parent.options
        self.param_names = parent.runtime_names
        self.constant_names = ()
        self._constant_types = {}
        self._constant_defaults = {}
        self._const_pos = ()
        self._runtime_pos = tuple(range(len(parent.runtime_names)))
        self._first_default, self._tail_defaults = len(self.param_names), ()
        self._bindings = None
        self._bound_kernels = {}
        self._executables = BoundedMemo(f"{self.__name__}._executables", 1024, register=False)
        self._simple = True
        self._native = _native_launcher(self)
        self._watch_in_c()

    def specialize(self, keys, consts, target, options=None, const_grid=None,
                   grid_ones=NO_GRID_FACTS) -> Compiled:
        return self._parent.specialize(keys, {**self._consts, **consts}, target, options,
                                       const_grid, grid_ones)

    def check_globals(self) -> None:
        self._parent.check_globals()


def _native_launcher(kernel):
    """The C launcher of ``kernel``'s plain launches, or None (pure Python). A kernel that
    binds constants (``_bindings``) gives it their positions: C then launches a call passing
    them through the bound kernel its memo holds (KernelLaunch._launch_bound's hit path).
    Before the runtime has loaded, None: _load_runtime gives the kernel its launcher then."""
    if not _loaded:
        _WITHOUT_LAUNCHER.add(kernel)
        return None
    ext = native.ext()
    if ext is None or not _NATIVE_LAYOUT:
        return None
    extra = (kernel._const_pos,) if kernel._bindings is not None else ()
    return ext.Launcher(kernel._executables, kernel._anns, DeviceOp, classify,
                        len(kernel.param_names), kernel._simple, *extra)


def layout_args() -> tuple:
    """What ``set_layout`` reads: the runtime classes C reads by offset, and the prototypes of
    the objects it makes (each made by its class's one constructor)."""
    if "KernelLaunch" not in globals():     # (not while _load_runtime calls it)
        _runtime()
    from .runtime.memory import Storage, _FreeState
    from .runtime.partition import ForeignPartition, Partition
    from .runtime.stream import Stream
    from .runtime.tensor import Tensor
    launch = KernelLaunch(None, ())
    launch._ran = True          # lives as long as C does; each clone starts not run (C sets it)
    prototypes = (launch, Partition._new(None, None, False), ForeignPartition(None, None))
    return (Tensor, Partition, Storage, _FreeState, Stream, argspec.ArgInfo, KernelLaunch,
            ForeignPartition, DeviceFuture, argspec.atomic, prototypes)


def _install_native() -> bool:
    """With the C extension, ``kernel(...)``, ``op.grid(g)``, ``op.generics(**named)``,
    ``op.submit_on(s)``, ``op.sync_on(s)`` and ``t.partition(shape)`` run in C for plain
    launches (``.generics`` also takes ``MISSING``, the sentinel of unbound constants); the
    Python methods stay as their fallback (and as the pure-Python build). The C code reads the
    runtime classes' __slots__ by offset: if one changed shape, set_layout says so and
    everything stays in Python. The objects it makes are clones of prototypes made here by each
    class's one constructor."""
    from .runtime.tensor import Tensor
    ext = native.ext()
    if ext is None or not ext.set_layout(*layout_args()):
        return False
    ext.set_memo(argspec.array_keys, argspec.array_key_named)
    ext.install(Kernel, Kernel.__call__, KernelLaunch.submit_on, KernelLaunch.sync_on,
                KernelLaunch._submit_plain, KernelLaunch._sync_plain, _sync_quietly,
                Tensor.partition, KernelLaunch.grid, KernelLaunch.generics, _MISSING)
    ext.install_finalizer(DeviceOp.__del__)     # the "never run" check of launches, in C
    return True


def _runtime():
    """This module, with the launch side loaded (once; the first launch, compile or inspection
    of any kernel pays for it)."""
    if not _loaded:
        with _RUNTIME_LOCK:
            if not _loaded:
                _load_runtime()
    return _THIS


def _load_runtime() -> None:
    global KernelLaunch, PreparedLaunch, backends, classify, grid_from_partitions, grid_ones, \
        release_partitions, default_arch, native, argspec, DeviceOp, DeviceFuture, _sync_quietly, \
        _NATIVE_LAYOUT, _loaded
    from . import backends as _backends
    from . import kernel_launch
    from . import native as _native_mod
    from .deviceops.deviceop import DeviceFuture as _future, DeviceOp as _op, \
        _sync_quietly as _quietly
    from .runtime import argspec as _argspec
    from .runtime.device import default_arch as _arch
    native, argspec, backends, default_arch = _native_mod, _argspec, _backends, _arch
    DeviceOp, DeviceFuture, _sync_quietly = _op, _future, _quietly
    classify, grid_from_partitions = _argspec.classify, _argspec.grid_from_partitions
    grid_ones, release_partitions = _argspec.grid_ones, _argspec.release_partitions
    PreparedLaunch = kernel_launch.PreparedLaunch
    KernelLaunch = kernel_launch.KernelLaunch
    _NATIVE_LAYOUT = _install_native()
    _loaded = True
    while _WITHOUT_LAUNCHER:
        k = _WITHOUT_LAUNCHER.pop()
        k._native = _native_launcher(k)
        k._watch_in_c()             # globals frozen by an inspection before: C checks them too


_THIS = sys.modules[__name__]


def __getattr__(name):
    # the launch-side names (``from tilejit.dispatcher import KernelLaunch``) load it
    if name in _LAUNCH_SIDE:
        _runtime()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry(fn=None, *, occupancy=None, num_ctas=None, opt_level=3, fma=True, cache=True,
          max_divisibility=None, num_worker_warps=None):
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
        num_worker_warps: Warps of the compute warp groups (4: one, 8: two sharing the tile's
            registers; tileiras 13.4 takes 4 and 8, 13.5 any power of two up to 32); None lets
            tileiras choose. 8 for tiles whose accumulators do not fit one warp group's
            registers (128x256 matmul tiles); 1 or 2 for short rows (reductions in a warp).

    Returns:
        A :class:`Kernel`: calling it returns a lazy :class:`KernelLaunch`.
    """
    def wrap(f):
        return Kernel(f, occupancy=occupancy, num_ctas=num_ctas, opt_level=opt_level, fma=fma,
                      cache=cache, max_divisibility=max_divisibility,
                      num_worker_warps=num_worker_warps)
    if fn is None:
        return wrap
    return wrap(fn)


__all__ = ["Kernel", "KernelStats", "KernelLaunch", "PreparedLaunch", "entry", "grid_ones",
           "NO_GRID_FACTS", "arch_or_raise"]
