"""``TileTypingContext``: Numba's typing machinery with tilejit's own registry.

Isolation rules (see ``shared/reference/numba_typing.md`` §3.3-3.4):

* our templates live in :data:`registry`, never in Numba's global ``builtin_registry``, and carry
  ``metadata={"target": "tilejit"}`` so that they rank first and are unusable from CPU contexts;
* ``TileTarget`` inherits ``Generic`` so that Numba's plain (target-less) builtins apply to it;
* from Numba's builtins we install a *filtered live view*: no ``@overload`` / ``@intrinsic``
  templates (they need a CPU dispatcher and an LLVM target) and none of the operators and builtins
  whose typing we define ourselves (:data:`AUTHORITATIVE`), so our promotion rules are the only
  ones for numbers and tiles;
* ``refresh()`` runs under ``target_override("tilejit")`` because ``install_registry`` filters
  templates by the *current* target.

Nothing here touches Numba's CPU typing context: ``@numba.njit`` keeps working in the process.
"""
from __future__ import annotations

import enum
import operator
import threading
from types import ModuleType as _ModuleType

from numba.core import types
from numba.core.errors import TypingError as NumbaTypingError
from numba.core.target_extension import Generic, target_override, target_registry
from numba.core.typing import templates
from numba.core.typing.context import BaseContext
from numba.core.typing.templates import signature

from .. import dtypes as _dtypes
from .. import language
from .diagnostics import Collector, TileTypingError, describe_type
from .types import (DTypeType, EnumClassType, TileFunctionType, WideIntLiteral,
                    enum_member_type)

TARGET_NAME = "tilejit"


class TileTarget(Generic):
    """The typing target of tile kernels (inherits Generic so plain Numba builtins apply)."""


if TARGET_NAME not in target_registry:
    target_registry[TARGET_NAME] = TileTarget
else:                                          # module re-imported (e.g. importlib.reload)
    TileTarget = target_registry[TARGET_NAME]  # noqa: F811

TILE_METADATA = {"target": TARGET_NAME}

#: The typing declarations of the kernel language (filled by ``templates/``).
registry = templates.Registry()

#: Operators and builtins typed only by our templates (Numba's versions are filtered out).
AUTHORITATIVE = frozenset([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
    operator.rshift, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
    operator.ior, operator.ixor, operator.ilshift, operator.irshift, operator.neg, operator.pos,
    operator.invert, operator.not_, operator.lt, operator.le, operator.gt, operator.ge,
    operator.eq, operator.ne, abs, min, max, pow, divmod, print, "print_item", range,
])

_OVERLOAD_TEMPLATE_NAMES = ("_OverloadFunctionTemplate", "_OverloadAttributeTemplate",
                            "_OverloadMethodTemplate", "_IntrinsicTemplate")


def _is_high_level(tcls) -> bool:
    """Numba extension templates that need a CPU dispatcher / LLVM target context."""
    return any(base.__name__ in _OVERLOAD_TEMPLATE_NAMES for base in getattr(tcls, "__mro__", ()))


def _keep_function(tcls) -> bool:
    return not _is_high_level(tcls) and getattr(tcls, "key", None) not in AUTHORITATIVE


def _keep_attribute(tcls) -> bool:
    return not _is_high_level(tcls)


def _keep_global(item) -> bool:
    gv, gty = item
    try:
        if gv in AUTHORITATIVE:
            return False
    except TypeError:           # unhashable global
        pass
    if isinstance(gty, types.Function):
        return not any(_is_high_level(t) for t in gty.templates)
    return True


class _FilteredList:
    """A live, append-only view of a registry list (``stream_list`` needs ``len`` and slicing)."""

    def __init__(self, source: list, keep):
        self._source = source
        self._keep = keep

    def __len__(self):
        return len(self._source)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [x for x in self._source[index] if self._keep(x)]
        raise TypeError("filtered registry views only support slicing")


class _FilteredRegistry:
    def __init__(self, source: templates.Registry):
        self.functions = _FilteredList(source.functions, _keep_function)
        self.attributes = _FilteredList(source.attributes, _keep_attribute)
        self.globals = _FilteredList(source.globals, _keep_global)


_filtered_builtins = _FilteredRegistry(templates.builtin_registry)


def _scalar_kind(ty):
    """0, 1, 2 for a bool, integer, float scalar type (literals too); None for anything else."""
    if isinstance(ty, types.Boolean):           # BooleanLiteral and IntegerLiteral subclass
        return 0
    if isinstance(ty, types.Integer):
        return 1
    if isinstance(ty, types.Float):
        return 2
    return None


class TileTypingContext(BaseContext):
    """Typing context of tile kernels. Get the shared instance with :func:`get_context`."""

    def init(self):
        # message of a condensed Numba error -> our error (Numba replays cached failures)
        self._condensed = {}

    def load_additional_registries(self):
        from . import templates as _tile_templates  # noqa: F401  (registers everything)
        self.install_registry(registry)

    def _load_builtins(self):
        from numba.core.typing import builtins  # noqa: F401  (range, tuples, bool, len ...)
        self.install_registry(_filtered_builtins)

    def refresh(self):
        with target_override(TARGET_NAME):
            super().refresh()

    # --- values -----------------------------------------------------------------------------------
    def resolve_value_type(self, val):
        ty = self._lookup_global(val)
        if ty is not None:
            return ty
        if isinstance(val, language.TileFunction):
            return TileFunctionType(val)
        if isinstance(val, _dtypes.DType):
            return DTypeType(val)
        if isinstance(val, _ModuleType):
            # Numba's answer too, reached only after its generic typeof imports cffi and
            # pycparser (~30 ms on the first kernel of a process) to rule out cffi objects
            return types.Module(val)
        # the language's enums and the user's (an IntEnum member is the int it equals)
        if isinstance(val, type) and issubclass(val, enum.Enum):
            return EnumClassType(val)
        if isinstance(val, enum.Enum):
            return enum_member_type(val)
        if type(val) is int and not -(1 << 63) <= val < (1 << 64):
            return WideIntLiteral(val)
        return super().resolve_value_type(val)

    def resolve_module_constants(self, typ, attr):
        if not hasattr(typ.pymod, attr):
            return None
        return super().resolve_module_constants(typ, attr)

    # --- joins ------------------------------------------------------------------------------------
    def unify_pairs(self, first, second):
        # cuTile gives a variable one type on every path; Numba would widen an int and a float
        # (or a bool and an int) meeting at a join to the wider one. tilejit.cutile refuses
        # that join as cuTile does (the error is diagnostics._merge_error's)
        from .promotion import cutile_rules_on
        if cutile_rules_on():
            a, b = _scalar_kind(first), _scalar_kind(second)
            if a is not None and b is not None and a != b:
                return None
        return super().unify_pairs(first, second)

    # --- attributes -------------------------------------------------------------------------------
    def resolve_getattr(self, typ, attr):
        res = super().resolve_getattr(typ, attr)
        if res is None and not (attr.startswith("__") and attr.endswith("__")):
            # (dunder lookups are Numba probing for __call__ etc., not user attributes)
            from .templates._base import unknown_attribute_error
            raise unknown_attribute_error(typ, attr)
        return res

    # --- calls ------------------------------------------------------------------------------------
    def resolve_function_type(self, func, args, kws):
        if isinstance(func, types.NumberClass) and not args and not kws:
            # np.float32() is NumPy's zero of that type (Numba's typer takes one value)
            return signature(func.instance_type)
        col = Collector.current()
        start = len(col.errors) if col is not None else 0
        try:
            return super().resolve_function_type(func, args, kws)
        except TileTypingError:
            raise
        except NumbaTypingError as e:
            # Numba wrapped our template's message in its composite text: re-raise ours.
            text = str(e)
            ours = col.errors[start:] if col is not None else []
            if ours:
                self._condensed[text] = ours[0]
                raise ours[0] from None
            if text in self._condensed:
                raise self._condensed[text] from None
            raise
        except ValueError as e:
            # Numba's own typers (``np.float32((1, 2, 3))``) ask for the type of a value it
            # cannot type and raise a bare ValueError: a call tile kernels cannot make
            raise TileTypingError(f"cannot call {func} with arguments "
                                  f"({', '.join(str(a) for a in args)}): "
                                  f"{str(e).replace(chr(27) + '[1m', '').replace(chr(27) + '[0m', '')}"
                                  ) from None


_context = None
_context_lock = threading.Lock()


def get_context() -> TileTypingContext:
    """The process-wide typing context (built on first use, 30-80 ms)."""
    global _context
    if _context is None:
        with _context_lock:
            if _context is None:
                ctx = TileTypingContext()
                ctx.refresh()
                _context = ctx
    return _context


__all__ = ["TileTarget", "TileTypingContext", "get_context", "registry", "TILE_METADATA",
           "TARGET_NAME", "AUTHORITATIVE", "describe_type"]
