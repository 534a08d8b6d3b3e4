"""Gathers, scatters and atomics through tiles of pointers.

Masked-off lanes are never accessed (they may hold any address). A masked load without a padding
operand reads 0 in those lanes (undefined in Tile IR). Stores to one address from several lanes
keep the last lane in row-major order (the GPU guarantees no order).

Atomics apply the lanes of one tile in row-major order, as a sequence of device atomics would:
lanes that share an address see each other's updates, and each gets a distinct old value. They are
vectorized: lanes are grouped by address and a segmented log-step scan computes every lane's old
value (``cas``: one vectorized round per duplicate rank). ``addf`` sums duplicates in tree order,
so float rounding can differ from a sequential order (the GPU's order is unspecified as well).
Masked-off lanes return 0 (``rmw``, implementation-defined) or ``cmp`` (``cas``, as specified).
"""
from __future__ import annotations

import numpy as np

from .elements import memory_dtype, storage, uint_of
from .numerics import round_tf32
from .registry import LAUNCH, impl


def to_tile(v, elem):
    """Elements loaded from memory as a tile of ``elem`` (``i1``: bytes != 0; ``tf32``: rounded)."""
    if elem == "i1":
        return v != 0
    if elem == "tf32":
        return round_tf32(v)
    return v


@impl("load_ptr_tko")
def _load_ptr(op, c):
    elem = op.operand("source").type.element.pointee
    mdt = memory_dtype(elem)
    src = c.slot(op.operand("source"))
    mask = op.operand("mask")
    pad = op.operand("paddingValue")
    ms = None if mask is None else c.slot(mask)
    ps = None if pad is None else c.slot(pad)
    o = c.slot(op.results[0])

    def run(env):
        mem = env[LAUNCH].memory
        if ms is None:
            env[o] = to_tile(mem.load(env[src], mdt), elem)
            return
        m = env[ms]
        v = to_tile(mem.load(env[src], mdt, mask=m, other=0), elem)
        if ps is not None:
            v = np.where(m, v, env[ps])
        env[o] = v
    return run


@impl("store_ptr_tko")
def _store_ptr(op, c):
    elem = op.operand("destination").type.element.pointee
    mdt = memory_dtype(elem)
    dst = c.slot(op.operand("destination"))
    val = c.slot(op.operand("value"))
    mask = op.operand("mask")
    ms = None if mask is None else c.slot(mask)

    def run(env):
        env[LAUNCH].memory.store(env[dst], env[val], mdt, mask=None if ms is None else env[ms])
    return run


# --- atomics --------------------------------------------------------------------------------------
def _group(addrs):
    """Stable sort of lanes by address: (order, sorted addrs, group id per lane, group starts)."""
    order = np.argsort(addrs, kind="stable")
    a = addrs[order]
    first = np.empty(a.shape, dtype=bool)
    first[:1] = True
    first[1:] = a[1:] != a[:-1]
    gid = np.cumsum(first) - 1
    return order, a, gid, first


def _segmented_scan(x, gid, fn):
    """Inclusive scan of ``x`` with ``fn(earlier, later)`` restarting where ``gid`` changes."""
    n = x.shape[0]
    counts = np.bincount(gid)
    longest = int(counts.max()) if counts.size else 0
    d = 1
    while d < longest:
        tail = np.arange(d, n)
        same = gid[d:] == gid[:-d]
        upd = fn(x[:-d], x[d:])
        x = x.copy()
        x[tail[same]] = upd[same]
        d *= 2
    return x


def _rmw_fn(mode, dt):
    if mode in ("add", "addf"):
        return np.add
    if mode in ("max", "min"):
        return np.maximum if mode == "max" else np.minimum
    if mode in ("umax", "umin"):
        u = uint_of(dt)
        pick = np.maximum if mode == "umax" else np.minimum
        return lambda a, b: pick(a.view(u), b.view(u)).view(dt)
    if mode in ("and", "or", "xor"):
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[mode]
    if mode == "xchg":
        return None
    raise ValueError(f"unknown atomic op {mode!r}")


def _lanes(ptrs, vals, mask, dt):
    addrs = np.asarray(ptrs, dtype=np.int64).reshape(-1)
    vals = [np.broadcast_to(np.asarray(v).astype(dt, copy=False), np.shape(ptrs)).reshape(-1)
            for v in vals]
    if mask is None:
        lanes = np.arange(addrs.size)
    else:
        lanes = np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)))
    return addrs, vals, lanes


def atomic_rmw(mem, mode, ptrs, arg, mask, dt):
    """Apply one tile of ``mode`` atomics; returns the old values (row-major lane order)."""
    addrs, (vals,), lanes = _lanes(ptrs, [arg], mask, dt)
    fn = _rmw_fn(mode, dt)
    old = np.zeros(addrs.size, dtype=dt)
    if lanes.size:
        order, a, gid, first = _group(addrs[lanes])
        v = vals[lanes][order]
        uniq = a[first]
        cur = mem.load(uniq, dt)                     # faults before anything is written
        last = np.append(np.flatnonzero(first)[1:] - 1, a.size - 1)
        prev = np.empty_like(v)                      # the lane before, within the same address
        prev[1:] = v[:-1]
        if fn is None:                               # xchg: each lane sees its predecessor's value
            before = np.where(first, cur[gid], prev)
            final = v[last]
        else:
            inc = _segmented_scan(v, gid, fn)
            prev[1:] = inc[:-1]
            before = np.where(first, cur[gid], fn(cur[gid], prev))
            final = fn(cur, inc[last])
        old[lanes[order]] = before
        mem.store(uniq, final, dt)
    return old.reshape(np.shape(ptrs))


def atomic_cas(mem, ptrs, cmp, val, mask, dt):
    """One tile of compare-and-swaps (bitwise comparison); returns the old values."""
    addrs, (cmps, vals), lanes = _lanes(ptrs, [cmp, val], mask, dt)
    old = cmps.copy()
    if lanes.size:
        order, a, gid, first = _group(addrs[lanes])
        c_s, v_s = cmps[lanes][order], vals[lanes][order]
        uniq = a[first]
        cur = mem.load(uniq, dt)
        u = uint_of(dt)
        rank = np.arange(a.size) - np.flatnonzero(first)[gid]
        got = np.empty(a.size, dtype=dt)
        for r in range(int(rank.max()) + 1):         # one round per duplicate: lanes in order
            sel = np.flatnonzero(rank == r)
            g = gid[sel]
            now = cur[g]
            got[sel] = now
            hit = now.view(u) == c_s[sel].view(u)
            cur[g] = np.where(hit, v_s[sel], now)
        old[lanes[order]] = got
        mem.store(uniq, cur, dt)
    return old.reshape(np.shape(ptrs))


@impl("atomic_rmw_tko")
def _atomic_rmw(op, c):
    elem = op.operand("pointers").type.element.pointee
    dt = storage(elem)
    mode = op.attrs["mode"]
    p, a = c.slot(op.operand("pointers")), c.slot(op.operand("arg"))
    mask = op.operand("mask")
    ms = None if mask is None else c.slot(mask)
    o = c.slot(op.results[0])

    def run(env):
        env[o] = atomic_rmw(env[LAUNCH].memory, mode, env[p], env[a],
                            None if ms is None else env[ms], dt)
    return run


@impl("atomic_cas_tko")
def _atomic_cas(op, c):
    elem = op.operand("pointers").type.element.pointee
    dt = storage(elem)
    p = c.slot(op.operand("pointers"))
    cm, v = c.slot(op.operand("cmp")), c.slot(op.operand("val"))
    mask = op.operand("mask")
    ms = None if mask is None else c.slot(mask)
    o = c.slot(op.results[0])

    def run(env):
        env[o] = atomic_cas(env[LAUNCH].memory, env[p], env[cm], env[v],
                            None if ms is None else env[ms], dt)
    return run
