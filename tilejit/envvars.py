"""tilejit's environment variables, parsed in one place.

Every ``TILEJIT_*`` variable has one entry in :data:`VARIABLES` (a :func:`register` call below):
its kind (which says how a value is parsed, its unit and its range), its default and one line of
help. ``python -m tilejit --help`` and ``docs/tooling.md`` list the same entries. A bad value is
one :class:`EnvironmentVariableError` that names the variable, the value and the accepted forms;
it is never silently ignored. Values are read when used (not at import), so a test or a notebook
may change them; an empty value counts as unset.

Adding a variable: one ``register(...)`` call, and a row in docs/tooling.md (a test compares them).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from .errors import TileJitError


class EnvironmentVariableError(TileJitError, ValueError):
    """An environment variable has a value tilejit does not understand."""


def _bad(name: str, raw: str, why: str, forms: str) -> EnvironmentVariableError:
    return EnvironmentVariableError(f"{name}={raw!r} {why}; {name} accepts {forms}, or unset it")


# --- kinds: how a value is parsed ----------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """How a variable's text becomes a value. ``forms`` says what is accepted, in words."""

    forms: str
    convert: Callable[[str, str], Any]      # (name, stripped raw value) -> value, or raises

    def parse(self, name: str, raw: str):
        return self.convert(name, raw.strip())


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
FLAG_FORMS = "1/true/yes/on or 0/false/no/off"


def _flag(name: str, v: str) -> bool:
    low = v.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise _bad(name, v, "is not understood", FLAG_FORMS)


FLAG = Kind(FLAG_FORMS, _flag)

# Sizes: SI units are powers of 1000 (1GB = 10**9 bytes), IEC units powers of 1024 (1GiB = 2**30),
# as in pip, systemd and most tools that print sizes.
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
SIZE_FORMS = ("a size in bytes: 1073741824, 1GB, 512MiB, 64kB (kB/MB/GB/TB are powers of 1000, "
              "KiB/MiB/GiB/TiB powers of 1024)")
_SIZE_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)")


def _size(name: str, v: str) -> int:
    m = _SIZE_RE.fullmatch(v)
    unit = _UNITS.get(m.group(2).lower()) if m else None
    if unit is None:
        why = "is negative" if v.startswith("-") else "is not a size"
        raise _bad(name, v, why, SIZE_FORMS)
    return int(float(m.group(1)) * unit) if "." in m.group(1) else int(m.group(1)) * unit


SIZE = Kind(SIZE_FORMS, _size)
SECONDS_FORMS = "a positive number of seconds: 300, 2.5"


def _seconds(name: str, v: str) -> float:
    try:
        s = float(v.removesuffix("s") if v.endswith("s") and v[:-1] else v)
    except ValueError:
        raise _bad(name, v, "is not a number of seconds", SECONDS_FORMS) from None
    if not (math.isfinite(s) and s > 0):
        raise _bad(name, v, "is not a positive, finite number of seconds", SECONDS_FORMS)
    return s


SECONDS = Kind(SECONDS_FORMS, _seconds)
PATH = Kind("a path (~ is expanded)", lambda name, v: os.path.expanduser(v))


def pattern(regex: str, what: str, forms: str) -> Kind:
    """Text matching ``regex`` (``what`` names it in the error: "an architecture name")."""
    compiled = re.compile(regex)

    def convert(name: str, v: str) -> str:
        if not compiled.fullmatch(v):
            raise _bad(name, v, f"is not {what}", forms)
        return v

    return Kind(forms, convert)


ARCH = pattern(r"sm_\d{2,3}[a-z]?", "an architecture name",
               "a GPU architecture name: sm_80, sm_90, sm_100a")
VERSION = pattern(r"\d+\.\d+(\.\d+)?", "a version", "a Tile IR bytecode version: 13.3")


def integer(lo: Optional[int] = None, hi: Optional[int] = None) -> Kind:
    """Whole numbers in ``[lo, hi]`` (either bound may be open)."""
    rng = ("" if lo is None and hi is None else f" >= {lo}" if hi is None else
           f" <= {hi}" if lo is None else f" from {lo} to {hi}")
    forms = f"a whole number{rng}"

    def convert(name: str, v: str) -> int:
        if not v.lstrip("-").isdecimal():       # int() would take "+2", "1_0", " 2"
            raise _bad(name, v, "is not a whole number", forms)
        n = int(v)
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise _bad(name, v, "is out of range", forms)
        return n

    return Kind(forms, convert)


def choice(*values: str) -> Kind:
    """One of ``values`` (case-insensitive)."""
    forms = "one of " + ", ".join(values)

    def convert(name: str, v: str) -> str:
        if v.lower() not in values:
            raise _bad(name, v, "is not understood", forms)
        return v.lower()

    return Kind(forms, convert)


def stages(*values: str) -> Kind:
    """A comma-separated subset of ``values``, as a frozenset."""
    forms = "a comma-separated list of " + ", ".join(values)

    def convert(name: str, v: str) -> frozenset:
        got = {s.strip().lower() for s in v.split(",") if s.strip()}
        bad = sorted(got - set(values))
        if bad:
            raise _bad(name, v, f"names unknown stage(s) {', '.join(bad)}", forms)
        return frozenset(got)

    return Kind(forms, convert)


CACHE_OFF = ("0", "off", "none", "false")


def _cache_dir(name: str, v: str) -> Optional[str]:
    return None if v.lower() in CACHE_OFF else os.path.expanduser(v)


# --- the registry ----------------------------------------------------------------------------------
AS_UNSET = object()


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, kind, default (the value when unset) and help line."""

    name: str
    kind: Kind
    default: Any
    help: str
    empty: Any = AS_UNSET      # the value of ``NAME=`` (empty): by default, as if unset

    def parse(self, raw: Optional[str]):
        """The value for the text ``raw`` (None: unset)."""
        if raw is None or (not raw.strip() and self.empty is AS_UNSET):
            return self.default
        if not raw.strip():
            return self.empty
        return self.kind.parse(self.name, raw)


VARIABLES: Dict[str, Variable] = {}


def register(name: str, kind: Kind, default: Any, help: str, **kw) -> Variable:
    """Add a variable to the registry (one call per variable, at import of this module)."""
    assert name.startswith("TILEJIT_") and name not in VARIABLES, name
    var = VARIABLES[name] = Variable(name, kind, default, help, **kw)
    return var


DUMP_STAGES = ("typed", "tileir", "bytecode", "remarks", "timings", "internal")

register("TILEJIT_SIMULATE", FLAG, False,
         "run kernels on the CPU simulator even when a GPU is present")
register("TILEJIT_NATIVE", FLAG, True,
         "0 turns the C launch extension off (the pure-Python launch path runs)")
register("TILEJIT_ARCH", ARCH, "sm_90",
         "the target architecture when there is no GPU (compile() and the simulator use it)")
register("TILEJIT_CACHE_DIR", Kind("a directory (~ is expanded), or 0/off/none/false/empty to "
                                   "turn the disk cache off", _cache_dir), None,
         "the disk cache of cubins, the warm-start index and autotune results "
         "(unset: ~/.cache/tilejit)", empty=None)
register("TILEJIT_CACHE_SIZE", SIZE, 1 << 30,
         "the size bound of everything in the disk cache (default 1GiB); least recently used "
         "entries go first")
register("TILEJIT_TILEIRAS", PATH, None, "the tileiras executable to use")
register("TILEJIT_TILEIRAS_TIMEOUT", SECONDS, 300.0,
         "seconds before a tileiras run (or its version probe) is stopped")
register("TILEJIT_SYNC_TIMEOUT", SECONDS, None,
         "seconds a wait for the GPU (sync(), synchronize()) may take before a TimeoutError "
         "(default: no limit; Ctrl-C interrupts a wait either way)")
register("TILEJIT_BYTECODE_VERSION", VERSION, None,
         "the Tile IR bytecode version to write, instead of the newest tileiras accepts")
register("TILEJIT_DUMP", stages(*DUMP_STAGES), frozenset(),
         "print intermediate forms while compiling: typed, tileir, bytecode (files in "
         "TILEJIT_DUMP_DIR), remarks (tileiras's, on GPU compiles), timings; internal also "
         "dumps tilejit's own kernels (api.*)")
register("TILEJIT_DUMP_DIR", PATH, ".",
         "where TILEJIT_DUMP=bytecode writes <kernel>.tileirbc (created if missing)")
register("TILEJIT_POOL_RELEASE_THRESHOLD", SIZE, None,
         "bytes of freed GPU memory the memory pool keeps (default: a quarter of the GPU's)")
register("TILEJIT_FULL_TRACEBACK", FLAG, False,
         "keep tilejit's own frames in the traceback of a compile error")
register("TILEJIT_DEBUG_TYPING", FLAG, False,
         "let internal errors of tilejit's typing rules propagate (debugging tilejit itself)")
register("TILEJIT_AUTOTUNE_QUIET", FLAG, False, "no progress line while autotuning")
SIM_SCHEDULES = ("serial", "shuffle", "interleave")
register("TILEJIT_SIM_SCHEDULE", choice(*SIM_SCHEDULES), "serial",
         "how the simulator runs tile blocks: serial (one after another), shuffle (a seeded random "
         "order) or interleave (interleaved, memory ordered only by tokens: shows races)")
register("TILEJIT_SIM_SEED", Kind("a non-negative decimal integer such as 0 or 12345",
                                  lambda name, v: _seed(name, v)), 0,
         "the seed of the shuffle and interleave schedules")
register("TILEJIT_SIM_DEVICES", integer(1), 1,
         "how many devices the simulator has (e.g. 2 to test multi-device code without GPUs)")


# --- reading ---------------------------------------------------------------------------------------
def get(name: str):
    """The value of the registered variable ``name`` now (its default when unset)."""
    return VARIABLES[name].parse(os.environ.get(name))


def raw(name: str) -> Optional[str]:
    """The text of ``name`` in the environment (None when unset), for messages."""
    return os.environ.get(name)


def in_environment() -> Tuple[Tuple[str, str], ...]:
    """``(name, text)`` of every ``TILEJIT_*`` variable set now, known or not."""
    return tuple((n, v) for n, v in sorted(os.environ.items()) if n.startswith("TILEJIT_"))


def flag(name: str, default: Optional[bool] = None) -> bool:
    """A boolean variable (``default`` overrides the registry's)."""
    raw = os.environ.get(name)
    if default is not None and (raw is None or not raw.strip()):
        return default
    return VARIABLES[name].parse(raw)


def parse_flag(name: str, raw: Optional[str], default: bool = False) -> bool:
    """``raw``, a value of the boolean variable ``name`` (None or empty: ``default``)."""
    if raw is None or not raw.strip():
        return default
    return FLAG.parse(name, raw)


def _seed(name: str, v: str) -> int:
    if not v.isdecimal():
        raise _bad(name, v, "is not a seed", "a non-negative decimal integer such as 0 or 12345")
    return int(v)


def sim_schedule() -> str:
    """``TILEJIT_SIM_SCHEDULE``: one of :data:`SIM_SCHEDULES` (default ``serial``)."""
    return get("TILEJIT_SIM_SCHEDULE")


def sim_seed() -> int:
    """``TILEJIT_SIM_SEED``: the seed of the shuffle/interleave schedules (default 0)."""
    return get("TILEJIT_SIM_SEED")


def sim_devices() -> int:
    """``TILEJIT_SIM_DEVICES``: the simulator's device count (default 1)."""
    return get("TILEJIT_SIM_DEVICES")


def dump_stages() -> frozenset:
    """The stages named in ``TILEJIT_DUMP``."""
    return get("TILEJIT_DUMP")


def problems() -> Tuple[Tuple[str, str], ...]:
    """``(name, message)`` for every set variable with a bad value, and for ``TILEJIT_*``
    variables that tilejit does not know (a typo, for ``python -m tilejit info``)."""
    out = []
    for name, _ in in_environment():
        if name not in VARIABLES:
            out.append((name, f"{name} is not a tilejit variable (see python -m tilejit --help)"))
            continue
        try:
            get(name)
        except EnvironmentVariableError as e:
            out.append((name, str(e)))
    return tuple(out)


def help_table(width: int = 100) -> str:
    """Every variable with its accepted forms and its help line (``python -m tilejit --help``)."""
    import textwrap
    lines = []
    for v in VARIABLES.values():
        lines.append(f"  {v.name}")
        text = f"{v.help}. Accepts {v.kind.forms}."
        lines += textwrap.wrap(text, width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


__all__ = ["VARIABLES", "Variable", "Kind", "register", "get", "raw", "in_environment", "flag",
           "parse_flag", "sim_devices", "sim_schedule", "sim_seed", "SIM_SCHEDULES",
           "dump_stages", "problems", "help_table", "DUMP_STAGES", "EnvironmentVariableError",
           "FLAG", "SIZE", "SECONDS", "PATH", "ARCH", "VERSION", "integer", "choice",
           "stages", "pattern"]
