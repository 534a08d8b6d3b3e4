"""Tile IR bytecode versions."""
from __future__ import annotations

from typing import NamedTuple, Tuple, Union


class BytecodeVersion(NamedTuple):
    major: int
    minor: int
    tag: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    # Compare with plain (major, minor) tuples too.
    def __ge__(self, other):  # type: ignore[override]
        return (self.major, self.minor) >= tuple(other)[:2]

    def __lt__(self, other):  # type: ignore[override]
        return (self.major, self.minor) < tuple(other)[:2]

    def __le__(self, other):  # type: ignore[override]
        return (self.major, self.minor) <= tuple(other)[:2]

    def __gt__(self, other):  # type: ignore[override]
        return (self.major, self.minor) > tuple(other)[:2]


SUPPORTED: Tuple[BytecodeVersion, ...] = tuple(BytecodeVersion(13, m) for m in (1, 2, 3, 4))
LATEST = SUPPORTED[-1]


def as_version(v: Union[str, tuple, BytecodeVersion]) -> BytecodeVersion:
    """Parse ``"13.3"``, ``(13, 3)`` or a BytecodeVersion; reject versions we cannot write."""
    if isinstance(v, BytecodeVersion):
        bv = v
    elif isinstance(v, str):
        try:
            major, minor = (int(x) for x in v.strip().split(".")[:2])
        except ValueError:
            raise ValueError(f"bad bytecode version {v!r}; expected 'MAJOR.MINOR' like '13.4'") from None
        bv = BytecodeVersion(major, minor)
    else:
        bv = BytecodeVersion(*tuple(v)[:2])
    if bv[:2] not in [s[:2] for s in SUPPORTED]:
        raise ValueError(f"bytecode version {bv} is not supported; tilejit writes "
                         f"{', '.join(map(str, SUPPORTED))}")
    return bv
