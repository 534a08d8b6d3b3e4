"""Registration helpers shared by the template modules.

A typing rule is a plain function that receives the call's arguments *bound by name* against a
Python signature (a kernel-language stub's, or a small signature function for methods that have
no stub) and returns the result type, raising :class:`TileTypingError` when the call is invalid::

    @function_rule(language.zeros)
    def _zeros(b):                         # b.shape, b.dtype are Numba types
        return TileType(dtype_arg(b.dtype, "tile.zeros", default=float32), shape_arg(b.shape, ...))

    @method_rule(TileType, "astype", language.astype)   # t.astype(d) is tile.astype(t, d)
    def _astype(b): ...

The resulting Numba ``Signature`` lists the types of *all* parameters of that signature in order
(defaults included, ``*args`` flattened), so ``sig.args[i]`` lines up with ``inspect.signature``.
Templates record ``stub`` (the language function or None), ``op`` (a stable name such as
``"tile.zeros"`` or ``"Partition.store"``) and ``pysig``; lowering reads them back through
``TypedKernel.call_info``.
"""
from __future__ import annotations

import difflib
import inspect
from collections import OrderedDict
from typing import Callable, Dict, Optional

from numba.core import types
from numba.core.errors import TypingError as NumbaTypingError
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, Signature

from ... import envvars, language
from ...dtypes import DType
from ...errors import CompileError
from ..context import TILE_METADATA, registry
from ..diagnostics import TileTypingError, describe_type
from ..arg_types import constant_type
from ..types import (DTypeType, EnumClassType, EnumMemberType, PartitionType, TensorPartitionViewType,
                     TensorType, TileType, dtype_of, is_pow2, is_scalar)

_DEBUG = envvars.flag("TILEJIT_DEBUG_TYPING")


# --------------------------------------------------------------------------------------------------
# Binding
class Bound:
    """Call arguments bound by parameter name: ``b.shape`` is the Numba type of ``shape``."""

    def __init__(self, op: str, values: "OrderedDict[str, object]"):
        self._op = op
        self._values = values

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name):
        return self._values[name]

    def flat_types(self, skip_first: bool = False):
        items = list(self._values.values())
        if skip_first:
            items = items[1:]
        out = []
        for v in items:
            if isinstance(v, tuple):       # *args
                out.extend(v)
            else:
                out.append(v)
        return tuple(out)


def default_type(value):
    """The Numba type of a Python default value of a signature."""
    if value is None:
        return types.none
    if isinstance(value, str):
        return types.literal(value)
    return constant_type(value)


def bind(pysig: inspect.Signature, op: str, args, kws, receiver=None) -> Bound:
    lead = (receiver,) if receiver is not None else ()
    try:
        ba = pysig.bind(*lead, *args, **dict(kws))
    except TypeError as e:
        raise TileTypingError(f"{op}(): {e} (signature: {op}{_public_sig(pysig, receiver)})")
    values = OrderedDict()
    for name, param in pysig.parameters.items():
        if name in ba.arguments:
            v = ba.arguments[name]
            values[name] = tuple(v) if param.kind is param.VAR_POSITIONAL else v
        elif param.kind is param.VAR_POSITIONAL:
            values[name] = ()
        else:
            values[name] = default_type(param.default)
    return Bound(op, values)


def _public_sig(pysig: inspect.Signature, receiver) -> str:
    params = list(pysig.parameters.values())
    if receiver is not None:
        params = params[1:]
    return str(pysig.replace(parameters=params))


# --------------------------------------------------------------------------------------------------
class _NoRetry:
    """Mixin: after a rule raised on the literal arguments, Numba retries the same template
    instance with the literals erased; that retry must fail the same way (otherwise `int8_tile +
    300` would pass as `int8_tile + int64`)."""

    def _once(self, fn):
        failed = self.__dict__.get("_failed")
        if failed is not None:
            raise failed
        try:
            return fn()
        except NumbaTypingError as e:
            self.__dict__["_failed"] = e
            raise


def _guard(op: str, rule, *a):
    try:
        return rule(*a)
    except NumbaTypingError:
        raise
    except CompileError as e:       # a user error found typing a nested kernel function
        raise TileTypingError(e.message) from None
    except Exception as e:          # a bug in a rule: still report it at the user's line
        if _DEBUG:
            raise
        raise TileTypingError(f"internal error while typing {op}: {type(e).__name__}: {e} "
                              f"(please report this)") from e


def op_name_of(stub) -> str:
    return f"tile.{stub.__name__}"


def function_rule(value, op: Optional[str] = None, pysig_of: Optional[Callable] = None):
    """Register ``rule(bound) -> type`` as the typing of calls to the global ``value``."""
    pysig_fn = pysig_of or value
    pysig = inspect.signature(pysig_fn)
    opname = op or (op_name_of(value) if language.is_stub(value) else getattr(value, "__name__",
                                                                                str(value)))

    def deco(rule):
        class Template(_NoRetry, AbstractTemplate):
            key = value
            metadata = TILE_METADATA
            prefer_literal = True
            stub = value if language.is_stub(value) else None
            op = opname

            def generic(self, args, kws):
                return self._once(lambda: self._generic(args, kws))

            def _generic(self, args, kws):
                b = bind(pysig, opname, args, kws)
                ret = _guard(opname, rule, b)
                if ret is None:
                    return None
                return Signature(ret, b.flat_types(), recvr=None, pysig=pysig)

        Template.__name__ = f"Tile_{opname.replace('.', '_')}"
        registry.register_global(value, types.Function(Template))
        rule.template = Template
        return rule
    return deco


def raw_function_template(value, op: str, prefer_literal: bool = True):
    """Register ``rule(args, kws) -> Signature | None`` for ``value`` (operators, builtins)."""
    def deco(rule):
        class Template(_NoRetry, AbstractTemplate):
            key = value
            metadata = TILE_METADATA
            stub = value if language.is_stub(value) else None

            def generic(self, args, kws):
                return self._once(lambda: _guard(op, rule, self.context, tuple(args), dict(kws)))

        Template.prefer_literal = prefer_literal
        Template.op = op
        Template.__name__ = f"Tile_{op.replace('.', '_')}"
        registry.register_global(value, types.Function(Template))
        rule.template = Template
        return rule
    return deco


def raw_key_template(key: str, op: str):
    """Register ``rule(args, kws) -> Signature | None`` for an internal key (``static_getitem``)."""
    def deco(rule):
        class Template(AbstractTemplate):
            metadata = TILE_METADATA
            prefer_literal = True
            stub = None

            def generic(self, args, kws):
                return _guard(op, rule, self.context, tuple(args), dict(kws))

        Template.key = key
        Template.op = op
        registry.register(Template)
        rule.template = Template
        return rule
    return deco


# --------------------------------------------------------------------------------------------------
# Attributes and methods
_ATTRS: Dict[type, Dict[str, Callable]] = {}
_METHODS: Dict[type, Dict[str, type]] = {}
_BOUND_CACHE: Dict[tuple, type] = {}
#: type class -> user-facing name for messages
TYPE_NOUNS = {TileType: "tile", TensorType: "Tensor", PartitionType: "Partition",
              TensorPartitionViewType: "tile view"}


def attribute_rule(typecls, name: str):
    """Register ``rule(ty) -> type`` for the attribute ``name`` of values of ``typecls``."""
    def deco(rule):
        _ensure_attr_template(typecls)
        _ATTRS[typecls][name] = rule
        return rule
    return deco


def method_rule(typecls, name: str, pysig_of: Callable, op: Optional[str] = None):
    """Register ``rule(bound) -> type`` for the method ``name``. ``pysig_of``'s first parameter
    is the receiver (a language stub like ``language.reshape`` for ``t.reshape(shape)``)."""
    pysig = inspect.signature(pysig_of)
    opname = op or f"{typecls.__name__.replace('Type', '')}.{name}"
    stub = pysig_of if language.is_stub(pysig_of) else None

    def deco(rule):
        class MethodTemplate(_NoRetry, AbstractTemplate):
            key = opname
            metadata = TILE_METADATA
            prefer_literal = True
            this = None

            def generic(self, args, kws):
                return self._once(lambda: self._generic(args, kws))

            def _generic(self, args, kws):
                b = bind(pysig, opname, args, kws, receiver=self.this)
                ret = _guard(opname, rule, b)
                if ret is None:
                    return None
                return Signature(ret, b.flat_types(skip_first=True), recvr=self.this,
                                 pysig=pysig)

        MethodTemplate.stub = stub
        MethodTemplate.op = opname
        MethodTemplate.method_name = name
        MethodTemplate.__name__ = f"Tile_{opname.replace('.', '_')}"
        _ensure_attr_template(typecls)
        _METHODS[typecls][name] = MethodTemplate
        rule.template = MethodTemplate
        return rule
    return deco


def _ensure_attr_template(typecls):
    if typecls in _ATTRS:
        return
    _ATTRS[typecls] = {}
    _METHODS[typecls] = {}

    class Attrs(AttributeTemplate):
        key = typecls
        metadata = TILE_METADATA

        def generic_resolve(self, ty, attr):
            rule = _ATTRS[typecls].get(attr)
            if rule is not None:
                return _guard(f"{TYPE_NOUNS.get(typecls, typecls.__name__)}.{attr}", rule, ty)
            mt = _METHODS[typecls].get(attr)
            if mt is not None:
                # one template class per (method, receiver type) so the BoundFunction interns
                bound_cls = _BOUND_CACHE.get((mt, ty))
                if bound_cls is None:
                    bound_cls = _BOUND_CACHE[(mt, ty)] = type(mt.__name__, (mt,), {"this": ty})
                return types.BoundFunction(bound_cls, ty)
            return None

    Attrs.__name__ = f"{typecls.__name__}Attributes"
    registry.register_attr(Attrs)


def known_members(typecls):
    return sorted(_ATTRS.get(typecls, {})), sorted(_METHODS.get(typecls, {}))


def unknown_attribute_error(typ, attr: str) -> TileTypingError:
    """The error for ``value.attr`` when no template knows ``attr``."""
    if isinstance(typ, types.Module):
        mod = typ.pymod
        if mod.__name__ in ("tilejit", "tilejit.language"):
            names = [n for n in dir(language) if not n.startswith("_")]
            other = language.OTHER_SPELLINGS.get(attr)                  # Triton's spellings
            hint = f" (tilejit spells it {other})" if other else _did_you_mean(attr, names)
            return TileTypingError(f"tilejit has no kernel function or attribute '{attr}'{hint}; "
                                   f"the kernel language is listed in help(tilejit.language) "
                                   f"and the docs' language reference")
        return TileTypingError(f"module '{mod.__name__}' has no attribute '{attr}' usable in a "
                               f"tile kernel")
    for cls in type(typ).__mro__:
        if cls in TYPE_NOUNS:
            attrs, methods = known_members(cls)
            if cls is TensorType and attr in ("store", "__setitem__"):
                if not typ.writable:
                    return read_only_error("store to", typ)
                return TileTypingError(
                    f"{typ} has no '{attr}' method: store a tile into a writable tensor with "
                    f"`tile.store(t, index, tile)` (index counts tiles of the stored tile's "
                    f"shape), or through a tile view: `t.partition(tile_shape).store(index, tile)`")
            listing = ", ".join(attrs + [m + "()" for m in methods])
            hint = _did_you_mean(attr, attrs + methods)
            return TileTypingError(f"{typ} has no attribute '{attr}'{hint}; "
                                   f"{TYPE_NOUNS[cls]}s have: {listing}")
    if isinstance(typ, EnumClassType):
        names = [m.name for m in typ.enum_cls]
        return TileTypingError(f"{typ.enum_cls.__name__} has no member '{attr}'"
                               f"{_did_you_mean(attr, names)}; members: {', '.join(names)}")
    if is_scalar(typ):
        extra = ""
        if attr in ("shape", "dtype", "ndim", "astype", "reshape"):
            extra = (" (this value is a scalar, not a tile; make a tile with "
                     "tile.full((1,), x) or use tile.astype(x, dtype) for conversions)")
        return TileTypingError(f"{describe_type(typ)} has no attribute '{attr}'{extra}")
    return TileTypingError(f"{describe_type(typ)} has no attribute '{attr}'")


def _did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def read_only_error(action: str, ty) -> TileTypingError:
    return TileTypingError(
        f"cannot {action} a read-only {ty}: tensors passed to a kernel are read-only. To write an "
        f"output, pass it as a partition from the host (`out.partition(tile_shape)`) and call "
        f"`z.store(tile)` on the partition parameter (for a NumPy array: "
        f"`tile.partition(out, tile_shape)`); to store, scatter or use atomics anywhere in a "
        f"whole tensor, pass `tile.writable(out)` (also spelled `tile.atomic(out)`)")


# --------------------------------------------------------------------------------------------------
# Static (compile-time) values carried by types
class _NotStatic:
    pass


NOT_STATIC = _NotStatic()


def static_value(ty):
    """The compile-time value a type carries, or ``NOT_STATIC``."""
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, (types.NoneType, types.Omitted)):
        return None if isinstance(ty, types.NoneType) else ty.value
    if isinstance(ty, DTypeType):
        return ty.dtype
    if isinstance(ty, EnumMemberType):
        return ty.member
    if isinstance(ty, types.BaseTuple):
        vals = tuple(static_value(t) for t in ty.types)
        return NOT_STATIC if any(v is NOT_STATIC for v in vals) else vals
    return NOT_STATIC


def is_none(ty) -> bool:
    return isinstance(ty, (types.NoneType, types.Omitted)) and static_value(ty) is None


def int_arg(ty, what: str, allow_none: bool = False) -> Optional[int]:
    if allow_none and is_none(ty):
        return None
    if isinstance(ty, types.IntegerLiteral):
        return ty.literal_value
    raise TileTypingError(f"{what} must be a compile-time constant int, got {describe_type(ty)}")


def bool_arg(ty, what: str) -> bool:
    if isinstance(ty, types.BooleanLiteral):
        return ty.literal_value
    if isinstance(ty, types.IntegerLiteral) and ty.literal_value in (0, 1):
        return bool(ty.literal_value)
    raise TileTypingError(f"{what} must be a compile-time constant bool, got {describe_type(ty)}")


def shape_arg(ty, what: str, allow_minus_one: bool = False, allow_empty: bool = True):
    """A static tile shape from a constant tuple of ints (or one int)."""
    if isinstance(ty, types.IntegerLiteral):
        shape = (ty.literal_value,)
    elif isinstance(ty, types.BaseTuple) and all(isinstance(t, types.IntegerLiteral)
                                                  for t in ty.types):
        shape = tuple(t.literal_value for t in ty.types)
    else:
        raise TileTypingError(
            f"{what} must be a tuple of compile-time constant ints (literals, tile.Constant[int] "
            f"parameters or values derived from tile shapes such as t.shape[0]), got "
            f"{describe_type(ty)}; tile shapes are static")
    if not shape and not allow_empty:
        raise TileTypingError(f"{what} must not be empty")
    bad = [s for s in shape if not (is_pow2(s) or (allow_minus_one and s == -1))]
    if bad:
        raise TileTypingError(
            f"{what} {shape} is not valid: every tile extent must be a power of two, but {bad[0]} "
            f"is not; round the tile up to a power of two and mask or pad the extra elements")
    return shape


def axis_arg(ty, ndim: int, what: str, allow_none: bool = False, allow_tuple: bool = False):
    """Normalized axis (or tuple of axes / None)."""
    if allow_none and is_none(ty):
        return None
    if allow_tuple and isinstance(ty, types.BaseTuple):
        axes = tuple(axis_arg(t, ndim, what) for t in ty.types)
        if len(set(axes)) != len(axes):
            raise TileTypingError(f"{what}: repeated axis in {axes}")
        return axes
    a = int_arg(ty, what)
    if not -ndim <= a < ndim:
        raise TileTypingError(f"{what} {a} is out of bounds for a tile of rank {ndim} "
                              f"(valid axes: {-ndim}..{ndim - 1})" if ndim else
                              f"{what} {a} is out of bounds for a rank-0 tile")
    return a % ndim


def dtype_arg(ty, what: str, default: Optional[DType] = None) -> DType:
    if is_none(ty) and default is not None:
        return default
    if isinstance(ty, DTypeType):
        return ty.dtype
    if isinstance(ty, types.NumberClass):
        d = dtype_of(ty.instance_type)
        if d is not None:
            return d
    raise TileTypingError(f"{what} must be a dtype such as tile.float32, got {describe_type(ty)}")


def enum_arg(ty, enum_cls, what: str, allow_none: bool = True):
    if allow_none and is_none(ty):
        return None
    if isinstance(ty, EnumMemberType) and ty.enum_cls is enum_cls:
        return ty.member
    members = ", ".join(f"tile.{enum_cls.__name__}.{m.name}" for m in enum_cls)
    raise TileTypingError(f"{what} must be one of {members}; got {describe_type(ty)}")


def as_tile(ty) -> TileType:
    """A scalar as a rank-0 tile (tiles unchanged)."""
    if isinstance(ty, TileType):
        return ty
    return TileType(dtype_of(ty), ())

