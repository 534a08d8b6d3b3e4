"""The default search space of ``tile.autotune`` (used when no ``configs=`` are given).

The space is built from the kernel itself, once per key:

* **the output tile** (the partitioned parameter's tile shape), axis by axis, from how the kernel's
  source uses the partition (``tuning_source.analyze``):

  1. an axis whose tile extent the kernel never reads (``BM, _, D = o.shape``) is 1;
  2. an axis whose block index it never reads (``i = y.block[0]``, or ``i, h, _ = o.block``) is
     covered whole by one tile (next power of two of the extent): the kernel assumes it;
  3. when the kernel passes the block index on as a whole (``x.load(z.block, z.shape)``,
     ``z.store(t)``, ``tile.load_tile_like(x, z)``), an axis it reduces along with a literal
     ``axis=`` (``tile.max(t, axis=1)``, in its source or in a ``@tile.function`` it calls; a
     module-level int counts, an axis the source does not spell out counts as every axis) is
     covered whole too;
  4. every other axis is searched over powers of two, bounded by the tensor (next power of two of
     the extent), by 256 where two or more axes are searched (16 at least: the tensor cores'
     smallest) and by a budget of 32K elements per tile (a 128x256 float32 accumulator is what
     one block's registers hold); 16K for 8-bit inputs with two or more searched axes, whose
     float8 products keep a second float32 accumulator (tiles over 8K elements rank lower),
     unless a ``FAST_ACC`` constant is True (the tensor cores' fast sum: one accumulator).
     In a kernel that multiplies tiles (``SourceFacts.mma``) a lone searched axis is an
     accumulator's rows: :data:`MMA_ROWS_MIN` to :data:`MULTI_AXIS_MAX`.

  With an explicit ``grid=`` the kernel picks its own tile positions, so rules 2 and 3 do not
  apply.
* **``tile.Constant`` parameters, by name** (:data:`CONSTANT_ROLES`): ``BK``/``BLOCK_K``/``TILE_K``
  (reduction tile: 32, 64, 128; twice that for 8-bit inputs), other ``B<X>``/``BLOCK_<X>``/
  ``TILE_<X>`` (tile extents: 64, 128; where two or more of them are searched, they are the
  output tile of a kernel that places its own tiles (``c.partition((BM, BN))``): 64, 128 and 256,
  at most 32K elements (16K for 8-bit inputs), and that tile counts as the output tile below),
  ``BLOCK``/``TILE``/``BLOCK_SIZE`` (1-D: 256..4096),
  ``GROUP``/``GROUP_M``/``GROUP_SIZE_M`` (1, 8), ``SPLIT_K``/``NUM_SPLITS``/``KV_SPLITS`` (1, 2, 4,
  8), ``LATENCY``/``*_LATENCY`` (2, 4, 8), ``TMA``/``ALLOW_TMA``/``USE_TMA`` (True, False),
  ``PERSISTENT`` (False, True); in a kernel that places its own row tiles
  (``x.load((r, 0), (ROWS, WIDTH))`` with a ``grid=``: persistent and chunked row kernels)
  ``WIDTH``/``ROW_WIDTH`` is the whole extent it tiles (next power of two), ``CHUNK`` 2K-8K and
  ``ROWS``/``BLOCK_ROWS`` 1-32 (each at most the extent it tiles), the (ROWS, WIDTH or CHUNK)
  tile at most 32K elements, and that tile counts as a row kernel's tile below. A constant with
  a default value in the signature keeps it (unless its name says it is tunable); any other
  constant must be passed at the call.
* **compile options**: occupancy 1, 2, 4 (4 only for tiles of at most 8K elements; after
  timing, ``autotune`` also tries the winner one occupancy below and above), ``num_ctas``
  1 and 2 (2 only on sm_90 and newer, for tiles of 16K elements or more, and where the grid's
  first axis is even: a cluster of two must divide it), and ``num_worker_warps=8`` (two compute
  warp groups) for matmul-like tiles whose float32 accumulators outgrow one warp group: over 16K
  elements (128x256), or over 8K with 8-bit inputs (whose promoted sum keeps two accumulators).
  Without it tileiras spills those tiles (128x256 fp16: 45 against 700-750 TFLOP/s on an H200);
  so does the accumulator of any kernel that multiplies tiles (attention's 256x128 query tile).
  Other tiles of 16K elements or more with one searched axis (row kernels, attention's 128x128
  query tile) try both (None, 8).

Every combination is scored by a small model (:func:`score`: the tail of the last wave of blocks
on the GPU's SMs, the data reuse of the tile, register pressure; a matmul-like tile with the TMA
unit off pays :data:`TMA_OFF_MATMUL`) and the best ``max_configs``
(default :data:`MAX_CONFIGS`) are kept, best first; on the simulator the first one that compiles
wins. ``space={...}`` overrides any part: ``{"tile": (None, "whole"), "BK": (32, 64),
"occupancy": (1, 2), "num_ctas": (1,), "num_worker_warps": (None, 8), "max_configs": 8}`` (a tile
entry is None for the rules above, an int, a tuple of ints, or ``"whole"``).

This module builds plain candidates (dicts); ``autotune.py`` turns them into ``Config``.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .tuning_source import ANY_AXIS, SourceFacts

#: Configs kept after pruning: tileiras takes 0.3-1.8 s per matmul config (measured with
#: ``kernel.compile(arch="sm_90")``), so 24 configs compile in ~2 s of wall time on a 16-core
#: host (``autotune.py`` runs tileiras in parallel threads), well inside the 10 s per key.
MAX_CONFIGS = 24
#: Bump when the rules change: winners on disk are kept per space version.
SPACE_VERSION = 8
#: The SM count assumed where no GPU says (the simulator): an H100 SXM's.
NOMINAL_SMS = 132
TILE_ELEMS_MAX = 32 * 1024     # 128 x 256: one block's float32 accumulator in registers
# 8-bit products (float8, int8) on Hopper: tiles of at most 16K elements, and those over 8K rank
# below 8K ones. With float8's promoted float32 sum tileiras holds two accumulators: on an H200
# 64x128 tiles ran at 1110 TFLOP/s, 128x128 at 530, 128x256 and 256x128 at 40-70 (2026-11-27)
NARROW_ELEMS_MAX = 16 * 1024
NARROW_ELEMS_GOOD = 8 * 1024
#: a constant by this name, True, says the 8-bit products keep the tensor cores' fast sum (one
#: accumulator): their tiles get fp16's rules. On an H200 128x256 with two warp groups won
#: vendor.py's fast-sum rows at 4096^3 and 8192^3 (2026-11-28), and ran at 0.1000 against
#: 0.1004 ms for 128x128 in the default space at 4096^3 (128x256 BK 256: 2x slower)
FAST_SUM_NAMES = r"(USE_)?FAST_ACC(UM)?"
# One warp group's float32 accumulator: larger matmul tiles take two compute warp groups
# (num_worker_warps=8). On an H200 (2026-11-27) 128x256x32 fp16 tiles went from 45 to 749
# TFLOP/s at 4096^3, and float8's 128x128x256 promoted-sum tiles from 470 to 1120 at 4096^3 and
# 1114 at 8192^3 (64x128: 837).
ONE_GROUP_ELEMS = 16 * 1024
TWO_GROUPS = 8
# ROW_GROUPS: a tile of 16K elements or more with one searched axis (row kernels, attention's
# query tile) tries two warp groups too: on an H200 (2026-11-27, fp16 rows of 32K) LayerNorm
# went from 2581 to 3002 GB/s with them and RMSNorm from 3225 to 3430, softmax unchanged; at
# 16K-element rows LayerNorm's best takes them in every vendor.py run since 2026-11-28 (0.0746
# against 0.0757 ms), softmax's is 5% slower with them (timing drops it); attention's best
# 128x128 query tiles (D = 128) take them in every vendor.py row (2026-11-28)
ROW_GROUPS_MIN = 16 * 1024
MULTI_AXIS_MAX = 256           # per axis, where two or more axes are searched
MULTI_AXIS_MIN = 16            # tensor-core fragments
MMA_ROWS_MIN = 64              # one searched axis of an MMA kernel's accumulator (wgmma's M)
ONE_D_RANGE = (256, 4096)      # a 1-D searched tile (element-wise kernels)
# matmul-like tiles with the TMA unit off rank after every config with it on (kept in the space,
# pruned first): tileiras does not pipeline plain loads (Triton's tutorial 09 on an H200,
# 2026-11-27: 0.11-0.23x the same kernel with TMA)
TMA_OFF_MATMUL = 0.5
WHOLE = "whole"

#: (regex over the constant's name, role); the first match wins
CONSTANT_ROLES: Tuple[Tuple[str, str], ...] = (
    (r"(B|BLOCK_?|TILE_?)(SIZE_?)?K", "k_extent"),
    (r"(BLOCK|TILE)(_?SIZE)?", "extent_1d"),
    (r"(B|BLOCK_?|TILE_?)(SIZE_?)?[A-Z]", "extent"),
    (r"GROUP(_?SIZE)?(_?[MN])?", "group"),
    (r"(SPLIT_?K|SPLITS|NUM_SPLITS|SPLIT_?KV|KV_SPLITS|NUM_KV_SPLITS)", "split"),
    (r"(\w+_)?LATENCY", "latency"),
    (r"(ALLOW_|USE_)?TMA", "tma"),
    (r"PERSISTENT", "persistent"),
    (r"(BLOCK_)?ROWS(_PER_BLOCK)?", "rows"),
    (r"(ROW_)?WIDTH", "width"),
    (r"CHUNK(_?SIZE)?", "chunk"),
)
ROLE_VALUES: Dict[str, tuple] = {
    "k_extent": (64, 32, 128), "extent": (128, 64), "extent_1d": (1024, 256, 4096),
    "group": (8, 1), "split": (1, 2, 4, 8), "latency": (4, 2, 8), "tma": (True, False),
    "persistent": (False, True), "rows": (1, 2, 4, 8, 16, 32), "chunk": (4096, 2048, 8192),
}
#: the roles of a kernel that places its own row tiles (``x.load((r, 0), (ROWS, WIDTH))``, a
#: grid= of its own: persistent and chunked row kernels): ROWS rows of the whole row (WIDTH, the
#: next power of two of the extent it tiles) or of CHUNK columns
ROW_TILE_ROLES = ("rows", ("width", "chunk"))
_ROW_TILE_ROLE_SET = frozenset((ROW_TILE_ROLES[0],) + ROW_TILE_ROLES[1])
#: the extents of an output tile made of two or more constants (BM, BN): a kernel that places its
#: own tiles, such as a persistent matmul, whose best tile on an H200 is 128x256 with two warp
#: groups (743 against cuBLAS's 742 TFLOP/s at 4096^3 fp16, 2026-11-28)
TILE_EXTENTS = (128, 256, 64)


def constant_role(name: str) -> Optional[str]:
    """The tuning role a ``tile.Constant`` parameter's name gives it (None: not tunable)."""
    for pattern, role in CONSTANT_ROLES:
        if re.fullmatch(pattern, name):
            return role
    return None


# --------------------------------------------------------------------------------------------------
# the space for one key
@dataclass
class Problem:
    """What the space of one key depends on: the partitioned array's shape (None: no tile),
    the smallest element size among the array arguments, the constants the call fixes, their
    defaults, the device's SM count and architecture, and whether ``grid=`` is explicit."""
    shape: Optional[Tuple[int, ...]]
    itemsize: int
    constant_names: Tuple[str, ...]
    fixed: Dict[str, Any] = field(default_factory=dict)
    defaults: Dict[str, Any] = field(default_factory=dict)
    num_sms: int = NOMINAL_SMS
    arch: Tuple[int, int] = (9, 0)
    explicit_grid: bool = False
    #: tileiras writes the num_worker_warps hint (Tile IR bytecode 13.3 and newer)
    worker_warps: bool = True
    #: the array arguments' shapes by parameter name (the extents a WIDTH or ROWS tiles)
    arrays: Dict[str, Tuple[int, ...]] = field(default_factory=dict)

    @property
    def promoted_8bit(self) -> bool:
        """8-bit inputs whose products promote their sum to float32: tileiras keeps a second
        float32 accumulator, so tiles get the 8-bit budget. A fast sum (a ``FAST_ACC``-named
        constant passed or defaulted True, torch's ``use_fast_accum``) keeps one, as fp16 does."""
        if self.itemsize != 1:
            return False
        for name in self.constant_names:
            if re.fullmatch(FAST_SUM_NAMES, name):
                value = self.fixed.get(name, self.defaults.get(name))
                if value is not None and bool(value):
                    return False
        return True


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _pow2_range(lo: int, hi: int) -> List[int]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out


def axis_rules(facts: SourceFacts, prob: Problem) -> List[Any]:
    """Per axis of the output tile: an int (fixed) or None (searched), by the rules above."""
    rank = len(prob.shape)
    reduced = set(range(rank)) if ANY_AXIS in facts.reduced_axes else \
        {a % rank for a in facts.reduced_axes if -rank <= a < rank}
    out: List[Any] = []
    for k, extent in enumerate(prob.shape):
        if not facts.reads("shape", k):
            out.append(1)
        elif not prob.explicit_grid and (not facts.reads("block", k) or
                                         (facts.block_wholesale and k in reduced)):
            out.append(_pow2_ceil(extent))
        else:
            out.append(None)
    return out


def tile_candidates(facts: SourceFacts, prob: Problem, spec=None) -> List[Tuple[int, ...]]:
    """Every output tile shape the rules (or ``spec``, the ``space["tile"]`` override) allow."""
    rank = len(prob.shape)
    rules = axis_rules(facts, prob)
    if spec is not None:
        if len(spec) != rank:
            raise TypeError(f"tile.autotune space['tile'] has {len(spec)} entries for a "
                            f"{rank}-d partition")
        for k, s in enumerate(spec):
            if s == WHOLE:
                rules[k] = _pow2_ceil(prob.shape[k])
            elif s is not None:
                rules[k] = tuple(int(v) for v in s) if isinstance(s, (tuple, list)) else int(s)
    searched = [k for k, r in enumerate(rules) if r is None]
    fixed_elems = math.prod(r if isinstance(r, int) else 1 for r in rules)
    budget = NARROW_ELEMS_MAX if prob.promoted_8bit and len(searched) > 1 else TILE_ELEMS_MAX
    per_axis = []
    for k, r in enumerate(rules):
        if isinstance(r, int):
            per_axis.append([r])
        elif isinstance(r, tuple):
            per_axis.append(list(r))
        else:
            hi = _pow2_ceil(prob.shape[k])
            if len(searched) > 1:
                per_axis.append(_pow2_range(min(MULTI_AXIS_MIN, hi), min(hi, MULTI_AXIS_MAX)))
            elif rank == 1:
                per_axis.append(_pow2_range(min(ONE_D_RANGE[0], hi), min(hi, ONE_D_RANGE[1])))
            else:
                top = max(1, min(hi, budget // fixed_elems))
                low = 1
                if facts.mma:
                    # an accumulator's rows, as a matmul tile's: 64 (a warp group's MMA;
                    # attention's 32-row query tiles ran at 0.18-0.25x of 128-row ones on an
                    # H200, 2026-11-28) to 256 (beside the accumulator attention holds
                    # its scores, rows x BN)
                    top = min(top, MULTI_AXIS_MAX)
                    low = min(MMA_ROWS_MIN, top)
                per_axis.append(_pow2_range(low, top))
    shapes = [s for s in itertools.product(*per_axis)
              if not searched or math.prod(s) <= max(budget, fixed_elems)]
    return shapes


def tile_constants(prob: Problem) -> Tuple[str, ...]:
    """The extent constants (``BM``, ``BN``, ...) that together make the output tile of a kernel
    without a partitioned output: two or more searched ones (not fixed by the call), else none."""
    if prob.shape is not None:
        return ()
    names = tuple(n for n in prob.constant_names
                  if n not in prob.fixed and constant_role(n) == "extent")
    return names if len(names) >= 2 else ()


def row_tile_constants(prob: Problem) -> Tuple[str, ...]:
    """(ROWS, WIDTH or CHUNK): the constants that make the row tile of a kernel that places its
    own row tiles (no partitioned output), else ()."""
    if prob.shape is not None:
        return ()
    rows_role, cols_roles = ROW_TILE_ROLES
    roles = {constant_role(n): n for n in reversed(prob.constant_names)}
    cols = next((roles[r] for r in cols_roles if r in roles), None)
    return (roles[rows_role], cols) if rows_role in roles and cols else ()


def _spanned_extent(name: str, facts: Optional[SourceFacts], prob: Problem) -> Optional[int]:
    """The largest extent among the array axes constant ``name`` is the tile extent of."""
    spans = facts.spans.get(name, ()) if facts is not None else ()
    ext = [prob.arrays[a][k] for a, k in spans if k < len(prob.arrays.get(a, ()))]
    return max(ext) if ext else None


def _row_tile_values(name: str, role: str, facts: Optional[SourceFacts], prob: Problem) -> tuple:
    """ROWS (1-32), CHUNK (2K-8K) bounded by the extent they tile; WIDTH that whole extent."""
    hi = _spanned_extent(name, facts, prob)
    if hi is None and role == "width":
        raise TypeError(
            f"tile.autotune with no configs: the tile.Constant '{name}' is a row's width, but "
            f"the kernel loads no tile of it from an array parameter (x.load(index, (ROWS, "
            f"{name}))); pass it at the call ({name}=...) or list its values in "
            f"space={{'{name}': (...)}}")
    if hi is None:
        return ROLE_VALUES[role]
    hi = _pow2_ceil(hi)
    if role == "width":
        return (hi,)
    return tuple(v for v in ROLE_VALUES[role] if v <= hi) or (hi,)


def constant_candidates(prob: Problem, overrides: Dict[str, Sequence],
                        facts: Optional[SourceFacts] = None) -> Dict[str, tuple]:
    """Candidate values per constant not fixed by the call (first value preferred)."""
    out = {}
    tiled = tile_constants(prob)
    for name in prob.constant_names:
        if name in prob.fixed:
            continue
        if name in overrides:
            out[name] = tuple(overrides[name])
            continue
        role = constant_role(name)
        if role is None:
            if name in prob.defaults:
                out[name] = (prob.defaults[name],)
                continue
            raise TypeError(
                f"tile.autotune with no configs: no candidates for the tile.Constant '{name}'; "
                f"pass it at the call ({name}=...), give it a default value, name it by the "
                f"convention (BK, BLOCK_K, GROUP, SPLIT_K, LATENCY, TMA, PERSISTENT, ROWS, WIDTH, "
                f"CHUNK, ...; see "
                f"docs/tooling.md) or list its values in space={{'{name}': (...)}}")
        if role in _ROW_TILE_ROLE_SET:
            out[name] = _row_tile_values(name, role, facts, prob)
            continue
        vals = TILE_EXTENTS if name in tiled else ROLE_VALUES[role]
        if role == "k_extent" and prob.itemsize == 1:
            vals = tuple(2 * v for v in vals)
        out[name] = vals
    return out


def worker_warps(tile: Optional[tuple], prob: Problem, searched: int,
                 overrides: Dict[str, Sequence], mma: bool = False) -> tuple:
    """num_worker_warps values for one tile shape (None: tileiras chooses). ``mma``: the tile
    is a float32 accumulator of the tensor cores whatever its searched axes (attention's query
    tile): over one warp group's share it takes two."""
    if "num_worker_warps" in overrides:
        return tuple(overrides["num_worker_warps"])
    elems = math.prod(tile) if tile else 0
    limit = NARROW_ELEMS_GOOD if prob.promoted_8bit else ONE_GROUP_ELEMS
    if prob.worker_warps and (searched >= 2 or mma) and elems > limit:
        return (TWO_GROUPS,)
    if prob.worker_warps and searched < 2 and elems >= ROW_GROUPS_MIN:
        return (None, TWO_GROUPS)          # ROW_GROUPS
    return (None,)


def option_candidates(tile: Optional[tuple], blocks0: Optional[int], prob: Problem,
                      overrides: Dict[str, Sequence], searched: int = 2) -> Tuple[tuple, tuple]:
    """(occupancies, num_ctas values) for one tile shape; clusters only for tiles with two
    searched axes (matmul-like), where TMA multicast can share operand tiles."""
    elems = math.prod(tile) if tile else 0
    occ = tuple(overrides["occupancy"]) if "occupancy" in overrides else \
        ((1, 2, 4) if elems <= 8 * 1024 else (1, 2))
    if "num_ctas" in overrides:
        ctas = tuple(overrides["num_ctas"])
    elif prob.arch >= (9, 0) and elems >= 16 * 1024 and searched >= 2 and \
            blocks0 is not None and blocks0 % 2 == 0:
        ctas = (1, 2)
    else:
        ctas = (1,)
    return occ, ctas


def score(tile: Optional[tuple], blocks: Optional[int], occupancy: int, num_ctas: int,
          num_sms: int, searched_axes: int, narrow: bool = False,
          warps: Optional[int] = None) -> float:
    """The model that orders candidates: the share of the last wave of blocks that is busy, the
    data reuse of a 2-D tile (its harmonic mean extent over 128, capped at 1), and a penalty for
    occupancy beyond what one SM's registers hold (``narrow``: 8-bit products, whose tiles
    over :data:`NARROW_ELEMS_GOOD` elements pay it too, unless two warp groups (``warps``)
    share them)."""
    slots = max(1, num_sms * occupancy)
    fill = 1.0 if not blocks else blocks / (math.ceil(blocks / slots) * slots)
    elems = math.prod(tile) if tile else 0
    reuse = 1.0
    if tile and searched_axes >= 2:
        big = sorted(tile)[-2:]
        reuse = min(1.0, 2.0 / (1.0 / big[0] + 1.0 / big[1]) / 128.0)
    elif tile:              # row kernels and the like: bytes in flight per block
        reuse = min(1.0, elems / 16384.0)
    # two blocks of 128x256 float32 accumulators are the whole register file
    pressure = 0.5 if elems * occupancy >= 2 * TILE_ELEMS_MAX else 1.0
    if narrow and searched_axes >= 2 and elems > NARROW_ELEMS_GOOD and \
            (not warps or (tile and max(tile) > 2 * min(tile))):
        # two warp groups rescue 128x128 float8 tiles, not 64x256 (470-530 TFLOP/s against
        # 1080-1120 on an H200)
        pressure *= 0.5
    cluster = 0.97 if num_ctas > 1 else 1.0       # kept, but after the same config without
    return fill * reuse * pressure * cluster


def build(facts: SourceFacts, prob: Problem, overrides: Optional[Dict[str, Any]] = None,
          blocks_of: Optional[Callable[[dict], Optional[Tuple[int, int, int]]]] = None
          ) -> List[dict]:
    """The pruned, ordered default space: candidate dicts with ``tile``, ``occupancy``,
    ``num_ctas``, ``num_worker_warps`` and ``constants``. ``blocks_of(candidate)`` gives the
    launch grid of a candidate (from ``grid=``) or None; without it the grid is the partition's."""
    overrides = dict(overrides or {})
    unknown = set(overrides) - {"tile", "occupancy", "num_ctas", "num_worker_warps",
                                "max_configs"} - set(prob.constant_names)
    if unknown:
        raise TypeError(f"tile.autotune space: unknown entr{'ies' if len(unknown) > 1 else 'y'} "
                        f"{', '.join(sorted(unknown))} (tile, occupancy, num_ctas, "
                        f"num_worker_warps, max_configs or a tile.Constant name)")
    limit = int(overrides.get("max_configs", MAX_CONFIGS))
    tiles: List[Optional[tuple]] = [None]
    searched = 0
    if prob.shape is not None:
        tiles = tile_candidates(facts, prob, overrides.get("tile"))
        searched = sum(r is None for r in axis_rules(facts, prob))
    consts = constant_candidates(prob, overrides, facts)
    names = list(consts)
    tiled = tile_constants(prob)            # without a partitioned output: BM, BN
    row_tile = () if tiled else row_tile_constants(prob)      # or ROWS, WIDTH
    tma_names = [n for n in names if constant_role(n) == "tma"]
    narrow = prob.promoted_8bit                 # read once: it scans the constants' names
    budget = NARROW_ELEMS_MAX if narrow else TILE_ELEMS_MAX
    scored = []
    for t in tiles:
        for values in itertools.product(*(consts[n] for n in names)):
            cand = {"tile": t, "constants": dict(zip(names, values))}
            shape, axes = t, searched if t is not None else 2
            placed = tiled or row_tile
            if placed:
                shape = tuple(cand["constants"].get(n, prob.fixed.get(n)) for n in placed)
                axes = 2 if tiled else 1
                # values listed in space= are tried whatever their size; those passed at the
                # call bound the others (unless they alone are over the budget)
                limit_elems = budget if tiled else TILE_ELEMS_MAX
                if math.prod(shape) > limit_elems and not any(n in overrides for n in placed) \
                        and math.prod(v for n, v in zip(placed, shape)
                                      if n in prob.fixed) <= limit_elems:
                    continue
            grid = blocks_of(cand) if blocks_of is not None else None
            if grid is None and t is not None:
                grid = tuple(math.ceil(e / s) for e, s in zip(prob.shape, t)) + (1,) * 3
            blocks = math.prod(grid[:3]) if grid else None
            occs, ctas = option_candidates(shape, grid[0] if grid else None, prob, overrides,
                                           axes)
            warps = worker_warps(shape, prob, axes, overrides, facts.mma and not row_tile)
            rank = sum(consts[n].index(v) for n, v in zip(names, values))
            off = any(cand["constants"][n] is False for n in tma_names)
            for oi, occ in enumerate(occs):
                for ci, nc in enumerate(ctas):
                    for wi, w in enumerate(warps):
                        s = score(shape, blocks, occ, nc, prob.num_sms, axes, narrow, w)
                        if off and shape is not None and (tiled or searched >= 2):
                            s *= TMA_OFF_MATMUL
                        scored.append((-round(s, 6), rank + oi + ci + wi, len(scored),
                                       dict(cand, occupancy=occ, num_ctas=nc,
                                            num_worker_warps=w)))
    scored.sort(key=lambda x: x[:3])
    return [c for *_, c in scored[:limit]]
