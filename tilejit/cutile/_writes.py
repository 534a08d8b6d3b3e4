"""Which array parameters a kernel stores into, read from its source (no Numba, no typing).

cuTile Python stores into any array argument (``ct.store(C, index, t)``), so ``ct.launch`` must
pass those arrays as writable (``tile.atomic``) and the others as read-only, before anything is
compiled: the keys of a launch (and a warm start's index lookup) depend on it. The analysis is
conservative in the safe direction: a parameter is *read-only* only when every use of it is a
read that tilejit's language defines -- an argument of a language function other than the
target (first argument) of ``tile.store``, ``tile.scatter`` and the atomics,
``x.shape``/``x.dtype``/``x.ndim``/``x.strides``, ``x.partition(s)`` followed by ``.load``/
``.num_tiles``/a static attribute, or an argument of a helper (a ``@tile.function``, a cuTile
adapter or a plain function) that only reads its parameter. Anything else (a store target, an
assignment to another name, a method call, a use the analysis does not know) counts as a
write. Marking a read-only array writable costs a little (its loads
take memory tokens; it may not alias another argument); the reverse would be a compile error.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
import weakref
from typing import Dict, FrozenSet, Optional

from .. import language as L

# the language's functions that write the array they are given first; every other function of
# the language only reads its arguments (only memory operations take arrays)
_WRITES_FIRST = frozenset([L.store, L.scatter, L.atomic_add, L.atomic_max, L.atomic_min,
                           L.atomic_and, L.atomic_or, L.atomic_xor, L.atomic_xchg, L.atomic_cas])
_STATIC_ATTRS = frozenset({"shape", "dtype", "ndim", "strides"})
_VIEW_READS = frozenset({"load", "num_tiles", "tile_shape", "ndim", "dtype"})

# function -> indices of its parameters it may write (None while being analysed: recursion)
_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def written_parameters(pyfunc) -> FrozenSet[str]:
    """Names of ``pyfunc``'s parameters that it (or a helper it calls) may store into."""
    names = list(inspect.signature(pyfunc).parameters)
    return frozenset(names[i] for i in _written(pyfunc))


def _written(fn) -> FrozenSet[int]:
    fn = getattr(fn, "py_func", fn)
    try:
        hit = _memo.get(fn, False)
    except TypeError:                    # not weak-referenceable: analyse every time
        hit = False
    if hit is None:                      # recursion (a compile error later): all written
        return frozenset(range(fn.__code__.co_argcount))
    if hit is not False:
        return hit
    _memo[fn] = None
    try:
        result = _analyse(fn)
    except (OSError, TypeError, SyntaxError):   # no source: every parameter may be written
        result = frozenset(range(len(inspect.signature(fn).parameters)))
    _memo[fn] = result
    return result


def _function_node(fn):
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src)
    name = fn.__code__.co_name          # the def's own name (adapters may be renamed)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
        if isinstance(node, ast.Lambda) and name == "<lambda>":
            return node
    raise SyntaxError(f"no definition of {name} in its source")


def _analyse(fn) -> FrozenSet[int]:
    node = _function_node(fn)
    a = node.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    index = {p: i for i, p in enumerate(params)}
    parents: Dict[int, ast.AST] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    body = node.body if isinstance(node.body, list) else [node.body]
    written = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id in index and isinstance(n.ctx, ast.Load):
                if not _is_read(n, parents, fn):
                    written.add(index[n.id])
    return frozenset(written)


def _is_read(name: ast.Name, parents, fn) -> bool:
    """Whether this use of a parameter only reads the array."""
    parent = parents.get(id(name))
    if isinstance(parent, ast.Attribute) and parent.value is name:
        if parent.attr in _STATIC_ATTRS:
            return True
        if parent.attr == "partition":          # x.partition(shape).load(...) and the like
            call = parents.get(id(parent))
            if isinstance(call, ast.Call) and call.func is parent:
                use = parents.get(id(call))
                return isinstance(use, ast.Attribute) and use.attr in _VIEW_READS
        return False
    if isinstance(parent, ast.Call) and name in parent.args:
        callee = _resolve(parent.func, fn)
        pos = parent.args.index(name)
        if any(isinstance(x, ast.Starred) for x in parent.args[:pos + 1]):
            return False
        return _reads_argument(callee, pos=pos)
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and parent.arg is not None:
            return _reads_argument(_resolve(call.func, fn), keyword=parent.arg)
    return False


def _reads_argument(callee, pos: Optional[int] = None, keyword: Optional[str] = None) -> bool:
    if callee is None:
        return False
    if L.is_stub(callee):
        if callee not in _WRITES_FIRST:
            return True
        if keyword is not None:
            return list(inspect.signature(callee).parameters)[0] != keyword
        return pos != 0
    py = getattr(callee, "py_func", callee) if isinstance(callee, L.TileFunction) else callee
    if not isinstance(py, types.FunctionType):
        return False
    names = list(inspect.signature(py).parameters)
    if keyword is not None:
        if keyword not in names:
            return False
        pos = names.index(keyword)
    if pos is None or pos >= len(names):
        return False
    return pos not in _written(py)


def _resolve(expr, fn):
    """The object a call's function expression names (a global, a closure variable or an
    attribute of a module), or None."""
    if isinstance(expr, ast.Name):
        code = fn.__code__
        if expr.id in code.co_freevars and fn.__closure__:
            try:
                return fn.__closure__[code.co_freevars.index(expr.id)].cell_contents
            except ValueError:
                return None
        if expr.id in fn.__globals__:
            return fn.__globals__[expr.id]
        return getattr(builtins, expr.id, None)
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, fn)
        if isinstance(base, types.ModuleType):
            return getattr(base, expr.attr, None)
    return None


__all__ = ["written_parameters"]
