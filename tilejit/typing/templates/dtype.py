"""Conversions: ``astype`` (``t.astype(d)`` too) and ``bitcast``; dtype values (``tile.float32``
is a ``DTypeType``, as is ``x.dtype``)."""
from __future__ import annotations

from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import check_wide_int
from ..types import TileType, dtype_of, is_scalar, value_type
from ._base import dtype_arg, enum_arg, function_rule, method_rule


_DIRECTED = ("RZ", "RM", "RP")


def _astype(b):
    t = b.t
    d = dtype_arg(b.dtype, "astype: dtype")
    mode = enum_arg(b.rounding_mode, language.RoundingMode, "astype: rounding_mode")
    src = dtype_of(t)
    if mode is not None and mode is not language.RoundingMode.RN and src is not None:
        if mode.name not in _DIRECTED:
            raise TileTypingError(f"astype: rounding_mode must be RoundingMode.RN, RZ, RM or RP, "
                                  f"got RoundingMode.{mode.name} (approximate modes apply to "
                                  f"math functions, not conversions)")
        if not (src.is_float and d.is_float):
            raise TileTypingError(
                f"astype: rounding_mode RoundingMode.{mode.name} applies to float -> float "
                f"conversions only; {src} -> {d} always rounds "
                f"{'to nearest even' if d.is_float else 'toward zero'} (drop rounding_mode)")
    if d.name == "float8_e8m0fnu" and mode is not None and mode.name not in ("RZ", "RP"):
        raise TileTypingError(f"astype to float8_e8m0fnu rounds toward zero (the default, "
                              f"RoundingMode.RZ) or up (RoundingMode.RP), not "
                              f"RoundingMode.{mode.name}")
    if isinstance(t, TileType):
        return t.copy(dtype=d)
    if is_scalar(t):
        check_wide_int(t, d, "astype")
        return value_type(d)
    raise TileTypingError(f"astype needs a tile or scalar, got {describe_type(t)}")


function_rule(language.astype)(_astype)
method_rule(TileType, "astype", language.astype)(_astype)


def _bitcast(b):
    t = b.t
    d = dtype_arg(b.dtype, "bitcast: dtype")
    if not isinstance(t, TileType) and not is_scalar(t):
        raise TileTypingError(f"bitcast needs a tile or scalar, got {describe_type(t)}")
    src = dtype_of(t)
    if src.bits != d.bits or src.is_bool or d.is_bool:
        raise TileTypingError(f"bitcast: {src} ({src.bits} bits) cannot be reinterpreted as {d} "
                              f"({d.bits} bits); the widths must match (and bool has no bit "
                              f"pattern); use .astype() to convert values")
    if isinstance(t, TileType):
        return t.copy(dtype=d)
    return value_type(d)


function_rule(language.bitcast)(_bitcast)
method_rule(TileType, "bitcast", language.bitcast)(_bitcast)
