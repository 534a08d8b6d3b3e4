"""Turning typing failures into short, located, user-facing errors.

Templates raise :class:`TileTypingError` with a self-contained message ("what is wrong, and how to
fix it"). It is a Numba ``TypingError`` so that Numba keeps trying other templates and literal /
non-literal retries, but Numba then buries it in a multi-page "No implementation of function ..."
text. Two mechanisms get it back out:

* every ``TileTypingError`` registers itself with the active :class:`Collector`; the typing
  context's ``resolve_function_type`` re-raises the first one raised during a failed resolution
  (see ``context.py``);
* the pipeline records which constraint failed; :func:`constraint_error` names the failing
  expression with the user's variable names (``t + i``, never ``$binop_add54.2``), lists the
  operand types and finds the column of the expression in the source (via ``ast``).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import operator
import re
import threading
from contextlib import contextmanager
from typing import Dict, List, Optional

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.errors import TypingError as NumbaTypingError
from numba.core.typeinfer import (CallConstraint, GetAttrConstraint, IntrinsicCallConstraint,
                                  Propagate, StaticGetItemConstraint)

from ..errors import CompileError, SourceLocation, TypingError, strip_ansi
from .reject import unsupported


# --------------------------------------------------------------------------------------------------
class TileTypingError(NumbaTypingError):
    """A typing failure with a message meant for the user (raised by templates);
    ``error_class``: the tilejit error it becomes (a TypingError subclass)."""

    error_class = TypingError

    def __init__(self, msg: str):
        self.tile_message = msg
        super().__init__(msg, loc=None, highlighting=False)
        Collector.record(self)


class Collector:
    """Collects the TileTypingErrors raised while one kernel is typed (thread-local)."""

    _tls = threading.local()

    def __init__(self):
        self.errors: List[TileTypingError] = []

    @classmethod
    def current(cls) -> Optional["Collector"]:
        stack = getattr(cls._tls, "stack", None)
        return stack[-1] if stack else None

    @classmethod
    def record(cls, err: TileTypingError) -> None:
        cur = cls.current()
        if cur is not None:
            cur.errors.append(err)

    @classmethod
    @contextmanager
    def active(cls):
        stack = getattr(cls._tls, "stack", None)
        if stack is None:
            stack = cls._tls.stack = []
        col = cls()
        stack.append(col)
        try:
            yield col
        finally:
            stack.pop()


# --------------------------------------------------------------------------------------------------
# Names
_SSA_SUFFIX = re.compile(r"(\.\d+)+$")


def user_name(name: str) -> str:
    """The name the user wrote for an IR variable: ``acc.2`` -> ``acc``, ``x~3`` (inlined from a
    helper) -> ``x``, ``arg.x`` -> ``x``."""
    if name.startswith("arg."):
        name = name[4:]
    base = name.split("~", 1)[0]
    return _SSA_SUFFIX.sub("", base) if not base.startswith("$") else base


def describe_type(ty) -> str:
    """A short spelling of a type for messages."""
    if isinstance(ty, types.IntegerLiteral):
        return f"int constant {ty.literal_value}"
    if isinstance(ty, types.BooleanLiteral):
        return f"bool constant {ty.literal_value}"
    if isinstance(ty, types.StringLiteral):
        return f"str constant {ty.literal_value!r}"
    if isinstance(ty, types.BaseTuple):
        return "(" + ", ".join(describe_type(t) for t in ty.types) + \
            (",)" if len(ty.types) == 1 else ")")
    if isinstance(ty, types.Module):
        return f"module {ty.pymod.__name__}"
    if isinstance(ty, types.NoneType):
        return "None"
    if isinstance(ty, types.Function):
        key = ty.typing_key
        return f"function {getattr(key, '__name__', key)}"
    if isinstance(ty, types.BoundFunction):
        return f"method {ty.typing_key}"
    return str(ty)


# --------------------------------------------------------------------------------------------------
# Reconstructing source text from IR
OPERATOR_SYMBOLS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.lt: "<", operator.le: "<=", operator.gt: ">",
    operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
    operator.iadd: "+=", operator.isub: "-=", operator.imul: "*=", operator.itruediv: "/=",
    operator.ifloordiv: "//=", operator.imod: "%=", operator.ipow: "**=", operator.imatmul: "@=",
    operator.iand: "&=", operator.ior: "|=", operator.ixor: "^=", operator.ilshift: "<<=",
    operator.irshift: ">>=",
    operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not ",
    operator.is_: "is", operator.is_not: "is not", operator.contains: "in",
}

# An in-place operator types (and reports errors) as its binary form.
INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
           operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
           operator.imod: operator.mod, operator.ipow: operator.pow, operator.iand: operator.and_,
           operator.ior: operator.or_, operator.ixor: operator.xor,
           operator.ilshift: operator.lshift, operator.irshift: operator.rshift}


def operator_symbol(fn) -> str:
    """The source spelling of an operator function: '+' for operator.add and operator.iadd."""
    return OPERATOR_SYMBOLS.get(INPLACE.get(fn, fn), str(fn))


def _format_index(idx) -> str:
    def one(i):
        if isinstance(i, slice):
            parts = ["" if i.start is None else str(i.start), "" if i.stop is None else str(i.stop)]
            if i.step is not None:
                parts.append(str(i.step))
            return ":".join(parts)
        if i is Ellipsis:
            return "..."
        return repr(i)
    if isinstance(idx, tuple):
        return ", ".join(one(i) for i in idx)
    return one(idx)


class ExprText:
    """Source-like text for IR variables of one function (follows temporaries' definitions)."""

    def __init__(self, blocks):
        self.defs: Dict[str, ir.Assign] = {}
        for block in blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    self.defs.setdefault(stmt.target.name, stmt)

    def of(self, var, depth: int = 6) -> str:
        name = var if isinstance(var, str) else var.name
        if not name.startswith("$"):
            return user_name(name)
        stmt = self.defs.get(name)
        if stmt is None or depth <= 0:
            return "…"
        return self.value(stmt.value, depth)

    def value(self, v, depth: int = 6) -> str:
        d = depth - 1
        if isinstance(v, ir.Var):
            return self.of(v, depth)
        if isinstance(v, ir.Const):
            return repr(v.value)
        if isinstance(v, (ir.Global, ir.FreeVar)):
            return v.name
        if isinstance(v, ir.Arg):
            return v.name
        if not isinstance(v, ir.Expr):
            return str(v)
        op = v.op
        if op == "getattr":
            return f"{self.of(v.value, d)}.{v.attr}"
        if op in ("binop", "inplace_binop"):
            sym = OPERATOR_SYMBOLS.get(v.fn, "?")
            return f"{self._operand(v.lhs, d)} {sym} {self._operand(v.rhs, d)}"
        if op == "unary":
            return f"{OPERATOR_SYMBOLS.get(v.fn, '?')}{self._operand(v.value, d)}"
        if op == "call":
            parts = [self.of(a, d) for a in v.args]
            parts += [f"{k}={self.of(a, d)}" for k, a in v.kws]
            if v.vararg is not None:
                parts.append("*" + self.of(v.vararg, d))
            return f"{self.of(v.func, d)}({', '.join(parts)})"
        if op == "build_tuple":
            items = [self.of(a, d) for a in v.items]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if op == "static_getitem":
            return f"{self.of(v.value, d)}[{_format_index(v.index)}]"
        if op == "getitem":
            return f"{self.of(v.value, d)}[{self.of(v.index, d)}]"
        if op == "cast":
            return self.of(v.value, depth)
        return "…"

    def _operand(self, var, depth) -> str:
        text = self.of(var, depth)
        stmt = self.defs.get(var.name) if var.name.startswith("$") else None
        if stmt is not None and isinstance(stmt.value, ir.Expr) and \
                stmt.value.op in ("binop", "inplace_binop"):
            return f"({text})"
        return text


# --------------------------------------------------------------------------------------------------
# Columns from the AST
_AST_BINOPS = {
    operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
    operator.truediv: ast.Div, operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod,
    operator.pow: ast.Pow, operator.matmul: ast.MatMult, operator.and_: ast.BitAnd,
    operator.or_: ast.BitOr, operator.xor: ast.BitXor, operator.lshift: ast.LShift,
    operator.rshift: ast.RShift,
}
_AST_INPLACE = {i: _AST_BINOPS[b] for i, b in INPLACE.items()}
_AST_INPLACE[operator.imatmul] = ast.MatMult
_AST_CMP = {operator.lt: ast.Lt, operator.le: ast.LtE, operator.gt: ast.Gt, operator.ge: ast.GtE,
            operator.eq: ast.Eq, operator.ne: ast.NotEq}
_AST_UNARY = {operator.neg: ast.USub, operator.pos: ast.UAdd, operator.invert: ast.Invert,
              operator.not_: ast.Not}

_ast_cache: Dict[str, Optional[Dict[int, list]]] = {}


def _nodes_by_line(filename: str):
    if filename in _ast_cache:
        return _ast_cache[filename]
    index = None
    try:
        src = "".join(linecache.getlines(filename))
        if src:
            tree = ast.parse(src)
            index = {}
            for node in ast.walk(tree):
                if hasattr(node, "lineno") and hasattr(node, "col_offset"):
                    index.setdefault(node.lineno, []).append(node)
    except (SyntaxError, ValueError):
        index = None
    _ast_cache[filename] = index
    return index


def ast_nodes_at(filename: str, line: int) -> list:
    index = _nodes_by_line(filename) or {}
    return index.get(line, [])


def _call_name(node) -> Optional[str]:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def find_node(filename: str, line: int, kind: str, detail=None, text: str = None):
    """The AST node on ``line`` matching ``kind`` (``binop``, ``inplace``, ``compare``, ``unary``,
    ``call``, ``attr``, ``subscript``); ``text`` breaks ties."""
    cands = []
    for node in ast_nodes_at(filename, line):
        if kind == "binop" and isinstance(node, ast.BinOp) and isinstance(node.op, detail):
            cands.append(node)
        elif kind == "inplace" and isinstance(node, ast.AugAssign) and isinstance(node.op, detail):
            cands.append(node)
        elif kind == "compare" and isinstance(node, ast.Compare) and \
                any(isinstance(o, detail) for o in node.ops):
            cands.append(node)
        elif kind == "unary" and isinstance(node, ast.UnaryOp) and isinstance(node.op, detail):
            cands.append(node)
        elif kind == "call" and isinstance(node, ast.Call) and _call_name(node) == detail:
            cands.append(node)
        elif kind == "attr" and isinstance(node, ast.Attribute) and node.attr == detail:
            cands.append(node)
        elif kind == "subscript" and isinstance(node, ast.Subscript):
            cands.append(node)
    if not cands:
        return None
    if text and len(cands) > 1:
        want = text.replace(" ", "")
        for node in cands:
            try:
                if ast.unparse(node).replace(" ", "") == want:
                    return node
            except Exception:   # pragma: no cover - unparse is best effort
                pass
    return cands[0]


def _innermost(filename: str, line: int, classes):
    """The innermost AST node of one of ``classes`` whose span contains ``line``, or None."""
    best = None
    for nodes in (_nodes_by_line(filename) or {}).values():
        for n in nodes:
            if isinstance(n, classes) and n.lineno <= line <= (n.end_lineno or 0):
                if best is None or n.lineno > best.lineno:
                    best = n
    return best


def enclosing_loop_line(filename: str, line: int) -> Optional[int]:
    """Line of the innermost ``for``/``while`` statement whose body contains ``line``."""
    n = _innermost(filename, line, (ast.For, ast.While))
    return n.lineno if n is not None else None


def enclosing_function(filename: str, line: int) -> Optional[str]:
    """Name of the innermost ``def`` containing ``line`` (helpers inlined into a kernel keep
    their own source locations)."""
    n = _innermost(filename, line, (ast.FunctionDef, ast.AsyncFunctionDef))
    return n.name if n is not None else None


def source_location(loc, function: Optional[str] = None, node=None) -> Optional[SourceLocation]:
    """A :class:`SourceLocation` from a Numba ``ir.Loc`` (and an AST node for the columns)."""
    if loc is None or getattr(loc, "filename", None) is None:
        return None
    function = enclosing_function(loc.filename, loc.line) or function
    col = end_col = None
    if node is not None:
        col = node.col_offset
        if getattr(node, "end_lineno", None) == node.lineno:
            end_col = node.end_col_offset
    return SourceLocation(loc.filename, loc.line, col, end_col, function)


def locate(loc, function, kind=None, detail=None, text=None) -> Optional[SourceLocation]:
    node = None
    if kind is not None and loc is not None and getattr(loc, "filename", None):
        node = find_node(loc.filename, loc.line, kind, detail, text)
    return source_location(loc, function, node)


# --------------------------------------------------------------------------------------------------
# Condensing Numba's own messages (when no template message is available)
UNTYPED_GLOBAL = re.compile(r"Untyped global name '([^']+)':\s*(.*?)(?:\n|$)")
_SIG_LINE = re.compile(r">>> (.+)")


def first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Failed in"):
            return line
    return text.strip()


def condense(text: str) -> str:
    """One or two lines out of a multi-page Numba typing error."""
    text = strip_ansi(text)
    if text.startswith("No implementation of function"):
        m = _SIG_LINE.search(text)
        if m:
            return f"no typing rule matches {m.group(1).strip()}"
    m = UNTYPED_GLOBAL.search(text)
    if m:
        return f"the global '{m.group(1)}' cannot be used in a tile kernel ({m.group(2).strip()})"
    line = first_line(text)
    return line.split(" File \"")[0].rstrip(":")


# --------------------------------------------------------------------------------------------------
# Error formatting: failed constraints and Numba errors -> located tilejit errors
_INTRINSIC_KIND = {}
for _fn, _node in _AST_BINOPS.items():
    _INTRINSIC_KIND[_fn] = ("binop", _node)
for _fn, _node in _AST_INPLACE.items():
    _INTRINSIC_KIND[_fn] = ("inplace", _node)
for _fn, _node in _AST_CMP.items():
    _INTRINSIC_KIND[_fn] = ("compare", _node)
for _fn, _node in _AST_UNARY.items():
    _INTRINSIC_KIND[_fn] = ("unary", _node)


def _message_of(exc) -> str:
    if isinstance(exc, TileTypingError):
        return exc.tile_message
    return condense(str(exc))


def constraint_error(constraint, exc, infer, func_ir, pyfunc, texts: "ExprText",
                     sites: dict) -> CompileError:
    """The located TypingError of a failed typing constraint (``sites``: the @tile.function
    inlining sites, for the "inlined into" lines)."""
    fname = pyfunc.__name__
    msg = _message_of(exc)
    loc = getattr(constraint, "loc", None) or getattr(exc, "loc", None)
    typevars = infer.typevars

    def tyof(var):
        name = var if isinstance(var, str) else var.name
        tv = typevars.get(name) if hasattr(typevars, "get") else None
        try:
            return typevars[name].type if tv is not None else None
        except Exception:   # pragma: no cover
            return None

    def operand_lines(vars_):
        lines = []
        seen = set()
        for v in vars_:
            if v is None:
                continue
            label = texts.of(v)
            t = tyof(v)
            if t is None or label in seen or isinstance(t, (types.Module, types.Function,
                                                            types.BoundFunction)):
                continue
            seen.add(label)
            lines.append(f"    {label}: {describe_type(t)}")
        return lines

    kind = detail = expr_text = None
    operands: list = []
    if isinstance(constraint, Propagate) and "Cannot unify" in str(exc):
        return _merge_error(constraint, infer, func_ir, pyfunc)
    if isinstance(constraint, IntrinsicCallConstraint):
        stmt = texts.defs.get(constraint.target)
        expr_text = texts.value(stmt.value) if stmt is not None else None
        kind, detail = _INTRINSIC_KIND.get(constraint.func, (None, None))
        operands = list(constraint.args)
        if not isinstance(exc, TileTypingError) and constraint.func in OPERATOR_SYMBOLS:
            shown = " and ".join(describe_type(tyof(a)) for a in constraint.args)
            msg = (f"operator '{operator_symbol(constraint.func)}' is not "
                   f"supported for {shown}")
    elif isinstance(constraint, CallConstraint):
        stmt = texts.defs.get(constraint.target)
        expr_text = texts.value(stmt.value) if stmt is not None else None
        fdef = texts.defs.get(constraint.func)
        name = None
        if fdef is not None:
            fv = fdef.value
            if isinstance(fv, ir.Expr) and fv.op == "getattr":
                name = fv.attr
                operands.append(fv.value)
            elif isinstance(fv, (ir.Global, ir.FreeVar)):
                name = fv.name
        kind, detail = "call", name
        operands += list(constraint.args) + [v for _, v in constraint.kws]
    elif isinstance(constraint, GetAttrConstraint):
        kind, detail = "attr", constraint.attr
        expr_text = f"{texts.of(constraint.value)}.{constraint.attr}"
        operands = [constraint.value]
    elif isinstance(constraint, StaticGetItemConstraint):
        kind = "subscript"
        stmt = texts.defs.get(constraint.target)
        expr_text = texts.value(stmt.value) if stmt is not None else None
        operands = [constraint.value]
    else:
        cls = type(constraint).__name__
        if cls in ("SetItemConstraint", "StaticSetItemConstraint"):
            kind = "subscript"
            tgt = constraint.target
            expr_text = f"{texts.of(tgt)}[...] = {texts.of(constraint.value)}"
            operands = [tgt, constraint.value]
        elif cls == "PrintConstraint":
            kind, detail = "call", "print"
            expr_text = "print(" + ", ".join(texts.of(a) for a in constraint.args) + ")"
            operands = list(constraint.args)
        elif cls == "ExhaustIterConstraint":
            expr_text = None
            operands = [constraint.iterator]
            msg = (f"cannot unpack {describe_type(tyof(constraint.iterator))} into "
                   f"{constraint.count} values" + ("" if isinstance(exc, TileTypingError) else
                                                   " (only tuples of the right length unpack)"))
    if msg.startswith("no typing rule matches"):
        msg = plain_language(msg, [(texts.of(v), tyof(v)) for v in operands if v is not None]) \
            or msg
    where = locate(loc, fname, kind, detail, expr_text)
    error_class = getattr(exc, "error_class", TypingError)
    if error_class is not TypingError:          # its message names the expression itself
        expr_text = None
    text = f"in `{expr_text}`: {msg}" if expr_text and expr_text != "…" else msg
    lines = operand_lines(operands) if error_class is TypingError else []
    target = getattr(constraint, "target", None)
    lines += _inline_chain(target if isinstance(target, str) else None, sites)
    if lines:
        text += "\n" + "\n".join(lines)
    return error_class(text, where)


def plain_language(msg: str, operands) -> Optional[str]:
    """What a "no typing rule matches ..." failure means for common Python constructs that tile
    kernels do not support (``operands``: ``(source text, type)`` pairs), or None."""
    for label, t in operands:
        if isinstance(t, (types.List, types.ListType, types.Set, types.DictType)) or \
                type(t).__name__ in ("Reflected", "ReflectedList", "ReflectedSet"):
            what = "a set" if isinstance(t, types.Set) else \
                "a dict" if isinstance(t, types.DictType) else "a list"
            return (f"`{label}` is {what}: Python lists, sets and dicts are mutable and are not "
                    f"supported in tile kernels; use a tuple (e.g. {label} = (1, 2, 3)), or pass "
                    f"the values as a tensor or as tile.Constant parameters")
    if msg.startswith("no typing rule matches len(") and any(
            isinstance(types.unliteral(t), types.UnicodeType) for _, t in operands):
        return ("len() of a string is not supported in tile kernels: strings only appear as "
                "constants (printf formats, assertion messages); use len() on tiles and tuples")
    if msg.startswith("no typing rule matches getitem("):
        tup = [lab for lab, t in operands if isinstance(t, types.BaseTuple)]
        idx = [(lab, t) for lab, t in operands if isinstance(t, types.Integer) and
               not isinstance(t, types.IntegerLiteral)]
        if tup and idx:
            return (f"the tuple `{tup[0]}` can only be indexed with a compile-time constant "
                    f"({tup[0]}[0], or an index that is a tile.Constant), but `{idx[0][0]}` is "
                    f"a runtime {describe_type(idx[0][1])}; to choose a value at run time, put "
                    f"the values in a tile and use tile.where, or load them from a tensor")
    return None


def _inline_chain(name: Optional[str], sites: dict) -> List[str]:
    """``inlined into ...`` lines for a variable that came from @tile.function helpers."""
    if not name or "~" not in name or not sites:
        return []
    out = []
    for part in name.split("~")[1:]:
        sid = part.split(".")[0]
        if sid.isdigit() and int(sid) in sites:
            helper, loc, caller = sites[int(sid)]
            out.append(f"    (in @tile.function '{helper}', inlined into '{caller}' at "
                       f"{SourceLocation(loc.filename, loc.line)})")
    return out


def _merge_error(constraint, infer, func_ir, pyfunc) -> CompileError:
    dst = constraint.dst
    t_dst = infer.typevars[dst].type
    t_src = infer.typevars[constraint.src].type
    headers = set(compute_cfg_from_blocks(func_ir.blocks).loops())
    phi_block = next((label for label, b in func_ir.blocks.items()
                      for s in b.body if isinstance(s, ir.Assign) and s.target.name == dst), None)
    name = user_name(dst)
    if phi_block in headers:
        where = "it changes type from one loop iteration to the next"
    else:
        where = "it is assigned different types on different control-flow paths: if/else " \
                "branches or before/inside a loop"
    msg = (f"Type of `{name}` depends on path taken: variable '{name}' has type "
           f"{describe_type(t_dst)} on one path and {describe_type(t_src)} on another ({where}). "
           f"A variable that flows through an if/else "
           f"or a loop must keep one tile type; convert with .astype(...) or "
           f"tile.broadcast_to(...) so both agree")
    loc = constraint.loc
    if getattr(loc, "filename", None) != pyfunc.__code__.co_filename:
        # the join is the first line of an inlined helper (``ct.store(x, i, a)``): show where
        # the user assigned the other type instead
        loc = next((st.loc for b in func_ir.blocks.values() for st in b.body
                    if isinstance(st, ir.Assign) and st.target.name == constraint.src and
                    getattr(st.loc, "filename", None) == pyfunc.__code__.co_filename), loc)
    return TypingError(msg, source_location(loc, pyfunc.__name__))


def plain_error(e, pyfunc, func_ir=None) -> CompileError:
    """Errors raised outside constraints (undefined globals, unresolved types)."""
    loc = source_location(getattr(e, "loc", None), pyfunc.__name__)
    text = strip_ansi(str(e))
    m = re.search(r"Type of variable '([^']+)' cannot be determined", text)
    if m and func_ir is not None:
        # no assignment reaches any use (one under `if CONSTANT:` that is False here): say so
        # at the first use, which Numba does not locate
        name = m.group(1)
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if any(v.name == name for v in stmt.list_vars()) and not (
                        isinstance(stmt, ir.Assign) and stmt.target.name == name):
                    return TypingError(
                        f"variable '{user_name(name)}' is used but never assigned on this "
                        f"specialization's path (for example it is assigned only under an `if` "
                        f"on a constant that is False here); assign it before the `if`",
                        source_location(stmt.loc, pyfunc.__name__))
    m = UNTYPED_GLOBAL.search(text)
    if m:
        name = m.group(1)
        value = pyfunc.__globals__.get(name)
        if inspect.isfunction(value):
            return unsupported("plain_function", loc, name=name)
        why = " ".join(m.group(2).split())
        return TypingError(f"the global '{name}' ({why}) cannot be used inside a tile kernel; "
                           f"pass it as an argument or a tile.Constant parameter", loc)
    if "undefined variable" in text or "cannot be determined" in text:
        return TypingError(f"a variable may be used before it is assigned: {condense(text)}",
                           loc)
    return TypingError(condense(text), loc)
