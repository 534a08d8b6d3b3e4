"""Kernels whose blocks synchronize through memory (issue 21): shared by the CPU tests (run under
``TILEJIT_SIM_SCHEDULE=interleave``) and the GPU tests (thousands of contending blocks).

Each ``run_*`` helper allocates, launches, and returns what the kernel computed as NumPy arrays;
the tests compare them with exact expectations.
"""
import numpy as np

import tilejit as tile
from tilejit import api

MO = tile.MemoryOrder
ZERO = tile.PaddingMode.ZERO


def make_lock_kernel(acquire=MO.ACQUIRE, release=MO.RELEASE):
    """The spin lock of cuTile's LayerNorm backward: ``acc[bid % locks] += x[bid]`` under lock
    ``bid % locks``, taken with ``acquire`` and given back with ``release`` (a new kernel object
    per call, so each call compiles afresh)."""
    @tile.entry
    def locked_accumulate(acc, locks, x, BN: tile.Constant[int]):
        g = tile.bid(0) % locks.shape[0]
        t = x.load((tile.bid(0), 0), (1, BN))
        while tile.atomic_cas(locks, g, 0, 1, memory_order=acquire) == 1:
            pass
        cur = acc.partition((1, BN)).load((g, 0))
        acc.partition((1, BN)).store((g, 0), cur + t)
        tile.atomic_xchg(locks, g, 0, memory_order=release)
    return locked_accumulate


locked_accumulate = make_lock_kernel()


def lock_args(blocks: int, nlocks: int, bn: int = 16):
    acc = api.zeros((nlocks, bn), tile.float32).sync()
    locks = api.zeros((nlocks,), tile.int32).sync()
    x = api.ones((blocks, bn), tile.float32).sync()
    return acc, locks, x


def run_lock(kernel, blocks: int, nlocks: int, bn: int = 16):
    """``acc`` after ``blocks`` blocks added rows of ones under ``nlocks`` locks (every element
    should be ``blocks / nlocks``), and the locks (all should be free again)."""
    acc, locks, x = lock_args(blocks, nlocks, bn)
    kernel(tile.atomic(acc), tile.atomic(locks), x, bn).grid((blocks, 1, 1)).sync()
    return acc.to_numpy(), locks.to_numpy()


@tile.entry
def ticket_sum(total, partials, counter, x, BN: tile.Constant[int], BP: tile.Constant[int]):
    """Each block stores the sum of its slice of ``x``; the block that draws the last ticket
    (``atomic_add``, ACQ_REL: the store before it is visible, the loads after it see every
    earlier block's store) sums the partial sums into ``total``."""
    i = tile.bid(0)
    s = tile.sum(x.load((i,), (BN,), padding=ZERO), axis=0, keepdims=True)
    tile.store(partials.partition((1,)), (i,), s)
    ticket = tile.atomic_add(counter, 0, 1)
    if ticket == tile.num_blocks(0) - 1:
        acc = tile.zeros((BP,), tile.float32)
        for j in range(tile.cdiv(partials.shape[0], BP)):
            acc += partials.load((j,), (BP,), padding=ZERO)
        tile.store(total.partition((1,)), (0,), tile.sum(acc, axis=0, keepdims=True))


def run_ticket_sum(xn: np.ndarray, bn: int = 16, bp: int = 64, kernel=ticket_sum):
    """``(total, counter)`` of :func:`ticket_sum` over ``xn`` (float32, a multiple of ``bn``)."""
    blocks = xn.size // bn
    total = api.full((1,), -1.0, tile.float32).sync()
    partials = api.zeros((blocks,), tile.float32).sync()
    counter = api.zeros((1,), tile.int32).sync()
    x = api.from_numpy(xn).sync()
    kernel(tile.atomic(total), tile.atomic(partials), tile.atomic(counter), x, bn,
           bp).grid((blocks, 1, 1)).sync()
    return total.to_numpy()[0], counter.to_numpy()[0]


@tile.entry
def ticket_lock_accumulate(acc, order, tickets, serving, x, BN: tile.Constant[int]):
    """A ticket lock: blocks enter one at a time in the order they drew tickets; each adds its
    row of ``x`` to ``acc`` and writes its block index at its ticket in ``order``. The wait
    spins on an ordered load (``memory_order=ACQUIRE``)."""
    t = x.load((tile.bid(0), 0), (1, BN))
    mine = tile.atomic_add(tickets, 0, 1, memory_order=MO.RELAXED)
    while tile.load(serving, (0,), (), memory_order=MO.ACQUIRE) != mine:
        pass
    view = acc.partition((1, BN))
    tile.store(view, (0, 0), view.load((0, 0)) + t)
    tile.scatter(order, mine, tile.bid(0))
    tile.atomic_add(serving, 0, 1, memory_order=MO.RELEASE)


def run_ticket_lock(blocks: int, bn: int = 16):
    """``(acc row, order)``: ``acc`` should be ``blocks`` everywhere and ``order`` a permutation
    of the block indices."""
    acc = api.zeros((1, bn), tile.float32).sync()
    order = api.full((blocks,), -1, tile.int32).sync()
    tickets, serving = api.zeros((1,), tile.int32).sync(), api.zeros((1,), tile.int32).sync()
    x = api.ones((blocks, bn), tile.float32).sync()
    ticket_lock_accumulate(tile.atomic(acc), tile.atomic(order), tile.atomic(tickets),
                           tile.atomic(serving), x, bn).grid((blocks, 1, 1)).sync()
    return acc.to_numpy()[0], order.to_numpy()


@tile.entry
def count_lanes(counts, LANES: tile.Constant[int]):
    """Every block adds 1 to ``LANES`` counters, starting at its own index (a histogram of
    ``(bid + lane) % ncounters``)."""
    idx = (tile.arange(LANES) + tile.bid(0)) % counts.shape[0]
    tile.atomic_add(counts, idx, 1, memory_order=MO.RELAXED)


def run_counters(blocks: int, ncounters: int, lanes: int = 16):
    counts = api.zeros((ncounters,), tile.int32).sync()
    count_lanes(tile.atomic(counts), lanes).grid((blocks, 1, 1)).sync()
    expect = np.bincount((np.arange(blocks)[:, None] + np.arange(lanes)[None, :]).ravel()
                         % ncounters, minlength=ncounters)
    return counts.to_numpy(), expect
