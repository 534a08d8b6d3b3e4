"""tilejit's environment variables, parsed in one place: a bad value is an error that names the
variable, the value and what it may be (instead of being silently ignored).

=============================  ===================================================================
``TILEJIT_SIMULATE``           ``1``/``true``/``yes``/``on``: run on the CPU simulator; ``0``/``false``/
                               ``no``/``off``/empty: use a GPU when there is one
``TILEJIT_NATIVE``             the same flags: ``0`` turns the C launch path off
``TILEJIT_DUMP``               comma-separated stages printed while compiling: ``typed``, ``tileir``,
                               ``bytecode`` (written to ``TILEJIT_DUMP_DIR``), ``timings``
``TILEJIT_CACHE_DIR``          the disk cache (``0``/``off``/``none``/empty: no disk cache)
``TILEJIT_CACHE_SIZE``         its bound in bytes
``TILEJIT_TILEIRAS``           a tileiras binary; ``TILEJIT_TILEIRAS_TIMEOUT`` its time limit (s)
``TILEJIT_ARCH``               target architecture without a GPU (``sm_90``)
``TILEJIT_BYTECODE_VERSION``   pin the Tile IR bytecode version (``13.3``)
``TILEJIT_FULL_TRACEBACK``     a flag: compile errors keep tilejit's own frames in the traceback
``TILEJIT_SIM_SCHEDULE``       how the simulator runs tile blocks: ``serial`` (default), ``shuffle``
                               or ``interleave``; ``TILEJIT_SIM_SEED`` (an int >= 0) seeds the last two
=============================  ===================================================================
"""
from __future__ import annotations

import os

from .errors import TileJitError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
DUMP_STAGES = ("typed", "tileir", "bytecode", "timings")


class EnvironmentVariableError(TileJitError, ValueError):
    """An environment variable has a value tilejit does not understand."""


def flag(name: str, default: bool = False) -> bool:
    """A boolean variable: unset gives ``default``; anything but the known spellings raises."""
    return parse_flag(name, os.environ.get(name), default)


def parse_flag(name: str, raw, default: bool = False) -> bool:
    """``raw``, the value of the boolean variable ``name`` (None: unset)."""
    if raw is None:
        return default
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise EnvironmentVariableError(
        f"{name}={raw!r} is not understood; use one of {', '.join(_TRUE)} (on) or "
        f"{', '.join(s for s in _FALSE if s)} (off), or unset it")


def dump_stages() -> set:
    """The stages named in ``TILEJIT_DUMP``."""
    raw = os.environ.get("TILEJIT_DUMP", "")
    stages = {s.strip().lower() for s in raw.split(",") if s.strip()}
    bad = sorted(stages - set(DUMP_STAGES))
    if bad:
        raise EnvironmentVariableError(
            f"TILEJIT_DUMP={raw!r}: unknown stage(s) {', '.join(bad)}; the stages are "
            f"{', '.join(DUMP_STAGES)} (comma-separated)")
    return stages


SIM_SCHEDULES = ("serial", "shuffle", "interleave")


def sim_schedule() -> str:
    """``TILEJIT_SIM_SCHEDULE``: one of :data:`SIM_SCHEDULES` (unset or empty: ``serial``)."""
    raw = os.environ.get("TILEJIT_SIM_SCHEDULE")
    v = (raw or "serial").strip().lower() or "serial"
    if v not in SIM_SCHEDULES:
        raise EnvironmentVariableError(
            f"TILEJIT_SIM_SCHEDULE={raw!r} is not a schedule; use serial (blocks one after "
            f"another), shuffle (in a seeded random order) or interleave (interleaved, memory "
            f"ordered only by tokens), or unset it")
    return v


def sim_seed() -> int:
    """``TILEJIT_SIM_SEED``: the seed of the shuffle/interleave schedules (unset: 0)."""
    raw = os.environ.get("TILEJIT_SIM_SEED")
    if raw is None or not raw.strip():
        return 0
    try:
        v = int(raw.strip(), 10)
    except ValueError:
        v = -1
    if v < 0:
        raise EnvironmentVariableError(
            f"TILEJIT_SIM_SEED={raw!r} is not a seed; use a non-negative decimal integer such "
            f"as 0 or 12345, or unset it (0)")
    return v


__all__ = ["flag", "parse_flag", "dump_stages", "DUMP_STAGES", "EnvironmentVariableError",
           "SIM_SCHEDULES", "sim_schedule", "sim_seed"]
