"""tileiras's optimization remarks: what it made of each load, store and MMA of a kernel.

tileiras reports, per source line, the instruction it chose for each memory access (a TMA load,
a global-memory load, a TMA store ...), whether an MMA runs on the tensor cores and in which
shape, and which optimization hints it read. ``Kernel.inspect_remarks`` and ``python -m tilejit
remarks FILE`` compile once more with remarks on (``--remarks=all``, written as YAML) and return
them here as :class:`Remark` tuples, duplicates dropped, in source order.
"""
from __future__ import annotations

import os
import re
import tempfile
from typing import List, NamedTuple, Optional, Tuple

from .tileiras import ToolchainError, compile_bytecode

#: YAML document tags of LLVM-style remarks -> the kind tileiras's own flags name them by
_KINDS = {"Passed": "passed", "Missed": "missed", "Failure": "failed", "Analysis": "analysis"}


#: the location prefix of a reason (``loc("k.py":5:1): stride not 16-byte aligned``): the remark
#: has the location already
_LOC = re.compile(r'loc\("[^"]*":\d+:\d+\):\s*')


class Remark(NamedTuple):
    """One remark of tileiras about one operation of a kernel."""

    kind: str                       #: "passed", "missed", "failed" or "analysis"
    category: str                   #: tileiras's category: "Memory", "Tensor-core", "Hints", ...
    name: str                       #: tileiras's identifier, e.g. "RemarkTensorCoreMMA"
    message: str                    #: e.g. "Load instruction selected"
    file: Optional[str]             #: the Python source file of the operation
    line: int                       #: its line there (0 when unknown)
    details: Tuple[Tuple[str, str], ...] = ()   #: e.g. (("Instruction", "TMA Load instruction"),)

    def detail(self, key: str) -> Optional[str]:
        """The value of detail ``key`` (``"Instruction"``, ``"Shape"``), or None."""
        return dict(self.details).get(key)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "<unknown>"
        more = ", ".join(f"{k} = {v}" for k, v in self.details)
        return f"{where}: {self.kind} [{self.category}] {self.message}" + \
            (f" ({more})" if more else "")


def parse(text: str) -> List[Remark]:
    """The remarks of a tileiras YAML remark file, each once, sorted by source position."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass
    # every document is a mapping tagged with its kind (``--- !Passed``)
    Loader.add_multi_constructor(
        "!", lambda loader, tag, node: (tag, loader.construct_mapping(node, deep=True)))
    seen, out = set(), []
    for doc in yaml.load_all(text, Loader=Loader):
        if not doc:
            continue
        tag, body = doc
        loc = body.get("DebugLoc") or {}
        message, details = "", []
        for arg in body.get("Args") or ():
            for k, v in arg.items():
                if k == "Remark":
                    message = str(v)
                elif k != "RemarkId":       # numbers the remark kind, not the remark
                    d = (str(k), _LOC.sub("", str(v)))
                    if d not in details:    # a reason is repeated for every place it held
                        details.append(d)
        r = Remark(_KINDS.get(tag, tag.lower()), str(body.get("Pass", "")),
                   str(body.get("Name", "")), message, loc.get("File"), int(loc.get("Line", 0)),
                   tuple(details))
        if r not in seen:               # tileiras repeats a remark per code path it emits
            seen.add(r)
            out.append(r)
    out.sort(key=lambda r: (r.file or "", r.line, r.category, r.message, r.details))
    return out


def collect(bytecode: bytes, arch: str, *, opt_level: int = 3, name: str = "kernel") -> \
        List[Remark]:
    """Compile ``bytecode`` for ``arch`` with every remark on (the cubin is not kept) and return
    the remarks."""
    with tempfile.TemporaryDirectory(prefix="tilejit-remarks-") as tmp:
        path = os.path.join(tmp, "remarks.yaml")
        compile_bytecode(bytecode, arch, opt_level=opt_level, name=name, remarks_to=path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            raise ToolchainError(f"tileiras compiled '{name}' but wrote no remarks file "
                                 f"({path}); this tileiras may not support --remarks") from None
    return parse(text)
