"""Typed SSA Numba IR (with phis) -> region tree (``regions.py``).

The CFG is first normalized (:mod:`.cfg`: constant branches folded, forwarders removed, short
circuits turned into values, loops given a preheader and a single exit block), then joins shared
by nested branches are split, so each ``if`` owns its join, and the tree is built by a walk in
which every region has a single entry and a single exit.

The join of a branch is found *by exclusion* (as in cuTile.jl): the one block outside the
branch's dominated arms that the arms lead to, ignoring ``continue`` (edges to the loop header)
and ``break`` (edges to the loop exit). None left means both arms leave the loop. At the top
level the single return block is an ordinary join, so ``return`` never ends up inside an ``if``.

``for`` over ``range`` becomes ``For`` (``has_break`` when it has any exit besides the range
test); every other loop becomes ``Loop``.
"""
from __future__ import annotations

from typing import Dict, List, Set

from numba.core import ir, types

from ..errors import CompileError, UnsupportedError
from .cfg import CFG, _is_phi, _succs
from .regions import (Block, Break, Carried, Const, Continue, For, If, Loop, Region, Result,
                      Return, StructuredKernel, Undef, Yield)


def structurize(typed) -> StructuredKernel:
    """Build the region tree of a ``TypedKernel`` (or a typed ``@tile.function``)."""
    s = _Structurizer(typed)
    s.normalize()
    s.split_joins()
    s.phis_to_copies()
    body = s.build()
    return StructuredKernel(typed, body, s.typemap, s.calltypes, s.blocks)


class _Structurizer(CFG):
    """Region building over a normalized :class:`~.cfg.CFG`."""

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
        region, targets = self.region_and_targets(b, an)
        if len(targets) > 1:
            raise CompileError(
                f"internal error: unstructured control flow in '{self.fname}' (branch at block "
                f"{b} leads to {targets}); please report this kernel",
                self.loc(self.blocks[b].terminator.loc))
        return region, (targets[0] if targets else None)

    def region_and_targets(self, b, an):
        """The region of branch block ``b`` by the exclusion rule and the blocks it leads to
        (its join, when there is one; ``continue`` and ``break`` edges left out)."""
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
        # a join split off for a branch ends that branch: b's region stops at b's own joins and
        # at those of branches around b (not at those of branches nested in its arms)
        for j, owner in self.join_owner.items():
            if j in region and j != b and (owner == b or owner not in region):
                region -= dominated[j] | {j}
        targets = []
        for u in sorted(region):
            for y in _succs(self.blocks[u]):
                if y not in region and y not in exits and y not in targets:
                    targets.append(y)
        return region, targets

    def split_joins(self):
        while True:
            an = self._analysis()
            preds = an[3]
            changed = False
            found = {}                      # branch -> (region, join)
            for b in sorted(self.blocks):
                if not isinstance(self.blocks[b].terminator, ir.Branch):
                    continue
                region, targets = self.region_and_targets(b, an)
                if len(targets) > 1:
                    self._single_exit(b, region, targets)
                    changed = True
                    break
                if targets:
                    found[b] = (region, targets[0])
            for b, (region, J) in ([] if changed else found.items()):
                inside = [p for p in preds[J] if p in region]
                if not inside:
                    continue
                # an inner branch whose join is also its enclosing branch's (the enclosing
                # one's other arm breaks, continues or returns) gets a join of its own
                shared = any(J2 == J and b in r2 for b2, (r2, J2) in found.items() if b2 != b)
                if len(inside) == len(preds[J]) and not shared:
                    continue
                self._split_join(J, inside, b)
                changed = True
                break
            if not changed:
                return

    def _single_exit(self, b, region, targets):
        """Give the region of branch ``b`` one exit when it leads to several blocks: every
        edge out of it goes to a new join ``J`` whose selector phi says which target the edge
        was for, and ``J`` dispatches on it, as a loop's exit block does. That is the shape
        of ``if c0 or c1 and c2:`` (the ``or``'s right side, itself a short circuit, reaches
        both the ``then`` block and the join) and of ``break``/``continue`` arms that meet
        after a branch."""
        loc = self.blocks[b].terminator.loc
        edges = [(u, x) for u in sorted(region) for x in _succs(self.blocks[u])
                 if x in targets]
        J = self.merge_exits(region - {b}, edges, targets, loc)    # b itself dominates J
        self.join_owner[J] = b

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
        self._def_count = {}
        for b in self.blocks.values():
            for s in b.body:
                if isinstance(s, ir.Assign):
                    defs[s.target.name] = s
                    self._def_count[s.target.name] = self._def_count.get(s.target.name, 0) + 1
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
        sign, grid_stride = None, False
        if isinstance(step, Const):
            if step.value == 0:
                raise UnsupportedError("range() step must not be zero", self.loc(rng.loc))
            sign = 1 if step.value > 0 else -1
        elif self._is_grid_extent(step, defs):
            sign = 1        # a grid-stride loop: no zero check, the plain trip count
            grid_stride = True
        body_t = term.truebr
        consumed = [nxt, first, second, getiter, rng] + chain[1:]
        return dict(iv=first.target.name, iv_type=iv_ty, start=start, stop=stop, step=step,
                    sign=sign, grid_stride=grid_stride, body=body_t, consumed=consumed,
                    loc=rng.loc)

    def _is_grid_extent(self, name, defs) -> bool:
        """``name`` is assigned once, from ``tile.num_blocks(axis)``: at least 1 at run time."""
        d = defs.get(name)
        if self._def_count.get(name) != 1 or d is None or not (
                isinstance(d.value, ir.Expr) and d.value.op == "call"):
            return False
        from ..language import num_blocks
        return getattr(self.typemap.get(d.value.func.name), "typing_key", None) is num_blocks

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
                       info["loc"], info["grid_stride"])
        body = self.walk(h, preheader, None, ctx, at_header=True)
        return Loop(carried, body, results, self.blocks[h].loc)
