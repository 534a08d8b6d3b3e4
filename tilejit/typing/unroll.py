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
from typing import Dict, Optional

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import build_definitions, replace_vars_inner, replace_vars_stmt

from .. import language
from ..errors import UnsupportedError
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
        found = _find_static_loop(func_ir, defs)
        if found is None:
            return changed
        _unroll(func_ir, defs, arg_types, funcname, *found)
        changed = True


def _find_static_loop(func_ir, defs):
    """``(header label, its iternext statement, the static_range/static_iter call)`` of the
    first static loop, outermost first."""
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
                return label, stmt, call
    return None


def _through_aliases(defs, var, depth=0):
    d = defs.get(var.name)
    if d is None or depth > 16:
        return None
    if isinstance(d.value, ir.Var):
        return _through_aliases(defs, d.value, depth + 1)
    return d.value


def _loop_values(func_ir, defs, arg_types, call, funcname):
    """The values of the loop variable: ints for static_range, ``("item", seq_var, n)`` for
    static_iter."""
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
    seq = call.args[0]
    n = _tuple_length(defs, arg_types, seq)
    if n is None:
        raise UnsupportedError("tile.static_iter needs a tuple whose length is known at compile "
                               "time (a tuple expression, a tuple argument or a constant)", loc)
    return list(range(n)), seq


def _tuple_length(defs, arg_types, var, depth=0) -> Optional[int]:
    d = defs.get(var.name)
    if d is None or depth > 16:
        return None
    v = d.value
    if isinstance(v, ir.Var):
        return _tuple_length(defs, arg_types, v, depth + 1)
    if isinstance(v, ir.Expr) and v.op == "build_tuple":
        return len(v.items)
    if isinstance(v, ir.Arg):
        ty = arg_types.get(v.name)
        return len(ty.types) if isinstance(ty, types.BaseTuple) else None
    c = _constant(defs, var)
    return len(c) if isinstance(c, tuple) else None


def _unroll(func_ir, defs, arg_types, funcname, header, iternext, call):
    blocks = func_ir.blocks
    values, seq = _loop_values(func_ir, defs, arg_types, call, funcname)
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
                init = ir.Const(value, loc) if seq is None else \
                    ir.Expr.static_getitem(seq, value, None, loc)
                new.body[:0] = [ir.Assign(init, own, loc)] + \
                    [ir.Assign(own, v, loc) for v in item_vars]
            blocks[mapping[lab]] = new
    start = copies[0][body_entry] if copies else exit_
    # the pre-header(s) now jump straight into the first copy; the iterator is gone
    gone = {iternext.value.value.name}
    call_stmt = next(s for b in blocks.values() for s in b.body
                     if isinstance(s, ir.Assign) and s.value is call)
    for lab, blk in list(blocks.items()):
        if lab in loop.body:
            continue
        term = blk.terminator
        if isinstance(term, ir.Jump) and term.target == header:
            blk.body[-1] = ir.Jump(start, term.loc)
            blk.body = [s for s in blk.body if not _defines_iterator(s, gone)]
        blk.body = [s for s in blk.body if s is not call_stmt]     # typing refuses it alone
    for lab in loop.body:
        del blocks[lab]
    func_ir._definitions = build_definitions(blocks)


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
