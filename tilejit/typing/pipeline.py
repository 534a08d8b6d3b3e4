"""The front end: Python function + specialization -> typed Numba IR (``TypedKernel``).

::

    type_kernel(pyfunc, arg_keys, constants) -> TypedKernel

    RejectUnsupported (source)      reject.check_source      lists, try, closures ... (ast)
    source rewrites                 static_eval, sugar       static_eval(...), with, tuple(genexpr)
    TranslateByteCode + IRProcessing                         Numba interpreter + PostProcessor
    FreezeConstexprArgs             passes.freeze_constants  BM = arg(3)  ->  BM = const(64)
    lambdas, nested functions       closures                 -> global @tile.function helpers
    InlineTileFunctions             inline.inline_helpers    @tile.function calls, recursively
    static loops                    unroll                   static_range / static_iter bodies
    RejectUnsupported (IR)          reject.check_ir          what the source check cannot see
    rewrites                        passes.apply_rewrites    static_getitem, print, static binops
    unify returns                   passes.unify_returns     one exit block
    DeadBranchPrune                 numba                    dead `if CONST:` arms are removed
    ReconstructSSA                  numba                    phis (never stripped)
    type inference                  TileTypingContext        typemap, calltypes, return type

Typing failures become ``tile.TypingError`` / ``tile.UnsupportedError`` with ``file:line``, the
source line, a caret, the user's variable names and the operand types (``diagnostics.py``).
"""
from __future__ import annotations

import gc
import inspect
import threading
import time
from typing import Dict, List, NamedTuple, Optional, Sequence

from numba.core import bytecode, errors as numba_errors, interpreter, ir, postproc, ssa, types
from numba.core.analysis import compute_cfg_from_blocks, dead_branch_prune
from numba.core.compiler_lock import global_compiler_lock
from numba.core.ir_utils import build_definitions
from numba.core.typeinfer import ConstraintNetwork, TypeInferer

from .. import language
from ..errors import CompileError, TypingError, UnsupportedError
from . import diagnostics as diag
from .context import TileTarget, get_context
from .diagnostics import Collector, ExprText, describe_type
from .types import WideIntLiteral
from .templates.shape import warn_identity_transposes
from .closures import materialize_closures
from .unroll import unroll_static_loops
from .inline import inline_helpers
from .arg_types import arg_type, check_constant, constant_type
from .passes import apply_rewrites, foreign_dtypes, freeze_constants, unify_returns
from . import static_eval
from .static_branches import fold_static_branches
from .reject import check_ir, check_source


# --------------------------------------------------------------------------------------------------
class KernelParam(NamedTuple):
    """One Python parameter of the kernel."""
    name: str
    kind: str               # "tensor" | "partition" | "scalar" | "constant"
    type: types.Type        # Numba type inside the kernel (literal type for constants)
    key: Optional[tuple]    # the C2 key (None for constants)
    value: object = None    # the value of a constant parameter
    abi_index: Optional[int] = None   # position among non-constant parameters (C1)


class CallInfo(NamedTuple):
    """What lowering needs to emit one typed call (see :meth:`TypedKernel.call_info`)."""
    op: str                 # "tile.mma", "Partition.store", "operator.add", "range", ...
    stub: object            # the tilejit.language function (methods too: t.reshape -> reshape)
    signature: object       # the resolved numba Signature (sig.args align with ``args``)
    args: Dict[str, object]  # parameter name -> ir.Var (None: the default, see signature)
    receiver: Optional[ir.Var]


class TypedKernel:
    """The typed front-end result of one specialization.

    ``func_ir`` is Numba's typed SSA IR *with phis*; ``typemap`` maps every variable name to its
    Numba type, ``calltypes`` maps call / operator expressions (and ``ir.Print``) to their
    resolved signatures. Values whose type is a ``Literal``, ``DTypeType`` or ``EnumMemberType``
    are compile-time constants.
    """

    def __init__(self, pyfunc, func_ir, typemap, calltypes, return_type, params, constants,
                 is_kernel, subfunctions, timings):
        self.pyfunc = pyfunc
        self.func_ir = func_ir
        self.typemap = typemap
        self.calltypes = calltypes
        self.return_type = return_type
        self.params: tuple = tuple(params)
        self.constants: dict = dict(constants)
        self.is_kernel = is_kernel
        #: (TileFunction, arg types) -> TypedKernel for combiners of tile.reduce / tile.scan
        self.subfunctions: dict = subfunctions
        #: seconds per front-end phase
        self.timings: dict = timings

    @property
    def name(self) -> str:
        return self.pyfunc.__name__

    @property
    def arg_types(self) -> tuple:
        """Numba types of the non-constant parameters, in ABI order."""
        return tuple(p.type for p in self.params if p.kind != "constant")

    def type_of(self, var) -> types.Type:
        return self.typemap[var if isinstance(var, str) else var.name]

    def call_info(self, expr, calltypes=None, typemap=None, definitions=None) -> CallInfo:
        """Resolve a typed call / binop / unary expression to its op, stub and bound arguments.

        Lowering passes the structured kernel's ``calltypes``/``typemap`` and ``definitions``
        (variable name -> defining expression), which know the statements structurizing added."""
        sig = (calltypes or self.calltypes)[expr]
        if expr.op in ("binop", "inplace_binop"):
            return CallInfo(f"operator.{expr.fn.__name__}", None, sig,
                            {"lhs": expr.lhs, "rhs": expr.rhs}, None)
        if expr.op == "unary":
            return CallInfo(f"operator.{expr.fn.__name__}", None, sig, {"value": expr.value}, None)
        if expr.op != "call":
            raise ValueError(f"not a call: {expr}")
        fnty = (typemap or self.typemap)[expr.func.name]
        receiver = None
        if isinstance(fnty, types.BoundFunction):
            template = fnty.template
            d = self._method_getattr(expr.func.name, definitions or {})
            receiver = d.value if d is not None else None
        else:
            template = _op_template(fnty)
        op = _op_name(template, fnty)
        stub = getattr(template, "stub", None)
        pysig = getattr(sig, "pysig", None)
        bound: Dict[str, object] = {}
        if pysig is not None:
            lead = (receiver,) if receiver is not None else ()
            ba = pysig.bind(*lead, *expr.args, **dict(expr.kws))
            for name in pysig.parameters:
                bound[name] = ba.arguments.get(name)
        else:
            bound = {f"arg{i}": a for i, a in enumerate(expr.args)}
            bound.update(dict(expr.kws))
        return CallInfo(op, stub, sig, bound, receiver)

    def _method_getattr(self, name: str, definitions) -> Optional[ir.Expr]:
        """The ``obj.method`` expression a bound-method variable comes from, through the copies
        Numba makes when the call's operands live across blocks (``z.store(t + (a if c else
        b))`` copies ``z.store`` into a ``$phi`` variable before the branch)."""
        seen = set()
        while name not in seen:
            seen.add(name)
            d = definitions.get(name)
            if not isinstance(d, (ir.Expr, ir.Var)):
                defs = self.func_ir._definitions.get(name) or []
                d = next((x for x in defs if isinstance(x, ir.Expr) and x.op == "getattr"),
                         next((x for x in defs if isinstance(x, ir.Var)), None))
            if isinstance(d, ir.Expr) and d.op == "getattr":
                return d
            if isinstance(d, ir.Expr) and d.op == "cast":   # returned by an inlined helper
                d = d.value
            if isinstance(d, ir.Expr) and d.op == "call" and d.args and \
                    self._is_static_eval(d.func.name, definitions):
                d = d.args[-1]          # f = static_eval(m): the evaluated value is its last
            if not isinstance(d, ir.Var):
                return None
            name = d.name
        return None

    def _is_static_eval(self, name: str, definitions) -> bool:
        """Whether variable ``name`` is the rewritten ``static_eval`` function."""
        d = definitions.get(name)
        if d is None:
            d = next(iter(self.func_ir._definitions.get(name) or []), None)
        return isinstance(d, (ir.Global, ir.FreeVar)) and d.name == static_eval.STUB_NAME

    # --- text -------------------------------------------------------------------------------------
    def signature_text(self) -> str:
        parts = []
        for p in self.params:
            if p.kind == "constant":
                parts.append(f"{p.name}={p.value!r}")
            else:
                parts.append(f"{p.name}: {p.type}")
        return f"{self.name}({', '.join(parts)})"

    def dump(self) -> str:
        """Readable typed IR: one line per statement with the type of what it defines."""
        out = [f"tile {'kernel' if self.is_kernel else 'function'} {self.signature_text()}"
               f" -> {self.return_type}"]
        for label in sorted(self.func_ir.blocks):
            block = self.func_ir.blocks[label]
            out.append(f"label {label}:")
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    ty = self.typemap.get(stmt.target.name)
                    extra = ""
                    v = stmt.value
                    if isinstance(v, ir.Expr) and v.op == "call" and v in self.calltypes:
                        try:
                            extra = f"   [{self.call_info(v).op}]"
                        except Exception:   # pragma: no cover - dump must never fail
                            extra = ""
                    text = _short_stmt(stmt)
                    out.append(f"    {text:<64} :: {_type_text(ty)}{extra}")
                else:
                    out.append(f"    {_short_stmt(stmt)}")
        for (fn, argtys), sub in self.subfunctions.items():
            out.append("")
            out.append(sub.dump())
        return "\n".join(out)

    def __repr__(self):
        return f"<TypedKernel {self.signature_text()}>"


def _op_template(fnty):
    """The tilejit template behind a Numba function type (the one naming an ``op``), or None."""
    return next((t for t in getattr(fnty, "templates", ()) if hasattr(t, "op")), None)


def _op_name(template, fnty) -> str:
    """The op a call resolves to: the template's ``op``, else the typing key's name."""
    if getattr(template, "op", None):
        return template.op
    if isinstance(fnty, types.NumberClass):         # np.float32(x): a conversion
        return str(fnty.instance_type)
    key = getattr(fnty, "typing_key", fnty)
    return getattr(key, "__name__", str(key))


def _type_text(ty) -> str:
    """Type spelling for dumps (no object addresses)."""
    if isinstance(ty, types.Module):
        return f"module {ty.pymod.__name__}"
    if isinstance(ty, types.Function):
        return f"function {_op_name(_op_template(ty), ty)}"
    if isinstance(ty, types.BoundFunction):
        return f"method {ty.typing_key} of {ty.this}"
    return str(ty)


def _short_stmt(stmt) -> str:
    """Statement text without Numba's verbose call keyword dump."""
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, (ir.Global, ir.FreeVar)):
        return f"{stmt.target.name} = global({stmt.value.name})"
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
        e = stmt.value
        if e.op == "static_getitem":
            return f"{stmt.target.name} = static_getitem({e.value.name}, {e.index!r})"
        if e.op == "build_tuple":
            return f"{stmt.target.name} = build_tuple({', '.join(v.name for v in e.items)})"
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call":
        c = stmt.value
        args = [a.name for a in c.args] + [f"{k}={v.name}" for k, v in c.kws]
        return f"{stmt.target.name} = call {c.func.name}({', '.join(args)})"
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "phi":
        p = stmt.value
        inc = ", ".join(f"{b}: {'UNDEF' if v is ir.UNDEFINED else v.name}"
                        for v, b in zip(p.incoming_values, p.incoming_blocks))
        return f"{stmt.target.name} = phi({inc})"
    return str(stmt)


# --------------------------------------------------------------------------------------------------
# Parameters
def _bind_params(pyfunc, arg_keys: Sequence, constants: Optional[dict]):
    constants = dict(constants or {})
    sig = inspect.signature(pyfunc)
    const_names = set(language.constant_parameters(pyfunc)) | set(constants)
    params, keys, abi = [], list(arg_keys), 0
    n_runtime = sum(1 for n in sig.parameters if n not in const_names)
    if len(keys) != n_runtime:
        runtime = [n for n in sig.parameters if n not in const_names]
        raise TypingError(f"kernel '{pyfunc.__name__}' has {n_runtime} non-constant parameter(s) "
                          f"({', '.join(runtime)}) but {len(keys)} argument key(s) were given")
    it = iter(keys)
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UnsupportedError(f"kernel '{pyfunc.__name__}' may not take *args or **kwargs")
        if name in const_names:
            if name not in constants:
                raise TypingError(f"missing the value of constant parameter '{name}' of kernel "
                                  f"'{pyfunc.__name__}' (pass it at launch or with .generics())")
            value = constants[name]
            check_constant(name, value)
            params.append(KernelParam(name, "constant", constant_type(value), None, value, None))
        else:
            key = next(it)
            params.append(KernelParam(name, key[0], arg_type(key), tuple(key), None, abi))
            abi += 1
    unknown = set(constants) - set(sig.parameters)
    if unknown:
        raise TypingError(f"kernel '{pyfunc.__name__}' has no parameter(s) "
                          f"{', '.join(sorted(unknown))}")
    return params


# --------------------------------------------------------------------------------------------------
# Untyped IR
class _Interpreter(interpreter.Interpreter):
    """Numba's interpreter with a backbone that only holds blocks dominating every block after
    them. It renames a variable stored in a backbone block (``a`` -> ``a.1``) for the rest of
    the bytecode, which assumes those later blocks run after it. In ``while True:`` with a
    ``break`` arm before an ``else`` arm that loops back, the ``break`` block is on every path
    to the exit but not before the ``else`` arm: the arm stored to ``a.1`` while the next
    iteration read ``a``, and its assignment was lost (``[13, 13]`` where Python gives
    ``[13, 23]``)."""

    @property
    def cfa(self):
        return self._cfa

    @cfa.setter
    def cfa(self, cfa):
        doms = cfa.graph.dominators()
        later = sorted(cfa.blocks)
        cfa._backbone = {b for b in cfa.backbone
                         if all(b in doms.get(o, (b,)) for o in later if o > b)}
        self._cfa = cfa


def _translate(pyfunc, cutile: bool = False):
    pyfunc = static_eval.rewrite(pyfunc, cutile)
    func_id = bytecode.FunctionIdentity.from_function(pyfunc)
    try:
        func_ir = _Interpreter(func_id).interpret(bytecode.ByteCode(func_id=func_id))
    except (numba_errors.NumbaError, numba_errors.UnsupportedBytecodeError) as e:
        # (UnsupportedBytecodeError is no NumbaError: ``f(*args, **kwargs)`` forwarding)
        loc = getattr(e, "loc", None)
        what = diag.first_line(str(e))
        if "DICT_MERGE" in what or "DICT_UPDATE" in what:
            what = (f"it forwards keyword arguments (f(**kwargs)), which tile kernels do not "
                    f"support ({what}); call the wrapped function directly (a decorator's "
                    f"wrapper: use its __wrapped__)")
        raise UnsupportedError(f"cannot compile '{pyfunc.__name__}': {what}",
                               diag.source_location(loc, pyfunc.__name__)) from None
    except NotImplementedError as e:
        cells = pyfunc.__code__.co_cellvars
        if not cells:
            raise
        # Numba reads no Python cell variables (a name a nested function reads and the kernel
        # assigns again after defining it)
        raise UnsupportedError(
            f"cannot compile '{pyfunc.__name__}': a nested function or lambda reads "
            f"{', '.join(repr(c) for c in cells)}, which '{pyfunc.__name__}' assigns after "
            f"defining it; pass the value to the nested function as an argument instead",
            diag.source_location(None, pyfunc.__name__)) from None
    postproc.PostProcessor(func_ir).run(emit_dels=False)
    return func_ir


def _prune_constant_branches(func_ir) -> None:
    """Branches on constants (literals, frozen ``Constant`` parameters) decided before helpers
    are inlined, and the blocks they cut off removed: ``f = plus if M == 0 else times`` then
    ``f(x)`` calls one helper. (The argument types decide more branches at typing time.)"""
    if not fold_static_branches(func_ir, ()):
        return
    dead = compute_cfg_from_blocks(func_ir.blocks).dead_nodes()
    for label in dead:
        del func_ir.blocks[label]
    func_ir._definitions = build_definitions(func_ir.blocks)


def _build_untyped(pyfunc, entry: bool, constants: Optional[dict], stack: List,
                   arg_types: Optional[dict] = None) -> ir.FunctionIR:
    check_source(pyfunc, entry)
    state = _build.stack[-1] if _build.stack else {}
    func_ir = _translate(pyfunc, state.get("plain_helpers", False))
    freeze_constants(func_ir, constants)
    static_eval.fold_constant_calls(func_ir)
    _prune_constant_branches(func_ir)
    foreign_dtypes(func_ir)
    materialize_closures(func_ir, pyfunc, pyfunc.__name__)

    def build_helper(fn, st):
        return _build_untyped(fn, False, None, st)

    sites = state.setdefault("sites", {}) if _build.stack else None
    if inline_helpers(func_ir, build_helper, stack, pyfunc.__name__, sites,
                      plain=state.get("plain_helpers", False)):
        postproc.PostProcessor(func_ir).run(emit_dels=False)
    # static loops once everything is inlined (a helper's static_iter over its parameter
    # needs the caller's tuple)
    if len(stack) == 1 and unroll_static_loops(func_ir, arg_types or {}, pyfunc.__name__):
        postproc.PostProcessor(func_ir).run(emit_dels=False)
    check_ir(func_ir, pyfunc.__name__)
    apply_rewrites(func_ir)
    return func_ir


def _prepare_ssa(func_ir, called_args) -> ir.FunctionIR:
    unify_returns(func_ir)
    func_ir._definitions = build_definitions(func_ir.blocks)
    fold_static_branches(func_ir, called_args)     # a.dtype == tile.float32 and the like
    dead_branch_prune(func_ir, called_args)
    func_ir = ssa.reconstruct_ssa(func_ir)
    func_ir._definitions = build_definitions(func_ir.blocks)
    postproc.PostProcessor(func_ir).run(emit_dels=False)
    return func_ir


# --------------------------------------------------------------------------------------------------
# Type inference
class _RecordingNetwork(ConstraintNetwork):
    """Numba's constraint network, remembering which constraint raised which error."""

    def propagate(self, typeinfer):
        self.failures = []
        errors = []
        for constraint in self.constraints:
            try:
                constraint(typeinfer)
            except numba_errors.ForceLiteralArg as e:
                errors.append(e)
            except numba_errors.TypingError as e:
                self.failures.append((constraint, e))
                errors.append(numba_errors.TypingError(str(e), loc=constraint.loc,
                                                       highlighting=False))
        return errors


class _BuildState(threading.local):
    def __init__(self):
        self.stack = []


_build = _BuildState()


def _wide_int(value) -> bool:
    """An int beyond int64 and uint64: Numba cannot make a literal of it, NumPy 2 compares with
    one (``types.WideIntLiteral``)."""
    return type(value) is int and not -(1 << 63) <= value < (1 << 64)


class _TileTypeInferer(TypeInferer):
    def typeof_const(self, inst, target, const):
        if _wide_int(const):
            self.add_type(target.name, WideIntLiteral(const), loc=inst.loc)
            return
        super().typeof_const(inst, target, const)

    def typeof_global(self, inst, target, gvar):
        if _wide_int(gvar.value):
            self.lock_type(target.name, WideIntLiteral(gvar.value), loc=inst.loc)
            self.assumed_immutables.add(inst)
            return
        super().typeof_global(inst, target, gvar)


def _infer(func_ir, arg_types: Dict[str, types.Type], pyfunc):
    ctx = get_context()
    if len(_build.stack) <= 1:
        ctx._condensed.clear()
    infer = _TileTypeInferer(ctx, func_ir, numba_errors.WarningsFixer(numba_errors.NumbaWarning))
    infer.constraints = net = _RecordingNetwork()
    seeded = [(i, n) for i, n in enumerate(func_ir.arg_names) if n in arg_types]
    argtys = tuple(arg_types[n] for _, n in seeded)
    texts = None
    try:
        with ctx.callstack.register(TileTarget, infer, func_ir.func_id, argtys):
            for i, name in seeded:
                infer.seed_argument(name, i, arg_types[name])
            infer.build_constraint()
            errs = infer.propagate(raise_errors=False)
            if errs:
                texts = ExprText(func_ir.blocks)
                constraint, exc = net.failures[0] if net.failures else (None, errs[0])
                sites = _build.stack[-1].get("sites", {}) if _build.stack else {}
                raise diag.constraint_error(constraint, exc, infer, func_ir, pyfunc, texts, sites)
            typemap, restype, calltypes = infer.unify(raise_errors=True)
    except CompileError:
        raise
    except numba_errors.TypingError as e:
        raise diag.plain_error(e, pyfunc, func_ir) from None
    return dict(typemap), restype, dict(calltypes)


# --------------------------------------------------------------------------------------------------
def _run(pyfunc, params, is_kernel: bool, plain_helpers: bool = False) -> TypedKernel:
    timings = {}
    t0 = time.perf_counter()
    constants = {p.name: p.value for p in params if p.kind == "constant"}
    arg_types = {p.name: p.type for p in params if p.kind != "constant"}
    param_types = {p.name: p.type for p in params}
    state = {"subfunctions": {}, "plain_helpers": plain_helpers}
    _build.stack.append(state)
    # Numba's IR is thousands of small objects that live until typing ends: the cyclic GC's
    # passes over them find nothing to free (about 1 ms of a first typing's 15)
    paused = gc.isenabled()
    gc.disable()
    try:
        with global_compiler_lock, Collector.active():
            func_ir = _build_untyped(pyfunc, is_kernel, constants, [pyfunc], arg_types)
            t1 = time.perf_counter()
            called = [param_types.get(n, types.none) for n in func_ir.arg_names]
            func_ir = _prepare_ssa(func_ir, called)
            t2 = time.perf_counter()
            typemap, restype, calltypes = _infer(func_ir, arg_types, pyfunc)
            t3 = time.perf_counter()
    finally:
        _build.stack.pop()
        if paused:
            gc.enable()
    timings.update(untyped=t1 - t0, ssa=t2 - t1, typing=t3 - t2, total=t3 - t0)
    warn_identity_transposes(func_ir, typemap)
    if is_kernel and restype not in (types.none, types.void):
        raise TypingError(f"tile kernels cannot return values, but '{pyfunc.__name__}' returns "
                          f"{describe_type(restype)}; write results through a partition "
                          f"(z.store(t))", _return_location(func_ir, pyfunc))
    return TypedKernel(pyfunc, func_ir, typemap, calltypes, restype, params, constants,
                       is_kernel, state["subfunctions"], timings)


def _return_location(func_ir, pyfunc):
    for b in func_ir.blocks.values():
        if isinstance(b.terminator, ir.Return):
            return diag.source_location(b.terminator.loc, pyfunc.__name__)
    return None


def _unwrap(fn):
    if isinstance(fn, language.TileFunction):
        return fn.py_func
    if not inspect.isfunction(fn) and hasattr(fn, "py_func"):
        return fn.py_func
    return fn


def type_kernel(pyfunc, arg_keys: Sequence, constants: Optional[dict] = None,
                plain_helpers: bool = False) -> TypedKernel:
    """Type one specialization of a kernel.

    ``arg_keys``: the C2 key tuples of the non-constant parameters, in parameter order.
    ``constants``: parameter name -> value for the ``tile.Constant[...]`` parameters (any other
    parameter named here is treated as constant too). ``plain_helpers``: cuTile Python's rules
    (a ``tilejit.cutile`` kernel): undecorated Python functions the kernel calls are inlined like
    ``@tile.function`` helpers, and the promotions cuTile refuses are errors
    (:func:`.promotion.cutile_rules`).
    """
    pyfunc = _unwrap(pyfunc)
    params = _bind_params(pyfunc, arg_keys, constants)
    if plain_helpers:           # a tilejit.cutile kernel: cuTile's promotion refusals too
        from .promotion import cutile_rules
        with cutile_rules():
            return _run(pyfunc, params, True, plain_helpers)
    return _run(pyfunc, params, True, plain_helpers)


def type_function(pyfunc, arg_types: Sequence[types.Type]) -> TypedKernel:
    """Type a ``@tile.function`` on its own with the given Numba argument types (used for the
    combiners of ``tile.reduce`` / ``tile.scan``; ordinary calls to helpers are inlined)."""
    pyfunc = _unwrap(pyfunc)
    names = list(inspect.signature(pyfunc).parameters)
    if len(names) != len(arg_types):
        raise TypingError(f"'{pyfunc.__name__}' takes {len(names)} argument(s), "
                          f"{len(arg_types)} given")
    params = [KernelParam(n, "value", t, None, None, i)
              for i, (n, t) in enumerate(zip(names, arg_types))]
    return _run(pyfunc, params, False)


def type_subfunction(tile_function, arg_types: tuple) -> TypedKernel:
    """Type a combiner for the kernel being typed and record it in its ``subfunctions``."""
    key = (tile_function, tuple(arg_types))
    state = _build.stack[-1] if _build.stack else {"subfunctions": {}}
    found = state["subfunctions"].get(key)
    if found is None:
        found = type_function(tile_function.py_func, arg_types)
        state["subfunctions"][key] = found
    return found


__all__ = ["type_kernel", "type_function", "TypedKernel", "KernelParam", "CallInfo"]
