"""Structured control flow: ``if``, ``for``, ``loop`` and the terminators.

A terminator's runner returns a signal ``(kind, values)``. ``yield`` is consumed by the ``if`` (or
reduce/scan) that owns the region; ``continue`` and ``break`` travel out through enclosing ``if``s
to the innermost loop; ``return`` travels out to the function and ends the tile block.
"""
from __future__ import annotations

import numpy as np

from .elements import signed, storage, unsigned, wrap
from .errors import KernelFault
from .registry import BREAK, CONTINUE, RETURN, YIELD, bind, elem_of, impl


def _terminator(kind):
    def build(op, c):
        slots = [c.slot(v) for v in op.operands]
        if not slots:
            sig = (kind, ())
            return lambda env: sig
        if len(slots) == 1:
            (s,) = slots
            return lambda env: (kind, (env[s],))
        return lambda env: (kind, [env[s] for s in slots])
    return build


impl("yield")(_terminator(YIELD))
impl("continue")(_terminator(CONTINUE))
impl("break")(_terminator(BREAK))
impl("return")(_terminator(RETURN))


@impl("if")
def _if(op, c):
    cond = c.slot(op.operand("condition"))
    then_ = c.block(op.regions[0])
    else_ = c.block(op.regions[1]) if op.regions[1].ops else (lambda env: None)
    res = [c.slot(r) for r in op.results]

    def run(env):
        sig = (then_ if env[cond] else else_)(env)
        if sig is None:
            return None
        if sig[0] is YIELD:
            bind(env, res, sig[1])
            return None
        return sig
    return run


@impl("for")
def _for(op, c):
    lb, ub, st = (c.slot(op.operand(n)) for n in ("lowerBound", "upperBound", "step"))
    elem = elem_of(op.operand("lowerBound"))
    bound = (lambda x: int(unsigned(x, elem))) if "unsignedCmp" in op.attrs else \
        (lambda x: int(signed(x, elem)))
    dt = storage(elem)
    lo_t, hi_t = (np.iinfo(dt).min, np.iinfo(dt).max) if dt.kind == "i" else (0, 1)
    region = op.regions[0]
    body = c.block(region)
    iv = c.slot(region.args[0])
    carried = [c.slot(a) for a in region.args[1:]]
    inits = [c.slot(v) for v in op.group("initValues")]
    res = [c.slot(r) for r in op.results]

    def run(env):
        lo, hi, step = bound(env[lb]), bound(env[ub]), int(signed(env[st], elem))
        if step <= 0:
            raise KernelFault(f"'for' needs a positive step (Tile IR interprets it as signed), "
                              f"got {step} for the range [{lo}, {hi})")
        vals = [env[s] for s in inits]
        fits = lo_t <= lo and hi - 1 <= hi_t
        for i in range(lo, hi, step):
            env[iv] = dt.type(i) if fits else wrap(np.array(i & 0xFFFFFFFFFFFFFFFF,
                                                            dtype=np.uint64), elem)[()]
            bind(env, carried, vals)
            sig = body(env)
            if sig is None or sig[0] is not CONTINUE:
                if sig is not None and sig[0] is RETURN:
                    return sig
                raise KernelFault(f"the body of 'for' ended with "
                                  f"'{sig[0] if sig else 'nothing'}' instead of 'continue'")
            vals = sig[1]
        bind(env, res, vals)
    return run


@impl("loop")
def _loop(op, c):
    region = op.regions[0]
    c.has_loop = True
    c.loops += 1                # its memory ops are watched for spins (schedule.SpinWatch)
    try:
        body = c.block(region)
    finally:
        c.loops -= 1
    carried = [c.slot(a) for a in region.args]
    inits = [c.slot(v) for v in op.group("initValues")]
    res = [c.slot(r) for r in op.results]

    def run(env):
        vals = [env[s] for s in inits]
        while True:
            bind(env, carried, vals)
            sig = body(env)
            kind = sig[0] if sig is not None else None
            if kind is CONTINUE:
                vals = sig[1]
            elif kind is BREAK:
                bind(env, res, sig[1])
                return None
            elif kind is RETURN:
                return sig
            else:
                raise KernelFault(f"the body of 'loop' ended with '{kind}' instead of "
                                  f"'continue' or 'break'")
    return run
