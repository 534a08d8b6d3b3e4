"""Backends: where a compiled kernel runs. One object per backend, chosen with the device.

========================  =================================================================
``backends.of(device)``   the backend of ``device``: :class:`CudaBackend` or :class:`SimulatorBackend`
``b.target(device)``      the compile target: an architecture (``"sm_90"``) or ``"sim"``
``b.load(compiled, dev)`` an executable for ``dev``: ``exe.launch(grid, params, stream)``
========================  =================================================================

The backend is picked once per process (``runtime.backend.current``: CUDA when a driver and a GPU
exist and ``TILEJIT_SIMULATE`` is not set) and carried by every Device; nothing above this layer
tests "simulator or GPU?" itself. Executables are per device (each CUDA context loads its own
module), compiled kernels per target.
"""
from __future__ import annotations

from ..runtime import backend as _selector
from .cuda import CudaBackend
from .simulator import SimulatorBackend

_BACKENDS = {_selector.CUDA: CudaBackend(), _selector.SIMULATOR: SimulatorBackend()}


def of(device):
    """The backend that runs work on ``device`` (a ``tile.Device``)."""
    return _BACKENDS[device.backend]


def named(name: str):
    """The backend called ``name`` (``"cuda"`` or ``"simulator"``)."""
    return _BACKENDS[name]


__all__ = ["of", "named", "CudaBackend", "SimulatorBackend"]
