"""Rewrites of a lowered module that keep tileiras from miscompiling it (NOTES.md, tileiras
quirks; each has a standalone repro in tools/tileiras_repros and a pinned GPU test).

* :func:`carried_loads_off_tma`: a tile loaded through a partition view and carried to the next
  iteration of a loop (``t = nxt`` at the end of the body: a register double buffer) comes out
  as the next iteration's tile from tileiras 13.4-13.5 when the load goes through the TMA unit:
  both loads share one shared-memory buffer, and the one for the next iteration overwrites the
  carried tile before the body reads it (tools/tileiras_repros/loop_carried_tile). Loaded into
  registers (``allow_tma=False``) it is right, and no slower (2026-11-27 H200), so every load
  whose tile a loop carries goes off the TMA unit. ``allow_tma`` is a permission, not a demand,
  so this changes no result a program may rely on.
"""
from __future__ import annotations

from typing import Callable, Iterator

from .attrs import OptHints
from .ir import Module, Operation, Value
from .optimize import LOOPS, owning_loop


def carried_loads_off_tma(module: Module, make_hints: Callable[[dict], OptHints]) -> None:
    """Set ``allow_tma=False`` on each ``load_view_tko`` whose tile a loop carries (as an
    initial value or through ``continue``, directly or as a branch of an ``if``). Run after
    the other rewrites (``optimize.fuse_transposed_loads`` makes loads). ``make_hints(d)``:
    hints ``d`` keyed for the target (the load's own hints, such as a latency, are kept)."""
    for loop in [op for fn in module.functions for op in fn.walk() if op.name in LOOPS]:
        for v in _carried_in(loop):
            for load in _loads_behind(v):
                _forbid_tma(load, make_hints)


def _carried_in(loop: Operation) -> Iterator[Value]:
    """The values that enter ``loop``'s carried slots: its initial values and the operands of
    every ``continue`` of its own (through nested ``if`` regions, not nested loops)."""
    yield from loop.group("initValues")
    for op in loop.regions[0].walk():
        if op.name == "continue" and owning_loop(op) is loop:
            yield from op.operands


def _loads_behind(v: Value) -> Iterator[Operation]:
    """The view loads whose tile ``v`` is: ``v`` itself, or through the ``yield`` of each branch
    of an ``if`` that makes it."""
    op = v.owner
    if not isinstance(op, Operation):
        return
    if op.name == "load_view_tko" and v.index == 0:
        yield op
    elif op.name == "if":
        for region in op.regions:
            end = region.terminator
            if end is not None and end.name == "yield":
                yield from _loads_behind(end.operands[v.index])


def _forbid_tma(load: Operation, make_hints: Callable[[dict], OptHints]) -> None:
    old = load.attrs.get("optimization_hints")
    if old:
        load.attrs["optimization_hints"] = OptHints.make(
            {arch: {**d, "allow_tma": False} for arch, d in old.as_dict().items()})
    else:
        load.attrs["optimization_hints"] = make_hints({"allow_tma": False})
