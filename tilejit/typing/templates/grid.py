"""Grid queries and ``cdiv``.

``bid(axis)`` and ``num_blocks(axis)`` return ``int32`` scalars (axis a constant 0..2).
``cdiv(a, b)`` on integer scalars returns their promoted type (two constants fold to a constant);
on integer tiles it is element-wise.
"""
from __future__ import annotations

from numba.core import types

from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import elementwise_result, result_dtype
from ..types import TileType, dtype_of, is_scalar
from ._base import function_rule, int_arg


def _axis(ty, op):
    a = int_arg(ty, f"{op}: axis")
    if a not in (0, 1, 2):
        raise TileTypingError(f"{op}: axis must be 0, 1 or 2 (the grid has 3 axes), got {a}")
    return a


@function_rule(language.bid)
def _bid(b):
    _axis(b.axis, "tile.bid")
    return types.int32


@function_rule(language.num_blocks)
def _num_blocks(b):
    _axis(b.axis, "tile.num_blocks")
    return types.int32


@function_rule(language.cdiv)
def _cdiv(b):
    x, y = b.a, b.b
    for t in (x, y):
        d = dtype_of(t)
        if d is None or not d.is_integer or not (is_scalar(t) or isinstance(t, TileType)):
            raise TileTypingError(f"tile.cdiv needs integer scalars or tiles, got "
                                  f"{describe_type(x)} and {describe_type(y)}")
    if isinstance(x, types.IntegerLiteral) and isinstance(y, types.IntegerLiteral):
        if y.literal_value == 0:
            raise TileTypingError("tile.cdiv: division by zero")
        return types.literal(-(-x.literal_value // y.literal_value))
    d = result_dtype((x, y), "cdiv")
    return elementwise_result(d, x, y, what="the operands of tile.cdiv")
