"""``reduce`` and ``scan`` with their combiner regions, vectorized.

The combiner region is compiled like any block; it is run on whole arrays: each step binds its
``(element, accumulator)`` arguments to array halves and evaluates every op of the region once.

* reduce: a pairwise tree along ``dim`` (log2(n) region evaluations), combining neighbours
  ``f(element=x[2i+1], accumulator=x[2i])`` so that only associativity is assumed, never
  commutativity;
* scan: Hillis-Steele inclusive scan (log2(n) evaluations), ``f(element=x[i], accumulator=x[i-d])``;
  ``reverse`` scans run on the flipped tile.

The identities are not needed by these schemes (the GPU uses them to pad); with a correct
identity the results are the same.
"""
from __future__ import annotations

import numpy as np

from .elements import storage
from .errors import KernelFault
from .registry import IMPLS, YIELD, bind, impl


def _direct(op, c):
    """``(combine, whole)`` without interpreting the region, when it is one element-wise op of
    the two arguments and a ``yield`` of its result (``max``, ``sum``...): ``combine`` is the
    op's own function on the array halves (the same arithmetic in the same tree, a fraction of
    the time); ``whole(x)`` folds axis 0 in one NumPy reduce where the order cannot matter
    (max/min), else None. None when the region is anything else."""
    region = op.regions[0]
    ops = region.ops
    if len(region.args) != 2 or len(ops) != 2 or ops[1].name != "yield" or \
            list(ops[1].operands) != [ops[0].results[0]] or len(ops[0].results) != 1 or \
            ops[0].regions:
        return None
    first = ops[0]
    operands = list(first.operands)
    e, a = region.args
    if operands not in ([e, a], [a, e]):
        return None
    build = IMPLS.get(first.name)
    run = build(first, c) if build is not None else None
    fn = getattr(run, "pure", None)
    if fn is None:
        return None
    swap = operands == [a, e]

    def combine(env, elems, accs):
        r = fn(accs[0], elems[0]) if swap else fn(elems[0], accs[0])
        return [r if np.shape(r) == np.shape(accs[0]) else np.broadcast_to(r, np.shape(accs[0]))]
    return combine, getattr(run, "pure_reduce", None)


def _combiner(op, c):
    """``(combine, whole)``: ``combine(env, elems, accs)`` evaluates the combiner region on
    array halves; ``whole`` is :func:`_direct`'s one-reduce form or None."""
    direct = _direct(op, c) if not c.interleave else None
    if direct is not None:
        return direct
    region = op.regions[0]
    body = c.block(region)
    args = [c.slot(a) for a in region.args]
    elem_slots, acc_slots = args[0::2], args[1::2]

    def combine(env, elems, accs):
        bind(env, elem_slots, elems)
        bind(env, acc_slots, accs)
        sig = body(env)
        if sig is None or sig[0] is not YIELD:
            raise KernelFault(f"the {op.name} combiner region must end with 'yield'")
        shape = np.shape(accs[0])
        return [np.broadcast_to(y, shape) for y in sig[1]]
    return combine, None


def _operands(op, c):
    """Input slots, result slots, result storage dtypes and the combiner pair of a reduce/scan."""
    return ([c.slot(v) for v in op.operands], [c.slot(r) for r in op.results],
            [storage(r.type.element) for r in op.results], _combiner(op, c))


@impl("reduce")
def _reduce(op, c):
    dim = int(op.attrs["dim"])
    ins, outs, dts, (combine, whole) = _operands(op, c)
    ndim = len(op.operands[0].type.shape)
    # ``dim`` first, the others in order (np.moveaxis's result, without its checks per call)
    perm = tuple([dim] + [i for i in range(ndim) if i != dim])

    def run(env):
        xs = [np.asarray(env[s]).transpose(perm) for s in ins]
        if whole is not None:
            env[outs[0]] = np.asarray(whole(xs[0])).astype(dts[0], copy=False)
            return
        n = xs[0].shape[0]
        while n > 1:
            h = n // 2
            ys = combine(env, [x[1:2 * h:2] for x in xs], [x[0:2 * h:2] for x in xs])
            if n % 2:
                ys = [np.concatenate([y, x[-1:]]) for y, x in zip(ys, xs)]
            xs, n = ys, h + n % 2
        for s, x, dt in zip(outs, xs, dts):
            env[s] = np.asarray(x[0]).astype(dt, copy=False)
    return run


@impl("scan")
def _scan(op, c):
    dim = int(op.attrs["dim"])
    reverse = bool(op.attrs.get("reverse", False))
    ins, outs, dts, (combine, _) = _operands(op, c)

    def run(env):
        xs = [np.moveaxis(np.asarray(env[s]), dim, 0) for s in ins]
        if reverse:
            xs = [x[::-1] for x in xs]
        n = xs[0].shape[0]
        d = 1
        while d < n:
            ys = combine(env, [x[d:] for x in xs], [x[:-d] for x in xs])
            xs = [np.concatenate([x[:d], y]) for x, y in zip(xs, ys)]
            d *= 2
        for s, x, dt in zip(outs, xs, dts):
            if reverse:
                x = x[::-1]
            env[s] = np.moveaxis(x, 0, dim).astype(dt, copy=False)
    return run
