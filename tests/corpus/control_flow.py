"""One kernel per control-flow shape (structurize tests check their region trees by ``shape``).

All kernels work on 1-D float32 data in tiles of ``TILE`` elements; the scalar control flow
depends on the block index and on scalar arguments so that blocks take different paths.
"""
import numpy as np

import tilejit as tile

from . import Case, In, Out, Scalar, rand

TILE = 64
N = 1000          # not a multiple of TILE


def cf_if_elif_else(z, x, n):
    b = tile.bid(0)
    t = tile.load_tile_like(x, z)
    if b % 3 == 0:
        t = t * 2.0
    elif b % 3 == 1:
        t = t + n
    else:
        t = -t
    z.store(t)


def cf_for_const(z, x):
    t = tile.load_tile_like(x, z)
    acc = tile.zeros(z.shape, tile.float32)
    for i in range(4):
        acc = acc + t * i
    z.store(acc)


def cf_for_runtime(z, x, lo, hi):
    t = tile.load_tile_like(x, z)
    acc = t
    for i in range(lo, hi + tile.bid(0) % 4):
        acc = acc * 0.5 + i
    z.store(acc)


def cf_for_negative_step(z, x, n):
    t = tile.load_tile_like(x, z)
    acc = tile.zeros(z.shape, tile.float32)
    for i in range(n - 1, -1, -1):
        acc = acc * 2.0 + t + i
    z.store(acc)


def cf_for_runtime_step(z, x, step):
    t = tile.load_tile_like(x, z)
    acc = tile.zeros(z.shape, tile.float32)
    for i in range(0, 12, step):
        acc = acc + t * i
    z.store(acc)


def cf_while(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while i < n + tile.bid(0) % 3:
        t = t * 0.5 + 1.0
        i += 1
    z.store(t)


def cf_while_continue(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        t = t + i
    z.store(t)


def cf_for_break(z, x, n):
    t = tile.load_tile_like(x, z)
    b = tile.bid(0)
    for i in range(n):
        if i > b % 5:
            break
        t = t + 1.0
    z.store(t)


def cf_for_continue(z, x, n):
    t = tile.load_tile_like(x, z)
    for i in range(n):
        if i % 3 == 0:
            continue
        t = t + i
    z.store(t)


def cf_nested_break_continue(z, x, n):
    t = tile.load_tile_like(x, z)
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 2 == 0:
                continue
            t = t + j
    z.store(t)


def cf_early_return(z, x):
    t = tile.load_tile_like(x, z)
    z.store(t)
    if tile.bid(0) % 2 == 1:
        return
    z.store(t * 10.0)


def cf_return_in_loop(z, x, n):
    t = tile.load_tile_like(x, z)
    b = tile.bid(0)
    for i in range(n):
        if i == b % 4:
            z.store(t + 100.0)
            return
        t = t + 1.0
    z.store(t)


def cf_constexpr_if(z, x, MODE: tile.Constant[int]):
    t = tile.load_tile_like(x, z)
    if MODE == 0:
        t = t + 1.0
    elif MODE == 1:
        t = t * t
    else:
        t = t.this_attribute_does_not_exist    # never typed for MODE in (0, 1)
    z.store(t)


def cf_short_circuit(z, x, n, m):
    t = tile.load_tile_like(x, z)
    b = tile.bid(0)
    if b > n and b < m:
        t = t * 3.0
    if b == 0 or b == 2:
        t = t - 1.0
    z.store(t)


def cf_while_true_break(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while True:
        i += 1
        if i > n:
            break
        t = t + 2.0
    z.store(t)


# --------------------------------------------------------------------------------------------------
def _blocks(x):
    for b in range(-(-x.shape[0] // TILE)):
        yield b, slice(b * TILE, min((b + 1) * TILE, x.shape[0]))


def _ref_if(z, x, n):
    out = np.empty_like(x)
    for b, s in _blocks(x):
        out[s] = x[s] * 2 if b % 3 == 0 else (x[s] + n if b % 3 == 1 else -x[s])
    return {"z": out.astype(np.float32)}


def _ref_for_runtime(z, x, lo, hi):
    out = np.empty_like(x)
    for b, s in _blocks(x):
        acc = x[s].copy()
        for i in range(lo, hi + b % 4):
            acc = acc * np.float32(0.5) + np.float32(i)
        out[s] = acc
    return {"z": out}


def _ref_neg(z, x, n):
    acc = np.zeros_like(x)
    for i in range(n - 1, -1, -1):
        acc = acc * np.float32(2) + x + np.float32(i)
    return {"z": acc}


def _ref_step(z, x, step):
    acc = np.zeros_like(x)
    for i in range(0, 12, step):
        acc = acc + x * np.float32(i)
    return {"z": acc}


def _ref_while(z, x, n):
    out = np.empty_like(x)
    for b, s in _blocks(x):
        t = x[s].copy()
        for _ in range(max(0, n + b % 3)):
            t = t * np.float32(0.5) + np.float32(1)
        out[s] = t
    return {"z": out}


def _ref_while_continue(z, x, n):
    return {"z": (x + np.float32(sum(i for i in range(1, n + 1) if i % 2))).astype(np.float32)}


def _ref_break(z, x, n):
    out = np.empty_like(x)
    for b, s in _blocks(x):
        out[s] = x[s] + np.float32(min(n, b % 5 + 1))
    return {"z": out}


def _ref_continue(z, x, n):
    return {"z": (x + np.float32(sum(i for i in range(n) if i % 3))).astype(np.float32)}


def _ref_nested(z, x, n):
    s = sum(j for i in range(n) for j in range(i + 1) if (i + j) % 2)
    return {"z": (x + np.float32(s)).astype(np.float32)}


def _ref_early(z, x):
    out = x.copy()
    for b, s in _blocks(x):
        if b % 2 == 0:
            out[s] = x[s] * np.float32(10)
    return {"z": out}


def _ref_ret_loop(z, x, n):
    out = np.empty_like(x)
    for b, s in _blocks(x):
        k = b % 4
        out[s] = x[s] + np.float32(k + 100) if k < n else x[s] + np.float32(n)
    return {"z": out}


def _ref_constexpr(z, x, MODE):
    return {"z": x + 1 if MODE == 0 else x * x}


def _ref_short(z, x, n, m):
    out = x.copy()
    for b, s in _blocks(x):
        t = x[s]
        if n < b < m:
            t = t * np.float32(3)
        if b in (0, 2):
            t = t - np.float32(1)
        out[s] = t
    return {"z": out}


def _in(r):
    return rand(r, (N,))


def _z():
    return Out(np.zeros(N, np.float32), (TILE,))


def _case(name, kernel, shape, ref, extra=None, constants=None, tol=1e-5):
    def make(r):
        d = dict(z=_z(), x=In(_in(r)))
        d.update({k: Scalar(v) for k, v in (extra or {}).items()})
        return d
    return Case(name, kernel, make, ref, constants=constants or {}, rtol=tol, atol=tol,
                shape=shape)


CASES = [
    _case("cf_if_elif_else", cf_if_elif_else, "if_elif_else", _ref_if, {"n": 3}),
    _case("cf_for_const", cf_for_const, "for_const",
          lambda z, x: {"z": (x * np.float32(6)).astype(np.float32)}),
    _case("cf_for_runtime", cf_for_runtime, "for_runtime_bound", _ref_for_runtime,
          {"lo": 2, "hi": 5}),
    _case("cf_for_negative_step", cf_for_negative_step, "for_negative_step", _ref_neg, {"n": 5},
          tol=1e-4),
    _case("cf_for_runtime_step", cf_for_runtime_step, "for_runtime_step", _ref_step,
          {"step": 5}),
    _case("cf_while", cf_while, "while", _ref_while, {"n": 3}),
    _case("cf_while_continue", cf_while_continue, "while_continue", _ref_while_continue,
          {"n": 7}),
    _case("cf_for_break", cf_for_break, "for_break", _ref_break, {"n": 3}),
    _case("cf_for_continue", cf_for_continue, "for_continue", _ref_continue, {"n": 10}),
    _case("cf_nested_break_continue", cf_nested_break_continue, "nested_break_continue",
          _ref_nested, {"n": 5}),
    _case("cf_early_return", cf_early_return, "early_return", _ref_early),
    _case("cf_return_in_loop", cf_return_in_loop, "return_in_loop", _ref_ret_loop, {"n": 3}),
    _case("cf_constexpr_if", cf_constexpr_if, "constexpr_if", _ref_constexpr,
          constants={"MODE": 1}),
    _case("cf_short_circuit", cf_short_circuit, "short_circuit", _ref_short, {"n": 3, "m": 9}),
    _case("cf_while_true_break", cf_while_true_break, "while_true_break",
          lambda z, x, n: {"z": x + np.float32(2 * n)}, {"n": 4}),
]
