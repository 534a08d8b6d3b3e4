"""Inlining of ``@tile.function`` helpers into the caller's untyped IR (before SSA).

Each call ``r = helper(a, b=c)`` is replaced by the helper's blocks: parameters become copies of
the caller's argument variables (defaults become constants), every helper variable is renamed
``name~N`` (N numbers the call site; ``diagnostics.user_name`` strips it again), and each
``return v`` becomes ``r = v; jump <after the call>``. Helpers are inlined into their own body
first, so helpers may call helpers; a helper reached again through its own call chain is
recursion and is rejected.
"""
from __future__ import annotations

import builtins
import inspect
import itertools
import types as pytypes
import weakref
from typing import Callable, Dict, List, Optional

from numba.core import ir, ir_utils

from .. import language
from ..errors import TypingError, UnsupportedError
from .diagnostics import user_name as diag_name
from .passes import constant_assignments, first_assignments
from .reject import MSG, numba_loc

_site_ids = itertools.count(1)


def _static_callee(defs: Dict[str, ir.Assign], var: ir.Var, depth: int = 0):
    """The Python object a call's function variable certainly holds, or None (also when it is
    assigned more than once with different objects: see :func:`_reaching_callees`)."""
    stmt = defs.get(var.name)
    if stmt is None or depth > 8:
        return None
    more = getattr(defs, "more", {}).get(var.name)
    if more:
        found = [_assigned_callee(defs, s, depth) for s in more]
        return found[0] if all(f is found[0] for f in found) else None
    return _assigned_callee(defs, stmt, depth)


def _reaching_callees(func_ir, defs, var: ir.Var, label: int, index: int) -> list:
    """The objects a function variable assigned more than once may hold at the call at
    (``label``, ``index``): its assignments that reach there (reaching definitions; a helper
    chosen by a run-time ``if`` reaches with the other one)."""
    from numba.core.analysis import compute_cfg_from_blocks
    from .static_branches import reaching_definitions
    blocks = func_ir.blocks
    sites = {var.name: [(lbl, i, st) for lbl, blk in blocks.items()
                        for i, st in enumerate(blk.body)
                        if isinstance(st, ir.Assign) and st.target.name == var.name]}
    here = [(i, st) for lbl, i, st in sites[var.name] if lbl == label and i < index]
    if here:
        return [_assigned_callee(defs, max(here, key=lambda x: x[0])[1], 0)]
    reach = reaching_definitions(blocks, compute_cfg_from_blocks(blocks), sites)
    found = reach[label].get(var.name, ())
    return [_assigned_callee(defs, blocks[lbl].body[i], 0) for lbl, i in sorted(found)]


def _assigned_callee(defs, stmt, depth: int):
    v = stmt.value
    if isinstance(v, (ir.Global, ir.FreeVar)):
        return v.value
    if isinstance(v, ir.Var):
        return _static_callee(defs, v, depth + 1)
    if isinstance(v, ir.Expr) and v.op == "getattr":
        base = _static_callee(defs, v.value, depth + 1)
        if isinstance(base, pytypes.ModuleType):
            return getattr(base, v.attr, None)
    return None


#: builtins that a kernel calls as helpers written in the kernel language
_BUILTIN_HELPERS = {id(builtins.divmod): language.divmod_}


def _builtin_helpers(func_ir) -> bool:
    """``divmod`` and the like become the kernel-language functions that implement them."""
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, (ir.Global, ir.FreeVar)):
                helper = _BUILTIN_HELPERS.get(id(stmt.value.value))
                if helper is not None:
                    stmt.value = ir.Global(stmt.value.name, helper, stmt.value.loc)
                    changed = True
    return changed


def _is_entry(obj) -> bool:
    """A ``@tile.entry`` kernel object (anything wrapping a py_func that is not a helper)."""
    return getattr(obj, "__tilejit_entry__", False) or (
        hasattr(obj, "py_func") and not isinstance(obj, language.TileFunction))


def inline_helpers(func_ir, build_ir: Callable, stack: List, funcname: str,
                   sites: Optional[dict] = None, plain: bool = False) -> bool:
    """Inline every helper call in ``func_ir`` (mutated). ``build_ir(pyfunc, stack)`` returns a
    helper's untyped IR with its own helpers already inlined. ``sites`` receives
    ``site id -> (helper name, call ir.Loc, caller name)``. ``plain``: undecorated Python
    functions are helpers too (``CompileOptions.plain_helpers``, cuTile's rule); otherwise
    calling one is an error. Returns True if anything changed."""
    changed_any = _builtin_helpers(func_ir)
    changed_any = (plain and _wrap_plain_functions(func_ir)) or changed_any
    while True:
        defs = first_assignments(func_ir)
        site = _find_call_site(func_ir, defs, stack, funcname, plain)
        if site is None:
            return changed_any
        label, index, helper = site
        sid = _inline_one(func_ir, label, index, helper, build_ir, stack, funcname)
        if sites is not None:
            sites[sid] = (helper.name, func_ir.blocks[label].body[-1].loc, funcname)
        changed_any = True


# plain Python function -> the @tile.function that inlines it (one per function, so its type is
# one type wherever it appears)
_plain_helpers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# functions of these packages are never helpers (reject.check_ir explains NumPy's)
_LIBRARIES = frozenset({"numpy", "numba", "math", "operator", "builtins"})


def _as_helper(fn) -> language.TileFunction:
    h = _plain_helpers.get(fn)
    if h is None:
        h = _plain_helpers[fn] = language.TileFunction(fn)
    return h


def _wrap_plain_functions(func_ir) -> bool:
    """Make every plain Python function the IR names (a global, a closure variable or a module
    attribute) a ``@tile.function``: calls to it are then inlined, and the name types as a
    helper. Language stubs and kernels stay as they are."""
    defs = first_assignments(func_ir)
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, ir.Assign):
                continue
            v = stmt.value
            if isinstance(v, (ir.Global, ir.FreeVar)) or (isinstance(v, ir.Expr) and
                                                            v.op == "getattr"):
                fn = _static_callee(defs, stmt.target)
                if isinstance(fn, pytypes.FunctionType) and not language.is_stub(fn) and \
                        (fn.__module__ or "").split(".")[0] not in _LIBRARIES:
                    name = v.name if isinstance(v, (ir.Global, ir.FreeVar)) else fn.__name__
                    stmt.value = ir.Global(name, _as_helper(fn), v.loc)
                    changed = True
    return changed


def _find_call_site(func_ir, defs, stack, funcname, plain=False):
    for label in sorted(func_ir.blocks):
        block = func_ir.blocks[label]
        for i, stmt in enumerate(block.body):
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and
                    stmt.value.op == "call"):
                continue
            callee = _static_callee(defs, stmt.value.func)
            if callee is None and stmt.value.func.name in getattr(defs, "more", {}):
                choices = _reaching_callees(func_ir, defs, stmt.value.func, label, i)
                if choices and all(c is choices[0] for c in choices):
                    callee = choices[0]         # reassigned, but one value reaches the call
                choices = [c for c in choices if
                           isinstance(c, (language.TileFunction, pytypes.FunctionType))]
                if callee is None and choices:
                    names = ", ".join(sorted({getattr(c, "name", None) or c.__name__
                                              for c in choices}))
                    raise UnsupportedError(
                        f"'{diag_name(stmt.value.func.name)}' names a different function on "
                        f"different paths ({names}); helpers are inlined, so a call through a "
                        f"variable must name one function: call each one in its own branch",
                        numba_loc(stmt.loc, funcname))
            if callee is None:
                continue
            loc = numba_loc(stmt.loc, funcname)
            if isinstance(callee, language.TileFunction):
                if any(callee.py_func is f for f in stack):
                    chain = " -> ".join(f.__name__ for f in stack) + f" -> {callee.name}"
                    raise UnsupportedError(MSG["recursion"].format(
                        name=callee.name, via=f" (call chain: {chain})"), loc)
                return label, i, callee
            if isinstance(callee, pytypes.FunctionType):
                if any(callee is f for f in stack):
                    raise UnsupportedError(MSG["recursion"].format(name=callee.__name__, via=""),
                                           loc)
                if language.is_stub(callee):
                    continue
                raise UnsupportedError(MSG["plain_function"].format(name=callee.__name__), loc)
            if _is_entry(callee):
                name = getattr(getattr(callee, "py_func", None), "__name__", repr(callee))
                if any(getattr(callee, "py_func", None) is f for f in stack):
                    raise UnsupportedError(MSG["recursion"].format(name=name, via=""), loc)
                raise UnsupportedError(MSG["kernel_call"].format(name=name), loc)
    return None


def _bind_arguments(helper: language.TileFunction, call: ir.Expr, loc):
    """Parameter name -> caller ir.Var, or ('const', default) for defaults."""
    if call.vararg is not None or getattr(call, "varkwarg", None) is not None:
        raise UnsupportedError(MSG["star_call"], loc)
    pysig = inspect.signature(helper.py_func)
    for p in pysig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UnsupportedError(f"@tile.function '{helper.name}' may not take *args or "
                                   f"**kwargs", loc)
    try:
        ba = pysig.bind(*call.args, **dict(call.kws))
    except TypeError as e:
        raise TypingError(f"{helper.name}(): {e} (signature: {helper.name}{pysig})", loc) \
            from None
    out = {}
    for name, p in pysig.parameters.items():
        out[name] = ba.arguments[name] if name in ba.arguments else ("const", p.default)
    return out


def _inline_one(func_ir, label, index, helper, build_ir, stack, funcname):
    block = func_ir.blocks[label]
    stmt = block.body[index]
    call = stmt.value
    loc = numba_loc(stmt.loc, funcname)
    bound = _bind_arguments(helper, call, loc)
    callee_ir = build_ir(helper.py_func, stack + [helper.py_func])
    scope = block.scope
    site = next(_site_ids)

    # 1. fresh labels after every label of the caller
    offset = max(func_ir.blocks) + 1
    blocks = ir_utils.add_offset_to_labels(callee_ir.blocks, offset)
    entry = min(blocks)

    # 2. rename the helper's variables into the caller's scope
    names = set()
    for b in blocks.values():
        for v in b.find_insts(ir.Assign):
            names.add(v.target.name)
        for inst in b.body:
            for var in inst.list_vars():
                names.add(var.name)
    var_map = {}
    for name in sorted(names):
        var_map[name] = scope.redefine(f"{name}~{site}", loc=stmt.loc)
    ir_utils.replace_vars(blocks, var_map)
    if (getattr(helper.py_func, "__module__", None) or "").startswith("tilejit."):
        # an operation tilejit writes as a helper (ct.assert_, ct.floordiv...): its statements
        # are the user's call, so messages and device assertions name the user's line
        for b in blocks.values():
            for inst in b.body:
                inst.loc = stmt.loc
                if isinstance(getattr(inst, "value", None), ir.Expr):
                    inst.value.loc = stmt.loc

    # 3. parameters: `x = arg(i)` becomes `x = <caller var>` or a constant default
    after = max(blocks) + 1
    for b in blocks.values():
        b.scope = scope
        body = []
        for inst in b.body:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Arg):
                actual = bound[inst.value.name]
                if isinstance(actual, tuple) and actual and actual[0] == "const":
                    body.extend(constant_assignments(actual[1], inst.target, scope, inst.loc,
                                                     f"{helper.name}.{inst.value.name}"))
                else:
                    body.append(ir.Assign(actual, inst.target, inst.loc))
            else:
                body.append(inst)
        b.body = body
        # 4. `return v` -> `r = v; jump after`
        term = b.body[-1] if b.body else None
        if isinstance(term, ir.Return):
            b.body[-1] = ir.Assign(term.value, stmt.target, term.loc)
            b.body.append(ir.Jump(after, term.loc))

    # 5. split the caller's block around the call
    tail = ir.Block(scope, stmt.loc)
    tail.body = block.body[index + 1:]
    block.body = block.body[:index] + [ir.Jump(entry, stmt.loc)]
    func_ir.blocks.update(blocks)
    func_ir.blocks[after] = tail
    return site
