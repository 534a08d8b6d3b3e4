"""What a kernel's source says about its tiles, for the default autotune space
(``tuning_space.py``): which axes of the partitioned parameter it reads the block index and the
tile extent of, the axes it reduces along (in its own source and in the ``@tile.function``
helpers it calls), whether it multiplies tiles, and which array axes its extent constants tile.

Read from the Python source with :mod:`ast`, before any typing: the space is built before a
config is compiled. Where the source cannot be read, every axis counts as read.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Tuple

from .language import TileFunction

#: a reduction whose axis the source does not spell out: every axis counts as reduced
ANY_AXIS = "any"
MMA_CALLS = {"mma", "matmul", "mma_scaled"}
REDUCTIONS = {"sum", "prod", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod",
              "scan"}
#: an axis set meaning every axis (the parameter used as a whole)
ALL = frozenset({"all"})


@dataclass
class SourceFacts:
    """How a kernel's source uses one partitioned parameter: the axes whose block index and tile
    extent it reads (``ALL``: used as a whole), whether the block goes on as a whole, and the
    literal axes it reduces along."""
    name: Optional[str]
    block_axes: frozenset = frozenset()
    extent_axes: frozenset = frozenset()
    block_wholesale: bool = False
    reduced_axes: frozenset = frozenset()
    #: it multiplies tiles (tile.mma, tile.matmul, @): the output tile is an accumulator
    mma: bool = False
    #: constant name -> the (array parameter, axis) pairs it is the tile extent of, in the
    #: kernel's own loads and partitions (``x.load((r, 0), (ROWS, WIDTH))``: WIDTH spans x's axis 1)
    spans: Dict[str, frozenset] = field(default_factory=dict)

    def reads(self, which: str, axis: int) -> bool:
        s = self.block_axes if which == "block" else self.extent_axes
        return s is ALL or "all" in s or axis in s


_META = {"dtype", "ndim"}


def _function_node(py_func) -> Optional[ast.FunctionDef]:
    try:
        src = textwrap.dedent(inspect.getsource(py_func))
    except (OSError, TypeError):
        return None
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef) and node.name == py_func.__name__:
            return node
    return None


def find_partition(py_func, runtime_names: Sequence[str]) -> Optional[str]:
    """The first runtime parameter the source uses as a partition: its ``.block`` read, or
    ``p.store(t)`` / ``p.load()`` with the implicit block."""
    fn = _function_node(py_func)
    if fn is None:
        return None
    used = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr == "block":
                used.add(node.value.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name):
            if (node.func.attr == "store" and len(node.args) == 1) or \
                    (node.func.attr == "load" and not node.args):
                used.add(node.func.value.id)
    return next((n for n in runtime_names if n in used), None)


def analyze(py_func, name: Optional[str]) -> SourceFacts:
    """:class:`SourceFacts` for parameter ``name`` of ``py_func`` (all axes read when the source
    cannot be read)."""
    fn = _function_node(py_func)
    if fn is None:
        return SourceFacts(name, ALL, ALL, True)
    if name is None:
        return SourceFacts(name, ALL, ALL, True, spans=_spans(fn))
    parent = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    axes = {"block": set(), "shape": set()}
    whole = {"block": False, "shape": False}
    unpacked: Dict[str, Tuple[str, int]] = {}        # local name -> (block/shape, axis)
    wholesale = False
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name and
                isinstance(node.ctx, ast.Load)):
            continue
        up = parent.get(node)
        if isinstance(up, ast.Attribute) and up.attr in ("block", "shape"):
            which = up.attr
            pp = parent.get(up)
            if isinstance(pp, ast.Subscript) and isinstance(pp.slice, ast.Constant) and \
                    isinstance(pp.slice.value, int):
                axes[which].add(pp.slice.value)
            elif isinstance(pp, ast.Assign) and len(pp.targets) == 1 and \
                    isinstance(pp.targets[0], ast.Tuple):
                for k, t in enumerate(pp.targets[0].elts):
                    if isinstance(t, ast.Name):
                        unpacked[t.id] = (which, k)
            else:
                whole[which] = True
                wholesale |= which == "block"
        elif isinstance(up, ast.Attribute) and up.attr in _META:
            continue
        elif isinstance(up, ast.Attribute) and up.attr == "store" and \
                isinstance(parent.get(up), ast.Call) and len(parent[up].args) == 1:
            continue             # p.store(t) writes the tile where it belongs: reads no index
        else:                    # p.load(), f(..., p, ...): the implicit block
            whole["block"] = whole["shape"] = True
            wholesale = True
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in unpacked:
            which, k = unpacked[node.id]
            axes[which].add(k)
    block = ALL if whole["block"] else frozenset(axes["block"])
    shape = ALL if whole["shape"] else frozenset(axes["shape"])
    # one walk (helper sources read and parsed once) serves both questions
    nodes = list(_walk_with_helpers(fn, py_func.__globals__, {id(py_func)}))
    return SourceFacts(name, block, shape, wholesale, frozenset(_reduced_axes(nodes)),
                       _uses_mma(nodes), _spans(fn))


def _spans(fn) -> Dict[str, frozenset]:
    """For each name in a tile-shape tuple of the kernel's loads and partitions of its
    parameters (``x.load(index, (ROWS, WIDTH))``, ``tile.load(x, index, shape)``,
    ``y.partition((ROWS, WIDTH))``), the (parameter, axis) pairs it is the extent of."""
    params = {a.arg for a in fn.args.args}
    out: Dict[str, set] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        f, args = node.func, list(node.args)
        shape = next((k.value for k in node.keywords if k.arg == "shape"), None)
        if isinstance(f.value, ast.Name) and f.value.id in params and \
                f.attr in ("load", "partition"):
            array = f.value.id
            pos = 1 if f.attr == "load" else 0
        elif f.attr == "load" and args and isinstance(args[0], ast.Name) and \
                args[0].id in params:                        # tile.load(x, index, shape)
            array, pos = args[0].id, 2
        else:
            continue
        if shape is None and len(args) > pos:
            shape = args[pos]
        if isinstance(shape, ast.Tuple):
            for k, e in enumerate(shape.elts):
                if isinstance(e, ast.Name):
                    out.setdefault(e.id, set()).add((array, k))
    return {n: frozenset(v) for n, v in out.items()}


def _helper(call: ast.Call, scope: dict):
    """The Python function of the ``@tile.function`` helper a call in kernel source reaches (by
    name or as ``module.name``), or None."""
    f = call.func
    obj = None
    if isinstance(f, ast.Name):
        obj = scope.get(f.id)
    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        mod = scope.get(f.value.id)
        # modules only: an attribute of anything else could run a property
        obj = getattr(mod, f.attr, None) if isinstance(mod, types.ModuleType) else None
    fn = getattr(obj, "py_func", None) if isinstance(obj, TileFunction) else None
    return fn if inspect.isfunction(fn) else None


def _walk_with_helpers(fn, scope: dict, seen: set):
    """``(node, scope)`` for every AST node of the kernel and of the ``@tile.function`` helpers
    it calls, each helper once, with the globals its names resolve in."""
    for node in ast.walk(fn):
        yield node, scope
        helper = _helper(node, scope) if isinstance(node, ast.Call) else None
        if helper is not None and id(helper) not in seen:
            seen.add(id(helper))
            inner = _function_node(helper)
            if inner is not None:
                yield from _walk_with_helpers(inner, helper.__globals__, seen)


def _uses_mma(nodes) -> bool:
    """Whether the kernel (or a helper it calls) multiplies tiles on the tensor cores
    (``tile.mma``, ``tile.matmul``, ``a @ b``): its output tile is then a float32 accumulator.
    ``nodes``: :func:`_walk_with_helpers`'s."""
    for node, _ in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in MMA_CALLS:
            return True
    return False


def _reduced_axes(nodes) -> set:
    """The literal axes the kernel reduces along, in its own source or in the helpers it calls
    (a softmax whose reductions are in a helper must keep its rows whole too). ``nodes``:
    :func:`_walk_with_helpers`'s."""
    out = set()
    for node, scope in nodes:
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        # bare min(a, b) / max(a, 1) are Python's builtins on scalars, not tile reductions
        if not (isinstance(f, ast.Attribute) and f.attr in REDUCTIONS):
            continue
        # tile.sum(t, 1) names the axis second; the method t.sum(1) first
        module = isinstance(f.value, ast.Name) and (
            f.value.id in ("tile", "ct", "tl") or
            isinstance(scope.get(f.value.id), types.ModuleType))
        axis = next((k.value for k in node.keywords if k.arg == "axis"), None)
        pos = 1 if module else 0
        if axis is None and len(node.args) > pos:
            axis = node.args[pos]
        if axis is not None:
            out.add(_axis_value(axis, scope))
    return out


def _axis_value(axis: ast.expr, scope: dict):
    """A reduction's axis: a literal, its negation, or a module-level int; :data:`ANY_AXIS`
    when the source does not say (a constant parameter, an expression), so that every axis
    counts as reduced."""
    if isinstance(axis, ast.Constant) and type(axis.value) is int:
        return axis.value
    if isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub):
        v = _axis_value(axis.operand, scope)
        return -v if isinstance(v, int) else ANY_AXIS
    if isinstance(axis, ast.Name) and type(scope.get(axis.id)) is int:
        return scope[axis.id]
    return ANY_AXIS
