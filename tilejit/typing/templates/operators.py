"""Python operators and builtins on tiles, scalars, tuples, dtypes and enums.

These templates are *authoritative* (``context.AUTHORITATIVE``): Numba's own number templates are
filtered out, so the promotion rules of ``promotion.py`` apply everywhere. Two int constants fold
to a constant (``BM // 2`` is ``Literal[int](32)``); lowering materialises every literal-typed
value as a constant.

Signatures record the operand types; ``calltypes[expr]`` of a ``binop`` / ``inplace_binop`` /
``unary`` expression is the signature and ``expr.fn`` the operator.
"""
from __future__ import annotations

import math
import operator

from numba.core import types
from numba.core.typing.builtins import Range as _NumbaRange
from numba.core.typing.templates import signature

from ... import dtypes as dt
from ... import language
from ..diagnostics import (INPLACE, OPERATOR_SYMBOLS, TileTypingError, describe_type,
                           operator_symbol)
from ..reject import FOLDABLE_MATH
from ..promotion import (category, elementwise_result, float_result, is_compute_only,
                         result_dtype)
from ..types import (DTypeType, EnumMemberType, PartitionType, TensorPartitionViewType,
                     TensorType, TileType, dtype_of, is_scalar, scalar_type, value_type)
from ._base import raw_function_template, static_value, NOT_STATIC

ARITH = {operator.add, operator.sub, operator.mul, operator.iadd, operator.isub, operator.imul}
TRUEDIV = {operator.truediv, operator.itruediv}
FLOORDIV = {operator.floordiv, operator.mod, operator.ifloordiv, operator.imod}
POW = {operator.pow, operator.ipow}
BITWISE = {operator.and_, operator.or_, operator.xor, operator.iand, operator.ior, operator.ixor}
SHIFT = {operator.lshift, operator.rshift, operator.ilshift, operator.irshift}
COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _not_an_operand(ty, sym) -> TileTypingError:
    if isinstance(ty, (TensorType, PartitionType, TensorPartitionViewType)):
        return TileTypingError(
            f"operator '{sym}' is not defined for {ty}: tensors and partitions hold data in "
            f"global memory; load a tile first (x.load(index, shape), tile.load_tile_like(x, z) "
            f"or z.load())")
    return TileTypingError(f"operator '{sym}' is not defined for {describe_type(ty)}")


def _operands_ok(a, b, sym):
    for t in (a, b):
        if not (isinstance(t, TileType) or is_scalar(t)):
            raise _not_an_operand(t, sym)


def _result(d, a, b, sym):
    """The result type: a tile when a tile is involved (broadcast shape), else a scalar."""
    return elementwise_result(d, a, b, what=f"operands of '{sym}'")


def _fold(fn, a, b):
    """Constant-fold two int/bool literals (Python semantics); None when not foldable."""
    if not (isinstance(a, (types.IntegerLiteral, types.BooleanLiteral)) and
            isinstance(b, (types.IntegerLiteral, types.BooleanLiteral))):
        return None
    fn = INPLACE.get(fn, fn)
    x, y = a.literal_value, b.literal_value
    if fn in (operator.truediv,):
        return None
    if fn in (operator.floordiv, operator.mod) and y == 0:
        raise TileTypingError(f"integer division by zero in constant expression {x} "
                              f"{OPERATOR_SYMBOLS[fn]} {y}")
    if fn is operator.pow and y < 0:
        return None
    if fn in (operator.lshift, operator.rshift) and (y < 0 or y > 63):
        return None
    r = fn(x, y)
    if isinstance(r, bool):
        return types.literal(r)
    if isinstance(r, int) and _INT64_MIN <= r <= _INT64_MAX:
        return types.literal(r)
    return None


def _tuple_binop(fn, a, b):
    sym = operator_symbol(fn)
    if fn in (operator.add, operator.iadd) and isinstance(a, types.BaseTuple) and \
            isinstance(b, types.BaseTuple):
        return signature(types.BaseTuple.from_types(tuple(a.types) + tuple(b.types)), a, b)
    if fn in (operator.mul, operator.imul):                   # (0,) * 3, as in Python
        t, n = (a, b) if isinstance(a, types.BaseTuple) else (b, a)
        if isinstance(t, types.BaseTuple) and isinstance(n, types.IntegerLiteral):
            return signature(types.BaseTuple.from_types(tuple(t.types) *
                                                        max(n.literal_value, 0)), a, b)
    if fn in (operator.eq, operator.ne):
        same = tuple_equal(a, b, sym)
        if same is None:
            return signature(types.boolean, a, b)
        return signature(types.literal(same == (fn is operator.eq)), a, b)
    raise TileTypingError(f"operator '{sym}' is not supported between {describe_type(a)} and "
                          f"{describe_type(b)} (tuples support + (concatenation), * by a "
                          f"constant int, == and !=)")


def _tuple_element(t, sym):
    if isinstance(t, types.BaseTuple) or is_scalar(t) or (isinstance(t, TileType) and
                                                          t.ndim == 0):
        return
    if isinstance(t, TileType):
        raise TileTypingError(f"'{sym}' on tuples is not supported for non-scalar elements: got "
                              f"{describe_type(t)}; compare the tiles element-wise instead")
    raise TileTypingError(f"'{sym}' on tuples is not supported for elements of type "
                          f"{describe_type(t)} (scalars, 0-d tiles and tuples of them only)")


def tuple_equal(a, b, sym="=="):
    """``a == b`` where either side is a tuple, element by element as Python compares:
    True or False when the types decide it (lengths differ, constants), None when the values
    decide it at run time."""
    ta, tb = isinstance(a, types.BaseTuple), isinstance(b, types.BaseTuple)
    _tuple_element(a, sym)
    _tuple_element(b, sym)
    if ta and tb:
        if len(a.types) != len(b.types):
            return False
        parts = [tuple_equal(x, y, sym) for x, y in zip(a.types, b.types)]
        if any(p is False for p in parts):
            return False
        return True if all(p is True for p in parts) else None
    if ta or tb:
        return False                        # (1,) == 1 is False in Python
    va, vb = static_value(a), static_value(b)
    if va is not NOT_STATIC and vb is not NOT_STATIC:
        return va == vb
    return None


def _contains(container, item):
    """``item in container`` for a tuple: the elements are compared in order, as Python does;
    a constant match ends the search, so elements after it are never looked at."""
    if not isinstance(container, types.BaseTuple):
        raise TileTypingError(f"'in' needs a tuple on its right, got {describe_type(container)}")
    at_run_time = False
    for el in container.types:
        for t in (el, item):
            if isinstance(t, TileType) and t.ndim > 0 or \
                    not (isinstance(t, (types.BaseTuple, TileType)) or is_scalar(t)):
                raise TileTypingError(f"'in' requires scalar operands (or tuples of them), got "
                                      f"{describe_type(t)}")
        same = tuple_equal(el, item, "in")
        if same is True:
            return types.literal(True)
        at_run_time = at_run_time or same is None
    return types.boolean if at_run_time else types.literal(False)


def _static_eq(fn, a, b):
    """== / != between dtypes or enum members: a compile-time bool."""
    if fn not in (operator.eq, operator.ne):
        return None
    for cls in (DTypeType, EnumMemberType):
        if isinstance(a, cls) or isinstance(b, cls):
            same = isinstance(a, cls) and isinstance(b, cls) and static_value(a) is static_value(b)
            return signature(types.literal(same == (fn is operator.eq)), a, b)
    if isinstance(a, types.StringLiteral) and isinstance(b, types.StringLiteral):
        same = a.literal_value == b.literal_value           # Color.RED.name == "RED"
        return signature(types.literal(same == (fn is operator.eq)), a, b)
    return None


def _binary(fn, args):
    a, b = args
    sym = operator_symbol(fn)
    if fn is operator.contains:
        return signature(_contains(a, b), a, b)
    if isinstance(a, types.BaseTuple) or isinstance(b, types.BaseTuple):
        return _tuple_binop(fn, a, b)
    sig = _static_eq(fn, a, b)
    if sig is not None:
        return sig
    if fn in (operator.matmul, operator.imatmul):
        from .matmul import matmul_result
        return signature(matmul_result(a, b), a, b)
    _operands_ok(a, b, sym)
    folded = _fold(fn, a, b)
    if folded is not None:
        return signature(folded, a, b)
    base = INPLACE.get(fn, fn)
    d = result_dtype((a, b), sym)
    if base in COMPARE:
        if is_compute_only(d):
            raise TileTypingError(f"'{sym}' on {d} is not supported; convert with .astype first")
        return signature(_result(dt.bool_, a, b, sym), a, b)
    if base in (operator.add, operator.sub, operator.mul):
        if d.is_bool and base is operator.sub:
            raise TileTypingError("'-' is not defined for bool operands; use '^' (xor) for "
                                  "booleans, or convert with .astype(tile.int32)")
    elif base is operator.truediv:
        d = float_result(d)
    elif base in (operator.floordiv, operator.mod):
        if d.is_bool:
            raise TileTypingError(f"'{sym}' is not defined for bool operands; convert with "
                                  f".astype(tile.int32)")
    elif base is operator.pow:
        if d.is_bool:
            d = dt.int32
        if d.is_integer and not isinstance(b, types.IntegerLiteral):
            # NumPy raises at run time for a negative exponent; a kernel cannot, so the
            # exponent must be a constant (a literal or a tile.Constant[int] parameter)
            raise TileTypingError(
                f"integer '**' needs a constant exponent (a literal or a tile.Constant[int] "
                f"parameter), got {describe_type(b)}; for a runtime exponent use a float base: "
                f"x.astype(tile.float32) ** y")
        if d.is_integer and b.literal_value < 0:
            raise TileTypingError("integers to negative integer powers are not allowed; use a "
                                  "float base (x.astype(tile.float32) ** n)")
    elif base in (operator.and_, operator.or_, operator.xor):
        if d.is_float:
            raise TileTypingError(
                f"Bitwise operations require integers: bitwise operator '{sym}' is not defined "
                f"for floating-point operands "
                f"({describe_type(a)} and {describe_type(b)}); it needs bool or integer operands "
                f"(to combine conditions, use {sym} on comparisons: (a > 0) {sym} (b > 0))")
    elif base in (operator.lshift, operator.rshift):
        if not d.is_integer:
            raise TileTypingError(f"Bitwise shift requires an integer: shift operator '{sym}' "
                                  f"needs integer operands, got {describe_type(a)} and "
                                  f"{describe_type(b)}")
    res = _result(d, a, b, sym)
    if fn in INPLACE and isinstance(a, TileType):
        res = _inplace_result(a, res, sym)
    return signature(res, a, b)


def binary_type(fn, a, b):
    """The result type of the operator ``fn`` on ``a`` and ``b`` (for named forms such as
    ``tile.add``)."""
    return _binary(fn, (a, b)).return_type


def _inplace_result(a: TileType, res, sym):
    """``a op= b`` keeps ``a``'s type (NumPy casting 'same_kind'): the result may not widen
    ``a``'s shape or change its dtype category."""
    if res.shape != a.shape:
        raise TileTypingError(f"in-place '{sym}=' would change the shape of the left operand "
                              f"from {a.shape} to {res.shape}; write `a = a {sym} b` instead")
    if category(res.dtype) > category(a.dtype):
        raise TileTypingError(f"in-place '{sym}=' cannot store a {res.dtype} result into a "
                              f"{a.dtype} tile; write `a = a {sym} b` (which makes a new "
                              f"{res.dtype} tile) or convert the right operand with .astype()")
    return a


for _fn in ARITH | TRUEDIV | FLOORDIV | POW | BITWISE | SHIFT | COMPARE | \
        {operator.matmul, operator.imatmul, operator.contains}:
    def _make(fn):
        @raw_function_template(fn, f"operator {operator_symbol(fn)}")
        def _rule(context, args, kws):
            if len(args) != 2 or kws:
                return None
            return _binary(fn, args)
        return _rule
    _make(_fn)


# --------------------------------------------------------------------------------------------------
# Unary operators
def _unary(fn, args):
    (a,) = args
    sym = OPERATOR_SYMBOLS[fn].strip()
    if fn is operator.not_:
        if is_scalar(a):
            if isinstance(a, (types.IntegerLiteral, types.BooleanLiteral)):
                return signature(types.literal(not a.literal_value), a)
            return signature(types.boolean, a)
        if isinstance(a, TileType) and a.ndim == 0:
            return signature(types.boolean, a)
        if isinstance(a, types.BaseTuple):
            return signature(types.literal(len(a.types) == 0), a)
        if isinstance(a, TileType):
            raise TileTypingError(f"'not' of a tile with shape {a.shape} is ambiguous; use "
                                  f"~mask for an element-wise not of a bool tile")
        raise _not_an_operand(a, "not")
    if not (isinstance(a, TileType) or is_scalar(a)):
        raise _not_an_operand(a, sym)
    d = dtype_of(a)
    if is_compute_only(d):
        raise TileTypingError(f"unary '{sym}' on {d} is not supported; convert with .astype")
    if isinstance(a, types.IntegerLiteral):
        v = a.literal_value
        r = {operator.neg: -v, operator.pos: v, operator.invert: ~v}[fn]
        return signature(types.literal(r), a)
    if isinstance(a, types.BooleanLiteral) and fn is not operator.neg:
        v = a.literal_value
        return signature(types.literal((not v) if fn is operator.invert else v), a)
    if fn is operator.neg and d.is_bool:
        raise TileTypingError("unary '-' is not defined for bool operands; use ~ for logical not")
    if fn is operator.invert and d.is_float:
        raise TileTypingError(f"'~' is not defined for floating-point operands "
                              f"({describe_type(a)}); it needs bool or integer operands")
    return signature(a, a)


for _fn in (operator.neg, operator.pos, operator.invert, operator.not_):
    def _make_unary(fn):
        @raw_function_template(fn, f"operator {OPERATOR_SYMBOLS[fn].strip()}")
        def _rule(context, args, kws):
            if len(args) != 1 or kws:
                return None
            return _unary(fn, args)
        return _rule
    _make_unary(_fn)


# --------------------------------------------------------------------------------------------------
# Builtins
@raw_function_template(language.abs, "tile.abs")
def _tile_abs(context, args, kws):
    return _abs(context, args, kws)


@raw_function_template(abs, "abs")
def _abs(context, args, kws):
    if len(args) != 1 or kws:
        raise TileTypingError("abs() takes exactly one argument")
    (a,) = args
    if not (isinstance(a, TileType) or is_scalar(a)):
        raise _not_an_operand(a, "abs")
    if isinstance(a, types.IntegerLiteral):
        return signature(types.literal(abs(a.literal_value)), a)
    if is_compute_only(dtype_of(a)):
        raise TileTypingError(f"abs() of {dtype_of(a)} is not supported; convert with .astype")
    return signature(types.unliteral(a) if is_scalar(a) else a, a)


def _minmax(fn, name, args, kws):
    if kws or len(args) < 2:
        raise TileTypingError(f"{name}() in a kernel takes two or more values (tiles or "
                              f"scalars; element-wise, like tile.{name}imum); for the {name}imum "
                              f"over a tile's axis use tile.{name}(t, axis)")
    for a in args:
        if not (isinstance(a, TileType) or is_scalar(a)):
            raise _not_an_operand(a, name)
    if all(isinstance(a, types.IntegerLiteral) for a in args):
        return signature(types.literal(fn(a.literal_value for a in args)), *args)
    d = result_dtype(args, name)
    tiles = [a for a in args if isinstance(a, TileType)]
    if tiles:       # element-wise over tiles, like tile.maximum / tile.minimum (NaN propagates)
        return signature(elementwise_result(d, *args, what=f"the arguments of {name}()"), *args)
    return signature(value_type(d), *args)


@raw_function_template(min, "min")
def _min(context, args, kws):
    return _minmax(min, "min", args, kws)


@raw_function_template(max, "max")
def _max(context, args, kws):
    return _minmax(max, "max", args, kws)


@raw_function_template(bool, "bool")
def _bool(context, args, kws):
    if len(args) != 1:
        return None
    (a,) = args
    if isinstance(a, TileType):
        if a.ndim == 0:
            return signature(types.boolean, a)
        raise TileTypingError(
            f"the truth value of a tile with shape {a.shape} is ambiguous (in an `if`, `while`, "
            f"`and`/`or`/`not`); reduce it first (tile.max(mask) for any, tile.min(mask) for all) "
            f"or use tile.where for element-wise selection")
    if isinstance(a, (TensorType, PartitionType, TensorPartitionViewType)):
        raise TileTypingError(f"{a} has no truth value")
    return None     # numbers, tuples: Numba's builtin


@raw_function_template(int, "int")
def _int(context, args, kws):
    if len(args) != 1 or kws:
        return None
    (a,) = args
    if isinstance(a, types.IntegerLiteral):
        return signature(a, a)
    if is_scalar(a) or (isinstance(a, TileType) and a.ndim == 0):
        return signature(types.int64, a)
    raise TileTypingError(f"int() needs a scalar, got {describe_type(a)}")


@raw_function_template(float, "float")
def _float(context, args, kws):
    if len(args) != 1 or kws:
        return None
    (a,) = args
    # a string such as float("inf") is checked when lowering folds it
    if isinstance(a, types.StringLiteral) or is_scalar(a) or (isinstance(a, TileType) and
                                                              a.ndim == 0):
        return signature(types.float64, a)
    raise TileTypingError(f"float() needs a scalar or a number string such as 'inf', got "
                          f"{describe_type(a)}")


@raw_function_template(range, "range")
def _range(context, args, kws):
    if kws:
        raise TileTypingError("range() takes no keyword arguments")
    if not 1 <= len(args) <= 3:
        raise TileTypingError(f"range expected 1 to 3 arguments, got {len(args)}")
    # a 0-d integer tile (tile.sum(mask), a loaded element) is a loop bound like a scalar
    args = tuple(scalar_type(a.dtype) if isinstance(a, TileType) and a.ndim == 0 and
                 a.dtype.is_integer else a for a in args)
    for i, a in enumerate(args, 1):
        if not isinstance(types.unliteral(a), types.Integer):
            extra = ""
            if isinstance(a, TileType):
                extra = ("; a tile is a value on the device, not a loop bound: use scalars such as "
                         "x.shape[0], tile.bid(0), tile.cdiv(n, BK) or a kernel argument")
            elif isinstance(types.unliteral(a), types.Float):
                extra = ("; like Python's range(), tile kernels take no float bounds (convert with "
                         "int(...), or loop over an integer counter and scale it)")
            raise TileTypingError(f"range() bounds must be integer scalars, but argument {i} is "
                                  f"{describe_type(a)}{extra}")
    # the integer cases, as Numba types them (range_state32 / 64 / unsigned)
    return context.resolve_overload(range, _NumbaRange.cases, args, kws)


def _math_rule(name):
    def rule(context, args, kws):
        if kws:
            raise TileTypingError(f"math.{name}() takes no keyword arguments")
        for a in args:
            if isinstance(a, TileType) and a.ndim > 0:
                raise TileTypingError(f"math.{name} works on numbers (constants are folded at "
                                      f"compile time); for tiles use tile.{name}")
            if not is_scalar(a) and not isinstance(a, TileType):
                raise TileTypingError(f"math.{name} needs numbers, got {describe_type(a)}")
        res = types.int64 if name in ("ceil", "floor") else types.float64
        return signature(res, *args)
    return rule


for _name in FOLDABLE_MATH:
    _fn = getattr(math, _name, None)
    if _fn is not None:
        raw_function_template(_fn, f"math.{_name}")(_math_rule(_name))


@raw_function_template(len, "len")
def _len(context, args, kws):
    if len(args) != 1:
        return None
    (a,) = args
    if isinstance(a, TileType):
        if a.ndim == 0:
            raise TileTypingError("len() of a rank-0 tile")
        return signature(types.literal(a.shape[0]), a)
    if isinstance(a, (TensorType, PartitionType)):
        raise TileTypingError(f"len() of a {a}: use x.shape[0] (runtime extent) or z.shape[0] "
                              f"(static tile extent)")
    if isinstance(a, types.BaseTuple):
        return signature(types.literal(len(a.types)), a)      # a constant, as tile shapes are
    return None


@raw_function_template(print, "print")
def _print(context, args, kws):
    for i, a in enumerate(args, 1):
        if isinstance(a, TileType) or is_scalar(a):
            continue
        raise TileTypingError(
            f"print() in a kernel accepts only tiles and scalars, but argument {i} is "
            f"{describe_type(a)}; to print text use tile.printf(\"x = %f\\n\", t)")
    return signature(types.none, *args)
