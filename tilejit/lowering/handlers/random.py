"""Philox-4x32-10 counter-based random numbers (``tile.rand`` and friends).

One definition of the stream: ``tilejit.api.rand``/``randn`` run kernels that call these (see
``tilejit/_kernels/random.py``). Each round multiplies two counter words by the Philox constants
in 32 bits, the high halves coming from ``mulhii``; the key advances by the Weyl constants.
"""
from __future__ import annotations

import math

from ... import dtypes as D
from ... import language as L
from ..emit import TV, WeakParamTV
from . import handles

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10
TWO_POW_M24 = 1.0 / 16777216.0
TWO_PI = 2 * math.pi


def _words(em, v: TV, shape, is_seed: bool = False):
    """The low and high 32-bit words of integer ``v`` (as 64 bits), broadcast to ``shape``. A
    seed passed as a Python int is converted into uint64, so the call refuses a negative one,
    as ``api.rand`` does."""
    weak_seed = is_seed and type(v) is WeakParamTV
    wide = D.uint64 if weak_seed or not v.dtype.is_signed else D.int64
    v64 = em.broadcast(em.cast(v, wide), shape)
    v64 = TV(v64.value, D.uint64)
    lo = em.cast(v64, D.uint32)
    hi = em.cast(em.binary(">>", v64, em.const(32, D.uint64, shape), D.uint64), D.uint32)
    return lo, hi


def philox(em, seed: TV, offsets: TV):
    """The four uint32 words of Philox-4x32-10 for counters ``(offsets, 0, 0)``, key ``seed``."""
    shape = offsets.shape
    c0, c1 = _words(em, offsets, shape)
    c2 = c3 = em.const(0, D.uint32, shape)
    k0, k1 = _words(em, seed, shape, is_seed=True)
    u32 = D.uint32

    def mul(a, m):
        mc = em.const(m, u32, shape)
        return TV(em.b.binary("mulhii", a.value, mc.value), u32), em.binary("*", a, mc, u32)

    for r in range(ROUNDS):
        hi0, lo0 = mul(c0, M0)
        hi1, lo1 = mul(c2, M1)
        c0, c1, c2, c3 = (em.binary("^", em.binary("^", hi1, c1, u32), k0, u32), lo1,
                          em.binary("^", em.binary("^", hi0, c3, u32), k1, u32), lo0)
        if r < ROUNDS - 1:
            k0 = em.binary("+", k0, em.const(W0, u32, shape), u32)
            k1 = em.binary("+", k1, em.const(W1, u32, shape), u32)
    return c0, c1, c2, c3


def uniform24(em, word: TV, plus_one: bool = False) -> TV:
    """``(word >> 8) * 2**-24`` in float32 (``+ 1`` first: (0, 1] instead of [0, 1))."""
    top = em.cast(em.binary(">>", word, em.const(8, D.uint32, word.shape), D.uint32), D.float32)
    if plus_one:
        top = em.binary("+", top, em.const(1.0, D.float32, word.shape), D.float32)
    return em.binary("*", top, em.const(TWO_POW_M24, D.float32, word.shape), D.float32)


def _inputs(lw, args):
    return lw.tv(lw.arg(args, "seed")), lw.tv(lw.arg(args, "offsets"))


@handles(L.randint4x)
def _randint4x(lw, info, args, rty):
    return philox(lw.em, *_inputs(lw, args))


@handles(L.randint)
def _randint(lw, info, args, rty):
    return philox(lw.em, *_inputs(lw, args))[0]


@handles(L.rand)
def _rand(lw, info, args, rty):
    return uniform24(lw.em, philox(lw.em, *_inputs(lw, args))[0])


@handles(L.randn)
def _randn(lw, info, args, rty):
    em = lw.em
    r0, r1, _, _ = philox(em, *_inputs(lw, args))
    f32 = D.float32
    u1 = uniform24(em, r0, plus_one=True)                 # (0, 1]: the log is finite
    u2 = uniform24(em, r1)
    radius = em.math("sqrt", em.binary("*", em.const(-2.0, f32, u1.shape), em.math("log", u1), f32))
    angle = em.math("cos", em.binary("*", em.const(TWO_PI, f32, u2.shape), u2, f32))
    return em.binary("*", radius, angle, f32)
