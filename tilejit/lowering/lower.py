"""Region tree + typed Numba IR -> Tile IR.

The lowering walks the structured kernel (:mod:`.regions`). Each Numba variable maps to one of:

* a :class:`~.emit.TV` (a Tile IR value with its dtype; scalars are 0-d tiles),
* a Python value for compile-time constants (literal-typed variables, dtypes, enum members,
  modules, kernel-language stubs, constant parameters, tuples of these),
* an :class:`~.abi.ArrayParam` (tensor or partition parameter) or a :class:`ViewRef`
  (``x.partition(shape)``), or a Python tuple mixing the above.

Memory ordering: memory operations are ordered by Tile IR tokens (:mod:`.tokens` has the rules:
token pairs per written array, acquire and release); the tokens are carried through ``if``
results and loop iteration values like ordinary variables, so ordering survives control flow.
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
from ..dtypes import DType
from ..errors import CompileError, SourceLocation, TypingError, UnsupportedError
from ..tileir import Block, Builder, Module, OptHints, TileType, Value
from ..typing import promotion
from ..typing.templates._base import NOT_STATIC, static_value
from ..typing.types import DTypeType, EnumClassType, TileType as NbTile, dtype_of
from . import narrow
from . import regions as R
from .sink_continues import sink_continues
from .abi import ArrayParam, ScalarParam, ViewRef, build_entry, select_item
from .control import ControlFlow, _is_static_type
from .handlers import handler_of
from .emit import TV, Emitter, elem

if TYPE_CHECKING:
    from ..typing.pipeline import CallInfo


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


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
#: operators on tuples whose result the typing may already have decided (a BooleanLiteral)
_TUPLE_TESTS = frozenset({operator.eq, operator.ne, operator.contains})
_COMPARES = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
             operator.eq: "==", operator.ne: "!="}
#: Typed calls the walker lowers itself (operators, ``range`` loops, indexing) instead of a
#: handler; tests/test_op_registry.py checks every other typing rule against ``handler_of``.
WALKER_CALLS = frozenset(_BINOPS) | frozenset(_COMPARES) | {
    operator.matmul, operator.imatmul, operator.neg, operator.pos, operator.invert,
    operator.not_, operator.contains, range, operator.getitem, "static_getitem"}


class Lowering(ControlFlow):
    """Lowers one structured kernel to a Tile IR module with a single entry function."""

    def __init__(self, structured: R.StructuredKernel, *, name: Optional[str] = None,
                 arch: str = "sm_90", bytecode_version=(13, 4), hints: Optional[dict] = None,
                 const_grid: Optional[tuple] = None, grid_ones=(False, False, False),
                 simulated: bool = False):
        self.sk = structured
        # for the simulator: check what a kernel promised (check_bounds=False) where the GPU
        # takes it on trust
        self.simulated = simulated
        self.const_grid = const_grid
        # grid axes of extent 1 (known at specialization): their block index is 0
        self.grid_ones = tuple(grid_ones) if const_grid is None else \
            tuple(n == 1 for n in const_grid)
        self.tk = structured.typed
        self.typemap = structured.typemap
        self.calltypes = structured.calltypes
        self.arch = arch
        self.version = tuple(bytecode_version)[:2]
        self.filename = self.tk.pyfunc.__code__.co_filename
        kparams = [p for p in self.tk.params if p.kind != "constant"]
        opt = self.opt_hints(self._checked_entry_hints(dict(hints))) if hints else None
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
        self._zero_bid = None
        self.env: Dict[str, object] = {}
        for p in self.tk.params:
            if p.kind == "constant":
                self.env[p.name] = p.value
            else:
                self.env[p.name] = _env_value(self.params[p.name])
        self._defs = self._definitions(structured.blocks)
        self.loc: Optional[SourceLocation] = None
        self.init_tokens()      # memory tokens: name -> [last store, last access] (tokens.py)
        self.loop_stack: List[list] = []       # carried names of enclosing loops
        self._touch_memo: Dict[int, bool] = {}
        # if-conditions decided at compile time inside a split loop (see loop_split.py)
        self.static_conds: Dict[str, bool] = {}

    # ================================================================================== driver
    def run(self) -> Module:
        start = len(self.fn.body.ops)
        try:
            self.region(self.sk.body)
        except CompileError as e:
            if e.loc is None:            # raised by an emitter: point at the statement lowered
                e.loc = self.loc
            raise
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

    def _operand(self, v, nbtype):
        """A comparison operand: a TV, or a Python number kept as it is."""
        if isinstance(v, (bool, int, float, np.number, np.bool_)):
            return v
        return self.tv(v, None, nbtype)

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
        if isinstance(rty, types.BooleanLiteral) and fn in _TUPLE_TESTS:
            return rty.literal_value            # decided by the types (typing/templates/operators)
        if fn is operator.contains:
            return self._contains(lhs, rhs, lt, rt)
        if fn in (operator.eq, operator.ne) and (isinstance(lhs, tuple) or isinstance(rhs, tuple)):
            same = self._equal(lhs, rhs, lt, rt)
            return same if fn is operator.eq else self._not(same)
        if fn in _COMPARES:
            if not isinstance(lhs, TV) and not isinstance(rhs, TV):
                return fn(lhs, rhs)
            d = promotion.result_dtype((lt, rt), _COMPARES[fn])
            # unconverted: a Python int outside d compares exactly (NumPy 2)
            return self.em.compare_values(_COMPARES[fn], self._operand(lhs, lt),
                                          self._operand(rhs, rt), d)
        if fn in (operator.matmul, operator.imatmul):
            return self.matmul(self.tv(lhs, None, lt), self.tv(rhs, None, rt), dtype_of(rty))
        if isinstance(lhs, tuple) or isinstance(rhs, tuple):     # (a, b) + (c,), (i,) * 3
            return fn(lhs, rhs)
        if _is_number(lhs) and _is_number(rhs) and not isinstance(rty, NbTile):
            return self._fold(fn, lhs, rhs)
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

    def _equal(self, x, y, tx, ty):
        """``x == y`` where either may be a tuple, element by element: a Python bool when the
        values are constants, else a bool TV."""
        if isinstance(x, tuple) and isinstance(y, tuple):
            if len(x) != len(y):
                return False
            out = True
            for i, (a, b) in enumerate(zip(x, y)):
                same = self._equal(a, b, tx.types[i], ty.types[i])
                if same is False:
                    return False
                out = same if out is True else \
                    out if same is True else self.em.binary("&", out, same, D.bool_)
            return out
        if isinstance(x, tuple) or isinstance(y, tuple):
            return False
        if not isinstance(x, TV) and not isinstance(y, TV):
            return x == y
        d = promotion.result_dtype((tx, ty), "==")
        return self.em.compare_values("==", self._operand(x, tx), self._operand(y, ty), d)

    def _contains(self, container, item, tc, ti):
        """``item in container`` (a tuple): any element equal, in order; a constant match
        ends it (the typing checked the elements up to there)."""
        out = False
        for i, el in enumerate(container):
            same = self._equal(el, item, tc.types[i], ti)
            if same is True:
                return True
            if same is not False:
                out = same if out is False else self.em.binary("|", out, same, D.bool_)
        return out

    def _not(self, v):
        return (not v) if isinstance(v, bool) else self.em.logical_not(v)

    def _fold(self, fn, lhs, rhs):
        """A binary operator on two compile-time numbers, computed now (``D ** 0.5``,
        ``1.0 / BK``): no runtime arithmetic, and the result stays a constant."""
        try:
            return fn(lhs, rhs)
        except ZeroDivisionError:
            raise self.error(f"division by zero in a constant expression ({lhs!r} and {rhs!r})")
        except (OverflowError, ValueError) as e:
            raise self.error(f"constant expression on {lhs!r} and {rhs!r} fails: {e}")

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

    def matmul(self, a: TV, b: TV, out_dt: DType, precision: Optional[str] = None) -> TV:
        acc_dt = D.int32 if a.dtype.is_integer else (D.float64 if a.dtype is D.float64 else D.float32)
        batch = max(a.shape[:-2], b.shape[:-2])          # typing checked they broadcast
        shape = batch + (a.shape[-2], b.shape[-1])
        r = self.mma(a, b, self.em.const(0, acc_dt, shape), precision)
        return self.em.cast(r, out_dt) if out_dt is not None else r

    def mma(self, a: TV, b: TV, acc: TV, precision: Optional[str] = None,
            fast_acc: bool = False) -> TV:
        """``a @ b + acc``. float32 inputs multiply in float32 unless ``precision`` (the
        ``input_precision`` argument) asks for tf32: "tf32" rounds both inputs to tf32,
        "tf32x3" adds the products of the high and low tf32 parts (hi*hi + hi*lo + lo*hi, the
        small terms first), which recovers about float32 accuracy on the tf32 tensor cores.
        ``fast_acc`` marks a float8 product for the tensor cores' reduced-precision sum."""
        em = self.em
        if len(a.shape) != len(b.shape) or a.shape[:-2] != b.shape[:-2]:
            return self._batch_broadcast_mma(a, b, acc, precision, fast_acc)
        if not (a.dtype is D.float32 and b.dtype is D.float32 and precision in ("tf32", "tf32x3")):
            return em.mma(a, b, acc, fast_acc=fast_acc and a.dtype.is_fp8)
        a_hi, b_hi = em.cast(a, D.tfloat32), em.cast(b, D.tfloat32)
        if precision == "tf32x3":
            def low(x, hi):
                return em.cast(em.binary("-", x, em.cast(hi, D.float32), D.float32), D.tfloat32)
            acc = em.mma(low(a, a_hi), b_hi, acc)
            acc = em.mma(a_hi, low(b, b_hi), acc)
        return em.mma(a_hi, b_hi, acc)

    def _batch_broadcast_mma(self, a: TV, b: TV, acc: TV, precision, fast_acc=False) -> TV:
        """``mma`` whose batch axis broadcasts (typing checked the shapes). A batched ``a``
        times an unbatched ``b`` is one 2-D product of ``(B*M, K) @ (K, N)``; otherwise the
        operand without the batch is broadcast to it."""
        em = self.em
        batch = acc.shape[:-2]
        b2 = b.shape[-2:]
        if len(b.shape) == 2 or b.shape[0] == 1 and batch and batch[0] > 1 and \
                a.shape[:-2] == batch:
            m, k = a.shape[-2:]
            rows = int(np.prod(batch)) * m
            r = self.mma(em.reshape(a, (rows, k)), em.reshape(b, b2),
                         em.reshape(acc, (rows, acc.shape[-1])), precision, fast_acc)
            return em.reshape(r, acc.shape)
        a = em.broadcast(em.reshape(a, (1,) * (3 - len(a.shape)) + a.shape), batch + a.shape[-2:])
        b = em.broadcast(em.reshape(b, (1,) * (3 - len(b.shape)) + b.shape), batch + b2)
        return self.mma(a, b, acc, precision, fast_acc)

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
            if attr == "strides":
                return tuple(obj.stride(i, self.hoist_em) for i in range(obj.ndim))
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
        if isinstance(idx, TV) and isinstance(obj, tuple):
            return select_item(self, obj, idx)               # xs[i] with i known at run time
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
                if v.dtype.is_float and v.dtype.bits < 32 or v.dtype is D.tfloat32:
                    v = self.em.cast(v, D.float32)
                args.append(v.value)
        self.b.print_(fmt, args)

    # ================================================================================== calls
    def bid(self, axis: int) -> TV:
        if not 0 <= axis < 3:
            raise self.error(f"tile.bid(axis): axis must be 0, 1 or 2, got {axis}")
        if self.grid_ones[axis]:
            if self._zero_bid is None:
                self._zero_bid = self.hoist_em.const(0, D.int32)
            return self._zero_bid
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
        """Which op a typed call is, with its arguments bound by parameter name (typing's rule,
        over the structured kernel's maps)."""
        return self.tk.call_info(e, self.calltypes, self.typemap, self._defs)

    def call(self, e, target):
        fnval = self.value(e.func)
        if fnval is slice or fnval is range:
            vals = [self.static(a) for a in e.args]
            return fnval(*vals)
        fnty = self.typemap.get(e.func.name)
        if isinstance(fnty, types.NumberClass) and len(e.args) <= 1 and not e.kws:
            return self._number_call(fnty, e.args[0] if e.args else None)
        if isinstance(fnty, EnumClassType):             # Color(0): the typing found the member
            return static_value(self.typemap[target])
        if isinstance(fnty, DTypeType) and len(e.args) <= 1:
            return self._dtype_call(fnty.dtype, e.args[0] if e.args else None)
        info = self.call_info(e)
        handler = handler_of(info.stub, info.op)
        if handler is None:
            raise self.error(f"{info.op} is not supported by the Tile IR lowering yet",
                             UnsupportedError)
        args = {k: v for k, v in info.args.items()}
        return handler(self, info, args, self.typemap[target])

    def _dtype_call(self, d: DType, arg) -> TV:
        """``tile.uint32(3)``: a value of dtype ``d`` (constants converted as a C cast does:
        ``uint32(-1)`` wraps, ``bool_(5)`` is True), a run-time value cast; no ``arg``
        (``float32()``) is the zero."""
        v = 0 if arg is None else self.value(arg)
        if isinstance(v, (bool, int, float, np.number, np.bool_)):
            if d.name == "float8_e8m0fnu" and v < 0:
                raise self.error(f"float8_e8m0fnu({v}): Negative values cannot be represented "
                                 f"in an unsigned float format")
            with np.errstate(all="ignore"):
                c = np.array(v).astype(d.np_dtype)[()].item() if not d.is_bool else bool(v)
            return self.em.const(c, d)
        return self.em.cast(self.tv(v, None, self.type_of(arg)), d)

    def _number_call(self, fnty, arg):
        """``np.float32(x)`` and the like: a constant is converted now (NumPy's rounding and
        wrap-around), a run-time value is cast; no ``arg`` (``np.float32()``) is the zero."""
        d = dtype_of(fnty.instance_type)
        v = 0 if arg is None else self.value(arg)
        if isinstance(v, (bool, int, float, np.number, np.bool_)):
            try:
                with np.errstate(over="ignore"):
                    return d.np_dtype.type(v).item()
            except OverflowError as e:          # NumPy 2: np.int8(300) raises
                raise self.error(f"{d}({v!r}) fails at compile time: {e}") from None
        return self.em.cast(self.tv(v, None, self.type_of(arg)), d)

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

    # --- memory (ordered accesses and their tokens: tokens.py) ------------------------------
    def _to_mem(self, t: TV, arr: ArrayParam) -> TV:
        if arr.dtype.is_bool:
            return self.em.cast(self.em.cast(t, D.bool_), D.uint8)
        if arr.dtype.is_fp4 or narrow.carried(arr.dtype):
            on_grid = self.em.cast(self.em.cast(t, arr.dtype), D.float32)
            codes = narrow.fp4_to_codes if arr.dtype.is_fp4 else narrow.e8m0_to_codes
            return codes(self.em, on_grid)
        return self.em.cast(t, arr.dtype)

    def _from_mem(self, v: Value, arr: ArrayParam) -> TV:
        """A value loaded from ``arr`` as a tile of its dtype (bools and float4 are bytes in
        memory)."""
        if arr.dtype.is_bool:
            return self.em.cast(TV(v, D.uint8), D.bool_)
        if arr.dtype.is_fp4 or narrow.carried(arr.dtype):
            decode = narrow.fp4_from_codes if arr.dtype.is_fp4 else narrow.e8m0_from_codes
            x32 = decode(self.em, TV(v, D.uint8))
            return TV(x32.value, arr.dtype) if narrow.carried(arr.dtype) else \
                self.em.cast(x32, arr.dtype)
        return TV(v, arr.dtype)

    def _checked_entry_hints(self, d: dict) -> dict:
        """The entry hints the bytecode version can carry: worker warps need 13.3. (Which
        counts tileiras honours is the compiler's check: ``compiler.check_worker_warps``.)"""
        w = d.get("num_worker_warps_per_cta")
        if w is not None and self.version < (13, 3):
            raise CompileError(
                f"num_worker_warps={w} needs tileiras 13.3 or newer (Tile IR bytecode 13.3); "
                f"this compile writes bytecode {self.version[0]}.{self.version[1]}. Leave it "
                f"out (tileiras chooses)")
        return d

    def opt_hints(self, d: dict) -> OptHints:
        return opt_hints_for(d, self.version, self.arch)

    def hints(self, latency=None, allow_tma=True) -> Optional[OptHints]:
        d = {}
        if latency is not None:
            d["latency"] = int(latency)
        if allow_tma is False:
            d["allow_tma"] = False
        return self.opt_hints(d) if d else None

    def element_pointers(self, arr: ArrayParam, indices, shape,
                         bounds: bool = True) -> Tuple[Value, Optional[TV]]:
        """Pointers to ``arr[indices]`` (index tiles broadcast to ``shape``) and the in-bounds
        mask (None without ``bounds``)."""
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
            # 0 <= t < shape[i] as one unsigned compare (shapes are never negative; a negative
            # index reads as a huge unsigned one), as cuTile does: half the mask's work
            if not bounds:
                continue
            ok = TV(self.b.cmpi("less_than", t.value, em.broadcast(arr.shape[i], shape).value,
                                "unsigned"), D.bool_)
            mask = ok if mask is None else em.binary("&", mask, ok, D.bool_)
        base = self.b.broadcast(self.b.reshape(arr.base, (1,) * len(shape)), shape) if shape else arr.base
        if offset is None:          # a 0-d array, no index tiles: its one element, in bounds
            return base, em.const(True, D.bool_, shape) if bounds else None
        ptrs = self.b.offset(base, offset.value)
        return ptrs, mask


# ====================================================================================== handlers


def _env_value(q):
    """A parameter as the walker sees it: scalars as their values, arrays as themselves, tuple
    arguments as tuples of these."""
    if isinstance(q, tuple):
        return tuple(_env_value(x) for x in q)
    return q.value if isinstance(q, ScalarParam) else q


def opt_hints_for(d: dict, bytecode_version, arch: Optional[str]) -> OptHints:
    """Optimization hints ``d`` for the target (per architecture before bytecode 13.3)."""
    key = "default" if tuple(bytecode_version)[:2] >= (13, 3) else arch
    return OptHints.make({key: d})


def lower_kernel(structured: R.StructuredKernel, **kw) -> Module:
    """Lower a structured, typed kernel to a Tile IR module (one entry function)."""
    # float4 / e8m0 tiles are float32 on targets without them: decided before any type is made
    token = narrow.carry_for(kw.get("arch", "sm_90"))
    sink_continues(structured)
    try:
        return Lowering(structured, **kw).run()
    finally:
        narrow.reset(token)

