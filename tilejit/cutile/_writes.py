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

:func:`specialized_accesses` answers the same question for one specialization, from its typed IR
(after the constants are frozen and the dead ``if CONST:`` arms removed): which array parameters
the kernel really stores into, and which it touches at all. ``ct.launch`` asks it only when two
arguments share memory (``Kernel._alias_conflict``: at most one of them may be stored into).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
import weakref
from typing import Dict, FrozenSet, Optional, Tuple

from .. import language as L

# the language's functions that write the array they are given first; every other function of
# the language only reads its arguments (only memory operations take arrays)
_WRITES_FIRST = frozenset([L.store, L.scatter, L.atomic_add, L.atomic_max, L.atomic_min,
                           L.atomic_and, L.atomic_or, L.atomic_xor, L.atomic_xchg, L.atomic_cas])
_STATIC_ATTRS = frozenset({"shape", "dtype", "ndim", "strides"})
_VIEW_READS = frozenset({"load", "num_tiles", "tile_shape", "ndim", "dtype",
                         "traversal_steps", "load_offset"})

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
        if parent.attr in ("partition", "tiled_view", "get_raw_memory"):  # x.partition(s).load()
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


# --------------------------------------------------------------------------------------------------
# One specialization: its typed IR
# methods of arrays and views that store into their receiver; every other method reads it
_STORE_METHODS = frozenset({"Partition.store", "TileView.store", "TiledView.store",
                            *(f"TiledView.atomic_store_{m}"
                              for m in ("add", "max", "min", "and", "or", "xor"))})
_ANY = "*"                          # an array value of unknown origin: any parameter


def specialized_accesses(typed) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """``(stored, accessed)`` for a typed kernel (``typing.pipeline.type_kernel``): the names of
    the array parameters it may store into, and of those it may read or store into at all.

    The typed IR has the constants frozen and the arms of static branches that do not run
    removed, so a store under ``if RETURN_Z_LOSS:`` with ``RETURN_Z_LOSS=0`` is not there. Every
    array value (a tensor, a partition, a view, a tuple holding one, a method bound to one) is
    traced to the parameters it may come from; a value of unknown origin counts as any array
    parameter. A call that stores (``tile.store``, ``tile.scatter``, the atomics into their
    first argument; ``.store`` of a partition or view) stores into its target's parameters; any
    other call that is given an array value accesses it, and a call that is not one of the
    language's stores it (a function tilejit does not know). Static attributes (``x.shape``,
    ``x.dtype``...) are no access."""
    from numba.core import ir
    from numba.core import types as nt

    from ..typing.types import PartitionType, TensorPartitionViewType, TensorType
    arrays = (TensorType, PartitionType, TensorPartitionViewType)

    def holds_array(ty) -> bool:
        if isinstance(ty, arrays):
            return True
        if isinstance(ty, nt.BaseTuple):
            return any(holds_array(t) for t in ty.types)
        if isinstance(ty, nt.BoundFunction):
            return holds_array(ty.this)
        return False

    func_ir, typemap = typed.func_ir, typed.typemap
    names = list(func_ir.arg_names)
    params = frozenset(p.name for p in typed.params if p.kind in ("tensor", "partition"))
    assigns = [st for b in func_ir.blocks.values() for st in b.body if isinstance(st, ir.Assign)]
    origin: Dict[str, set] = {}
    for st in assigns:
        v = st.value
        if isinstance(v, ir.Arg) and names[v.index] in params:
            origin[st.target.name] = {names[v.index]}
    # array values take the origins of every variable they are made from (copies, phis, tuples,
    # views, bound methods), to a fixed point (loops); one made from nothing: unknown
    changed = True
    while changed:
        changed = False
        for st in assigns:
            v = st.value
            if isinstance(v, ir.Arg) or not holds_array(typemap.get(st.target.name)):
                continue
            src = [v] if isinstance(v, ir.Var) else (v.list_vars() if isinstance(v, ir.Expr)
                                                     else [])
            new = set().union(*(origin.get(x.name, ()) for x in src)) if src else {_ANY}
            if not new and not any(holds_array(typemap.get(x.name)) for x in src):
                new = {_ANY}
            old = origin.setdefault(st.target.name, set())
            if not new <= old:
                old |= new
                changed = True

    def params_of(var_names) -> set:
        out = set()
        for n in var_names:
            out |= origin.get(n, set())
        return set(params) if _ANY in out else out

    stored, accessed = set(), set()
    for b in func_ir.blocks.values():
        for st in b.body:
            exprs = [st.value] if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) \
                else []
            if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and \
                    st.value.op == "getattr" and st.value.attr in _STATIC_ATTRS:
                continue
            if not exprs:
                if not isinstance(st, ir.Assign):      # a statement using an array: a read
                    accessed |= params_of(v.name for v in st.list_vars())
                continue
            e = exprs[0]
            if e.op != "call":
                continue                # propagation only (copies, tuples, getattr, phis...)
            touched = params_of(v.name for v in e.list_vars())
            if not touched:
                continue
            accessed |= touched
            fnty = typemap.get(e.func.name)
            if isinstance(fnty, nt.BoundFunction):
                op = getattr(fnty.template, "op", None)
                if op in _STORE_METHODS:
                    stored |= params_of([e.func.name])
                elif op is None:
                    stored |= touched
                continue
            template = next((t for t in getattr(fnty, "templates", ()) if hasattr(t, "op")),
                            None)
            stub = getattr(template, "stub", None)
            if template is None or (stub is None and not str(template.op).startswith(
                    ("tile.", "operator."))):
                stored |= touched               # not the language's: it may store
            elif stub in _WRITES_FIRST:
                try:
                    target = typed.call_info(e).args.get(
                        next(iter(inspect.signature(stub).parameters)))
                except Exception:               # noqa: BLE001 - conservative
                    target = None
                stored |= params_of([target.name]) if isinstance(target, ir.Var) else touched
    return frozenset(stored), frozenset(accessed)


__all__ = ["written_parameters", "specialized_accesses"]
