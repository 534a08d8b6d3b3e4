"""``RejectUnsupported``: Python constructs outside the kernel language, each with a stable message.

The check runs on the function's *source* (``ast``) before Numba translates the bytecode, so the
message does not depend on the Python version (3.12 inlines comprehensions, 3.11 compiles them to
closures...) and the caret is column-accurate. When the source is not available (``exec``), the
IR-level fallback :func:`check_ir` catches the same constructs on Numba IR.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import math
import textwrap
import types as pytypes
import weakref
from typing import Optional

import numpy as np
from numba.core import ir

from ..errors import SourceLocation, UnsupportedError

MSG = {
    "list": "lists (including list comprehensions) are not supported in tile kernels; use tuples",
    "dict": "dicts are not supported in tile kernels; use tuples or separate variables",
    "set": "sets are not supported in tile kernels; use tuples",
    "genexpr": "generator expressions are not supported in tile kernels; use a for loop over "
               "range()",
    "lambda": "lambdas (closures) are not supported in tile kernels; define a module-level "
              "function decorated with @tile.function",
    "closure": "nested functions (closures) are not supported in tile kernels; move '{name}' to "
               "module level and decorate it with @tile.function",
    "class": "class definitions are not supported in tile kernels",
    "generator": "generators (yield) are not supported in tile kernels",
    "async": "async code is not supported in tile kernels",
    "try": "try/except/finally is not supported in tile kernels (device code cannot catch "
           "exceptions); use tile.assert_(cond, msg) for device checks",
    "with": "with statements are not supported in tile kernels",
    "raise": "raise is not supported in tile kernels; use tile.assert_(cond, msg) for device "
             "checks or tile.static_assert(cond, msg) for compile-time checks",
    "assert": "assert statements are not supported in tile kernels; use tile.assert_(cond, msg) "
              "(checked on the device) or tile.static_assert(cond, msg) (checked at compile time)",
    "global": "global/nonlocal statements are not supported in tile kernels",
    "del": "del is not supported in tile kernels",
    "for_else": "for ... else is not supported in tile kernels; use a flag variable",
    "while_else": "while ... else is not supported in tile kernels; use a flag variable",
    "return_value": "tile kernels cannot return values; write results through a partition "
                    "argument (z.store(t)) or a writable tensor",
    "fstring": "f-strings are not supported in tile kernels; use tile.printf(fmt, *tiles)",
    "match": "match statements are not supported in tile kernels; use if/elif",
    "import": "import statements are not supported inside tile kernels; import at module level",
    "setattr": "cannot assign to attributes inside tile kernels (tiles, tensors and partitions "
               "are immutable views); bind a new variable instead",
    "for_iter": "for loops in tile kernels must iterate over range(...) (e.g. for i in range(n)), "
                "tile.static_range(n) (unrolled) or tile.static_iter(a_tuple) (one copy of the "
                "body per element)",
    "star_call": "calls with *args / **kwargs unpacking are not supported in tile kernels",
    "recursion": "recursion is not supported in tile kernels: '{name}' calls itself{via}",
    "kernel_call": "cannot call the kernel '{name}' from a tile kernel; move the shared code to a "
                   "@tile.function helper",
    "plain_function": "'{name}' is a plain Python function; decorate it with @tile.function to "
                      "call it from a tile kernel",
    "numpy": "{name} is a NumPy function and cannot run inside a tile kernel; use the tile "
             "equivalent (tile.{short} ...) on tiles",
    "math": "{name} is from Python's math module and cannot run inside a tile kernel; use "
            "tile.{short} on tiles or scalars",
    "string": "strings are only allowed as the format of tile.printf and messages of "
              "tile.assert_ / tile.static_assert",
    "breakpoint": "{name}() cannot stop inside a tile kernel: the kernel is compiled, not run "
                  "by Python. To step through it, run it on the CPU simulator "
                  "(TILEJIT_SIMULATE=1) and print values with tile.printf(fmt, *tiles), look at "
                  "kernel.inspect_types(...) / inspect_tileir(...), or set a breakpoint around "
                  "the launch; the docs' Troubleshooting page, 'Stepping through a kernel', "
                  "shows how",
}


def unsupported(key, loc: Optional[SourceLocation], **fmt) -> UnsupportedError:
    """The UnsupportedError for message ``key`` of :data:`MSG`."""
    return UnsupportedError(MSG[key].format(**fmt), loc)


# --------------------------------------------------------------------------------------------------
# Source checks
class _Visitor(ast.NodeVisitor):
    def __init__(self, filename, funcname, entry: bool, line_offset: int, col_offset: int):
        self.filename = filename
        self.funcname = funcname
        self.entry = entry
        self.dl = line_offset
        self.dc = col_offset
        self.depth = 0          # nesting of FunctionDef (0 = the kernel itself)

    def loc(self, node) -> SourceLocation:
        line = node.lineno + self.dl
        col = node.col_offset + self.dc
        end = (node.end_col_offset + self.dc) if getattr(node, "end_lineno", None) == \
            node.lineno else None
        return SourceLocation(self.filename, line, col, end, self.funcname)

    def fail(self, key, node, **fmt):
        raise unsupported(key, self.loc(node), **fmt)

    # -- definitions --------------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        # nested functions (depth > 0) become @tile.function helpers (typing/closures.py)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def visit_AsyncFunctionDef(self, node):
        self.fail("async", node)

    def visit_ClassDef(self, node):
        self.fail("class", node)

    def visit_Lambda(self, node):
        self.depth += 1                 # a helper of its own, like a nested def
        self.visit(node.body)
        self.depth -= 1

    # -- containers ---------------------------------------------------------------------------------
    def visit_List(self, node):
        self.fail("list", node)

    visit_ListComp = visit_List

    def visit_Dict(self, node):
        self.fail("dict", node)

    visit_DictComp = visit_Dict

    def visit_Set(self, node):
        self.fail("set", node)

    visit_SetComp = visit_Set

    def visit_GeneratorExp(self, node):
        self.fail("genexpr", node)

    # -- statements -----------------------------------------------------------------------------------
    def visit_Yield(self, node):
        self.fail("generator", node)

    visit_YieldFrom = visit_Yield

    def visit_Await(self, node):
        self.fail("async", node)

    def visit_Try(self, node):
        self.fail("try", node)

    visit_TryStar = visit_Try

    def visit_With(self, node):
        # with over a @contextmanager function: rewritten (typing/sugar.py), which explains
        # the forms it cannot take
        self.generic_visit(node)

    def visit_AsyncWith(self, node):
        self.fail("with", node)

    def visit_Raise(self, node):
        self.fail("raise", node)

    def visit_Assert(self, node):
        self.fail("assert", node)

    def visit_Global(self, node):
        self.fail("global", node)

    visit_Nonlocal = visit_Global

    def visit_Delete(self, node):
        self.fail("del", node)

    def visit_Import(self, node):
        self.fail("import", node)

    visit_ImportFrom = visit_Import

    def visit_Match(self, node):
        self.fail("match", node)

    def visit_JoinedStr(self, node):
        self.fail("fstring", node)

    def visit_For(self, node):
        if node.orelse:
            self.fail("for_else", node)
        it = node.iter
        loops = ("range", "static_range", "static_iter")
        if not (isinstance(it, ast.Call) and (
                (isinstance(it.func, ast.Name) and it.func.id in loops) or
                (isinstance(it.func, ast.Attribute) and it.func.attr in loops))):
            self.fail("for_iter", it)
        self.generic_visit(node)

    visit_AsyncFor = visit_AsyncFunctionDef

    def visit_While(self, node):
        if node.orelse:
            self.fail("while_else", node)
        self.generic_visit(node)

    def visit_Return(self, node):
        if self.entry and self.depth == 1 and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            self.fail("return_value", node)
        self.generic_visit(node)

    def _check_targets(self, targets):
        for t in targets:
            if isinstance(t, ast.Attribute):
                self.fail("setattr", t)
            if isinstance(t, (ast.Tuple, ast.List)):
                if isinstance(t, ast.List):
                    self.fail("list", t)
                self._check_targets(t.elts)
            if isinstance(t, ast.Starred):
                self.fail("list", t)

    def visit_Assign(self, node):
        self._check_targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_targets([node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_targets([node.target])
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "static_eval") or \
                (isinstance(f, ast.Attribute) and f.attr == "static_eval"):
            return      # plain Python, run at compile time (typing/static_eval.py)
        if isinstance(f, ast.Name) and f.id == "tuple" and len(node.args) == 1 and \
                not node.keywords and isinstance(node.args[0], ast.GeneratorExp):
            self.generic_visit(node.args[0])     # a tuple comprehension: typing/sugar.py
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            self.fail("star_call", node)
        self.generic_visit(node)


_source_checked = weakref.WeakKeyDictionary()   # code object -> entry flags already checked


def check_source(pyfunc, entry: bool) -> bool:
    """Reject unsupported constructs in ``pyfunc``'s source. False when no source is available."""
    if getattr(pyfunc, "__tilejit_rewritten__", False):
        return True     # made from checked source (typing/sugar.py); its file says otherwise
    code = pyfunc.__code__
    done = _source_checked.get(code)
    if done is not None and (entry in done):
        return True
    try:
        lines, start = source_lines(pyfunc)
    except (OSError, TypeError):
        return False
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = _indent_removed(src, dedented)
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return False
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                        ast.AsyncFunctionDef))), None)
    if fdef is None:
        return False
    filename = code.co_filename
    v = _Visitor(filename, pyfunc.__name__, entry, start - 1, indent)
    v.visit(fdef)
    _source_checked.setdefault(code, set()).add(entry)
    return True


def source_lines(pyfunc):
    """``inspect.getsourcelines(pyfunc)`` without Python's tokenizer, whose first use in a process
    compiles a large regular expression (~3 ms of the first kernel's typing): the function ends at
    the first line indented no deeper than its ``def``, which must then parse. Anything else (a
    lambda, a wrapper, a signature closed at the ``def``'s indentation) is inspect's."""
    code = getattr(pyfunc, "__code__", None)
    if code is None or hasattr(pyfunc, "__wrapped__"):
        return inspect.getsourcelines(pyfunc)
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, getattr(pyfunc, "__globals__", None))
    first = code.co_firstlineno - 1
    body = first
    while 0 <= body < len(lines) and lines[body].lstrip().startswith("@"):
        body += 1           # (a decorator's arguments on later lines: the parse check fails)
    if not 0 <= body < len(lines) or \
            not lines[body].lstrip().startswith(("def ", "async def ")):
        return inspect.getsourcelines(pyfunc)
    indent = len(lines[first]) - len(lines[first].lstrip())
    end = body + 1
    while end < len(lines):
        text = lines[end].lstrip()
        if text and not text.startswith("#") and len(lines[end]) - len(text) <= indent:
            break
        end += 1
    block = lines[first:end]
    try:
        ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return inspect.getsourcelines(pyfunc)
    return block, first + 1


def _indent_removed(src: str, dedented: str) -> int:
    for a, b in zip(src.splitlines(), dedented.splitlines()):
        if b.strip():
            return len(a) - len(b)
    return 0


# --------------------------------------------------------------------------------------------------
# IR checks (always run; they also catch what the source check cannot see: globals' values)
_EXPR_KEYS = {"build_list": "list", "build_set": "set", "build_map": "dict",
              "list_to_tuple": "list"}


def numba_loc(loc, funcname) -> Optional[SourceLocation]:
    """A Numba IR location as a SourceLocation (line only); None when unknown."""
    if loc is None or getattr(loc, "filename", None) is None:
        return None
    return SourceLocation(loc.filename, loc.line, None, None, funcname)


def _ir_classes(*names):
    return tuple(c for c in (getattr(ir, n, None) for n in names) if c is not None)


_RAISES = _ir_classes("Raise", "StaticRaise", "TryRaise", "StaticTryRaise", "DynamicRaise",
                      "DynamicTryRaise")
_WITHS = _ir_classes("EnterWith")


def check_ir(func_ir, funcname: str) -> None:
    """Reject unsupported constructs visible in (untyped, pre-SSA) Numba IR."""
    if func_ir.is_generator:
        raise unsupported("generator", numba_loc(func_ir.loc, funcname))
    globals_of = {}
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, (ir.Global, ir.FreeVar)):
                globals_of[stmt.target.name] = stmt.value.value
    for block in func_ir.blocks.values():
        for stmt in block.body:
            loc = numba_loc(stmt.loc, funcname)
            if isinstance(stmt, _RAISES):
                raise unsupported("raise", loc)
            if isinstance(stmt, _WITHS):
                raise unsupported("with", loc)
            if isinstance(stmt, ir.SetAttr):
                raise unsupported("setattr", loc)
            if not isinstance(stmt, ir.Assign):
                continue
            v = stmt.value
            if isinstance(v, ir.Expr):
                if v.op in _EXPR_KEYS:
                    raise unsupported(_EXPR_KEYS[v.op], loc)
                if v.op == "getattr" and v.value.name in globals_of and \
                        isinstance(globals_of[v.value.name], pytypes.ModuleType):
                    mod = globals_of[v.value.name]
                    if hasattr(mod, v.attr):
                        check_global_value(f"{mod.__name__}.{v.attr}", getattr(mod, v.attr), loc)
                if v.op == "make_function":
                    name = getattr(v.code, "co_name", "<lambda>")
                    key = {"<listcomp>": "list", "<dictcomp>": "dict", "<setcomp>": "set",
                           "<genexpr>": "genexpr", "<lambda>": "lambda"}.get(name, "closure")
                    raise unsupported(key, loc, name=name)
                if v.op in ("yield",):
                    raise unsupported("generator", loc)
                if v.op == "exception_match":
                    raise unsupported("try", loc)
            elif isinstance(v, (ir.Global, ir.FreeVar)):
                check_global_value(v.name, v.value, loc)
            elif isinstance(v, ir.Yield):
                raise unsupported("generator", loc)


#: math functions allowed on scalars: computed at compile time on constants (``math.sqrt(D)``
#: of a tile extent), at run time on scalar values
FOLDABLE_MATH = ("sqrt", "exp", "log", "log2", "log10", "pow", "ceil", "floor", "fabs", "sin",
                 "cos", "tan", "tanh", "exp2")


def check_global_value(name: str, value, loc) -> None:
    """Reject globals that can only be host code (NumPy / math functions, debuggers)."""
    if value is builtins.breakpoint:
        raise unsupported("breakpoint", loc, name=name)
    mod = getattr(value, "__module__", None) or ""
    if isinstance(value, np.ufunc) or (callable(value) and mod.split(".")[0] == "numpy" and
                                       not isinstance(value, type)):
        short = getattr(value, "__name__", name)
        raise unsupported("numpy", loc, name=f"np.{short}", short=short)
    if isinstance(value, pytypes.BuiltinFunctionType) and getattr(value, "__self__", None) is math \
            and value.__name__ not in FOLDABLE_MATH:
        raise unsupported("math", loc, name=f"math.{value.__name__}", short=value.__name__)
