"""Random numbers: ``randint4x``, ``randint``, ``rand``, ``randn`` (``seed``, ``offsets``).

``seed`` is an integer scalar or 0-d tile; ``offsets`` an integer tile or scalar. The results
have ``offsets``' shape: ``uint32`` words, or ``float32`` numbers (scalars give scalars).
"""
from __future__ import annotations

from numba.core import types

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..types import TileType, dtype_of, is_scalar, value_type
from ._base import function_rule


def _check(b, op):
    s, o = b.seed, b.offsets
    d = dtype_of(s)
    if d is None or not d.is_integer or not (is_scalar(s) or (isinstance(s, TileType) and
                                                              s.ndim == 0)):
        raise TileTypingError(f"{op}: seed must be an integer scalar (a kernel argument or a "
                              f"constant), got {describe_type(s)}")
    if isinstance(s, types.IntegerLiteral) and not 0 <= s.literal_value < 1 << 64:
        # api.rand's range; a run-time seed is checked at the call (lowering.handlers.random)
        raise TileTypingError(f"{op}: seed {s.literal_value} is out of range: seeds are ints in "
                              f"[0, 2**64), as in api.rand (use a non-negative seed, e.g. "
                              f"{s.literal_value % (1 << 64)} for the same bits)")
    d = dtype_of(o)
    if d is None or not d.is_integer or not (is_scalar(o) or isinstance(o, TileType)):
        raise TileTypingError(f"{op}: offsets must be an integer tile or scalar (e.g. "
                              f"tile.bid(0) * BLOCK + tile.arange(BLOCK)), got {describe_type(o)}")
    return o.shape if isinstance(o, TileType) else ()


def _result(d, shape):
    return TileType(d, shape) if shape else value_type(d)


@function_rule(language.randint4x)
def _randint4x(b):
    return types.UniTuple(_result(dt.uint32, _check(b, "tile.randint4x")), 4)


@function_rule(language.randint)
def _randint(b):
    return _result(dt.uint32, _check(b, "tile.randint"))


@function_rule(language.rand)
def _rand(b):
    return _result(dt.float32, _check(b, "tile.rand"))


@function_rule(language.randn)
def _randn(b):
    return _result(dt.float32, _check(b, "tile.randn"))
