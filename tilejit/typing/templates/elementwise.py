"""Element-wise functions: ``where``, ``minimum``, ``maximum``, ``truediv``, math functions,
``isnan``, ``atan2``, ``fma``. Broadcasting and promotion follow ``promotion.py``; math functions compute in the float
dtype of their input (``float32`` for integer and bool inputs). All-scalar inputs give a scalar.
"""
from __future__ import annotations

import operator

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import (cutile_rules_on, elementwise_result, float_result, is_compute_only,
                         materialize_dtype, result_dtype)
from ..types import TileType, dtype_of, is_scalar
from ._base import bool_arg, enum_arg, function_rule


def operand(ty, what):
    if isinstance(ty, TileType) or is_scalar(ty):
        d = dtype_of(ty)
        if is_compute_only(d):
            raise TileTypingError(f"{what} is {d}, which has no arithmetic; convert with "
                                  f".astype(tile.float32) first")
        return ty
    raise TileTypingError(f"{what} must be a tile or scalar, got {describe_type(ty)}")


def rounding_arg(ty, op: str, allowed) -> None:
    """Check ``rounding_mode=``: None, or one of ``allowed`` (RoundingMode member names)."""
    mode = enum_arg(ty, language.RoundingMode, f"{op}: rounding_mode")
    if mode is None or mode.name in allowed:
        return
    if not allowed:
        raise TileTypingError(f"{op} takes no rounding_mode (Tile IR computes it one way); "
                              f"remove rounding_mode=tile.RoundingMode.{mode.name}")
    names = ", ".join(f"tile.RoundingMode.{m}" for m in allowed)
    raise TileTypingError(f"Rounding mode {mode.value} is not supported by {op} "
                          f"(rounding_mode=tile.RoundingMode.{mode.name}); {op} accepts {names} "
                          f"(or None for the default)")


def flush_arg(ty, op: str, allowed: bool) -> None:
    """Check ``flush_to_zero=``: a constant bool, True only where the op supports it."""
    ftz = bool_arg(ty, f"{op}: flush_to_zero")
    if ftz and not allowed:
        raise TileTypingError(f"{op} has no flush_to_zero; flush_to_zero is available on "
                              f"{', '.join('tile.' + n for n in language.MATH_FLUSH_TO_ZERO)} "
                              f"and tile.truediv")


def cutile_float32_modes(b, op: str, d) -> None:
    """cuTile refuses ``flush_to_zero=True`` and the ``APPROX``/``FULL`` roundings on any
    dtype but float32 (``tilejit.cutile`` kernels only: tilejit's own ops flush float32 alone
    and leave other dtypes exact, as documented)."""
    if not cutile_rules_on():
        return
    mode = enum_arg(b.rounding_mode, language.RoundingMode, f"{op}: rounding_mode") \
        if "rounding_mode" in b._values else None
    if mode is not None and mode.name in ("APPROX", "FULL") and d is not dt.float32:
        raise TileTypingError(f"Rounding mode {mode.value} can only be used for float32 type, "
                              f"but got {d}: {op} computes in {d}; convert to float32 or drop "
                              f"rounding_mode")
    if bool_arg(b.flush_to_zero, f"{op}: flush_to_zero") and d is not dt.float32:
        raise TileTypingError(f"Flush to zero can only be used for float32 type, but got {d}: "
                              f"{op} computes in {d}; convert to float32 or drop flush_to_zero")


def _math(name):
    op = f"tile.{name}"

    def rule(b):
        x = operand(b.x, f"{op}: x")
        rounding_arg(b.rounding_mode, op, language.MATH_ROUNDING.get(name, ()))
        flush_arg(b.flush_to_zero, op, name in language.MATH_FLUSH_TO_ZERO)
        d = dtype_of(x)
        if d.is_float:
            cutile_float32_modes(b, op, d)
        if not (name in language.KEEPS_INTEGERS and (d.is_integer or d.is_bool)):
            d = float_result(d)
        return elementwise_result(d, x)
    return rule


for _name in language.UNARY_MATH:
    function_rule(getattr(language, _name))(_math(_name))


def _predicate(name):
    def rule(b):
        return elementwise_result(dt.bool_, operand(b.x, f"tile.{name}: x"))
    return rule


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    function_rule(getattr(language, _name))(_predicate(_name))


def _binary(name):
    op = f"tile.{name}"

    def rule(b):
        x = operand(b.x, f"{op}: x")
        y = operand(b.y, f"{op}: y")
        bool_arg(b.propagate_nan, f"{op}: propagate_nan")
        d = result_dtype((x, y), op)
        return elementwise_result(d, x, y, what=f"the operands of {op}")
    return rule


function_rule(language.minimum)(_binary("minimum"))
function_rule(language.maximum)(_binary("maximum"))


TRUEDIV_ROUNDING = ("RN", "RZ", "RM", "RP", "APPROX")


@function_rule(language.truediv)
def _truediv(b):
    x = operand(b.x, "tile.truediv: x")
    y = operand(b.y, "tile.truediv: y")
    rounding_arg(b.rounding_mode, "tile.truediv", TRUEDIV_ROUNDING)
    flush_arg(b.flush_to_zero, "tile.truediv", True)
    d = float_result(result_dtype((x, y), "tile.truediv"))
    cutile_float32_modes(b, "tile.truediv", d)
    return elementwise_result(d, x, y, what="the operands of tile.truediv")


def _float_binary(name, first, second):
    op = f"tile.{name}"

    def rule(b):
        p = operand(getattr(b, first), f"{op}: {first}")
        q = operand(getattr(b, second), f"{op}: {second}")
        d = float_result(result_dtype((p, q), op))
        return elementwise_result(d, p, q, what=f"the operands of {op}")
    return rule


function_rule(language.atan2)(_float_binary("atan2", "y", "x"))
function_rule(language.copysign)(_float_binary("copysign", "x", "y"))


@function_rule(language.fmod)
def _fmod(b):
    x = operand(b.x, "tile.fmod: x")
    y = operand(b.y, "tile.fmod: y")
    d = result_dtype((x, y), "tile.fmod")
    if d.is_bool:
        raise TileTypingError("tile.fmod is not defined for bool operands; convert with "
                              ".astype(tile.int32)")
    return elementwise_result(d, x, y, what="the operands of tile.fmod")


def _as_operator(fn, name):
    """The rule of a named function that is an operator (``tile.pow`` is ``**``)."""
    from .operators import binary_type

    def rule(b):
        x = operand(b.x, f"tile.{name}: x")
        y = operand(b.y, f"tile.{name}: y")
        r = binary_type(fn, x, y)
        if "rounding_mode" in b._values:
            arith_rounding(b, f"tile.{name}", dtype_of(r),
                           f"operands only; these are {describe_type(x)} and {describe_type(y)}")
        return r
    return rule


def arith_rounding(b, op: str, d, what: str) -> None:
    """Check ``rounding_mode=``/``flush_to_zero=`` of an addition or multiplication (``tile.add``
    ..., ``tile.sum``) computing in dtype ``d``: an IEEE rounding, and only for floats (``what``
    names the operands). The messages start with cuTile's words for the same errors."""
    mode = enum_arg(b.rounding_mode, language.RoundingMode, f"{op}: rounding_mode")
    ftz = bool_arg(b.flush_to_zero, f"{op}: flush_to_zero")
    rounding_arg(b.rounding_mode, op, ("RN", "RZ", "RM", "RP"))
    if not d.is_float and mode is not None:
        raise TileTypingError(f"Rounding mode can only be used for unrestricted float types: "
                              f"{op}: rounding_mode and flush_to_zero apply to float {what}")
    if not d.is_float and ftz:
        raise TileTypingError(f"Flush to zero can only be used for float32 type: {op}: "
                              f"rounding_mode and flush_to_zero apply to float {what}")
    if ftz and d is not dt.float32 and cutile_rules_on():
        raise TileTypingError(f"Flush to zero can only be used for float32 type ({op} computes "
                              f"in {d}); leave flush_to_zero out or convert to float32")
function_rule(language.pow)(_as_operator(operator.pow, "pow"))
function_rule(language.add)(_as_operator(operator.add, "add"))
function_rule(language.sub)(_as_operator(operator.sub, "sub"))
function_rule(language.mul)(_as_operator(operator.mul, "mul"))


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
