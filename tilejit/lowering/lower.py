"""Region tree + typed Numba IR -> Tile IR.

The lowering walks the structured kernel (:mod:`.regions`). Each Numba variable maps to one of:

* a :class:`~.emit.TV` (a Tile IR value with its dtype; scalars are 0-d tiles),
* a Python value for compile-time constants (literal-typed variables, dtypes, enum members,
  modules, kernel-language stubs, constant parameters, tuples of these),
* an :class:`~.abi.ArrayParam` (tensor or partition parameter) or a :class:`ViewRef`
  (``x.partition(shape)``), or a Python tuple mixing the above.

Memory ordering: reads of read-only tensors need no token. Every *written* array (partitions and
``tile.atomic`` tensors) has a pair of tokens, ``last store`` and ``last access``: a load waits
for the last store (read after write), a store or atomic waits for every earlier access (write
after read/write). The tokens are carried through ``if`` results and loop iteration values like
ordinary variables, so ordering survives control flow.
"""
from __future__ import annotations

import enum
import operator
import types as pytypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numba.core import ir, types

from .. import dtypes as D
from .. import language as L
from ..dtypes import DType
from ..errors import CompileError, SourceLocation, TypingError, UnsupportedError
from ..tileir import TOKEN, Block, Builder, Module, OptHints, TileType, Value
from ..tileir import attrs as A
from ..typing import promotion
from ..typing.templates._base import NOT_STATIC, static_value
from ..typing.types import DTypeType, EnumMemberType, TileType as NbTile, dtype_of
from . import regions as R
from .abi import ArrayParam, ScalarParam, build_entry
from .emit import TV, Emitter, elem

if TYPE_CHECKING:
    from ..typing.pipeline import CallInfo


@dataclass
class ViewRef:
    """``x.partition(shape)`` inside a kernel: a tile view of an array parameter."""

    array: ArrayParam
    tile_shape: Tuple[int, ...]
    padding: Optional[str] = "zero"


@dataclass
class _Undef:
    type: object


_BINOPS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.and_: "&",
           operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
           operator.iadd: "+", operator.isub: "-", operator.imul: "*", operator.itruediv: "/",
           operator.ifloordiv: "//", operator.imod: "%", operator.ipow: "**",
           operator.iand: "&", operator.ior: "|", operator.ixor: "^", operator.ilshift: "<<",
           operator.irshift: ">>"}
_COMPARES = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
             operator.eq: "==", operator.ne: "!="}
_PADDING = {"ZERO": "zero", "NEG_ZERO": "neg_zero", "NAN": "nan", "POS_INF": "pos_inf",
            "NEG_INF": "neg_inf"}
_ORDER = {"WEAK": "weak", "RELAXED": "relaxed", "ACQUIRE": "acquire", "RELEASE": "release",
          "ACQ_REL": "acq_rel"}
_SCOPE = {"BLOCK": "tl_blk", "DEVICE": "device", "SYS": "sys", "SYSTEM": "sys"}


def _is_static_type(ty) -> bool:
    return isinstance(ty, (types.Literal, DTypeType, EnumMemberType)) or (
        isinstance(ty, types.BaseTuple) and all(_is_static_type(t) for t in ty.types))


class Lowering:
    """Lowers one structured kernel to a Tile IR module with a single entry function."""

    def __init__(self, structured: R.StructuredKernel, *, name: Optional[str] = None,
                 arch: str = "sm_90", bytecode_version=(13, 4), hints: Optional[dict] = None,
                 const_grid: Optional[tuple] = None):
        self.sk = structured
        self.const_grid = const_grid
        self.tk = structured.typed
        self.typemap = structured.typemap
        self.calltypes = structured.calltypes
        self.arch = arch
        self.version = tuple(bytecode_version)[:2]
        self.filename = self.tk.pyfunc.__code__.co_filename
        kparams = [p for p in self.tk.params if p.kind != "constant"]
        opt = self.opt_hints(dict(hints)) if hints else None
        self.fn, self.b, self.params = build_entry(
            name or self.tk.name, [p.name for p in kparams], [p.key for p in kparams],
            hints=opt, loc=SourceLocation(self.filename, self.tk.pyfunc.__code__.co_firstlineno))
        self.em = Emitter(self.b)
        # Values every region may use (block ids, views, constants of the prologue) are created
        # in a side block and spliced into the entry block after the ABI prologue.
        self.hoist_block = Block()
        self.hoist = Builder(self.hoist_block)
        self.hoist_em = Emitter(self.hoist)
        self._bids = None
        self.env: Dict[str, object] = {}
        for p in self.tk.params:
            if p.kind == "constant":
                self.env[p.name] = p.value
            else:
                q = self.params[p.name]
                self.env[p.name] = q.value if isinstance(q, ScalarParam) else q
        self._defs = self._definitions(structured.blocks)
        self.loc: Optional[SourceLocation] = None
        # memory tokens of written arrays: name -> [last store, last access]
        self.tokens: Dict[str, List[Value]] = {}
        for nm, p in self.params.items():
            if isinstance(p, ArrayParam) and p.written:
                t = self.b.make_token()
                self.tokens[nm] = [t, t]
        self.loop_stack: List[list] = []       # carried names of enclosing loops

    # ================================================================================== driver
    def run(self) -> Module:
        start = len(self.fn.body.ops)
        self.region(self.sk.body)
        if not self.fn.body.ops or self.fn.body.ops[-1].name != "return":
            self.b.return_()
        body = self.fn.body
        for op in self.hoist_block.ops:
            op.parent = body
        body.ops[start:start] = self.hoist_block.ops
        return Module(self.fn.name, [self.fn])

    def error(self, msg: str, cls=TypingError) -> CompileError:
        return cls(msg, self.loc)

    # ================================================================================== values
    def value(self, operand):
        if isinstance(operand, ir.Var):
            operand = operand.name
        if isinstance(operand, R.Const):
            return operand.value
        if isinstance(operand, R.Undef):
            return _Undef(operand.type)
        if operand is None:
            return None
        try:
            return self.env[operand]
        except KeyError:
            raise self.error(f"internal error: variable {operand!r} used before lowering defined "
                             f"it (please report this)") from None

    def type_of(self, operand):
        if isinstance(operand, ir.Var):
            operand = operand.name
        if isinstance(operand, (R.Const, R.Undef)):
            return operand.type
        return self.typemap.get(operand)

    def tv(self, v, dtype: Optional[DType] = None, nbtype=None) -> TV:
        """Materialize ``v`` as a typed Tile IR value (constants become constant ops)."""
        if isinstance(v, TV):
            return self.em.cast(v, dtype) if dtype is not None and v.dtype is not dtype else v
        if isinstance(v, _Undef):
            return self.zero_of(v.type)
        if isinstance(v, (bool, int, float, np.number, np.bool_)):
            if dtype is None:
                dtype = promotion.weak_default(nbtype) if nbtype is not None else (
                    D.bool_ if isinstance(v, bool) else D.int32 if isinstance(v, int) else D.float32)
            return self.em.const(v, dtype)
        raise self.error(f"expected a tile or a number here, got {type(v).__name__}")

    def zero_of(self, nbtype) -> TV:
        d = dtype_of(nbtype)
        shape = nbtype.shape if isinstance(nbtype, NbTile) else ()
        if d is None:
            raise self.error(f"cannot create a placeholder value of type {nbtype}")
        return self.em.const(0, d, shape)

    def tir_type(self, nbtype):
        d = dtype_of(nbtype)
        if d is None:
            raise self.error(f"{nbtype} cannot flow through control flow (it is not a tile or "
                             f"number)", UnsupportedError)
        return TileType(elem(d), nbtype.shape if isinstance(nbtype, NbTile) else ())

    def as_dtype_tv(self, operand, dtype: DType) -> TV:
        return self.tv(self.value(operand), dtype, self.type_of(operand))

    def static(self, operand):
        v = self.value(operand)
        if isinstance(v, (TV, ArrayParam, ViewRef)):
            raise self.error("this value must be a compile-time constant")
        return v

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
        elif t is None and self.loop_stack and R.ends_without_fallthrough(region):
            # Both arms left the loop or continued: Tile IR still wants a terminator here.
            self.b.continue_(self.current_loop_values())

    # --- token plumbing ----------------------------------------------------------------------
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
        """``operand`` materialized as a Tile IR value of the (Numba) type ``nbtype``."""
        return self.tv(self.value(operand), dtype_of(nbtype), nbtype).value

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
        self.loc = self._loc(node.loc) or self.loc
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
        self.loc = self._loc(node.loc) or self.loc
        dyn, static = self._carried_setup(node.carried)
        iv_dt = self._iv_dtype(node)
        start = self.as_dtype_tv(node.start, iv_dt)
        stop = self.as_dtype_tv(node.stop, iv_dt)
        step = self.as_dtype_tv(node.step, iv_dt)
        inits = [self.value_as(c.init, c.type) for c in dyn] + self.token_values()
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
        with self.b.at(op.regions[0]):
            self.region(node.body)
        self.loop_stack.pop()
        # results: exit values evaluated on the final carried values
        self._bind_results(dyn, op, saved_tokens)
        for r, ev in zip(node.results, node.exit_values):
            self.env[r.name] = self.value(ev)

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
        self.loc = self._loc(node.loc) or self.loc
        dyn, static = self._carried_setup(node.carried)
        iv_dt = self._iv_dtype(node)
        em = self.em
        start = self.as_dtype_tv(node.start, iv_dt)
        stop = self.as_dtype_tv(node.stop, iv_dt)
        step = self.as_dtype_tv(node.step, iv_dt)
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

    # ================================================================================== statements
    def _loc(self, loc) -> Optional[SourceLocation]:
        if loc is None:
            return None
        if isinstance(loc, SourceLocation):
            return loc
        line = getattr(loc, "line", None)
        if line is None:
            return None
        return SourceLocation(getattr(loc, "filename", self.filename) or self.filename, line,
                              getattr(loc, "col", None))

    def stmt(self, stmt) -> None:
        self.loc = self._loc(getattr(stmt, "loc", None)) or self.loc
        self.b.loc = self.loc
        if isinstance(stmt, ir.Assign):
            target = stmt.target.name
            ty = self.typemap.get(target)
            if ty is not None and _is_static_type(ty) and not self._has_effects(stmt.value):
                self.env[target] = static_value(ty)
                return
            self.env[target] = self.expr(stmt.value, target)
        elif isinstance(stmt, (ir.Del, ir.Return)):
            return
        elif isinstance(stmt, ir.Print):
            self.print_stmt(stmt)
        else:
            raise self.error(f"unsupported statement in a tile kernel: {stmt}", UnsupportedError)

    @staticmethod
    def _has_effects(expr) -> bool:
        return isinstance(expr, ir.Expr) and expr.op == "call"

    def expr(self, e, target: str):
        if isinstance(e, ir.Var):
            return self.value(e)
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, (ir.Global, ir.FreeVar)):
            return e.value
        if isinstance(e, ir.Arg):
            return self.env[e.name] if e.name in self.env else self.value(e.name)
        if not isinstance(e, ir.Expr):
            raise self.error(f"unsupported expression {e}", UnsupportedError)
        op = e.op
        if op in ("binop", "inplace_binop"):
            return self.binop(e, target)
        if op == "unary":
            return self.unary(e, target)
        if op == "call":
            return self.call(e, target)
        if op == "getattr":
            return self.getattr_(e, target)
        if op in ("static_getitem", "getitem"):
            return self.getitem(e, target)
        if op == "build_tuple":
            return tuple(self.value(x) for x in e.items)
        if op == "exhaust_iter":
            v = self.value(e.value)
            return tuple(v) if isinstance(v, tuple) else v
        if op == "cast":
            return self.value(e.value)
        if op == "phi":
            raise self.error("internal error: phi left in a block (please report this)")
        raise self.error(f"unsupported expression '{op}' in a tile kernel", UnsupportedError)

    # --- operators ---------------------------------------------------------------------------
    def binop(self, e, target):
        fn = e.fn
        lt, rt = self.type_of(e.lhs), self.type_of(e.rhs)
        rty = self.typemap[target]
        lhs, rhs = self.value(e.lhs), self.value(e.rhs)
        if fn in _COMPARES:
            if not isinstance(lhs, TV) and not isinstance(rhs, TV):
                return fn(lhs, rhs)
            d = promotion.result_dtype((lt, rt), _COMPARES[fn])
            return self.em.compare(_COMPARES[fn], self.tv(lhs, d, lt), self.tv(rhs, d, rt), d)
        if fn in (operator.matmul, operator.imatmul):
            return self.matmul(self.tv(lhs, None, lt), self.tv(rhs, None, rt), dtype_of(rty))
        if fn in (operator.pow, operator.ipow) and isinstance(rhs, int) and not isinstance(rhs, bool) \
                and not dtype_of(rty).is_float:
            return self.em.int_power(self.tv(lhs, dtype_of(rty), lt), rhs)
        sym = _BINOPS.get(fn)
        if sym is None:
            raise self.error(f"unsupported operator {fn}", UnsupportedError)
        d = dtype_of(rty)
        if sym == "/":
            cd = promotion.result_dtype((lt, rt), "/")
            cd = d if not cd.is_float else cd
            return self.em.binary("/", self.tv(lhs, cd, lt), self.tv(rhs, cd, rt), d)
        return self.em.binary(sym, self.tv(lhs, d, lt), self.tv(rhs, d, rt), d)

    def unary(self, e, target):
        fn = e.fn
        v = self.value(e.value)
        vt = self.type_of(e.value)
        rty = self.typemap[target]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and \
                fn in (operator.neg, operator.pos):
            return fn(v)          # a constant stays one: -math.inf can be a reduce identity
        if fn is operator.not_ or getattr(fn, "__name__", "") == "not_":
            return self.em.logical_not(self.tv(v, None, vt))
        x = self.tv(v, dtype_of(rty) if dtype_of(rty) and not dtype_of(rty).is_bool else None, vt)
        if fn is operator.neg:
            return self.em.negate(x)
        if fn is operator.pos:
            return x
        if fn is operator.invert:
            return self.em.invert(x)
        raise self.error(f"unsupported unary operator {fn}", UnsupportedError)

    def matmul(self, a: TV, b: TV, out_dt: DType) -> TV:
        acc_dt = D.int32 if a.dtype.is_integer else (D.float64 if a.dtype is D.float64 else D.float32)
        shape = a.shape[:-1] + (b.shape[-1],)
        acc = self.em.const(0, acc_dt, shape)
        a2, b2 = self._mma_operands(a, b)
        r = self.em.mma(a2, b2, acc)
        return self.em.cast(r, out_dt) if out_dt is not None else r

    def _mma_operands(self, a: TV, b: TV):
        if a.dtype is not b.dtype and not (a.dtype.is_fp8 and b.dtype.is_fp8):
            d = promotion.promote_strong(a.dtype, b.dtype) if not (
                a.dtype is D.tfloat32 or b.dtype is D.tfloat32) else D.tfloat32
            a, b = self.em.cast(a, d), self.em.cast(b, d)
        if a.dtype is D.float32:      # f32 x f32 runs on the tensor cores as tf32
            a, b = self.em.cast(a, D.tfloat32), self.em.cast(b, D.tfloat32)
        return a, b

    # --- attributes --------------------------------------------------------------------------
    def getattr_(self, e, target):
        obj = self.value(e.value)
        attr = e.attr
        rty = self.typemap.get(target)
        if isinstance(rty, types.BoundFunction):
            return ("method", obj, attr)
        if isinstance(obj, ArrayParam):
            if attr == "shape" or attr == "tensor_shape":
                return tuple(obj.shape)
            if attr == "block":
                return tuple(self.bid(i) for i in range(obj.ndim))
            if attr == "dtype":
                return obj.dtype
            if attr == "ndim":
                return obj.ndim
        if isinstance(obj, TV):
            if attr == "T":
                return self.em.permute(obj, tuple(reversed(range(len(obj.shape)))))
            if attr == "dtype":
                return obj.dtype
            if attr == "shape":
                return obj.shape
        if isinstance(obj, ViewRef):
            if attr == "tile_shape":
                return obj.tile_shape
            if attr == "dtype":
                return obj.array.dtype
        if isinstance(obj, (pytypes.ModuleType, type, enum.EnumMeta)) or hasattr(obj, attr):
            try:
                return getattr(obj, attr)
            except AttributeError:
                pass
        raise self.error(f"unsupported attribute '{attr}' of {self.type_of(e.value)}",
                         UnsupportedError)

    def getitem(self, e, target):
        obj = self.value(e.value)
        idx = e.index if e.op == "static_getitem" else self.value(e.index)
        if isinstance(idx, TV):
            raise self.error("indexing needs a compile-time constant index")
        if isinstance(obj, tuple):
            return obj[idx]
        if isinstance(obj, TV):
            rty = self.typemap[target]
            return self.em.reshape(obj, rty.shape)
        raise self.error(f"cannot index {self.type_of(e.value)}")

    # --- printing ----------------------------------------------------------------------------
    def print_stmt(self, stmt):
        vals = [self.value(a) for a in stmt.args]
        self._printf(" ".join(self._fmt_for(v) for v in vals) + "\n", vals)

    def _fmt_for(self, v) -> str:
        if isinstance(v, TV):
            return "%f" if v.dtype.is_float else "%d"
        return str(v).replace("%", "%%")

    def _printf(self, fmt: str, vals) -> None:
        args = []
        for v in vals:
            if isinstance(v, TV):
                if v.dtype.is_float and v.dtype.bits < 32 or v.dtype.is_fp8 or v.dtype is D.tfloat32:
                    v = self.em.cast(v, D.float32)
                args.append(v.value)
        self.b.print_(fmt, args)

    # ================================================================================== calls
    def bid(self, axis: int) -> TV:
        if not 0 <= axis < 3:
            raise self.error(f"tile.bid(axis): axis must be 0, 1 or 2, got {axis}")
        if self._bids is None:
            self._bids = self.hoist.get_tile_block_id()
        return TV(self._bids[axis], D.int32)

    @staticmethod
    def _definitions(blocks) -> Dict[str, object]:
        defs = {}
        for blk in (blocks or {}).values():
            for st in blk.body:
                if isinstance(st, ir.Assign):
                    defs[st.target.name] = st.value
        return defs

    def call_info(self, e) -> "CallInfo":
        """Which op a typed call is, with its arguments bound by parameter name."""
        from ..typing.pipeline import CallInfo
        sig = self.calltypes[e]
        fnty = self.typemap[e.func.name]
        receiver = None
        if isinstance(fnty, types.BoundFunction):
            template = fnty.template
            d = self._defs.get(e.func.name)
            if not (isinstance(d, ir.Expr) and d.op == "getattr"):
                defs = self.tk.func_ir._definitions.get(e.func.name) or []
                d = next((x for x in defs if isinstance(x, ir.Expr) and x.op == "getattr"), None)
            receiver = d.value if d is not None else None
        else:
            template = next((t for t in getattr(fnty, "templates", ()) if hasattr(t, "op")), None)
        op = getattr(template, "op", None) or getattr(fnty.typing_key, "__name__",
                                                      str(fnty.typing_key))
        stub = getattr(template, "stub", None)
        pysig = getattr(sig, "pysig", None)
        if pysig is not None:
            lead = (receiver,) if receiver is not None else ()
            ba = pysig.bind(*lead, *e.args, **dict(e.kws))
            bound = {name: ba.arguments.get(name) for name in pysig.parameters}
        else:
            bound = {f"arg{i}": a for i, a in enumerate(e.args)}
            bound.update(dict(e.kws))
        return CallInfo(op, stub, sig, bound, receiver)

    def call(self, e, target):
        fnval = self.value(e.func)
        if fnval is slice or fnval is range:
            vals = [self.static(a) for a in e.args]
            return fnval(*vals)
        info = self.call_info(e)
        handler = _CALLS.get(info.op)
        if handler is None:
            raise self.error(f"{info.op} is not supported by the Tile IR lowering yet",
                             UnsupportedError)
        args = {k: v for k, v in info.args.items()}
        return handler(self, info, args, self.typemap[target])

    # helpers for handlers
    def arg(self, args, name):
        v = args.get(name)
        if isinstance(v, tuple):              # *args
            return tuple(self.value(x) for x in v)
        return None if v is None else self.value(v)

    def arg_type(self, info, args, name):
        v = args.get(name)
        if v is None:
            pysig = info.signature.pysig
            names = list(pysig.parameters)
            i = names.index(name) - (1 if info.receiver is not None else 0)
            return info.signature.args[i] if 0 <= i < len(info.signature.args) else None
        return self.type_of(v)

    def static_arg(self, info, args, name, default=None):
        v = args.get(name)
        if v is None:
            p = info.signature.pysig.parameters.get(name)
            if p is not None and p.default is not p.empty:
                return p.default
            t = self.arg_type(info, args, name)
            sv = static_value(t) if t is not None else NOT_STATIC
            return default if sv is NOT_STATIC else sv
        return self.static(v)

    def index_tvs(self, index, dtype: DType) -> List[TV]:
        if not isinstance(index, tuple):
            index = (index,)
        return [self.tv(i, dtype) for i in index]

    # --- memory ------------------------------------------------------------------------------
    def load_view(self, arr: ArrayParam, view: Value, index: Sequence[TV], hints=None) -> TV:
        return self.ordered_read(arr, lambda t: self.b.load_view_tko(
            view, [i.value for i in index], token=t, hints=hints))

    def store_view(self, arr: ArrayParam, view: Value, index: Sequence[TV], t: TV, hints=None) -> None:
        t = self._to_mem(t, arr)
        self.ordered_write(arr, lambda tok: (None, self.b.store_view_tko(
            t.value, view, [i.value for i in index], token=tok, hints=hints)))

    def ordered_read(self, arr: ArrayParam, emit) -> TV:
        """A read of ``arr``: ``emit(token)`` emits it after the last store and returns ``(memory
        value, result token)``; the read becomes part of the last access. Returns the value in
        its tile dtype."""
        tok = self.tokens.get(arr.name)
        v, rtok = emit(tok[0] if tok else None)
        if tok:
            tok[1] = self.b.join_tokens([tok[1], rtok])
        return self._from_mem(v, arr)

    def ordered_write(self, arr: ArrayParam, emit):
        """A write to ``arr``: ``emit(token)`` emits it after every earlier access and returns
        ``(result, result token)``; the write becomes the last store. Returns the result."""
        tok = self.tokens.get(arr.name)
        result, rtok = emit(tok[1] if tok else None)
        if tok is not None:
            tok[0] = tok[1] = rtok
        return result

    def _to_mem(self, t: TV, arr: ArrayParam) -> TV:
        if arr.dtype.is_bool:
            return self.em.cast(self.em.cast(t, D.bool_), D.uint8)
        return self.em.cast(t, arr.dtype)

    def _from_mem(self, v: Value, arr: ArrayParam) -> TV:
        """A value loaded from ``arr`` as a tile of its dtype (bools are bytes in memory)."""
        if arr.dtype.is_bool:
            return self.em.cast(TV(v, D.uint8), D.bool_)
        return TV(v, arr.dtype)

    def opt_hints(self, d: dict) -> OptHints:
        """Optimization hints ``d`` for the target (per architecture before bytecode 13.3)."""
        key = "default" if self.version >= (13, 3) else self.arch
        return OptHints.make({key: d})

    def hints(self, latency=None, allow_tma=True) -> Optional[OptHints]:
        d = {}
        if latency is not None:
            d["latency"] = int(latency)
        if allow_tma is False:
            d["allow_tma"] = False
        return self.opt_hints(d) if d else None

    def element_pointers(self, arr: ArrayParam, indices, shape) -> Tuple[Value, TV]:
        """Pointers to ``arr[indices]`` (index tiles broadcast to ``shape``) and the in-bounds
        mask."""
        em = self.em
        idx_dt = arr.index_dtype
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != arr.ndim:
            raise self.error(f"{arr.name} has {arr.ndim} dimensions but {len(indices)} index "
                             f"tile(s) were given")
        offset = None
        mask = None
        for i, ix in enumerate(indices):
            t = em.broadcast(self.tv(ix, idx_dt), shape)
            term = em.binary("*", t, em.broadcast(arr.stride(i, self.hoist_em), shape), idx_dt)
            offset = term if offset is None else em.binary("+", offset, term, idx_dt)
            ok = em.binary("&", em.compare(">=", t, em.const(0, idx_dt, shape)),
                           em.compare("<", t, em.broadcast(arr.shape[i], shape)), D.bool_)
            mask = ok if mask is None else em.binary("&", mask, ok, D.bool_)
        base = self.b.broadcast(self.b.reshape(arr.base, (1,) * len(shape)), shape) if shape else arr.base
        ptrs = self.b.offset(base, offset.value)
        return ptrs, mask


# ====================================================================================== handlers
_CALLS = {}


def handles(*ops):
    def deco(fn):
        for o in ops:
            _CALLS[o] = fn
        return fn
    return deco


def _dt_of(rty) -> DType:
    return dtype_of(rty)


def _padding_arg(lw, info, args) -> Optional[str]:
    """The Tile IR padding value of a ``padding=`` argument (None: no padding)."""
    pad = lw.static_arg(info, args, "padding", L.PaddingMode.ZERO)
    return _PADDING.get(getattr(pad, "name", "ZERO"), "zero") if pad is not None else None


def _load_hints(lw, info, args) -> Optional[OptHints]:
    """The optimization hints of a load's ``latency=`` and ``allow_tma=`` arguments."""
    return lw.hints(lw.static_arg(info, args, "latency", None),
                    lw.static_arg(info, args, "allow_tma", True))


def _and_user_mask(lw, args, mask: TV, shape) -> TV:
    """``mask`` and the call's ``mask=`` argument (broadcast to ``shape``), if any."""
    user_mask = lw.arg(args, "mask")
    if user_mask is None:
        return mask
    return lw.em.binary("&", mask, lw.em.broadcast(lw.tv(user_mask, D.bool_), shape), D.bool_)


@handles("tile.bid")
def _bid(lw, info, args, rty):
    return lw.bid(lw.static_arg(info, args, "axis"))


@handles("tile.num_blocks")
def _num_blocks(lw, info, args, rty):
    axis = lw.static_arg(info, args, "axis")
    if lw.const_grid is not None:      # .const_grid(...): the grid is part of the kernel
        return lw.em.const(lw.const_grid[axis], D.int32)
    return TV(lw.b.get_num_tile_blocks()[axis], D.int32)


@handles("tile.cdiv")
def _cdiv(lw, info, args, rty):
    d = _dt_of(rty)
    a = lw.tv(lw.arg(args, "a"), d)
    b = lw.tv(lw.arg(args, "b"), d)
    one = lw.em.const(1, d)
    return lw.em.floordiv(lw.em.binary("-", lw.em.binary("+", a, b, d), one, d), b)


@handles("tile.load_tile_like")
def _load_tile_like(lw, info, args, rty):
    x = lw.arg(args, "x")
    z = lw.arg(args, "z")
    if not isinstance(x, ArrayParam) or not isinstance(z, ArrayParam) or z.tile_shape is None:
        raise lw.error("tile.load_tile_like(x, z) needs a tensor x and a partition z")
    # API.md: out-of-bounds elements are unspecified here (the store that follows is masked);
    # no padding value lets tileiras skip the masking of loads.
    view = x.partition_view(lw.hoist, z.tile_shape, None)
    idx = [lw.bid(i) for i in range(len(z.tile_shape))]
    return lw.load_view(x, view, idx)


@handles("Tensor.load", "tile.load")
def _tensor_load(lw, info, args, rty):
    x = lw.arg(args, "x") if "x" in args else lw.value(info.receiver)
    if isinstance(x, ViewRef):
        x = x.array
    shape = tuple(lw.static_arg(info, args, "shape"))
    padding = _padding_arg(lw, info, args)
    index = lw.arg(args, "index")
    view = x.partition_view(lw.hoist, shape, padding)
    return lw.load_view(x, view, lw.index_tvs(index, D.int32), _load_hints(lw, info, args))


@handles("Tensor.partition")
def _tensor_partition(lw, info, args, rty):
    x = lw.value(info.receiver)
    shape = tuple(lw.static_arg(info, args, "shape"))
    return ViewRef(x, shape, _padding_arg(lw, info, args))


@handles("TileView.load")
def _view_load(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    view = v.array.partition_view(lw.hoist, v.tile_shape, v.padding)
    hints = _load_hints(lw, info, args)
    return lw.load_view(v.array, view, lw.index_tvs(lw.arg(args, "index"), D.int32), hints)


@handles("TileView.store")
def _view_store(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    view = v.array.partition_view(lw.hoist, v.tile_shape, None)
    t = lw.tv(lw.arg(args, "t") if "t" in args else lw.arg(args, "tile"), v.array.dtype)
    lw.store_view(v.array, view, lw.index_tvs(lw.arg(args, "index"), D.int32), t)
    return None


@handles("TileView.num_tiles")
def _view_num_tiles(lw, info, args, rty):
    v: ViewRef = lw.value(info.receiver)
    axis = lw.static_arg(info, args, "axis")
    view = v.array.partition_view(lw.hoist, v.tile_shape, v.padding)
    return TV(lw.b.get_index_space_shape(view, "i32")[axis], D.int32)


@handles("Partition.load")
def _partition_load(lw, info, args, rty):
    z: ArrayParam = lw.value(info.receiver)
    view = z.partition_view(lw.hoist, z.tile_shape, "zero")
    return lw.load_view(z, view, [lw.bid(i) for i in range(len(z.tile_shape))])


@handles("Partition.store")
def _partition_store(lw, info, args, rty):
    z: ArrayParam = lw.value(info.receiver)
    name = [k for k in args if k != list(info.signature.pysig.parameters)[0]][0]
    t = lw.tv(lw.arg(args, name), z.dtype)
    t = lw.em.broadcast(t, z.tile_shape)
    view = z.partition_view(lw.hoist, z.tile_shape, None)
    lw.store_view(z, view, [lw.bid(i) for i in range(len(z.tile_shape))], t)
    return None


@handles("tile.store")
def _store(lw, info, args, rty):
    target = lw.arg(args, "target")
    index = lw.arg(args, "index")
    if isinstance(target, ViewRef):
        arr, shape = target.array, target.tile_shape
    elif isinstance(target, ArrayParam) and target.tile_shape is not None:
        arr, shape = target, target.tile_shape
    else:
        raise lw.error("tile.store(view, index, t) needs a partition or a view of a writable "
                       "tensor")
    t = lw.em.broadcast(lw.tv(lw.arg(args, "t"), arr.dtype), shape)
    view = arr.partition_view(lw.hoist, shape, None)
    lw.store_view(arr, view, lw.index_tvs(index, D.int32), t)
    return None


def _gather_scatter_target(lw, target):
    if isinstance(target, ViewRef):
        target = target.array
    if not isinstance(target, ArrayParam):
        raise lw.error("gather/scatter need a tensor or partition argument")
    return target


@handles("tile.gather")
def _gather(lw, info, args, rty):
    x = _gather_scatter_target(lw, lw.arg(args, "x"))
    shape = rty.shape if isinstance(rty, NbTile) else ()
    ptrs, mask = lw.element_pointers(x, lw.arg(args, "indices"), shape)
    mask = _and_user_mask(lw, args, mask, shape)
    mdt = D.uint8 if x.dtype.is_bool else x.dtype
    other = lw.arg(args, "other")
    if isinstance(other, TV):
        other = lw.em.broadcast(lw.tv(other, mdt), shape)
    else:
        other = lw.em.const(lw.static_arg(info, args, "other", 0), mdt, shape)
    return lw.ordered_read(x, lambda t: lw.b.load_ptr_tko(ptrs, mask=mask.value,
                                                           padding=other.value, token=t))


def _element_access(lw, info, args, value_names):
    """Target, pointers, in-bounds-and-user mask and the broadcast value tiles of a scatter or an
    atomic: ``values`` (names in ``value_names``) and index tiles broadcast together."""
    x = _gather_scatter_target(lw, lw.arg(args, "target"))
    vals = [lw.tv(lw.arg(args, n), x.dtype) for n in value_names]
    idx = lw.arg(args, "indices")
    shape = np.broadcast_shapes(*[v.shape for v in vals], *[
        i.shape for i in (idx if isinstance(idx, tuple) else (idx,)) if isinstance(i, TV)])
    ptrs, mask = lw.element_pointers(x, idx, shape)
    mask = _and_user_mask(lw, args, mask, shape)
    return x, ptrs, mask, [lw.em.broadcast(v, shape) for v in vals]


def _memory_semantics(lw, info, args):
    order = _ORDER.get(getattr(lw.static_arg(info, args, "memory_order", L.MemoryOrder.ACQ_REL),
                               "name", "ACQ_REL"))
    scope = _SCOPE.get(getattr(lw.static_arg(info, args, "memory_scope", L.MemoryScope.DEVICE),
                               "name", "DEVICE"), "device")
    return order, scope


@handles("tile.scatter")
def _scatter(lw, info, args, rty):
    x, ptrs, mask, (vals,) = _element_access(lw, info, args, ("values",))
    vals = lw._to_mem(vals, x)
    lw.ordered_write(x, lambda t: (None, lw.b.store_ptr_tko(ptrs, vals.value, mask=mask.value,
                                                            token=t)))
    return None


def _atomic(mode_int, mode_float):
    def handler(lw, info, args, rty):
        x, ptrs, mask, (vals,) = _element_access(lw, info, args, ("values",))
        mode = mode_float if x.dtype.is_float else mode_int
        if mode in ("max", "min") and x.dtype.is_unsigned:
            mode = "u" + mode
        order, scope = _memory_semantics(lw, info, args)
        old = lw.ordered_write(x, lambda t: lw.b.atomic_rmw_tko(
            ptrs, mode, vals.value, mask=mask.value, token=t, ordering=order, scope=scope))
        return TV(old, x.dtype)
    return handler


_CALLS["tile.atomic_add"] = _atomic("add", "addf")
_CALLS["tile.atomic_max"] = _atomic("max", "max")
_CALLS["tile.atomic_min"] = _atomic("min", "min")
_CALLS["tile.atomic_xchg"] = _atomic("xchg", "xchg")


@handles("tile.atomic_cas")
def _atomic_cas(lw, info, args, rty):
    x, ptrs, mask, (exp, des) = _element_access(lw, info, args, ("expected", "desired"))
    order, scope = _memory_semantics(lw, info, args)
    old = lw.ordered_write(x, lambda t: lw.b.atomic_cas_tko(
        ptrs, exp.value, des.value, mask=mask.value, token=t, ordering=order, scope=scope))
    return TV(old, x.dtype)


# --- creation --------------------------------------------------------------------------------
@handles("tile.zeros", "tile.ones", "tile.full")
def _full(lw, info, args, rty):
    d = _dt_of(rty)
    shape = rty.shape if isinstance(rty, NbTile) else ()
    if info.op == "tile.full":
        v = lw.arg(args, "value")
        if isinstance(v, TV):
            return lw.em.broadcast(lw.em.cast(v, d), shape)
    else:
        v = 0 if info.op == "tile.zeros" else 1
    return lw.em.const(v, d, shape)


@handles("tile.arange")
def _arange(lw, info, args, rty):
    return lw.em.iota(rty.shape[0], _dt_of(rty))


# --- elementwise -----------------------------------------------------------------------------
def _unary_math(name):
    def handler(lw, info, args, rty):
        x = lw.tv(lw.arg(args, list(args)[0]), None, lw.arg_type(info, args, list(args)[0]))
        r = lw.em.math(name, lw.em.cast(x, _dt_of(rty)) if _dt_of(rty).is_float else x)
        return r
    return handler


for _n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
           "tanh", "floor", "ceil"):
    _CALLS[f"tile.{_n}"] = _unary_math(_n)


@handles("tile.isnan")
def _isnan(lw, info, args, rty):
    x = lw.tv(lw.arg(args, list(args)[0]))
    if not x.dtype.is_float:
        return lw.em.const(False, D.bool_, x.shape)
    return lw.em.math("isnan", x)


@handles("tile.abs", "abs")
def _abs(lw, info, args, rty):
    x = lw.tv(lw.arg(args, list(args)[0]), _dt_of(rty), lw.arg_type(info, args, list(args)[0]))
    return lw.em.absolute(x)


@handles("tile.where")
def _where(lw, info, args, rty):
    d = _dt_of(rty)
    c = lw.tv(lw.arg(args, "cond"), D.bool_)
    x = lw.tv(lw.arg(args, "x"), d, lw.arg_type(info, args, "x"))
    y = lw.tv(lw.arg(args, "y"), d, lw.arg_type(info, args, "y"))
    return lw.em.where(c, x, y, d)


@handles("tile.minimum", "tile.maximum", "min", "max")
def _minmax(lw, info, args, rty):
    d = _dt_of(rty)
    names = list(args)
    vals = [lw.arg(args, n) for n in names]
    if len(vals) == 1 and isinstance(vals[0], tuple):
        vals = list(vals[0])
    if all(not isinstance(v, TV) for v in vals):
        return (min if info.op in ("tile.minimum", "min") else max)(vals)
    op = "min" if info.op in ("tile.minimum", "min") else "max"
    r = lw.tv(vals[0], d)
    for v in vals[1:]:
        r = lw.em.binary(op, r, lw.tv(v, d), d)
    return r


@handles("tile.atan2")
def _atan2(lw, info, args, rty):
    d = _dt_of(rty)
    y = lw.tv(lw.arg(args, "y"), d)
    x = lw.tv(lw.arg(args, "x"), d)
    return lw.em.binary("atan2", y, x, d)


@handles("tile.fma")
def _fma(lw, info, args, rty):
    d = _dt_of(rty)
    return lw.em.fma(lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d),
                     lw.tv(lw.arg(args, "c"), d), d)


@handles("tile.astype", "Tile.astype")
def _astype(lw, info, args, rty):
    x = lw.tv(lw.arg(args, "t"), None, lw.arg_type(info, args, "t"))
    mode = lw.static_arg(info, args, "rounding_mode", None)
    return lw.em.cast(x, _dt_of(rty), getattr(mode, "value", mode))


@handles("tile.bitcast", "Tile.bitcast")
def _bitcast(lw, info, args, rty):
    return lw.em.bitcast(lw.tv(lw.arg(args, "t")), _dt_of(rty))


@handles("bool")
def _bool(lw, info, args, rty):
    v = lw.arg(args, list(args)[0]) if args else False
    if not isinstance(v, TV):
        return bool(v)
    return lw.em.cast(v, D.bool_)


@handles("int")
def _int(lw, info, args, rty):
    v = lw.arg(args, list(args)[0])
    if not isinstance(v, TV):
        return int(v)
    return lw.em.cast(v, _dt_of(rty))


@handles("float")
def _float(lw, info, args, rty):
    v = lw.arg(args, list(args)[0])
    if not isinstance(v, TV):
        try:
            return float(v)
        except ValueError:
            raise lw.error(f"float({v!r}): the string is not a number (use e.g. 'inf', '-inf', "
                           f"'nan' or '1.5')") from None
    return lw.em.cast(v, _dt_of(rty))


@handles("len")
def _len(lw, info, args, rty):
    return len(lw.arg(args, list(args)[0]))


# --- shapes ----------------------------------------------------------------------------------
@handles("tile.reshape", "Tile.reshape")
def _reshape(lw, info, args, rty):
    return lw.em.reshape(lw.tv(lw.arg(args, "t")), rty.shape)


@handles("tile.permute", "Tile.permute")
def _permute(lw, info, args, rty):
    return lw.em.permute(lw.tv(lw.arg(args, "t")), lw.static_arg(info, args, "axes"))


@handles("tile.transpose", "Tile.transpose")
def _transpose(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    axes = lw.static_arg(info, args, "axes", None)
    if isinstance(axes, tuple) and len(axes) == 0:
        axes = None
    if axes is None:
        axes = tuple(reversed(range(len(t.shape))))
    return lw.em.permute(t, axes)


@handles("tile.broadcast_to", "Tile.broadcast_to")
def _broadcast_to(lw, info, args, rty):
    return lw.em.broadcast(lw.tv(lw.arg(args, "t")), rty.shape)


@handles("tile.expand_dims", "Tile.expand_dims")
def _expand_dims(lw, info, args, rty):
    return lw.em.reshape(lw.tv(lw.arg(args, "t")), rty.shape)


@handles("tile.cat")
def _cat(lw, info, args, rty):
    d = _dt_of(rty)
    a, b = lw.tv(lw.arg(args, "a"), d), lw.tv(lw.arg(args, "b"), d)
    axis = lw.static_arg(info, args, "axis", 0)
    if axis < 0:
        axis += len(a.shape)
    return lw.em.cat(a, b, axis)


@handles("tile.extract", "Tile.extract")
def _extract(lw, info, args, rty):
    t = lw.tv(lw.arg(args, "t"))
    index = lw.arg(args, "index")
    idx = [lw.tv(i, D.int32).value for i in (index if isinstance(index, tuple) else (index,))]
    return TV(lw.b.extract(t.value, idx, rty.shape), t.dtype)


# --- reductions --------------------------------------------------------------------------------
def _reduction(kind):
    def handler(lw, info, args, rty):
        t = lw.tv(lw.arg(args, "t"))
        axis = lw.static_arg(info, args, "axis", None)
        keep = lw.static_arg(info, args, "keepdims", False)
        if axis is None:
            r = lw.em.reduce_all(kind, t, keep)
        elif kind in ("argmax", "argmin"):
            r = lw.em.arg_reduce(kind, t, axis % len(t.shape), keep)
        else:
            axes = axis if isinstance(axis, tuple) else (axis,)
            axes = sorted(a % len(t.shape) for a in axes)
            r = t
            for a in reversed(axes):
                r = lw.em.reduce(kind, r, a, keep)
        return lw.em.cast(r, _dt_of(rty))
    return handler


for _k in ("sum", "max", "min", "prod", "argmax", "argmin"):
    _CALLS[f"tile.{_k}"] = _reduction(_k)
    _CALLS[f"Tile.{_k}"] = _reduction(_k)


def _scan(kind):
    def handler(lw, info, args, rty):
        t = lw.tv(lw.arg(args, "t"))
        axis = lw.static_arg(info, args, "axis", 0) % len(t.shape)
        rev = lw.static_arg(info, args, "reverse", False)
        return lw.em.cast(lw.em.scan(kind, t, axis, rev), _dt_of(rty))
    return handler


_CALLS["tile.cumsum"] = _scan("sum")
_CALLS["tile.cumprod"] = _scan("prod")


def _user_combiner(lw, info, args, rty, is_scan):
    t = lw.tv(lw.arg(args, "t"))
    axis = lw.static_arg(info, args, "axis") % len(t.shape)
    fn = lw.static(args["fn"])
    ident = lw.static_arg(info, args, "identity")
    d = t.dtype
    elem_nb = lw.tk.subfunctions
    sub = None
    for (tf, argtys), tk in elem_nb.items():
        if tf is fn or getattr(tf, "py_func", None) is getattr(fn, "py_func", fn):
            sub = tk
            break
    if sub is None:
        raise lw.error("internal error: the combiner of tile.reduce/tile.scan was not typed")
    ident_attr = lw.em._typed_identity(ident, d)
    if is_scan:
        op = lw.b.scan([t.value], axis, [ident_attr],
                       reverse=lw.static_arg(info, args, "reverse", False))
    else:
        op = lw.b.reduce([t.value], axis, [ident_attr])
    a, b = op.regions[0].args
    with lw.b.at(op.regions[0]):
        r = _inline_combiner(lw, sub, [TV(a, d), TV(b, d)])
        lw.b.yield_([lw.em.cast(r, d).value])
    res = TV(op.results[0], d)
    if not is_scan and lw.static_arg(info, args, "keepdims", False):
        res = lw.em.keep_dim(res, t.shape, axis)
    return lw.em.cast(res, _dt_of(rty))


def _inline_combiner(lw, sub, arg_tvs) -> TV:
    """Lower a typed combiner function (straight-line code) with ``arg_tvs`` as its arguments."""
    from .structurize import structurize
    sk = structurize(sub)
    saved = (lw.env, lw.typemap, lw.calltypes, lw.tk)
    lw.env = {}
    lw.typemap, lw.calltypes, lw.tk = sk.typemap, sk.calltypes, sub
    names = [p.name for p in sub.params]
    for nm, v in zip(names, arg_tvs):
        lw.env[nm] = v
    try:
        for node in sk.body.nodes:
            if not isinstance(node, R.Block):
                raise lw.error("combiner functions of tile.reduce/tile.scan must be straight-line "
                               "code (no if/for/while)", UnsupportedError)
            for stmt in node.stmts:         # Block statements never include the return
                lw.stmt(stmt)
        ret = [s for blk in sub.func_ir.blocks.values() for s in blk.body
               if isinstance(s, ir.Return)]
        return lw.tv(lw.value(ret[0].value), arg_tvs[0].dtype)
    finally:
        lw.env, lw.typemap, lw.calltypes, lw.tk = saved


_CALLS["tile.reduce"] = lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, False)
_CALLS["tile.scan"] = lambda lw, info, args, rty: _user_combiner(lw, info, args, rty, True)


# --- matmul ----------------------------------------------------------------------------------
@handles("tile.mma")
def _mma(lw, info, args, rty):
    a, b = lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b"))
    acc = lw.tv(lw.arg(args, "acc"))
    a, b = lw._mma_operands(a, b)
    return lw.em.mma(a, b, acc)


@handles("tile.matmul")
def _matmul(lw, info, args, rty):
    return lw.matmul(lw.tv(lw.arg(args, "a")), lw.tv(lw.arg(args, "b")), _dt_of(rty))


# --- misc --------------------------------------------------------------------------------------
@handles("tile.printf", "print")
def _printf(lw, info, args, rty):
    if info.op == "print":
        vals = [lw.value(v) for v in (args.get("args") or ())] if "args" in args else \
            [lw.value(v) for v in args.values()]
        flat = []
        for v in vals:
            flat.extend(v if isinstance(v, tuple) else (v,))
        lw._printf(" ".join(lw._fmt_for(v) for v in flat) + "\n", flat)
        return None
    fmt = lw.static_arg(info, args, "fmt")
    vals = lw.arg(args, "args") or ()
    if not isinstance(vals, tuple):
        vals = (vals,)
    lw._printf(fmt, list(vals))
    return None


@handles("tile.assert_")
def _assert(lw, info, args, rty):
    c = lw.tv(lw.arg(args, "cond"), D.bool_)
    msg = lw.static_arg(info, args, "msg", None) or "assertion failed"
    loc = lw.loc
    if loc is not None:
        msg = f"{msg} ({loc.filename}:{loc.line})"
    lw.b.assert_(c.value, msg)
    return None


@handles("tile.static_assert")
def _static_assert(lw, info, args, rty):
    return None


@handles("tile.assume_divisible_by")
def _assume_div(lw, info, args, rty):
    x = lw.tv(lw.arg(args, "x"))
    d = lw.static_arg(info, args, "d")
    return TV(lw.b.assume(x.value, A.DivBy(int(d))), x.dtype)


def lower_kernel(structured: R.StructuredKernel, **kw) -> Module:
    """Lower a structured, typed kernel to a Tile IR module (one entry function)."""
    return Lowering(structured, **kw).run()
