"""What a lazy DeviceOp will do, in words, without running it: the text of ``repr(op)`` and the
HTML notebooks show (``op._repr_html_()``)."""
from __future__ import annotations

import html

import numpy as np

from ..runtime.argspec import atomic
from ..runtime.partition import ForeignPartition, HostPartition, Partition
from ..runtime.tensor import Tensor

MAX_DEPTH = 4


def value(v, depth: int = 0) -> str:
    """A short description of an op input (an argument of a launch, a copy's source...)."""
    from .deviceop import DeviceOp
    if isinstance(v, Tensor):
        return f"tensor {v.shape} {v.dtype.name}"
    if isinstance(v, Partition):
        t = v._tensor
        return f"partition of {t.shape} {t.dtype.name} by {v.tile_shape}"
    if isinstance(v, ForeignPartition):
        return f"partition of {type(v.value).__name__} {v.shape} by {v.tile_shape}"
    if isinstance(v, HostPartition):
        return f"partition of {_host(v.value)} by {v.tile_shape} (copied in and back)"
    if isinstance(v, atomic):
        if isinstance(v.value, np.ndarray):
            return f"writable {_host(v.value)} (copied in and back)"
        return f"writable {value(v.value, depth)}"
    if isinstance(v, np.ndarray):
        return f"{_host(v)} (copied in)"
    if isinstance(v, DeviceOp):
        return f"({op(v, depth + 1)})" if depth < MAX_DEPTH else "(...)"
    shape = getattr(v, "shape", None)
    if shape is not None and hasattr(v, "dtype"):
        return f"{type(v).__name__} {tuple(shape)} {v.dtype}"
    if isinstance(v, (bool, int, float, np.generic)):
        return repr(v)
    return type(v).__name__


def _host(a) -> str:
    kind = "NumPy" if isinstance(a, np.ndarray) else type(a).__name__
    return f"{kind} {tuple(a.shape)} {a.dtype}"


def op(o, depth: int = 0) -> str:
    """The description of ``o`` (its ``describe`` method, or its class name)."""
    d = getattr(o, "describe", None)
    if d is None or depth > MAX_DEPTH:
        return name(o)
    try:
        return d(depth)
    except Exception as e:  # noqa: BLE001  (a repr must never raise)
        return f"{type(o).__name__} (description failed: {type(e).__name__})"


def name(o) -> str:
    """What the op is called: ``api.zeros`` rather than its private class name."""
    return getattr(o, "display_name", None) or type(o).__name__


def state(o) -> str:
    """Whether the op ran (an op may run again: each run repeats its work)."""
    from .deviceop import has_run
    if has_run(o):
        return "ran"
    return "lazy: .sync(), submit_on(stream) or await run it"


def op_repr(o) -> str:
    return f"<{name(o)}: {op(o)} ({state(o)})>"


def op_html(o) -> str:
    from .deviceop import has_run
    what = "DeviceOp, ran" if has_run(o) else "lazy DeviceOp, not run yet"
    return (f"<div><b>{html.escape(name(o))}</b> ({what})<br>"
            f"<code>{html.escape(op(o))}</code></div>")


__all__ = ["value", "op", "name", "state", "op_repr", "op_html"]
