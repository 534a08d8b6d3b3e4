"""A tensor's values as ``repr`` and notebooks show them: NumPy's summarization (``threshold`` and
``edgeitems`` of ``np.get_printoptions()``: up to 1000 elements in full, beyond that the first and
last 3 along each long axis with ``...``), for any size, reading only those edges off the device.

The edges are read block by block (one strided copy per corner, at most ``2**ndim``) into a small
array whose summarized axes have ``2 * edgeitems + 1`` entries; NumPy then prints it with
``threshold=0``, which shows exactly the edges and never looks at the middle entry.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np

from .submission import is_executing


def _read(view) -> np.ndarray:
    """The values of a tensor view, read synchronously on its device's internal stream."""
    from .copy import download          # copy sits above tensors: imported when first used
    stream = view.device.internal_stream()
    with view.device.current():
        return download(view, stream)


def summary(t):
    """``(array, summarized)``: the whole tensor as NumPy if NumPy would print it in full, else
    an array holding only its edges (``summarized`` True), as described in the module docstring."""
    opts = np.get_printoptions()
    edge = opts["edgeitems"]
    if t.size <= opts["threshold"]:
        return _read(t), False
    cut = [n > 2 * edge for n in t.shape]
    small = np.zeros([2 * edge + 1 if c else n for c, n in zip(cut, t.shape)],
                     dtype=t.dtype.np_dtype)
    # per axis: (source slice, destination slice) pairs: the whole axis, or its two ends
    parts = [((slice(0, edge), slice(0, edge)), (slice(n - edge, n), slice(edge + 1, None)))
             if c else ((slice(None), slice(None)),) for c, n in zip(cut, t.shape)]
    for corner in itertools.product(*parts):
        src = tuple(p[0] for p in corner)
        dst = tuple(p[1] for p in corner)
        small[dst] = _read(t[src])
    return small, True


def values_text(t, prefix: str = "", separator: str = ", ") -> str:
    """The values as NumPy prints them (``np.array2string``), summarized like NumPy, continuation
    lines indented for ``prefix``; a note instead inside a running DeviceOp (no reads there)."""
    if t.size == 0:
        return "[]"
    if is_executing():
        return "(values not shown inside a running DeviceOp: reading them would sync)"
    arr, summarized = summary(t)
    opts = np.get_printoptions()
    return np.array2string(arr, separator=separator, prefix=prefix,
                           threshold=0 if summarized else sys.maxsize,
                           edgeitems=opts["edgeitems"])


__all__ = ["summary", "values_text"]
