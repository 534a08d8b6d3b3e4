"""``ct.tune``: cuTile Python's tuning API (``cuda.tile.tune``) over tilejit.

``exhaustive_search(search_space, stream, grid_fn, kernel, args_fn, hints_fn)`` tries every
config of ``search_space`` -- a config is any object: ``grid_fn(cfg)`` gives its grid,
``kernel`` (a ``ct.kernel``, or ``kernel(cfg)`` one) its kernel, ``hints_fn(cfg)`` the hints
it is compiled with (``kernel.replace_hints(**hints)``) and ``args_fn(cfg)`` the arguments it
is launched with -- and returns a :class:`TuningResult`: a :class:`Measurement` (mean time in
microseconds, samples, half the 95% confidence interval) for each config that ran, the best
one, and ``(config, exception type, message)`` for each that failed::

    result = ct.tune.exhaustive_search(configs, stream, lambda c: (n_rows,), softmax,
                                       lambda c: (y, x, c.TILE), lambda c: {"occupancy": c.occ},
                                       quiet=True)
    kernel = softmax.replace_hints(occupancy=result.best.config.occ)

On a GPU each config is launched on ``stream`` and timed as tilejit's autotuner times its
configs (``tilejit.autotune``): a prepared launch, warm-up runs, then single runs between two
CUDA events with the L2 cache flushed before each, in batches until the mean is known to 1% (or
0.5 us, or the config has taken its time budget); a config whose first batch is over
``autotune.SLOW_TRIAL`` times the best so far is not timed further (it cannot win), and the
near-ties are timed again side by side (``autotune.settle``), their new runs added to their
samples. The arguments are written by the runs, as with cuTile: pass copies where that matters.

On the simulator nothing is timed, as in tilejit's autotuner: the first config that compiles
for its arguments wins (compiled once, so the launch that follows with the same kernel object
finds it compiled); the configs after it are not tried. Its measurement has ``mean_us`` NaN and
no samples.

``single_run_timeout_sec``: a config whose first run takes longer (wall time) fails with
:class:`TileLaunchTimeoutError`. cuTile runs that first launch in a subprocess it can kill;
tilejit cannot stop a running kernel, so a kernel that never finishes still hangs the search.
"""
from __future__ import annotations

import importlib
import math
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

from .. import dtypes as _D
from ._kernel import Kernel, _grid3, _stream_of
from ._kernel import launch as _launch


def __getattr__(name):
    # _backend (the runtime's) and _autotune (the module ``tilejit.autotune``: as an attribute
    # of the package it is the decorator) load at the first search, not when tilejit.cutile is
    # imported (the runtime and NumPy with them)
    if name == "_backend":
        from ..runtime import backend as mod
    elif name == "_autotune":
        mod = importlib.import_module("tilejit.autotune")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = mod
    return mod


def _lazy(name: str):
    """This module's ``name``, loaded by __getattr__ when not yet (or as a test set it)."""
    g = globals()
    return g[name] if name in g else __getattr__(name)


T = TypeVar("T")

#: warm-up runs of each config before it is timed
WARMUP = 3
#: runs timed at a time; a config has at least one batch
BATCH = 5
#: a config stops being timed at this many samples ...
MAX_SAMPLES = 500
#: ... or when its timed runs add up to this many microseconds
MAX_TIME_US = 2_000_000.0
#: ... or when half its 95% confidence interval is within this fraction of its mean ...
REL_MARGIN = 0.01
#: ... or within this many microseconds
ABS_MARGIN_US = 0.5


class TileLaunchTimeoutError(RuntimeError):
    """A config's first run took longer than ``single_run_timeout_sec``."""


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    """One config's timing."""

    config: T
    """The config."""

    mean_us: float
    """Mean time of one run in microseconds (NaN on the simulator: not timed)."""

    num_samples: int
    """Timed runs."""

    error_margin_us: float
    """Half the 95% confidence interval of the mean, in microseconds."""


@dataclass(frozen=True, kw_only=True)
class TuningResult(Generic[T]):
    """What :func:`exhaustive_search` found."""

    best: Measurement
    """The fastest config's measurement."""

    successes: Sequence[Measurement]
    """A measurement for each config that ran."""

    failures: Sequence[Tuple[T, type, str]]
    """``(config, exception type, message)`` for each config that failed."""

    def summary(self, *, top_k: int = 10, bottom_k: int = 2) -> str:
        """The counts, then the measurements fastest first (the best marked ``*``; the
        ``top_k`` fastest and ``bottom_k`` slowest shown) and the first ``top_k`` failures."""
        ok, bad = list(self.successes), list(self.failures)
        lines = [f"{len(ok)} succeeded, {len(bad)} failed"]
        ranked = sorted(ok, key=lambda m: (math.isnan(m.mean_us), m.mean_us))
        shown = list(range(len(ranked)))
        if len(ranked) > top_k + bottom_k + 1:
            shown = list(range(top_k)) + [None] + list(range(len(ranked) - bottom_k,
                                                             len(ranked)))
        if ranked:
            cw = max(len(str(m.config)) for m in ranked)
            times = {id(m): f"{m.mean_us:.1f}±{m.error_margin_us:.1f} us" for m in ranked}
            tw = max(len(t) for t in times.values())
        for i in shown:
            if i is None:
                lines.append(f"    ... {len(ranked) - top_k - bottom_k} more not shown")
                continue
            m = ranked[i]
            mark = "*" if m is self.best or m == self.best else " "
            lines.append(f"{mark} {str(m.config):<{cw}}: {times[id(m)]:<{tw}} "
                         f"({m.num_samples} samples)")
        if bad:
            lines.append(f"  {len(bad)} failed:")
            for cfg, exc, msg in bad[:top_k]:
                first = (msg.splitlines() or [""])[0]
                if len(first) > 60:
                    first = first[:57] + "..."
                lines.append(f"    {cfg}: {getattr(exc, '__name__', exc)}: {first}")
            if len(bad) > top_k:
                lines.append(f"    ... {len(bad) - top_k} more not shown")
        if len(ok) > top_k + bottom_k + 1 or len(bad) > top_k:
            lines.append("Use .successes and .failures for full results.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


# --------------------------------------------------------------------------------------------------
class _Candidate:
    """One config: its kernel (hints applied), grid and arguments, and its timed runs."""

    def __init__(self, cfg, stream, grid_fn, kernel, args_fn, hints_fn):
        self.config = cfg
        self.grid = _grid3(grid_fn(cfg))
        k = kernel if isinstance(kernel, Kernel) else kernel(cfg)
        hints = hints_fn(cfg) if hints_fn is not None else {}
        if hints:
            if not isinstance(k, Kernel):
                raise TypeError(f"exhaustive_search(): the kernel must be a ct.kernel, got "
                                f"{type(k).__name__}")
            k = k.replace_hints(**hints)
        self.kernel = k
        self.args = tuple(args_fn(cfg))
        self.stream = stream
        self.samples: List[float] = []
        self.prepared = None

    # --- compiling without running
    def launch_keys(self) -> tuple:
        """``(kernel bound to the constants, argument keys, constants)`` of this config's
        launch, as ``ct.launch`` makes them (nothing compiled, nothing run)."""
        k = self.kernel
        if not isinstance(k, Kernel):
            raise TypeError(f"exhaustive_search(): the kernel must be a ct.kernel, got "
                            f"{type(k).__name__}")
        if len(self.args) != len(k.param_names):
            raise TypeError(f"Kernel expects {len(k.param_names)} arguments but "
                            f"{len(self.args)} were given ({k.__name__}{k._sig})")
        bound, values = k._plain_launch(self.args)
        keys, consts, _ = bound._keys_for(tuple(values))
        return bound, tuple(keys), consts

    def compile(self, launch_keys=None) -> None:
        """Compile this config for its arguments without running it, into the launch's own
        cache entry (``ct.launch`` with the same kernel object finds it). Safe in threads once
        ``launch_keys`` are made (in one thread: they may import foreign arrays)."""
        from .. import backends
        from ..runtime.argspec import grid_ones as _grid_ones
        bound, keys, consts = launch_keys or self.launch_keys()
        device = _stream_of(self.stream).device
        bound.specialize(keys, consts, backends.of(device).target(device),
                         grid_ones=_grid_ones(self.grid))

    # --- a GPU: timed runs
    def launch(self) -> None:
        if self.prepared is not None:
            self.prepared.launch()
        else:
            _launch(self.stream, self.grid, self.kernel, self.args)

    def prepare(self, stream) -> None:
        """A prepared launch (validated and packed once) where the arguments allow one (not
        host arrays); else each run is a ``ct.launch``."""
        bound, values = self.kernel._plain_launch(self.args)
        op = bound(*values)
        op._grid = self.grid
        try:
            self.prepared = op.prepare(stream)
        except Exception:  # noqa: BLE001 - ct.launch then runs it, or says what is wrong
            self.prepared = None

    def close(self) -> None:
        if self.prepared is not None:
            self.prepared.close()
            self.prepared = None

    @property
    def mean_us(self) -> float:
        return statistics.fmean(self.samples) if self.samples else math.inf

    @property
    def margin_us(self) -> float:
        n = len(self.samples)
        if n < 2:
            return math.inf
        return 1.96 * statistics.stdev(self.samples) / math.sqrt(n)

    def converged(self) -> bool:
        n, mean, margin = len(self.samples), self.mean_us, self.margin_us
        return n >= BATCH and (margin <= REL_MARGIN * mean or margin <= ABS_MARGIN_US or
                               n >= MAX_SAMPLES or sum(self.samples) >= MAX_TIME_US)

    def measurement(self) -> Measurement:
        if not self.samples:
            return Measurement(config=self.config, mean_us=math.nan, num_samples=0,
                               error_margin_us=math.nan)
        margin = self.margin_us
        return Measurement(config=self.config, mean_us=self.mean_us,
                           num_samples=len(self.samples),
                           error_margin_us=0.0 if math.isinf(margin) else margin)


class _Timer:
    """Single runs between CUDA events on the search's stream, the L2 cache flushed before
    each (as ``autotune._Timer``, on the caller's stream: the arguments are its)."""

    def __init__(self, stream):
        from .. import api
        from ..runtime.stream import Event
        self.api, self.Event, self.stream = api, Event, stream
        flush = _lazy("_autotune").L2_FLUSH_BYTES
        self.scratch = api.zeros((flush // 4,), _D.int32).sync_on(stream)

    def runs(self, c: _Candidate, n: int) -> List[float]:
        """Microseconds of ``n`` runs of ``c``, added to its samples."""
        out = []
        for _ in range(n):
            self.api.fill(self.scratch, 0).submit_on(self.stream)
            a = self.Event(self.stream.device, timing=True).record(self.stream)
            c.launch()
            b = self.Event(self.stream.device, timing=True).record(self.stream)
            b.synchronize()
            out.append(a.elapsed_ms(b) * 1000.0)
        c.samples += out
        return out

    def close(self) -> None:
        self.scratch = None


def _failure(cfg, e: BaseException) -> tuple:
    return (cfg, type(e), str(e))


def _first_compiling(configs, stream, grid_fn, kernel, args_fn, hints_fn) -> TuningResult:
    """The simulator: the first config that compiles, untimed."""
    failures = []
    for cfg in configs:
        try:
            c = _Candidate(cfg, stream, grid_fn, kernel, args_fn, hints_fn)
            c.compile()
        except Exception as e:  # noqa: BLE001 - a config that fails is a result
            failures.append(_failure(cfg, e))
            continue
        m = c.measurement()
        return TuningResult(best=m, successes=(m,), failures=tuple(failures))
    return _no_valid(failures)


def _timed(configs, stream, grid_fn, kernel, args_fn, hints_fn, quiet: bool,
           timeout_s: Optional[float]) -> TuningResult:
    s = _stream_of(stream)
    s.synchronize()                 # the arguments' producers, before any timing
    show = not quiet and _in_terminal()
    failures: Dict[int, tuple] = {}
    ready = _compile_side_by_side(configs, stream, grid_fn, kernel, args_fn, hints_fn,
                                  failures, show)
    timer = _Timer(s)
    done: List[_Candidate] = []
    try:
        for i, c in ready:
            cfg = c.config
            if show:
                print(f"\rct.tune: timing config {i + 1}/{len(configs)} | failed: "
                      f"{len(failures)}", end="", file=sys.stderr, flush=True)
            try:
                c.prepare(s)
                t0 = time.perf_counter()
                c.launch()                              # loads the module
                s.synchronize()
                if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
                    raise TileLaunchTimeoutError(
                        f"CUDA kernel launch exceeded timeout {timeout_s} sec")
                for _ in range(WARMUP - 1):
                    c.launch()
                timer.runs(c, BATCH)
                best = min((d.mean_us for d in done), default=None)
                while not c.converged():
                    if best is not None and c.mean_us - c.margin_us > \
                            _lazy("_autotune").SLOW_TRIAL * best:
                        break                           # it cannot win
                    timer.runs(c, BATCH)
            except Exception as e:  # noqa: BLE001 - a config that fails is a result
                failures[i] = _failure(cfg, e)
                c.close()
                continue
            done.append(c)
        if len(done) > 1:
            try:
                _lazy("_autotune").settle([c.mean_us for c in done],
                                          lambda i: timer.runs(done[i], BATCH))
            except Exception:  # noqa: BLE001 - a config that ran fails now: the first pass
                pass
    finally:
        for c in done:
            c.close()
        timer.close()
        if show:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    failed = [failures[i] for i in sorted(failures)]      # in the space's order
    if not done:
        return _no_valid(failed)
    measures = tuple(c.measurement() for c in done)
    best = min(measures, key=lambda m: m.mean_us)
    return TuningResult(best=best, successes=measures, failures=tuple(failed))


def _compile_side_by_side(configs, stream, grid_fn, kernel, args_fn, hints_fn, failures,
                          show) -> List[Tuple[int, _Candidate]]:
    """Every config's candidate compiled (tileiras runs in subprocesses, side by side, as
    ``autotune``'s compiles): ``[(index, candidate)]`` of those that compile; ``failures``
    gets the others by index."""
    import concurrent.futures
    import os
    made = []
    for i, cfg in enumerate(configs):
        try:
            c = _Candidate(cfg, stream, grid_fn, kernel, args_fn, hints_fn)
            made.append((i, c, c.launch_keys()))
        except Exception as e:  # noqa: BLE001
            failures[i] = _failure(cfg, e)
    if show:
        print(f"\rct.tune: compiling {len(made)} configs", end="", file=sys.stderr, flush=True)
    ok = []
    workers = max(1, min(len(made), os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futs = [(i, c, pool.submit(c.compile, keys)) for i, c, keys in made]
        for i, c, f in futs:
            e = f.exception()
            if e is None:
                ok.append((i, c))
            else:
                failures[i] = _failure(c.config, e)
    return ok


def _no_valid(failures) -> TuningResult:
    cfg, exc, msg = failures[0]
    raise ValueError(f"No valid config found in search space.\nConfig: {cfg}\n"
                     f"{exc.__name__}: {msg}")


def _in_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def exhaustive_search(
        search_space: Sequence[T],
        stream,
        grid_fn: Callable[[T], Tuple[int, ...]],
        kernel,
        args_fn: Callable[[T], Tuple[Any, ...]],
        hints_fn: Optional[Callable[[T], Dict[str, Any]]] = None,
        *,
        quiet: bool = False,
        single_run_timeout_sec: Optional[float] = None) -> TuningResult[T]:
    """Try every config of ``search_space`` and return the measurements and the best one.

    Args:
        search_space: The configs (any objects).
        stream: The stream the configs run on (a torch or CuPy stream, a handle, a
            ``tile.Stream``).
        grid_fn: ``grid_fn(cfg)``: the config's launch grid.
        kernel: A ``ct.kernel``, or ``kernel(cfg)`` giving one (return the same object for
            configs of the same kernel: each kernel object compiles on its own).
        args_fn: ``args_fn(cfg)``: the config's kernel arguments (a tuple, as ``ct.launch``).
        hints_fn: ``hints_fn(cfg)``: the hints it is compiled with (``occupancy``,
            ``num_ctas``, ``num_worker_warps``, ``opt_level``; ``ct.ByTarget`` values too).
            Default: the kernel's own.
        quiet: Print nothing (else the summary is printed, and the progress on a terminal).
        single_run_timeout_sec: A config whose first run takes longer fails (see the module
            docstring: tilejit cannot stop a running kernel).

    Returns:
        A :class:`TuningResult`. Raises ValueError when the space is empty or no config ran.
        On the simulator the first config that compiles is the result, untimed.
    """
    _backend = _lazy("_backend")
    configs = list(search_space)
    if not configs:
        raise ValueError("Search space is empty.")
    if _backend.current() != _backend.CUDA:
        result = _first_compiling(configs, stream, grid_fn, kernel, args_fn, hints_fn)
    else:
        result = _timed(configs, stream, grid_fn, kernel, args_fn, hints_fn, quiet,
                        single_run_timeout_sec)
    if not quiet:
        print(result)
    return result


__all__ = ["exhaustive_search", "TuningResult", "Measurement"]
