"""What a kernel's compiled code depends on, hashed without running the front end.

The warm-start index (``toolchain.index``) must tell, in a new process, whether a cubin on disk was
built from the same kernel without importing Numba or building any IR. :func:`function_digest`
hashes what the front end reads:

* the kernel's code object: bytecode, names, constants, line table, file and first line (line
  tables end up in the cubin), recursively through nested code objects;
* every global it names, by value: numbers and strings, dtypes, enum members, tuples of these;
  ``@tile.function`` helpers recursively (their code and their globals); modules by name, plus
  the helpers and constants reached as ``module.attr``;
* closure cells and default values the same way.

A global of a kind that cannot be hashed by value (a list, an arbitrary object) makes the kernel
*unindexable*: :func:`function_digest` returns None and every compile takes the full path, which
is always correct. tilejit's own modules are covered by :func:`build_id` instead.
"""
from __future__ import annotations

import enum
import hashlib
import os
import struct
import sys
import types
from typing import Optional

from . import dtypes as _dt

_PRIMITIVES = (int, str, bytes, bool, type(None))


class _Unhashable(Exception):
    """A global whose value cannot be hashed safely (the kernel is not indexed)."""


def function_digest(pyfunc) -> Optional[str]:
    """The hex digest of ``pyfunc`` and everything it reads, or None when some global cannot be
    hashed by value."""
    h = hashlib.sha256(f"py{sys.version_info[0]}.{sys.version_info[1]}".encode())
    try:
        _function(h, pyfunc, set())
    except _Unhashable:
        return None
    return h.hexdigest()


def _function(h, fn, seen: set) -> None:
    if id(fn) in seen:
        h.update(b"<seen>")
        return
    seen.add(id(fn))
    code = fn.__code__
    _code(h, code)
    g = fn.__globals__
    for name in sorted(_names(code)):
        if name in g:
            h.update(f"g:{name}=".encode())
            _value(h, g[name], seen, _names(code))
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:          # an empty cell
            h.update(b"<empty cell>")
            continue
        _value(h, v, seen, _names(code))
    for v in fn.__defaults__ or ():
        _value(h, v, seen, ())


def _names(code) -> set:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _code(h, code) -> None:
    for part in (code.co_code, code.co_filename.encode(), code.co_qualname.encode()
                 if hasattr(code, "co_qualname") else code.co_name.encode(),
                 repr((code.co_firstlineno, code.co_names, code.co_varnames, code.co_freevars,
                       code.co_cellvars, code.co_argcount, code.co_flags)).encode(),
                 getattr(code, "co_linetable", None) or getattr(code, "co_lnotab", b"")):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code(h, c)
        else:
            _constant(h, c)


def _constant(h, c) -> None:
    if isinstance(c, float):
        h.update(b"f" + struct.pack("<d", c))
    elif isinstance(c, complex):
        h.update(b"c" + struct.pack("<dd", c.real, c.imag))
    elif isinstance(c, (tuple, frozenset)):
        h.update(b"(")
        for x in (sorted(c, key=repr) if isinstance(c, frozenset) else c):
            _constant(h, x)
        h.update(b")")
    elif isinstance(c, _PRIMITIVES) or c is Ellipsis:
        h.update(repr((type(c).__name__, c)).encode())
    else:
        raise _Unhashable(repr(type(c)))


def _value(h, v, seen: set, attr_names) -> None:
    from .language import TileFunction
    if isinstance(v, TileFunction):
        h.update(b"tile.function:")
        _function(h, v.py_func, seen)
    elif isinstance(v, types.FunctionType):
        h.update(b"function:")
        _function(h, v, seen)
    elif isinstance(v, types.ModuleType):
        h.update(f"module:{v.__name__}".encode())
        if v.__name__.split(".")[0] in ("tilejit", "math", "numpy", "operator", "builtins"):
            return                  # covered by build_id / the Python and NumPy versions
        for name in sorted(attr_names):
            if hasattr(v, name):
                h.update(f".{name}=".encode())
                _value(h, getattr(v, name), seen, ())
    elif isinstance(v, _dt.DType):
        h.update(f"dtype:{v.name}".encode())
    elif type(v).__name__ == "dtype" and type(v).__module__.startswith("torch"):
        h.update(f"torch.dtype:{v}".encode())       # torch.float16 named in a kernel
    elif isinstance(v, enum.Enum):
        h.update(f"enum:{type(v).__module__}.{type(v).__qualname__}.{v.name}".encode())
    elif isinstance(v, type):
        h.update(f"class:{v.__module__}.{v.__qualname__}".encode())
    elif getattr(v, "__tilejit_entry__", False):
        h.update(f"kernel:{v.__name__}".encode())
    elif isinstance(v, (float, complex, tuple, frozenset) + _PRIMITIVES):
        _constant(h, v)
    elif type(v).__module__ == "numpy" and hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0:
        h.update(f"np:{v.dtype}:".encode() + v.tobytes())
    elif isinstance(v, types.BuiltinFunctionType):
        h.update(f"builtin:{getattr(v, '__module__', '')}.{v.__name__}".encode())
    else:
        raise _Unhashable(f"{type(v).__module__}.{type(v).__qualname__}")


def is_helper(v) -> bool:
    """A function a kernel may call as an inlined helper: a ``@tile.function``, or a plain
    Python function (cuTile's rule, ``CompileOptions.plain_helpers``); not a language stub."""
    from .language import TileFunction, is_stub
    return isinstance(v, TileFunction) or (isinstance(v, types.FunctionType) and not is_stub(v))


def global_reads(pyfunc) -> list:
    """``(globals dict, name, value)`` for every global ``pyfunc`` and the helpers it calls
    (``@tile.function`` and plain Python functions) read that a compile depends on: the plain
    values (numbers, strings, tuples, dtypes, enum members) frozen into the kernel, and the
    helpers themselves. A launch checks them by identity (``Kernel``: a changed global
    recompiles)."""
    out: list = []
    seen: set = set()

    def visit(fn):
        if id(fn) in seen:
            return
        seen.add(id(fn))
        g = fn.__globals__
        for name in sorted(_names(fn.__code__)):
            if name not in g:
                continue
            v = g[name]
            if is_helper(v):
                out.append((g, name, v))
                visit(getattr(v, "py_func", v))
            elif isinstance(v, (float, complex, tuple, frozenset, _dt.DType, enum.Enum)
                            + _PRIMITIVES) and not isinstance(v, type):
                out.append((g, name, v))
    visit(pyfunc)
    return out


def frozen_globals(pyfunc) -> dict:
    """``{name: value}`` of the plain global values (numbers, strings, tuples, dtypes, enum
    members) that ``pyfunc`` and the helpers it calls read: the values a compile freezes into
    the kernel."""
    out: dict = {}
    for _, name, v in global_reads(pyfunc):
        if not is_helper(v):
            out.setdefault(name, v)
    return out


def changed_globals(before: dict, now: dict) -> list:
    """Names whose values differ between two ``frozen_globals`` snapshots (floats by bits)."""
    def key(v):
        if isinstance(v, (_dt.DType, enum.Enum)):
            return repr(v)
        h = hashlib.sha256()
        try:
            _constant(h, v)
        except _Unhashable:
            return repr(v)
        return h.digest()
    return sorted(n for n in set(before) | set(now)
                  if n not in before or n not in now or key(before[n]) != key(now[n]))


_BUILD_ID: Optional[str] = None


def build_id() -> str:
    """tilejit's version and the size and modification time of each of its source files (so an
    edited or upgraded tilejit never reuses an index entry); computed once per process."""
    global _BUILD_ID
    if _BUILD_ID is None:
        from . import __version__
        root = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256(__version__.encode())
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".py", ".c")):
                    p = os.path.join(dirpath, f)
                    st = os.stat(p)
                    h.update(f"{os.path.relpath(p, root)}:{st.st_size}:{st.st_mtime_ns};".encode())
        _BUILD_ID = h.hexdigest()
    return _BUILD_ID


__all__ = ["function_digest", "is_helper", "global_reads", "frozen_globals", "changed_globals", "build_id"]
