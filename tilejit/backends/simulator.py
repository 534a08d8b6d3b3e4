"""The simulator backend: the Tile IR module interpreted on the CPU (no compile, no GPU), loaded
per simulated device like a cubin per GPU."""
from __future__ import annotations

from ..compiler import SIM_TARGET
from ..runtime.cuda_executable import check_scalars, scalar_checks


class SimExecutable:
    """A kernel prepared for the interpreter and loaded on one simulated device: it sees the
    simulated memory as that device does (another device's memory faults). Launches run to
    completion before returning."""

    __slots__ = ("kernel", "name", "memory", "checks")
    _native = None          # no C launch: the interpreter runs in Python

    def __init__(self, kernel, name: str, memory=None, slots=()):
        self.kernel = kernel
        self.name = name
        self.memory = memory
        self.checks = scalar_checks(slots)      # weak scalars, as a GPU launch checks them

    def launch(self, grid, params, stream) -> None:
        if self.checks:
            check_scalars(self.checks, params)
        if self.memory is None:         # a kernel of the whole address space (tests)
            self.kernel(grid, params)
        else:
            self.kernel(grid, params, self.memory)

    def __repr__(self) -> str:
        where = "" if self.memory is None else f" on sim:{self.memory.device}"
        return f"<SimExecutable {self.name}{where}>"


class SimulatorBackend:
    """Runs compiled kernels on the CPU simulator."""

    name = "simulator"

    @staticmethod
    def target(device) -> str:
        return SIM_TARGET

    @staticmethod
    def load(compiled, device) -> SimExecutable:
        from ..simulator import compile_function     # the interpreter loads on first use
        from ..simulator.memory import memory
        return SimExecutable(compile_function(compiled.module, compiled.name), compiled.name,
                             memory.on_device(device.ordinal), compiled.slots)

    def __repr__(self) -> str:
        return "<tilejit simulator backend>"


__all__ = ["SimulatorBackend", "SimExecutable", "SIM_TARGET"]
