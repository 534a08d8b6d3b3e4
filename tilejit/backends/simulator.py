"""The simulator backend: the Tile IR module interpreted on the CPU (no compile, no GPU)."""
from __future__ import annotations

from ..compiler import SIM_TARGET
from ..runtime.launch import check_scalars, scalar_checks


class SimExecutable:
    """A kernel prepared for the interpreter; launches run to completion before returning."""

    __slots__ = ("kernel", "name", "checks")
    _native = None          # no C launch: the interpreter runs in Python

    def __init__(self, kernel, name: str, slots=()):
        self.kernel = kernel
        self.name = name
        self.checks = scalar_checks(slots)      # weak scalars, as a GPU launch checks them

    def launch(self, grid, params, stream) -> None:
        if self.checks:
            check_scalars(self.checks, params)
        self.kernel(grid, params)

    def __repr__(self) -> str:
        return f"<SimExecutable {self.name}>"


class SimulatorBackend:
    """Runs compiled kernels on the CPU simulator."""

    name = "simulator"

    @staticmethod
    def target(device) -> str:
        return SIM_TARGET

    @staticmethod
    def load(compiled, device) -> SimExecutable:
        from ..simulator import compile_function     # the interpreter loads on first use
        return SimExecutable(compile_function(compiled.module, compiled.name), compiled.name,
                            compiled.slots)

    def __repr__(self) -> str:
        return "<tilejit simulator backend>"


__all__ = ["SimulatorBackend", "SimExecutable", "SIM_TARGET"]
