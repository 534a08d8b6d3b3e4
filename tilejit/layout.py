"""Pure shape/stride arithmetic shared by tensors, copies and argument classification."""
from __future__ import annotations

import operator
from functools import reduce
from typing import Sequence, Tuple


def prod(xs) -> int:
    return reduce(operator.mul, xs, 1)


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    """C-order strides (in elements) of a compact tensor of ``shape``."""
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """C-contiguous; extents of size 1 may have any stride; empty tensors are contiguous."""
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def span_elements(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Number of elements from the first to one past the last element (non-negative strides)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def normalize_shape(shape, what: str = "shape") -> Tuple[int, ...]:
    """``3`` -> ``(3,)``; a sequence of ints (NumPy ints accepted) -> a tuple. Signs are not checked."""
    if _is_int(shape):
        return (operator.index(shape),)
    return _tuple_of_ints(shape, what)


def _is_int(x) -> bool:
    try:
        operator.index(x)
        return not isinstance(x, bool)
    except TypeError:
        return False


def _tuple_of_ints(shape, what: str) -> Tuple[int, ...]:
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of ints, got {type(shape).__name__}") \
            from None
    out = []
    for n in items:
        if isinstance(n, bool) or not _is_int(n):
            raise TypeError(f"{what} must contain ints, got {n!r} in {items!r}")
        out.append(operator.index(n))
    return tuple(out)


def infer_reshape(shape: Tuple[int, ...], size: int) -> Tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` so that it has ``size`` elements; ValueError otherwise."""
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1:
        raise ValueError(f"can only specify one unknown dimension (-1) in {shape}")
    if any(n < -1 for n in shape):
        raise ValueError(f"negative dimension in {shape}")
    if unknown:
        known = prod(n for n in shape if n != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape a tensor of {size} elements into shape {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if prod(shape) != size:
        raise ValueError(f"cannot reshape a tensor of {size} elements into shape {shape} "
                         f"({prod(shape)} elements)")
    return shape


def pow2_ceil(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(0, (max(int(n), 1) - 1).bit_length())


def largest_pow2_divisor(x: int, cap: int = 16) -> int:
    """Largest power of two <= ``cap`` dividing ``x`` (``cap`` for 0)."""
    x = abs(int(x))
    if x == 0:
        return cap
    low = x & -x
    return low if low < cap else cap


__all__ = ["prod", "pow2_ceil", "contiguous_strides", "is_contiguous", "span_elements", "normalize_shape",
           "infer_reshape", "largest_pow2_divisor"]
