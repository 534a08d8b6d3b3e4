"""The machinery of kernel-language stubs (``tilejit.language`` and ``tilejit.language_math``):
functions whose bodies never run, keeping their signature and docstring, that fail on the host.
"""
from __future__ import annotations

import functools

from .errors import TileJitError


def _host_call_error(name: str) -> TileJitError:
    return TileJitError(
        f"tile.{name}() is part of the kernel language: it can only be called inside a @tile.entry "
        f"kernel or a @tile.function helper, not on the host. On the host use tilejit.api "
        f"(tensors) or NumPy.")


def _stub(fn):
    """Mark ``fn`` as a kernel-language function: keep its signature and docstring, fail on host."""
    name = fn.__name__

    @functools.wraps(fn)
    def stub(*args, **kwargs):
        raise _host_call_error(name)

    stub.__tile_stub__ = name
    return stub


def is_stub(obj) -> bool:
    """True for the kernel-language functions of this module (cdiv and static_assert too)."""
    return getattr(obj, "__tile_stub__", None) is not None


def _named_stub(f, name: str, doc: str):
    """A stub made from the prototype ``f`` (each name needs its own function object: calls bind
    against the stub's own signature)."""
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return _stub(f)
