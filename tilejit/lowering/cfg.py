"""CFG normalization: the typed SSA blocks (with phis) reshaped so that regions are easy to build.

:class:`CFG` works on a private copy of the typed blocks (``structurize`` builds the region tree
from the result):

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
   on it with ``sel == k`` comparisons (synthetic typed statements).
"""
from __future__ import annotations

import copy
import operator
from typing import Dict, List, Optional, Set

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.typing.templates import signature

from ..errors import SourceLocation, TypingError, UnsupportedError
from .regions import Const


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


def _retarget_one(term, old, new):
    """Retarget only one edge ``old`` of a branch (the true edge first)."""
    if isinstance(term, ir.Branch):
        if term.truebr == old:
            return ir.Branch(term.cond, new, term.falsebr, term.loc)
        if term.falsebr == old:
            return ir.Branch(term.cond, term.truebr, new, term.loc)
    return _retarget(term, old, new)


class CFG:
    """A private, mutable copy of a typed function's CFG and the passes that normalize it."""

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
        self.latch_single_pass_fors()
        self.short_circuits()
        self.phis_to_copies()
        self.normalize_loops()

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
        # a use no definition dominates: the variable is assigned on other paths only (Numba's
        # SSA leaves such a use pointing at the one definition there is)
        doms = self.cfg().dominators()
        defs = self.def_blocks()
        for label in sorted(self.blocks):
            for stmt in self.blocks[label].body:
                if _is_phi(stmt):
                    continue
                for v in _uses(stmt):
                    d = defs.get(v.name)
                    if d is not None and d != label and d not in doms.get(label, ()):
                        self._undefined(v.name, stmt.loc)

    def _raise_undefined(self, phi):
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
        self._undefined(phi.target.name, loc)

    def _undefined(self, var: str, loc):
        """The error for ``var``, which no assignment reaches on some path to ``loc``."""
        from ..typing.diagnostics import user_name
        name = user_name(var)
        raise TypingError(
            f"undefined variable: '{name}' may be used before it is assigned: on some path to "
            f"this use it "
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
            # other preds that see B's definitions are dominated by B: they are by M now
            pairs = [(b, rename.get(v.name, v) if isinstance(v, ir.Var) else v)
                     for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)
                     if b not in (a, B)] + [(M, sm)]
            s_new.append(self.make_phi(phi.target, pairs, phi.loc))
        self.set_phis(S, s_new)
        # O's phis: the value from B now comes from M
        self.replace_phi_incoming(O, lambda phi: [
            (M if b == B else b, rename.get(v.name, v) if isinstance(v, ir.Var) else v)
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
    def latch_single_pass_fors(self):
        """A ``for`` whose body always leaves (every path ends in ``break`` or ``return``) has
        no back edge, so it is no loop in the CFG, and its ``iternext`` header would be left
        as plain statements. Give it a latch that is never taken (``if False: continue`` on
        one of the body's exit edges): it becomes an ordinary ``for`` that leaves in its first
        iteration, as Python runs it."""
        for h in sorted(self.blocks):
            blk = self.blocks[h]
            t = blk.terminator
            at = next((i for i, s in enumerate(blk.body) if isinstance(s, ir.Assign) and
                       isinstance(s.value, ir.Expr) and s.value.op == "iternext"), None)
            if at is None or not isinstance(t, ir.Branch):
                continue
            # with no back edge the header was merged into the block before it: split the code
            # before the loop off, so that it runs once and the entry is no loop header
            if any(not _is_phi(s) for s in blk.body[:at]):
                head = self.new_block(t.loc)
                self.blocks[head].body = blk.body[at:]
                blk.body = blk.body[:at] + [ir.Jump(head, t.loc)]
                for succ in _succs(self.blocks[head]):
                    self.replace_phi_incoming(succ, lambda phi: [
                        (head if b == h else b, v)
                        for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)])
                h = head
            if h in self.cfg().loops():
                continue
            doms = self.cfg().dominators()
            inside = {n for n, ds in doms.items() if t.truebr in ds}
            edge = next(((u, x) for u in sorted(inside) for x in _succs(self.blocks[u])
                         if x not in inside), None)
            if edge is None:
                continue
            u, x = edge
            loc = t.loc
            never = self.new_var("$never", types.boolean, loc)
            self.blocks[self.entry].body.insert(0, ir.Assign(ir.Const(False, loc), never, loc))
            L = self.new_block(loc)
            self.blocks[L].body = [ir.Branch(never, h, x, loc)]
            self.blocks[u].body[-1] = _retarget_one(self.blocks[u].body[-1], x, L)
            self.replace_phi_incoming(x, lambda phi: [
                (L if b == u else b, v)
                for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)])
            # the header's phis take, on the edge never taken, the value from before the loop
            outside = [p for p in self.preds()[h] if p != L]
            self.replace_phi_incoming(h, lambda phi: [
                (b, v) for v, b in zip(phi.value.incoming_values, phi.value.incoming_blocks)]
                + [(L, self.incoming(phi, outside[0]))])

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
        """Give loop ``lp`` a single exit block ``E`` in loop-closed SSA form (see step 5)."""
        body = set(lp.body)
        hloc = self.blocks[lp.header].loc
        edges = self._exit_edges(lp, body)
        targets = list(dict.fromkeys(x for _, x in edges))       # in edge order, no repeats
        self.loop_exit[lp.header] = self.merge_exits(body, edges, targets, hloc)

    def merge_exits(self, body, edges, targets, loc) -> int:
        """Route the exit ``edges`` of the blocks ``body`` to a new block ``E`` (returned): a
        selector phi says which of ``targets`` each edge was for, phis carry the targets'
        incoming values and the values ``body`` defines that are used after it (closed SSA),
        and ``E`` dispatches to the targets. A loop's exit block and a multi-exit branch's
        join."""
        doms = self.cfg().dominators()
        defs = self.def_blocks()
        E = self.new_block(loc)
        sources = self._route_exits_to(E, edges, loc)
        sel, e_phis = self._exit_selector(sources, targets, loc)
        target_phis, values = self._target_phis(sources, targets, loc)
        e_phis += target_phis
        e_phis += self._close_escaping_values(body, E, sources, defs, doms, loc)
        dispatch_of = self._dispatch_exits(E, e_phis, sel, targets, loc)
        self._take_target_phis_from_dispatch(targets, sources, dispatch_of, values)
        return E

    def _exit_edges(self, lp, body):
        """The loop's exit edges ``(u, x)``; an endless loop is an error (it would hang)."""
        edges = [(u, x) for u in sorted(body) for x in _succs(self.blocks[u]) if x not in body]
        if edges:
            return edges
        where = self.loc(self.blocks[lp.header].loc)
        if where is not None:
            from ..typing.diagnostics import enclosing_loop_line
            line = enclosing_loop_line(where.filename, where.line)
            if line is not None:
                where = SourceLocation(where.filename, line, None, None, self.fname)
        raise UnsupportedError(
            "this loop never exits (no break, no false condition): an endless loop would "
            "hang the GPU; add a loop condition or a break", where)

    def _route_exits_to(self, E, edges, loc):
        """Point every exit edge at ``E`` (through an edge block when its source has two exits).
        Returns ``(pred of E, original source, original target)`` per edge."""
        n_out: Dict[int, int] = {}
        for u, _ in edges:
            n_out[u] = n_out.get(u, 0) + 1
        sources = []
        for u, x in edges:
            b = self.blocks[u]
            if n_out[u] > 1:
                S = self.new_block(loc)
                self.blocks[S].body = [ir.Jump(E, loc)]
                b.body[-1] = _retarget_one(b.body[-1], x, S)
                sources.append((S, u, x))
            else:
                b.body[-1] = _retarget(b.body[-1], x, E)
                sources.append((u, u, x))
        return sources

    def _exit_selector(self, sources, targets, loc):
        """With several targets, an int32 phi in ``E`` saying which one (1-based): ``(var, phis)``."""
        if len(targets) < 2:
            return None, []
        sel = self.new_var("$exit_sel", types.int32, loc)
        pairs = [(pred, self._const_var(targets.index(x) + 1)) for pred, _, x in sources]
        return sel, [self.make_phi(sel, pairs, loc)]

    def _target_phis(self, sources, targets, loc):
        """A phi in ``E`` for every phi of every target, over the loop's edges only. Returns
        ``(phis, {(target, phi name): new var})``."""
        phis, values = [], {}
        for x in targets:
            for phi in self.phis(x):
                pe = self.new_var(phi.target.name, self.typemap[phi.target.name], loc)
                pairs = [(pred, self.incoming(phi, u) if xx == x else ir.UNDEFINED)
                         for pred, u, xx in sources]
                phis.append(self.make_phi(pe, pairs, loc))
                values[(x, phi.target.name)] = pe
        return phis, values

    def _close_escaping_values(self, body, E, sources, defs, doms, loc):
        """Loop-closed SSA: a phi in ``E`` for every loop-defined value used after the loop, and
        those uses renamed to it. Returns the phis."""
        phis, rename = [], {}
        for name in self._escaping(body):
            dl = defs[name]
            ve = self.new_var(name, self.typemap[name], loc)
            pairs = [(pred, ir.Var(self.scope, name, loc) if dl == u or dl in doms[u]
                      else ir.UNDEFINED) for pred, u, _ in sources]
            phis.append(self.make_phi(ve, pairs, loc))
            rename[name] = ve
        if rename:
            for label, blk in self.blocks.items():
                if label in body or label == E:
                    continue
                blk.body = [self._rename_phi_from_outside(s, rename, body)
                            if _is_phi(s) else self._rename_stmt(s, rename) for s in blk.body]
        return phis

    def _dispatch_exits(self, E, e_phis, sel, targets, loc):
        """Fill ``E``: its phis, then a jump to the single target or a chain of ``sel == k``
        branches. Returns ``{target: the block that jumps to it}``."""
        if sel is None:
            self.blocks[E].body = e_phis + [ir.Jump(targets[0], loc)]
            return {targets[0]: E}
        dispatch_of = {}
        cur, stmts = E, list(e_phis)
        for i, x in enumerate(targets[:-1]):
            k = i + 1
            c = self.new_var(f"$exit_sel_is_{k}", types.boolean, loc)
            expr = ir.Expr.binop(operator.eq, sel, self._const_var(k), loc)
            self.calltypes[expr] = signature(types.boolean, types.int32, types.literal(k))
            stmts.append(ir.Assign(expr, c, loc))
            last = k == len(targets) - 1
            nxt = targets[-1] if last else self.new_block(loc)
            stmts.append(ir.Branch(c, x, nxt, loc))
            self.blocks[cur].body = stmts
            dispatch_of[x] = cur
            if last:
                dispatch_of[nxt] = cur
            cur, stmts = nxt, []
        return dispatch_of

    def _take_target_phis_from_dispatch(self, targets, sources, dispatch_of, values):
        """The targets' phis now receive the loop's values from the dispatch blocks."""
        for x in targets:
            srcs = {u for _, u, xx in sources if xx == x}

            def fix(phi, x=x, srcs=srcs):
                pairs = [(b, v) for v, b in zip(phi.value.incoming_values,
                                                phi.value.incoming_blocks) if b not in srcs]
                pairs.append((dispatch_of[x], values[(x, phi.target.name)]))
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
