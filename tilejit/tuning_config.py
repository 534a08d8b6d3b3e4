"""``tile.Config``: one autotuning configuration (an output tile shape, compile options and
``tile.Constant`` values), checked when it is made."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Sequence

from .compiler import CompileOptions

_OPTION_NAMES = ("occupancy", "num_ctas", "opt_level", "num_worker_warps")


def _tile_shape(tile) -> tuple:
    """``Config(tile=...)`` as a tuple of positive ints (one int is a one-dimensional tile)."""
    if isinstance(tile, int) and not isinstance(tile, bool):
        tile = (tile,)
    if isinstance(tile, (str, bytes)) or not isinstance(tile, (tuple, list)) or \
            not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in tile):
        raise TypeError(f"tile.Config: tile must be a tuple of positive ints (the output "
                        f"partition's tile shape, e.g. tile=(128, 64)), got {tile!r}")
    return tuple(tile)


class Config:
    """One configuration: ``tile=`` (output partition tile shape), compile options and
    ``tile.Constant`` values by name, e.g. ``Config(tile=(128, 64), BK=32, occupancy=2)``."""

    def __init__(self, tile: Optional[Sequence[int]] = None, *, occupancy: Optional[int] = None,
                 num_ctas: Optional[int] = None, opt_level: Optional[int] = None,
                 num_worker_warps: Optional[int] = None, **constants: Any):
        self.tile = _tile_shape(tile) if tile is not None else None
        for name, v in (("occupancy", occupancy), ("num_ctas", num_ctas),
                        ("opt_level", opt_level), ("num_worker_warps", num_worker_warps)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise TypeError(f"tile.Config: {name} must be a non-negative int, got {v!r}")
        self.occupancy, self.num_ctas, self.opt_level = occupancy, num_ctas, opt_level
        self.num_worker_warps = num_worker_warps
        self.constants = dict(constants)

    def options(self, base: CompileOptions) -> CompileOptions:
        def pick(mine, theirs):
            return mine if mine is not None else theirs
        return dataclasses.replace(
            base, occupancy=pick(self.occupancy, base.occupancy),
            num_cta_in_cga=pick(self.num_ctas, base.num_cta_in_cga),
            opt_level=pick(self.opt_level, base.opt_level),
            num_worker_warps=pick(self.num_worker_warps, base.num_worker_warps))

    def as_dict(self) -> Dict[str, Any]:
        """A JSON-able form (the disk cache keeps default-space winners this way)."""
        d = {n: getattr(self, n) for n in _OPTION_NAMES if getattr(self, n) is not None}
        if self.tile is not None:
            d["tile"] = list(self.tile)
        if self.constants:
            d["constants"] = dict(self.constants)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Config":
        return cls(d.get("tile"), **{n: d[n] for n in _OPTION_NAMES if n in d},
                   **d.get("constants", {}))

    def __repr__(self) -> str:
        parts = [f"tile={self.tile}"] if self.tile is not None else []
        parts += [f"{n}={getattr(self, n)}" for n in _OPTION_NAMES if getattr(self, n) is not None]
        parts += [f"{k}={v!r}" for k, v in self.constants.items()]
        return f"Config({', '.join(parts)})"
