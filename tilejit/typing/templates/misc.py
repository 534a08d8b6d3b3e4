"""``printf``, ``assert_``, ``assume_divisible_by``, ``static_assert`` and enum members."""
from __future__ import annotations

from numba.core import types
from numba.core.typing.templates import AttributeTemplate

from ... import dtypes as dt
from ... import language
from ..context import TILE_METADATA, registry
from ...errors import StaticEvalError, UnsupportedError
from ..diagnostics import TileTypingError, describe_type
from ..types import (EnumClassType, EnumMemberType, TileType, dtype_of, enum_member_type,
                     is_scalar)
from ._base import function_rule, int_arg, is_none, static_value, NOT_STATIC


@function_rule(language.printf)
def _printf(b):
    if not isinstance(b.fmt, types.StringLiteral):
        raise TileTypingError(f"tile.printf: fmt must be a constant string, got "
                              f"{describe_type(b.fmt)}")
    fmt = b.fmt.literal_value
    specs = [m for m in language.PRINTF_SPEC.finditer(fmt) if m.group("conv") != "%"]
    stray = language.PRINTF_SPEC.sub("", fmt)
    if "%" in stray:
        bad = stray[stray.index("%"):][:2]
        raise TileTypingError(f"tile.printf: {bad!r} in the format is not a printf conversion "
                              f"(use %d, %u, %x for integers, %f, %e, %g for floats, %% for %)")
    for i, a in enumerate(b.args, 1):
        if not (isinstance(a, TileType) or is_scalar(a)):
            raise TileTypingError(f"tile.printf: argument {i} must be a tile or scalar, got "
                                  f"{describe_type(a)}")
    if len(specs) != len(b.args):
        raise TileTypingError(f"tile.printf: the format has {len(specs)} conversion(s) but "
                              f"{len(b.args)} argument(s) were given")
    for i, (m, a) in enumerate(zip(specs, b.args), 1):
        _check_conversion(m.group(0), m.group("conv"), dtype_of(a), i, a)
    return types.none


def _check_conversion(spec: str, conv: str, d, i: int, a) -> None:
    """A conversion that does not fit its argument's dtype prints garbage or truncated values
    in C: refuse it and name the fitting ones."""
    what = f"tile.printf: argument {i} ({describe_type(a)}) is printed with {spec!r}"
    if conv == "s":
        raise TileTypingError(f"{what}, but arguments are numbers, not strings; use %d or %f")
    if conv in language.PRINTF_INT and d.is_float:
        raise TileTypingError(f"{what}, an integer conversion; use %f, %e or %g for floats, or "
                              f"convert with .astype(tile.int32)")
    if conv in language.PRINTF_FLOAT and not d.is_float:
        raise TileTypingError(f"{what}, a float conversion; use %d (or %u, %x) for integers "
                              f"and bools, or convert with .astype(tile.float32)")


@function_rule(language.assert_)
def _assert(b):
    c = b.cond
    if not (isinstance(c, TileType) or is_scalar(c)) or dtype_of(c) is not dt.bool_:
        raise TileTypingError(f"tile.assert_: cond must be a bool tile or scalar, got "
                              f"{describe_type(c)}")
    if not (is_none(b.msg) or isinstance(b.msg, types.StringLiteral)):
        raise TileTypingError(f"tile.assert_: msg must be a constant string, got "
                              f"{describe_type(b.msg)}")
    return types.none


@function_rule(language.assume_divisible_by)
def _assume_div(b):
    x = b.x
    d = dtype_of(x)
    if not (is_scalar(x) and d is not None and d.is_integer):
        raise TileTypingError(f"tile.assume_divisible_by: x must be an integer scalar, got "
                              f"{describe_type(x)}")
    n = int_arg(b.d, "tile.assume_divisible_by: d")
    if n <= 0:
        raise TileTypingError(f"tile.assume_divisible_by: d must be positive, got {n}")
    return types.unliteral(x)


class _SyntaxTypingError(TileTypingError):
    error_class = UnsupportedError


@function_rule(language.static_eval)
def _static_eval_direct(b):
    raise _SyntaxTypingError(
        "static_eval() must be used directly: write static_eval(expr) (or ct.static_eval(expr)) "
        "in the kernel, not through another name, in a kernel whose source tilejit can read (a "
        "file or a notebook cell, not exec() of a string)")


class _StaticEvalTypingError(TileTypingError):
    error_class = StaticEvalError


_STATIC_EVALS: dict = {}


def static_eval_result(key, src, names, value_types):
    """(the value of a ``static_eval`` expression, its Numba type), computed once per
    expression and argument types (so side effects such as ``list.append`` happen once)."""
    from ..context import get_context
    from .. import static_eval as se
    memo = (key, src, tuple(value_types))
    if memo not in _STATIC_EVALS:
        values = se.argument_values(names, value_types, static_value, NOT_STATIC)
        try:
            v = se.evaluate(key, src, names, values)
            _STATIC_EVALS[memo] = (v, se.static_type(v, get_context(), value_types))
        except StaticEvalError as e:
            raise _StaticEvalTypingError(str(e)) from None
    return _STATIC_EVALS[memo]


@function_rule(language._static_eval)
def _static_eval(b):
    names = static_value(b.names)
    return static_eval_result(b.key.literal_value, b.src.literal_value, names, b.values)[1]


@function_rule(language.static_assert)
def _static_assert(b):
    v = static_value(b.cond)
    if v is NOT_STATIC:
        raise TileTypingError(f"tile.static_assert: the condition must be a compile-time constant "
                              f"(built from constants, tile.Constant parameters and tile shapes), "
                              f"got {describe_type(b.cond)}")
    if not v:
        msg = static_value(b.msg)
        detail = f": {msg}" if isinstance(msg, str) else ""
        raise TileTypingError(f"static assertion failed{detail}")
    return types.none


@registry.register_attr
class EnumClassAttributes(AttributeTemplate):
    key = EnumClassType
    metadata = TILE_METADATA

    def generic_resolve(self, ty, attr):
        member = ty.enum_cls.__members__.get(attr)
        return enum_member_type(member) if member is not None else None


@registry.register_attr
class EnumMemberAttributes(AttributeTemplate):
    """``Color.RED.name`` and ``.value``: constants (a float value is a float64 scalar)."""
    key = EnumMemberType
    metadata = TILE_METADATA

    def generic_resolve(self, ty, attr):
        if attr not in ("name", "value"):
            return None
        v = getattr(ty.member, attr)
        if isinstance(v, (bool, int, str)):
            return types.literal(v)
        if isinstance(v, float):
            return types.float64
        raise TileTypingError(f"{ty}.{attr} is a {type(v).__name__}: only int, bool, str and "
                              f"float enum values can be used in a kernel")


def enum_call_type(enum_cls, args, kws):
    """``Color(value)`` with a compile-time ``value``: the member it names (a typing error,
    as a ValueError is in Python, when there is none)."""
    if kws or len(args) != 1:
        raise TileTypingError(f"{enum_cls.__name__}(...) takes one value")
    v = static_value(args[0])
    if isinstance(args[0], types.Float):
        raise TileTypingError(f"{enum_cls.__name__}(...) of a float: a float is no compile-time "
                              f"constant in a kernel; name the member instead "
                              f"({enum_cls.__name__}.<member>)")
    if v is NOT_STATIC:
        raise TileTypingError(f"{enum_cls.__name__}(...) needs a compile-time constant value, "
                              f"got {describe_type(args[0])}: enum members exist only at "
                              f"compile time")
    try:
        member = enum_cls(v)
    except ValueError as e:
        raise TileTypingError(f"{e} (members: "
                              f"{', '.join(f'{m.name}={m.value!r}' for m in enum_cls)})") from None
    return enum_member_type(member)


def _loop_only(name):
    def rule(b):
        raise TileTypingError(f"tile.{name}(...) is only a for-loop iterable (`for i in "
                              f"tile.{name}(...):`, unrolled at compile time)")
    return rule


function_rule(language.static_range)(_loop_only("static_range"))
function_rule(language.static_iter)(_loop_only("static_iter"))
