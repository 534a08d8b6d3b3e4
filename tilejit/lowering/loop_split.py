"""Loop splitting: ``for j in range(a, b)`` whose body branches on ``j`` against a bound that does
not change in the loop (the causal mask's ``if j >= mask_start``) becomes two loops, over
``[a, mid)`` and ``[mid, b)``, in each of which the branch is decided at compile time. The common
iterations then carry no ``if`` and no values through it.

Every comparison of the induction variable with the bound is put in the form ``j >= T`` (``T``
is the bound, or the bound plus one for ``>``/``<=``), with a polarity saying whether the
condition is that test or its negation. Below ``mid = clamp(T, a, b)`` the test is false, from
``mid`` on it is true; conditions on the same ``T`` are all decided.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Dict, Optional, Set

from numba.core import ir, types

from . import regions as R

# op(iv, bound) as (threshold offset, polarity): iv >= B + offset is the test, the condition is
# the test when polarity is True and its negation otherwise.
_IV_LEFT = {operator.ge: (0, True), operator.gt: (1, True),
            operator.lt: (0, False), operator.le: (1, False)}
# op(bound, iv): B > iv is iv < B, ...
_IV_RIGHT = {operator.le: (0, True), operator.lt: (1, True),
             operator.gt: (0, False), operator.ge: (1, False)}


@dataclass(frozen=True)
class SplitPlan:
    """Split at ``bound + offset``; ``conds`` maps each decided condition variable to its
    polarity (its value in the upper loop; the lower loop gets the opposite)."""
    bound: str
    offset: int
    conds: Dict[str, bool]


def plan(node: R.For, defs: Dict[str, object], typemap: Dict[str, object]) -> Optional[SplitPlan]:
    """The split of ``node`` (a ``for`` with a positive unit step and no ``break``), or None."""
    if node.step_sign != 1 or node.has_break or not _is_int(typemap.get(node.iv)):
        return None
    inside = _defined_in(node.body) | {node.iv} | {c.name for c in node.carried}
    tests = {}
    for n in node.body.nodes:           # top-level ifs only: they run on every iteration
        if not isinstance(n, R.If):
            continue
        t = _iv_test(n.cond, node.iv, defs)
        if t is None:
            continue
        bound, offset, pol = t
        if bound in inside or not _is_int(typemap.get(bound)):
            continue
        tests.setdefault((bound, offset), {})[n.cond] = pol
    if not tests:
        return None
    (bound, offset), conds = next(iter(tests.items()))
    return SplitPlan(bound, offset, conds)


def _is_int(ty) -> bool:
    return isinstance(ty, (types.Integer, types.IntegerLiteral))


def _resolve(name: str, defs) -> object:
    """The defining expression of ``name``, looking through copies and ``bool(x)``."""
    seen = 0
    while seen < 64:
        seen += 1
        d = defs.get(name)
        if isinstance(d, ir.Var):
            name = d.name
            continue
        if isinstance(d, ir.Expr) and d.op == "call" and len(d.args) == 1 and not d.kws:
            f = defs.get(d.func.name)
            if isinstance(f, ir.Global) and f.value is bool:
                name = d.args[0].name
                continue
        return name, d
    return name, None


def _iv_test(cond: str, iv: str, defs):
    _, d = _resolve(cond, defs)
    if not (isinstance(d, ir.Expr) and d.op == "binop"):
        return None
    lhs, _ = _resolve(d.lhs.name, defs)
    rhs, _ = _resolve(d.rhs.name, defs)
    if lhs == iv and d.fn in _IV_LEFT and rhs != iv:
        return (d.rhs.name,) + _IV_LEFT[d.fn]
    if rhs == iv and d.fn in _IV_RIGHT and lhs != iv:
        return (d.lhs.name,) + _IV_RIGHT[d.fn]
    return None


def _defined_in(region: R.Region) -> Set[str]:
    names: Set[str] = set()
    for n in region.nodes:
        if isinstance(n, R.Block):
            names.update(st.target.name for st in n.stmts if isinstance(st, ir.Assign))
        elif isinstance(n, R.If):
            names |= _defined_in(n.then) | _defined_in(n.orelse)
            names.update(r.name for r in n.results)
        else:
            names |= _defined_in(n.body)
            names.update(c.name for c in n.carried)
            names.update(r.name for r in n.results)
            if isinstance(n, R.For):
                names.add(n.iv)
    return names
