"""Debugging and assumptions: printf, assert_, static_assert, assume_divisible_by."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ...tileir import attrs as A
from ..emit import TV
from . import handles


# --- misc --------------------------------------------------------------------------------------
@handles(L.printf, "print")
def _printf(lw, info, args, rty):
    if info.op == "print":
        vals = [lw.value(v) for v in (args.get("args") or ())] if "args" in args else \
            [lw.value(v) for v in args.values()]
        flat = []
        for v in vals:
            flat.extend(v if isinstance(v, tuple) else (v,))
        lw._printf(" ".join(lw._fmt_for(v) for v in flat) + "\n", flat)
        return None
    fmt = lw.static_arg(info, args, "fmt")
    vals = lw.arg(args, "args") or ()
    if not isinstance(vals, tuple):
        vals = (vals,)
    # a constant argument (``printf("%f", 3.14)``) still fills its conversion: a value of the
    # type a Python constant has in a kernel (bool and int as integers, float as float32)
    lw._printf(fmt, [v if isinstance(v, TV) else _constant_for_printf(lw, v) for v in vals])
    return None


def _constant_for_printf(lw, v) -> TV:
    if isinstance(v, bool):
        return lw.em.const(int(v), D.int32)
    if isinstance(v, int):
        return lw.em.const(v, D.int64 if v < 2 ** 63 else D.uint64)
    if isinstance(v, float):
        return lw.em.const(v, D.float32)
    raise lw.error(f"printf: cannot print {v!r}")


@handles(L.assert_)
def _assert(lw, info, args, rty):
    c = lw.tv(lw.arg(args, "cond"), D.bool_)
    msg = lw.static_arg(info, args, "msg", None) or "assertion failed"
    loc = lw.loc
    if loc is not None:
        msg = f"{msg} ({loc.filename}:{loc.line})"
    lw.b.assert_(c.value, msg)
    return None


@handles(L._static_eval)
def _static_eval(lw, info, args, rty):
    from ...typing import static_eval as se
    from ...typing.templates.misc import static_eval_result
    operands = args["values"]
    names = lw.static_arg(info, args, "names")
    v, _ = static_eval_result(lw.static_arg(info, args, "key"), lw.static_arg(info, args, "src"),
                              names, [lw.type_of(o) for o in operands])

    def unwrap(x):
        if isinstance(x, se.Symbol):             # one of the kernel's variables, as it is
            v = lw.value(operands[x.index])
            for k in x.path:
                v = v[k]
            return v
        return tuple(unwrap(i) for i in x) if isinstance(x, tuple) else x
    return unwrap(v)


@handles(L.static_eval)
def _static_eval_direct(lw, info, args, rty):
    raise lw.error("static_eval() must be used directly")


@handles(L.static_assert)
def _static_assert(lw, info, args, rty):
    return None


@handles(L.assume_divisible_by)
def _assume_div(lw, info, args, rty):
    x = lw.tv(lw.arg(args, "x"))
    d = lw.static_arg(info, args, "d")
    return TV(lw.b.assume(x.value, A.DivBy(int(d))), x.dtype)


@handles(L.static_range, L.static_iter)
def _static_loop(lw, info, args, rty):
    # typing refuses these outside a for loop, and the loops are unrolled before typing
    raise lw.error(f"{info.op} is only a for-loop iterable")
