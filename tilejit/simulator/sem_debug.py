"""``print_tko`` and ``assert``.

Output of ``print_tko`` goes to ``sys.stdout`` (looked up at each print, so pytest's capture and
redirections work), formatted by :mod:`.printf`, once per tile block per executed op. Every line
starts with ``[block (x, y, z)] `` so that the blocks' output can be told apart; blocks run one
after another, so lines are never interleaved.

``assert`` prints its message on ``sys.stdout`` (as the GPU does) and raises
:class:`DeviceAssertionError` at the first block with a false element (the GPU keeps going; the
simulator stops the launch so the error is a Python exception the user sees).
"""
from __future__ import annotations

import sys

import numpy as np

from .errors import DeviceAssertionError, KernelFault, SimulatorUnsupportedError
from .printf import conversions, format_tiles, parse
from .registry import BLOCK_ID, LAUNCH, elem_of, impl


def block_prefix(bid) -> str:
    return f"[block ({int(bid[0])}, {int(bid[1])}, {int(bid[2])})] "


@impl("print_tko")
def _print(op, c):
    pieces = parse(op.attrs["str"])
    args = op.group("args")
    if conversions(pieces) != len(args):
        raise SimulatorUnsupportedError(f"print_tko format {op.attrs['str']!r} has "
                                        f"{conversions(pieces)} conversions but {len(args)} "
                                        f"arguments", op=op.name, loc=op.loc)
    slots = [c.slot(v) for v in args]
    elems = [elem_of(v) for v in args]

    def run(env):
        text = format_tiles(pieces, [env[s] for s in slots], elems)
        launch = env[LAUNCH]
        prefix = block_prefix(env[BLOCK_ID])
        out = []
        for line in text.splitlines(keepends=True):
            if launch.at_line_start:
                out.append(prefix)
            out.append(line)
            launch.at_line_start = line.endswith("\n")
        sys.stdout.write("".join(out))
    return run


@impl("assert")
def _assert(op, c):
    cond = c.slot(op.operand("condition"))
    message = op.attrs["message"]

    def run(env):
        ok = np.asarray(env[cond])
        if ok.all():
            return
        bad = np.argwhere(~ok)
        # the GPU prints a failed assertion's message on the process's stdout; scripts (and
        # cuTile's tests) read it there, so the simulator prints it before raising
        sys.stdout.write(f"{block_prefix(env[BLOCK_ID])}device assertion failed: {message}\n")
        sys.stdout.flush()
        raise KernelFault(message, cls=DeviceAssertionError,
                          indices=[tuple(int(i) for i in b) for b in bad[:4]] if ok.ndim else [],
                          count=len(bad))
    return run
