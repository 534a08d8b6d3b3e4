"""Matrix multiply-accumulate."""
from __future__ import annotations

from ... import dtypes as D
from ... import language as L
from ..emit import TV
from . import dt_of, handles


def _precision(lw, info, args):
    return lw.static_arg(info, args, "input_precision", None)


@handles(L.mma)
def _mma(lw, info, args, rty):
    a, b = lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b"))
    return lw.mma(a, b, lw.tv(lw.arg(args, "acc")), _precision(lw, info, args),
                  fast_acc=lw.static_arg(info, args, "fast_acc", False))


@handles(L.mma_scaled)
def _mma_scaled(lw, info, args, rty):
    a, sa, b, sb, acc = (lw.tv(lw.arg(args, n)) for n in ("a", "a_scale", "b", "b_scale", "acc"))
    em = lw.em
    batch = acc.shape[:-2]
    a, sa = (_to_batch(em, x, batch) for x in (a, sa))
    b, sb = (_to_batch(em, x, batch) for x in (b, sb))
    if _sm(lw.arch) >= 100:                   # Blackwell's block-scaled tensor cores
        return TV(lw.b.mmaf_scaled(a.value, b.value, acc.value, sa.value, sb.value), D.float32)
    # emulation: the scaled fp8/fp4 values are exact in tf32, and so are tf32 products
    return em.mma(em.cast(_scale(em, a, sa, -1), D.tfloat32),
                  em.cast(_scale(em, b, sb, -2), D.tfloat32), acc)


def _sm(arch: str) -> int:
    digits = "".join(ch for ch in arch.split("_")[-1] if ch.isdigit())
    return int(digits) if digits else 0


def _to_batch(em, x: TV, batch) -> TV:
    """``x`` with the batch axis ``batch`` (added or stretched), as mma broadcasts it."""
    if x.shape[:-2] == tuple(batch):
        return x
    x = em.reshape(x, (1,) * (3 - len(x.shape)) + x.shape)
    return em.broadcast(x, tuple(batch) + x.shape[-2:])


def _scale(em, x: TV, s: TV, k_axis: int) -> TV:
    """``x * s`` in float32 with each element of ``s`` repeated over its block along K."""
    block = x.shape[k_axis] // s.shape[k_axis]
    shape = list(s.shape)
    k = len(shape) + k_axis
    wide = shape[:k + 1] + [block] + shape[k + 1:]
    s32 = em.cast(s, D.float32)
    rep = em.broadcast(em.reshape(s32, shape[:k + 1] + [1] + shape[k + 1:]), wide)
    return em.binary("*", em.cast(x, D.float32), em.reshape(rep, x.shape), D.float32)


@handles(L.matmul)
def _matmul(lw, info, args, rty):
    return lw.matmul(lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b")), dt_of(rty),
                     _precision(lw, info, args))
