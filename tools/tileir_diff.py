"""Which Tile IR ops differ between tilejit's and cuTile Python's bytecode of the same kernels.

    python tools/tileir_diff.py TILEJIT_DIR CUTILE_DIR [--all]

TILEJIT_DIR holds ``<kernel>.tileirbc`` files (``TILEJIT_DUMP=bytecode TILEJIT_DUMP_DIR=...``),
CUTILE_DIR cuTile Python's (``CUDA_TILE_DUMP_BYTECODE=...``: ``<kernel>.<module>.ln<N>.<id>.tileirbc``,
one per specialization). Each file is disassembled with ``tileirdisasm`` (from the
``nvidia-cuda-tileiras`` wheel, or on PATH); ``.mlir`` text files are read as they are. For each
kernel in both, one line: the op counts that differ (tilejit/cuTile), constants and shape glue
left out, plus the entry's optimization hints when they differ. A kernel with several cuTile
specializations is compared with the one closest in op counts. This is where to start when a
kernel is slower than cuTile's (docs/language/porting-for-speed.md).
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
from typing import Counter, Dict, List, Optional

#: ops that differ between front ends without meaning anything (how constants and shapes are made)
GLUE = {"constant", "reshape", "broadcast", "assume"}
_OP = re.compile(r"\s*(?:%[\w#:, %]+ = )?([a-z_]+)\b")
_HINTS = re.compile(r"optimization_hints=<[^>]*>")


def disassembler() -> Optional[str]:
    """tileirdisasm: beside the installed tileiras, or on PATH."""
    try:
        import nvidia
        for root in nvidia.__path__:
            p = os.path.join(root, "cu13", "bin", "tileirdisasm")
            if os.path.exists(p):
                return p
    except ImportError:
        pass
    return shutil.which("tileirdisasm")


def text_of(path: str) -> str:
    if path.endswith(".mlir"):
        with open(path) as f:
            return f.read()
    tool = disassembler()
    if tool is None:
        raise SystemExit("tileirdisasm not found: pip install nvidia-cuda-tileiras")
    return subprocess.run([tool, path], capture_output=True, text=True, check=True).stdout


def op_counts(text: str) -> Counter:
    c: Counter = collections.Counter()
    for line in text.splitlines():
        m = _OP.match(line)
        if m and not line.lstrip().startswith(("entry", "}", "//", "(")):
            c[m.group(1)] += 1
    return c


def hints(text: str) -> str:
    """The entry's optimization hints ("" for none or an empty set)."""
    m = _HINTS.search(text)
    h = m.group(0) if m else ""
    return "" if h == "optimization_hints=<default = {}>" else h


def kernels(folder: str, cutile: bool) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = collections.defaultdict(list)
    for p in sorted(glob.glob(os.path.join(folder, "*.tileirbc")) +
                    glob.glob(os.path.join(folder, "*.mlir"))):
        base = os.path.basename(p).rsplit(".", 1)[0]
        out[base.split(".")[0] if cutile else base].append(p)
    return out


def distance(a: Counter, b: Counter) -> int:
    return sum(abs(a[k] - b[k]) for k in set(a) | set(b) if k not in GLUE)


def compare(tj_text: str, ct_texts: List[str]) -> str:
    """One line: the op counts that differ, against the closest cuTile specialization."""
    a = op_counts(tj_text)
    best = min(ct_texts, key=lambda t: distance(a, op_counts(t)))
    b = op_counts(best)
    diff = sorted(k for k in set(a) | set(b) if a[k] != b[k] and k not in GLUE)
    parts = [f"{k} {a[k]}/{b[k]}" for k in diff]
    ha, hb = hints(tj_text), hints(best)
    if ha != hb:
        parts.append(f"hints [{ha or 'none'}] / [{hb or 'none'}]")
    return ", ".join(parts) if parts else "same op counts"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tilejit_dir")
    ap.add_argument("cutile_dir")
    args = ap.parse_args(argv)
    tj, ct = kernels(args.tilejit_dir, False), kernels(args.cutile_dir, True)
    common = sorted(set(tj) & set(ct))
    if not common:
        print("no kernel in both folders")
        return 1
    print(f"op counts tilejit/cuTile ({len(common)} kernels; {', '.join(sorted(GLUE))} left out)")
    for name in common:
        line = compare(text_of(tj[name][-1]), [text_of(p) for p in ct[name]])
        print(f"{name} [{len(ct[name])} cuTile specializations]: {line}")
    for name in sorted(set(tj) ^ set(ct)):
        print(f"{name}: only in {'tilejit' if name in tj else 'cuTile'}'s folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
