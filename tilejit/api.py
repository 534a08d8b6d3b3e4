"""``tile.api``: tensor constructors and copies. Every function returns a lazy DeviceOp.

Constructors run tilejit kernels (``tilejit._kernels``), so they work the same on the GPU and on
the CPU simulator; copies are driver memcpys (``runtime.stream_transfers``).
"""
from __future__ import annotations

import secrets
from typing import Optional

import numpy as np

from . import dtypes as _dt
from .errors import TensorError
from .scalars import constant_for
from .deviceops.deviceop import DeviceOp, execute_input
from . import layout as _layout
from .runtime.stream_transfers import new_tensor
from .deviceops.transfer import dup, empty, from_numpy, memcpy, to_host, to_numpy  # noqa: F401

# pytest hides this module's frames in tracebacks of user errors (compile errors...)
from .tracebacks import hide_frames_of_user_errors as __tracebackhide__  # noqa: E402

_FLAT_TILE = 1024
_TILE_BUDGET = 2048


def tile_shape_for(shape) -> tuple:
    """A power-of-two tile shape for elementwise kernels over ``shape`` (rank 1-3)."""
    budget = _TILE_BUDGET
    out = []
    for n in reversed(tuple(shape)):
        t = max(1, min(_layout.pow2_ceil(n), budget))
        out.append(t)
        budget = max(1, budget // t)
    return tuple(reversed(out))


class _Construct(DeviceOp):
    """Allocate a tensor and fill it with a 1-D kernel over its elements."""

    allocates = True

    def __init__(self, shape, dtype, launch, what: str, detail: str = ""):
        self.shape = _layout.normalize_shape(shape)
        if any(n < 0 for n in self.shape):
            raise TensorError(f"{what}: negative dimension in shape {self.shape}")
        self.dtype = _dt.as_dtype(dtype)
        self.launch = launch
        self.what = what
        self.detail = detail            # e.g. "of zeros", for describe()

    def _execute(self, ctx):
        n = int(np.prod(self.shape, dtype=np.int64))
        flat = new_tensor((n,), self.dtype, ctx.stream)
        if n:
            self.launch(flat.partition((_FLAT_TILE,)), ctx)
        return flat.reshape(self.shape)

    @property
    def display_name(self) -> str:
        return f"api.{self.what}"

    def describe(self, depth: int = 0) -> str:
        detail = f" {self.detail}" if self.detail else ""
        return f"a new tensor {self.shape} {self.dtype.name}{detail}"


def _fill_launch(value):
    from ._kernels import creation

    def launch(z, ctx):
        execute_input(creation.fill(z, value), ctx)
    return launch


def zeros(shape, dtype=_dt.float32) -> DeviceOp:
    """A new tensor of zeros.

    Args:
        shape: An int or a tuple of ints.
        dtype: A tilejit dtype (``tile.float16``...), a NumPy dtype or its name.
    """
    return _full(shape, 0, dtype, "zeros", "of zeros")


def ones(shape, dtype=_dt.float32) -> DeviceOp:
    """A new tensor of ones.

    Args:
        shape: An int or a tuple of ints.
        dtype: A tilejit dtype, a NumPy dtype or its name.
    """
    return _full(shape, 1, dtype, "ones", "of ones")


def full(shape, value, dtype=None) -> DeviceOp:
    """A new tensor filled with ``value``.

    Args:
        shape: An int or a tuple of ints.
        value: The fill value (it must fit ``dtype``: ``OverflowError`` otherwise).
        dtype: A tilejit dtype, a NumPy dtype or its name; omitted, inferred like NumPy's
            ``full``: bool, int64 or float32.
    """
    if dtype is None:
        dtype = _dt.bool_ if isinstance(value, bool) else _dt.int64 if isinstance(value, int) \
            else _dt.float32
    return _full(shape, value, dtype, "full", f"filled with {value!r}")


def _full(shape, value, dtype, what: str, detail: str) -> DeviceOp:
    dt = _dt.as_dtype(dtype)
    return _Construct(shape, dt, _fill_launch(constant_for(value, dt)), what, detail)


class _Fill(DeviceOp):
    def __init__(self, tensor, value):
        self.tensor = tensor
        self.value = value
        dt = getattr(tensor, "dtype", None)
        if isinstance(dt, _dt.DType):           # refused now, as np.full refuses it
            constant_for(value, dt)

    def _execute(self, ctx):
        from ._kernels import creation
        t = execute_input(self.tensor, ctx)
        if t.size == 0:
            return t
        if not 1 <= t.ndim <= 3:
            raise TensorError(f"api.fill supports tensors of rank 1 to 3, got shape {t.shape}; "
                              f"reshape it first (t.reshape(-1))")
        execute_input(creation.fill(t.partition(tile_shape_for(t.shape)),
                                    constant_for(self.value, t.dtype)), ctx)
        return t

    def _default_stream(self):
        from .deviceops.transfer import stream_near
        return stream_near(self.tensor)

    display_name = "api.fill"

    def describe(self, depth: int = 0) -> str:
        from .deviceops.describe import value
        return f"fill {value(self.tensor, depth)} with {self.value!r}"


def fill(tensor, value) -> DeviceOp:
    """Fill an existing tensor with ``value`` in place; the output is the tensor.

    Args:
        tensor: A ``tile.Tensor`` of rank 1-3 (or an op producing one).
        value: The fill value, converted to the tensor's dtype.
    """
    return _Fill(tensor, value)


def arange(start, stop=None, step=None, dtype=None) -> DeviceOp:
    """``np.arange``'s values, ``start, start + step, ...`` up to ``stop`` (excluded), as a new
    1-D tensor: ``arange(n)`` is ``0 .. n-1``, ``arange(5, 0)`` is empty. The dtype is int64 for
    int bounds, float64 when one is a float (as NumPy); ``arange(n, dtype)`` also works.

    Args:
        start: The first value (or, alone, the stop: ``arange(n)``).
        stop: The end, excluded.
        step: The spacing (not zero; default 1).
        dtype: An integer or float dtype (default: as NumPy picks).
    """
    from ._kernels import creation
    if step is None and dtype is None and stop is not None and \
            not isinstance(stop, (int, float, np.number)):
        stop, dtype = None, stop                     # arange(n, tile.float32)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if not all(isinstance(v, (int, float, np.number)) for v in (start, stop, step)):
        raise TypeError(f"api.arange: start, stop and step must be numbers, got "
                        f"{(start, stop, step)}; pass the dtype as dtype=...")
    if step == 0:
        raise TensorError("api.arange: step must not be zero")
    ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    n = max(0, -((start - stop) // step) if ints else int(np.ceil((stop - start) / step)))
    dtype = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if ints else _dt.float64)
    if start == 0 and step == 1:
        return _Construct((n,), dtype, lambda z, ctx: execute_input(creation.arange(z), ctx),
                          "arange", f"of 0 .. {n - 1}")
    # start + i * step in float64 (linspace's kernel; its last-element fix-up never applies)
    return _Construct((n,), dtype, lambda z, ctx: execute_input(creation.linspace(
        z, np.float64(start), np.float64(step), n + 1, np.float64(0)), ctx), "arange",
        f"of {start} .. {stop} by {step}")


def linspace(start: float, stop: float, n: int, dtype=_dt.float32) -> DeviceOp:
    """``n`` values evenly spaced from ``start`` to ``stop`` (both included), like NumPy.

    Args:
        start: The first value.
        stop: The last value.
        n: The number of values (>= 0).
        dtype: A float dtype.
    """
    from ._kernels import creation
    n = int(n)
    if n < 0:
        raise TensorError(f"api.linspace: n must be >= 0, got {n}")
    step = (float(stop) - float(start)) / (n - 1) if n > 1 else 0.0
    last = stop if n > 1 else start             # NumPy: linspace(a, b, 1) is [a]
    return _Construct((n,), dtype, lambda z, ctx: execute_input(creation.linspace(
        z, np.float64(start), np.float64(step), n, np.float64(last)), ctx), "linspace",
                      f"from {start} to {stop}")


class _Eye(DeviceOp):
    allocates = True

    def __init__(self, rows: int, cols: int, dtype):
        if rows < 0 or cols < 0:
            raise TensorError(f"api.eye: negative size ({rows}, {cols})")
        self.rows, self.cols, self.dtype = int(rows), int(cols), _dt.as_dtype(dtype)

    display_name = "api.eye"

    def describe(self, depth: int = 0) -> str:
        return f"a new {self.rows}x{self.cols} {self.dtype.name} identity matrix"

    def _execute(self, ctx):
        from ._kernels import creation
        t = new_tensor((self.rows, self.cols), self.dtype, ctx.stream)
        if t.size:
            execute_input(creation.eye(t.partition((32, 32))), ctx)
        return t


def eye(n: int, dtype=_dt.float32) -> DeviceOp:
    """The ``n x n`` identity matrix."""
    return _Eye(n, n, dtype)


def eye_rect(rows: int, cols: int, dtype=_dt.float32) -> DeviceOp:
    """A ``rows x cols`` matrix with ones on the main diagonal."""
    return _Eye(rows, cols, dtype)


class _Convert(DeviceOp):
    allocates = True

    def __init__(self, tensor, dtype):
        self.tensor = tensor
        self.dtype = _dt.as_dtype(dtype)

    display_name = "api.convert"

    def describe(self, depth: int = 0) -> str:
        from .deviceops.describe import value
        return f"{value(self.tensor, depth)} converted to {self.dtype.name}"

    def _execute(self, ctx):
        from ._kernels import creation
        x = execute_input(self.tensor, ctx)
        if x.size == 0:
            return new_tensor(x.shape, self.dtype, ctx.stream)
        if 1 <= x.ndim <= 3:
            out = new_tensor(x.shape, self.dtype, ctx.stream)
            execute_input(creation.convert(out.partition(tile_shape_for(x.shape)), x), ctx)
            return out
        if not x.is_contiguous:
            raise TensorError(f"api.convert of a rank-{x.ndim} tensor needs a contiguous tensor; "
                              f"copy it with api.dup first")
        flat = new_tensor((x.size,), self.dtype, ctx.stream)
        execute_input(creation.convert(flat.partition((_FLAT_TILE,)), x.reshape(x.size)), ctx)
        return flat.reshape(x.shape)


def convert(tensor, dtype) -> DeviceOp:
    """A new tensor with ``tensor``'s values converted to ``dtype`` (like ``astype``)."""
    return _Convert(tensor, dtype)


def _seed(seed: Optional[int]) -> int:
    if seed is None:
        return secrets.randbits(64)
    seed = int(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def rand(shape, dtype=_dt.float32, seed: Optional[int] = None) -> DeviceOp:
    """Uniform random numbers in [0, 1) (Philox-4x32-10; reproducible for the same seed; the
    stream of ``tile.rand(seed, offsets)`` in kernels, element ``i`` at offset ``i``).

    Args:
        shape: An int or a tuple of ints.
        dtype: A float dtype.
        seed: An int in [0, 2**64); None draws one from the OS.
    """
    from ._kernels import random
    dt = _dt.as_dtype(dtype)
    if not dt.is_float:
        raise TypeError(f"api.rand needs a float dtype, got {dt}")
    s = _seed(seed)
    return _Construct(shape, dt, lambda z, ctx: execute_input(random.uniform(
        z, np.uint64(s)), ctx), "rand", "uniform in [0, 1)")


def randn(shape, mean: float = 0.0, std: float = 1.0, dtype=_dt.float32,
          seed: Optional[int] = None) -> DeviceOp:
    """Normal random numbers N(mean, std^2) (Philox + Box-Muller; reproducible for the seed;
    ``tile.randn(seed, offsets) * std + mean`` in kernels).

    Args:
        shape: An int or a tuple of ints.
        mean: The distribution's mean.
        std: Its standard deviation (>= 0).
        dtype: A float dtype.
        seed: An int in [0, 2**64); None draws one from the OS.
    """
    from ._kernels import random
    dt = _dt.as_dtype(dtype)
    if not dt.is_float:
        raise TypeError(f"api.randn needs a float dtype, got {dt}")
    if std < 0:
        raise ValueError(f"api.randn: std must be >= 0, got {std}")
    s = _seed(seed)
    return _Construct(shape, dt, lambda z, ctx: execute_input(random.normal(
        z, np.uint64(s), float(mean), float(std)), ctx), "randn",
                      f"normal (mean {mean}, std {std})")


__all__ = ["zeros", "ones", "full", "fill", "arange", "linspace", "eye", "eye_rect", "convert",
           "rand", "randn", "from_numpy", "to_numpy", "to_host", "dup", "memcpy", "empty"]
