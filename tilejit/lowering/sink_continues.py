"""One ``continue`` at the end of a loop body instead of one in each arm of its last ``if``.

CPython jumps back to the loop header from both arms of an ``if`` that ends a loop body
(``for r in range(n): if r < m: acc += ...``), so the region tree has a ``Continue`` in each arm.
Lowered as such, the Tile IR ``if`` leaves the loop from inside its arms; cuTile (and any
structured front end) writes an ``if`` that yields the new carried values, then one ``continue``.
The two mean the same, but tileiras optimizes loops whose body falls through to a single
``continue`` better (it is the form it sees from every other front end). This pass rewrites the
first form into the second: an arm that continues yields the values it continued with, and the
body continues with the ``if``'s results.
"""
from __future__ import annotations

from typing import List

from . import regions as R


def sink_continues(sk: R.StructuredKernel) -> None:
    """Rewrite every loop body of ``sk`` in place (see the module docstring)."""
    counter = [0]
    for node in R.walk_nodes(sk.body):
        if isinstance(node, (R.For, R.Loop)):
            _sink(node, sk.typemap, counter)


def _all_continue(region: R.Region) -> bool:
    """Every path through ``region`` ends in a ``Continue`` of the enclosing loop."""
    if isinstance(region.term, R.Continue):
        return True
    if region.term is not None or not region.nodes or not isinstance(region.nodes[-1], R.If):
        return False
    last = region.nodes[-1]
    return not last.results and _all_continue(last.then) and _all_continue(last.orelse)


def _sink(loop, typemap, counter: List[int]) -> None:
    body = loop.body
    if body.term is not None or not _all_continue(body):
        return                  # (already one continue at the end, or something leaves the loop)
    types = [c.type for c in loop.carried]
    body.term = R.Continue([r.name for r in _to_yield(body.nodes[-1], types, typemap, counter)])


def _to_yield(node: R.If, types, typemap, counter: List[int]) -> List[R.Result]:
    """Give ``node`` results for the carried values its arms continued with; arms yield them."""
    counter[0] += 1
    node.results = [R.Result(f"$continue_join.{counter[0]}.{i}", t) for i, t in enumerate(types)]
    for r in node.results:
        typemap[r.name] = r.type
    for arm in (node.then, node.orelse):
        if isinstance(arm.term, R.Continue):
            arm.term = R.Yield(list(arm.term.values))
        else:
            inner = arm.nodes[-1]
            arm.term = R.Yield([r.name for r in _to_yield(inner, types, typemap, counter)])
    return node.results
