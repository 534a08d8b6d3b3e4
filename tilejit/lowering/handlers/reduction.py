"""Reductions and scans, built in and with user combiners."""
from __future__ import annotations

import numpy as np
from numba.core import ir

from ... import language as L
from ...errors import UnsupportedError
from ...typing.templates.reduction import builtin_combiner
from .. import regions as R
from ..emit import TV
from . import dt_of, handles


# --- reductions --------------------------------------------------------------------------------
def _reduction(kind):
    def handler(lw, info, args, rty):
        t = lw.tv(lw.arg(args, "t"))
        axis = lw.static_arg(info, args, "axis", None)
        keep = lw.static_arg(info, args, "keepdims", False)
        nan = kind not in ("sum", "prod") and lw.static_arg(info, args, "propagate_nan", True)
        rounding = _rounding(lw, info, args) if kind in ("sum", "prod") else {}
        if axis is None:
            r = lw.em.reduce_all(kind, t, keep, propagate_nan=nan, **rounding)
        elif kind in ("argmax", "argmin"):
            r = lw.em.arg_reduce(kind, t, axis % len(t.shape), keep, propagate_nan=nan)
        else:
            axes = axis if isinstance(axis, tuple) else (axis,)
            axes = sorted(a % len(t.shape) for a in axes)
            r = t
            for a in reversed(axes):
                r = lw.em.reduce(kind, r, a, keep, propagate_nan=nan, **rounding)
        return lw.em.cast(r, dt_of(rty))
    return handler


for _k in ("sum", "max", "min", "prod", "argmax", "argmin"):
    handles(getattr(L, _k))(_reduction(_k))


def _scan(kind):
    def handler(lw, info, args, rty):
        t = lw.tv(lw.arg(args, "t"))
        axis = lw.static_arg(info, args, "axis", 0) % len(t.shape)
        rev = lw.static_arg(info, args, "reverse", False)
        return lw.em.cast(lw.em.scan(kind, t, axis, rev, **_rounding(lw, info, args)),
                          dt_of(rty))
    return handler


def _rounding(lw, info, args) -> dict:
    """The ``rounding``/``ftz`` keywords of an emitted sum or product."""
    mode = lw.static_arg(info, args, "rounding_mode", None)
    return {"rounding": mode.value if mode is not None else None,
            "ftz": bool(lw.static_arg(info, args, "flush_to_zero", False))}


handles(L.cumsum)(_scan("sum"))
handles(L.cumprod)(_scan("prod"))


def _user_combiner(lw, info, args, rty, is_scan):
    em = lw.em
    t = lw.arg(args, "t")
    as_tuple = isinstance(t, tuple)
    rtys = list(rty.types) if as_tuple else [rty]
    ts = [lw.tv(v, dt_of(r)) for v, r in zip(t if as_tuple else (t,), rtys)]
    shape = tuple(np.broadcast_shapes(*(x.shape for x in ts)))
    ts = [em.broadcast(x, shape) for x in ts]
    dts = [x.dtype for x in ts]
    fn = lw.static(args["fn"])
    kind = builtin_combiner(fn)
    ident = lw.static_arg(info, args, "identity", None)
    if ident is None:
        idents = [em.identity(kind, dts[0])]
    else:
        idents = list(ident) if isinstance(ident, tuple) else [ident]
    attrs = [em._typed_identity(i, d) for i, d in zip(idents, dts)]
    values = [x.value for x in ts]
    axis = lw.static_arg(info, args, "axis", None)
    if not is_scan and axis is None:                 # every axis: reduce the flat tiles
        n = int(np.prod(shape))
        values = [em.reshape(x, (n,)).value for x in ts]
        axis_n = 0
    else:
        axis_n = axis % len(shape)
        if not is_scan and isinstance(axis, tuple):
            raise lw.error("tile.reduce with a combiner reduces one axis (or all: axis=None)",
                           UnsupportedError)
    if is_scan:
        op = lw.b.scan(values, axis_n, attrs, reverse=lw.static_arg(info, args, "reverse", False))
    else:
        op = lw.b.reduce(values, axis_n, attrs)
    region = op.regions[0].args                      # (element, accumulated) per operand
    with lw.b.at(op.regions[0]):
        if kind is not None:
            lw.b.yield_([em._combine(kind, region[0], region[1], dts[0])])
        else:
            sub = _typed_combiner(lw, fn)
            elems = [TV(region[2 * i], d) for i, d in enumerate(dts)]
            accs = [TV(region[2 * i + 1], d) for i, d in enumerate(dts)]
            out = _inline_combiner(lw, sub, elems + accs, dts)
            lw.b.yield_([em.cast(r, d).value for r, d in zip(out, dts)])
    res = []
    for r, d, want in zip(op.results, dts, rtys):
        r = TV(r, d)
        if not is_scan and lw.static_arg(info, args, "keepdims", False):
            r = em.reshape(r, want.shape)
        res.append(em.cast(r, dt_of(want)))
    return tuple(res) if as_tuple else res[0]


def _typed_combiner(lw, fn):
    for (tf, _), tk in lw.tk.subfunctions.items():
        if tf is fn or getattr(tf, "py_func", None) is getattr(fn, "py_func", fn):
            return tk
    raise lw.error("internal error: the combiner of tile.reduce/tile.scan was not typed")


def _inline_combiner(lw, sub, arg_tvs, dts) -> list:
    """Lower a typed combiner function (straight-line code) with ``arg_tvs`` as its arguments;
    its results as TVs of ``dts``."""
    from ..structurize import structurize
    sk = structurize(sub)
    saved = (lw.env, lw.typemap, lw.calltypes, lw.tk)
    lw.env = {}
    lw.typemap, lw.calltypes, lw.tk = sk.typemap, sk.calltypes, sub
    names = [p.name for p in sub.params]
    for nm, v in zip(names, arg_tvs):
        lw.env[nm] = v
    try:
        for node in sk.body.nodes:
            if not isinstance(node, R.Block):
                raise lw.error("combiner functions of tile.reduce/tile.scan must be straight-line "
                               "code (no if/for/while; use tile.where)", UnsupportedError)
            for stmt in node.stmts:         # Block statements never include the return
                lw.stmt(stmt)
        ret = [s for blk in sub.func_ir.blocks.values() for s in blk.body
               if isinstance(s, ir.Return)]
        out = lw.value(ret[0].value)
        out = out if isinstance(out, tuple) else (out,)
        return [lw.tv(v, d) for v, d in zip(out, dts)]
    finally:
        lw.env, lw.typemap, lw.calltypes, lw.tk = saved


handles(L.reduce)(lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, False))
handles(L.scan)(lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, True))
