"""The command line: ``python -m tilejit info`` (versions, GPUs, tileiras, cache, settings),
``python -m tilejit disasm FILE`` (a bytecode file as text, through tileirdisasm), ``python -m
tilejit remarks FILE`` (tileiras's optimization remarks on it) and
``python -m tilejit cache dir|info|list|size|clear`` (the disk cache, like ``pip cache``).
``--help`` lists these and every ``TILEJIT_*`` variable (from ``envvars``)."""
from __future__ import annotations

import argparse
import os
import time
import platform
import sys
from typing import List, Tuple

from .errors import ToolchainError


def _try(fn, default="unavailable"):
    try:
        return fn()
    except Exception as e:  # info must report problems, never crash
        return f"{default} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"


def _gpus() -> List[str]:
    from .runtime import driver
    if not driver.driver_available():
        return []
    from .runtime.device import Device
    out = []
    for i in range(driver.device_count()):
        d = Device(i)
        out.append(f"[{i}] {d.name} ({d.arch}, compute capability "
                   f"{d.compute_capability[0]}.{d.compute_capability[1]})")
    return out


def info_lines() -> List[Tuple[str, str]]:
    from . import __version__
    from .toolchain import cache, tileiras
    lines = [("tilejit", __version__),
             ("python", f"{platform.python_version()} ({sys.executable})")]
    for mod in ("numba", "numpy", "ml_dtypes"):
        lines.append((mod, _try(lambda m=mod: __import__(m).__version__, "not installed")))
    lines.append(("cuda-bindings", _try(lambda: __import__("cuda.bindings", fromlist=["__version__"])
                                        .__version__, "not installed")))

    def driver_text():
        from .runtime import driver
        if not driver.driver_available():
            return "no CUDA driver found"
        v = driver.driver_version()
        return f"CUDA {v[0]}.{v[1]}" if v else "present"

    lines.append(("driver", _try(driver_text)))
    gpus = _try(_gpus, "error")
    if isinstance(gpus, str):
        lines.append(("GPUs", gpus))
    elif not gpus:
        lines.append(("GPUs", "no GPU (kernels run on the CPU simulator)"))
    else:
        for g in gpus:
            lines.append(("GPU", g))

    def backend_text():
        from .runtime import backend
        return f"{backend.current()} ({backend.reason()})"

    lines.append(("backend", _try(backend_text)))
    lines.append(("launch path", _try(lambda: __import__("tilejit.native", fromlist=["x"])
                                      .status())))
    lines.append(("tileiras", _try(lambda: tileiras.find_toolchain().tileiras, "not found")))

    def tileiras_version():
        text = tileiras.version_text()
        rows = text.splitlines()
        return rows[-2] if len(rows) > 1 else text

    lines.append(("tileiras version", _try(tileiras_version, "not found")))
    lines.append(("max bytecode version", _try(lambda: str(tileiras.max_bytecode_version()),
                                               "not found")))
    lines.append(("cache directory", _try(cache.describe)))
    lines += _settings()
    return lines


def _settings() -> List[Tuple[str, str]]:
    """The TILEJIT_* variables that are set, and what is wrong with any of them."""
    from . import envvars
    bad = dict(envvars.problems())
    out = []
    for name, text in envvars.in_environment():
        out.append((name, f"{text!r}" + (f"  <- PROBLEM: {bad[name]}" if name in bad else "")))
    return out


def cmd_info(_args) -> int:
    lines = info_lines()
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)} : {v}")
    return 0


def _on_bytecode_file(args, cmd: str, show) -> int:
    """Read ``args.file`` and ``show`` its bytes: exit status 2 when it cannot be read, 1 when
    the toolchain rejects it, each a one-line error."""
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        return _fail(f"{cmd}: cannot read {args.file}: {e.strerror or e}", 2)
    try:
        show(data)
    except ToolchainError as e:
        return _fail(f"{cmd}: {args.file}: {e}", 1)
    return 0


def cmd_disasm(args) -> int:
    from .toolchain import tileiras
    return _on_bytecode_file(args, "disasm", lambda data: sys.stdout.write(
        tileiras.disassemble(data)))


def cmd_remarks(args) -> int:
    from .toolchain import remarks

    def show(data):
        for r in remarks.collect(data, args.arch):
            print(r)
    return _on_bytecode_file(args, "remarks", show)


def _fail(message: str, status: int) -> int:
    print(f"python -m tilejit {message}", file=sys.stderr)
    return status


_KINDS = {"cubin": "cubins", "index": "warm-start index", "autotune": "autotune results"}


def _human(n: float) -> str:
    from .errors import format_size
    return format_size(int(n))


def cmd_cache(args) -> int:
    """``python -m tilejit cache dir|info|list|size|clear`` (in the style of ``pip cache``)."""
    from .toolchain import cache, layout
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is disabled (TILEJIT_CACHE_DIR=0)")
        return 0 if args.action in ("dir", "info", "size", "list") else 1
    if args.action == "dir":
        print(root)
        return 0
    if args.action in ("clear", "purge"):
        try:
            n, size = cache.clear(root)
        except layout.NotACacheError as e:
            return _fail(f"cache clear: {e}", 1)
        kept = layout.foreign_top_level(root) if os.path.isdir(root) else []
        print(f"removed {n} files ({_human(size)}) from {root}"
              + (f"; kept what tilejit did not write there: {', '.join(kept[:5])}"
                 + (" ..." if len(kept) > 5 else "") if kept else ""))
        return 0
    files = [e for e in layout.scan(root) if e.kind in layout.STORED] \
        if os.path.isdir(root) else []
    if args.action == "size":
        print(_human(sum(e.size for e in files)))
        return 0
    by_kind = {}
    for e in files:
        n, b = by_kind.get(e.kind, (0, 0))
        by_kind[e.kind] = (n + 1, b + e.size)
    print(f"cache directory: {root} (bound: {_human(cache.max_size())}, TILEJIT_CACHE_SIZE)")
    for kind in layout.STORED:
        if kind in by_kind:
            n, b = by_kind[kind]
            print(f"  {_KINDS[kind]}: {_entries(n)}, {_human(b)}")
    print(f"  total: {_entries(len(files))}, {_human(sum(e.size for e in files))}")
    if args.action == "list":
        for line in _listing(root, files):
            print(line)
    return 0


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _listing(root: str, files) -> List[str]:
    """One line per cubin (newest first) with the kernels it holds, then autotune results."""
    from .toolchain.index import Index
    names = {}                                  # cubin key -> index metadata of its kernels
    for _, meta in Index(root).entries():
        names.setdefault(meta["cubin"], []).append(meta)
    lines = []
    for e in sorted(files, key=lambda e: -e.mtime):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.mtime))
        head = f"{when}  {_human(e.size):>10}"
        if e.kind == "cubin":
            key = os.path.basename(e.rel)[:-len(".cubin")]
            metas = names.get(key)
            if not metas:
                lines.append(f"{head}  cubin {key[:16]} (no kernel name: compiled by an earlier "
                             f"tilejit or while TILEJIT_DUMP was set)")
            for m in metas or ():
                lines.append(f"{head}  {m.get('target', '?'):<6} {m.get('signature', m['symbol'])}"
                             f"  [{m.get('source', '?')}]")
        elif e.kind == "autotune":
            kernel = os.path.basename(e.rel).rsplit("-", 1)[0]
            lines.append(f"{head}  autotune results of {kernel}")
    return lines


DESCRIPTION = """\
tilejit's command line.

  python -m tilejit info            versions, GPUs, driver, tileiras, cache directory, launch path
                                    and the TILEJIT_* settings in effect (include it in bug reports)
  python -m tilejit disasm FILE     print a Tile IR bytecode file (.tileirbc) as text (tileirdisasm)
  python -m tilejit remarks FILE    tileiras's remarks on a bytecode file: the instruction each load,
                                    store and MMA became (TMA or not, tensor cores), and why not
  python -m tilejit cache ACTION    the disk cache of compiled kernels, like `pip cache`:
                                    dir (where), info / size (how much), list (every kernel, newest
                                    first), clear (remove what tilejit stored there; other files stay)
"""


def _parser() -> argparse.ArgumentParser:
    from . import __version__, envvars
    p = argparse.ArgumentParser(
        prog="python -m tilejit", description=DESCRIPTION,
        epilog="environment variables (a bad value is an error naming the variable):\n"
               + envvars.help_table(96),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tilejit {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="{info,disasm,remarks,cache}")
    sub.add_parser("info", help="versions, GPUs, driver, tileiras, cache and settings")
    d = sub.add_parser("disasm", help="print a Tile IR bytecode file as text")
    d.add_argument("file", help="a .tileirbc file (TILEJIT_DUMP=bytecode writes them)")
    r = sub.add_parser("remarks", help="tileiras's optimization remarks on a bytecode file")
    r.add_argument("file", help="a .tileirbc file (TILEJIT_DUMP=bytecode, or cuTile's "
                                "CUDA_TILE_DUMP_BYTECODE, writes them)")
    r.add_argument("--arch", default="sm_90", help="target architecture (default: sm_90)")
    c = sub.add_parser("cache", help="inspect or clear the disk cache (cubins, warm-start "
                                     "index, autotune results)")
    c.add_argument("action", choices=("dir", "info", "list", "size", "clear", "purge"),
                   help="dir: where it is; info/size: how much; list: every kernel, newest "
                        "first; clear (purge): remove what tilejit stored (other files stay)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "disasm":
        return cmd_disasm(args)
    if args.cmd == "remarks":
        return cmd_remarks(args)
    if args.cmd == "cache":
        return cmd_cache(args)
    return cmd_info(args)


if __name__ == "__main__":
    sys.exit(main())
