"""Lowering handlers, one module per op family (the same families as ``typing/templates``).

A handler lowers one typed call: ``handler(lw, info, args, rty)`` gets the walker
(:class:`~tilejit.lowering.lower.Lowering`), the call's :class:`~tilejit.typing.pipeline.CallInfo`,
its arguments by parameter name (Numba variables: ``lw.arg``/``lw.static_arg`` read them) and the
typed result, and returns the result value. ``@handles(...)`` registers it in ``CALLS`` under a
kernel-language stub (``@handles(L.zeros)``: the function and its method spelling, ``t.reshape``
and ``tile.reshape``, share the stub) or, for calls without one, under the op name the typing
template gives (``"Partition.store"``, ``"math.sqrt"``); :func:`handler_of` looks them up.
tests/test_op_registry.py checks that every typing rule has a handler.
"""
from __future__ import annotations

from typing import Optional

from ... import dtypes as D
from ... import language as L
from ...dtypes import DType
from ...tileir import OptHints
from ...typing.types import dtype_of
from ..emit import TV

CALLS = {}
PADDING = {"ZERO": "zero", "NEG_ZERO": "neg_zero", "NAN": "nan", "POS_INF": "pos_inf",
           "NEG_INF": "neg_inf"}
ORDER = {"WEAK": "weak", "RELAXED": "relaxed", "ACQUIRE": "acquire", "RELEASE": "release",
         "ACQ_REL": "acq_rel"}
SCOPE = {"BLOCK": "tl_blk", "DEVICE": "device", "SYS": "sys", "SYSTEM": "sys"}


def handles(*keys):
    """Register the decorated function as the handler of ``keys`` (stubs or op names)."""
    def deco(fn):
        for k in keys:
            CALLS[k] = fn
        return fn
    return deco


def handler_of(stub, op: str):
    """The handler of a call typed as ``op`` whose kernel-language stub is ``stub`` (or None)."""
    return CALLS.get(stub) if stub is not None and stub in CALLS else CALLS.get(op)


def dt_of(rty) -> DType:
    """The dtype of a typed result."""
    return dtype_of(rty)


def shape_arg(lw, info, args, name: str = "shape") -> tuple:
    """A static shape argument as a tuple (an int is a one-dimensional shape, as in NumPy)."""
    shape = lw.static_arg(info, args, name)
    return (shape,) if isinstance(shape, int) else tuple(shape)


def padding_arg(lw, info, args) -> Optional[str]:
    """The Tile IR padding value of a ``padding=`` argument (None: no padding)."""
    pad = lw.static_arg(info, args, "padding", L.PaddingMode.ZERO)
    return PADDING.get(getattr(pad, "name", "ZERO"), "zero") if pad is not None else None


def access_hints(lw, info, args) -> Optional[OptHints]:
    """The optimization hints of a load or store's ``latency=`` and ``allow_tma=`` arguments."""
    return lw.hints(lw.static_arg(info, args, "latency", None),
                    lw.static_arg(info, args, "allow_tma", True))


def and_user_mask(lw, args, mask: TV, shape) -> TV:
    """``mask`` and the call's ``mask=`` argument (broadcast to ``shape``), if any."""
    user_mask = lw.arg(args, "mask")
    if user_mask is None:
        return mask
    user_mask = lw.em.broadcast(lw.tv(user_mask, D.bool_), shape)
    return user_mask if mask is None else lw.em.binary("&", mask, user_mask, D.bool_)



# the families register their handlers when imported
import importlib as _importlib  # noqa: E402

for _family in ("grid", "memory", "atomics", "creation", "elementwise", "dtype", "shape",
                "reduction", "matmul", "misc", "random", "tiled_view", "assembly", "raw_memory"):
    _importlib.import_module(f"{__name__}.{_family}")
