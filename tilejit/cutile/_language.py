"""cuTile Python's kernel language over tilejit's: each ``ct.*`` function is tilejit's own op
(an alias, where the signatures agree) or a ``@tile.function`` adapter that binds cuTile's
signature and defaults and calls tilejit's op. Adapters are inlined into the kernel before
typing, so they add no code: there is one definition of every op (typing, lowering, simulator),
tilejit's.

cuTile's defaults that differ from tilejit's are kept here: ``max``/``min``/``maximum``/
``minimum``/``argmax``/``argmin`` ignore NaNs unless ``propagate_nan=True``; loads pad with an
unspecified value unless ``padding_mode`` says otherwise; ``arange``, ``full``, ``zeros`` and
``ones`` take their dtype as cuTile does.

``flush_to_zero=True`` allows subnormal float32 values to be flushed to zero; where tilejit's op
has no such mode (``max``, ``min``, ``maximum``, ``minimum``, and ``add``/``sub``/``mul``/``sum``
until they get one) the result is computed without flushing (it differs from cuTile's only for
subnormal values). A ``rounding_mode`` other than the default that tilejit cannot honour is a
compile error, never ignored.
"""
from __future__ import annotations

import inspect

from .. import language as L
from ..implicit_casts import implicit_cast as _implicit_cast
from ..language import MemoryOrder, MemoryScope, PaddingMode, RoundingMode, TileFunction
from .. import dtypes as _dt
from ..dtypes import float32 as _float32

_WEAK, _ACQ_REL, _DEVICE = MemoryOrder.WEAK, MemoryOrder.ACQ_REL, MemoryScope.DEVICE


def _helper(fn) -> TileFunction:
    """A cuTile op as a ``@tile.function`` adapter (named ``ct.<name>`` in messages)."""
    return TileFunction(fn)


def _accepts(stub, *names) -> bool:
    """Whether tilejit's ``stub`` takes every keyword in ``names`` (the core grows: forward
    cuTile's keywords as soon as it does)."""
    return stub is not None and all(n in inspect.signature(stub).parameters for n in names)


# --------------------------------------------------------------------------------------------------
# Aliases: tilejit's op has cuTile's positional signature (and accepts cuTile's keywords)
bid = L.bid
num_blocks = L.num_blocks
cdiv = L.cdiv
where = L.where
abs = L.abs
isnan = L.isnan
atan2 = L.atan2
exp = L.exp
exp2 = L.exp2
log = L.log
log2 = L.log2
sqrt = L.sqrt
rsqrt = L.rsqrt
sin, cos, tan = L.sin, L.cos, L.tan
sinh, cosh, tanh = L.sinh, L.cosh, L.tanh
floor, ceil = L.floor, L.ceil
truediv = L.truediv
astype = L.astype
bitcast = L.bitcast
reshape = L.reshape
permute = L.permute
broadcast_to = L.broadcast_to
expand_dims = L.expand_dims
extract = L.extract
insert = L.insert
astile = L.astile
pack_to_bytes = L.pack_to_bytes
unpack_from_bytes = L.unpack_from_bytes
zeros = L.zeros
ones = L.ones
printf = L.printf
static_assert = L.static_assert
static_eval = L.static_eval
divmod = L.divmod_


# --------------------------------------------------------------------------------------------------
# Memory
@_helper
def load(array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
         check_bounds=True, latency=None, allow_tma=None, memory_order=_WEAK,
         memory_scope=None):
    """``ct.load``: the tile of ``shape`` at tile ``index`` of ``array`` (``shape=()``: the one
    element at element ``index``). ``check_bounds=False`` only promises the tile is in bounds:
    tilejit checks anyway (the same values)."""
    if allow_tma is None:
        return L.load(array, index, shape, padding=padding_mode, latency=latency, order=order,
                      memory_order=memory_order, memory_scope=memory_scope)
    return L.load(array, index, shape, padding=padding_mode, latency=latency,
                  allow_tma=allow_tma, order=order, memory_order=memory_order,
                  memory_scope=memory_scope)


@_helper
def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=_WEAK, memory_scope=None):
    """``ct.store``: ``tile`` into the tile space of its shape of ``array`` at tile ``index``
    (a scalar or 0-d tile writes one element), converted to the array's dtype by cuTile's
    implicit conversion rule (a dtype it refuses is a compile error: ``.astype`` first).
    ``latency``/``allow_tma`` are tileiras hints."""
    t = _implicit_cast(tile, array.dtype, "Stored tile is incompatible with array's dtype")
    if allow_tma is None:
        L.store(array, index, t, order=order, memory_order=memory_order,
                memory_scope=memory_scope, latency=latency)
    else:
        L.store(array, index, t, order=order, memory_order=memory_order,
                memory_scope=memory_scope, latency=latency, allow_tma=allow_tma)


@_helper
def num_tiles(array, /, axis, shape, order="C"):
    """``ct.num_tiles``: the number of tiles of ``shape`` along ``axis`` of ``array`` (of the
    axes permuted by ``order``), an int32."""
    if order == "C":
        return array.partition(shape).num_tiles(axis)
    if order == "F":
        return L.cdiv(array.shape[array.ndim - 1 - axis], shape[axis])
    return L.cdiv(array.shape[order[axis]], shape[axis])


@_helper
def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """``ct.gather``: ``array[indices]`` element-wise; out-of-bounds and masked-off elements
    read as ``padding_value`` (converted to the array's dtype by cuTile's implicit rule)."""
    return L.gather(array, indices, mask=mask,
                    other=_implicit_cast(padding_value, array.dtype, "Invalid padding value"),
                    check_bounds=check_bounds, latency=latency)


@_helper
def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """``ct.scatter``: ``array[indices] = value`` element-wise (converted to the array's dtype
    by cuTile's implicit conversion rule, as ``ct.store``); out-of-bounds and masked-off
    elements are skipped."""
    L.scatter(array, indices,
              _implicit_cast(value, array.dtype, "Stored value is incompatible with array's "
                             "dtype"),
              mask=mask, check_bounds=check_bounds, latency=latency)


_BITWISE = ("atomic_and", "atomic_or", "atomic_xor")


def _atomic(core):
    name = core.__name__
    exact = name in _BITWISE

    def adapter(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
                memory_scope=_DEVICE):
        return core(array, indices, _implicit_cast(update, array.dtype, "Update is "
                                                   "incompatible with the target dtype", exact,
                                                   name),
                    memory_order=memory_order, memory_scope=memory_scope)
    adapter.__name__ = adapter.__qualname__ = core.__name__
    adapter.__doc__ = f"``ct.{core.__name__}``: {core.__doc__}"
    return _helper(adapter)


atomic_add = _atomic(L.atomic_add)
atomic_max = _atomic(L.atomic_max)
atomic_min = _atomic(L.atomic_min)
atomic_and = _atomic(L.atomic_and)
atomic_or = _atomic(L.atomic_or)
atomic_xor = _atomic(L.atomic_xor)
atomic_xchg = _atomic(L.atomic_xchg)


@_helper
def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True,
               memory_order=_ACQ_REL, memory_scope=_DEVICE):
    """``ct.atomic_cas``: where ``array[indices] == expected`` store ``desired``; returns the
    old values."""
    return L.atomic_cas(array, indices,
                        _implicit_cast(expected, array.dtype, "Expected value is incompatible "
                                       "with the target dtype", False, "atomic_cas"),
                        _implicit_cast(desired, array.dtype, "Desired value is incompatible "
                                       "with the target dtype"),
                        memory_order=memory_order, memory_scope=memory_scope)


# --------------------------------------------------------------------------------------------------
# Creation
@_helper
def arange(size, /, *, dtype, start=0, step=1):
    """``ct.arange``: ``start, start + step, ..., start + (size - 1) * step`` as ``dtype``."""
    t = L.arange(size, dtype=dtype)
    if step != 1:
        t = (t * step).astype(dtype)
    if start != 0:
        t = (t + start).astype(dtype)
    return t


@_helper
def full(shape, fill_value, dtype):
    """``ct.full``: a tile of ``shape`` filled with ``fill_value`` as ``dtype``."""
    return L.full(shape, fill_value, dtype)


# --------------------------------------------------------------------------------------------------
# Matmul and shape
@_helper
def mma(x, y, /, acc, *, use_fast_acc=False):
    """``ct.mma``: ``x @ y + acc`` in ``acc``'s dtype. ``use_fast_acc`` (fp8 on Hopper): the
    tensor cores' reduced-precision sum (``tile.mma(..., fast_acc=True)``)."""
    if use_fast_acc:
        fp8 = static_eval(x.dtype in (_dt.float8_e4m3fn, _dt.float8_e5m2))
        L.static_assert(fp8, "use_fast_acc is only supported for fp8 inputs (float8_e4m3fn, "
                        "float8_e5m2); drop it for other dtypes")
    return L.mma(x, y, acc, fast_acc=use_fast_acc)


@_helper
def transpose(x, /, axis0=None, axis1=None):
    """``ct.transpose``: swap ``axis0`` and ``axis1``; with neither, the two axes of a 2-d tile
    (as cuTile, a tile of another rank is then an error: ``ct.permute`` says which axes)."""
    if axis0 is None and axis1 is None:
        L.static_assert(x.ndim >= 2, "Cannot transpose a tile with fewer than 2 dimensions")
        L.static_assert(x.ndim <= 2, "`axes` must be specified for tile with more than 2 "
                        "dimensions: ct.transpose(t, axis0, axis1) or ct.permute(t, axes)")
        return L.transpose(x)
    return L.swapaxes(x, axis0, axis1)


@_helper
def cat(tiles, /, axis):
    """``ct.cat``: the two tiles of the pair ``tiles`` joined along ``axis``."""
    return L.cat(tiles[0], tiles[1], axis)


# --------------------------------------------------------------------------------------------------
# Reductions and scans (cuTile: NaNs are ignored unless propagate_nan=True)
@_helper
def _float32_flush(dtype, flush_to_zero):
    # cuTile refuses flush_to_zero on other dtypes (tilejit would only ignore it there)
    if flush_to_zero:
        L.static_assert(dtype == _float32, "Flush to zero can only be used for float32 type: "
                        "convert the operands to float32 or drop flush_to_zero")


@_helper
def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """``ct.max``: the maximum over ``axis``; NaNs are ignored unless ``propagate_nan``."""
    _float32_flush(x.dtype, flush_to_zero)
    return L.max(x, axis, keepdims, propagate_nan=propagate_nan)


@_helper
def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """``ct.min``: the minimum over ``axis``; NaNs are ignored unless ``propagate_nan``."""
    _float32_flush(x.dtype, flush_to_zero)
    return L.min(x, axis, keepdims, propagate_nan=propagate_nan)


@_helper
def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """``ct.argmax``: the int32 index of the first maximum; NaNs ignored unless
    ``propagate_nan``."""
    return L.argmax(x, axis, keepdims, propagate_nan=propagate_nan)


@_helper
def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """``ct.argmin``: the int32 index of the first minimum; NaNs ignored unless
    ``propagate_nan``."""
    return L.argmin(x, axis, keepdims, propagate_nan=propagate_nan)


@_helper
def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """``ct.maximum``: element-wise maximum; a NaN operand gives the other one unless
    ``propagate_nan``."""
    r = L.maximum(x, y, propagate_nan=propagate_nan)
    _float32_flush(r.dtype, flush_to_zero)
    return r


@_helper
def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """``ct.minimum``: element-wise minimum; a NaN operand gives the other one unless
    ``propagate_nan``."""
    r = L.minimum(x, y, propagate_nan=propagate_nan)
    _float32_flush(r.dtype, flush_to_zero)
    return r


@_helper
def reduce(x, /, axis, func, identity, *, keepdims=False):
    """``ct.reduce``: reduce ``x`` over ``axis`` with ``func`` (a helper of two scalars)."""
    return L.reduce(x, axis, func, identity, keepdims)


@_helper
def scan(x, /, axis, func, identity, *, reverse=False):
    """``ct.scan``: inclusive scan of ``x`` along ``axis`` with ``func``."""
    return L.scan(x, axis, func, identity, reverse)


def _rounded(core, name: str, verb: str, kind: str):
    """``ct.<name>``: tilejit's ``core`` itself when it takes ``rounding_mode``/
    ``flush_to_zero``, else an adapter calling it without them; a ``rounding_mode`` it cannot
    honour is then a compile error (``flush_to_zero`` only permits flushing)."""
    if _accepts(core, "rounding_mode", "flush_to_zero"):
        return core
    message = f"ct.{name}: tilejit {verb} with round-to-nearest only; drop rounding_mode"

    def reduction(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
        if rounding_mode is not None:
            L.static_assert(False, message)
        return core(x, axis, keepdims)

    def scan(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
        if rounding_mode is not None:
            L.static_assert(False, message)
        return core(x, axis, reverse)

    def binary(x, y, /, *, rounding_mode=None, flush_to_zero=False):
        if rounding_mode is not None:
            L.static_assert(False, message)
        return core(x, y)

    fn = {"reduction": reduction, "scan": scan, "binary": binary}[kind]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``ct.{name}``: tilejit's ``{getattr(core, 'name', core.__name__)}`` with " \
                 f"cuTile's signature."
    return _helper(fn)


_NARROW_INTS = (_dt.int8, _dt.int16, _dt.uint8, _dt.uint16)


@_helper
def _own_dtype(r, x):
    # cuTile sums and multiplies integers narrower than 32 bits in their own dtype (wrapping);
    # tilejit's ops widen them to int32 as NumPy does. The two agree modulo the narrow range,
    # so converting back gives cuTile's values and dtype (ct.store checks the dtype)
    return r.astype(L.static_eval(x.dtype if x.dtype in _NARROW_INTS else r.dtype))


def _narrow_kept(inner, name: str, kind: str):
    if kind == "reduction":
        def fn(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
            return _own_dtype(inner(x, axis, keepdims, rounding_mode=rounding_mode,
                                    flush_to_zero=flush_to_zero), x)
    else:
        def fn(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
            return _own_dtype(inner(x, axis, reverse, rounding_mode=rounding_mode,
                                    flush_to_zero=flush_to_zero), x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``ct.{name}``: tilejit's op with cuTile's signature; narrow integers keep " \
                 f"their dtype."
    return _helper(fn)


#: operand dtypes whose product cuTile returns in that dtype, where tilejit's ``@`` widens it
#: (int32 for int8/uint8, float32 for float8)
_NARROW_MMA = (_dt.int8, _dt.uint8, _dt.float8_e4m3fn, _dt.float8_e5m2)


#: float dtypes cuTile's matmul promotes to the wider of two (float16 with bfloat16 it refuses)
_MATMUL_PROMOTES = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)


def _matmul_dtype(a, b):
    """The dtypes ``ct.matmul`` converts its operands to: both the wider float where cuTile
    promotes, else their own (tilejit's ``@`` then accepts them or says why not)."""
    if a is b or {a, b} == {_dt.float16, _dt.bfloat16} or not (a in _MATMUL_PROMOTES
                                                              and b in _MATMUL_PROMOTES):
        return a, b
    wide = a if a.bits > b.bits else b
    return wide, wide


@_helper
def matmul(x, y, /):
    """``ct.matmul``: tilejit's ``@``, with cuTile's result dtype (the operands' own for int8,
    uint8 and float8, wrapping or rounding as cuTile does); two float dtypes are promoted to the
    wider. A 1-D operand is a row (``x``) or a column (``y``) whose axis the result drops, as in
    ``numpy.matmul``."""
    # (static shapes, no branch: a helper's tile ranks are only known while typing)
    d = L.static_eval(_matmul_dtype(x.dtype, y.dtype))
    row = L.reshape(x, L.static_eval((1,) + x.shape if x.ndim == 1 else x.shape)).astype(d[0])
    column = L.reshape(y, L.static_eval(y.shape + (1,) if y.ndim == 1 else y.shape)).astype(d[1])
    r = L.matmul(row, column)
    r = L.reshape(r, L.static_eval(r.shape[:r.ndim - 2] + (r.shape[-2:-1] if x.ndim > 1 else ())
                                   + (r.shape[-1:] if y.ndim > 1 else ())))
    return r.astype(L.static_eval(x.dtype if x.dtype in _NARROW_MMA and x.dtype == y.dtype
                                  else r.dtype))


sum = _narrow_kept(_rounded(L.sum, "sum", "sums", "reduction"), "sum", "reduction")
prod = _narrow_kept(_rounded(L.prod, "prod", "multiplies", "reduction"), "prod", "reduction")
cumsum = _narrow_kept(_rounded(L.cumsum, "cumsum", "sums", "scan"), "cumsum", "scan")
cumprod = _narrow_kept(_rounded(L.cumprod, "cumprod", "multiplies", "scan"), "cumprod", "scan")
@_helper
def _plus(x, y):
    return x + y


@_helper
def _minus(x, y):
    return x - y


@_helper
def _times(x, y):
    return x * y


add = _rounded(getattr(L, "add", _plus), "add", "adds", "binary")
sub = _rounded(getattr(L, "sub", _minus), "sub", "subtracts", "binary")
mul = _rounded(getattr(L, "mul", _times), "mul", "multiplies", "binary")


@_helper
def floordiv(x, y, /):
    """``ct.floordiv``: ``x // y``."""
    return x // y


@_helper
def mod(x, y, /):
    """``ct.mod``: ``x % y`` (the sign of ``y``, as Python)."""
    return x % y


@_helper
def pow(x, y, /):
    """``ct.pow``: ``x ** y``."""
    return x ** y


@_helper
def negative(x, /):
    """``ct.negative``: ``-x``."""
    return -x


@_helper
def bitwise_and(x, y, /):
    """``ct.bitwise_and``: ``x & y``."""
    return x & y


@_helper
def bitwise_or(x, y, /):
    """``ct.bitwise_or``: ``x | y``."""
    return x | y


@_helper
def bitwise_xor(x, y, /):
    """``ct.bitwise_xor``: ``x ^ y``."""
    return x ^ y


@_helper
def bitwise_lshift(x, y, /):
    """``ct.bitwise_lshift``: ``x << y``."""
    return x << y


@_helper
def bitwise_rshift(x, y, /):
    """``ct.bitwise_rshift``: ``x >> y``."""
    return x >> y


@_helper
def bitwise_not(x, /):
    """``ct.bitwise_not``: ``~x``."""
    return ~x


@_helper
def equal(x, y, /):
    """``ct.equal``: ``x == y``."""
    return x == y


@_helper
def not_equal(x, y, /):
    """``ct.not_equal``: ``x != y``."""
    return x != y


@_helper
def less(x, y, /):
    """``ct.less``: ``x < y``."""
    return x < y


@_helper
def less_equal(x, y, /):
    """``ct.less_equal``: ``x <= y``."""
    return x <= y


@_helper
def greater(x, y, /):
    """``ct.greater``: ``x > y``."""
    return x > y


@_helper
def greater_equal(x, y, /):
    """``ct.greater_equal``: ``x >= y``."""
    return x >= y


# --------------------------------------------------------------------------------------------------
# Misc
@_helper
def assert_(cond, /, message=None):
    """``ct.assert_``: trap when an element of ``cond`` is False."""
    L.assert_(cond, message)


@_helper
def assume_divisible_by(x, divisor):
    """``ct.assume_divisible_by``: promise that the integer ``x`` is a multiple of
    ``divisor``; returns ``x``."""
    return L.assume_divisible_by(x, divisor)


# What tilejit's core gets with issue 25.1 (engineer `language`): the core's own op when this
# build has it, else a compile error that says so.
@_helper
def _static_iter_missing(iterable):
    L.static_assert(False, "ct.static_iter is not in this tilejit build yet (issue 25.1)")


@_helper
def _mma_scaled_missing(x, x_scale, y, y_scale, /, acc):
    L.static_assert(False, "ct.mma_scaled is not in this tilejit build yet (issue 25.1)")


# advanced indexing is written with the adapters above
from ._indexing import Slice, load_advanced_indexing, store_advanced_indexing  # noqa: E402,F401

static_iter = getattr(L, "static_iter", _static_iter_missing)
mma_scaled = getattr(L, "mma_scaled", _mma_scaled_missing)

__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and
                 (isinstance(v, TileFunction) or L.is_stub(v)))
