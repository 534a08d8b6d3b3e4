"""The order in which the simulator runs tile blocks (``TILEJIT_SIM_SCHEDULE``).

* ``serial`` (the default): one block after another, x fastest, then y, then z.
* ``shuffle``: one block after another, in a random order seeded by ``TILEJIT_SIM_SEED``.
* ``interleave``: up to :data:`WIDTH` blocks at once, as coroutines that switch at every memory
  operation (the next block is drawn at random from the seed), with memory effects ordered only
  as far as their tokens require (:mod:`.weak_memory`). A missing token edge, or a race between
  blocks, then gives a wrong result on the CPU.

The interleave coroutines are threads that pass one baton: only the thread holding it runs, so a
run is deterministic for a seed. A block that spins (a lock held by another block) lets the
others run at each memory operation. A block *repeats* when an operation accesses the same
addresses and sees (or writes) the same values as it did before, with no memory changed and no
block finished in between. When every running block has repeated :data:`STEP_LIMIT` times,
they all wait for something no block will do: the launch stops with
:class:`SimulatorHangError` instead of hanging. (A block that works through new data never
repeats, however long it runs.)

Under ``serial`` and ``shuffle`` one block runs at a time, so nothing but the block itself can
end its spin: :class:`SpinWatch` applies the same rule to that block's memory operations inside
``loop`` ops (Python's ``while``: the only loops that need not end), at no cost to kernels
without them.
"""
from __future__ import annotations

import random
import threading
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np

from .errors import KernelFault, SimulatorHangError
from .registry import LAUNCH
from .weak_memory import MEMORY_OPS, Agent, WeakMemory, _fingerprint

WIDTH = 16            # blocks resident at once (a GPU runs a limited number too)
STEP_LIMIT = 10_000   # repeated accesses of every running block: a hang
SEEN_LIMIT = 100_000  # distinct accesses a serial block's hang check remembers


def block_order(grid3, schedule: str, seed: int) -> Iterable[tuple]:
    """The tile blocks of ``grid3`` in the order ``schedule`` starts them (an iterator for
    ``serial``, so that a large grid costs no list)."""
    gx, gy, gz = grid3
    blocks = ((np.int32(x), np.int32(y), np.int32(z))
              for z in range(gz) for y in range(gy) for x in range(gx))
    if schedule == "serial":
        return blocks
    blocks = list(blocks)
    random.Random(seed).shuffle(blocks)
    return blocks


class _Abort(BaseException):
    """Unwinds the other blocks' threads after one block failed."""


class Interleaver:
    """Runs ``run_block(block_id)`` for every block, interleaved at memory operations."""

    def __init__(self, run_block: Callable, blocks: Sequence[tuple], seed: int, memory):
        self.run_block = run_block
        self.queue = list(reversed(blocks))
        self.rng = random.Random(seed)
        self.wm = WeakMemory(memory, self)
        n = min(WIDTH, len(blocks))
        self.batons = [threading.Semaphore(0) for _ in range(n)]
        self.agents: List[Optional[Agent]] = [None] * n
        self.live = list(range(n))          # workers that may still run a block
        self.me = 0                         # the worker holding the baton
        self.error: Optional[BaseException] = None
        self.abort = False
        self.done = threading.Event()

    # --- driver (the launching thread) ------------------------------------------------------------
    def run(self) -> None:
        if not self.batons:
            return
        threads = [threading.Thread(target=self._worker, args=(w,), daemon=True,
                                    name=f"tilejit-sim-block-{w}") for w in range(len(self.batons))]
        for t in threads:
            t.start()
        self.batons[0].release()
        try:
            while not self.done.wait(0.1):
                pass
        except BaseException:               # Ctrl-C while blocks run: stop them all
            self._abort_all()
            raise
        finally:
            for t in threads:
                t.join()
        if self.error is not None:
            raise self.error

    def _abort_all(self) -> None:
        self.abort = True
        for b in self.batons:
            b.release()

    # --- workers ---------------------------------------------------------------------------------
    def _worker(self, w: int) -> None:
        self.batons[w].acquire()
        try:
            if self.abort:
                raise _Abort()
            with np.errstate(all="ignore"):     # a new thread has NumPy's default error state
                while self.queue:
                    agent = self.agents[w] = Agent(self.queue.pop(), self.wm.clock)
                    self.wm.current = agent
                    self.run_block(agent.block)
                    # the block's buffered stores become visible at some point after its last
                    # operation: another block may run first
                    self.wm.progress += 1
                    self.step()
                    self.wm.finish(agent)
                    self.agents[w] = None
                    starts = [a.start for a in self.agents if a is not None]
                    self.wm.trim(min(starts) if starts else self.wm.clock)
        except _Abort:
            return
        except BaseException as e:           # the first failure ends the launch
            if self.error is None:
                self.error = e
            self._abort_all()
            self.done.set()
            return
        self.live.remove(w)
        if self.live:
            self._hand_to(self.rng.choice(self.live))
        else:
            self.done.set()

    def _hand_to(self, w: int) -> None:
        self.me = w
        self.batons[w].release()

    def step(self) -> None:
        """A switch point (before every memory operation): maybe let another block run."""
        wm = self.wm
        me = self.me
        nxt = self.rng.choice(self.live)
        if nxt == me:
            return
        self._hand_to(nxt)
        self.batons[me].acquire()
        if self.abort:
            raise _Abort()
        self.me = me
        wm.current = self.agents[me]

    def account(self, access) -> None:
        """After a memory operation of the running block: ``access`` identifies the operation,
        its addresses and values; a repeat since the last progress counts towards a hang."""
        agent = self.agents[self.me]
        p = self.wm.progress
        if agent.epoch != p:
            agent.epoch, agent.idle = p, 0
            agent.seen.clear()
        if access not in agent.seen:
            agent.seen.add(access)
            return
        agent.idle += 1
        if agent.idle > STEP_LIMIT and self._all_stuck():
            raise KernelFault(self._hang_message(), cls=SimulatorHangError)

    def _all_stuck(self) -> bool:
        """Whether every running block repeated STEP_LIMIT accesses since the last progress
        (blocks not started yet cannot run before a running one ends)."""
        p = self.wm.progress
        return all(a.epoch == p and a.idle > STEP_LIMIT for a in self.agents if a is not None)

    def _hang_message(self) -> str:
        running = [tuple(int(i) for i in a.block) for a in self.agents if a is not None]
        return (f"TILEJIT_SIM_SCHEDULE=interleave: the running tile blocks {running} each "
                f"repeated {STEP_LIMIT} memory operations (same addresses, same values) while no "
                f"memory changed and no block finished: they look stuck (spinning on a lock no block gives back, on a flag no block "
                f"sets, or on a weak load, which may read a stale value forever: spin with an "
                f"atomic or memory_order=ACQUIRE)")


class SpinWatch:
    """The launch's memory under ``serial``/``shuffle`` for a kernel with ``loop`` ops: it
    passes every access through, and for the memory ops inside loops (:func:`spin_form`) notes
    what they touched and whether a store changed memory, for the hang rule of the module
    docstring applied to the one running block."""

    def __init__(self, memory, schedule: str):
        self.mem = memory
        self.schedule = schedule
        self.watching = False           # a memory op inside a loop is running
        self.access = 0                 # its fingerprint: addresses and values
        self.progress = 0               # memory changes and blocks started
        self.epoch = -1
        self.seen: set = set()
        self.idle = 0

    def __getattr__(self, name):
        return getattr(self.mem, name)

    def block_started(self) -> None:
        self.progress += 1

    def load(self, addrs, np_dtype, mask=None, other=0):
        out = self.mem.load(addrs, np_dtype, mask=mask, other=other)
        if self.watching:
            self.access = _fingerprint(addrs, out)
        return out

    def store(self, addrs, values, np_dtype, mask=None) -> None:
        if not self.watching:           # outside loops a store cannot be part of a spin
            self.mem.store(addrs, values, np_dtype, mask=mask)
            self.progress += 1
            return
        before = self.mem.load(addrs, np_dtype, mask=mask)
        self.mem.store(addrs, values, np_dtype, mask=mask)
        if self.mem.load(addrs, np_dtype, mask=mask).tobytes() != before.tobytes():
            self.progress += 1
        self.access = _fingerprint(addrs, values)

    def account(self, key) -> None:
        """After a memory op inside a loop: a repeat since the last progress counts towards a
        hang (the ``seen`` set is bounded: a block that keeps reading new data never repeats)."""
        if self.epoch != self.progress:
            self.epoch, self.idle = self.progress, 0
            self.seen.clear()
        access = (key, self.access)
        if access not in self.seen:
            if len(self.seen) < SEEN_LIMIT:
                self.seen.add(access)
            return
        self.idle += 1
        if self.idle > STEP_LIMIT:
            raise KernelFault(
                f"TILEJIT_SIM_SCHEDULE={self.schedule}: the tile block repeated {STEP_LIMIT} "
                f"memory operations (same addresses, same values) in a loop while no memory "
                f"changed: it is stuck, spinning on a lock no block gives back or a flag no "
                f"block sets. This schedule runs one block at a time, so a block waiting for "
                f"another block of the launch waits forever here; TILEJIT_SIM_SCHEDULE="
                f"interleave runs blocks side by side", cls=SimulatorHangError)


def spin_form(op, inner):
    """``inner``, the runner of memory op ``op`` inside a loop, watched by the launch's
    :class:`SpinWatch`."""
    key = id(op)

    def run(env):
        watch = env[LAUNCH].memory
        watch.watching = True
        try:
            sig = inner(env)
        finally:
            watch.watching = False
        watch.account(key)
        return sig
    return run


def run_interleaved(run_block: Callable, blocks: Sequence[tuple], seed: int, memory) -> None:
    Interleaver(run_block, blocks, seed, memory).run()


__all__ = ["block_order", "run_interleaved", "Interleaver", "SpinWatch", "spin_form",
           "MEMORY_OPS", "WIDTH", "STEP_LIMIT"]
