"""The Tile IR interpreter: prepare a function once, then run it block by block.

    kernel = compile_function(module, "matmul")      # cached per (module, name)
    kernel((gx, gy, gz), params)                      # params: C1 values (ints, floats, bools)

:func:`compile_function` turns every op into a closure over NumPy code chosen for its types and
attributes (:mod:`.registry`; one ``sem_*`` module per op family) and gives every SSA value a slot
in a flat frame (a list). Running a tile block is then a loop over closures, each of which works on
whole tiles. ``TILEJIT_SIM_SCHEDULE`` picks the order of the blocks (:mod:`.schedule`): by
default they run one after another, x fastest, then y, then z; ``interleave`` runs a second
preparation of the function whose memory ops follow the weak memory model (:mod:`.weak_memory`).
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Sequence

import numpy as np

from .. import envvars
from ..errors import DeviceError, LaunchError
from ..tileir.ir import Block, Function, Module, Value
from ..tileir.types import TileType
from . import (sem_control, sem_convert, sem_debug, sem_float, sem_int, sem_misc,  # noqa: F401
               sem_mma, sem_pointer, sem_reduce, sem_shape, sem_views)
from . import schedule as _schedule
from .weak_memory import interleave_form
from .elements import scalar_param
from .errors import (KernelFault, SimulatorError, SimulatorMemoryError,
                     SimulatorUnsupportedError)
from .registry import BLOCK_ID, GRID, IMPLS, LAUNCH, RESERVED


class Launch:
    """Per-launch state shared by the blocks: the memory and the print line state."""

    __slots__ = ("memory", "at_line_start")

    def __init__(self, memory):
        self.memory = memory
        self.at_line_start = True


class Compiler:
    """Prepares one function: value slots, constant folding, and a runner per block."""

    def __init__(self, kernel_name: str, interleave: bool = False):
        self.kernel_name = kernel_name
        self.interleave = interleave       # memory ops in their weak-memory form
        self.loops = 0                     # depth of the 'loop' ops being prepared
        self.has_loop = False              # serial launches then watch for spins
        self._slots: Dict[Value, int] = {}
        self.template: List[object] = [None] * RESERVED

    def slot(self, v: Value) -> int:
        s = self._slots.get(v)
        if s is None:
            s = self._slots[v] = len(self.template)
            self.template.append(None)
        return s

    def alias(self, v: Value, same_as: Value) -> None:
        """``v`` always holds the value of ``same_as`` (a cast that changes only the type)."""
        self._slots[v] = self.slot(same_as)

    def fold(self, v: Value, value) -> None:
        """``v`` is a constant: it lives in the frame template, no runtime op needed."""
        self.template[self.slot(v)] = value

    def block(self, blk: Block):
        """A runner ``run(env) -> signal | None`` executing the ops of ``blk`` in order."""
        fns = []
        owner = {}
        for op in blk.ops:
            build = IMPLS.get(op.name)
            if build is None:
                raise SimulatorUnsupportedError(
                    f"the simulator has no implementation of Tile IR op '{op.name}'",
                    op=op.name, kernel=self.kernel_name, loc=op.loc)
            try:
                fn = build(op, self)
                if self.interleave:
                    fn = interleave_form(op, self, fn)
                elif self.loops and op.name in _schedule.MEMORY_OPS:
                    fn = _schedule.spin_form(op, fn)
            except SimulatorError:
                raise
            except Exception as e:
                raise SimulatorUnsupportedError(
                    f"cannot prepare this op for the simulator ({type(e).__name__}: {e})",
                    op=op.name, kernel=self.kernel_name, loc=op.loc) from e
            if fn is not None:
                fns.append(fn)
                owner[id(fn)] = op
        return _runner(tuple(fns), owner, self.kernel_name)


def _runner(fns, owner, kernel):
    def run(env):
        try:
            for f in fns:
                sig = f(env)
                if sig is not None:
                    return sig
            return None
        except SimulatorError:
            raise
        except KernelFault as e:
            op = owner[id(f)]
            raise e.cls(e.message, op=op.name, block=env[BLOCK_ID], kernel=kernel, loc=op.loc,
                        **e.kw) from None
        except DeviceError as e:
            # simulator.memory reports bad addresses (with the address) as DeviceError
            op = owner[id(f)]
            raise SimulatorMemoryError(str(e), op=op.name, block=env[BLOCK_ID], kernel=kernel,
                                       loc=op.loc) from None
        except Exception as e:
            op = owner[id(f)]
            raise SimulatorError(f"internal simulator error ({type(e).__name__}: {e})",
                                 op=op.name, block=env[BLOCK_ID], kernel=kernel,
                                 loc=op.loc) from e
    return run


def _grid3(grid) -> tuple:
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    g = tuple(int(x) for x in grid)
    if not 1 <= len(g) <= 3 or any(x < 0 for x in g):
        raise LaunchError(f"grid must be 1 to 3 non-negative ints, got {grid!r}")
    return g + (1,) * (3 - len(g))


class SimKernel:
    """One prepared entry function. Call it as ``kernel(grid, params)``."""

    def __init__(self, fn: Function, module_name: str = ""):
        self.name = fn.name
        self.module_name = module_name
        c = Compiler(fn.name)
        self._arg_slots = [c.slot(a) for a in fn.args]
        self._arg_elems = []
        for a in fn.args:
            if not isinstance(a.type, TileType) or a.type.rank != 0:
                raise SimulatorUnsupportedError(f"entry parameters must be scalar tiles, got "
                                                f"{a.type}", kernel=fn.name)
            self._arg_elems.append(a.type.element)
        self._arg_types = [str(a.type) for a in fn.args]
        self._body = c.block(fn.body)
        self._template = c.template
        self._has_loop = c.has_loop
        self._fn = fn
        self._interleaved = None           # (body, template), prepared on first use

    def __call__(self, grid, params: Sequence, memory=None) -> None:
        """Run every tile block of ``grid`` with the C1 parameter values, in the order
        ``TILEJIT_SIM_SCHEDULE`` asks for."""
        gx, gy, gz = _grid3(grid)
        if len(params) != len(self._arg_slots):
            raise LaunchError(f"kernel '{self.name}' takes {len(self._arg_slots)} parameters "
                              f"({', '.join(self._arg_types)}), got {len(params)}")
        if memory is None:
            from .memory import memory
        sched = envvars.sim_schedule()
        body, template = self._interleave_form() if sched == "interleave" else (self._body,
                                                                                self._template)
        env0 = self._frame(template, params, (gx, gy, gz))
        blocks = _schedule.block_order((gx, gy, gz), sched, envvars.sim_seed())

        def run_block(bid):
            env = env0.copy()
            env[BLOCK_ID] = bid
            body(env)

        if sched == "interleave":
            it = _schedule.Interleaver(run_block, list(blocks), envvars.sim_seed(), memory)
            env0[LAUNCH] = Launch(it.wm)
            it.run()
            return
        if not self._has_loop:
            env0[LAUNCH] = Launch(memory)
            with np.errstate(all="ignore"):
                for bid in blocks:
                    run_block(bid)
            return
        watch = _schedule.SpinWatch(memory, sched)
        env0[LAUNCH] = Launch(watch)
        with np.errstate(all="ignore"):
            for bid in blocks:
                watch.block_started()
                run_block(bid)

    def _interleave_form(self):
        """The function prepared again with its memory ops in weak-memory form (once)."""
        if self._interleaved is None:
            c = Compiler(self.name, interleave=True)
            for a in self._fn.args:         # the same parameter slots as the plain form
                c.slot(a)
            self._interleaved = (c.block(self._fn.body), c.template)
        return self._interleaved

    def _frame(self, template, params, grid3) -> list:
        """The frame every block starts from: the template with the parameters and grid."""
        env0 = list(template)
        for i, (s, e, v) in enumerate(zip(self._arg_slots, self._arg_elems, params)):
            try:
                env0[s] = scalar_param(v, e)
            except (TypeError, ValueError, OverflowError) as err:
                raise LaunchError(f"kernel '{self.name}': parameter {i} ({self._arg_types[i]}) "
                                  f"cannot take {v!r}: {err}") from None
        env0[GRID] = tuple(np.int32(g) for g in grid3)
        return env0

    def __repr__(self) -> str:
        return f"<SimKernel {self.module_name}.{self.name}>"


_CACHE: "weakref.WeakKeyDictionary[Module, Dict[str, SimKernel]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def compile_function(module: Module, name: str) -> SimKernel:
    """The simulator kernel of ``module``'s function ``name``, prepared once and cached (modules
    are treated as immutable once handed to the simulator)."""
    with _LOCK:
        per = _CACHE.get(module)
        if per is None:
            per = _CACHE[module] = {}
        k = per.get(name)
    if k is None:
        try:
            fn = module.function(name)
        except KeyError:
            raise LaunchError(f"module '{module.name}' has no function '{name}' (it has "
                              f"{', '.join(f.name for f in module.functions) or 'none'})") from None
        k = SimKernel(fn, module.name)
        with _LOCK:
            k = per.setdefault(name, k)
    return k


def run(module: Module, name: str, grid, params: Sequence, memory=None) -> None:
    """Prepare (cached) and launch ``name``: ``compile_function(module, name)(grid, params)``."""
    compile_function(module, name)(grid, params, memory)


__all__ = ["compile_function", "SimKernel", "Compiler", "run"]

