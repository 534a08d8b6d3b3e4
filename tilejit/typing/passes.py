"""Small untyped passes of the front end.

* :func:`freeze_constants` (``FreezeConstexprArgs``): ``BM = arg(3)`` becomes ``BM = const(64)``
  before branch pruning, so ``if CONST:`` branches that are dead are removed before typing.
* :func:`foreign_dtypes`: ``torch.int32`` named in a kernel becomes ``tile.int32``.
* :func:`apply_rewrites`: the Numba rewrites the kernel language needs (``x[0]`` with a constant
  index becomes ``static_getitem`` so ``t.shape[0]`` stays a literal; ``print(...)`` becomes
  ``ir.Print``), applied explicitly instead of Numba's whole global rewrite registry.
* :func:`unify_returns`: every ``return`` jumps to one exit block, so the structurizer never sees a
  ``return`` inside a region (tileiras rejects ``return`` inside ``if``).
"""
from __future__ import annotations

import enum
import types
from types import SimpleNamespace

from numba.core import ir
from numba.core.rewrites.ir_print import RewritePrintCalls
from numba.core.rewrites.static_binop import DetectStaticBinops
from numba.core.rewrites.static_getitem import RewriteConstGetitems, RewriteConstSetitems

from ..dtypes import DType, as_dtype


class Assignments(dict):
    """Variable name -> its first ``ir.Assign`` (in block order); ``more[name]``: every
    assignment of a name assigned more than once (before SSA, a name assigned in two branches
    has two: the first is not *the* value)."""

    def __init__(self):
        super().__init__()
        self.more: dict = {}


def first_assignments(func_ir) -> Assignments:
    """Each variable name of ``func_ir`` -> the first ``ir.Assign`` to it (in block order)."""
    defs = Assignments()
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                name = stmt.target.name
                if name in defs:
                    defs.more.setdefault(name, [defs[name]]).append(stmt)
                else:
                    defs[name] = stmt
    return defs


def constant_assignments(value, target: ir.Var, scope, loc, name: str):
    """Statements that assign the compile-time ``value`` to ``target``: ints, bools, floats and
    strings as ``const``, tuples element-wise through ``build_tuple`` (so each element stays a
    literal), dtypes and enum members as ``global``."""
    if isinstance(value, tuple):
        stmts, items = [], []
        for i, v in enumerate(value):
            tmp = scope.redefine(f"$const_{target.name}_{i}", loc)
            stmts.extend(constant_assignments(v, tmp, scope, loc, f"{name}[{i}]"))
            items.append(tmp)
        stmts.append(ir.Assign(ir.Expr.build_tuple(items, loc), target, loc))
        return stmts
    if isinstance(value, (DType, enum.Enum)):
        return [ir.Assign(ir.Global(name, value, loc), target, loc)]
    return [ir.Assign(ir.Const(value, loc), target, loc)]


def _torch_dtype(value):
    """The tilejit dtype of a ``torch.dtype`` object (torch need not be imported), else None."""
    tp = type(value)
    if tp.__name__ != "dtype" or not tp.__module__.startswith("torch"):
        return None
    try:
        return as_dtype(value)
    except (TypeError, ValueError, KeyError):
        return None


def foreign_dtypes(func_ir) -> None:
    """Make ``torch.float16`` (a global, closure variable or module attribute holding a
    ``torch.dtype``) the tilejit dtype, so kernels written for cuTile or with PyTorch at hand
    may name torch's dtypes (NumPy's are Numba number classes already)."""
    defs = {}
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                defs[stmt.target.name] = stmt.value
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, ir.Assign):
                continue
            v = stmt.value
            if isinstance(v, (ir.Global, ir.FreeVar)):
                dt = _torch_dtype(v.value)
            elif isinstance(v, ir.Expr) and v.op == "getattr":
                base = defs.get(v.value.name)
                module = base.value if isinstance(base, (ir.Global, ir.FreeVar)) else None
                dt = _torch_dtype(getattr(module, v.attr, None)) \
                    if isinstance(module, types.ModuleType) else None
            else:
                continue
            if dt is not None:
                stmt.value = ir.Global(dt.name, dt, v.loc)


def freeze_constants(func_ir, constants: dict) -> None:
    """Replace the ``arg`` statements of constant parameters with their values (in place)."""
    if not constants:
        return
    for block in func_ir.blocks.values():
        body = []
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg) and \
                    stmt.value.name in constants:
                body.extend(constant_assignments(constants[stmt.value.name], stmt.target,
                                                 block.scope, stmt.loc, stmt.value.name))
            else:
                body.append(stmt)
        block.body = body


_REWRITES = (RewriteConstGetitems, RewriteConstSetitems, DetectStaticBinops, RewritePrintCalls)


def _calls_print(func_ir) -> bool:
    """Whether the function names the ``print`` builtin at all: RewritePrintCalls tries to infer
    every callee as a constant, and each failure builds a Numba error with its source excerpt
    (a third of a small kernel's typing time)."""
    return any(isinstance(st, ir.Assign) and isinstance(st.value, (ir.Global, ir.FreeVar)) and
               st.value.value is print for b in func_ir.blocks.values() for st in b.body)


def apply_rewrites(func_ir) -> None:
    state = SimpleNamespace(func_ir=func_ir, typemap=None, calltypes=None, typingctx=None,
                            targetctx=None, args=None, return_type=None)
    blocks = func_ir.blocks
    rewrites = _REWRITES if _calls_print(func_ir) else _REWRITES[:-1]
    for rewrite_cls in rewrites:
        rewrite = rewrite_cls(state)
        work = list(blocks.items())
        while work:
            label, block = work.pop()
            if rewrite.match(func_ir, block, None, None):
                blocks[label] = new = rewrite.apply()
                work.append((label, new))


def unify_returns(func_ir) -> int:
    """Make every ``return v`` assign one variable and jump to a single new exit block (before
    SSA, so the merged return value becomes a phi); returns the exit block's label."""
    returns = [label for label, b in func_ir.blocks.items() if isinstance(b.terminator, ir.Return)]
    if len(returns) <= 1:       # (none: an endless loop; the structurizer reports it)
        return returns[0] if returns else None
    first = func_ir.blocks[returns[0]]
    scope, loc = first.scope, first.terminator.loc
    exit_label = max(func_ir.blocks) + 1
    ret = scope.redefine("$return_value", loc)
    for label in returns:
        b = func_ir.blocks[label]
        term = b.body[-1]
        b.body[-1:] = [ir.Assign(term.value, ret, term.loc), ir.Jump(exit_label, term.loc)]
    exit_block = ir.Block(scope, loc)
    exit_block.body = [ir.Return(ret, loc)]
    func_ir.blocks[exit_label] = exit_block
    return exit_label
