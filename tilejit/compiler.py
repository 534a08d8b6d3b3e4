"""The compile pipeline: a Python kernel and its specialization -> a :class:`Compiled` kernel.

::

    compiled = compile(pyfunc, keys, constants, target, options)

Stages: Numba typing (``typing``) -> region tree (``lowering.structurize``) -> Tile IR
(``lowering``) -> verify -> for an architecture target, bytecode (``tileir.bytecode``) and a cubin
from ``tileiras`` through the disk cache (``toolchain``). The ``"sim"`` target stops at the
verified Tile IR module, which the simulator interprets. ``TILEJIT_DUMP`` prints or writes the
intermediate forms; every stage is timed (``Compiled.timings``).

The front end (typing, lowering) imports Numba: it is imported here on first use only. For an
architecture target the warm-start index (``toolchain.index``, keyed by :func:`index_key`) is
tried first, so a process whose kernels were all compiled before never imports Numba.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
from dataclasses import InitVar, dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple

from . import envvars
from . import keys as _keys
from .errors import CompileError, InternalError, TileJitError, ToolchainError

SIM_TARGET = "sim"          # the simulator's compile target (others are architectures: "sm_90")


@dataclass(frozen=True)
class CompileOptions:
    """Per-launch compile options (part of the specialization key)."""

    occupancy: Optional[int] = None
    num_cta_in_cga: Optional[int] = None
    max_divisibility: Optional[int] = None
    opt_level: int = 3
    #: contract ``a * b + c`` into one fused multiply-add (one rounding instead of two)
    fma: bool = True
    #: cuTile Python's language rules (``tilejit.cutile`` kernels): undecorated Python functions
    #: the kernel calls are inlined as ``@tile.function`` helpers (else calling one is an error),
    #: and the implicit promotions cuTile refuses are errors (typing/promotion.cutile_rules)
    plain_helpers: bool = False
    #: warps of the compute warp groups in tileiras's warp-specialized kernels (4: one warp group,
    #: 8: two, sharing the tile's registers); None lets tileiras choose. tileiras 13.4 takes 4 and
    #: 8; 13.5 any power of two in [1, 32]. 8 for big accumulators (128x256 matmul tiles) and
    #: normalizations of long rows, where one warp group runs out of registers; 1 or 2 for short
    #: rows, whose reductions then stay within a warp (no block barrier).
    num_worker_warps: Optional[int] = None
    #: ``num_ctas=``, the name ``tile.entry``, ``tile.Config`` and cuTile use, for num_cta_in_cga
    num_ctas: InitVar[Optional[int]] = None

    def __post_init__(self, num_ctas=None):
        if num_ctas is not None:
            if self.num_cta_in_cga is not None and self.num_cta_in_cga != num_ctas:
                raise ValueError(f"CompileOptions: num_ctas={num_ctas} and num_cta_in_cga="
                                 f"{self.num_cta_in_cga} disagree (they are one option)")
            object.__setattr__(self, "num_cta_in_cga", num_ctas)
        if self.occupancy is not None and not 1 <= int(self.occupancy) <= 32:
            raise ValueError(f"occupancy must be in [1, 32], got {self.occupancy}")
        n = self.num_cta_in_cga
        if n is not None and (n < 1 or n > 16 or n & (n - 1)):
            raise ValueError(f"num_cta_in_cga (num_ctas) must be a power of two in [1, 16], got {n}")
        w = self.num_worker_warps
        if w is not None and (not isinstance(w, int) or w < 1 or w > 32 or w & (w - 1)):
            raise ValueError(f"num_worker_warps must be a power of two in [1, 32], got {w!r}")
        d = self.max_divisibility
        if d is not None and (d < 1 or d & (d - 1)):
            raise ValueError(f"max_divisibility must be a power of two, got {d}")
        if not 0 <= int(self.opt_level) <= 3:
            raise ValueError(f"opt_level must be 0..3, got {self.opt_level}")

    def hints(self) -> Dict[str, int]:
        """The optimization hints written into the kernel's entry."""
        h = {}
        if self.occupancy is not None:
            h["occupancy"] = int(self.occupancy)
        if self.num_cta_in_cga is not None:
            h["num_cta_in_cga"] = int(self.num_cta_in_cga)
        if self.num_worker_warps is not None:
            h["num_worker_warps_per_cta"] = int(self.num_worker_warps)
        return h


@dataclass
class Compiled:
    """One compiled specialization: what launching it needs, and what produced it.

    ``slots`` are the ABI slot types of its parameters (from the keys), ``name`` the kernel
    symbol; for an architecture target ``cubin`` holds the code, for ``"sim"`` ``module`` (the
    Tile IR the simulator runs). ``executables`` caches the per-device loaded forms
    (``backends``)."""

    key: Any
    name: str
    target: str
    slots: Tuple[str, ...]
    module: Any = None
    typed: Any = None
    bytecode: Optional[bytes] = None
    cubin: Optional[bytes] = None
    disk_hit: bool = False
    timings: Dict[str, float] = field(default_factory=dict)
    executables: Dict[Any, Any] = field(default_factory=dict)
    keys: Tuple = ()
    constants: Dict[str, Any] = field(default_factory=dict)


def symbol(name: str) -> str:
    """A kernel symbol from a Python name (letters, digits and underscores)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "kernel"


dump_stages = envvars.dump_stages


# --- what a compile is about, in words (dump headers, inspect output, `cache list`) -------------
def runtime_names(pyfunc, constants) -> Tuple[str, ...]:
    """The names of ``pyfunc``'s parameters that have ABI slots (not tile.Constant ones)."""
    import inspect
    return tuple(n for n in inspect.signature(pyfunc).parameters if n not in constants)


def signature_text(pyfunc, keys: Sequence, constants: dict) -> str:
    """``add(z: partition float32 1-d tile (16,), x: tensor float32 1-d; BK=32)``."""
    args = ", ".join(f"{n}: {_keys.as_key(k).describe()}"
                     for n, k in zip(runtime_names(pyfunc, constants), keys))
    consts = ", ".join(f"{n}={v!r}" for n, v in sorted(constants.items()))
    return f"{pyfunc.__name__}({args}{'; ' + consts if consts else ''})"


def source_text(pyfunc) -> str:
    """Where ``pyfunc`` is defined: ``file.py:12`` (``Cell In[3]:2`` in a notebook)."""
    from .errors import notebook_cell
    code = pyfunc.__code__
    return f"{notebook_cell(code.co_filename) or code.co_filename}:{code.co_firstlineno}"


def parameter_comment(pyfunc, keys: Sequence, constants: dict) -> str:
    """Comment lines naming the entry's ``%argN`` after the Python parameters (the printer keeps
    tileirdisasm's ``%argN`` names)."""
    lines, n = [], 0
    for name, k in zip(runtime_names(pyfunc, constants), keys):
        k = _keys.as_key(k)
        count = len(k.abi_slots())
        ndim = getattr(k, "ndim", None)
        if k.kind in ("tensor", "partition") and count == 2 * ndim + 1:
            parts = ["base"] + [f"shape[{i}]" for i in range(ndim)] + \
                [f"strides[{i}]" for i in range(ndim)]
            text = ", ".join(f"%arg{n + j} {p}" for j, p in enumerate(parts))
        else:
            text = ", ".join(f"%arg{n + j}" for j in range(count))
        lines.append(f"//   {name}: {text}" if count else f"//   {name}: (no slot)")
        n += count
    return "// parameters:\n" + "\n".join(lines) if lines else "// parameters: none"


def is_internal(pyfunc) -> bool:
    """A kernel of tilejit itself (``api.zeros``, ``api.arange``...): not dumped unless
    ``TILEJIT_DUMP`` names ``internal``."""
    return (getattr(pyfunc, "__module__", "") or "").startswith("tilejit.")


def _dumping(pyfunc, stage: str) -> bool:
    stages = dump_stages()
    return stage in stages and ("internal" in stages or not is_internal(pyfunc))


def _dump_header(pyfunc, keys, constants, target: str, stage: str) -> str:
    where = "the simulator" if target == SIM_TARGET else target
    return (f"// ==== tilejit {stage}: {signature_text(pyfunc, keys, constants)} for {where}, "
            f"defined at {source_text(pyfunc)} ====")


def check_worker_warps(options: CompileOptions) -> None:
    """Refuse a worker-warp count the installed tileiras would silently ignore: tileiras 13.4
    honours 4 and 8 only, 13.5 any power of two (measured: its SASS for 1 and 2 differs, from
    bytecode 13.4 as well)."""
    w = options.num_worker_warps
    if w is None or w in (4, 8):
        return
    from .toolchain import tileiras
    v = tileiras.version()
    if v is not None and v[:2] < (13, 5):
        raise CompileError(
            f"num_worker_warps={w} needs tileiras 13.5 or newer (the installed tileiras "
            f"{v[0]}.{v[1]} takes 4 or 8 and would ignore {w}). Use num_worker_warps=4 or 8, "
            f"leave it out (tileiras chooses), or install tileiras 13.5 (`pip install "
            f"'nvidia-cuda-tileiras==13.5.*' 'nvidia-cuda-nvcc==13.5.*' 'nvidia-nvvm==13.5.*'`)")


def bytecode_version(target: str):
    """The bytecode version to write: the newest tileiras accepts (the newest we know for the
    simulator)."""
    from .tileir import LATEST
    if target == SIM_TARGET:
        return LATEST
    from .toolchain import tileiras
    return tileiras.max_bytecode_version()


def front_end(pyfunc, keys: Sequence, constants: dict, target: str, options: CompileOptions,
              const_grid=None, name: Optional[str] = None, version=None, grid_ones=None,
              for_gpu: bool = False):
    """Typing, structurizing, lowering and verifying: ``(typed, module, timings)``. An
    exception that is not a tilejit error is a bug in tilejit: an :class:`InternalError`.
    ``for_gpu``: the module a GPU would get even for the simulator target (no checks of the
    kernel's promises; what ``inspect_tileir`` shows)."""
    try:
        return _front_end(pyfunc, keys, constants, target, options, const_grid, name, version,
                          grid_ones, for_gpu)
    except TileJitError:
        raise
    except Exception as e:      # noqa: BLE001  (reported, with the original chained)
        raise InternalError(
            f"tilejit failed compiling '{pyfunc.__name__}' ({type(e).__name__}: {e}). This is "
            f"a bug in tilejit, not in your kernel: please report it with this message and the "
            f"kernel's source (TILEJIT_FULL_TRACEBACK=1 shows where it happened)") from e


def _front_end(pyfunc, keys, constants, target, options, const_grid, name, version, grid_ones,
               for_gpu):
    ti = time.perf_counter()
    from .lowering.lower import lower_kernel, opt_hints_for
    from .lowering.structurize import structurize
    from .tileir import print_module, verify_module
    from .tileir.optimize import optimize_module
    from .tileir.tileiras_workarounds import carried_loads_off_tma
    from .typing.pipeline import type_kernel
    from .typing.promotion import cutile_rules
    t0 = time.perf_counter()
    typed = type_kernel(pyfunc, keys, constants, plain_helpers=options.plain_helpers)
    t1 = time.perf_counter()
    arch = target if target != SIM_TARGET else envvars.get("TILEJIT_ARCH")
    bc_version = version if version is not None else bytecode_version(target)
    # a tilejit.cutile kernel lowers under cuTile's rules too: a few operators are defined
    # differently there (float `//` floors the quotient rounded to the operands' dtype)
    with (cutile_rules() if options.plain_helpers else contextlib.nullcontext()):
        module = lower_kernel(structurize(typed), name=symbol(name or pyfunc.__name__),
                              arch=arch, bytecode_version=bc_version, hints=options.hints(),
                              const_grid=const_grid, grid_ones=grid_ones or (False, False, False),
                              simulated=target == SIM_TARGET and not for_gpu)
    optimize_module(module, fma=options.fma)
    # last: the optimizations make loads (a permute of a load becomes a transposed load)
    carried_loads_off_tma(module, lambda d: opt_hints_for(d, bc_version, arch))
    verify_module(module)
    t2 = time.perf_counter()
    if _dumping(pyfunc, "typed"):
        print(_dump_header(pyfunc, keys, constants, target, "typed") + "\n" + typed.dump(),
              file=sys.stderr)
    if _dumping(pyfunc, "tileir"):
        print(_dump_header(pyfunc, keys, constants, target, "tileir") + "\n"
              + parameter_comment(pyfunc, keys, constants) + "\n" + print_module(module),
              file=sys.stderr)
    timings = {"typing": t1 - t0, "lowering": t2 - t1}
    if t0 - ti > 1e-3:          # the first compile of a process imports Numba
        timings = {"import": t0 - ti, **timings}
    return typed, module, timings


def index_key(pyfunc, keys, constants: dict, target: str, options: CompileOptions,
              const_grid, name: Optional[str], grid_ones=None) -> Optional[str]:
    """The warm-start index key of a compile (``toolchain.index``): everything that determines the
    bytecode and the cubin, computed without the front end. None when the kernel reads a global
    that cannot be hashed by value, or when ``TILEJIT_DUMP`` asks for the intermediate forms."""
    from . import fingerprint
    from .toolchain import tileiras
    if any(_dumping(pyfunc, s) for s in ("typed", "tileir", "bytecode", "remarks")):
        return None
    digest = fingerprint.function_digest(pyfunc)
    if digest is None:
        return None
    tc = tileiras.find_toolchain()
    st = os.stat(tc.tileiras)
    pinned = (envvars.get("TILEJIT_BYTECODE_VERSION") or "") + repr(tileiras._PINNED)
    parts = ("tilejit-index-v1", fingerprint.build_id(), digest, repr(tuple(keys)),
             repr(_keys.constant_key(constants)), repr(options), target, repr(const_grid),
             repr(tuple(grid_ones or (False, False, False))),
             name or pyfunc.__name__, f"{tc.tileiras}:{st.st_size}:{st.st_mtime_ns}", pinned)
    h = hashlib.sha256()
    for part in parts:
        b = part.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def compile(pyfunc, keys: Sequence, constants: dict, target: str,
            options: Optional[CompileOptions] = None, *, const_grid=None,
            name: Optional[str] = None, key=None, use_disk_cache: bool = True,
            grid_ones=None) -> Compiled:
    """Compile ``pyfunc`` for argument ``keys``, ``constants`` and ``target`` (``"sim"`` or an
    architecture such as ``"sm_90"``). ``const_grid`` (a 3-tuple) is baked in.

    For an architecture target the warm-start index is tried first: a hit returns the cubin with
    no front end at all (``Compiled.module`` is then None)."""
    options = options or CompileOptions()
    keys = [_keys.as_key(k) for k in keys]
    index = ikey = None
    if target != SIM_TARGET and use_disk_cache:
        from .toolchain import index as _index
        index = _index.current()
        if index is not None:
            t0 = time.perf_counter()
            ikey = index_key(pyfunc, keys, constants, target, options, const_grid, name,
                             grid_ones)
            hit = index.get(ikey) if ikey is not None else None
            if hit is not None:
                symbol, slots, cubin = hit
                c = Compiled(key, symbol, target, slots, cubin=cubin, disk_hit=True,
                             timings={"index": time.perf_counter() - t0}, keys=tuple(keys),
                             constants=dict(constants))
                _report_timings(c, pyfunc)
                return c
    if target != SIM_TARGET:
        check_worker_warps(options)
    version = bytecode_version(target)
    typed, module, timings = front_end(pyfunc, keys, constants, target, options, const_grid,
                                       name, version, grid_ones)
    fname = module.functions[0].name
    # the keys' slots, weak scalars checked where the kernel converts them (tilejit.scalars)
    c = Compiled(key, fname, target, module.functions[0].abi.slots(), module=module,
                 typed=typed, timings=timings, keys=tuple(keys), constants=dict(constants))
    if target == SIM_TARGET:
        _report_timings(c, pyfunc)
        return c
    from .tileir import write_bytecode
    from .toolchain import compile_cubin
    t0 = time.perf_counter()
    c.bytecode = write_bytecode(module, version)
    c.timings["bytecode"] = time.perf_counter() - t0
    if _dumping(pyfunc, "bytecode"):
        _write_dump(pyfunc, keys, constants, target, fname, c.bytecode)
    t0 = time.perf_counter()
    c.cubin, c.disk_hit, cubin_key = compile_cubin(c.bytecode, target,
                                                   opt_level=options.opt_level, name=fname,
                                                   use_cache=use_disk_cache)
    c.timings["tileiras"] = time.perf_counter() - t0
    if _dumping(pyfunc, "remarks"):
        _print_remarks(pyfunc, keys, constants, target, c.bytecode, options.opt_level, fname)
    if ikey is not None and cubin_key is not None:
        index.put(ikey, c.name, c.slots, cubin_key, kernel=pyfunc.__name__, target=target,
                  signature=signature_text(pyfunc, keys, constants), source=source_text(pyfunc))
    _report_timings(c, pyfunc)
    return c


def remarks(pyfunc, keys: Sequence, constants: dict, target: str,
            options: Optional[CompileOptions] = None, *, name: Optional[str] = None,
            grid_ones=None) -> list:
    """tileiras's optimization remarks (``toolchain.remarks.Remark``) for the bytecode
    :func:`compile` would give tileiras for these arguments; bypasses every cache."""
    from .tileir import write_bytecode
    from .toolchain import remarks as _remarks
    options = options or CompileOptions()
    keys = [_keys.as_key(k) for k in keys]
    check_worker_warps(options)
    version = bytecode_version(target)
    _, module, _ = front_end(pyfunc, keys, constants, target, options, None, name, version,
                             grid_ones)
    return _remarks.collect(write_bytecode(module, version), target,
                            opt_level=options.opt_level, name=module.functions[0].name)


def _write_dump(pyfunc, keys, constants, target: str, fname: str, bytecode: bytes) -> None:
    """``TILEJIT_DUMP=bytecode``: ``<kernel>.tileirbc`` in ``TILEJIT_DUMP_DIR`` (created)."""
    directory = envvars.get("TILEJIT_DUMP_DIR")
    path = os.path.join(directory, f"{fname}.tileirbc")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(path, "wb") as f:
            f.write(bytecode)
    except OSError as e:
        raise envvars.EnvironmentVariableError(
            f"TILEJIT_DUMP_DIR={directory!r}: cannot write {path} ({e.strerror or e}); point "
            f"TILEJIT_DUMP_DIR at a writable directory, or drop 'bytecode' from TILEJIT_DUMP") \
            from None
    print(f"{_dump_header(pyfunc, keys, constants, target, 'bytecode')}\n"
          f"tilejit: wrote {path}", file=sys.stderr)


def _print_remarks(pyfunc, keys, constants, target: str, bytecode: bytes, opt_level: int,
                   fname: str) -> None:
    """``TILEJIT_DUMP=remarks``: tileiras's remarks on the kernel, one a line (a second
    tileiras run with remarks on, whether or not the cubin came from the disk cache)."""
    from .toolchain import remarks as _remarks
    try:
        lines = [str(r) for r in _remarks.collect(bytecode, target, opt_level=opt_level,
                                                  name=fname)] or ["(no remarks)"]
    except ToolchainError as e:         # a dump must not fail the compile it describes
        lines = [f"(no remarks: {str(e).splitlines()[0]})"]
    print("\n".join([_dump_header(pyfunc, keys, constants, target, "remarks")] + lines),
          file=sys.stderr)


def _report_timings(c: Compiled, pyfunc) -> None:
    """``TILEJIT_DUMP=timings``: one line per compile with the time of each stage."""
    if not _dumping(pyfunc, "timings"):
        return
    stages = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in c.timings.items())
    how = " (warm-start index hit)" if "index" in c.timings else \
        " (cubin from the disk cache)" if c.disk_hit else ""
    print(f"tilejit: compiled {c.name} for {c.target}: {stages}{how}", file=sys.stderr)


__all__ = ["CompileOptions", "Compiled", "compile", "remarks", "front_end", "index_key", "symbol",
           "dump_stages", "bytecode_version", "SIM_TARGET", "signature_text", "source_text",
           "parameter_comment", "is_internal"]
