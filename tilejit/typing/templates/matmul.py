"""``mma(a, b, acc)``, ``matmul(a, b)`` and the ``@`` operator.

Shapes: ``a (M, K) @ b (K, N) -> (M, N)``, or batched ``(B, M, K) @ (B, K, N) -> (B, M, N)``; the
batch axis broadcasts like ``numpy.matmul`` (``(B, M, K) @ (K, N)``, ``(1, M, K) @ (B, K, N)``).
Input dtypes (``a`` and ``b`` must match) and accumulators:

=====================================  ======================  ====================
inputs                                 ``mma`` accumulator      ``a @ b`` result
=====================================  ======================  ====================
float16                                float32 or float16      float16
bfloat16                               float32                 bfloat16
tfloat32 / float32                     float32                 float32
float8_e4m3fn / float8_e5m2            float32 or float16      float32
float64                                float64                 float64
int8 / uint8 (mixed too)               int32                   int32
=====================================  ======================  ====================

The two float8 formats do not mix (Tile IR's ``mmaf`` takes one element type for both inputs).
``input_precision`` (float32 inputs only; None, "ieee", "float32", "tf32", "tf32x3") must be a
constant string.
"""
from __future__ import annotations

from ... import dtypes as dt
from ... import language
from ..diagnostics import TileTypingError, describe_type
from ..promotion import refuse_as_cutile
from ..types import TileType
from ._base import NOT_STATIC, bool_arg, function_rule, is_none, static_value

_ACC = {
    dt.float16: (dt.float32, dt.float16), dt.bfloat16: (dt.float32,),
    dt.tfloat32: (dt.float32,), dt.float32: (dt.float32,),
    dt.float8_e4m3fn: (dt.float32, dt.float16), dt.float8_e5m2: (dt.float32, dt.float16),
    dt.float64: (dt.float64,), dt.int8: (dt.int32,), dt.uint8: (dt.int32,),
}
_MATMUL_OUT = {dt.float16: dt.float16, dt.bfloat16: dt.bfloat16, dt.tfloat32: dt.float32,
               dt.float32: dt.float32, dt.float8_e4m3fn: dt.float32, dt.float8_e5m2: dt.float32,
               dt.float64: dt.float64, dt.int8: dt.int32, dt.uint8: dt.int32}


def _operands(a, b, op):
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, TileType) or t.ndim not in (2, 3):
            raise TileTypingError(f"{op}: {name} must be a 2-D or 3-D (batched) tile, got "
                                  f"{describe_type(t)}")
    if a.dtype is not b.dtype:
        if {a.dtype, b.dtype} <= {dt.float8_e4m3fn, dt.float8_e5m2}:
            raise TileTypingError(
                f"{op}: a is {a.dtype} and b is {b.dtype}: the tensor cores multiply one float8 "
                f"format at a time; convert one operand (b.astype({_name(a.dtype)})), or both to "
                f"tile.float16")
        if not {a.dtype, b.dtype} <= {dt.int8, dt.uint8}:
            raise TileTypingError(f"{op}: a and b must have the same dtype, got {a.dtype} and "
                                  f"{b.dtype}; convert one with .astype()")
    if a.dtype not in _ACC:
        raise TileTypingError(f"{op}: Unsupported input dtype {a.dtype} (supported: "
                              f"{', '.join(d.name for d in _ACC)})")
    return matmul_shape(a.shape, b.shape, op)


def matmul_shape(sa, sb, op):
    """The result shape of ``(..., M, K) @ (..., K, N)``: the batch axis broadcasts as in
    ``numpy.matmul`` (a missing or extent-1 batch axis stretches)."""
    *ba, m, k = sa
    *bb, k2, n = sb
    batch = ba or bb
    if ba and bb and ba != bb:
        batch = bb if ba == [1] else ba if bb == [1] else None
    if k != k2 or batch is None:
        raise TileTypingError(
            f"{op}: shape mismatch: a is {tuple(sa)} and b is {tuple(sb)}; need a=(M, K) and "
            f"b=(K, N), with a leading batch axis on either (or both: equal extents, or one of "
            f"them 1)")
    return tuple(batch) + (m, n)


def _name(d) -> str:
    return f"tile.{d.name}"


def input_precision_arg(ty, op: str):
    """The ``input_precision=`` of ``op`` (None or one of ``language.INPUT_PRECISIONS``)."""
    if is_none(ty):
        return None
    v = static_value(ty)
    if v is NOT_STATIC or not isinstance(v, str) or v not in language.INPUT_PRECISIONS:
        shown = repr(v) if v is not NOT_STATIC else describe_type(ty)
        raise TileTypingError(
            f"{op}: input_precision must be None or one of "
            f"{', '.join(repr(p) for p in language.INPUT_PRECISIONS)} (a constant string), got "
            f"{shown}")
    return v


@function_rule(language.mma)
def _mma(bd):
    a, b, acc = bd.a, bd.b, bd.acc
    input_precision_arg(bd.input_precision, "tile.mma")
    bool_arg(bd.fast_acc, "tile.mma: fast_acc")
    out = _operands(a, b, "tile.mma")
    if not isinstance(acc, TileType):
        raise TileTypingError(f"tile.mma: acc must be a tile, got {describe_type(acc)}")
    if acc.shape != out:
        raise TileTypingError(
            f"tile.mma: shape mismatch: a is {a.shape}, b is {b.shape} and acc is {acc.shape}; "
            f"acc must be {out} (a=(M, K), b=(K, N), acc=(M, N))")
    if acc.dtype not in _ACC[a.dtype]:
        ok = " or ".join(d.name for d in _ACC[a.dtype])
        raise TileTypingError(f"tile.mma: Unsupported acc dtype {acc.dtype}: {a.dtype} inputs "
                              f"need a {ok} accumulator")
    return acc


def matmul_result(a, b):
    if isinstance(a, TileType) and isinstance(b, TileType):
        # cuTile promotes `a @ b`'s operands to one dtype first (uint8 with int8: none)
        refuse_as_cutile(a.dtype, b.dtype, "@")
    out = _operands(a, b, "a @ b")
    return TileType(_MATMUL_OUT[a.dtype], out)


def _scaled_operand(x, s, op, xname, sname, k_axis):
    if not isinstance(x, TileType) or x.ndim not in (2, 3):
        raise TileTypingError(f"{op}: {xname} must be a 2-D or 3-D (batched) tile, got "
                              f"{describe_type(x)}")
    if not isinstance(s, TileType) or s.ndim != x.ndim:
        raise TileTypingError(f"{op}: {sname} must be a tile of {xname}'s rank ({x.ndim}), got "
                              f"{describe_type(s)}")
    other = tuple(d for i, d in enumerate(x.shape) if i != x.ndim + k_axis)
    s_other = tuple(d for i, d in enumerate(s.shape) if i != s.ndim + k_axis)
    if other != s_other or x.shape[k_axis] % s.shape[k_axis]:
        raise TileTypingError(f"{op}: {sname} {s.shape} does not fit {xname} {x.shape}: it must "
                              f"have {xname}'s shape with the K axis divided by the scale block")
    return x.shape[k_axis] // s.shape[k_axis]


@function_rule(language.mma_scaled)
def _mma_scaled(bd):
    op = "tile.mma_scaled"
    a, sa, b, sb, acc = bd.a, bd.a_scale, bd.b, bd.b_scale, bd.acc
    block = _scaled_operand(a, sa, op, "a", "a_scale", -1)
    if _scaled_operand(b, sb, op, "b", "b_scale", -2) != block:
        raise TileTypingError(f"{op}: a_scale {sa.shape} and b_scale {sb.shape} scale blocks of "
                              f"different sizes along K")
    if a.dtype is not b.dtype or sa.dtype is not sb.dtype:
        raise TileTypingError(f"{op}: a and b must share a dtype, and so must the scales; got "
                              f"{a.dtype}, {b.dtype} with {sa.dtype}, {sb.dtype} scales")
    blocks = language.MMA_SCALED_FORMATS.get((a.dtype.name, sa.dtype.name))
    if blocks is None:
        ok = "; ".join(f"{i} with {s} scales" for i, s in language.MMA_SCALED_FORMATS)
        raise TileTypingError(f"{op}: {a.dtype} inputs with {sa.dtype} scales are not supported "
                              f"(supported: {ok})")
    if block not in blocks:
        raise TileTypingError(f"{op}: {a.dtype} with {sa.dtype} scales takes scale blocks of "
                              f"{' or '.join(map(str, blocks))} elements along K, but "
                              f"a{a.shape} / a_scale{sa.shape} gives {block}")
    out = matmul_shape(a.shape, b.shape, op)
    if not isinstance(acc, TileType) or acc.dtype is not dt.float32 or acc.shape != out:
        raise TileTypingError(f"{op}: acc must be a float32 tile of shape {out}, got "
                              f"{describe_type(acc)}")
    return acc


@function_rule(language.matmul)
def _matmul(bd):
    input_precision_arg(bd.input_precision, "tile.matmul")
    return matmul_result(bd.a, bd.b)
