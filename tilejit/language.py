"""The kernel language: the functions, enums and annotations used inside ``@tile.entry`` kernels.

Everything here is a *stub*: the function bodies never run. Inside a kernel the typing layer
(``tilejit/typing/templates``) gives each stub a type rule and lowering turns it into Tile IR; the
Python signature of each stub is the public signature (lowering binds call arguments against it).
Calling a stub on the host raises :class:`tilejit.TileJitError`, except :func:`cdiv` and
:func:`static_assert`, which also work on the host.

Vocabulary used in the docstrings:

* *tile*: an immutable value with a static power-of-two shape and a dtype. A rank-0 tile is a scalar.
* *scalar*: a Python/NumPy number inside a kernel (kernel arguments, ``tile.bid(0)``, loop indices).
  Scalars are *weak* in mixed expressions: ``t * 2.0`` keeps ``t``'s dtype (see ``docs/typing.md``).
* *Tensor*: a read-only global-memory array argument. *Partition*: the tile-shaped region of a
  partitioned output that the current block owns (``z.store(t)`` writes it).
* ``index`` arguments count in units of tiles (``x.load((i, k), (BM, BK))`` reads rows
  ``i*BM .. i*BM+BM-1``), like ``cuda.tile.load``.
"""
from __future__ import annotations

import builtins as _builtins
import enum
import functools
import inspect
import operator as _operator
import re
import typing as _typing

from .errors import TileJitError
# the element-wise stubs and their tables live in language_math.py; the stub machinery in stubs.py
from .language_math import (  # noqa: F401  (re-exported)
    KEEPS_INTEGERS, MATH_ACCURACY, MATH_FLUSH_TO_ZERO, MATH_ROUNDING, UNARY_MATH, abs, acos, acosh,
    add, asin, asinh, atan, atan2, atanh, cbrt, ceil, copysign, cos, cosh, erf, erfc, erfinv, exp,
    exp2, expm1, floor, fma, fmod, isfinite, isinf, isnan, log, log1p, log2, log10, maximum,
    minimum, mul, pow, rint, round, rsqrt, sigmoid, signbit, sin, sinh, sqrt, sub, tan, tanh,
    trunc, truediv, where)
from .stubs import _host_call_error, _named_stub, _stub, is_stub  # noqa: F401  (re-exported)

__all__ = [
    # annotations, decorators, host helpers
    "Constant", "function", "TileFunction", "cdiv", "static_assert", "static_eval", "constant_parameters",
    "constant_annotations", "static_range", "static_iter",
    # enums and warnings
    "PaddingMode", "RoundingMode", "MemoryOrder", "MemoryScope", "TransposeWarning",
    # grid
    "bid", "num_blocks",
    # memory
    "load_tile_like", "load", "store", "gather", "scatter",
    "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and", "atomic_or",
    "atomic_xor",
    # creation
    "zeros", "ones", "full", "arange",
    # elementwise
    "where", "minimum", "maximum", "truediv", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
    "tan", "sinh", "cosh", "tanh", "floor", "ceil", "isnan", "atan2", "fma",
    "erf", "erfc", "erfinv", "log1p", "expm1", "log10", "sigmoid", "cbrt", "asin", "acos", "atan",
    "asinh", "acosh", "atanh", "trunc", "round", "rint", "isinf", "isfinite", "signbit", "pow",
    "fmod", "copysign", "add", "sub", "mul",
    # random numbers
    "rand", "randn", "randint", "randint4x",
    # reductions and scans
    "sum", "max", "min", "prod", "argmax", "argmin", "reduce", "cumsum", "cumprod", "scan",
    # matmul
    "mma", "matmul", "mma_scaled",
    # shape and dtype
    "reshape", "permute", "transpose", "swapaxes", "broadcast_to", "expand_dims", "cat", "extract", "astype",
    "bitcast", "astile", "insert", "pack_to_bytes", "unpack_from_bytes",
    # misc
    "printf", "assert_", "assume_divisible_by",
]


# --------------------------------------------------------------------------------------------------
# Constant parameters
class _ConstantMarker:
    """The metadata object inside ``Annotated[T, _CONSTANT]``."""

    def __repr__(self):
        return "tile.Constant"


_CONSTANT = _ConstantMarker()


class Constant:
    """Annotation for compile-time constant kernel parameters: ``BM: tile.Constant[int]``.

    The value is folded into the kernel before typing (dead ``if CONST:`` branches are never
    typed) and each distinct value is its own specialization. Allowed values: ``int``, ``float``,
    ``bool``, tuples of these, and also ``tile`` dtypes and enum members. Constant parameters take
    no slot in the kernel ABI.
    """

    def __class_getitem__(cls, tp):
        return _typing.Annotated[tp, _CONSTANT]

    def __init__(self, *a, **k):
        raise TypeError("tile.Constant is an annotation: write `x: tile.Constant[int]`")


def _is_constant_annotation(ann) -> bool:
    if ann is inspect.Parameter.empty:
        return False
    if ann is Constant:             # bare `x: Constant` (cuTile allows it): a constant of any type
        return True
    if isinstance(ann, str):
        # An annotation that could not be evaluated (``from __future__ import annotations`` with a
        # name that is not global): recognise the spelling.
        return "Constant[" in ann.replace(" ", "")
    return _CONSTANT in getattr(ann, "__metadata__", ())


def constant_parameters(pyfunc) -> tuple:
    """Names of ``pyfunc``'s parameters annotated ``tile.Constant[...]``, in parameter order."""
    return tuple(constant_annotations(pyfunc))


_STRING_TYPES = {"int": int, "float": float, "bool": bool}


def constant_annotations(pyfunc) -> dict:
    """``{name: T}`` for ``pyfunc``'s parameters annotated ``tile.Constant[T]``, in parameter
    order (``T`` is None when the annotation is an unevaluated string naming something else)."""
    try:
        hints = _typing.get_type_hints(pyfunc, include_extras=True)
    except Exception:       # unresolvable string annotations: fall back to the raw ones
        hints = dict(getattr(pyfunc, "__annotations__", {}))
    out = {}
    for p in inspect.signature(pyfunc).parameters.values():
        ann = hints.get(p.name, p.annotation)
        if not _is_constant_annotation(ann):
            continue
        if isinstance(ann, str):
            inner = ann.replace(" ", "").split("Constant[", 1)[1].rstrip("]")
            out[p.name] = _STRING_TYPES.get(inner)
        else:
            out[p.name] = getattr(ann, "__origin__", None)
    return out


# --------------------------------------------------------------------------------------------------
# Device helpers
class TileFunction:
    """A ``@tile.function`` device helper. Calls from kernels are inlined before typing."""

    def __init__(self, py_func):
        if not inspect.isfunction(py_func):
            raise TypeError(f"@tile.function expects a Python function, got {py_func!r}")
        self.py_func = py_func
        functools.update_wrapper(self, py_func)

    @property
    def name(self) -> str:
        return self.py_func.__name__

    def __call__(self, *args, **kwargs):
        raise TileJitError(
            f"@tile.function '{self.name}' can only be called from a kernel (it is inlined into "
            f"the caller); call {self.name}.py_func(...) to run the Python source on the host")

    def __repr__(self):
        return f"<tile.function {self.py_func.__qualname__}>"


def function(py_func=None):
    """Decorator for device helpers callable from kernels: ``@tile.function``.

    Helpers may take tiles, tensors, partitions and scalars, may return values (tuples too) and
    may call other helpers. They are inlined at each call site, so constant arguments stay
    constant inside them. Recursion is rejected.
    """
    if py_func is None:
        return function
    return TileFunction(py_func)


# --------------------------------------------------------------------------------------------------
# Host-and-kernel helpers
def cdiv(a, b):
    """Ceiling division ``(a + b - 1) // b`` for non-negative ints; works on the host too.

    In a kernel it accepts scalars (two literals fold to a literal) and integer tiles.
    """
    return -(-a // b)


cdiv.__tile_stub__ = "cdiv"     # also a kernel-language function (typed like the stubs)


#: names from Triton and Numba-CUDA that users reach for, and tilejit's spelling (the module's
#: AttributeError and the kernel typing's unknown-attribute error say it)
OTHER_SPELLINGS = {
    "program_id": "tile.bid(axis)", "num_programs": "tile.num_blocks(axis)",
    "constexpr": "tile.Constant[int]", "jit": "@tile.entry (kernels) or @tile.function (helpers)",
    "kernel": "@tile.entry", "to": "t.astype(dtype)", "dot": "tile.mma(a, b, acc) or a @ b",
    "num_warps": "num_worker_warps=", "grid": "kernel(...).grid((gx, gy, gz))",
    "threadIdx": "tile.bid(axis) (tiles, not threads: a block works on whole tiles)",
    "blockIdx": "tile.bid(axis)"}


def static_assert(cond, msg=None):
    """Compile-time assertion. ``cond`` must be a compile-time constant inside a kernel.

    On the host it is an ordinary assertion that raises ``AssertionError(msg)``.
    """
    if not cond:
        raise AssertionError(msg if msg is not None else "static assertion failed")


static_assert.__tile_stub__ = "static_assert"


def static_eval(expr):
    """The value of the Python expression ``expr``, computed at compile time: constants, tuples
    of them, dtypes, what a variable's type says (``static_eval(t.shape)``), or one of the
    kernel's variables (``static_eval(a if N == 0 else b)``). Must be called directly by name
    inside a kernel; on the host it returns ``expr``."""
    return expr


static_eval.__tile_stub__ = "static_eval"


def _static_eval(key, src, names, *values):
    """What the front end makes of ``static_eval(expr)`` (typing/static_eval.py); never written
    by hand."""
    raise RuntimeError("tilejit internal: _static_eval outside a kernel")


_static_eval.__tile_stub__ = "_static_eval"


@_stub
def static_range(*args):
    """``for i in tile.static_range(n)`` (or ``(start, stop[, step])``, compile-time constant
    ints): the loop is unrolled at compile time, so ``i`` is a constant in each copy of the body
    (usable in tile shapes, ``extract`` indices, tuple indices). Only as a ``for`` iterable."""


@_stub
def static_iter(values):
    """``for x in tile.static_iter(tup)``: one copy of the loop body per element of the tuple
    ``tup`` (its length known at compile time: a tuple expression, a tuple argument of arrays or
    a constant), so the elements may differ in type. Only as a ``for`` iterable."""


# --------------------------------------------------------------------------------------------------
# Enums (values are the Tile IR spellings; lowering should match on members, not values)
class PaddingMode(enum.Enum):
    """Value of out-of-bounds elements on load."""
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class RoundingMode(enum.Enum):
    """Rounding of float conversions and arithmetic."""
    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RZI = "nearest_int_to_zero"
    FULL = "full"
    APPROX = "approx"


class MemoryOrder(enum.Enum):
    """Memory ordering of atomics, loads and stores (``memory_order=``).

    ``ACQUIRE`` (atomics, loads): every later memory operation of the block happens after it.
    ``RELEASE`` (atomics, stores): every earlier memory operation of the block happens before it.
    ``ACQ_REL`` (atomics): both. ``RELAXED``: atomic, but orders nothing else. ``WEAK`` (loads
    and stores, their default): a plain access, not for synchronization.
    """
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    """Who the ordering is with (``memory_scope=``): the tile block, the device or the system.
    ``NONE`` (cuTile's name) is no scope, the same as ``memory_scope=None``: what a weak access
    has; an ordered access with ``NONE`` is an error (it needs a scope)."""
    NONE = "none"
    BLOCK = "tl_blk"
    DEVICE = "device"
    SYS = "sys"


class TransposeWarning(UserWarning):
    """Warned when a kernel compiles: an explicit permutation given to ``transpose`` is the
    identity (``t.transpose(0, 1)`` on a 2-d tile). ``transpose`` follows NumPy (the complete new
    order of the axes), not torch or cuTile (two axes to swap), so that call does nothing; the
    swap is ``tile.swapaxes(t, 0, 1)``, the reversal ``t.transpose()`` or ``t.T``. The warning
    points at the call's file and line."""


# --------------------------------------------------------------------------------------------------
# Grid
@_stub
def bid(axis):
    """Index of the current block along ``axis`` (0, 1 or 2; a constant); an ``int32`` scalar."""


@_stub
def num_blocks(axis):
    """Number of blocks of the grid along ``axis`` (0, 1 or 2; a constant); an ``int32`` scalar."""


# --------------------------------------------------------------------------------------------------
# Load / store
@_stub
def load_tile_like(x, z):
    """Load the tile of tensor ``x`` at partition ``z``'s block position, with ``z``'s tile shape.

    ``x`` must have ``z``'s rank. Elements past the edge of ``x`` are unspecified (the store to
    ``z`` skips them anyway); use ``x.load(z.block, z.shape, padding=...)`` where they are reduced.
    Returns a tile of ``x.dtype`` and shape ``z.shape``.
    """


@_stub
def load(x, index, shape, padding=PaddingMode.ZERO, latency=None, allow_tma=True, order=None,
         memory_order=MemoryOrder.WEAK, memory_scope=None, check_bounds=True, box_width=None):
    """``x.load(index, shape, ...)`` as a function: the tile of shape ``shape`` at tile ``index``.

    ``index`` is a tuple of ints (or one int for 1-D tensors) in units of tiles; ``shape`` a
    constant tuple of powers of two with ``x.ndim`` entries, or ``()`` for the single element at
    element ``index`` (a 0-d tile); ``padding`` a :class:`PaddingMode`; ``latency`` None or a
    constant 1..10 hint; ``allow_tma`` a constant bool. ``order``, a permutation of ``x``'s axes,
    loads from the permuted array (``order=(1, 0)`` reads ``x.T`` without a register transpose);
    ``index`` and ``shape`` are then in the permuted order; ``"C"`` is no permutation and ``"F"``
    reverses the axes. ``memory_order`` (``WEAK``,
    ``RELAXED`` or ``ACQUIRE``) and ``memory_scope`` (default ``DEVICE`` when the order is not
    weak) make it an ordered load: see :class:`MemoryOrder`.

    ``check_bounds=False`` promises that the tile lies inside ``x`` (no element past an edge):
    tileiras then drops the bounds masking (Tile IR ``inbounds``, bytecode 13.4); a tile that
    does cross an edge is undefined on the GPU and an error on the simulator.

    ``box_width`` (a hint: None or a constant power of two) loads the tile through a view of
    ``x`` whose last axis is split into pieces of that many elements, so that each row of the
    TMA unit's box is that wide: on an H200 64 fp16 elements (one 128-byte line) made the
    gallery LayerNorm's 8 x 1024 tiles 3.3% faster and RMSNorm's 1%, LayerNorm's 4 x 2048 tiles
    11% slower (2026-11-28); 16-byte pieces were 2-6x slower: time it. It applies where the last axis has unit stride, the tile's last extent is a
    multiple of it and the specialization knows the array's last extent is too (it is keyed by
    its power-of-two divisor); elsewhere it is ignored. The tile and its padding are the same
    either way.
    """


@_stub
def store(target, index, t, order=None, memory_order=MemoryOrder.WEAK, memory_scope=None,
          latency=None, allow_tma=True):
    """Store tile ``t`` at tile ``index`` of ``target``.

    ``target`` is a partition parameter (``index`` in units of its tile shape), the tile view
    ``w.partition(shape)`` of a writable tensor (one passed as ``tile.atomic(t)``), or that
    writable tensor itself: then the tile space is that of ``t``'s shape (a scalar or 0-d tile
    writes one element), as ``cuda.tile.store`` does. ``t`` must have the view's tile shape and
    dtype. Read-only tensors cannot be stored to. ``order`` (tensors and tile views) stores into
    the permuted array, like :func:`load`. ``memory_order``
    (``WEAK``, ``RELAXED`` or ``RELEASE``) and ``memory_scope`` as for :func:`load`.
    ``latency`` (None or a constant 1..10) and ``allow_tma`` (a constant bool) are hints to
    tileiras, as for :func:`load`: ``allow_tma=False`` writes from registers instead of staging
    the tile in shared memory for the TMA unit.
    """


@_stub
def gather(x, indices, mask=None, other=0, padding_value=None, memory_order=MemoryOrder.WEAK,
           memory_scope=None, check_bounds=True, latency=None):
    """Element-wise load: ``x[indices]`` for a tile (1-D ``x``) or tuple of tiles of indices.

    Index tiles broadcast together; the result has their broadcast shape and ``x.dtype``.
    Elements where ``mask`` is False or the index is out of bounds read as ``other``
    (``padding_value``, cuTile's name, is the same; give one of them).
    ``memory_order``/``memory_scope`` as for :func:`load`. ``check_bounds=False`` (a constant)
    promises every index is in bounds and drops the bounds mask (an out-of-bounds index is then
    undefined behaviour on the GPU and an error on the simulator); ``latency`` as for
    :func:`load`.
    """


@_stub
def scatter(target, indices, values, mask=None, memory_order=MemoryOrder.WEAK,
            memory_scope=None, check_bounds=True, latency=None):
    """Element-wise store ``target[indices] = values`` into a partition's tensor or a writable tensor.

    ``indices`` index the whole underlying tensor (not the block's tile). ``values`` broadcasts to
    the indices' shape and must have ``target.dtype`` (weak scalars adopt it). Out-of-bounds and
    masked-off elements are skipped. Blocks writing the same element race.
    ``memory_order``/``memory_scope`` as for :func:`store`; ``check_bounds`` and ``latency`` as
    for :func:`gather`.
    """


def _atomic(name, op):
    def f(target, indices, values, mask=None, memory_order=MemoryOrder.ACQ_REL,
          memory_scope=MemoryScope.DEVICE):
        pass
    return _named_stub(f, name, f"Atomic {op} on elements ``target[indices]`` of a writable "
                                f"tensor (``tile.atomic(t)`` on the host) or a partition's "
                                f"tensor; returns the old values as a tile of the indices' "
                                f"shape. ``values`` broadcasts to that shape. ``memory_order`` "
                                f"(``RELAXED``, ``ACQUIRE``, ``RELEASE`` or ``ACQ_REL``) also "
                                f"orders the block's other memory operations (see "
                                f"``MemoryOrder``).")


atomic_add = _atomic("atomic_add", "add")
atomic_max = _atomic("atomic_max", "max")
atomic_min = _atomic("atomic_min", "min")
atomic_xchg = _atomic("atomic_xchg", "exchange")
atomic_and = _atomic("atomic_and", "bitwise and (integer elements)")
atomic_or = _atomic("atomic_or", "bitwise or (integer elements)")
atomic_xor = _atomic("atomic_xor", "bitwise xor (integer elements)")


@_stub
def atomic_cas(target, indices, expected, desired, mask=None, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """Atomic compare-and-swap: where ``target[indices] == expected`` store ``desired``.

    Returns the old values (compare them with ``expected`` to see which swaps happened).
    ``memory_order``/``memory_scope`` as for the other atomics: a spin lock takes the lock with
    ``ACQUIRE`` and gives it back with ``atomic_xchg(..., memory_order=RELEASE)``.
    """


# --------------------------------------------------------------------------------------------------
# Creation
@_stub
def zeros(shape, dtype=None):
    """A tile of zeros; ``shape`` a constant tuple of powers of two (or one int); dtype float32."""


@_stub
def ones(shape, dtype=None):
    """A tile of ones; ``shape`` a constant tuple of powers of two (or one int); dtype float32."""


@_stub
def full(shape, value, dtype=None):
    """A tile filled with ``value``. Without ``dtype``: the value's dtype (Python float -> float32,
    Python int -> int32, bool -> bool_)."""


@_stub
def arange(start, stop=None, step=None, dtype=None):
    """The 1-D tile ``[start, start + step, ...]`` below ``stop``, like ``numpy.arange``.

    ``arange(n)`` is ``[0, 1, ..., n-1]``. Bounds and step are compile-time constant ints and the
    element count must be a power of two (for a runtime offset write ``off + tile.arange(n)``).
    ``dtype`` (int32 by default) may also be passed as the second positional argument:
    ``arange(n, tile.float32)``.
    """


# --------------------------------------------------------------------------------------------------
# Random numbers (Philox-4x32-10, the stream of tilejit.api.rand / api.randn)
@_stub
def randint4x(seed, offsets):
    """The four 32-bit words of Philox-4x32-10 (Salmon et al., SC'11) for each offset: a tuple
    of four ``uint32`` tiles of ``offsets``' shape.

    ``seed`` is an integer scalar (its 64 bits are the key, low word first). Like ``api.rand``'s,
    a seed is an int in [0, 2**64): a constant outside is a compile error, a Python int argument
    outside raises ``OverflowError`` at the call; a seed of a signed dtype computed in the kernel
    (or passed as a NumPy int) is taken as its 64-bit two's complement. ``offsets`` an
    integer tile or scalar (taken as 64 bits, low word first: the counter is
    ``(lo, hi, 0, 0)``). The same seed and offsets give the same numbers on the GPU and on the
    simulator; ``api.rand(shape, seed=s)`` is ``rand(s, arange(n))`` over the flat elements.
    """


@_stub
def randint(seed, offsets):
    """The first word of :func:`randint4x`: a ``uint32`` tile of ``offsets``' shape."""


@_stub
def rand(seed, offsets):
    """Uniform float32 numbers in [0, 1): ``(randint(seed, offsets) >> 8) * 2**-24`` (24 random
    bits), the stream of ``api.rand`` for the same seed (element ``i`` is offset ``i``)."""


@_stub
def randn(seed, offsets):
    """Standard normal float32 numbers by Box-Muller on the first two words of
    :func:`randint4x` (``sqrt(-2 log u1) * cos(2 pi u2)``, ``u1`` in (0, 1]), the stream of
    ``api.randn`` for the same seed."""


# --------------------------------------------------------------------------------------------------
# Reductions and scans
def _reduction(name, what):
    def f(t, axis=None, keepdims=False):
        pass
    return _named_stub(f, name, f"{what} over ``axis`` (None: all axes; an int or a tuple of "
                                f"ints; negative counts from the end). ``keepdims`` keeps "
                                f"reduced axes with extent 1.")


def _nan_reduction(name, what):
    def f(t, axis=None, keepdims=False, propagate_nan=True):
        pass
    return _named_stub(f, name, f"{what} over ``axis`` (None: all axes; an int or a tuple of "
                                f"ints; negative counts from the end). ``keepdims`` keeps "
                                f"reduced axes with extent 1. NaN propagates as in NumPy (a "
                                f"NaN wins); ``propagate_nan=False`` ignores NaNs like "
                                f"``numpy.nanmax``.")


@_stub
def sum(t, axis=None, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Sum over ``axis`` (None: all axes; an int or a tuple of ints; negative counts from the
    end). ``keepdims`` keeps reduced axes with extent 1. Bool and integers narrower than 32 bits
    accumulate in int32. For floats, ``rounding_mode`` (``RoundingMode.RN`` the default, ``RZ``,
    ``RM``, ``RP``) rounds each addition and ``flush_to_zero=True`` treats float32 subnormals
    as zero."""



@_stub
def prod(t, axis=None, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Product over ``axis`` (None: all axes; an int or a tuple of ints; negative counts from
    the end). ``keepdims`` keeps reduced axes with extent 1. Bool and integers narrower than 32
    bits accumulate in int32. ``rounding_mode`` and ``flush_to_zero`` as for :func:`sum`."""


max = _nan_reduction("max", "Maximum")
min = _nan_reduction("min", "Minimum")
argmax = _nan_reduction("argmax", "Index (int32) of the first maximum (of the first NaN, "
                                  "unless ``propagate_nan=False``); flat index when axis is None")
argmin = _nan_reduction("argmin", "Index (int32) of the first minimum (of the first NaN, "
                                  "unless ``propagate_nan=False``); flat index when axis is None")


@_stub
def reduce(t, axis, fn, identity=None, keepdims=False):
    """Reduce ``t`` over ``axis`` with the combiner ``fn``; ``t`` may be a tuple of tiles
    (broadcast to one shape), reduced together: then ``fn`` takes ``2N`` values (one element of
    each tile, then the accumulated values of each) and returns ``N``, and the result is a tuple
    (argmax with its value, Welford's mean and variance).

    ``fn`` is a lambda, a nested function, a ``@tile.function`` (its values are rank-0 tiles),
    or one of :data:`BUILTIN_COMBINERS` (``operator.add``, ``max``, ...) for a single tile.
    ``identity`` is ``fn``'s identity element (a constant, or a tuple of them): required for
    a function, implied for the builtins. ``axis`` is a constant int (None: all axes).
    """


@_stub
def cumsum(t, axis=0, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix sum along ``axis`` (accumulates like :func:`sum`; ``rounding_mode`` and
    ``flush_to_zero`` as for :func:`sum`)."""


@_stub
def cumprod(t, axis=0, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix product along ``axis`` (accumulates like :func:`prod`; ``rounding_mode``
    and ``flush_to_zero`` as for :func:`sum`)."""


@_stub
def scan(t, axis, fn, identity=None, reverse=False):
    """Inclusive scan of ``t`` (a tile or a tuple of tiles) along ``axis`` with the combiner
    ``fn``, as in :func:`reduce`; ``reverse`` scans from the end."""


#: Python and tilejit functions usable as :func:`reduce`/:func:`scan` combiners of one tile,
#: and what they compute (their identities are implied; ``max``/``min`` propagate NaN)
BUILTIN_COMBINERS = {_operator.add: "sum", _operator.mul: "prod", _builtins.max: "max",
                     _builtins.min: "min", _operator.and_: "and", _operator.or_: "or",
                     _operator.xor: "xor", maximum: "max", minimum: "min"}


# --------------------------------------------------------------------------------------------------
# Matmul
#: ``input_precision`` values of :func:`mma` / :func:`matmul` (Triton's names; "float32" is
#: another name for "ieee").
INPUT_PRECISIONS = ("ieee", "float32", "tf32", "tf32x3")


@_stub
def mma(a, b, acc, input_precision=None, fast_acc=False):
    """Matrix multiply-accumulate ``a @ b + acc``.

    2-D: ``a (M, K)``, ``b (K, N)``, ``acc (M, N)``; 3-D batched with a leading batch axis.
    ``a`` and ``b`` share a dtype: float16 / bfloat16 / tfloat32 / float32 / float8 with a float32
    accumulator (float16 and float8 inputs also allow float16), float64 with float64, int8 /
    uint8 (mixed too) with int32. Returns a tile of ``acc``'s type.

    ``input_precision`` chooses how float32 inputs multiply (other input dtypes ignore it, as
    in Triton): ``None``, ``"ieee"`` or ``"float32"`` multiply in float32 (the default);
    ``"tf32"`` rounds both inputs to tfloat32 first (about 1e-3 relative error, many times
    faster on tensor cores, the same as ``.astype(tile.tfloat32)``); ``"tf32x3"`` splits each
    input into two tfloat32 parts and sums three tf32 products (close to float32 accuracy at
    about a third of tf32's speed).

    ``fast_acc=True`` (float8 inputs; a compile-time bool) lets Hopper's tensor cores keep the
    running sum in their own reduced precision instead of promoting it to float32 along K, as
    ``torch._scaled_mm(use_fast_accum=True)`` and cuTile's ``use_fast_acc`` do: faster, with a
    relative error that grows with K (about 1e-3 at K = 4096). Other input dtypes ignore it, and
    the simulator computes the exact float32 sum either way.
    """


@_stub
def matmul(a, b, input_precision=None):
    """``a @ b``: accumulates in float32 / int32 and returns float16, bfloat16, float32 or float64
    for those inputs, float32 for tfloat32 and float8 inputs, int32 for int8 / uint8 inputs.
    ``input_precision`` as in :func:`mma` (the ``@`` operator uses the default, float32)."""


#: (input dtype name, scale dtype name) -> the scale block sizes along K of :func:`mma_scaled`
MMA_SCALED_FORMATS = {("float8_e4m3fn", "float8_e8m0fnu"): (32,),
                      ("float8_e5m2", "float8_e8m0fnu"): (32,),
                      ("float4_e2m1fn", "float8_e8m0fnu"): (16, 32),
                      ("float4_e2m1fn", "float8_e4m3fn"): (16,)}


@_stub
def mma_scaled(a, a_scale, b, b_scale, acc):
    """Block-scaled matrix multiply-accumulate (MXFP8 / MXFP4 / NVFP4):
    ``(a * a_scale) @ (b * b_scale) + acc``, each scale element applying to a block of ``B``
    consecutive elements along K.

    ``a (M, K)``, ``a_scale (M, K // B)``, ``b (K, N)``, ``b_scale (K // B, N)``, ``acc (M, N)``
    float32 (or 3-D with a leading batch axis, which broadcasts as in :func:`mma`; each scale has
    its operand's batch). Inputs and scales (``a``/``b`` one dtype, the scales one dtype):
    float8_e4m3fn or float8_e5m2 with float8_e8m0fnu scales (B = 32); float4_e2m1fn with
    float8_e8m0fnu (B = 16 or 32) or float8_e4m3fn scales (B = 16). Returns float32.

    On Blackwell (``sm_100`` and newer) this is Tile IR's ``mmaf_scaled``; on Hopper and older,
    which have no block-scaled tensor cores, tilejit emulates it: the scaled inputs are exact in
    tfloat32, so it multiplies ``tf32(a * a_scale) @ tf32(b * b_scale)`` on the tf32 tensor
    cores (the products are exact; sums are float32). Results agree to float32 rounding (the
    order of the sums differs); a scaled input beyond float32's range overflows in the
    emulation.
    """


# --------------------------------------------------------------------------------------------------
# Shape and dtype
@_stub
def reshape(t, shape):
    """Same elements, new static shape (one entry may be -1); ``t.reshape(shape)`` too."""


@_stub
def permute(t, axes):
    """Reorder the axes of ``t``: result axis i is ``t``'s axis ``axes[i]``."""


@_stub
def transpose(t, axes=None):
    """Reverse the axes (``t.T``), or permute them like :func:`permute` when ``axes`` is given.
    The method takes NumPy's spellings: ``t.transpose()``, ``t.transpose(1, 0, 2)`` and
    ``t.transpose((1, 0, 2))``; negative axes count from the end."""


@_stub
def swapaxes(t, axis1, axis2):
    """Swap two axes of ``t`` (NumPy's ``swapaxes``; ``swapaxes(t, 0, 0)`` is ``t``)."""


@_stub
def broadcast_to(t, shape):
    """Broadcast ``t`` to ``shape`` with NumPy rules (size-1 axes stretch; leading axes added)."""


@_stub
def expand_dims(t, axis):
    """Insert an extent-1 axis at ``axis``; ``t[:, None]`` does the same."""


@_stub
def cat(a, b, axis=0):
    """Concatenate two tiles of one dtype along ``axis``; the result extent must be a power of two."""


@_stub
def extract(t, index, shape):
    """The sub-tile of static ``shape`` at tile ``index`` (in units of ``shape``)."""


@_stub
def insert(t, index, value):
    """A new tile equal to ``t`` except the sub-tile at tile ``index`` (in units of ``value``'s
    shape; run-time indices allowed), which is ``value`` (the inverse of :func:`extract`; also
    ``t.insert(index, value)``). A 0-d ``value`` is one element."""


@_stub
def astile(value, dtype):
    """A tile of ``dtype`` from a scalar (a 0-d tile) or a nested tuple of scalars (constants or
    run-time values): ``astile(((1, a), (2, b)), tile.float32)`` is 2x2. Each tuple's length is a
    power of two and sibling tuples have the same shape."""


@_stub
def pack_to_bytes(t):
    """The raw bytes of ``t`` (flattened, row-major, little-endian) as a 1-d uint8 tile."""


@_stub
def unpack_from_bytes(t, dtype):
    """A 1-d uint8 tile's bytes reinterpreted as a 1-d tile of ``dtype`` (little-endian; the
    inverse of :func:`pack_to_bytes`)."""


@_stub
def astype(t, dtype, rounding_mode=None):
    """Convert to ``dtype`` (also ``t.astype(dtype)``); scalars convert too."""


@_stub
def bitcast(t, dtype):
    """Reinterpret the bits of ``t`` as ``dtype`` (same bit width)."""


# --------------------------------------------------------------------------------------------------
# Misc
#: One C ``printf`` conversion: flags, width, precision, length modifier (ignored), letter.
PRINTF_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+)?(?:\.(?P<prec>\d*))?"
                         r"(?P<len>hh|h|ll|l|L|q|j|z|t)?(?P<conv>[diouxXeEfFgGaAcsp%])")
#: Conversions of integer (and bool) arguments, and of float arguments.
PRINTF_INT, PRINTF_FLOAT = "diouxXcp", "eEfFgGaA"


@_stub
def printf(fmt, *args):
    """Device printf: ``fmt`` a constant string, ``args`` tiles or scalars (printed element-wise).
    Integer and bool arguments take ``%d %i %u %x %X %o %c``, float arguments ``%f %e %g %a``
    (with C's flags, width and precision); a mismatch is a compile error, since C would print
    garbage or truncated values."""


@_stub
def assert_(cond, msg=None):
    """Device assertion: traps when any element of the bool tile/scalar ``cond`` is False."""


@_stub
def assume_divisible_by(x, d):
    """Promise the compiler that the integer scalar ``x`` is a multiple of the constant ``d``.

    Returns ``x``; use the returned value.
    """




@function
def divmod_(x, y):
    """``divmod(x, y)`` in a kernel: ``(x // y, x % y)`` with NumPy's floor semantics, for
    scalars and tiles. The builtin ``divmod`` in a kernel is this function."""
    return x // y, x % y
