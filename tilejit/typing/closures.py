"""Lambdas and nested functions in kernels (issue 25 item 1).

Numba's IR builds a nested ``def`` or a ``lambda`` with ``make_function(code, closure, ...)``.
Before inlining, each one whose closure captures only compile-time constants (literals,
``tile.Constant`` parameters, globals, tuples of these) becomes a module-level
``@tile.function`` made from its code object with those values in its cells: calls to it are
then inlined like any helper, and passed to ``tile.reduce``/``tile.scan`` it is a combiner. A
capture of a value computed at run time is refused with the name of the variable.
"""
from __future__ import annotations

import types as pytypes
from typing import Dict

from numba.core import ir

from .. import language
from ..errors import UnsupportedError
from .passes import first_assignments
from .reject import numba_loc

#: comprehensions and generator expressions stay ``make_function``: check_ir refuses them
_NOT_FUNCTIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")
_MISSING = object()


def _constant(defs: Dict[str, ir.Assign], var, depth: int = 0):
    """The compile-time value ``var`` certainly holds, or ``_MISSING``."""
    stmt = defs.get(var.name)
    if stmt is None or depth > 16:
        return _MISSING
    v = stmt.value
    if isinstance(v, (ir.Const, ir.Global, ir.FreeVar)):
        return v.value
    if isinstance(v, ir.Var):
        return _constant(defs, v, depth + 1)
    if isinstance(v, ir.Expr) and v.op == "build_tuple":
        items = tuple(_constant(defs, x, depth + 1) for x in v.items)
        return _MISSING if any(x is _MISSING for x in items) else items
    return _MISSING


def materialize_closures(func_ir, pyfunc, funcname: str) -> bool:
    """Turn each capturable ``make_function`` of ``func_ir`` into a global ``@tile.function``
    (in place); True if any changed."""
    defs = first_assignments(func_ir)
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            v = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(v, ir.Expr) and v.op == "make_function"):
                continue
            code = v.code
            if code.co_name in _NOT_FUNCTIONS:
                continue
            name = "lambda" if code.co_name == "<lambda>" else code.co_name
            cells = _captures(defs, v, code, name, stmt.loc, funcname)
            defaults = None
            if v.defaults is not None:
                d = _constant(defs, v.defaults) if isinstance(v.defaults, ir.Var) else \
                    tuple(_constant(defs, x) for x in v.defaults)
                if d is _MISSING or (isinstance(d, tuple) and _MISSING in d):
                    raise UnsupportedError(f"the default values of '{name}' must be compile-time "
                                           f"constants", numba_loc(stmt.loc, funcname))
                defaults = d
            fn = pytypes.FunctionType(code, pyfunc.__globals__, code.co_name, defaults,
                                      tuple(pytypes.CellType(c) for c in cells) or None)
            stmt.value = ir.Global(name, language.TileFunction(fn), stmt.loc)
            changed = True
    return changed


def _captures(defs, v, code, name, loc, funcname) -> tuple:
    if v.closure is None:
        return ()
    items = None
    if isinstance(v.closure, ir.Var):
        d = defs.get(v.closure.name)
        if d is not None and isinstance(d.value, ir.Expr) and d.value.op == "build_tuple":
            items = d.value.items
    elif isinstance(v.closure, (tuple, list)):
        items = v.closure
    if items is None:
        raise UnsupportedError(f"'{name}' captures variables in a way tilejit cannot follow; "
                               f"pass them as arguments", numba_loc(loc, funcname))
    values = []
    for var, free in zip(items, code.co_freevars):
        value = _constant(defs, var)
        if value is _MISSING:
            raise UnsupportedError(
                f"'{name}' uses '{free}', a value computed at run time: a lambda or nested "
                f"function in a kernel may capture only compile-time constants (literals, "
                f"tile.Constant parameters, globals); pass '{free}' as an argument instead",
                numba_loc(loc, funcname))
        values.append(value)
    return tuple(values)
