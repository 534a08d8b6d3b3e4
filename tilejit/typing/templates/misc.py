"""``printf``, ``assert_``, ``assume_divisible_by``, ``static_assert`` and enum members."""
from __future__ import annotations

from numba.core import types
from numba.core.typing.templates import AttributeTemplate

from ... import dtypes as dt
from ... import language
from ..context import TILE_METADATA, registry
from ..diagnostics import TileTypingError, describe_type
from ..types import EnumClassType, TileType, dtype_of, enum_member_type, is_scalar
from ._base import function_rule, int_arg, is_none, static_value, NOT_STATIC


@function_rule(language.printf)
def _printf(b):
    if not isinstance(b.fmt, types.StringLiteral):
        raise TileTypingError(f"tile.printf: fmt must be a constant string, got "
                              f"{describe_type(b.fmt)}")
    n_conv = b.fmt.literal_value.replace("%%", "").count("%")
    for i, a in enumerate(b.args, 1):
        if not (isinstance(a, TileType) or is_scalar(a)):
            raise TileTypingError(f"tile.printf: argument {i} must be a tile or scalar, got "
                                  f"{describe_type(a)}")
    if n_conv != len(b.args):
        raise TileTypingError(f"tile.printf: the format has {n_conv} conversion(s) but "
                              f"{len(b.args)} argument(s) were given")
    return types.none


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
