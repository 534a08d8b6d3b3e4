"""Typed SSA Numba IR (with phis) -> region tree (``regions.py``).

The CFG is first *normalized* on a private copy of the typed blocks, so that the walk that builds
the tree is simple and every region has a single entry and a single exit:

1. branches on compile-time constants (``BooleanLiteral`` conditions) are folded and unreachable
   blocks removed;
2. dead phis are dropped; a live phi with an undefined incoming value is a *possibly undefined
   variable*: we report it as an error (``x`` assigned only inside a loop or one ``if`` arm and
   used afterwards) rather than silently using garbage;
3. forwarding blocks (only phis and a ``jump``: CPython 3.12+'s ``END_FOR`` trampolines, Numba's
   canonical loop latches) are removed, so ``continue`` is an edge to the loop header;
4. short-circuit conditions (``if a and b:``) become a value (``sel = b if a else False``) so that
   no block is the target of branches at two nesting levels;
5. every loop gets a preheader and a fresh exit block ``E`` (innermost loops first). ``E`` has a
   phi for every value that leaves the loop (loop-closed SSA: the phis of the original exit
   targets and every loop-defined value used after the loop). When the loop leaves to several
   targets (``return`` inside a loop; ``continue`` inside a rotated ``while``, which makes two
   nested natural loops) an *exit selector* phi (int32) records which one, and ``E`` dispatches
   on it with ``sel == k`` comparisons (synthetic typed statements);
6. joins shared by nested branches are split, so each ``if`` owns its join.

The join of a branch is found *by exclusion* (as in cuTile.jl): the one block outside the
branch's dominated arms that the arms lead to, ignoring ``continue`` (edges to the loop header)
and ``break`` (edges to the loop exit). None left means both arms leave the loop. At the top
level the single return block is an ordinary join, so ``return`` never ends up inside an ``if``.

``for`` over ``range`` becomes ``For`` (``has_break`` when it has any exit besides the range
test); every other loop becomes ``Loop``.
"""
from __future__ import annotations

import copy
import operator
from typing import Dict, List, Optional, Set

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.typing.templates import signature

from ..errors import CompileError, SourceLocation, TypingError, UnsupportedError
from .regions import (Block, Break, Carried, Const, Continue, For, If, Loop, Region, Result,
                      Return, StructuredKernel, Undef, Yield)


def structurize(typed) -> StructuredKernel:
    """Build the region tree of a ``TypedKernel`` (or a typed ``@tile.function``)."""
    s = _Structurizer(typed)
    s.normalize()
    body = s.build()
    return StructuredKernel(typed, body, s.typemap, s.calltypes, s.blocks)


# --------------------------------------------------------------------------------------------------
def _is_phi(stmt) -> bool:
    return isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and \
        stmt.value.op == "phi"


def _succs(block) -> List[int]:
    t = block.terminator
    if isinstance(t, ir.Jump):
        return [t.target]
    if isinstance(t, ir.Branch):
        return [t.truebr, t.falsebr]
    return []


def _retarget(term, old: int, new: int):
    """A copy of a terminator with edges to ``old`` sent to ``new``."""
    if isinstance(term, ir.Jump):
        return ir.Jump(new if term.target == old else term.target, term.loc)
    if isinstance(term, ir.Branch):
        return ir.Branch(term.cond, new if term.truebr == old else term.truebr,
                         new if term.falsebr == old else term.falsebr, term.loc)
    return term


def _uses(stmt) -> List[ir.Var]:
    """Variables read by a statement (phis: their incoming values)."""
    if isinstance(stmt, ir.Assign):
        v = stmt.value
        if isinstance(v, ir.Var):
            return [v]
        if isinstance(v, ir.Expr):
            if v.op == "phi":
                return [x for x in v.incoming_values if isinstance(x, ir.Var)]
            return v.list_vars()
        return []
    return stmt.list_vars()


def _rename(node, mapping: Dict[str, ir.Var]):
    """A renamed copy of a value / expression (never mutates ``node``)."""
    if isinstance(node, ir.Var):
        return mapping.get(node.name, node)
    if isinstance(node, list):
        return [_rename(n, mapping) for n in node]
    if isinstance(node, tuple):
        return tuple(_rename(n, mapping) for n in node)
    if isinstance(node, ir.Expr):
        new = copy.copy(node)
        object.__setattr__(new, "_kws", {k: _rename(v, mapping) for k, v in node._kws.items()})
        return new
    return node


class _Structurizer:
    def __init__(self, typed):
        self.typed = typed
        self.is_kernel = getattr(typed, "is_kernel", True)
        fir = typed.func_ir
        self.fname = typed.pyfunc.__name__ if hasattr(typed, "pyfunc") else fir.func_id.func_name
        self.blocks: Dict[int, ir.Block] = {}
        for label, b in fir.blocks.items():
            nb = ir.Block(b.scope, b.loc)
            nb.body = list(b.body)
            self.blocks[label] = nb
        self.entry = min(self.blocks)
        self.scope = self.blocks[self.entry].scope
        self.typemap = dict(typed.typemap)
        self.calltypes = dict(typed.calltypes)
        self.consts: Dict[str, Const] = {}      # synthetic constant var -> Const
        self.loop_exit: Dict[int, int] = {}     # loop header -> exit block
        self.join_owner: Dict[int, int] = {}    # split join block -> the branch that owns it
        self.skip: Set[int] = set()             # id() of statements consumed by For nodes
        self._next_label = max(self.blocks) + 1

    # --- small utilities --------------------------------------------------------------------------
    def new_label(self) -> int:
        self._next_label = max(self._next_label, max(self.blocks) + 1)
        label = self._next_label
        self._next_label += 1
        return label

    def new_block(self, loc) -> int:
        label = self.new_label()
        self.blocks[label] = ir.Block(self.scope, loc)
        return label

    def new_var(self, base: str, ty, loc) -> ir.Var:
        v = self.scope.redefine(base, loc)
        self.typemap[v.name] = ty
        return v

    def preds(self) -> Dict[int, List[int]]:
        p = {label: [] for label in self.blocks}
        for label in sorted(self.blocks):
            for s in _succs(self.blocks[label]):
                p[s].append(label)
        return p

    def phis(self, label) -> List[ir.Assign]:
        out = []
        for stmt in self.blocks[label].body:
            if not _is_phi(stmt):
                break
            out.append(stmt)
        return out

    def set_phis(self, label, phis):
        body = self.blocks[label].body
        n = len(self.phis(label))
        self.blocks[label].body = list(phis) + body[n:]

    @staticmethod
    def incoming(phi: ir.Assign, pred: int):
        p = phi.value
        for v, b in zip(p.incoming_values, p.incoming_blocks):
            if b == pred:
                return v
        raise KeyError(pred)

    @staticmethod
    def make_phi(target, pairs, loc) -> ir.Assign:
        e = ir.Expr.phi(loc)
        for b, v in pairs:
            e.incoming_blocks.append(b)
            e.incoming_values.append(v)
        return ir.Assign(e, target, loc)

    def replace_phi_incoming(self, label, fn):
        """Rebuild the phis of ``label`` with ``fn(phi) -> [(pred, value)]``."""
        new = []
        for phi in self.phis(label):
            new.append(self.make_phi(phi.target, fn(phi), phi.loc))
        self.set_phis(label, new)

    def retarget(self, label, old, new):
        b = self.blocks[label]
        b.body[-1] = _retarget(b.body[-1], old, new)

    def cfg(self):
        return compute_cfg_from_blocks(self.blocks)

    def def_blocks(self) -> Dict[str, int]:
        d = {}
        for label, b in self.blocks.items():
            for stmt in b.body:
                if isinstance(stmt, ir.Assign):
                    d[stmt.target.name] = label
        return d

    def loc(self, loc) -> Optional[SourceLocation]:
        if loc is None or getattr(loc, "filename", None) is None:
            return None
        return SourceLocation(loc.filename, loc.line, None, None, self.fname)

    # ==============================================================================================
    # Normalization
    def normalize(self):
        self.fold_constant_branches()
        self.remove_unreachable()
        if self.is_kernel:
            self.kernel_return_none()
        self.sync_phis_with_preds()
        self.drop_dead_phis()
        self.check_undefined()
        self.phis_to_copies()
        self.remove_forwarders()
        self.merge_straight_lines()
        self.short_circuits()
        self.phis_to_copies()
        self.normalize_loops()
        self.split_joins()
        self.phis_to_copies()

    def fold_constant_branches(self):
        for label, b in list(self.blocks.items()):
            t = b.terminator
            if isinstance(t, ir.Branch):
                ty = self.typemap.get(t.cond.name)
                if isinstance(ty, (types.BooleanLiteral, types.IntegerLiteral)):
                    taken = t.truebr if ty.literal_value else t.falsebr
                    b.body[-1] = ir.Jump(taken, t.loc)
                elif t.truebr == t.falsebr:
                    b.body[-1] = ir.Jump(t.truebr, t.loc)

    def remove_unreachable(self):
        seen, work = set(), [self.entry]
        while work:
            n = work.pop()
            if n in seen:
                continue
            seen.add(n)
            work.extend(_succs(self.blocks[n]))
        for label in list(self.blocks):
            if label not in seen:
                del self.blocks[label]

    def sync_phis_with_preds(self):
        """Drop phi incomings from blocks that are no longer predecessors."""
        preds = self.preds()
        for label in self.blocks:
            ps = set(preds[label])
            self.replace_phi_incoming(label, lambda phi: [
                (b, v) for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)
                if b in ps])

    def kernel_return_none(self):
        """Kernels return None: return a fresh constant so the merged return phi dies."""
        for label, b in self.blocks.items():
            t = b.terminator
            if isinstance(t, ir.Return):
                none = self.new_var("$return_none", types.none, t.loc)
                b.body[-1:] = [ir.Assign(ir.Const(None, t.loc), none, t.loc),
                               ir.Return(none, t.loc)]

    def _live_phis(self) -> Set[str]:
        phi_defs = {}
        used = set()
        for b in self.blocks.values():
            for stmt in b.body:
                if _is_phi(stmt):
                    phi_defs[stmt.target.name] = stmt
                else:
                    used.update(v.name for v in _uses(stmt))
        live = set()
        work = [n for n in phi_defs if n in used]
        while work:
            n = work.pop()
            if n in live:
                continue
            live.add(n)
            for v in _uses(phi_defs[n]):
                if v.name in phi_defs and v.name not in live:
                    work.append(v.name)
        return live

    def drop_dead_phis(self):
        live = self._live_phis()
        for b in self.blocks.values():
            b.body = [s for s in b.body if not _is_phi(s) or s.target.name in live]

    def check_undefined(self):
        for label in sorted(self.blocks):
            for phi in self.phis(label):
                if any(v is ir.UNDEFINED for v in phi.value.incoming_values):
                    self._raise_undefined(phi)

    def _raise_undefined(self, phi):
        from ..typing.diagnostics import user_name
        name = user_name(phi.target.name)
        # report at the first ordinary use of this value
        users = {phi.target.name}
        changed = True
        while changed:
            changed = False
            for b in self.blocks.values():
                for s in b.body:
                    if _is_phi(s) and s.target.name not in users and \
                            any(v.name in users for v in _uses(s)):
                        users.add(s.target.name)
                        changed = True
        loc = phi.loc
        for label in sorted(self.blocks):
            hit = next((s for s in self.blocks[label].body if not _is_phi(s) and
                        any(v.name in users for v in _uses(s))), None)
            if hit is not None:
                loc = hit.loc
                break
        raise TypingError(
            f"variable '{name}' may be used before it is assigned: on some path to this use it "
            f"was never assigned (for example it is only assigned inside a loop that may run zero "
            f"times, or in only one branch of an if). Assign '{name}' before the loop or the if "
            f"(e.g. {name} = tile.zeros(shape, dtype)); tilejit does not invent a value for it",
            self.loc(loc))

    def phis_to_copies(self):
        """Phis of single-predecessor blocks, and phis whose incoming values are all one
        variable, become plain copies."""
        preds = self.preds()
        keep = set(self.loop_exit.values()) | set(self.join_owner)
        for label, b in self.blocks.items():
            single = len(preds[label]) == 1
            phis = self.phis(label)
            if not phis or label in keep:   # loop results / if results (even with one path in)
                continue
            copies, kept = [], []
            for s in phis:
                vals = {v.name for v in s.value.incoming_values if isinstance(v, ir.Var)
                        and v.name != s.target.name}
                has_undef = any(v is ir.UNDEFINED for v in s.value.incoming_values)
                if single:
                    v = self.incoming(s, preds[label][0])
                    if v is not ir.UNDEFINED:
                        copies.append(ir.Assign(v, s.target, s.loc))
                elif len(vals) == 1 and not has_undef:
                    v = next(x for x in s.value.incoming_values if isinstance(x, ir.Var) and
                             x.name != s.target.name)
                    copies.append(ir.Assign(v, s.target, s.loc))
                else:
                    kept.append(s)
            b.body = kept + copies + b.body[len(phis):]

    # --- forwarding blocks ------------------------------------------------------------------------
    def remove_forwarders(self):
        changed = True
        while changed:
            changed = False
            preds = self.preds()
            users = self._phi_only_users()
            for label in sorted(self.blocks):
                if label == self.entry:
                    continue
                b = self.blocks[label]
                if not isinstance(b.terminator, ir.Jump):
                    continue
                if any(not _is_phi(s) for s in b.body[:-1]):
                    continue
                target = b.terminator.target
                if target == label:
                    continue
                mine = {p.target.name for p in self.phis(label)}
                if any(users.get(n, {None}) != {target} for n in mine):
                    continue
                if any(p in preds[target] or p == label for p in preds[label]):
                    continue
                self._bypass(label, target, preds[label])
                changed = True
                break

    def _phi_only_users(self) -> Dict[str, set]:
        """var -> labels of blocks whose *phis* use it (None: a non-phi use somewhere)."""
        out: Dict[str, set] = {}
        for label, b in self.blocks.items():
            for s in b.body:
                for v in _uses(s):
                    out.setdefault(v.name, set()).add(label if _is_phi(s) else None)
        return out

    def _bypass(self, label, target, label_preds):
        my_phis = {p.target.name: p for p in self.phis(label)}

        def new_incoming(phi):
            pairs = []
            for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks):
                if b != label:
                    pairs.append((b, v))
                    continue
                for p in label_preds:
                    if isinstance(v, ir.Var) and v.name in my_phis:
                        pairs.append((p, self.incoming(my_phis[v.name], p)))
                    else:
                        pairs.append((p, v))
            return pairs

        self.replace_phi_incoming(target, new_incoming)
        for p in label_preds:
            self.retarget(p, label, target)
        del self.blocks[label]

    def merge_straight_lines(self):
        """Append B to A when A jumps to B and B has no other predecessor."""
        changed = True
        while changed:
            changed = False
            preds = self.preds()
            for a in sorted(self.blocks):
                t = self.blocks[a].terminator
                if not isinstance(t, ir.Jump):
                    continue
                b = t.target
                if b == a or b == self.entry or preds[b] != [a]:
                    continue
                bb = self.blocks[b]
                body = [ir.Assign(self.incoming(s, a), s.target, s.loc) if _is_phi(s) else s
                        for s in bb.body]
                self.blocks[a].body = self.blocks[a].body[:-1] + body
                for succ in _succs(bb):
                    self.replace_phi_incoming(succ, lambda phi: [
                        (a if blk == b else blk, v)
                        for v, blk in zip(phi.value.incoming_values, phi.value.incoming_blocks)])
                del self.blocks[b]
                changed = True
                break

    # --- short-circuit conditions -----------------------------------------------------------------
    def short_circuits(self):
        while True:
            cfg = self.cfg()
            loops = cfg.loops()
            preds = self.preds()
            site = self._find_short_circuit(cfg, loops, preds)
            if site is None:
                return
            self._rewrite_short_circuit(*site, preds=preds)
            self.phis_to_copies()

    def _innermost_loop(self, loops, label):
        best = None
        for lp in loops.values():
            if label in lp.body and (best is None or len(lp.body) < len(best.body)):
                best = lp
        return best

    def _find_short_circuit(self, cfg, loops, preds):
        headers = set(loops)
        for a in sorted(self.blocks):
            ta = self.blocks[a].terminator
            if not isinstance(ta, ir.Branch) or a in headers:
                continue
            for B, S in ((ta.truebr, ta.falsebr), (ta.falsebr, ta.truebr)):
                if B == S or B in headers or preds[B] != [a]:
                    continue
                tb = self.blocks[B].terminator
                if not isinstance(tb, ir.Branch) or S not in (tb.truebr, tb.falsebr):
                    continue
                O = tb.falsebr if tb.truebr == S else tb.truebr
                if O == S:
                    continue
                # exits and continues are handled by the join rule; only merge real joins
                lp = self._innermost_loop(loops, a)
                if lp is not None and (S not in lp.body or S == lp.header):
                    continue
                return a, B, S, O
        return None

    def _rewrite_short_circuit(self, a, B, S, O, preds):
        loc = self.blocks[B].terminator.loc
        tb = self.blocks[B].terminator
        Z = self.new_block(loc)
        M = self.new_block(loc)
        # sel is "goes to O"; from Z (a took the S edge) it is False
        o_is_true = tb.truebr == O
        k = self.new_var("$short_circuit", types.literal(not o_is_true), loc)
        self.consts[k.name] = Const(not o_is_true, types.boolean)
        self.blocks[Z].body = [ir.Assign(ir.Const(not o_is_true, loc), k, loc), ir.Jump(M, loc)]
        sel = self.new_var("$cond", types.boolean, loc)
        m_phis = [self.make_phi(sel, [(B, tb.cond), (Z, k)], loc)]
        # values B defines flow through M (undefined on the Z path, which never reaches O)
        b_defs = [s.target for s in self.blocks[B].body if isinstance(s, ir.Assign)]
        used_outside = set()
        for label, blk in self.blocks.items():
            if label != B:
                for st in blk.body:
                    used_outside.update(v.name for v in _uses(st))
        rename = {}
        for v in b_defs:
            if v.name not in used_outside:
                continue
            vm = self.new_var(v.name, self.typemap[v.name], loc)
            m_phis.append(self.make_phi(vm, [(B, v), (Z, ir.UNDEFINED)], loc))
            rename[v.name] = vm
        # S's phis: the value from a (now via Z) and from B (now via M)
        s_new = []
        for phi in self.phis(S):
            va, vb = self.incoming(phi, a), self.incoming(phi, B)
            if isinstance(va, ir.Var) and isinstance(vb, ir.Var) and va.name == vb.name:
                sm = va                 # the same value on both paths: no phi needed
            else:
                sm = self.new_var(phi.target.name, self.typemap[phi.target.name], loc)
                m_phis.append(self.make_phi(sm, [(B, vb), (Z, va)], loc))
            pairs = [(b, v) for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)
                     if b not in (a, B)] + [(M, sm)]
            s_new.append(self.make_phi(phi.target, pairs, phi.loc))
        self.set_phis(S, s_new)
        # O's phis: the value from B now comes from M
        self.replace_phi_incoming(O, lambda phi: [
            (M if b == B else b, rename.get(v.name, v) if b == B and isinstance(v, ir.Var) else v)
            for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)])
        # rename every other use of B's definitions
        for label, blk in self.blocks.items():
            if label in (B, M, S) or not rename:
                continue
            blk.body = [self._rename_stmt(s, rename) if label != O or not _is_phi(s) else s
                        for s in blk.body]
        sb = self.blocks[S]
        sb.body = [s if _is_phi(s) else self._rename_stmt(s, rename) for s in sb.body]
        term = ir.Branch(sel, O, S, loc) if o_is_true else ir.Branch(sel, S, O, loc)
        self.blocks[M].body = m_phis + [term]
        self.blocks[B].body[-1] = ir.Jump(M, loc)
        self.retarget(a, S, Z)

    def _rename_stmt(self, stmt, mapping):
        if not any(v.name in mapping for v in _uses(stmt)):
            return stmt
        if isinstance(stmt, ir.Assign):
            new_val = _rename(stmt.value, mapping)
            new = ir.Assign(new_val, stmt.target, stmt.loc)
            if stmt.value in self.calltypes:
                self.calltypes[new_val] = self.calltypes[stmt.value]
            return new
        new = copy.copy(stmt)
        for k, v in list(vars(stmt).items()):
            if k != "loc":
                setattr(new, k, _rename(v, mapping))
        if stmt in self.calltypes:
            self.calltypes[new] = self.calltypes[stmt]
        return new

    # --- loops ------------------------------------------------------------------------------------
    def normalize_loops(self):
        done: Set[int] = set()
        while True:
            cfg = self.cfg()
            loops = cfg.loops()
            todo = [lp for h, lp in loops.items() if h not in done]
            if not todo:
                return
            lp = min(todo, key=lambda x: (len(x.body), x.header))   # innermost first
            self._ensure_preheader(lp)
            self._make_exit_block(self.cfg().loops()[lp.header])
            done.add(lp.header)

    def _ensure_preheader(self, lp):
        preds = self.preds()
        outside = [p for p in preds[lp.header] if p not in lp.body]
        if len(outside) == 1:
            return
        loc = self.blocks[lp.header].loc
        P = self.new_block(loc)
        p_phis, h_new = [], []
        for phi in self.phis(lp.header):
            pv = self.new_var(phi.target.name, self.typemap[phi.target.name], loc)
            p_phis.append(self.make_phi(pv, [(b, self.incoming(phi, b)) for b in outside], loc))
            pairs = [(b, v) for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)
                     if b not in outside] + [(P, pv)]
            h_new.append(self.make_phi(phi.target, pairs, phi.loc))
        self.set_phis(lp.header, h_new)
        self.blocks[P].body = p_phis + [ir.Jump(lp.header, loc)]
        for b in outside:
            self.retarget(b, lp.header, P)

    def _make_exit_block(self, lp):
        body = set(lp.body)
        edges = []
        for u in sorted(body):
            for x in _succs(self.blocks[u]):
                if x not in body:
                    edges.append((u, x))
        hloc = self.blocks[lp.header].loc
        if not edges:
            where = self.loc(hloc)
            if where is not None:
                from ..typing.diagnostics import enclosing_loop_line
                line = enclosing_loop_line(where.filename, where.line)
                if line is not None:
                    where = SourceLocation(where.filename, line, None, None, self.fname)
            raise UnsupportedError(
                "this loop never exits (no break, no false condition): an endless loop would "
                "hang the GPU; add a loop condition or a break", where)
        targets = []
        for _, x in edges:
            if x not in targets:
                targets.append(x)
        doms = self.cfg().dominators()
        defs = self.def_blocks()
        E = self.new_block(hloc)
        self.loop_exit[lp.header] = E

        # exit edges become edges into E (through an edge block when u has two of them)
        n_out: Dict[int, int] = {}
        for u, _ in edges:
            n_out[u] = n_out.get(u, 0) + 1
        sources = []            # (pred of E, original source u, original target x)
        for u, x in edges:
            b = self.blocks[u]
            if n_out[u] > 1:
                S = self.new_block(hloc)
                self.blocks[S].body = [ir.Jump(E, hloc)]
                b.body[-1] = _retarget_one(b.body[-1], x, S)
                sources.append((S, u, x))
            else:
                b.body[-1] = _retarget(b.body[-1], x, E)
                sources.append((u, u, x))

        e_phis: List[ir.Assign] = []
        # the exit selector
        sel = None
        if len(targets) > 1:
            sel = self.new_var("$exit_sel", types.int32, hloc)
            pairs = []
            for pred, u, x in sources:
                pairs.append((pred, self._const_var(targets.index(x) + 1)))
            e_phis.append(self.make_phi(sel, pairs, hloc))
        # the phis of every target, restricted to the loop's edges
        target_phi_values = {}
        for x in targets:
            for phi in self.phis(x):
                pe = self.new_var(phi.target.name, self.typemap[phi.target.name], hloc)
                pairs = []
                for pred, u, xx in sources:
                    pairs.append((pred, self.incoming(phi, u) if xx == x else ir.UNDEFINED))
                e_phis.append(self.make_phi(pe, pairs, hloc))
                target_phi_values[(x, phi.target.name)] = pe
        # values defined in the loop and used after it (loop-closed SSA)
        escaping = self._escaping(body)
        rename = {}
        for name in escaping:
            dl = defs[name]
            ve = self.new_var(name, self.typemap[name], hloc)
            pairs = []
            for pred, u, x in sources:
                ok = dl == u or dl in doms[u]
                pairs.append((pred, ir.Var(self.scope, name, hloc) if ok else ir.UNDEFINED))
            e_phis.append(self.make_phi(ve, pairs, hloc))
            rename[name] = ve
        if rename:
            for label, blk in self.blocks.items():
                if label in body or label == E:
                    continue
                blk.body = [self._rename_phi_from_outside(s, rename, body)
                            if _is_phi(s) else self._rename_stmt(s, rename) for s in blk.body]
        # dispatch
        dispatch_of = {}
        if sel is None:
            self.blocks[E].body = e_phis + [ir.Jump(targets[0], hloc)]
            dispatch_of[targets[0]] = E
        else:
            cur = E
            body_stmts = list(e_phis)
            for i, x in enumerate(targets[:-1]):
                k = i + 1
                c = self.new_var(f"$exit_sel_is_{k}", types.boolean, hloc)
                expr = ir.Expr.binop(operator.eq, sel, self._const_var(k), hloc)
                self.calltypes[expr] = signature(types.boolean, types.int32, types.literal(k))
                body_stmts.append(ir.Assign(expr, c, hloc))
                last = k == len(targets) - 1
                nxt = targets[-1] if last else self.new_block(hloc)
                body_stmts.append(ir.Branch(c, x, nxt, hloc))
                self.blocks[cur].body = body_stmts
                dispatch_of[x] = cur
                if last:
                    dispatch_of[nxt] = cur
                cur, body_stmts = nxt, []
        # targets now receive their phi values from the dispatch block
        for x in targets:
            srcs = {u for _, u, xx in sources if xx == x}

            def fix(phi, x=x, srcs=srcs):
                pairs = [(b, v) for v, b in zip(phi.value.incoming_values,
                                                phi.value.incoming_blocks) if b not in srcs]
                pairs.append((dispatch_of[x], target_phi_values[(x, phi.target.name)]))
                return pairs
            self.replace_phi_incoming(x, fix)

    def _rename_phi_from_outside(self, phi, rename, body):
        """Rename phi incomings that come from blocks outside the loop."""
        p = phi.value
        if not any(isinstance(v, ir.Var) and v.name in rename and b not in body
                   for v, b in zip(p.incoming_values, p.incoming_blocks)):
            return phi
        pairs = [(b, rename[v.name] if isinstance(v, ir.Var) and v.name in rename and
                  b not in body else v) for v, b in zip(p.incoming_values, p.incoming_blocks)]
        return self.make_phi(phi.target, pairs, phi.loc)

    def _escaping(self, body) -> List[str]:
        defined = set()
        for label in body:
            for s in self.blocks[label].body:
                if isinstance(s, ir.Assign):
                    defined.add(s.target.name)
        out = []
        for label, blk in self.blocks.items():
            if label in body:
                continue
            for s in blk.body:
                if _is_phi(s):
                    names = [v.name for v, b in zip(s.value.incoming_values, s.value.incoming_blocks)
                             if isinstance(v, ir.Var) and b not in body]
                else:
                    names = [v.name for v in _uses(s)]
                for n in names:
                    if n in defined and n not in out:
                        out.append(n)
        return sorted(out)

    def _const_var(self, k: int) -> ir.Var:
        name = f"$exit_sel_const_{k}"
        for vname, c in self.consts.items():
            if c.value == k and vname.startswith("$exit_sel_const"):
                return ir.Var(self.scope, vname, self.blocks[self.entry].loc)
        loc = self.blocks[self.entry].loc
        v = self.new_var(name, types.literal(k), loc)
        self.blocks[self.entry].body.insert(0, ir.Assign(ir.Const(k, loc), v, loc))
        self.consts[v.name] = Const(k, types.int32)
        return v

    # --- joins ------------------------------------------------------------------------------------
    def _analysis(self):
        cfg = self.cfg()
        doms = cfg.dominators()
        loops = cfg.loops()
        preds = self.preds()
        dominated: Dict[int, Set[int]] = {n: set() for n in self.blocks}
        for n, ds in doms.items():
            for d in ds:
                dominated[d].add(n)
        return cfg, doms, loops, preds, dominated

    def _fwd_preds(self, x, preds, doms):
        return [p for p in preds[x] if x not in doms[p]]      # drop back edges

    def region_and_join(self, b, an):
        """(region, join) of branch block ``b`` by the exclusion rule; join None if none."""
        cfg, doms, loops, preds, dominated = an
        t = self.blocks[b].terminator
        lp = self._innermost_loop(loops, b)
        exits = set()
        if lp is not None:
            exits = {lp.header, self.loop_exit.get(lp.header)}
        region = {b}
        for x in (t.truebr, t.falsebr):
            if x != b and x not in exits and self._fwd_preds(x, preds, doms) == [b]:
                region |= dominated[x]
        if lp is not None:
            region &= set(lp.body)      # an arm that dominates the loop exit stops at it
        region -= {j for j, owner in self.join_owner.items() if owner == b}
        targets = []
        for u in sorted(region):
            for y in _succs(self.blocks[u]):
                if y not in region and y not in exits and y not in targets:
                    targets.append(y)
        if len(targets) > 1:
            raise CompileError(
                f"internal error: unstructured control flow in '{self.fname}' (branch at block "
                f"{b} leads to {targets}); please report this kernel",
                self.loc(t.loc))
        return region, (targets[0] if targets else None)

    def split_joins(self):
        while True:
            an = self._analysis()
            preds = an[3]
            changed = False
            for b in sorted(self.blocks):
                if not isinstance(self.blocks[b].terminator, ir.Branch):
                    continue
                region, J = self.region_and_join(b, an)
                if J is None:
                    continue
                inside = [p for p in preds[J] if p in region]
                if len(inside) == len(preds[J]) or not inside:
                    continue
                self._split_join(J, inside, b)
                changed = True
                break
            if not changed:
                return

    def _split_join(self, J, inside, owner):
        loc = self.blocks[J].loc
        J2 = self.new_block(loc)
        self.join_owner[J2] = owner
        j2_phis = []

        def fix(phi):
            jv = self.new_var(phi.target.name, self.typemap[phi.target.name], loc)
            j2_phis.append(self.make_phi(jv, [(b, self.incoming(phi, b)) for b in inside], loc))
            return [(b, v) for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)
                    if b not in inside] + [(J2, jv)]
        self.replace_phi_incoming(J, fix)
        self.blocks[J2].body = j2_phis + [ir.Jump(J, loc)]
        for p in inside:
            self.retarget(p, J, J2)

    # ==============================================================================================
    # Building the tree
    def build(self) -> Region:
        self.an = self._analysis()
        cfg, doms, loops, preds, dominated = self.an
        self.loops = loops
        self.preds_map = preds
        defs = {}
        for b in self.blocks.values():
            for s in b.body:
                if isinstance(s, ir.Assign):
                    defs[s.target.name] = s
        self.for_info = {h: self._match_for(lp, defs) for h, lp in loops.items()}
        for info in self.for_info.values():
            if info is not None:
                self.skip.update(id(s) for s in info["consumed"])
        return self.walk(self.entry, None, None, None)

    def operand(self, v, ty_name=None):
        if v is ir.UNDEFINED:
            return Undef(self.typemap.get(ty_name) if ty_name else None)
        if v.name in self.consts:
            return self.consts[v.name]
        return v.name

    def edge_values(self, target, pred) -> list:
        return [self.operand(self.incoming(phi, pred), phi.target.name)
                for phi in self.phis(target)]

    def results_of(self, label) -> List[Result]:
        return [Result(p.target.name, self.typemap[p.target.name]) for p in self.phis(label)]

    def block_node(self, label) -> Block:
        stmts = [s for s in self.blocks[label].body[:-1]
                 if not _is_phi(s) and id(s) not in self.skip]
        return Block(label, stmts)

    def walk(self, cur, pred, stop, ctx, at_header=False) -> Region:
        nodes = []
        while True:
            if ctx is not None and cur == ctx[0] and not at_header:
                return Region(nodes, Continue(self.edge_values(cur, pred)))
            at_header = False
            if ctx is not None and cur == ctx[1]:
                return Region(nodes, Break(self.edge_values(cur, pred)))
            if cur == stop:
                return Region(nodes, Yield(self.edge_values(cur, pred)))
            if cur in self.loops and (ctx is None or cur != ctx[0]):
                nodes.append(self.build_loop(cur, pred))
                cur, pred = self.loop_exit[cur], None
            if self.phis(cur) and cur not in self.loops and cur not in self.loop_exit.values() \
                    and pred is not None and len(self.preds_map[cur]) > 1:
                raise CompileError(f"internal error: unexpected join at block {cur} while "
                                   f"structurizing '{self.fname}'; please report this kernel")
            blk = self.blocks[cur]
            node = self.block_node(cur)
            if node.stmts:
                nodes.append(node)
            term = blk.terminator
            if isinstance(term, ir.Return):
                return Region(nodes, Return())
            if isinstance(term, ir.Jump):
                pred, cur = cur, term.target
                continue
            _, join = self.region_and_join(cur, self.an)
            then = self.walk(term.truebr, cur, join, ctx)
            orelse = self.walk(term.falsebr, cur, join, ctx)
            node = If(term.cond.name, then, orelse,
                      self.results_of(join) if join is not None else [], term.loc)
            nodes.append(node)
            if join is None:
                return Region(nodes, None)
            if join == stop or (ctx is not None and join in ctx):
                raise CompileError(f"internal error: join {join} is a region boundary in "
                                   f"'{self.fname}'; please report this kernel")
            pred, cur = None, join

    # --- loops ------------------------------------------------------------------------------------
    def _match_for(self, lp, defs):
        """Recognize ``for v in range(...)``: returns a dict or None. ``defs``: variable name ->
        its defining assignment."""
        h = lp.header
        stmts = [s for s in self.blocks[h].body if not _is_phi(s)]
        term = self.blocks[h].terminator
        if not isinstance(term, ir.Branch):
            return None
        nxt = first = second = None
        for s in stmts:
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr):
                if s.value.op == "iternext":
                    nxt = s
                elif s.value.op == "pair_first":
                    first = s
                elif s.value.op == "pair_second":
                    second = s
        if not (nxt and first and second) or term.cond.name != second.target.name:
            return None
        chain = [nxt]
        it = nxt.value.value
        while it.name in defs and isinstance(defs[it.name].value, ir.Var):
            chain.append(defs[it.name])
            it = defs[it.name].value
        getiter = defs.get(it.name)
        if getiter is None or not (isinstance(getiter.value, ir.Expr) and
                                   getiter.value.op == "getiter"):
            return None
        rng = defs.get(getiter.value.value.name)
        if rng is None or not (isinstance(rng.value, ir.Expr) and rng.value.op == "call"):
            return None
        fty = self.typemap.get(rng.value.func.name)
        if getattr(fty, "typing_key", None) is not range:
            return None
        args = list(rng.value.args)
        iv_ty = self.typemap[first.target.name]
        zero, one = Const(0, iv_ty), Const(1, iv_ty)
        if len(args) == 1:
            start, stop, step = zero, args[0].name, one
        elif len(args) == 2:
            start, stop, step = args[0].name, args[1].name, one
        else:
            start, stop, step = args[0].name, args[1].name, args[2].name
        start, stop, step = (self._literal_or(x) for x in (start, stop, step))
        sign = None
        if isinstance(step, Const):
            if step.value == 0:
                raise UnsupportedError("range() step must not be zero", self.loc(rng.loc))
            sign = 1 if step.value > 0 else -1
        body_t = term.truebr
        consumed = [nxt, first, second, getiter, rng] + chain[1:]
        return dict(iv=first.target.name, iv_type=iv_ty, start=start, stop=stop, step=step,
                    sign=sign, body=body_t, consumed=consumed, loc=rng.loc)

    def _literal_or(self, x):
        if isinstance(x, Const):
            return x
        ty = self.typemap.get(x)
        if isinstance(ty, types.IntegerLiteral):
            return Const(ty.literal_value, types.unliteral(ty))
        return x

    def build_loop(self, h, pred):
        lp = self.loops[h]
        E = self.loop_exit[h]
        preheader = next(p for p in self.preds_map[h] if p not in lp.body)
        carried = [Carried(p.target.name, self.typemap[p.target.name],
                           self.operand(self.incoming(p, preheader), p.target.name))
                   for p in self.phis(h)]
        results = self.results_of(E)
        info = self.for_info.get(h)
        ctx = (h, E)
        if info is not None:
            has_break = any(p != h for p in self.preds_map[E])
            head = self.block_node(h)
            body = self.walk(info["body"], h, None, ctx)
            if head.stmts:
                body.nodes.insert(0, head)
            return For(info["iv"], info["iv_type"], info["start"], info["stop"], info["step"],
                       info["sign"], carried, body, results, self.edge_values(E, h), has_break,
                       info["loc"])
        body = self.walk(h, preheader, None, ctx, at_header=True)
        return Loop(carried, body, results, self.blocks[h].loc)


def _retarget_one(term, old, new):
    """Retarget only one edge ``old`` of a branch (the true edge first)."""
    if isinstance(term, ir.Branch):
        if term.truebr == old:
            return ir.Branch(term.cond, new, term.falsebr, term.loc)
        if term.falsebr == old:
            return ir.Branch(term.cond, term.truebr, new, term.loc)
    return _retarget(term, old, new)
