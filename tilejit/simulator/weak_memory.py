"""Weak memory for the ``interleave`` schedule: memory effects ordered only by their tokens.

Tile IR orders a block's loads, stores and atomics only through memory tokens, not by program
order. Under ``TILEJIT_SIM_SCHEDULE=interleave`` the simulator uses that freedom against the
kernel, so that a missing token edge gives a wrong result on the CPU:

* a **weak store** is buffered in its block and performed (made visible to every block) only
  when an operation whose token depends on it needs it, or when the block ends: a store that a
  release does not wait for becomes visible after the release;
* a **weak load** reads memory *as it was* when its token's last dependency was performed (or
  when its block started): a load that does not depend on an acquire may read values older than
  the acquire;
* **atomics** and **ordered** (relaxed, acquire, release) loads and stores are performed at their
  place in the block, after every buffered store their token depends on.

Tokens become :class:`Tok` values (a time and the operations they still wait for); the global
clock counts performed writes, and an undo log of the bytes each write changed gives the memory
of any earlier time. :class:`WeakMemory` is the launch's ``memory``: the ``sem_*`` runners call
its ``load``/``store`` as usual, and the wrapper :func:`wrap` tells it, before each memory op,
which of the three modes applies. :mod:`.schedule` runs the blocks: the wrapper calls its
``step`` (a switch point) before each memory op and its ``account`` (the hang check) after.
"""
from __future__ import annotations

import bisect
from typing import List, Optional

import numpy as np

from .registry import LAUNCH, attr

NOW, EARLY, BUFFER = "now", "early", "buffer"

# ops whose effect the interleave schedule orders by tokens: name -> kind
MEMORY_OPS = {"load_view_tko": "load", "load_ptr_tko": "load", "store_view_tko": "store",
              "store_ptr_tko": "store", "atomic_rmw_tko": "atomic", "atomic_cas_tko": "atomic"}


class Tok:
    """A memory token: everything it depends on was performed by ``time`` (a clock value), once
    ``deps`` (tokens and buffered stores not yet looked at) is None."""

    __slots__ = ("time", "deps")

    def __init__(self, time: int, deps=None):
        self.time = time
        self.deps = deps


class PendingStore:
    """A weak store waiting in its block's buffer (``time`` is None until it is performed)."""

    __slots__ = ("dep", "addrs", "values", "dtype", "mask", "time")

    def __init__(self, dep, addrs, values, dtype, mask):
        self.dep = dep
        self.addrs = addrs
        self.values = values
        self.dtype = dtype
        self.mask = mask
        self.time: Optional[int] = None


class Agent:
    """One running tile block: when it started and its buffered stores (in program order).
    For the hang check (:mod:`.schedule`): the accesses it made since the launch last made
    progress (``seen``, in the progress epoch ``epoch``) and how many it repeated (``idle``)."""

    __slots__ = ("block", "start", "buffer", "epoch", "seen", "idle")

    def __init__(self, block, start: int):
        self.block = block
        self.start = start
        self.buffer: List[PendingStore] = []
        self.epoch = -1
        self.seen: set = set()
        self.idle = 0


def _fingerprint(addrs, values) -> tuple:
    """Which elements an access touched and the values it saw or wrote (for the hang check)."""
    a = np.asarray(addrs)
    return (int(a.flat[0]) if a.size else 0, a.size, hash(np.asarray(values).tobytes()))


def _byte_addrs(addrs: np.ndarray, itemsize: int) -> np.ndarray:
    return (addrs.reshape(-1, 1) + np.arange(itemsize, dtype=np.int64)).reshape(-1)


class WeakMemory:
    """The memory of one interleaved launch (see the module docstring). Only the block holding
    the schedule's baton touches it, so it needs no lock."""

    def __init__(self, memory, scheduler=None):
        self.mem = memory
        self.scheduler = scheduler
        self.clock = 0                  # writes performed so far
        self.log: list = []             # (sorted byte addresses, their bytes before) per write
        self.log_times: List[int] = []
        self.current: Optional[Agent] = None
        self.mode = NOW
        self.as_of = 0
        self.dep = None
        self.last: Optional[PendingStore] = None
        self.progress = 0               # writes that changed memory, plus finished blocks
        self.access = 0                 # a fingerprint of the last access: addresses and values

    # --- the interface of SimulatedMemory that the sem_* runners use ----------------------------
    def load(self, addrs, np_dtype, mask=None, other=0) -> np.ndarray:
        if self.mode is EARLY and self.as_of < self.clock:
            out = self._load_as_of(addrs, np.dtype(np_dtype), mask, other, self.as_of)
        else:
            out = self.mem.load(addrs, np_dtype, mask=mask, other=other)
        self.access = _fingerprint(addrs, out)
        return out

    def store(self, addrs, values, np_dtype, mask=None) -> None:
        self.access = _fingerprint(addrs, values)
        if self.mode is BUFFER:
            dt = np.dtype(np_dtype)
            addrs = np.array(addrs, dtype=np.int64)
            vals = np.broadcast_to(np.asarray(values).astype(dt, copy=False), addrs.shape).copy()
            m = None if mask is None else np.broadcast_to(np.asarray(mask, bool), addrs.shape).copy()
            self.mem.load(addrs, dt, mask=m)           # a bad address faults here, not later
            rec = PendingStore(self.dep, addrs, vals, dt, m)
            self.current.buffer.append(rec)
            self.last = rec
            return
        self._write(addrs, values, np.dtype(np_dtype), mask)

    # --- performing -------------------------------------------------------------------------
    def _write(self, addrs, values, dt: np.dtype, mask) -> int:
        """Write now, remembering the bytes it changes; returns the write's time."""
        addrs = np.asarray(addrs, dtype=np.int64)
        lanes = addrs.reshape(-1) if mask is None else addrs.reshape(-1)[np.flatnonzero(
            np.broadcast_to(np.asarray(mask, bool), addrs.shape))]
        byte_addrs = np.unique(_byte_addrs(lanes, dt.itemsize))
        before = self.mem.load(byte_addrs, np.uint8) if byte_addrs.size else byte_addrs
        self.mem.store(addrs, values, dt, mask=mask)
        self.clock += 1
        if byte_addrs.size:
            after = self.mem.load(byte_addrs, np.uint8)
            diff = before != after
            if diff.any():
                self.log.append((byte_addrs[diff], before[diff]))
                self.log_times.append(self.clock)
                self.progress += 1
        return self.clock

    def _load_as_of(self, addrs, dt: np.dtype, mask, other, t: int) -> np.ndarray:
        """``load`` as memory was at time ``t``: the current values with the bytes of every later
        write put back (the oldest later write's saved bytes win)."""
        cur = self.mem.load(addrs, dt, mask=mask, other=other)       # checks the addresses
        first = bisect.bisect_right(self.log_times, t)
        if first == len(self.log_times):
            return cur
        addrs = np.asarray(addrs, dtype=np.int64)
        flat = cur.reshape(-1).copy()
        lanes = np.arange(flat.size) if mask is None else np.flatnonzero(
            np.broadcast_to(np.asarray(mask, bool), addrs.shape))
        want = _byte_addrs(addrs.reshape(-1)[lanes], dt.itemsize)
        raw = flat[lanes].view(np.uint8).copy()
        if not want.size:
            return cur
        lo, hi = want.min(), want.max()
        for ba, old in reversed(self.log[first:]):
            if ba[-1] < lo or ba[0] > hi:               # a write elsewhere
                continue
            pos = np.minimum(np.searchsorted(ba, want), ba.size - 1)
            hit = ba[pos] == want
            raw[hit] = old[pos[hit]]
        flat[lanes] = raw.view(dt)
        return flat.reshape(cur.shape)

    def resolve(self, tok) -> int:
        """Perform every buffered store ``tok`` depends on; the time by which all of its
        dependencies were performed (never before the running block started)."""
        start = self.current.start
        if tok is None:
            return start
        stack = [(tok, False)]
        while stack:
            node, expanded = stack.pop()
            if isinstance(node, Tok):
                if node.deps is None:
                    continue
                if expanded:
                    node.time = max([node.time] + [d.time for d in node.deps])
                    node.deps = None
                else:
                    stack.append((node, True))
                    stack.extend((d, False) for d in node.deps)
            elif node.time is None:                     # a PendingStore
                if expanded:
                    self._perform(node)
                else:
                    stack.append((node, True))
                    if node.dep is not None:
                        stack.append((node.dep, False))
        return max(tok.time, start)

    def _perform(self, rec: PendingStore) -> None:
        rec.time = self._write(rec.addrs, rec.values, rec.dtype, rec.mask)
        rec.addrs = rec.values = rec.mask = rec.dep = None

    def finish(self, agent: Agent) -> None:
        """The end of a block: its remaining buffered stores become visible, in program order."""
        self.current = agent
        for rec in agent.buffer:
            if rec.time is None:
                self.resolve(Tok(0, (rec,)))
        agent.buffer.clear()

    def trim(self, oldest_start: int) -> None:
        """Forget writes no running block can read back to (all before ``oldest_start``)."""
        k = bisect.bisect_right(self.log_times, oldest_start)
        if k:
            del self.log[:k]
            del self.log_times[:k]


# --- the op wrappers -------------------------------------------------------------------------------
def wrap(op, c, inner):
    """The interleave form of memory op ``op`` whose plain runner is ``inner``: a switch point
    of the schedule, then the access in the mode its ordering and token allow."""
    kind = MEMORY_OPS[op.name]
    ordering = attr(op, "memory_ordering_semantics", "weak")
    tok_in = op.operand("token")
    tin = None if tok_in is None else c.slot(tok_in)
    tout = c.slot(op.results[-1])

    key = id(op)

    def run(env):
        wm: WeakMemory = env[LAUNCH].memory
        wm.scheduler.step()
        tok = None if tin is None else env[tin]
        if kind == "load" and ordering == "weak":
            wm.mode, wm.as_of = EARLY, wm.resolve(tok)
            try:
                sig = inner(env)
            finally:
                wm.mode = NOW
            env[tout] = Tok(wm.as_of)
        elif kind == "store" and ordering == "weak":
            wm.mode, wm.dep, wm.last = BUFFER, tok, None
            try:
                sig = inner(env)
            finally:
                wm.mode, wm.dep = NOW, None
            if wm.last is not None:
                env[tout] = Tok(0, (wm.last,))
            else:                       # nothing stored (every lane masked off)
                env[tout] = tok if tok is not None else Tok(wm.current.start)
        else:
            wm.resolve(tok)
            sig = inner(env)
            env[tout] = Tok(wm.clock)
        wm.scheduler.account((key, wm.access))
        return sig
    return run


def _make_token(op, c):
    o = c.slot(op.result)

    def run(env):
        env[o] = Tok(env[LAUNCH].memory.current.start)
    return run


def _join_tokens(op, c):
    ins = [c.slot(v) for v in op.operands]
    o = c.slot(op.result)

    def run(env):
        env[o] = Tok(0, tuple(env[s] for s in ins if env[s] is not None))
    return run


def _print(op, c, inner):
    """``print_tko`` orders nothing here: its result token is its input token."""
    tok_in = op.operand("token")
    tin = None if tok_in is None else c.slot(tok_in)
    tout = c.slot(op.results[0]) if op.results else None

    def run(env):
        sig = inner(env)
        if tout is not None:
            env[tout] = None if tin is None else env[tin]
        return sig
    return run


TOKEN_OPS = {"make_token": _make_token, "join_tokens": _join_tokens}


def interleave_form(op, c, inner):
    """``inner`` (the op's plain runner, or None) in its interleave form, or ``inner`` itself."""
    if op.name in MEMORY_OPS:
        return wrap(op, c, inner)
    if op.name in TOKEN_OPS:
        return TOKEN_OPS[op.name](op, c)
    if op.name == "print_tko" and inner is not None:
        return _print(op, c, inner)
    return inner


__all__ = ["WeakMemory", "Agent", "Tok", "interleave_form", "MEMORY_OPS"]
