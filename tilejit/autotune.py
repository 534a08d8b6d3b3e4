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
positions. ``heuristics={"EXACT": f}`` sets constants from the config and the arguments at every
call (Triton's ``@triton.heuristics``): ``f(config, args)``, e.g. whether the rows are exactly
the tile's width, a fact of the arguments that no config may promise.

The first call for a key (the shapes and dtypes of the ``key`` arguments, the device and the
versions) compiles every config (tileiras runs in parallel), times each on the real arguments with
CUDA events (warm-up, median of repeated runs, the L2 cache flushed before each run; written
arguments are saved first and restored after), skips configs that fail to compile or run past the
time limit, times the near-ties again side by side (:func:`settle`), and keeps the winner in
memory and on disk (``autotune/`` in the cubin cache). Later
calls, and later processes, go straight to the winner. On the simulator the first config that
compiles wins, without timing. ``kernel.tuning_report()`` lists every config's time.

Without ``configs=`` (``@tile.autotune`` or ``@tile.autotune(key=[...])``) the configs come from
the default search space, built per key from the kernel itself: the output tile, the
``tile.Constant`` parameters whose names say what they are (``BK``, ``GROUP``, ``SPLIT_K``,
``LATENCY``, ``TMA``, ``PERSISTENT``, ...), occupancy and ``num_ctas``, pruned to a few dozen
(``tuning_space.py`` has the rules; ``space={...}`` overrides them); the winner is then also
timed at the occupancies one below and one above its own (:func:`occupancy_neighbours`).
Constants that are not tuned are passed at the call by keyword (``attention(o, q, k, v,
CAUSAL=True)``); they are part of the key.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import dtypes as D
from . import envvars
from . import tuning_source, tuning_space
from .tuning_config import _OPTION_NAMES, Config
from .compiler import CompileOptions
from .errors import LaunchError, TileJitError
from .deviceops.deviceop import account_for
from .runtime.partition import partition

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from .tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

L2_FLUSH_BYTES = 256 << 20


def _writes_worker_warps() -> bool:
    """Whether compiles write the num_worker_warps hint (bytecode 13.3 and newer; the simulator
    writes the newest)."""
    from .toolchain import tileiras
    return not tileiras.available() or tileiras.max_bytecode_version() >= (13, 3)


#: Near-ties re-timed side by side: configs within SETTLE_WITHIN of the best first median, at
#: most SETTLE_MOST of them, in SETTLE_ROUNDS interleaved rounds. Timed one after another, a
#: config measured while the GPU is cool beats one measured hot: on an H200 two matmul configs
#: swapped places between runs at 8192^3 (643 against 757 TFLOP/s one way, the other way round
#: in another run), and the first-pass order decided which won.
SETTLE_WITHIN = 0.05
#: A config whose first timed run is over this many times the best so far is not timed again:
#: single flushed runs vary by a few percent, and a default space holds configs 5-15x slower
#: than its best (spilled tiles), whose ten runs were much of a cold key's time
SLOW_TRIAL = 2.0
SETTLE_MOST = 4
SETTLE_ROUNDS = 3


def settle(ms: Sequence[Optional[float]], time_runs: Callable[[int], List[float]],
           within: float = SETTLE_WITHIN, most: int = SETTLE_MOST,
           rounds: int = SETTLE_ROUNDS) -> List[Optional[float]]:
    """``ms`` (first-pass medians, None for skipped configs) with the near-ties' entries
    replaced by the median of their re-timed runs: ``time_runs(i)`` times config ``i`` a few
    times, and the rounds visit the tied configs in turn, so that a drift of the GPU's clocks
    (warming up, power limits) reaches each of them alike."""
    timed = sorted((t, i) for i, t in enumerate(ms) if t is not None)
    if len(timed) < 2:
        return list(ms)
    ties = [i for t, i in timed if t <= timed[0][0] * (1 + within)][:most]
    if len(ties) < 2:
        return list(ms)
    samples: Dict[int, List[float]] = {i: [] for i in ties}
    for r in range(rounds):
        order = ties if r % 2 == 0 else ties[::-1]     # neither always first nor always last
        for i in order:
            samples[i] += time_runs(i)
    out = list(ms)
    for i in ties:
        out[i] = statistics.median(samples[i])
    return out


def occupancy_neighbours(trials: Sequence["Trial"]) -> List["Config"]:
    """The fastest timed config at occupancy one below and one above its own, those no trial
    has tried. The occupancy hint is not monotonic, and the best between the powers of two
    that a default space tries is often the next one over: on an H200 (2026-11-28) LayerNorm's
    8 x 1024 fp16 tiles ran at 0.873 of the copy roofline at occupancy 4 and 0.887 at 5, and
    softmax's 1 x 16384 tiles at 0.856 at occupancy 2 and 0.902 at 3, while 2K-4K rows lost
    up to 40% at occupancy 5."""
    timed = [(t.ms, i) for i, t in enumerate(trials) if t.ms is not None]
    if not timed:
        return []
    best = trials[min(timed)[1]].config
    occ = best.occupancy or 1

    def same_but_occupancy(c: "Config") -> dict:
        d = c.as_dict()
        d.pop("occupancy", None)
        return d
    tried = {t.config.occupancy or 1 for t in trials
             if same_but_occupancy(t.config) == same_but_occupancy(best)}
    out = []
    for o in (occ - 1, occ + 1):
        if 1 <= o <= 32 and o not in tried:
            c = Config.from_dict(best.as_dict())
            c.occupancy = o
            out.append(c)
    return out


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

    @property
    def config(self) -> Config:
        return self.trials[self.best].config


class Autotuned:
    """A ``@tile.entry`` kernel with a list of configs (or the default space); calling it
    launches the best config for the arguments."""

    def __init__(self, kernel, configs: Optional[Sequence[Config]] = None,
                 key: Optional[Sequence[str]] = None, partition: Optional[str] = None,
                 grid: Optional[Callable] = None, reps: int = 10, warmup: int = 2,
                 time_limit_s: float = 1.0, space: Optional[Dict[str, Any]] = None,
                 heuristics: Optional[Dict[str, Callable]] = None):
        from .dispatcher import Kernel
        if not isinstance(kernel, Kernel):
            raise TypeError("tile.autotune applies to a @tile.entry kernel (put @tile.autotune "
                            "above @tile.entry)")
        self.kernel = kernel
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__
        names = kernel.param_names
        self.heuristics = dict(heuristics or {})
        for n, f in self.heuristics.items():
            if n not in kernel.constant_names:
                raise TypeError(f"tile.autotune heuristics: {n!r} is not a tile.Constant "
                                f"parameter of {kernel.__name__} (constants: "
                                f"{', '.join(kernel.constant_names) or 'none'})")
            if not callable(f):
                raise TypeError(f"tile.autotune heuristics[{n!r}] must be a callable "
                                f"f(config, args) -> value, got {type(f).__name__}")
            if space is not None and n in space:
                raise TypeError(f"tile.autotune: {n!r} is set by heuristics; it cannot be "
                                f"searched by space= too")
        if configs is not None:
            configs = list(configs)
            if not configs or not all(isinstance(c, Config) for c in configs):
                raise TypeError("tile.autotune(configs=[...]) needs a non-empty list of "
                                "tile.Config (or no configs=: the default search space)")
            if space is not None:
                raise TypeError("tile.autotune: give configs= or space=, not both (space= "
                                "adjusts the default search space)")
            for c in configs:
                unknown = [n for n in c.constants if n not in kernel.constant_names]
                if unknown:
                    raise TypeError(f"tile.Config for {kernel.__name__}: {unknown[0]!r} is not a "
                                    f"tile.Constant parameter (constants: "
                                    f"{', '.join(kernel.constant_names) or 'none'})")
            both = sorted({n for c in configs for n in c.constants} & set(self.heuristics))
            if both:
                raise TypeError(f"tile.autotune: {both[0]!r} is set by heuristics; no config "
                                f"may set it too")
            tiled = any(c.tile is not None for c in configs)
            self.partition = partition if partition is not None else \
                (names[0] if tiled else None)
        else:
            self.partition = partition if partition is not None else \
                tuning_source.find_partition(kernel.py_func, kernel.runtime_names)
        self.configs = configs           # None: the default space, built per key
        self.space = dict(space) if space is not None else None
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
        self._facts: Optional[tuning_source.SourceFacts] = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        what = f"{len(self.configs)} configs" if self.configs is not None else "default space"
        return f"<tile.autotune {self.kernel.__name__}: {what}>"

    # --- calling ---------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """The launch (a lazy DeviceOp) of the best config for these arguments."""
        bound = self._bind(args, kwargs)
        return self.launch_for(self._tuning(bound).config, bound)

    def _tuning(self, bound) -> Tuning:
        key = self._key(bound)
        tuning = self._tuned.get(key)
        if tuning is None:
            with self._lock:
                tuning = self._tuned.get(key) or self._load(key) or self._tune(key, bound)
                self._tuned[key] = tuning
        return tuning

    def _bind(self, args, kwargs) -> Dict[str, Any]:
        """Runtime arguments by name, plus the tile.Constant values passed by keyword (those
        the configs do not set)."""
        runtime = self.kernel.runtime_names
        consts = self.kernel.constant_names
        if len(args) > len(runtime):
            raise TypeError(f"{self.__name__}() takes {len(runtime)} runtime arguments "
                            f"({', '.join(runtime)}); the tuned constants come from the configs"
                            + (f", the others are passed by keyword ({consts[0]}=...)"
                               if consts else ""))
        bound = dict(zip(runtime, args))
        for k, v in kwargs.items():
            if k in bound or (k not in runtime and k not in consts):
                raise TypeError(f"{self.__name__}(): unexpected or repeated argument {k!r}")
            if k in self.heuristics:
                raise TypeError(f"{self.__name__}(): {k!r} is set by the heuristics at every "
                                f"call; it cannot also be passed")
            if k in consts and self.configs is not None and \
                    any(k in c.constants for c in self.configs):
                raise TypeError(f"{self.__name__}(): {k!r} is set by the configs; it cannot "
                                f"also be passed at the call")
            bound[k] = v
        missing = [n for n in runtime if n not in bound]
        if missing:
            raise TypeError(f"{self.__name__}() missing argument(s): {', '.join(missing)}")
        return bound

    def launch_for(self, config: Config, bound: Dict[str, Any]):
        """The kernel launch of ``config`` on the bound arguments."""
        args = dict(bound)
        if config.tile is not None:
            # tile.partition: a tilejit tensor or a GPU array written in place; a NumPy array is
            # copied in and back around the launch
            args[self.partition] = partition(args[self.partition], config.tile)
        op = self.kernel(*[args[n] for n in self.kernel.runtime_names])
        consts = {n: bound[n] for n in self.kernel.constant_names if n in bound}
        consts.update(config.constants)
        for n, f in self.heuristics.items():
            consts[n] = f(config, bound)
        op = op.generics(**consts) if consts else op
        opts = config.options(self.kernel.options)
        if opts != self.kernel.options:
            op = op.compile_options(opts)
        if self.grid is not None:
            op = op.grid(self.grid(config, bound))
        return op

    # --- the configs of a key ----------------------------------------------------------------------
    def configs_for(self, *args, **kwargs) -> List[Config]:
        """The configs a first call with these arguments would try (the default space is built
        for them; nothing is compiled)."""
        return self._configs(self._bind(args, kwargs))

    def _configs(self, bound) -> List[Config]:
        if self.configs is not None:
            return self.configs
        if self._facts is None:
            self._facts = tuning_source.analyze(self.kernel.py_func, self.partition)
        prob = self._problem(bound)
        blocks_of = None
        if self.grid is not None:
            def blocks_of(cand):
                c = Config(cand["tile"], **cand["constants"])
                return tuple(int(g) for g in self.grid(c, bound)) + (1, 1)
        cands = tuning_space.build(self._facts, prob, self.space, blocks_of)
        return [Config(c["tile"], occupancy=c["occupancy"],
                       num_ctas=c["num_ctas"] if c["num_ctas"] != 1 else None,
                       num_worker_warps=c["num_worker_warps"], **c["constants"])
                for c in cands]

    def _problem(self, bound) -> "tuning_space.Problem":
        import inspect
        from .runtime import backend
        from .runtime.device import parse_arch
        arrays = {}
        for n in self.kernel.runtime_names:
            v = getattr(bound[n], "value", bound[n])                          # tile.atomic(t)
            if hasattr(v, "shape") and not isinstance(v, (int, float, bool)):
                arrays[n] = tuple(int(s) for s in v.shape)
        shape = arrays[self.partition] if self.partition is not None else None
        sizes = [_itemsize(v) for v in bound.values()]
        sizes = [s for s in sizes if s]
        params = inspect.signature(self.kernel.py_func).parameters
        # constants the heuristics set at every call are not the space's to search
        consts = tuple(n for n in self.kernel.constant_names if n not in self.heuristics)
        defaults = {n: params[n].default for n in consts
                    if params[n].default is not inspect.Parameter.empty}
        dev = _device_obj(bound)
        gpu = backend.current() == backend.CUDA
        return tuning_space.Problem(
            shape, min(sizes) if sizes else 2, consts,
            fixed={n: bound[n] for n in consts if n in bound}, defaults=defaults,
            num_sms=dev.multiprocessor_count if gpu else tuning_space.NOMINAL_SMS,
            arch=parse_arch(dev.arch), explicit_grid=self.grid is not None,
            worker_warps=_writes_worker_warps(), arrays=arrays)

    # --- keys and the disk cache -------------------------------------------------------------------
    def _key(self, bound: Dict[str, Any]) -> str:
        names = self.key_names if self.key_names is not None else \
            tuple(n for n in bound if n in self.kernel.runtime_names)
        parts = [f"{n}:{_describe(bound[n])}" for n in names if n in bound]
        parts += [f"{n}={bound[n]!r}" for n in self.kernel.constant_names if n in bound]
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
        what = repr(self.configs) if self.configs is not None else \
            f"default space v{tuning_space.SPACE_VERSION} {self.space!r} {self.partition}"
        if self.heuristics:                 # they change the code each config compiles to
            what += f" heuristics {sorted(self.heuristics)}"
        h = hashlib.sha256((digest + what + _versions()).encode()).hexdigest()[:20]
        return Path(root) / "autotune" / f"{self.kernel.__name__}-{h}.json"

    def _load(self, key: str) -> Optional[Tuning]:
        import json
        path = self._cache_file()
        if path is None or not path.exists():
            return None
        try:
            entry = json.loads(path.read_text()).get(key)
            if self.configs is not None:
                configs = self.configs
            else:           # the default space's configs are stored: no space to rebuild
                configs = [Config.from_dict(d) for d in entry["configs"]]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if not entry or not 0 <= entry.get("best", -1) < len(configs):
            return None
        ms = list(entry.get("ms", [])) + [None] * len(configs)
        trials = [Trial(c, m) for c, m in zip(configs, ms)]
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
        entry = {"best": tuning.best, "ms": [t.ms for t in tuning.trials]}
        if self.configs is None:
            entry["configs"] = [t.config.as_dict() for t in tuning.trials]
        data[key] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        cache.write_atomic(path, json.dumps(data, indent=1).encode())

    # --- tuning ------------------------------------------------------------------------------------
    def _tune(self, key: str, bound: Dict[str, Any]) -> Tuning:
        from .runtime import backend
        configs = self._configs(bound)
        if backend.current() != backend.CUDA:
            return self._first_valid(configs, bound)
        tuning = self._time_all(configs, bound)
        self._save(key, tuning)
        return tuning

    def _first_valid(self, configs, bound) -> Tuning:
        """Simulator: the first config that compiles (no timing)."""
        trials = []
        for i, c in enumerate(configs):
            try:
                self._compile(c, bound)
            except TileJitError as e:
                trials.append(Trial(c, None, f"does not compile: {_first_line(e)}"))
                continue
            trials.append(Trial(c, None, "chosen without timing (simulator)"))
            trials += [Trial(c2, None, "not tried") for c2 in configs[i + 1:]]
            return Tuning(i, trials, source="simulator")
        raise LaunchError(f"autotune {self.__name__}: no config compiles for these arguments:\n"
                          + "\n".join(f"  {t.config}: {t.note}" for t in trials))

    def _compile(self, config: Config, bound, target: Optional[str] = None):
        """Type, lower and compile ``config`` for ``bound`` without launching it (for the
        arguments' device, or for ``target``, e.g. ``"sm_90"``). Safe in threads: a tensor's
        partitions are exclusive, so the launches are built (and their partitions released)
        one at a time, and only the compiles overlap."""
        with _BUILD_LOCK:
            keys = _launch_keys(self.launch_for(config, bound))
        return _specialize(keys, _device_obj(bound), target)

    def precompile(self, *args, target: Optional[str] = None, pool=None, **kwargs) -> list:
        """Compile every config of these arguments' key now (``target``: an architecture such
        as ``"sm_90"`` for an ahead-of-time compile without a GPU); with ``pool`` (an
        executor) the compiles are submitted to it and their futures returned, so several
        kernels' configs compile side by side."""
        bound = self._bind(args, kwargs)
        configs = self._configs(bound)
        if pool is not None:
            return [pool.submit(self._compile, c, bound, target) for c in configs]
        return [self._compile(c, bound, target) for c in configs]

    def _time_all(self, configs, bound) -> Tuning:
        n = len(configs)
        quiet = envvars.flag("TILEJIT_AUTOTUNE_QUIET")
        t_start = time.perf_counter()

        def progress(msg):
            if not quiet:
                print(f"\rtilejit.autotune {self.__name__}: {msg}", end="", file=sys.stderr,
                      flush=True)

        progress(f"compiling {n} configs")
        errors = self._compile_all(configs, bound)
        compile_s = time.perf_counter() - t_start
        bound = _host_outputs_on_device(self, bound)
        timer = _Timer(_device_obj(bound), self.reps, self.warmup)
        saved = _save_written(self, bound)
        configs = list(configs)
        trials: List[Trial] = []
        try:
            self._time_each(configs, errors, trials, bound, timer, progress)
            self._settle(configs, trials, bound, timer, progress)
            extra = occupancy_neighbours(trials) if self._refines_occupancy() else []
            if extra:
                progress(f"trying occupancy {', '.join(str(c.occupancy) for c in extra)} "
                         f"beside the best")
                errors = {len(configs) + i: e for i, e in self._compile_all(extra, bound).items()}
                configs += extra
                self._time_each(configs, errors, trials, bound, timer, progress,
                                note="occupancy beside the best")
                self._settle(configs, trials, bound, timer, progress)
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
        progress(f"best {configs[best]} ({trials[best].ms:.3f} ms) of {len(configs)} in "
                 f"{time.perf_counter() - t_start:.1f} s (compiles {compile_s:.1f} s)\n")
        return Tuning(best, trials)

    def _compile_all(self, configs, bound) -> Dict[int, str]:
        """Compile ``configs`` side by side (tileiras runs in subprocesses); {index: why} for
        those that do not compile."""
        import concurrent.futures
        errors: Dict[int, str] = {}
        workers = min(len(configs), max(1, (os.cpu_count() or 2)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futs = {pool.submit(self._compile, c, bound): i for i, c in enumerate(configs)}
            for f in concurrent.futures.as_completed(futs):
                exc = f.exception()
                if exc is not None:
                    if not isinstance(exc, TileJitError):
                        raise exc
                    errors[futs[f]] = f"does not compile: {_first_line(exc)}"
        return errors

    def _time_each(self, configs, errors, trials: List[Trial], bound, timer, progress,
                   note: str = "") -> None:
        """Append a trial for each of ``configs`` not yet in ``trials``, its note starting
        with ``note``."""
        for i in range(len(trials), len(configs)):
            c = configs[i]
            progress(f"timing config {i + 1}/{len(configs)} {c}")
            if i in errors:
                t = Trial(c, None, errors[i])
            else:
                best_ms = min((t.ms for t in trials if t.ms is not None), default=None)
                t = timer.trial(c, self.launch_for(c, bound), self.time_limit_s, best_ms)
            if note:
                t.note = f"{note}; {t.note}" if t.note else note
            trials.append(t)

    def _settle(self, configs, trials: List[Trial], bound, timer, progress) -> None:
        progress("timing the near-ties side by side")
        try:
            with timer.prepared(lambda i: self.launch_for(configs[i], bound)) as runs:
                settled = settle([t.ms for t in trials], runs)
        except TileJitError:          # a config that ran once fails now: keep the first pass
            return
        for t, ms in zip(trials, settled):
            t.ms = ms

    def _refines_occupancy(self) -> bool:
        """The default space tries the winner's neighbouring occupancies (not a config list,
        nor a space whose occupancies are given)."""
        return self.configs is None and "occupancy" not in (self.space or {})

    # --- reporting ---------------------------------------------------------------------------------
    def best_config(self, *args, **kwargs) -> Config:
        """The config chosen for these arguments (tuning them if needed)."""
        return self._tuning(self._bind(args, kwargs)).config

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


def autotune(configs: Optional[Sequence[Config]] = None, key: Optional[Sequence[str]] = None,
             partition: Optional[str] = None, grid: Optional[Callable] = None, reps: int = 10,
             warmup: int = 2, time_limit_s: float = 1.0, space: Optional[Dict[str, Any]] = None,
             heuristics: Optional[Dict[str, Callable]] = None):
    """Decorator over a ``@tile.entry`` kernel: the first call for each key times every config
    on the real arguments and keeps the fastest (in memory and next to the cubin cache).
    ``@tile.autotune`` alone searches a default space built from the kernel (module docstring).

    Args:
        configs: The :class:`Config` s to try (default: the default search space).
        key: Names of the arguments whose shapes and dtypes select a tuning (default: all).
        partition: The output argument that ``Config(tile=...)`` partitions (default: the
            kernel's first parameter).
        grid: ``grid(config, arguments)`` -> the launch grid, for kernels whose grid is not the
            partition's.
        reps: Timed runs per config (the median counts).
        warmup: Untimed runs per config first.
        time_limit_s: Skip a config whose single run takes longer than this (seconds).
        space: Overrides of the default space's choices (``{"BK": (32, 64)}``, ...).
        heuristics: ``{name: f(config, args)}``: ``tile.Constant`` values computed at every
            call from the config and the arguments by name (``{"EXACT": lambda c, a:
            a["x"].shape[1] == c.tile[1]}``); no config sets them and the space does not
            search them.
    """
    from .dispatcher import Kernel
    if isinstance(configs, Kernel):          # bare @tile.autotune: the default space
        return Autotuned(configs)

    def wrap(kernel):
        return Autotuned(kernel, configs, key=key, partition=partition, grid=grid, reps=reps,
                         warmup=warmup, time_limit_s=time_limit_s, space=space,
                         heuristics=heuristics)
    return wrap


def compile_launch(op, device=None, target: Optional[str] = None):
    """Compile the kernel launch ``op`` (``kernel(...)``, with its constants, options and grid)
    without running it: for ``device`` (default: device 0) or for ``target`` (``"sm_90"``).
    Thread-safe; tileiras runs in a subprocess, so compiles in threads run side by side. The
    partitions ``op`` holds are released."""
    return _specialize(_launch_keys(op), device, target)


#: held while a config's launch is built and its keys taken (its partitions live that long)
_BUILD_LOCK = threading.Lock()


def _launch_keys(op) -> tuple:
    """(kernel, argument keys, constants, grid facts, options) of a lazy launch; releases the
    partitions it holds."""
    from .dispatcher import grid_ones
    k = op.kernel
    account_for(op)         # a description to compile, never launched
    keys, consts, ones = k._keys_for(op.args, op._generics)
    if op._grid is not None:
        ones = grid_ones(op._grid)
    return k, keys, consts, ones, op._options or k.options


def _specialize(launch_keys: tuple, device=None, target: Optional[str] = None):
    from . import backends
    from .runtime.device import Device
    k, keys, consts, ones, options = launch_keys
    if target is None:
        device = Device(device)                  # None: the current device
        target = backends.of(device).target(device)
    return k.specialize(keys, consts, target, options, grid_ones=ones)


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


def _itemsize(v) -> int:
    """Bytes per element of an array argument (0 for scalars)."""
    v = getattr(v, "value", v)              # tile.atomic(t)
    dtype = getattr(v, "dtype", None)
    if dtype is None or getattr(v, "shape", None) is None:
        return 0
    n = getattr(dtype, "itemsize", None)
    return int(n) if isinstance(n, int) else 0


def _device_obj(bound):
    """The device the arguments live on (the current device when none says)."""
    from .runtime.device import Device
    for v in bound.values():
        t = getattr(v, "_tensor", v)
        dev = getattr(t, "device", None)
        if isinstance(dev, Device):
            return dev
        if dev is not None and getattr(dev, "type", None) == "cuda":       # torch
            return Device(dev.index)
    return Device()


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
    from .deviceops.transfer import from_numpy
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
    from .deviceops.transfer import dup
    from .runtime.argspec import atomic
    out = []
    for n, v in bound.items():
        if n == tuner.partition or isinstance(v, atomic):
            t = _as_tensor(v.value if isinstance(v, atomic) else v)
            if t.size:
                out.append((t, dup(t).sync()))
    return out


def _restore_written(saved) -> None:
    from .deviceops.transfer import memcpy
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

    def trial(self, config: Config, op, limit_s: float,
              best_ms: Optional[float] = None) -> Trial:
        """``config``'s median of ``reps`` runs; one run only when it takes over
        :data:`SLOW_TRIAL` times ``best_ms`` (the best so far): it cannot win."""
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
            first = self.runs(p, 1)
            if best_ms is not None and first[0] > SLOW_TRIAL * best_ms:
                return Trial(config, first[0],
                             f"timed once: {first[0] / best_ms:.1f}x the best so far")
            return Trial(config, statistics.median(first + self.runs(p, self.reps - 1)))
        except TileJitError as e:
            return Trial(config, None, f"failed: {_first_line(e)}")
        finally:
            p.close()

    def runs(self, p, n: int) -> List[float]:
        """Milliseconds of ``n`` single runs of prepared launch ``p``, the L2 flushed before
        each."""
        times = []
        for _ in range(n):
            self._flush()
            a = self.Event(self.device, timing=True).record(self.stream)
            p.launch()
            b = self.Event(self.device, timing=True).record(self.stream)
            b.synchronize()
            times.append(a.elapsed_ms(b))
        return times

    @contextlib.contextmanager
    def prepared(self, op_for: Callable[[int], Any]):
        """``runs(i)``: a few timed runs of launch ``op_for(i)``, prepared on first use, every
        prepared launch closed on exit (for :func:`settle`)."""
        launches: Dict[int, Any] = {}

        def runs(i: int) -> List[float]:
            if i not in launches:
                launches[i] = op_for(i).prepare(self.stream)
                launches[i].launch()                 # warm, as trial's
            return self.runs(launches[i], max(1, self.reps // 2))
        try:
            yield runs
        finally:
            for p in launches.values():
                p.close()

    def close(self):
        self.scratch = None
