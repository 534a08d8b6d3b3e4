"""Reductions and scans, built in and with user combiners."""
from __future__ import annotations

from numba.core import ir

from ... import language as L
from ...errors import UnsupportedError
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
        rounding = {}
        if kind == "sum":
            mode = lw.static_arg(info, args, "rounding_mode", None)
            rounding = {"rounding": mode.value if mode is not None else None,
                        "ftz": bool(lw.static_arg(info, args, "flush_to_zero", False))}
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
        return lw.em.cast(lw.em.scan(kind, t, axis, rev), dt_of(rty))
    return handler


handles(L.cumsum)(_scan("sum"))
handles(L.cumprod)(_scan("prod"))


def _user_combiner(lw, info, args, rty, is_scan):
    t = lw.tv(lw.arg(args, "t"))
    axis = lw.static_arg(info, args, "axis") % len(t.shape)
    fn = lw.static(args["fn"])
    ident = lw.static_arg(info, args, "identity")
    d = t.dtype
    elem_nb = lw.tk.subfunctions
    sub = None
    for (tf, argtys), tk in elem_nb.items():
        if tf is fn or getattr(tf, "py_func", None) is getattr(fn, "py_func", fn):
            sub = tk
            break
    if sub is None:
        raise lw.error("internal error: the combiner of tile.reduce/tile.scan was not typed")
    ident_attr = lw.em._typed_identity(ident, d)
    if is_scan:
        op = lw.b.scan([t.value], axis, [ident_attr],
                       reverse=lw.static_arg(info, args, "reverse", False))
    else:
        op = lw.b.reduce([t.value], axis, [ident_attr])
    a, b = op.regions[0].args
    with lw.b.at(op.regions[0]):
        r = _inline_combiner(lw, sub, [TV(a, d), TV(b, d)])
        lw.b.yield_([lw.em.cast(r, d).value])
    res = TV(op.results[0], d)
    if not is_scan and lw.static_arg(info, args, "keepdims", False):
        res = lw.em.keep_dim(res, t.shape, axis)
    return lw.em.cast(res, dt_of(rty))


def _inline_combiner(lw, sub, arg_tvs) -> TV:
    """Lower a typed combiner function (straight-line code) with ``arg_tvs`` as its arguments."""
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
                               "code (no if/for/while)", UnsupportedError)
            for stmt in node.stmts:         # Block statements never include the return
                lw.stmt(stmt)
        ret = [s for blk in sub.func_ir.blocks.values() for s in blk.body
               if isinstance(s, ir.Return)]
        return lw.tv(lw.value(ret[0].value), arg_tvs[0].dtype)
    finally:
        lw.env, lw.typemap, lw.calltypes, lw.tk = saved


handles(L.reduce)(lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, False))
handles(L.scan)(lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, True))
