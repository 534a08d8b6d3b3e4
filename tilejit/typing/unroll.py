"""``for i in tile.static_range(...)`` and ``for x in tile.static_iter(tup)``: loops unrolled in
the untyped IR, before typing, so each copy of the body sees a constant ``i`` (usable in tile
shapes and tuple indices) or one element of a tuple (arrays of different shapes, dtypes...).

Numba's IR of a ``for`` loop: the pre-header calls ``getiter`` and jumps to the header, which calls
``iternext`` and branches to the body (the loop variable is ``pair_first`` of it) or to the exit;
the body jumps back to the header (``continue`` too) or to the exit (``break``). Unrolling makes
one copy of the body per element, each starting with its value of the loop variable and jumping
to the next copy where the original jumped to the header. Variables are not renamed: this runs
before SSA reconstruction.
"""
from __future__ import annotations

import copy
import operator
from typing import Dict, Optional

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import build_definitions, replace_vars_inner, replace_vars_stmt

from .. import language
from ..errors import StaticEvalError, UnsupportedError
from .closures import _MISSING, _constant
from .inline import _static_callee
from .passes import first_assignments
from .reject import numba_loc

STATIC_LOOPS = (language.static_range, language.static_iter)


def unroll_static_loops(func_ir, arg_types: Dict[str, object], funcname: str) -> bool:
    """Unroll every static loop of ``func_ir`` (in place); True if any was."""
    changed = False
    while True:
        defs = first_assignments(func_ir)
        unknown = None
        for found in _static_loops(func_ir, defs):
            # a static_iter over what another static loop builds (a tuple comprehension) waits
            # until that loop is unrolled and its sequence has one definition
            values = _loop_values(func_ir, defs, arg_types, found[2], funcname)
            if values is not None:
                break
            unknown = unknown or found[2]
        else:
            if unknown is not None:
                raise UnsupportedError(
                    "tile.static_iter needs a tuple whose length is known at compile time (a "
                    "tuple expression, a tuple argument or a constant; range, enumerate and "
                    "zip of those)", numba_loc(unknown.loc, funcname))
            return changed
        _unroll(func_ir, arg_types, funcname, *found, values)
        _fold_branches(func_ir)
        changed = True


def _fold_branches(func_ir) -> None:
    """Branches on the copies' constants (``if i != 1`` in a copy) decided and their dead side
    removed, so a later static loop over what the copies built sees one definition of it."""
    from .static_branches import fold_static_branches
    if not fold_static_branches(func_ir, ()):
        return
    for label in compute_cfg_from_blocks(func_ir.blocks).dead_nodes():
        del func_ir.blocks[label]
    func_ir._definitions = build_definitions(func_ir.blocks)


def _static_loops(func_ir, defs):
    """``(header label, its iternext statement, the static_range/static_iter call)`` of each
    static loop, outermost first."""
    for label in sorted(func_ir.blocks):
        for stmt in func_ir.blocks[label].body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and
                    stmt.value.op == "iternext"):
                continue
            it = _through_aliases(defs, stmt.value.value)
            if not (isinstance(it, ir.Expr) and it.op == "getiter"):
                continue
            call = _through_aliases(defs, it.value)
            if isinstance(call, ir.Expr) and call.op == "call" and \
                    _static_callee(defs, call.func) in STATIC_LOOPS:
                yield label, stmt, call


def _through_aliases(defs, var, depth=0):
    d = defs.get(var.name)
    if d is None or depth > 16:
        return None
    if isinstance(d.value, ir.Var):
        return _through_aliases(defs, d.value, depth + 1)
    return d.value


def _loop_values(func_ir, defs, arg_types, call, funcname):
    """``(values, sequence plan)``: the loop variable's ints for static_range (plan None),
    element indices and the sequence's plan for static_iter; None while a static_iter's
    sequence is not known yet."""
    fn = _static_callee(defs, call.func)
    loc = numba_loc(call.loc, funcname)
    if call.kws:
        raise UnsupportedError(f"tile.{fn.__name__} takes no keyword arguments", loc)
    if fn is language.static_range:
        bounds = [_constant(defs, a) for a in call.args]
        if not 1 <= len(bounds) <= 3 or any(not isinstance(b, int) or isinstance(b, bool)
                                            for b in bounds):
            raise UnsupportedError("tile.static_range(start, stop, step) needs 1 to 3 "
                                   "compile-time constant ints (literals, tile.Constant "
                                   "parameters, globals); for a runtime bound use range()",
                                   loc)
        if len(bounds) == 3 and bounds[2] == 0:
            raise UnsupportedError("tile.static_range: the step must not be zero", loc)
        r = range(*bounds)
        if len(r) > 4096:
            raise UnsupportedError(f"tile.static_range unrolls {len(r)} copies of the loop body; "
                                   f"keep it below 4096 (use range() for a runtime loop)", loc)
        return list(r), None
    if len(call.args) != 1:
        raise UnsupportedError("tile.static_iter takes one tuple", loc)
    sites = _Sites(func_ir, defs)
    plan = sites.plan(call.args[0], sites.position(call), arg_types)
    if plan is None:
        return None
    if _length(plan) > MAX_STATIC_ITER:
        raise StaticEvalError(f"Maximum number of iterations ({MAX_STATIC_ITER}) has been "
                              f"reached while unpacking the static_iter() iterable", loc)
    return list(range(_length(plan))), plan


#: cuTile's limit on a static_iter's elements (each one a copy of the loop body)
MAX_STATIC_ITER = 1000


class _Sites:
    """The assignments of each variable and which one reaches a use. This runs before SSA
    reconstruction: unrolled copies assign the same names again (a tuple comprehension's
    accumulator, a loop variable), so a use takes the one assignment that reaches it, or is
    unknown (never the first assignment of several: that would be a wrong length)."""

    def __init__(self, func_ir, defs):
        from .static_branches import reaching_definitions
        self.blocks = func_ir.blocks
        self.defs = defs
        self.sites: dict = {}
        for label, blk in self.blocks.items():
            for i, st in enumerate(blk.body):
                if isinstance(st, ir.Assign):
                    self.sites.setdefault(st.target.name, []).append((label, i, st))
        multi = {n: f for n, f in self.sites.items() if len(f) > 1}
        self.reach = reaching_definitions(list(self.blocks), compute_cfg_from_blocks(
            self.blocks), multi) if multi else {}

    def position(self, expr):
        return next((label, i) for label, blk in self.blocks.items()
                    for i, st in enumerate(blk.body)
                    if isinstance(st, ir.Assign) and st.value is expr)

    def definition(self, var, pos):
        """``(assignment, its position)`` of ``var`` reaching ``pos``, or None."""
        found = self.sites.get(var.name)
        if not found:
            return None
        if len(found) == 1:
            label, i, st = found[0]
            return st, (label, i)
        label, index = pos
        before = [(i, st) for lab, i, st in found if lab == label and i < index]
        if before:
            i, st = before[-1]
            return st, (label, i)
        reaching = self.reach.get(label, {}).get(var.name, ())
        if len(reaching) != 1:
            return None
        (lab, i), = reaching
        return self.blocks[lab].body[i], (lab, i)

    def int_at(self, var, pos, arg_types, depth=0) -> Optional[int]:
        d = self.definition(var, pos)
        if d is None or depth > 32:
            return None
        (st, at), v = d, d[0].value
        if isinstance(v, ir.Var):
            return self.int_at(v, at, arg_types, depth + 1)
        if isinstance(v, (ir.Const, ir.Global, ir.FreeVar)):
            c = v.value
            return c if isinstance(c, int) and not isinstance(c, bool) else None
        if isinstance(v, ir.Expr) and v.op == "call" and len(v.args) == 1 and \
                _static_callee(self.defs, v.func) is len:
            p = self.plan(v.args[0], at, arg_types, depth + 1)
            return None if p is None else _length(p)
        return None

    def plan(self, var, pos, arg_types, depth=0):
        """The static sequence ``var`` holds at ``pos``: ``("tuple", var, n, items)`` (items:
        each element's ``(variable, position)`` when known, else None), ``("range", values)``,
        ``("enumerate", start, plan)``, ``("zip", plans)``; None when unknown."""
        d = self.definition(var, pos)
        if d is None or depth > 32:
            return None
        (st, at), v = d, d[0].value
        if isinstance(v, ir.Var):
            p = self.plan(v, at, arg_types, depth + 1)
            return ("tuple", var) + p[2:] if p is not None and p[0] == "tuple" else p
        if isinstance(v, ir.Expr) and v.op == "build_tuple":
            return "tuple", var, len(v.items), [(x, at) for x in v.items]
        if isinstance(v, ir.Arg):
            ty = arg_types.get(v.name)
            return ("tuple", var, len(ty.types), None) if isinstance(ty, types.BaseTuple) \
                else None
        if isinstance(v, ir.Expr) and (v.op == "binop" and v.fn is operator.add or
                                       v.op == "inplace_binop" and v.fn is operator.iadd):
            parts = [self.plan(x, at, arg_types, depth + 1) for x in (v.lhs, v.rhs)]
            if all(p is not None and p[0] == "tuple" for p in parts):   # tuple concatenation
                items = parts[0][3] + parts[1][3] if parts[0][3] is not None and \
                    parts[1][3] is not None else None
                return "tuple", var, parts[0][2] + parts[1][2], items
            return None
        if isinstance(v, ir.Expr) and v.op == "static_getitem" and isinstance(v.index, int):
            outer = self.plan(v.value, at, arg_types, depth + 1)   # an element of a tuple of
            if outer is not None and outer[0] == "tuple" and outer[3] is not None and \
                    -outer[2] <= v.index < outer[2]:                # tuples (a nested loop)
                item, item_at = outer[3][v.index]
                p = self.plan(item, item_at, arg_types, depth + 1)
                return ("tuple", var) + p[2:] if p is not None and p[0] == "tuple" else p
            return None
        if isinstance(v, ir.Expr) and v.op == "call" and not v.kws and not v.vararg:
            fn = _static_callee(self.defs, v.func)
            if fn is range:
                bounds = [self.int_at(a, at, arg_types, depth + 1) for a in v.args]
                if not 1 <= len(bounds) <= 3 or None in bounds or \
                        (len(bounds) == 3 and bounds[2] == 0):
                    return None
                return "range", list(range(*bounds))
            if fn is enumerate and 1 <= len(v.args) <= 2:
                start = self.int_at(v.args[1], at, arg_types, depth + 1) \
                    if len(v.args) == 2 else 0
                inner = self.plan(v.args[0], at, arg_types, depth + 1)
                return None if inner is None or start is None else ("enumerate", start, inner)
            if fn is zip and v.args:
                inner = [self.plan(a, at, arg_types, depth + 1) for a in v.args]
                return None if None in inner else ("zip", inner)
            return None
        c = _constant(self.defs, var) if len(self.sites.get(var.name, ())) == 1 else _MISSING
        return ("tuple", var, len(c), None) if isinstance(c, tuple) else None


def _length(plan) -> int:
    kind = plan[0]
    if kind == "tuple":
        return plan[2]
    if kind == "range":
        return len(plan[1])
    if kind == "enumerate":
        return _length(plan[2])
    return min(_length(p) for p in plan[1])


def _element(plan, k: int, scope, loc, out: list) -> ir.Var:
    """Statements (appended to ``out``) giving element ``k`` of the static sequence ``plan``;
    the variable holding it."""
    kind = plan[0]
    tmp = scope.redefine("$static_item", loc)
    if kind == "range":
        value = ir.Const(plan[1][k], loc)
    elif kind == "enumerate":
        index = scope.redefine("$static_index", loc)
        out.append(ir.Assign(ir.Const(k + plan[1], loc), index, loc))
        value = ir.Expr.build_tuple([index, _element(plan[2], k, scope, loc, out)], loc)
    elif kind == "zip":
        value = ir.Expr.build_tuple([_element(p, k, scope, loc, out) for p in plan[1]], loc)
    else:
        value = ir.Expr.static_getitem(plan[1], k, None, loc)
    out.append(ir.Assign(value, tmp, loc))
    return tmp


def _unroll(func_ir, arg_types, funcname, header, iternext, call, values_seq):
    blocks = func_ir.blocks
    defs = first_assignments(func_ir)
    values, seq = values_seq
    loop = compute_cfg_from_blocks(blocks).loops()[header]
    head = blocks[header]
    branch = head.terminator
    body_entry, exit_ = branch.truebr, branch.falsebr
    first = next(s for s in head.body if isinstance(s, ir.Assign) and
                 isinstance(s.value, ir.Expr) and s.value.op == "pair_first")
    # the variables the body reads the element from: pair_first and its copies in the header
    item_vars = [first.target] + [s.target for s in head.body if isinstance(s, ir.Assign) and
                                  isinstance(s.value, ir.Var) and s.value.name ==
                                  first.target.name]
    body = sorted(loop.body - {header})
    for lab in body:
        term = blocks[lab].terminator
        targets = [term.target] if isinstance(term, ir.Jump) else \
            [term.truebr, term.falsebr] if isinstance(term, ir.Branch) else []
        if isinstance(term, ir.Return) or any(t not in loop.body for t in targets):
            what = "static_range" if seq is None else "static_iter"
            raise UnsupportedError(
                f"break and return are not supported in a tile.{what} loop (its copies run one "
                f"after another); keep a flag (done = True) and test it, or use range()",
                numba_loc(term.loc, funcname))
    next_label = max(blocks) + 1
    copies = []
    for _ in values:
        copies.append({lab: next_label + i for i, lab in enumerate(body)})
        next_label += len(body)
    user_var = _loop_variable(blocks, body, item_vars)
    for k, (value, mapping) in enumerate(zip(values, copies)):
        after = copies[k + 1][body_entry] if k + 1 < len(copies) else exit_
        entry = blocks[body_entry]
        loc = entry.loc
        # each copy reads the element through a variable of its own, so a nested static loop
        # bounded by it (static_range(i, n)) sees this copy's constant, not the first copy's
        own = entry.scope.redefine(f"$static_{k}", loc)
        subst = {user_var: own} if user_var is not None else {}
        for lab in body:
            blk = blocks[lab]
            new = ir.Block(blk.scope, blk.loc)
            new.body = [_use(_copy_stmt(s, mapping, header, after), subst, user_var)
                        for s in blk.body]
            if lab == body_entry:
                init: list = []
                if seq is None:
                    init.append(ir.Assign(ir.Const(value, loc), own, loc))
                else:
                    item = _element(seq, value, entry.scope, loc, init)
                    init.append(ir.Assign(item, own, loc))
                new.body[:0] = init + [ir.Assign(own, v, loc) for v in item_vars]
            blocks[mapping[lab]] = new
    start = copies[0][body_entry] if copies else exit_
    # the pre-header(s) now jump straight into the first copy; the iterator is gone
    gone = {iternext.value.value.name}
    call_stmt = next(s for b in blocks.values() for s in b.body
                     if isinstance(s, ir.Assign) and s.value is call)
    # the range/enumerate/zip calls static_iter took apart go too (typing refuses them)
    gone_calls = {id(c) for c in _sequence_calls(defs, call.args[0])} if seq is not None \
        else set()
    for lab, blk in list(blocks.items()):
        if lab in loop.body:
            continue
        term = blk.terminator
        if isinstance(term, ir.Jump) and term.target == header:
            blk.body[-1] = ir.Jump(start, term.loc)
            blk.body = [s for s in blk.body if not _defines_iterator(s, gone)]
        blk.body = [s for s in blk.body if s is not call_stmt and not (   # typing refuses
            isinstance(s, ir.Assign) and id(s.value) in gone_calls)]     # them alone
    for lab in loop.body:
        del blocks[lab]
    func_ir._definitions = build_definitions(blocks)


def _sequence_calls(defs, seq, depth=0) -> list:
    """The range/enumerate/zip call expressions static_iter's argument ``seq`` is made of."""
    v = _through_aliases(defs, seq)
    if depth > 16 or not (isinstance(v, ir.Expr) and v.op == "call"):
        return []
    fn = _static_callee(defs, v.func)
    if fn not in (range, enumerate, zip):
        return []
    out = [v]
    if fn is not range:
        for a in v.args[:1] if fn is enumerate else v.args:
            out += _sequence_calls(defs, a, depth + 1)
    return out


def _loop_variable(blocks, body, item_vars):
    """The name of the user's loop variable (``i`` of ``for i in ...``) when the body assigns
    it only from the element, else None (then uses of it are left as they are)."""
    items = {v.name for v in item_vars}
    name, defs = None, 0
    for lab in body:
        for s in blocks[lab].body:
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.Var) and \
                    s.value.name in items and name is None:
                name = s.target.name
    if name is None:
        return None
    for lab in body:
        for s in blocks[lab].body:
            if isinstance(s, ir.Assign) and s.target.name == name:
                defs += 1
    return name if defs == 1 else None


def _use(stmt, subst, user_var):
    """``stmt`` reading ``subst``'s variables instead (definitions are kept)."""
    if not subst:
        return stmt
    if isinstance(stmt, ir.Assign):
        if stmt.target.name != user_var:
            stmt.value = replace_vars_inner(stmt.value, subst)
        return stmt
    replace_vars_stmt(stmt, subst)
    return stmt


def _defines_iterator(stmt, gone) -> bool:
    """The ``getiter`` statement and the copies of its result in a pre-header."""
    if not isinstance(stmt, ir.Assign):
        return False
    v = stmt.value
    if stmt.target.name in gone or (isinstance(v, ir.Var) and v.name in gone):
        if isinstance(v, ir.Var):
            gone.add(v.name)
        return True
    if isinstance(v, ir.Expr) and v.op == "getiter":
        gone.add(stmt.target.name)
        return True
    return False


def _copy_stmt(stmt, mapping, header, after):
    """A copy of ``stmt`` for one unrolled body: branch targets inside the body go to this
    copy's blocks, back to the header to the next copy (``after``)."""
    def target(lab):
        if lab == header:
            return after
        return mapping.get(lab, lab)
    if isinstance(stmt, ir.Jump):
        return ir.Jump(target(stmt.target), stmt.loc)
    if isinstance(stmt, ir.Branch):
        return ir.Branch(stmt.cond, target(stmt.truebr), target(stmt.falsebr), stmt.loc)
    new = copy.copy(stmt)
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
        e = copy.copy(stmt.value)
        e._kws = {k: list(v) if isinstance(v, list) else v for k, v in stmt.value._kws.items()}
        new.value = e
    return new
