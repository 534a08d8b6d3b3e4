"""Matrix multiply-accumulate."""
from __future__ import annotations

from ... import language as L
from . import dt_of, handles


def _precision(lw, info, args):
    return lw.static_arg(info, args, "input_precision", None)


@handles(L.mma)
def _mma(lw, info, args, rty):
    a, b = lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b"))
    return lw.mma(a, b, lw.tv(lw.arg(args, "acc")), _precision(lw, info, args))


@handles(L.matmul)
def _matmul(lw, info, args, rty):
    return lw.matmul(lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b")), dt_of(rty),
                     _precision(lw, info, args))
