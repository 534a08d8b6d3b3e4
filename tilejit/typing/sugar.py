"""Source rewrites for cuTile Python's statement forms that Numba's bytecode front end cannot take
as they are. They run on the kernel's (and each helper's) ``ast`` before Numba reads the
bytecode, together with ``static_eval``'s rewrite (``static_eval.rewrite``), and leave plain
Python behind:

* ``with cm(args) as v: body`` where ``cm`` is a ``@contextlib.contextmanager`` function (both
  front ends; cuTile accepts no other context manager): the generator is split at its one
  ``yield`` into two helpers, *enter* (the code before it; returns the yielded value and the
  generator's variables the rest reads) and *exit* (the code after it), inlined as helpers are.
  ``v, *state = enter(args)``, the body, ``exit(*state)``; a ``break``/``continue`` of a loop
  around the ``with`` and every ``return`` in the body call ``exit`` first, innermost first
  (Python's order). The ``yield`` must be a statement of the generator's body (not inside a
  loop or an ``if``), and the generator may not ``return``: cuTile's rules and messages.
* ``tuple(expr for x in ct.static_iter(it) if c ...)`` (a tuple comprehension: every iterable a
  ``static_iter``): a statement list before the statement that uses it, ``acc = ()`` and nested
  ``static_iter`` loops adding ``(expr,)``; the comprehension's variables are renamed so they do
  not leak, and one used before its generator binds it is cuTile's "Undefined variable" error.
* ``a and b`` / ``a or b`` where their value is used (not as a condition) in a ``ct.kernel``:
  each operand becomes ``bool(...)``, so the result is a bool as in cuTile (Python's rule would
  give an int on one path and a bool on another).
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import dis
import inspect
import itertools
import textwrap
import weakref

from ..errors import SourceLocation, TypingError, UnsupportedError
from .reject import _Visitor, unsupported

_WITH_OPS = frozenset({"BEFORE_WITH", "SETUP_WITH"})
_VALUE_BOOL_OPS = frozenset({"JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", "COPY"})
_counter = itertools.count()
#: the code of the functions @contextlib.contextmanager makes
_CONTEXTMANAGER = contextlib.contextmanager(lambda: (yield)).__code__


def wanted(pyfunc, cutile: bool) -> bool:
    """Whether ``pyfunc``'s bytecode may hold a form rewritten here (cheap, conservative)."""
    code = pyfunc.__code__
    if any(getattr(c, "co_name", None) == "<genexpr>" for c in code.co_consts):
        return True
    ops = {i.opname for i in dis.get_instructions(code)}
    return bool(ops & _WITH_OPS) or (cutile and bool(ops & _VALUE_BOOL_OPS))


def transform(fdef: ast.FunctionDef, pyfunc, cutile: bool, env: dict, line0: int) -> bool:
    """Rewrite ``fdef`` (the parsed source of ``pyfunc``, lines offset by ``line0``) in place;
    helper functions the new code calls are added to ``env`` (name -> value). True if changed."""
    closure = dict(zip(pyfunc.__code__.co_freevars,
                       (c.cell_contents for c in pyfunc.__closure__ or ())))
    ctx = _Context(pyfunc, closure, env, line0, cutile)
    changed = False
    if cutile:
        b = _BoolOps()
        fdef.body = [b.visit(s) for s in fdef.body]
        changed |= b.changed
    w = _Withs(ctx, _stores([fdef]))
    fdef.body = w.statements(fdef.body)
    g = _Comprehensions(ctx)
    fdef.body = g.statements(fdef.body)
    return changed or w.changed or g.changed


class _Context:
    def __init__(self, pyfunc, closure, env, line0, cutile):
        self.pyfunc, self.closure, self.env, self.line0 = pyfunc, closure, env, line0
        self.cutile = cutile

    def loc(self, node) -> SourceLocation:
        return SourceLocation(self.pyfunc.__code__.co_filename, node.lineno + self.line0,
                              node.col_offset, None, self.pyfunc.__name__)

    def value(self, node):
        """The value of the expression ``node`` in the function's globals and closure, or None
        (a local variable, anything that does not evaluate)."""
        try:
            code = compile(ast.Expression(copy.deepcopy(node)), "<tilejit>", "eval")
            return eval(code, self.pyfunc.__globals__, dict(self.closure))  # noqa: S307
        except Exception:  # noqa: BLE001
            return None

    def name(self, value, stem: str) -> str:
        """A fresh name bound to ``value`` in the rewritten function's environment."""
        n = f"__tj_{stem}{next(_counter)}"
        self.env[n] = value
        return n


def _stores(nodes) -> set:
    out = set()
    for root in nodes:
        for n in _walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _walk(node):
    """ast.walk without descending into nested functions and lambdas (their own scope)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not node:
            continue
        todo.extend(ast.iter_child_nodes(n))


# --------------------------------------------------------------------------------------------------
# and / or as bools (ct.kernel)
class _BoolOps(ast.NodeTransformer):
    def __init__(self):
        self.changed = False

    def _test(self, node):
        """A condition: a BoolOp here compiles to jumps (no value), so it stays as it is."""
        if isinstance(node, ast.BoolOp):
            node.values = [self._test(v) for v in node.values]
            return node
        return self.visit(node)

    def visit_If(self, node):
        node.test = self._test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    visit_While = visit_If

    def visit_IfExp(self, node):
        node.test = self._test(node.test)
        node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        return node

    def visit_BoolOp(self, node):
        self.changed = True
        node.values = [ast.Call(ast.Name("bool", ast.Load()), [self.visit(v)], [])
                       for v in node.values]
        return node

    def visit_Call(self, node):
        f = node.func
        if (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) == "static_eval":
            return node             # Python, run at compile time
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node                 # compiled on its own

    visit_Lambda = visit_AsyncFunctionDef = visit_FunctionDef


# --------------------------------------------------------------------------------------------------
# with statements over @contextmanager functions
_splits: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _StatementRewriter:
    """Rewrites each statement of a body (nested bodies first, named ``FIELDS``) into a list of
    statements; nested function and class definitions are left alone."""
    FIELDS = ("body", "orelse", "finalbody")

    def statements(self, stmts: list) -> list:
        out = []
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(s)
                continue
            for field in self.FIELDS:
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.statements(getattr(s, field)))
            out += self.rewrite(s)
        return out

    def rewrite(self, s) -> list:
        raise NotImplementedError


class _Withs(_StatementRewriter):
    def __init__(self, ctx: _Context, assigned: set):
        self.ctx = ctx
        self.assigned = assigned        # the names the function assigns somewhere
        self.changed = False

    def rewrite(self, s) -> list:
        return self._expand(s, s.items, s.body) if isinstance(s, ast.With) else [s]

    def _expand(self, node, items, body) -> list:
        self.changed = True
        if len(items) > 1:                          # with a, b: is with a: with b:
            body = self._expand(node, items[1:], body)
        item = items[0]
        call = item.context_expr
        fn = self.ctx.value(call.func) if isinstance(call, ast.Call) else None
        gen = getattr(fn, "__wrapped__", None)
        if getattr(fn, "__code__", None) is not _CONTEXTMANAGER or not inspect.isfunction(gen):
            raise UnsupportedError("with statements in tile kernels take a "
                                   "@contextlib.contextmanager function called in place (with "
                                   "cm(args) as v:); other context managers are not supported",
                                   self.ctx.loc(item.context_expr))
        enter, exit_, live, fixed = _split(gen, self.ctx)
        e, x = self.ctx.name(enter, "enter"), self.ctx.name(exit_, "exit")
        v = f"__tj_cmv{next(_counter)}"
        state = [f"{v}_{n}" for n in live]
        out = [ast.Assign([ast.Tuple([ast.Name(v, ast.Store())] +
                                     [ast.Name(s, ast.Store()) for s in state], ast.Store())],
                          ast.Call(ast.Name(e, ast.Load()), call.args, call.keywords))]
        if item.optional_vars is not None:
            out.append(ast.Assign([item.optional_vars], ast.Name(v, ast.Load())))
        passed = self._arguments(call, gen)
        leave_args = []
        for n, sv in zip(live, state):
            a = passed.get(n) if n in fixed else None
            # a constant or a name the function never assigns is passed to exit as it is: an
            # array then never goes through a variable set inside a loop (a loop result)
            direct = isinstance(a, ast.Constant) or (isinstance(a, ast.Name) and
                                                      a.id not in self.assigned)
            leave_args.append(copy.deepcopy(a) if direct else ast.Name(sv, ast.Load()))
        leave = ast.Expr(ast.Call(ast.Name(x, ast.Load()), leave_args, []))
        out += _with_exits(body, leave, False) + [leave]
        for s in out:
            ast.copy_location(s, node)
        return [ast.fix_missing_locations(s) for s in out]


    @staticmethod
    def _arguments(call, gen) -> dict:
        """The generator's parameter names -> the argument expressions ``call`` binds them to
        (positional and keyword; defaults and ``*args`` are left out)."""
        a = ast.parse(textwrap.dedent(inspect.getsource(gen))).body[0].args
        names = [p.arg for p in a.posonlyargs + a.args]
        out = {n: arg for n, arg in zip(names, call.args) if not isinstance(arg, ast.Starred)}
        out.update({k.arg: k.value for k in call.keywords if k.arg is not None})
        return out


def _with_exits(stmts: list, leave, in_loop: bool) -> list:
    """``stmts`` with ``leave`` called before each way out of the ``with`` body: ``return``
    anywhere, ``break``/``continue`` outside loops inside the body."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Return):
            if s.value is not None and not (isinstance(s.value, ast.Constant) and
                                            s.value.value is None):
                r = f"__tj_ret{next(_counter)}"
                out.append(ast.copy_location(ast.Assign([ast.Name(r, ast.Store())], s.value), s))
                s = ast.copy_location(ast.Return(ast.Name(r, ast.Load())), s)
            out += [ast.copy_location(copy.deepcopy(leave), s), s]
            continue
        if isinstance(s, (ast.Break, ast.Continue)) and not in_loop:
            out += [ast.copy_location(copy.deepcopy(leave), s), s]
            continue
        if isinstance(s, (ast.For, ast.While)):
            s.body = _with_exits(s.body, leave, True)
        elif isinstance(s, ast.If):
            s.body = _with_exits(s.body, leave, in_loop)
            s.orelse = _with_exits(s.orelse, leave, in_loop)
        out.append(s)
    return out


def _reachable(stmts: list) -> list:
    """``stmts`` without what follows a ``break``/``continue``/``return`` in each list."""
    out = []
    for s in stmts:
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list) and not isinstance(
                    s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                setattr(s, field, _reachable(getattr(s, field)))
        out.append(s)
        if isinstance(s, (ast.Break, ast.Continue, ast.Return)):
            break
    return out


def _split(gen, ctx: _Context):
    """``(enter, exit, live names)`` helpers of the generator function ``gen`` (memoized; its
    own ``with`` statements, comprehensions and, for a ct.kernel, ``and``/``or`` rewritten)."""
    memo = _splits.setdefault(gen, {})
    hit = memo.get(ctx.cutile)
    if hit is not None:
        return hit
    from ..language import TileFunction
    lines, start = inspect.getsourcelines(gen)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    fdef.decorator_list = []
    gctx = _Context(gen, dict(zip(gen.__code__.co_freevars,
                                  (c.cell_contents for c in gen.__closure__ or ()))), {},
                    start - 1, ctx.cutile)
    if ctx.cutile:
        b = _BoolOps()
        fdef.body = [b.visit(s) for s in fdef.body]
    fdef.body = _Comprehensions(gctx).statements(
        _Withs(gctx, _stores([fdef])).statements(fdef.body))
    fdef.body = _reachable(fdef.body)
    for n in _walk(fdef):
        if isinstance(n, ast.Return):
            raise UnsupportedError("Returning from a generator-based context manager is not "
                                   "supported", gctx.loc(n))
    yields = [n for n in _walk(fdef) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    if not yields:
        raise TypingError("Expected a generator function, but no reachable `yield` statement "
                          "has been found", gctx.loc(fdef))
    if len(yields) > 1:
        raise TypingError(f"Generator-based context manager must have one `yield` statement "
                          f"(another `yield` found on line {yields[1].lineno + start - 1})",
                          gctx.loc(yields[1]))
    at = next((i for i, s in enumerate(fdef.body) if isinstance(s, ast.Expr) and
               s.value is yields[0]), None)
    if at is None or isinstance(yields[0], ast.YieldFrom):
        raise TypingError("`yield` statement of a generator-based context manager must be "
                          "placed outside of loops and conditional statements",
                          gctx.loc(yields[0]))
    before, after = fdef.body[:at], fdef.body[at + 1:]
    _check_closures(before, _stores(after), gctx)
    a = fdef.args
    params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    reads = {n.id for s in after for n in ast.walk(s) if isinstance(n, ast.Name)}
    live = sorted((params | _stores(before)) & reads)
    fixed = frozenset(n for n in live if n in params and n not in _stores(before))
    value = yields[0].value or ast.Constant(None)
    ret = ast.Return(ast.Tuple([value] + [ast.Name(n, ast.Load()) for n in live], ast.Load()))
    enter = ast.FunctionDef(f"{fdef.name}__enter", a, before + [ret], [], None)
    exit_args = ast.arguments([], [ast.arg(n) for n in live], None, [], [], None, [])
    exit_ = ast.FunctionDef(f"{fdef.name}__exit", exit_args, after + [ast.Pass()], [], None)
    for f in (enter, exit_):
        ast.copy_location(f, fdef)
        ast.fix_missing_locations(f)
        _Visitor(gen.__code__.co_filename, gen.__name__, False, start - 1, 0).visit(f)
    fns = _compile([enter, exit_], gen, gctx, start - 1)
    for f in fns:
        f.__tilejit_rewritten__ = True  # its source is the generator's: not to be read again
    hit = memo[ctx.cutile] = (TileFunction(fns[0]), TileFunction(fns[1]), tuple(live), fixed)
    return hit


def _check_closures(before: list, assigned_after: set, ctx: _Context) -> None:
    """A nested function made before the ``yield`` captures values, not variables: one that
    reads a name the code after the ``yield`` assigns would see the old value (Python's would
    see the new one), so it is refused."""
    for s in before:
        for n in _walk(s):
            if isinstance(n, (ast.FunctionDef, ast.Lambda)):
                late = sorted({m.id for m in ast.walk(n) if isinstance(m, ast.Name) and
                               isinstance(m.ctx, ast.Load)} & assigned_after)
                if late:
                    raise UnsupportedError(
                        f"this @contextmanager function defines a nested function before its "
                        f"yield that reads {', '.join(repr(x) for x in late)}, which it assigns "
                        f"after the yield: not supported in tile kernels (pass the value as an "
                        f"argument instead)", ctx.loc(n))


def _compile(fdefs: list, origin, ctx: _Context, line0: int) -> list:
    """The functions ``fdefs`` compiled with ``origin``'s globals, its closure values and the
    helpers in ``ctx.env`` as closure variables (so they resolve as ``origin``'s names do)."""
    names = list(ctx.closure) + list(ctx.env)
    outer = ast.FunctionDef(
        "__tilejit_outer__", ast.arguments([], [ast.arg(n) for n in names], None, [], [], None,
                                           []),
        fdefs + [ast.Return(ast.Tuple([ast.Name(f.name, ast.Load()) for f in fdefs],
                                      ast.Load()))], [], None)
    module = ast.Module([outer], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, line0)
    ns: dict = {}
    exec(compile(module, origin.__code__.co_filename, "exec"), origin.__globals__, ns)  # noqa: S102
    return list(ns["__tilejit_outer__"](*ctx.closure.values(), *ctx.env.values()))


# --------------------------------------------------------------------------------------------------
# tuple comprehensions over static_iter
class _Comprehensions(_StatementRewriter):
    FIELDS = ("body", "orelse")

    def __init__(self, ctx: _Context):
        self.ctx = ctx
        self.changed = False

    def rewrite(self, s) -> list:
        before: list = []
        # a while's test runs again each iteration: its comprehensions are left to the check
        skip = {"body", "orelse", "finalbody", "handlers"} | (
            {"test"} if isinstance(s, ast.While) else set())
        self._hoist(s, before, skip)
        return before + [s]

    def _hoist(self, node, before: list, skip=frozenset()) -> None:
        """Replace each ``tuple(genexpr)`` under ``node`` (in place; not inside another one or
        a lambda) by a fresh name whose statements go to ``before``."""
        for field, child in ast.iter_fields(node):
            if field in skip:
                continue
            kids = child if isinstance(child, list) else [child]
            for i, k in enumerate(kids):
                if not isinstance(k, ast.AST) or isinstance(k, ast.Lambda):
                    continue
                if self._is_comprehension(k):
                    new = ast.copy_location(ast.Name(self._expand(k, before), ast.Load()), k)
                    if isinstance(child, list):
                        child[i] = new
                    else:
                        setattr(node, field, new)
                else:
                    self._hoist(k, before)

    def _is_comprehension(self, node) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id == "tuple" and len(node.args) == 1 and not node.keywords and
                isinstance(node.args[0], ast.GeneratorExp) and
                self.ctx.value(node.func) is builtins.tuple)

    def _expand(self, call, before: list) -> str:
        from .. import language
        self.changed = True
        gx = call.args[0]
        k = next(_counter)
        acc = f"__tj_acc{k}"
        gens = gx.generators
        for g in gens:
            if g.is_async:
                raise unsupported("genexpr", self.ctx.loc(g.iter))
            if not (isinstance(g.iter, ast.Call) and
                    self.ctx.value(g.iter.func) is language.static_iter):
                raise UnsupportedError("All iterables in a tuple comprehension must be wrapped "
                                       "in ct.static_iter(), e.g. tuple(... for x in "
                                       "ct.static_iter(...))", self.ctx.loc(g.iter))
        bound = [_stores([g.target]) for g in gens]
        local = set().union(*bound)
        rename = {n: f"__tj_c{k}_{n}" for n in local}
        seen: set = set()
        for i, g in enumerate(gens):
            if i:                                           # the comprehension's own scope
                self._check_defined(g.iter, local - seen)
                _rename(g.iter, rename)
            seen |= bound[i]
            for c in g.ifs:
                self._check_defined(c, local - seen)
        for g in gens:
            _rename(g.target, rename)
            for c in g.ifs:
                _rename(c, rename)
        _rename(gx.elt, rename)
        add = ast.Assign([ast.Name(acc, ast.Store())], ast.BinOp(
            ast.Name(acc, ast.Load()), ast.Add(), ast.Tuple([gx.elt], ast.Load())))
        body = [add]
        for g in reversed(gens):
            if g.ifs:
                test = g.ifs[0] if len(g.ifs) == 1 else ast.BoolOp(ast.And(), g.ifs)
                body = [ast.If(test, body, [])]
            body = [ast.For(g.target, g.iter, body, [])]
        stmts = [ast.Assign([ast.Name(acc, ast.Store())], ast.Tuple([], ast.Load()))] + body
        for s in stmts:
            ast.copy_location(s, call)
            ast.fix_missing_locations(s)
        before += self.statements(stmts)            # comprehensions inside the element
        return acc

    def _check_defined(self, expr, unbound: set) -> None:
        for n in _walk(expr):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in unbound:
                raise UnsupportedError(f"Undefined variable {n.id} used", self.ctx.loc(n))


def _rename(node, mapping: dict) -> None:
    """Rename the names of ``mapping`` in ``node`` (a lambda's own parameters shadow them)."""
    shadow: set = set()
    if isinstance(node, ast.Lambda):
        a = node.args
        shadow = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Name) and child.id in mapping and child.id not in shadow:
            child.id = mapping[child.id]
        else:
            _rename(child, {k: v for k, v in mapping.items() if k not in shadow})
    if isinstance(node, ast.Name) and node.id in mapping:
        node.id = mapping[node.id]


__all__ = ["wanted", "transform"]
