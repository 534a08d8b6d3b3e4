"""``static_eval(expr)``: a Python expression evaluated at compile time.

The expression never becomes kernel code. Before Numba reads the bytecode, the function's source
is rewritten (``rewrite``): each ``static_eval(expr)`` becomes a call of the internal stub
:func:`tilejit.language._static_eval` with the expression's text, the names of the kernel's
variables it reads and their values. When the call is typed, ``evaluate`` runs the text with
Python's ``eval``: a variable whose value the types fix (a constant, a tuple of constants, a
dtype, an enum member) is that value; any other is a :class:`Symbol` that knows only what its
type says (a tile's ``shape``, ``dtype``, ``ndim``; an array's ``dtype`` and ``ndim``). The
result is a constant of the kernel, or, when it is one of the symbols, that variable itself
(``static_eval(a if N == 0 else b)`` picks a run-time tile). Using a symbol's run-time value
(arithmetic on it, calling a kernel operation) is a compile error that says which.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import weakref
from typing import Optional

from numba.core import types

from ..errors import StaticEvalError, UnsupportedError

#: the name the rewritten source calls; bound as a closure variable of the rewritten function
STUB_NAME = "__tilejit_static_eval__"
_rewritten: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: the names an expression may read besides the kernel's variables (its function's globals and
#: closure values: (globals dict, closure dict)), by the key the rewritten call passes
_ENVS: dict = {}


# --------------------------------------------------------------------------------------------------
# Source rewriting
def rewrite(pyfunc, cutile: bool = False):
    """``pyfunc``, or a copy compiled from its source with every ``static_eval(...)`` call
    replaced and ``sugar``'s rewrites made (``cutile``: a ``ct.kernel``'s; same globals, closure
    values, defaults and line numbers)."""
    from . import sugar
    if getattr(pyfunc, "__tilejit_rewritten__", False):
        return pyfunc                   # made by sugar: its file holds other source
    static = "static_eval" in pyfunc.__code__.co_names or \
        "static_eval" in pyfunc.__code__.co_freevars
    if not static and not sugar.wanted(pyfunc, cutile):
        return pyfunc
    done = _rewritten.setdefault(pyfunc, {})
    out = done.get(cutile)
    if out is None:
        out = done[cutile] = _rewrite(pyfunc, cutile) or pyfunc
    return out


def _rewrite(pyfunc, cutile: bool = False):
    from .. import language
    from . import sugar
    try:
        lines, start = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError):
        return None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                        ast.AsyncFunctionDef))), None)
    if fdef is None:
        return None
    closure = dict(zip(pyfunc.__code__.co_freevars,
                       (c.cell_contents for c in pyfunc.__closure__ or ())))
    fdef.decorator_list = []
    env: dict = {}                      # the helpers sugar's rewrites call
    changed = sugar.transform(fdef, pyfunc, cutile, env, start - 1)
    local_names = _local_names(fdef)
    key = len(_ENVS)
    _ENVS[key] = (pyfunc.__globals__, closure)
    rewriter = _Rewriter(pyfunc.__globals__, closure, local_names, pyfunc, key)
    rewriter.generic_visit(fdef)        # the kernel's body; nested functions keep their calls
    if not (rewriter.found or changed):
        return None
    closure.update(env)
    params = list(closure) + [STUB_NAME]
    outer = ast.FunctionDef(
        name="__tilejit_outer__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
    module = ast.Module([outer], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, start - 1)
    code = compile(module, pyfunc.__code__.co_filename, "exec")
    ns: dict = {}
    exec(code, pyfunc.__globals__, ns)      # noqa: S102  (the user's own source, rewritten)
    fn = ns["__tilejit_outer__"](*closure.values(), language._static_eval)
    fn.__defaults__ = pyfunc.__defaults__
    fn.__kwdefaults__ = pyfunc.__kwdefaults__
    fn.__qualname__ = pyfunc.__qualname__
    return fn


def _local_names(fdef) -> set:
    names = {a.arg for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    for extra in (fdef.args.vararg, fdef.args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fdef:
            names.add(node.name)
    return names


class _Rewriter(ast.NodeTransformer):
    def __init__(self, globals_, closure, local_names, pyfunc, key):
        self.globals, self.closure = globals_, closure
        self.key = key
        self.locals = local_names
        self.pyfunc = pyfunc
        self.found = False

    def _is_static_eval(self, node) -> bool:
        from .. import language         # ct.static_eval is the same function
        try:
            value = eval(compile(ast.Expression(node), "<static_eval>", "eval"),  # noqa: S307
                         self.globals, self.closure)
        except Exception:  # noqa: BLE001  (a local name or anything else: not ours)
            return False
        return value is language.static_eval

    def visit_Call(self, node):
        if not self._is_static_eval(node.func):
            self.generic_visit(node)
            return node
        where = f"{self.pyfunc.__code__.co_filename}:{node.lineno + 0}"
        if len(node.args) != 1 or node.keywords:
            raise UnsupportedError(f"static_eval() expects a single expression, got "
                                   f"{len(node.args)} arguments ({where})")
        expr = node.args[0]
        for sub in ast.walk(expr):
            if isinstance(sub, ast.NamedExpr):
                raise UnsupportedError(f"static_eval() expression attempted to modify a local "
                                       f"variable '{sub.target.id}' ({where})")
            if isinstance(sub, ast.Call) and self._is_static_eval(sub.func):
                raise StaticEvalError(f"static_eval() cannot be used inside static_eval(). "
                                      f"({where})")
        bound = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Store)}       # comprehension variables
        names = sorted({n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and
                        isinstance(n.ctx, ast.Load) and n.id in self.locals and
                        n.id not in bound})
        self.found = True
        call = ast.Call(
            func=ast.Name(STUB_NAME, ast.Load()),
            args=[ast.Constant(self.key), ast.Constant(ast.unparse(expr)),
                  ast.Tuple([ast.Constant(n) for n in names], ast.Load())]
            + [ast.Name(n, ast.Load()) for n in names],
            keywords=[])
        return ast.copy_location(call, node)

    def visit_FunctionDef(self, node):
        # a nested function keeps its own static_eval calls (rewritten when it is compiled)
        return node


# --------------------------------------------------------------------------------------------------
# Evaluation
class Symbol:
    """A kernel variable known only by its type inside a ``static_eval`` expression."""

    __slots__ = ("index", "nbtype", "name", "path")

    def __init__(self, index: int, nbtype, name: str, path: tuple = ()):
        self.index = index          # which variable; ``path``: the element of a tuple it is
        self.nbtype = nbtype
        self.name = name
        self.path = path

    def __getattr__(self, attr):
        from .types import PartitionType, TensorType, TileType, dtype_of, is_scalar
        ty = self.nbtype
        if attr == "dtype" and dtype_of(ty) is not None:
            return dtype_of(ty)
        if isinstance(ty, TileType):
            if attr == "shape":
                return tuple(ty.shape)
            if attr == "ndim":
                return len(ty.shape)
        if isinstance(ty, (TensorType, PartitionType)) and attr == "ndim":
            return ty.ndim
        if isinstance(ty, PartitionType) and attr == "shape":
            return tuple(ty.tile_shape)
        if is_scalar(ty) and attr == "ndim":
            return 0
        return _Method(self, attr)

    def __repr__(self):
        return f"<{self.nbtype}>"

    def _runtime(self, what):
        raise _Dynamic(f"static_eval() expression used the run-time value of "
                       f"'{self.name}' "
                       f"({self.nbtype}) in {what}; only what its "
                       f"type says (shape, dtype, ndim) is known at compile time")

    def __bool__(self):
        self._runtime("a truth test")

    def __index__(self):
        self._runtime("an index")

    def __int__(self):
        self._runtime("int()")

    def __float__(self):
        self._runtime("float()")

    def __iter__(self):
        self._runtime("iteration")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        if other is self:
            return True
        self._runtime("'=='")

    def __ne__(self, other):
        self._runtime("'!='")


def _binary(name):
    def op(self, *args):
        self._runtime(f"'{name}'")
    return op


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and",
           "or", "xor", "matmul", "lt", "le", "gt", "ge", "neg", "pos", "invert", "abs"):
    for _f in (f"__{_n}__", f"__r{_n}__"):
        setattr(Symbol, _f, _binary(_n))


class _Method:
    """``x.slice`` inside ``static_eval``: the bound method, returned as it is; calling it there
    is a kernel operation, refused."""

    __slots__ = ("owner", "attr")

    def __init__(self, owner, attr):
        self.owner = owner
        self.attr = attr

    def __call__(self, *a, **k):
        raise StaticEvalError(f"{self.attr}() cannot be called inside static_eval(): it is a "
                              f"kernel operation; call it outside static_eval()")


class _Dynamic(Exception):
    pass


def evaluate(key: int, src: str, names, values):
    """The value of ``src`` given ``names`` bound to ``values`` (constants or :class:`Symbol`)
    and the globals of the function it came from; a :class:`StaticEvalError` when it cannot be
    computed at compile time."""
    import builtins
    # one namespace (names inside comprehensions resolve there too), kernel ops refused
    globals_, closure = _ENVS[key]
    scope = {k: _guard(v) for env in (globals_, closure) for k, v in env.items()}
    scope["__builtins__"] = builtins
    scope.update(zip(names, values))
    try:
        return eval(compile(src, "<static_eval>", "eval"), scope)  # noqa: S307
    except StaticEvalError:
        raise
    except _Dynamic as e:
        raise StaticEvalError(f"{e} (in static_eval({src}))") from None
    except Exception as e:  # noqa: BLE001  (the user's expression raised)
        raise StaticEvalError(f"Exception was raised inside static_eval() "
                              f"({type(e).__name__}: {e}) while evaluating `{src}`") from None


def _guard(value):
    import types as pytypes
    if isinstance(value, pytypes.ModuleType) and value.__name__.startswith("tilejit"):
        return _GuardedModule(value)
    return _refuse_kernel_op(value)


class _GuardedModule:
    """A tilejit module seen from ``static_eval``: its kernel operations refuse to run."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, attr):
        return _guard(getattr(self._module, attr))


def _refuse_kernel_op(value):
    from .. import language
    if value is language.static_eval:
        return value
    if callable(value) and (getattr(value, "__tile_stub__", None) or
                            type(value).__name__ == "TileFunction"):
        name = getattr(getattr(value, "pyfunc", None), "__name__", None) or \
            getattr(value, "__name__", "this function")

        def refuse(*a, **k):
            raise StaticEvalError(f"{name}() cannot be called inside static_eval(): it is a "
                                  f"kernel operation; call it outside static_eval()")
        return refuse
    return value


def static_type(value, context, values_types) -> Optional[types.Type]:
    """The Numba type of an evaluated result (the type of the variable when it is a
    :class:`Symbol`)."""
    from .arg_types import constant_type
    from .types import enum_member_type
    from ..dtypes import DType
    import enum
    if isinstance(value, Symbol):
        ty = values_types[value.index]
        for k in value.path:
            ty = ty.types[k]
        return ty
    if isinstance(value, _Method):
        raise StaticEvalError(f"static_eval() returned the method '{value.attr}' of a run-time "
                              f"value: tilejit cannot pass methods as values yet; call it "
                              f"directly")
    if isinstance(value, str):
        return types.literal(value)
    if value is None:
        return types.none
    if isinstance(value, enum.Enum):
        return enum_member_type(value)
    if isinstance(value, tuple):
        return types.BaseTuple.from_types([static_type(v, context, values_types) for v in value])
    if isinstance(value, (bool, int, float, DType)):
        return constant_type(value)
    try:
        return context.resolve_value_type(value)
    except Exception:  # noqa: BLE001
        raise StaticEvalError(f"static_eval() returned {value!r} ({type(value).__name__}), "
                              f"which a kernel cannot hold") from None


def argument_values(names, value_types, static_value, not_static):
    """The values ``evaluate`` binds: each variable's constant, the Python function a helper
    variable holds, a tuple of those, or a :class:`Symbol`."""
    from .types import TileFunctionType

    def one(ty, index, name, path):
        v = static_value(ty)
        if v is not not_static:
            return v
        if isinstance(ty, TileFunctionType):        # f = global_func: call its Python source
            return ty.function.py_func
        if isinstance(ty, types.BaseTuple):         # (1, t, 3): elements one by one
            return tuple(one(t, index, f"{name}[{k}]", path + (k,))
                         for k, t in enumerate(ty.types))
        return Symbol(index, ty, name, path)
    return [one(ty, i, name, ()) for i, (name, ty) in enumerate(zip(names, value_types))]


# --------------------------------------------------------------------------------------------------
# Before typing: calls whose variables are all constants
def fold_constant_calls(func_ir) -> int:
    """Replace each rewritten ``static_eval`` call whose variables are all constants (literals,
    globals, frozen ``Constant`` parameters) by its value as a global, before helpers are
    inlined: ``func = static_eval(OPS[op_id])`` then ``func(...)`` inlines the chosen helper.
    Returns how many."""
    from numba.core import ir
    from .. import language
    defs = {}
    for blk in func_ir.blocks.values():
        for st in blk.body:
            if isinstance(st, ir.Assign):
                defs.setdefault(st.target.name, []).append(st.value)

    def const(var):
        found = defs.get(var.name, ())
        if len(found) != 1:
            return _NOT
        v = found[0]
        if isinstance(v, (ir.Const, ir.Global, ir.FreeVar)):
            return v.value
        if isinstance(v, ir.Var):
            return const(v)
        if isinstance(v, ir.Expr) and v.op == "build_tuple":
            items = tuple(const(i) for i in v.items)
            return _NOT if any(i is _NOT for i in items) else items
        return _NOT

    n = 0
    for blk in func_ir.blocks.values():
        for st in blk.body:
            if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and
                    st.value.op == "call"):
                continue
            if const(st.value.func) is not language._static_eval:
                continue
            args = [const(a) for a in st.value.args]
            if any(a is _NOT for a in args):
                continue
            key, src, names, *values = args
            v = evaluate(key, src, names, values)
            st.value = ir.Global(f"static_eval({src})", v, st.loc)
            n += 1
    return n


_NOT = object()
