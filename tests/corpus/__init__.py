"""A corpus of tile kernels with argument builders and NumPy references.

Each kernel is a plain Python function (no decorator) so callers can wrap it with ``@tile.entry``.
Each :class:`Case` says how to build random arguments (sizes deliberately not multiples of the
tile shape) and what the outputs must be::

    from corpus import CASES          # with tests/ on sys.path (pytest puts it there)
    for case in CASES:
        args = case.make(np.random.default_rng(0))      # {param: Arg}
        expected = case.expected(args)                   # {param: ndarray} for "out"/"atomic" args
        keys = case.arg_keys(args)                       # C2 keys (facts=None) for typing tests

Argument kinds: ``Out(initial, tile)`` is passed as ``tensor.partition(tile)`` (the kernel writes
it), ``In(array)`` as a read-only tensor, ``Atomic(array)`` as ``tile.atomic(tensor)`` and
``Scalar(value)`` as a scalar. Constants are in ``case.constants``. When no ``Out`` argument
defines the grid, ``case.grid(args)`` gives it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

import numpy as np

import tilejit as tile
from tilejit import dtypes as _dt


@dataclass
class Out:
    initial: np.ndarray
    tile: Tuple[int, ...]
    kind: str = "out"


@dataclass
class In:
    value: np.ndarray
    kind: str = "in"


@dataclass
class Atomic:
    value: np.ndarray
    kind: str = "atomic"


@dataclass
class Scalar:
    value: object
    kind: str = "scalar"


@dataclass
class Case:
    name: str
    kernel: Callable
    make: Callable[[np.random.Generator], Dict[str, object]]
    reference: Callable[..., Dict[str, np.ndarray]]
    constants: Dict[str, object] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-6
    grid: Optional[Callable[[Dict[str, object]], Tuple[int, ...]]] = None
    #: control-flow shape name for the structurize tests (None: straight-line or a plain K loop)
    shape: Optional[str] = None

    def params(self):
        return [n for n in inspect.signature(self.kernel).parameters if n not in self.constants]

    def arg_keys(self, args) -> list:
        """C2 keys of the non-constant parameters (``facts`` None: nothing assumed)."""
        keys = []
        for name in self.params():
            a = args[name]
            if isinstance(a, Out):
                d = _dt.from_numpy(a.initial.dtype).name
                keys.append(("partition", d, a.initial.ndim, None, tuple(a.tile)))
            elif isinstance(a, (In, Atomic)):
                d = _dt.from_numpy(a.value.dtype).name
                keys.append(("tensor", d, a.value.ndim, None, isinstance(a, Atomic)))
            else:
                v = a.value
                if isinstance(v, bool):
                    d = "bool_"
                elif isinstance(v, int):
                    d = "int64"
                elif isinstance(v, float):
                    d = "float32"
                else:
                    d = _dt.from_numpy(np.asarray(v).dtype).name
                keys.append(("scalar", d, True))
        return keys

    def expected(self, args) -> Dict[str, np.ndarray]:
        """The NumPy reference outputs for ``args`` (keyed by parameter name)."""
        values = {}
        for n, a in args.items():
            if isinstance(a, Out):
                values[n] = a.initial.copy()
            else:
                values[n] = a.value.copy() if isinstance(a.value, np.ndarray) else a.value
        values.update(self.constants)
        return self.reference(**values)


def rand(rng, shape, dtype=np.float32, lo=-1.0, hi=1.0):
    """Uniform random data of ``dtype`` (ints: in [lo, hi])."""
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def _collect():
    from . import (elementwise, norms, reductions, matmul, control_flow, memory,  # noqa: F401
                   helpers)
    cases = []
    for mod in (elementwise, norms, reductions, matmul, control_flow, memory, helpers):
        cases.extend(mod.CASES)
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate corpus names"
    return cases


CASES = _collect()
BY_NAME = {c.name: c for c in CASES}

__all__ = ["Case", "Out", "In", "Atomic", "Scalar", "CASES", "BY_NAME", "rand", "tile"]
