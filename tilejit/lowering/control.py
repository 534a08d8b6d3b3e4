"""Control flow and memory tokens of the lowering: regions, ``if``, ``for`` and ``loop``.

:class:`ControlFlow` is the part of :class:`~tilejit.lowering.lower.Lowering` that walks the
region tree: each ``If``/``For``/``Loop`` becomes the Tile IR op with its carried values (the
variables the region tree says flow through it) and, when something inside reads or writes an
array with tokens, the memory tokens (:mod:`.tokens` has the rules).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, List, Sequence

from numba.core import ir, types

from .. import dtypes as D
from ..dtypes import DType
from ..tileir import TOKEN, Value
from ..typing.templates._base import static_value
from ..typing.types import DTypeType, EnumMemberType, dtype_of
from . import loop_split
from . import regions as R
from .emit import TV
from .tokens import LoopAccesses, MemoryTokens

# calls that read or write memory through their array arguments (see _touches_written_memory)
_MEMORY_OPS = frozenset(["Partition.load", "Partition.store", "tile.store", "TileView.load",
                         "TileView.store", "Tensor.load", "tile.load", "tile.gather",
                         "tile.scatter", "tile.load_tile_like", "TiledView.load",
                         "TiledView.store"]) | {f"TiledView.atomic_store_{m}" for m in
                                               ("add", "max", "min", "and", "or", "xor")}


def _is_static_type(ty) -> bool:
    return isinstance(ty, (types.Literal, DTypeType, EnumMemberType)) or (
        isinstance(ty, types.BaseTuple) and all(_is_static_type(t) for t in ty.types))


class ControlFlow(MemoryTokens):
    """Region walking, carried values and memory tokens (a part of ``Lowering``)."""

    # ================================================================================== regions
    def region(self, region: R.Region) -> None:
        for node in region.nodes:
            if isinstance(node, R.Block):
                for stmt in node.stmts:
                    self.stmt(stmt)
            elif isinstance(node, R.If):
                self.if_(node)
            elif isinstance(node, R.For):
                if node.has_break:
                    self.for_as_loop(node)
                else:
                    self.for_(node)
            elif isinstance(node, R.Loop):
                self.loop(node)
        t = region.term
        if isinstance(t, R.Return):
            self.b.return_()
        elif isinstance(t, R.Continue):
            self.b.continue_(self.loop_values(t.values))
        elif isinstance(t, R.Break):
            self.b.break_(self.exit_values(t.values))
        elif t is None and self.loop_stack and R.ends_without_fallthrough(region) and \
                region.nodes[-1].cond not in self.static_conds:
            # Both arms left the loop or continued: Tile IR still wants a terminator here (a
            # decided if's taken arm, lowered inline, ended the block itself).
            self.b.continue_(self.current_loop_values())

    # --- token plumbing ----------------------------------------------------------------------
    @contextmanager
    def _token_scope(self, node):
        """Lower ``node`` (an if or a loop) carrying the memory tokens only when something in it
        reads or writes a written array: a loop of loads from read-only tensors (attention's
        inner loop) then has no token iteration values."""
        if not self.tokens or self._touches_written_memory(node):
            yield
            return
        outer, self.tokens = self.tokens, {}
        try:
            yield
        finally:
            self.tokens = outer

    def _touches_written_memory(self, node) -> bool:
        """Whether ``node`` has a memory op on an array with tokens, or (for an ``if``)
        leaves an enclosing loop with ``continue``/``break``, whose operands carry tokens."""
        key = id(node)
        hit = self._touch_memo.get(key)
        if hit is None:
            hit = self._touch_memo[key] = self._scan_touches(node, isinstance(node, R.If))
        return hit

    def _scan_touches(self, node, leaving_matters: bool) -> bool:
        if isinstance(node, R.Block):
            return any(self._stmt_touches(st) for st in node.stmts)
        if isinstance(node, R.Region):
            if leaving_matters and isinstance(node.term, (R.Continue, R.Break)):
                return True
            return any(self._scan_touches(n, leaving_matters) for n in node.nodes)
        if isinstance(node, R.If):
            return self._scan_touches(node.then, leaving_matters) or \
                self._scan_touches(node.orelse, leaving_matters)
        # a loop: its own continue/break carry its own (absent) tokens
        return self._scan_touches(node.body, False)

    def _stmt_touches(self, stmt) -> bool:
        if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and
                stmt.value.op == "call"):
            return False
        e = stmt.value
        if e not in self.calltypes:
            return False
        op = self.call_info(e).op
        if op not in _MEMORY_OPS and not op.startswith("tile.atomic"):
            return False
        names = [v.name for v in e.args] + [v.name for _, v in e.kws]
        d = self._defs.get(e.func.name)
        if isinstance(d, ir.Expr) and d.op == "getattr":
            names.append(d.value.name)
        return any(self.takes_tokens(self.typemap.get(n)) for n in names)

    # --- token plumbing: values ---------------------------------------------------------------
    def token_names(self) -> List[str]:
        return sorted(self.tokens)

    def token_values(self) -> List[Value]:
        out = []
        for nm in self.token_names():
            out += self.tokens[nm]
        return out

    def set_tokens(self, values: Sequence[Value]) -> None:
        it = iter(values)
        for nm in self.token_names():
            self.tokens[nm] = [next(it), next(it)]

    # --- carried values ----------------------------------------------------------------------
    def value_as(self, operand, nbtype) -> Value:
        """``operand`` materialized as a Tile IR value of the (Numba) type ``nbtype`` (a scalar
        joined with a tile is broadcast to its shape)."""
        v = self.tv(self.value(operand), dtype_of(nbtype), nbtype)
        shape = getattr(nbtype, "shape", ())
        return (self.em.broadcast(v, shape) if v.shape != shape else v).value

    def result_types(self, results) -> list:
        """Tile IR result types of an ``if``/``loop`` defining ``results``, plus the tokens."""
        return [self.tir_type(r.type) for r in results] + [TOKEN] * (2 * len(self.tokens))

    def loop_values(self, values) -> List[Value]:
        """Operands of a ``continue``: the innermost loop's carried variables + tokens."""
        frame = self.loop_stack[-1]
        out = [frame["next_iv"]()] if frame["kind"] == "for_as_loop" else []
        for c, v in zip(frame["carried"], values):
            if not frame["static"].get(c.name):
                out.append(self.value_as(v, c.type))
        return out + self.token_values()

    def current_loop_values(self) -> List[Value]:
        frame = self.loop_stack[-1]
        return self.loop_values([c.name for c in frame["carried"]])

    def exit_values(self, values) -> List[Value]:
        """Operands of a ``break``: the innermost loop's results + tokens."""
        frame = self.loop_stack[-1]
        out = [self.value_as(v, r.type) for r, v in zip(frame["results"], values)]
        return out + self.token_values()

    # --- if ----------------------------------------------------------------------------------
    def if_(self, node: R.If) -> None:
        with self._token_scope(node):
            self._if(node)

    def _if(self, node: R.If) -> None:
        self.loc = self._loc(node.loc) or self.loc
        if node.cond in self.static_conds:
            self._if_decided(node, self.static_conds[node.cond])
            return
        cond = self.tv(self.value(node.cond), D.bool_)
        results = node.results
        op = self.b.if_(cond.value, self.result_types(results))
        saved = dict(self.tokens)
        for arm, region in ((0, node.then), (1, node.orelse)):
            self.tokens = {k: list(v) for k, v in saved.items()}
            with self.b.at(op.regions[arm]):
                self.region(region)
                if isinstance(region.term, R.Yield):
                    vals = [self.value_as(v, r.type) for r, v in zip(results, region.term.values)]
                    self.b.yield_(vals + self.token_values())
                elif region.term is None and not R.ends_without_fallthrough(region):
                    self.b.yield_([self.zero_of(r.type).value for r in results] + self.token_values())
        self._bind_results(results, op, saved)

    def _if_decided(self, node: R.If, value: bool) -> None:
        """An ``if`` whose condition is known here: the taken arm, inline (an arm that does not
        yield ends the enclosing loop body with its own ``continue``)."""
        arm = node.then if value else node.orelse
        self.region(arm)
        if not isinstance(arm.term, R.Yield):
            return
        vals = [self.value_as(v, r.type) for r, v in zip(node.results, arm.term.values)]
        for r, v in zip(node.results, vals):
            self.env[r.name] = TV(v, dtype_of(r.type))

    # --- loops -------------------------------------------------------------------------------
    def _carried_setup(self, carried):
        dyn, static = [], {}
        for c in carried:
            if _is_static_type(c.type):
                static[c.name] = True
                self.env[c.name] = static_value(c.type)
            else:
                dyn.append(c)
        return dyn, static

    def for_(self, node: R.For) -> None:
        with self._token_scope(node):
            self._for(node)

    def _for(self, node: R.For) -> None:
        self.loc = self._loc(node.loc) or self.loc
        dyn, static = self._carried_setup(node.carried)
        iv_dt = self._iv_dtype(node)
        start = self.as_dtype_tv(node.start, iv_dt)
        stop = self.as_dtype_tv(node.stop, iv_dt)
        step = self.as_dtype_tv(node.step, iv_dt)
        self._check_step(node, step, iv_dt)
        split = loop_split.plan(node, self._defs, self.typemap)
        if split is not None:
            mid = self._split_point(split, start, stop, iv_dt)
            self._for_op(node, dyn, static, start, mid, step, iv_dt, {
                c: not pol for c, pol in split.conds.items()})
            self._for_op(node, dyn, static, mid, stop, step, iv_dt, dict(split.conds),
                         resume=True)
        else:
            self._for_op(node, dyn, static, start, stop, step, iv_dt, {})
        for r, ev in zip(node.results, node.exit_values):
            self.env[r.name] = self.value(ev)

    def _split_point(self, split, start: TV, stop: TV, iv_dt: DType) -> TV:
        """``clamp(bound + offset, start, stop)`` in the loop variable's dtype (the clamp runs in
        the wider of the two dtypes, so a bound outside the loop's range is harmless)."""
        em = self.em
        b = self.tv(self.value(split.bound), None)
        wide = D.int64 if (b.dtype.bits > 32 or iv_dt.bits > 32) else D.int32
        t = em.cast(b, wide)
        if split.offset:
            t = em.binary("+", t, em.const(split.offset, wide), wide)
        t = em.binary("max", t, em.cast(start, wide), wide)
        t = em.binary("min", t, em.cast(stop, wide), wide)
        return em.cast(t, iv_dt)

    def _for_op(self, node: R.For, dyn, static, start: TV, stop: TV, step: TV, iv_dt: DType,
                decided: Dict[str, bool], resume: bool = False) -> None:
        """One Tile IR ``for`` over ``node``'s body; ``decided`` fixes conditions for this range
        (a split loop's half). The carried values start from their inits, or with ``resume``
        from the previous half's results."""
        inits = [self.value_as(c.name if resume else c.init, c.type) for c in dyn] + \
            self.token_values()
        if node.step_sign == 1:
            op = self.b.for_(start.value, stop.value, step.value, inits)
            args = op.regions[0].args
            iv = TV(args[0], iv_dt)
        else:
            # Tile IR `for` needs a positive step: iterate j over the trip count.
            zero, one = self.em.const(0, iv_dt), self.em.const(1, iv_dt)
            trips = self._trip_count(start, stop, step, node.step_sign, iv_dt)
            op = self.b.for_(zero.value, trips.value, one.value, inits)
            args = op.regions[0].args
            j = TV(args[0], iv_dt)
            with self.b.at(op.regions[0]):
                iv = self.em.binary("+", start, self.em.binary("*", j, step, iv_dt), iv_dt)
        self.env[node.iv] = iv
        saved_tokens = self._enter_body(dyn, args[1:])
        self.loop_stack.append({"kind": "for", "carried": node.carried, "static": static,
                                "results": node.results})
        # only a grid-stride loop's stores may be made parallel (tokens.py): others keep no record
        accesses = LoopAccesses(op.regions[0], iv.value) if node.grid_stride else None
        if accesses is not None:
            self.loop_accesses.append(accesses)
        outer_conds = self.static_conds
        self.static_conds = {**outer_conds, **decided}
        try:
            with self.b.at(op.regions[0]):
                self.region(node.body)
        finally:
            self.static_conds = outer_conds
            self.loop_stack.pop()
            if accesses is not None:
                self.loop_accesses.pop()
        if accesses is not None:
            self.parallelize_loop_stores(accesses, saved_tokens)
        # the carried names now hold the final values (the exit values read them)
        self._bind_results(dyn, op, saved_tokens)

    def _check_step(self, node: R.For, step: TV, dt: DType) -> None:
        """A step known only at run time may be zero: Python raises ValueError, so the kernel
        stops with a device assertion instead of silently running no iteration."""
        if node.step_sign is not None:
            return
        where = f" ({self.loc.filename}:{self.loc.line})" if self.loc is not None else ""
        ok = self.em.compare("!=", step, self.em.const(0, dt))
        self.b.assert_(ok.value, f"range() arg 3 must not be zero{where}")

    def _iv_dtype(self, node: R.For) -> DType:
        """int32 when every bound fits (faster index math), else the loop variable's dtype."""
        d = dtype_of(node.iv_type) or D.int64
        vals = [self.value(x) for x in (node.start, node.stop, node.step)]
        if all((isinstance(v, TV) and v.dtype in (D.int32, D.int16, D.int8, D.uint8, D.uint16)) or
               (isinstance(v, int) and -2 ** 31 <= v < 2 ** 31) for v in vals):
            return D.int32
        return d

    def _trip_count(self, start: TV, stop: TV, step: TV, sign, dt: DType) -> TV:
        em = self.em
        zero, one = em.const(0, dt), em.const(1, dt)
        if sign == -1:
            # ceil((start - stop) / -step) = (start - stop - step - 1) // -step
            neg = em.negate(step)
            n = em.floordiv(em.binary("-", em.binary("+", em.binary("-", start, stop, dt), neg, dt),
                                      one, dt), neg)
        else:
            pos = em.compare(">", step, zero)
            neg = em.negate(step)
            up = em.floordiv(em.binary("-", em.binary("+", em.binary("-", stop, start, dt), step,
                                                       dt), one, dt), step)
            down = em.floordiv(em.binary("-", em.binary("+", em.binary("-", start, stop, dt), neg,
                                                         dt), one, dt), neg)
            n = em.where(pos, up, down, dt)
        return em.binary("max", n, zero, dt)

    def for_as_loop(self, node: R.For) -> None:
        """A ``for`` with ``break``: a Tile IR ``loop`` carrying the induction variable."""
        with self._token_scope(node):
            self._for_as_loop(node)

    def _for_as_loop(self, node: R.For) -> None:
        self.loc = self._loc(node.loc) or self.loc
        dyn, static = self._carried_setup(node.carried)
        iv_dt = self._iv_dtype(node)
        em = self.em
        start = self.as_dtype_tv(node.start, iv_dt)
        stop = self.as_dtype_tv(node.stop, iv_dt)
        step = self.as_dtype_tv(node.step, iv_dt)
        self._check_step(node, step, iv_dt)
        inits = [start.value] + [self.value_as(c.init, c.type) for c in dyn] + self.token_values()
        op = self.b.loop(inits, self.result_types(node.results))
        args = op.regions[0].args
        iv = TV(args[0], iv_dt)
        saved_tokens = self._enter_body(dyn, args[1:])
        with self.b.at(op.regions[0]):
            # exhausted range -> break with the exit values
            if node.step_sign == 1:
                done = em.compare(">=", iv, stop)
            elif node.step_sign == -1:
                done = em.compare("<=", iv, stop)
            else:
                pos = em.compare(">", step, em.const(0, iv_dt))
                done = em.where(pos, em.compare(">=", iv, stop), em.compare("<=", iv, stop),
                                D.bool_)
            ex = self.b.if_(done.value)
            with self.b.at(ex.regions[0]):
                self.b.break_([self.value_as(v, r.type)
                               for r, v in zip(node.results, node.exit_values)]
                              + self.token_values())
            with self.b.at(ex.regions[1]):
                self.b.yield_()
            self.env[node.iv] = iv
            frame = {"kind": "for_as_loop", "carried": node.carried, "static": static,
                     "results": node.results,
                     "next_iv": lambda: em.binary("+", iv, step, iv_dt).value}
            self.loop_stack.append(frame)
            self.region(node.body)
            self.loop_stack.pop()
        self._bind_results(node.results, op, saved_tokens)

    def _enter_body(self, dyn, args) -> Dict[str, List[Value]]:
        """At the top of a loop body: bind the dynamic carried variables ``dyn`` to the leading
        block arguments ``args`` and take the memory tokens from the ones after them. Returns the
        outer tokens (for :meth:`_bind_results`)."""
        for c, a in zip(dyn, args):
            self.env[c.name] = TV(a, dtype_of(c.type))
        saved_tokens = dict(self.tokens)
        if self.tokens:
            self.set_tokens(args[len(dyn):])
        return saved_tokens

    def _bind_results(self, names, op, saved_tokens) -> None:
        """After an ``if`` or loop op: restore the outer tokens, bind ``names`` to its leading
        results and take the memory tokens it carried out as the new ones."""
        self.tokens = saved_tokens
        for r, v in zip(names, op.results):
            self.env[r.name] = TV(v, dtype_of(r.type))
        if self.tokens:
            self.set_tokens(op.results[len(names):])

    def loop(self, node: R.Loop) -> None:
        with self._token_scope(node):
            self._loop(node)

    def _loop(self, node: R.Loop) -> None:
        self.loc = self._loc(node.loc) or self.loc
        dyn, static = self._carried_setup(node.carried)
        inits = [self.value_as(c.init, c.type) for c in dyn] + self.token_values()
        op = self.b.loop(inits, self.result_types(node.results))
        args = op.regions[0].args
        saved_tokens = self._enter_body(dyn, args)
        self.loop_stack.append({"kind": "loop", "carried": node.carried, "static": static,
                                "results": node.results})
        with self.b.at(op.regions[0]):
            self.region(node.body)
        self.loop_stack.pop()
        self._bind_results(node.results, op, saved_tokens)
