"""``@tile.entry``: the kernel object, its specializations and the launch DeviceOp.

Calling a kernel returns a lazy :class:`KernelLaunch`. When it executes, the arguments are
classified (``runtime.argspec``: plain-tuple keys, never Numba types), the key is looked up in the
kernel's in-memory cache, and on a miss the kernel is compiled once per key (thread-safe):
Numba typing -> structurize -> Tile IR -> verify -> bytecode -> tileiras (through the disk cache)
-> module load. Without a GPU the Tile IR module runs on the CPU simulator instead.
"""
from __future__ import annotations

import inspect
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from . import dtypes as D
from . import language as L
from .errors import LaunchError
from .ops.deviceop import DeviceOp
from .runtime import argspec
from .runtime.argspec import (check_launch_aliasing, classify, grid_from_partitions,
                               release_partitions)
from .runtime.launch import launch, launch_infos

_ARCH_RE_DOC = "an architecture name such as 'sm_90'"


@dataclass(frozen=True)
class CompileOptions:
    """Per-launch compile options (part of the specialization key)."""

    occupancy: Optional[int] = None
    num_cta_in_cga: Optional[int] = None
    max_divisibility: Optional[int] = None
    opt_level: int = 3

    def __post_init__(self):
        if self.occupancy is not None and not 1 <= int(self.occupancy) <= 32:
            raise ValueError(f"occupancy must be in [1, 32], got {self.occupancy}")
        n = self.num_cta_in_cga
        if n is not None and (n < 1 or n > 16 or n & (n - 1)):
            raise ValueError(f"num_cta_in_cga (num_ctas) must be a power of two in [1, 16], got {n}")
        d = self.max_divisibility
        if d is not None and (d < 1 or d & (d - 1)):
            raise ValueError(f"max_divisibility must be a power of two, got {d}")
        if not 0 <= int(self.opt_level) <= 3:
            raise ValueError(f"opt_level must be 0..3, got {self.opt_level}")

    def hints(self) -> Dict[str, int]:
        h = {}
        if self.occupancy is not None:
            h["occupancy"] = int(self.occupancy)
        if self.num_cta_in_cga is not None:
            h["num_cta_in_cga"] = int(self.num_cta_in_cga)
        return h


@dataclass
class KernelStats:
    """Counters of one kernel object (``kernel.stats``)."""

    compiles: int = 0
    cache_hits: int = 0           # in-memory hits
    disk_hits: int = 0            # cubins taken from the disk cache
    launches: int = 0
    typing_s: float = 0.0
    lowering_s: float = 0.0
    tileiras_s: float = 0.0
    load_s: float = 0.0

    def __repr__(self) -> str:
        return (f"KernelStats(compiles={self.compiles}, cache_hits={self.cache_hits}, "
                f"disk_hits={self.disk_hits}, launches={self.launches}, "
                f"typing={self.typing_s * 1e3:.1f} ms, lowering={self.lowering_s * 1e3:.1f} ms, "
                f"tileiras={self.tileiras_s * 1e3:.1f} ms, load={self.load_s * 1e3:.1f} ms)")


@dataclass
class Compiled:
    """One specialization: its Tile IR module and what launches it."""

    key: tuple
    module: Any
    name: str
    launcher: Any = None
    typed: Any = None
    bytecode: Optional[bytes] = None
    cubin: Optional[bytes] = None
    target: str = "sim"


def _dumps() -> set:
    return {s.strip() for s in os.environ.get("TILEJIT_DUMP", "").split(",") if s.strip()}


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "kernel"


class Kernel:
    """A ``@tile.entry`` kernel. ``kernel(*args)`` returns a lazy :class:`KernelLaunch`."""

    __tilejit_entry__ = True     # lets the front end reject calls to kernels from kernels

    def __init__(self, pyfunc, *, occupancy=None, num_ctas=None, opt_level=3, cache=True,
                 max_divisibility=None):
        if isinstance(pyfunc, Kernel):
            pyfunc = pyfunc.py_func
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"@tile.entry expects a Python function, got {pyfunc!r}")
        self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc
        self.options = CompileOptions(occupancy, num_ctas, max_divisibility, opt_level)
        self.use_disk_cache = cache
        sig = inspect.signature(pyfunc)
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"kernel '{self.__name__}': parameter '{p.name}' must be a plain "
                                f"positional parameter (*args, **kwargs and keyword-only "
                                f"parameters are not supported)")
        self.param_names = tuple(sig.parameters)
        self.constant_names = L.constant_parameters(pyfunc)
        self.runtime_names = tuple(n for n in self.param_names if n not in self.constant_names)
        annotations = self._scalar_annotations(pyfunc)
        self._cache: Dict[tuple, Compiled] = {}
        self._fast: Dict[tuple, Compiled] = {}      # (arg keys, target) -> Compiled
        self._simple = not self.constant_names
        self._anns = tuple(annotations.get(n) for n in self.runtime_names)
        self._locks: Dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self.stats = KernelStats()

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
        return f"<tile.entry {self.py_func.__qualname__}>"

    # --- launching -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs) -> "KernelLaunch":
        if kwargs:
            bad = [k for k in kwargs if k not in self.param_names]
            if bad:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{bad[0]}'")
            args = self._merge_kwargs(args, kwargs)
        return KernelLaunch(self, args)

    def _merge_kwargs(self, args, kwargs):
        out = list(args)
        for name in self.param_names[len(args):]:
            if name not in kwargs:
                break
            out.append(kwargs.pop(name))
        if kwargs:
            raise TypeError(f"{self.__name__}(): arguments {sorted(kwargs)} out of order")
        return tuple(out)

    def _split(self, values, generics: Dict[str, Any]):
        """(runtime values in order, constants by name) from the passed values."""
        names = self.param_names
        if len(values) == len(names):
            consts = {n: v for n, v in zip(names, values) if n in self.constant_names}
            rt = [v for n, v in zip(names, values) if n not in self.constant_names]
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
        return rt, consts

    # --- compilation -------------------------------------------------------------------------------
    @staticmethod
    def _const_key(consts: Dict[str, Any]) -> tuple:
        out = []
        for k in sorted(consts):
            v = consts[k]
            out.append((k, type(v).__name__, v if not isinstance(v, D.DType) else v.name))
        return tuple(out)

    def specialize(self, keys: Sequence[tuple], consts: Dict[str, Any], target: str,
                   options: Optional[CompileOptions] = None, const_grid=None) -> Compiled:
        """The compiled specialization for argument keys, constants and target (``"sim"`` or an
        architecture such as ``"sm_90"``); compiles once per key, also under concurrency.
        ``const_grid`` (a 3-tuple) is baked in: ``tile.num_blocks`` folds to its entries."""
        options = options or self.options
        key = (tuple(keys), self._const_key(consts), options, target, const_grid)
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
            c = self._compile(key, list(keys), consts, target, options, load=target != "aot")
            self._cache[key] = c
            return c

    def _front(self, keys, consts, target, options, const_grid=None):
        from .lowering.lower import lower_kernel
        from .lowering.structurize import structurize
        from .tileir import verify_module
        from .typing.pipeline import type_kernel
        t0 = time.perf_counter()
        typed = type_kernel(self.py_func, keys, consts)
        t1 = time.perf_counter()
        version = self._bytecode_version(target)
        arch = target if target.startswith("sm_") else os.environ.get("TILEJIT_ARCH", "sm_90")
        module = lower_kernel(structurize(typed), name=_symbol(self.__name__), arch=arch,
                              bytecode_version=version, hints=options.hints(),
                              const_grid=const_grid)
        verify_module(module)
        t2 = time.perf_counter()
        self.stats.typing_s += t1 - t0
        self.stats.lowering_s += t2 - t1
        dumps = _dumps()
        if "typed" in dumps:
            print(typed.dump() if hasattr(typed, "dump") else typed, file=sys.stderr)
        if "tileir" in dumps:
            from .tileir import print_module
            print(print_module(module), file=sys.stderr)
        return typed, module, version

    @staticmethod
    def _bytecode_version(target):
        from .tileir import LATEST
        if target == "sim":
            return LATEST
        from .toolchain import tileiras
        return tileiras.max_bytecode_version()

    def _compile(self, key, keys, consts, target, options, load=True) -> Compiled:
        typed, module, version = self._front(keys, consts, target, options,
                                             const_grid=key[4] if key else None)
        name = module.functions[0].name
        c = Compiled(key, module, name, typed=typed, target=target)
        self.stats.compiles += 1
        if target == "sim":
            from .simulator import compile_function
            c.launcher = compile_function(module, name)
            return c
        from .tileir import write_bytecode
        from .toolchain import compile_cubin
        c.bytecode = write_bytecode(module, version)
        if "bytecode" in _dumps():
            path = os.path.join(os.environ.get("TILEJIT_DUMP_DIR", "."), f"{name}.tileirbc")
            with open(path, "wb") as f:
                f.write(c.bytecode)
            print(f"tilejit: wrote {path}", file=sys.stderr)
        t0 = time.perf_counter()
        c.cubin, hit = compile_cubin(c.bytecode, target, opt_level=options.opt_level, name=name,
                                     use_cache=self.use_disk_cache)
        self.stats.tileiras_s += time.perf_counter() - t0
        self.stats.disk_hits += int(hit)
        if load:
            from .runtime.launch import CudaKernel
            from .runtime.module import load_module_from_data
            t0 = time.perf_counter()
            fn = load_module_from_data(c.cubin).function(name)
            slots = ()
            for k in keys:
                slots += argspec.slots_from_key(k)
            c.launcher = CudaKernel(fn, slots, name=name)
            self.stats.load_s += time.perf_counter() - t0
        return c

    # --- tooling (no GPU needed) ---------------------------------------------------------------------
    def _keys_for(self, args, generics=None):
        rt, consts = self._split(tuple(args), dict(generics or {}))
        infos = [classify(v, a) for v, a in zip(rt, self._anns)]
        try:
            return [i.key for i in infos], consts
        finally:
            release_partitions(infos)

    def inspect_types(self, *args, **generics) -> str:
        """The typed Numba IR and region tree of the specialization for ``args``."""
        from .lowering.structurize import structurize
        from .typing.pipeline import type_kernel
        keys, consts = self._keys_for(args, generics)
        typed = type_kernel(self.py_func, keys, consts)
        return typed.dump() + "\n\n" + structurize(typed).dump()

    def inspect_tileir(self, *args, **generics) -> str:
        """The Tile IR text (``tileirdisasm`` syntax) for ``args``; needs no GPU."""
        from .tileir import print_module
        keys, consts = self._keys_for(args, generics)
        _, module, _ = self._front(keys, consts, "sim", self.options)
        return print_module(module)

    def inspect_bytecode(self, *args, **generics) -> bytes:
        """The Tile IR bytecode tileiras would compile for ``args``."""
        from .tileir import write_bytecode
        from .toolchain import tileiras
        keys, consts = self._keys_for(args, generics)
        version = tileiras.max_bytecode_version() if tileiras.available() else None
        _, module, v = self._front(keys, consts, "sim", self.options)
        return write_bytecode(module, version or v)

    def compile(self, *args, arch: Optional[str] = None, **generics) -> bytes:
        """Ahead-of-time compile for ``args`` and return the cubin bytes (no GPU needed)."""
        if arch is None:
            from .runtime.device import default_arch
            arch = default_arch()
        keys, consts = self._keys_for(args, generics)
        return self._compile(None, keys, consts, arch_or_raise(arch), self.options,
                             load=False).cubin

    @property
    def signatures(self) -> list:
        """The argument keys of every compiled specialization."""
        return [k[0] for k in self._cache]


def arch_or_raise(arch: str) -> str:
    import re
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d{2,3}[a-z]?", arch):
        raise ValueError(f"arch must be {_ARCH_RE_DOC}, got {arch!r}")
    return arch


class KernelLaunch(DeviceOp):
    """A lazy kernel launch. Its output is the tuple of the arguments you passed."""

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

    def _copy(self, **kw):
        d = dict(grid=self._grid, const_grid=self._const_grid, generics=self._generics,
                 options=self._options)
        d.update(kw)
        return KernelLaunch(self.kernel, self.args, **d)

    def grid(self, grid) -> "KernelLaunch":
        """Launch on an explicit runtime grid ``(gx, gy, gz)`` instead of the partitions' grid."""
        return self._copy(grid=argspec.normalize_grid(grid))

    def const_grid(self, grid) -> "KernelLaunch":
        """Like ``grid`` but baked into the kernel (part of the specialization key)."""
        g = argspec.normalize_grid(grid)
        return self._copy(grid=g, const_grid=g)

    def generics(self, *values, **named) -> "KernelLaunch":
        """Bind ``tile.Constant`` parameters: ``.generics([64, 32])`` (in parameter order) or
        ``.generics(BM=64, BK=32)``."""
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
        from .ops.deviceop import _as_stream
        from .ops.scheduling import default_stream
        return PreparedLaunch(self, _as_stream(stream) if stream is not None else default_stream())

    def _execute(self, ctx):
        k = self.kernel
        values = tuple([a._execute(ctx) if isinstance(a, DeviceOp) else a for a in self.args])
        simple = self._simple
        if simple:
            rt, consts = values, None
        else:
            rt, consts = k._split(values, self._generics)
        stream = ctx.stream
        infos = [classify(v, a, stream) for v, a in zip(rt, k._anns)]
        try:
            grid, compiled = self._specialize_for(infos, consts, stream, simple)
        except BaseException:
            release_partitions(infos)
            raise
        launch_infos(compiled.launcher, infos, grid, stream)
        k.stats.launches += 1
        return values

    def _specialize_for(self, infos, consts, stream, simple: bool):
        """Check the classified arguments (aliasing, grid) and find their compiled
        specialization: ``(grid, compiled)``. The caller releases the partitions on error."""
        k = self.kernel
        check_launch_aliasing(infos, k.runtime_names)
        grid = grid_from_partitions(infos, self._grid, k.runtime_names)
        device = stream.device
        target = "sim" if device.is_simulated else device.arch
        keys = tuple([i.key for i in infos])
        if simple:
            # hot path: a plain dict hit on (argument keys, target)
            compiled = k._fast.get((keys, target))
            if compiled is None:
                compiled = k._fast[(keys, target)] = k.specialize(keys, {}, target)
            else:
                k.stats.cache_hits += 1
        else:
            compiled = k.specialize(keys, consts, target, self._options or k.options,
                                    const_grid=self._const_grid)
        return grid, compiled


class PreparedLaunch:
    """A launch validated and packed once (see :meth:`KernelLaunch.prepare`)."""

    def __init__(self, op: KernelLaunch, stream):
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
            self.grid, self.compiled = op._specialize_for(infos, consts, stream, simple=False)
        except BaseException:
            release_partitions(infos)
            raise
        self.kernel = k
        self.stream = stream
        self.args = op.args                 # keeps every argument alive
        self.infos = infos
        self._storages = [i.storage for i in infos if i.storage is not None]
        self.params = argspec.flatten_params(infos)
        self._closed = False

    def launch(self) -> None:
        """Queue the kernel on the prepared stream (no wait)."""
        if self._closed:
            raise LaunchError("this prepared launch was closed")
        stream = self.stream
        fast = stream._capture is None and not stream._ephemeral   # see launch.launch_infos
        for st in self._storages:
            h = st._h
            if fast and h.stream is stream:
                h.epoch = stream._epoch
            else:
                st.use(stream)
        launch(self.compiled.launcher, self.grid, self.params, stream)

    def close(self) -> None:
        """Release the partitions' leases."""
        if not self._closed:
            self._closed = True
            release_partitions(self.infos)

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


def entry(fn=None, *, occupancy=None, num_ctas=None, opt_level=3, cache=True,
          max_divisibility=None):
    """Mark a kernel: ``@tile.entry`` or ``@tile.entry(occupancy=4, num_ctas=2, opt_level=3)``."""
    def wrap(f):
        return Kernel(f, occupancy=occupancy, num_ctas=num_ctas, opt_level=opt_level,
                      cache=cache, max_divisibility=max_divisibility)
    if fn is None:
        return wrap
    return wrap(fn)
