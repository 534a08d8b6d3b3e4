"""Command line: ``python -m tilejit info`` (versions, GPUs, tileiras, cache) and
``python -m tilejit disasm FILE`` (print a bytecode file as text through tileirdisasm),
``python -m tilejit cache dir|info|list|size|clear`` (the disk cache, like ``pip cache``)."""
from __future__ import annotations

import argparse
import os
import time
import platform
import sys
from typing import List, Tuple


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
    return lines


def cmd_info(_args) -> int:
    lines = info_lines()
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)} : {v}")
    return 0


def cmd_disasm(args) -> int:
    from .toolchain import tileiras
    with open(args.file, "rb") as f:
        sys.stdout.write(tileiras.disassemble(f.read()))
    return 0


_KINDS = {".cubin": "cubins", ".tjx": "warm-start index", ".json": "autotune results"}


def _cache_files(root: str):
    """``(kind, size, mtime, path)`` of every entry under the cache directory."""
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            kind = _KINDS.get(os.path.splitext(f)[1], "other")
            p = os.path.join(dirpath, f)
            try:
                st = os.stat(p)
            except OSError:
                continue
            out.append((kind, st.st_size, st.st_mtime, p))
    return out


def _human(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


def cmd_cache(args) -> int:
    """``python -m tilejit cache dir|info|list|size|clear`` (in the style of ``pip cache``)."""
    from .toolchain import cache
    root = cache.cache_dir()
    if root is None:
        print("the disk cache is disabled (TILEJIT_CACHE_DIR=0)")
        return 0 if args.action in ("dir", "info", "size", "list") else 1
    files = _cache_files(root) if os.path.isdir(root) else []
    if args.action == "dir":
        print(root)
    elif args.action == "size":
        print(_human(sum(f[1] for f in files)))
    elif args.action in ("info", "list"):
        by_kind = {}
        for kind, size, _, _ in files:
            n, b = by_kind.get(kind, (0, 0))
            by_kind[kind] = (n + 1, b + size)
        print(f"cache directory: {root}")
        for kind in sorted(by_kind):
            n, b = by_kind[kind]
            print(f"  {kind}: {n} entries, {_human(b)}")
        print(f"  total: {len(files)} entries, {_human(sum(f[1] for f in files))}")
        if args.action == "list":
            for kind, size, mtime, path in sorted(files, key=lambda f: -f[2]):
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime))
                print(f"{when}  {_human(size):>9}  {kind:<17} {os.path.relpath(path, root)}")
    elif args.action in ("clear", "purge"):
        for _, _, _, path in files:
            try:
                os.unlink(path)
            except OSError:
                pass
        print(f"removed {len(files)} entries ({_human(sum(f[1] for f in files))}) from {root}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tilejit", description=__doc__)
    sub = p.add_subparsers(dest="cmd")
    sub.add_parser("info", help="versions, GPUs, driver, tileiras and cache location")
    d = sub.add_parser("disasm", help="print a Tile IR bytecode file as text")
    d.add_argument("file")
    c = sub.add_parser("cache", help="inspect or clear the disk cache (cubins, warm-start index, "
                                     "autotune results)")
    c.add_argument("action", choices=("dir", "info", "list", "size", "clear", "purge"),
                   help="dir: where it is; info/size: how much; list: every entry, newest first; "
                        "clear (purge): remove everything")
    args = p.parse_args(argv)
    if args.cmd == "disasm":
        return cmd_disasm(args)
    if args.cmd == "cache":
        return cmd_cache(args)
    return cmd_info(args)


if __name__ == "__main__":
    sys.exit(main())
