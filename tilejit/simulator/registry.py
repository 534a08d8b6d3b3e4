"""The table of op implementations, keyed by the op table's names.

An implementation is a *builder* ``build(op, c) -> runner | None`` called once per op when a
function is prepared (``c`` is the :class:`~tilejit.simulator.interp.Compiler`). It reads the op's
attributes and types, picks the NumPy code for them, and returns a closure ``runner(env)`` that
reads operand values from the frame ``env`` (a list indexed by :meth:`Compiler.slot`) and writes
results back. A runner returns None, or a control signal ``(kind, values)`` for terminators (and for
region ops that pass a ``continue``/``break``/``return`` outwards). Builders that can compute their
result once (constants) store it with :meth:`Compiler.fold` and return None.
"""
from __future__ import annotations

from typing import Callable, Dict

import numpy as np

IMPLS: Dict[str, Callable] = {}

# frame slots reserved for the launch (every Value gets a slot after these)
BLOCK_ID, GRID, LAUNCH = 0, 1, 2
RESERVED = 3

# control signals returned by runners
YIELD, CONTINUE, BREAK, RETURN = "yield", "continue", "break", "return"


def impl(*names: str):
    """Register ``build`` as the implementation of the ops ``names``."""
    def deco(build):
        for n in names:
            if n in IMPLS:
                raise RuntimeError(f"simulator: two implementations of '{n}'")
            IMPLS[n] = build
        return build
    return deco


def map1(op, c, fn) -> Callable:
    """Runner for a one-operand, one-result op computing ``fn(x)``."""
    i = c.slot(op.operands[0])
    o = c.slot(op.results[0])

    def run(env):
        env[o] = fn(env[i])
    return run


def map2(op, c, fn) -> Callable:
    i, j = (c.slot(v) for v in op.operands[:2])
    o = c.slot(op.results[0])

    def run(env):
        env[o] = fn(env[i], env[j])
    run.pure = fn           # the element-wise function itself (reduce's combiners call it)
    return run


def map3(op, c, fn) -> Callable:
    i, j, k = (c.slot(v) for v in op.operands[:3])
    o = c.slot(op.results[0])

    def run(env):
        env[o] = fn(env[i], env[j], env[k])
    return run


def bind(env, slots, values) -> None:
    """Store ``values`` into the frame slots ``slots`` (region arguments, op results)."""
    for s, v in zip(slots, values):
        env[s] = v


def attr(op, name: str, default=None):
    """An attribute's value, with the op table's default when it is absent."""
    if name in op.attrs:
        return op.attrs[name]
    try:
        d = op.opdef.attr(name).default
    except KeyError:
        return default
    if callable(d):
        d = d(op)
    return default if d is None else d


def ieee_mode(op) -> str:
    """The op's ``rounding_mode`` as one of the IEEE modes of :func:`.numerics.round_exact`:
    ``zero``, ``negative_inf``, ``positive_inf``, else ``nearest_even``."""
    mode = attr(op, "rounding_mode", "nearest_even")
    return mode if mode in ("zero", "negative_inf", "positive_inf") else "nearest_even"


def elem_of(v):
    """The element type of a tile Value."""
    return v.type.element


# ``comparison_predicate`` of cmpi/cmpf -> NumPy comparison
CMP = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less,
       "less_than_or_equal": np.less_equal, "greater_than": np.greater,
       "greater_than_or_equal": np.greater_equal}
