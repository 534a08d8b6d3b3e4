"""Element-wise functions: ``where``, ``minimum``, ``maximum``, math functions, ``isnan``, ``atan2``,
``fma``. Broadcasting and promotion follow ``promotion.py``; math functions compute in the float
dtype of their input (``float32`` for integer and bool inputs). All-scalar inputs give a scalar.
"""
from __future__ import annotations

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import (elementwise_result, float_result, is_compute_only, materialize_dtype,
                         result_dtype)
from ..types import TileType, dtype_of, is_scalar
from ._base import enum_arg, function_rule

UNARY_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
              "tanh", "floor", "ceil")


def operand(ty, what):
    if isinstance(ty, TileType) or is_scalar(ty):
        d = dtype_of(ty)
        if is_compute_only(d):
            raise TileTypingError(f"{what} is {d}, which has no arithmetic; convert with "
                                  f".astype(tile.float32) first")
        return ty
    raise TileTypingError(f"{what} must be a tile or scalar, got {describe_type(ty)}")


def _math(name):
    op = f"tile.{name}"

    def rule(b):
        x = operand(b.x, f"{op}: x")
        enum_arg(b.rounding_mode, language.RoundingMode, f"{op}: rounding_mode")
        return elementwise_result(float_result(dtype_of(x)), x)
    return rule


for _name in UNARY_MATH:
    function_rule(getattr(language, _name))(_math(_name))


@function_rule(language.isnan)
def _isnan(b):
    x = operand(b.x, "tile.isnan: x")
    return elementwise_result(dt.bool_, x)


def _binary(name):
    op = f"tile.{name}"

    def rule(b):
        x = operand(b.x, f"{op}: x")
        y = operand(b.y, f"{op}: y")
        d = result_dtype((x, y), op)
        return elementwise_result(d, x, y, what=f"the operands of {op}")
    return rule


function_rule(language.minimum)(_binary("minimum"))
function_rule(language.maximum)(_binary("maximum"))


@function_rule(language.atan2)
def _atan2(b):
    y = operand(b.y, "tile.atan2: y")
    x = operand(b.x, "tile.atan2: x")
    d = float_result(result_dtype((y, x), "tile.atan2"))
    return elementwise_result(d, y, x, what="the operands of tile.atan2")


@function_rule(language.fma)
def _fma(b):
    ops = tuple(operand(getattr(b, n), f"tile.fma: {n}") for n in "abc")
    d = float_result(result_dtype(ops, "tile.fma"))
    return elementwise_result(d, *ops, what="the operands of tile.fma")


@function_rule(language.where)
def _where(b):
    c = b.cond
    if not (isinstance(c, TileType) or is_scalar(c)) or dtype_of(c) is not dt.bool_:
        raise TileTypingError(f"tile.where: cond must be a bool tile or scalar (e.g. a "
                              f"comparison), got {describe_type(c)}; compare with != 0 to get "
                              f"a mask")
    x = operand(b.x, "tile.where: x")
    y = operand(b.y, "tile.where: y")
    d = materialize_dtype((x, y)) if not (isinstance(x, TileType) or isinstance(y, TileType)) \
        else result_dtype((x, y), "tile.where")
    return elementwise_result(d, c, x, y, what="the operands of tile.where")
