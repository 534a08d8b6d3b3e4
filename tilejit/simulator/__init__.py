"""The CPU simulator: an interpreter of Tile IR modules over a simulated device memory.

    from tilejit.simulator import compile_function
    kernel = compile_function(module, "kernel_name")   # prepared once per (module, name), cached
    kernel((gx, gy, gz), params)                        # C1 parameter values; pointers are
                                                        # addresses in simulator.memory

Modules: :mod:`.interp` (preparation, frames, the block loop), :mod:`.registry` (op name ->
implementation), ``sem_*`` (one op family each), :mod:`.elements` (element types in NumPy),
:mod:`.numerics` (exact rounding), :mod:`.printf`, :mod:`.errors`, :mod:`.memory`,
:mod:`.schedule` (block orders), :mod:`.weak_memory` (the interleave schedule's memory).

Where the CPU result can differ from a GPU's (each module's docstring has the details):
transcendental functions and ``approx`` modes use NumPy's libm; ``mmaf`` accumulates in float32 in
NumPy's order; ``reduce``/``scan``/``atomic addf`` combine in tree order; ``ftoi`` saturates and
maps NaN to 0 (undefined in Tile IR), fp8 conversions saturate; integer division by zero gives 0;
masked loads without padding read 0. By default tile blocks run one at a time, each in program
order, which satisfies every token and memory ordering (and hides races between blocks);
``TILEJIT_SIM_SCHEDULE=interleave`` (:mod:`.schedule`, :mod:`.weak_memory`) interleaves blocks
and orders memory effects only as far as their tokens require, as a GPU may.
"""
from .errors import (DeviceAssertionError, SimulatorError, SimulatorHangError,
                     SimulatorMemoryError, SimulatorUnsupportedError)

_LAZY = ("compile_function", "SimKernel", "run")


def __getattr__(name):
    # the interpreter (and the Tile IR package) load on first use, so that importing
    # ``simulator.memory`` from the runtime stays cheap
    if name in _LAZY:
        from . import interp
        return getattr(interp, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["compile_function", "SimKernel", "run", "SimulatorError", "SimulatorMemoryError",
           "DeviceAssertionError", "SimulatorUnsupportedError", "SimulatorHangError"]
