"""Branches decided by the specialization, removed before typing.

A kernel is typed once per specialization, so ``a.dtype``, ``a.ndim`` and a partition's tile
shape (``c.shape``) are known before type inference starts. A branch on them, such as

    if a.dtype == tile.float32:
        ta = ta.astype(tile.tfloat32)       # a different tile type on this path only

is replaced by a jump to the side that runs, so the other side is never typed and the variable
keeps one type (otherwise inference would have to unify float16 and tfloat32 tiles and fail).
Constant parameters are already constants here (``freeze_constants``), and Numba's
``dead_branch_prune`` (run next) removes the blocks that became unreachable.

Conditions are folded from constants, globals (``tile.float32``, module attributes), static
argument attributes, comparisons (``== != is is not < <= > >= in``), ``not``, integer arithmetic
(``ROWS * WIDTH >= 16384``: int64 results; ``// % << >>`` of non-negative ints), tuples, constant
indexing and unpacking (``BM, BN = c.shape``); ``and``/``or`` in a condition are branches
of their own and fold one by one. Folding repeats over the blocks still reachable, so a
conditional expression kept in a variable (``w = a if c else b``) folds once ``c`` has: its
untaken side's definition no longer counts. A name defined more than once (``w = p or q`` kept
in a variable: Python's stack value is a phi assigned in two blocks; a variable reassigned
under a static ``if``) takes the value of the definitions that reach the use over the blocks
still live (reaching definitions), when they agree. Anything else leaves the branch alone.
"""
from __future__ import annotations

import operator
import types as pytypes

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import build_definitions

from ..dtypes import DType
from .types import PartitionType, TensorType, TileType

_UNKNOWN = object()
_BINOPS = frozenset({operator.eq, operator.ne, operator.is_, operator.is_not, operator.lt,
                     operator.le, operator.gt, operator.ge, operator.contains})
#: integer arithmetic on constants (``ROWS * WIDTH >= 16384``), folded where Python's result is
#: the kernel's: int64 results only; floor division, remainder and shifts of non-negative ints
_INT_OPS = frozenset({operator.add, operator.sub, operator.mul, operator.and_, operator.or_,
                      operator.xor})
_NONNEG_INT_OPS = frozenset({operator.floordiv, operator.mod, operator.lshift, operator.rshift})
_INT64 = (-(1 << 63), (1 << 63) - 1)
_FOLDABLE = (bool, int, float, str, type(None), DType, tuple)


class _Arg:
    """An argument seen through its type: only its static attributes fold."""

    __slots__ = ("ty",)

    def __init__(self, ty):
        self.ty = ty

    def attr(self, name: str):
        ty = self.ty
        if isinstance(ty, (TensorType, PartitionType, TileType)):
            if name == "dtype":
                return ty.dtype
            if name == "ndim":
                return ty.ndim if not isinstance(ty, TileType) else len(ty.shape)
            if name == "shape" and isinstance(ty, PartitionType):
                return tuple(ty.tile_shape)         # a partition's shape is its tile's
            if name == "shape" and isinstance(ty, TileType):
                return tuple(ty.shape)
        return _UNKNOWN


def fold_static_branches(func_ir: ir.FunctionIR, arg_types) -> int:
    """Replace branches whose condition the argument types decide by jumps (in place, before
    SSA); ``arg_types``: the Numba types of the arguments by position. Returns how many."""
    total = 0
    while True:
        folded = _fold_reachable(func_ir, arg_types)
        if not folded:
            return total
        total += folded


def _fold_reachable(func_ir: ir.FunctionIR, arg_types) -> int:
    """One pass of :func:`fold_static_branches`, over the blocks reachable from the entry
    (definitions in blocks an earlier pass cut off do not count)."""
    cfg = compute_cfg_from_blocks(func_ir.blocks)
    dead = cfg.dead_nodes()
    live = {label: b for label, b in func_ir.blocks.items() if label not in dead}
    sites: dict = {}                                # name -> [(label, index, value)]
    for label, block in live.items():
        for i, stmt in enumerate(block.body):
            if isinstance(stmt, ir.Assign):
                sites.setdefault(stmt.target.name, []).append((label, i, stmt.value))
    reach = reaching_definitions(live, cfg, sites)
    memo: dict = {}                                 # (label, index) of a definition -> value

    def value(var: ir.Var, at, depth: int = 0):
        """``var``'s value where the statement at ``at`` = (label, index) reads it: that of
        every definition that reaches there, when they agree."""
        found = sites.get(var.name)
        if not found or depth > 64:
            return _UNKNOWN
        if len(found) == 1:
            reaching = found
        else:
            label, index = at
            before = [d for d in found if d[0] == label and d[1] < index]
            reaching = [max(before, key=lambda d: d[1])] if before else \
                [d for d in found if (d[0], d[1]) in reach[label].get(var.name, ())]
        values = [defined(d, depth + 1) for d in reaching]
        if len(values) == 1:
            return values[0]
        if not values or not all(_foldable(v) and _same(v, values[0]) for v in values):
            return _UNKNOWN                         # definitions that disagree, or none
        return values[0]

    def defined(site, depth):
        label, index, node = site
        key = (label, index)
        if key not in memo:
            memo[key] = _UNKNOWN                    # cycles (loop-carried names) stay unknown
            memo[key] = evaluate(node, key, depth)
        return memo[key]

    def evaluate(node, at, depth):
        if isinstance(node, (ir.Const, ir.Global, ir.FreeVar)):
            return node.value
        if isinstance(node, ir.Var):
            return value(node, at, depth)
        if isinstance(node, ir.Arg):
            ty = arg_types[node.index] if node.index < len(arg_types) else None
            if isinstance(ty, types.Literal):
                return ty.literal_value
            return _Arg(ty) if ty is not None else _UNKNOWN
        if not isinstance(node, ir.Expr):
            return _UNKNOWN
        op = node.op
        if op == "getattr":
            base = value(node.value, at, depth)
            if isinstance(base, _Arg):
                return base.attr(node.attr)
            # attributes of modules, classes and dtypes only: no user code (properties) runs
            if isinstance(base, (pytypes.ModuleType, type, DType)):
                return getattr(base, node.attr, _UNKNOWN)
            return _UNKNOWN
        if op == "binop" and node.fn in _BINOPS:
            lhs, rhs = value(node.lhs, at, depth), value(node.rhs, at, depth)
            if _foldable(lhs) and _foldable(rhs):
                try:
                    return bool(node.fn(lhs, rhs))
                except Exception:
                    return _UNKNOWN
            return _UNKNOWN
        if op == "binop" and (node.fn in _INT_OPS or node.fn in _NONNEG_INT_OPS):
            return _int_op(node.fn, value(node.lhs, at, depth), value(node.rhs, at, depth))
        if op == "unary" and node.fn is operator.not_:
            v = value(node.value, at, depth)
            return (not v) if _foldable(v) else _UNKNOWN
        if op == "build_tuple":
            # items stay unknown one by one: indexing a known item of a tuple holding a tile
            # (an unrolled enumerate's (index, tile) pair) folds; the whole tuple does not
            return tuple(value(i, at, depth) for i in node.items)
        if op == "exhaust_iter":                    # BM, BN = c.shape
            base = value(node.value, at, depth)
            return base if isinstance(base, tuple) and len(base) == node.count else _UNKNOWN
        if op in ("static_getitem", "getitem"):
            base = value(node.value, at, depth)
            index = node.index if op == "static_getitem" else value(node.index, at, depth)
            if isinstance(base, tuple) and isinstance(index, int) and -len(base) <= index < len(base):
                return base[index]
            return _UNKNOWN
        if op == "call" and not node.kws and len(node.args) == 1:
            if value(node.func, at, depth) is bool:
                v = value(node.args[0], at, depth)
                return bool(v) if isinstance(v, (bool, int)) else _UNKNOWN
        return _UNKNOWN

    folded = 0
    for label, block in live.items():
        term = block.body[-1] if block.body else None
        if not isinstance(term, ir.Branch):
            continue
        v = value(term.cond, (label, len(block.body) - 1))
        if isinstance(v, bool):
            block.body[-1] = ir.Jump(term.truebr if v else term.falsebr, term.loc)
            folded += 1
    if folded:
        # The comparisons stay in the live blocks (their values may be used elsewhere) but
        # become constants: some, such as `x.dtype in (...)`, have no typing rule.
        for label, block in live.items():
            for i, stmt in enumerate(block.body):
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and \
                        stmt.value.op in ("binop", "unary", "call"):
                    v = memo.get((label, i), _UNKNOWN)
                    if isinstance(v, bool):
                        stmt.value = ir.Const(v, stmt.loc)
        func_ir._definitions = build_definitions(func_ir.blocks)
    return folded


def _int_op(fn, lhs, rhs):
    """``fn(lhs, rhs)`` on two constant ints where the kernel's int64 arithmetic agrees."""
    if type(lhs) not in (int, bool) or type(rhs) not in (int, bool):
        return _UNKNOWN
    if fn in _NONNEG_INT_OPS and (lhs < 0 or rhs < 0 or (rhs == 0 and fn in (
            operator.floordiv, operator.mod)) or (fn is operator.lshift and rhs > 63)):
        return _UNKNOWN
    out = fn(lhs, rhs)
    return out if _INT64[0] <= out <= _INT64[1] else _UNKNOWN


def reaching_definitions(live: dict, cfg, sites: dict) -> dict:
    """label -> {name: the (label, index) definitions of ``name`` that reach the block's entry},
    over the live blocks, for the names defined more than once (a phi's value, a variable
    reassigned on one side of a branch)."""
    names = [n for n, found in sites.items() if len(found) > 1]
    last = {label: {} for label in live}            # the definition a block leaves, per name
    for n in names:
        for label, index, _ in sites[n]:
            if index > last[label].get(n, (None, -1))[1]:
                last[label][n] = (label, index)
    reach_in = {label: {} for label in live}
    reach_out = {label: {n: frozenset({d}) for n, d in last[label].items()} for label in live}
    changed = True
    while changed:
        changed = False
        for label in live:
            entry: dict = {}
            for pred, _ in cfg.predecessors(label):
                for n, ds in reach_out.get(pred, {}).items():
                    entry[n] = entry.get(n, frozenset()) | ds
            leave = dict(entry)
            leave.update({n: frozenset({d}) for n, d in last[label].items()})
            if entry != reach_in[label] or leave != reach_out[label]:
                reach_in[label], reach_out[label] = entry, leave
                changed = True
    return reach_in


def _same(a, b) -> bool:
    """Equal and of one type (True and 1 are not the same constant), element by element."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _foldable(v) -> bool:
    if isinstance(v, tuple):
        return all(_foldable(i) for i in v)
    return v is not _UNKNOWN and isinstance(v, _FOLDABLE)
