"""Autotuning: pick the fastest of several configurations of a kernel for the arguments at hand.

    @tile.autotune(configs=[tile.Config(tile=(128, 128), BK=64),
                            tile.Config(tile=(128, 256), BK=64, occupancy=2)],
                   key=["a", "b"])
    @tile.entry
    def matmul(c, a, b, BK: tile.Constant[int]): ...

    matmul(c, a, b).sync()          # c: a tensor; each config partitions it with its own tile

A :class:`Config` sets ``tile.Constant`` parameters (by name), the tile shape of the output
partition (``tile=``; the partitioned parameter is ``partition=``, by default the first one) and
compile options (``occupancy``, ``num_ctas``, ``opt_level``). ``grid=`` (a callable taking the
config and the bound arguments) gives an explicit grid for kernels that compute their own tile
positions.

The first call for a key (the shapes and dtypes of the ``key`` arguments, the device and the
versions) compiles every config (tileiras runs in parallel), times each on the real arguments with
CUDA events (warm-up, median of repeated runs, the L2 cache flushed before each run; written
arguments are saved first and restored after), skips configs that fail to compile or run past the
time limit, and keeps the winner in memory and on disk (``autotune/`` in the cubin cache). Later
calls, and later processes, go straight to the winner. On the simulator the first config that
compiles wins, without timing. ``kernel.tuning_report()`` lists every config's time.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import dtypes as D
from . import envvars
from .compiler import CompileOptions
from .errors import LaunchError, TileJitError
from .ops.deviceop import account_for
from .runtime.partition import partition

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from .tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

_OPTION_NAMES = ("occupancy", "num_ctas", "opt_level")
L2_FLUSH_BYTES = 256 << 20


class Config:
    """One configuration: ``tile=`` (output partition tile shape), compile options and
    ``tile.Constant`` values by name, e.g. ``Config(tile=(128, 64), BK=32, occupancy=2)``."""

    def __init__(self, tile: Optional[Sequence[int]] = None, *, occupancy: Optional[int] = None,
                 num_ctas: Optional[int] = None, opt_level: Optional[int] = None,
                 **constants: Any):
        self.tile = tuple(int(t) for t in tile) if tile is not None else None
        self.occupancy, self.num_ctas, self.opt_level = occupancy, num_ctas, opt_level
        self.constants = dict(constants)

    def options(self, base: CompileOptions) -> CompileOptions:
        return CompileOptions(self.occupancy if self.occupancy is not None else base.occupancy,
                              self.num_ctas if self.num_ctas is not None else base.num_cta_in_cga,
                              base.max_divisibility,
                              self.opt_level if self.opt_level is not None else base.opt_level,
                              base.fma)

    def __repr__(self) -> str:
        parts = [f"tile={self.tile}"] if self.tile is not None else []
        parts += [f"{n}={getattr(self, n)}" for n in _OPTION_NAMES if getattr(self, n) is not None]
        parts += [f"{k}={v!r}" for k, v in self.constants.items()]
        return f"Config({', '.join(parts)})"


@dataclass
class Trial:
    config: Config
    ms: Optional[float]          # median milliseconds, None when skipped
    note: str = ""


@dataclass
class Tuning:
    """The outcome for one key: the winner's index and every config's trial."""
    best: int
    trials: List[Trial] = field(default_factory=list)
    source: str = "timed"        # "timed", "disk" or "simulator"


class Autotuned:
    """A ``@tile.entry`` kernel with a list of configs; calling it launches the best config."""

    def __init__(self, kernel, configs: Sequence[Config], key: Optional[Sequence[str]] = None,
                 partition: Optional[str] = None, grid: Optional[Callable] = None,
                 reps: int = 10, warmup: int = 2, time_limit_s: float = 1.0):
        from .dispatcher import Kernel
        if not isinstance(kernel, Kernel):
            raise TypeError("tile.autotune applies to a @tile.entry kernel (put @tile.autotune "
                            "above @tile.entry)")
        configs = list(configs)
        if not configs or not all(isinstance(c, Config) for c in configs):
            raise TypeError("tile.autotune(configs=[...]) needs a non-empty list of tile.Config")
        self.kernel = kernel
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__
        self.configs = configs
        names = kernel.param_names
        for c in configs:
            unknown = [n for n in c.constants if n not in kernel.constant_names]
            if unknown:
                raise TypeError(f"tile.Config for {kernel.__name__}: {unknown[0]!r} is not a "
                                f"tile.Constant parameter (constants: "
                                f"{', '.join(kernel.constant_names) or 'none'})")
        tiled = any(c.tile is not None for c in configs)
        self.partition = partition if partition is not None else (names[0] if tiled else None)
        if self.partition is not None and self.partition not in kernel.runtime_names:
            raise TypeError(f"tile.autotune: partition={self.partition!r} is not a runtime "
                            f"parameter of {kernel.__name__}")
        self.key_names = tuple(key) if key is not None else None
        for n in self.key_names or ():
            if n not in names:
                raise TypeError(f"tile.autotune: key {n!r} is not a parameter of {kernel.__name__}")
        self.grid = grid
        self.reps, self.warmup, self.time_limit_s = reps, warmup, time_limit_s
        self._tuned: Dict[str, Tuning] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<tile.autotune {self.kernel.__name__}: {len(self.configs)} configs>"

    # --- calling ---------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """The launch (a lazy DeviceOp) of the best config for these arguments."""
        bound = self._bind(args, kwargs)
        key = self._key(bound)
        tuning = self._tuned.get(key)
        if tuning is None:
            with self._lock:
                tuning = self._tuned.get(key) or self._load(key) or self._tune(key, bound)
                self._tuned[key] = tuning
        return self.launch_for(self.configs[tuning.best], bound)

    def _bind(self, args, kwargs) -> Dict[str, Any]:
        runtime = self.kernel.runtime_names
        names = [n for n in self.kernel.param_names if n in runtime]
        if len(args) > len(names):
            raise TypeError(f"{self.__name__}() takes {len(names)} runtime arguments "
                            f"({', '.join(names)}); the constants come from the configs")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in bound or k not in names:
                raise TypeError(f"{self.__name__}(): unexpected or repeated argument {k!r}")
            bound[k] = v
        missing = [n for n in names if n not in bound]
        if missing:
            raise TypeError(f"{self.__name__}() missing argument(s): {', '.join(missing)}")
        return bound

    def launch_for(self, config: Config, bound: Dict[str, Any]):
        """The kernel launch of ``config`` on the bound runtime arguments."""
        args = dict(bound)
        if config.tile is not None:
            # tile.partition: a tilejit tensor or a GPU array written in place; a NumPy array is
            # copied in and back around the launch
            args[self.partition] = partition(args[self.partition], config.tile)
        op = self.kernel(*[args[n] for n in self.kernel.runtime_names])
        op = op.generics(**config.constants) if config.constants else op
        opts = config.options(self.kernel.options)
        if opts != self.kernel.options:
            op = op.compile_options(opts)
        if self.grid is not None:
            op = op.grid(self.grid(config, bound))
        return op

    # --- keys and the disk cache -------------------------------------------------------------------
    def _key(self, bound: Dict[str, Any]) -> str:
        names = self.key_names if self.key_names is not None else tuple(bound)
        parts = [f"{n}:{_describe(bound[n])}" for n in names if n in bound]
        dev = _device_of(bound)
        parts.append(f"device:{dev}")
        return "|".join(parts)

    def _cache_file(self):
        import hashlib
        from pathlib import Path
        from . import fingerprint
        from .toolchain import cache
        root = cache.usable_dir()
        digest = fingerprint.function_digest(self.kernel.py_func)
        if root is None or digest is None:
            return None
        h = hashlib.sha256((digest + repr(self.configs) + _versions()).encode()).hexdigest()[:20]
        return Path(root) / "autotune" / f"{self.kernel.__name__}-{h}.json"

    def _load(self, key: str) -> Optional[Tuning]:
        import json
        path = self._cache_file()
        if path is None or not path.exists():
            return None
        try:
            entry = json.loads(path.read_text()).get(key)
        except (OSError, ValueError):
            return None
        if not entry or not 0 <= entry.get("best", -1) < len(self.configs):
            return None
        trials = [Trial(c, ms) for c, ms in zip(self.configs, entry.get("ms", []))]
        return Tuning(entry["best"], trials, source="disk")

    def _save(self, key: str, tuning: Tuning) -> None:
        import json
        from .toolchain import cache
        path = self._cache_file()
        if path is None:
            return
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            data = {}
        data[key] = {"best": tuning.best, "ms": [t.ms for t in tuning.trials]}
        path.parent.mkdir(parents=True, exist_ok=True)
        cache.write_atomic(path, json.dumps(data, indent=1).encode())

    # --- tuning ------------------------------------------------------------------------------------
    def _tune(self, key: str, bound: Dict[str, Any]) -> Tuning:
        from .runtime import backend
        if backend.current() != backend.CUDA:
            return self._first_valid(bound)
        tuning = self._time_all(key, bound)
        self._save(key, tuning)
        return tuning

    def _first_valid(self, bound) -> Tuning:
        """Simulator: the first config that compiles (no timing)."""
        trials = []
        for i, c in enumerate(self.configs):
            try:
                self._compile(c, bound)
            except TileJitError as e:
                trials.append(Trial(c, None, f"does not compile: {_first_line(e)}"))
                continue
            trials.append(Trial(c, None, "chosen without timing (simulator)"))
            trials += [Trial(c2, None, "not tried") for c2 in self.configs[i + 1:]]
            return Tuning(i, trials, source="simulator")
        raise LaunchError(f"autotune {self.__name__}: no config compiles for these arguments:\n"
                          + "\n".join(f"  {t.config}: {t.note}" for t in trials))

    def _compile(self, config: Config, bound):
        """Type, lower and compile ``config`` for ``bound`` without launching it."""
        from .dispatcher import grid_ones
        from . import backends
        op = self.launch_for(config, bound)
        account_for(op)         # a description to compile, never launched
        k = self.kernel
        keys, consts, ones = k._keys_for(op.args, op._generics)
        if op._grid is not None:
            ones = grid_ones(op._grid)
        device = _device_obj(bound)
        return k.specialize(keys, consts, backends.of(device).target(device),
                            op._options or k.options, grid_ones=ones)

    def _time_all(self, key: str, bound) -> Tuning:
        import concurrent.futures
        n = len(self.configs)
        quiet = envvars.flag("TILEJIT_AUTOTUNE_QUIET")
        t_start = time.perf_counter()

        def progress(msg):
            if not quiet:
                print(f"\rtilejit.autotune {self.__name__}: {msg}", end="", file=sys.stderr,
                      flush=True)

        progress(f"compiling {n} configs")
        errors: Dict[int, str] = {}
        workers = min(n, max(1, (os.cpu_count() or 2)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futs = {pool.submit(self._compile, c, bound): i for i, c in enumerate(self.configs)}
            for f in concurrent.futures.as_completed(futs):
                exc = f.exception()
                if exc is not None:
                    if not isinstance(exc, TileJitError):
                        raise exc
                    errors[futs[f]] = f"does not compile: {_first_line(exc)}"
        bound = _host_outputs_on_device(self, bound)
        timer = _Timer(_device_obj(bound), self.reps, self.warmup)
        saved = _save_written(self, bound)
        trials: List[Trial] = []
        try:
            for i, c in enumerate(self.configs):
                progress(f"timing config {i + 1}/{n} {c}")
                if i in errors:
                    trials.append(Trial(c, None, errors[i]))
                    continue
                trials.append(timer.trial(c, self.launch_for(c, bound), self.time_limit_s))
        finally:
            _restore_written(saved)
            timer.close()
        timed = [(t.ms, i) for i, t in enumerate(trials) if t.ms is not None]
        if not timed:
            if not quiet:
                print(file=sys.stderr)
            raise LaunchError(f"autotune {self.__name__}: every config failed:\n" +
                              "\n".join(f"  {t.config}: {t.note}" for t in trials))
        best = min(timed)[1]
        progress(f"best {self.configs[best]} ({trials[best].ms:.3f} ms) of {n} in "
                 f"{time.perf_counter() - t_start:.1f} s\n")
        return Tuning(best, trials)

    # --- reporting ---------------------------------------------------------------------------------
    def best_config(self, *args, **kwargs) -> Config:
        """The config chosen for these arguments (tuning them if needed)."""
        bound = self._bind(args, kwargs)
        account_for(self(*args, **kwargs))      # tuned on the call; the launch is not wanted
        return self.configs[self._tuned[self._key(bound)].best]

    def tuning_report(self) -> str:
        """Every tuned key with each config's median time (ms) and the winner marked."""
        if not self._tuned:
            return f"{self.__name__}: not tuned yet"
        lines = []
        for key, t in self._tuned.items():
            lines.append(f"{self.__name__} [{key}] ({t.source}):")
            for i, tr in enumerate(t.trials):
                mark = "*" if i == t.best else " "
                ms = f"{tr.ms:9.4f} ms" if tr.ms is not None else "        - "
                lines.append(f"  {mark} {ms}  {tr.config}  {tr.note}".rstrip())
        return "\n".join(lines)

    # the kernel's tooling passes through
    @property
    def stats(self):
        return self.kernel.stats


def autotune(configs: Sequence[Config], key: Optional[Sequence[str]] = None,
             partition: Optional[str] = None, grid: Optional[Callable] = None, reps: int = 10,
             warmup: int = 2, time_limit_s: float = 1.0):
    """Decorator over a ``@tile.entry`` kernel: the first call for each key times every config
    on the real arguments and keeps the fastest (in memory and next to the cubin cache).

    Args:
        configs: The :class:`Config` s to try.
        key: Names of the arguments whose shapes and dtypes select a tuning (default: all).
        partition: The output argument that ``Config(tile=...)`` partitions (default: the
            kernel's first parameter).
        grid: ``grid(config, arguments)`` -> the launch grid, for kernels whose grid is not the
            partition's.
        reps: Timed runs per config (the median counts).
        warmup: Untimed runs per config first.
        time_limit_s: Skip a config whose single run takes longer than this (seconds).
    """
    def wrap(kernel):
        return Autotuned(kernel, configs, key=key, partition=partition, grid=grid, reps=reps,
                         warmup=warmup, time_limit_s=time_limit_s)
    return wrap


# --------------------------------------------------------------------------------------------------
# helpers
def _as_tensor(x):
    from .runtime.tensor import Tensor
    if isinstance(x, Tensor):
        return x
    from .runtime.dlpack import from_dlpack
    return from_dlpack(x)


def _describe(v) -> str:
    shape = getattr(v, "shape", None)
    dtype = getattr(v, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{tuple(int(s) for s in shape)}/{getattr(dtype, 'name', None) or dtype}"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return type(v).__name__
    return type(v).__name__


def _device_obj(bound):
    """The device the arguments live on (the current device when none says)."""
    from .runtime.device import Device
    for v in bound.values():
        t = getattr(v, "_tensor", v)
        dev = getattr(t, "device", None)
        if isinstance(dev, Device):
            return dev
        if dev is not None and getattr(dev, "type", None) == "cuda":       # torch
            return Device(dev.index or 0)
    return Device(0)


def _device_of(bound) -> str:
    d = _device_obj(bound)
    return f"{d.name}/{d.arch}"


def _versions() -> str:
    from . import __version__
    from .toolchain import tileiras
    try:
        tv = tileiras.version()
    except Exception:  # noqa: BLE001  (no toolchain: the simulator; still a stable key)
        tv = "none"
    return f"tilejit {__version__}; tileiras {tv}"


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _host_outputs_on_device(tuner: Autotuned, bound) -> dict:
    """``bound`` with host outputs (a NumPy partition or tile.atomic array) replaced by device
    copies for timing: each timed launch would otherwise copy its results back into them."""
    import numpy as np
    from .ops.transfer import from_numpy
    from .runtime.argspec import atomic
    from .runtime.hostarrays import in_host_memory
    out = dict(bound)
    for n, v in bound.items():
        inner = v.value if isinstance(v, atomic) else v
        if (n == tuner.partition or isinstance(v, atomic)) and in_host_memory(inner):
            t = from_numpy(np.asarray(inner)).sync()
            out[n] = atomic(t) if isinstance(v, atomic) else t
    return out


def _save_written(tuner: Autotuned, bound) -> list:
    """Copies of the arguments a config may write (the partitioned output, tile.atomic tensors),
    restored after timing so the real launch sees the caller's data."""
    from .ops.transfer import dup
    from .runtime.argspec import atomic
    out = []
    for n, v in bound.items():
        if n == tuner.partition or isinstance(v, atomic):
            t = _as_tensor(v.value if isinstance(v, atomic) else v)
            if t.size:
                out.append((t, dup(t).sync()))
    return out


def _restore_written(saved) -> None:
    from .ops.transfer import memcpy
    for dst, src in saved:
        memcpy(dst, src).sync()


class _Timer:
    """CUDA-event timing on a private stream with an L2 flush before each run."""

    def __init__(self, device, reps: int, warmup: int):
        from . import api
        from .runtime.stream import Event
        self.api = api
        self.device = device
        self.stream = device.new_stream()
        self.reps, self.warmup = reps, warmup
        self.Event = Event
        self.scratch = api.zeros((L2_FLUSH_BYTES // 4,), D.int32).sync_on(self.stream)

    def _flush(self):
        self.api.fill(self.scratch, 0).submit_on(self.stream)

    def trial(self, config: Config, op, limit_s: float) -> Trial:
        try:
            p = op.prepare(self.stream)
        except TileJitError as e:
            return Trial(config, None, f"cannot launch: {_first_line(e)}")
        try:
            t0 = time.perf_counter()
            p.launch()
            self.stream.synchronize()
            if time.perf_counter() - t0 > limit_s:
                return Trial(config, None, f"skipped: one run took over {limit_s:g} s")
            for _ in range(self.warmup):
                p.launch()
            times = []
            for _ in range(self.reps):
                self._flush()
                a = self.Event(self.device, timing=True).record(self.stream)
                p.launch()
                b = self.Event(self.device, timing=True).record(self.stream)
                b.synchronize()
                times.append(a.elapsed_ms(b))
            import statistics
            return Trial(config, statistics.median(times))
        except TileJitError as e:
            return Trial(config, None, f"failed: {_first_line(e)}")
        finally:
            p.close()

    def close(self):
        self.scratch = None
