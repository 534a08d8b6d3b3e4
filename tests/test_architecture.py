"""The package's layering (NOTES.md, "Layout"): no import cycle between its rooms, the one-way
doors hold, and no module grows past ~800 lines. Imports are read from the source (function-level
imports included), so a lazy import cannot hide a back edge."""
import ast
import collections
import os

import tilejit

ROOT = os.path.dirname(tilejit.__file__)
MAX_LINES = 850


def _modules():
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _room(module: str) -> str:
    """The package (``runtime``, ``ops`` ...) or ground-floor module (``keys``) of a module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tilejit"


def _imports(path: str):
    name = _module_name(path)
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] == "tilejit" and "." in t:
                sub = t.split(".")[1]
                if os.path.exists(os.path.join(ROOT, sub)) or \
                        os.path.exists(os.path.join(ROOT, sub + ".py")):
                    yield t


def _room_graph():
    graph = collections.defaultdict(set)
    for path in _modules():
        a = _room(_module_name(path))
        for t in _imports(path):
            b = _room(t)
            if a != b and a != "tilejit":
                graph[a].add(b)
    return graph


def _cycles(graph):
    """Strongly connected components with more than one room (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_packages():
    assert _cycles(_room_graph()) == []


# Rooms each room may never import (NOTES.md "one-way doors").
_ABOVE_GROUND = {"runtime", "deviceops", "typing", "lowering", "tileir", "simulator", "toolchain",
                 "dispatcher", "kernel_launch", "backends", "compiler", "api", "autotune"}
FORBIDDEN = {
    "runtime": {"deviceops", "backends", "compiler", "dispatcher", "kernel_launch", "typing",
                "lowering", "api", "autotune"},
    "deviceops": {"dispatcher", "kernel_launch", "compiler", "typing", "lowering", "api"},
    # the launch side knows the compile side only through the Kernel it is given
    "kernel_launch": {"dispatcher", "typing", "lowering", "tileir", "api", "autotune"},
    # ground-floor modules of the launch path: nothing above them
    "scalars": _ABOVE_GROUND,
    "memo": _ABOVE_GROUND,
    "tileir": {"runtime", "deviceops", "typing", "lowering", "simulator", "toolchain", "dispatcher",
               "backends", "compiler"},
    "simulator": {"runtime", "deviceops", "typing", "lowering", "dispatcher", "backends", "compiler"},
    "typing": {"runtime", "deviceops", "lowering", "tileir", "dispatcher", "backends", "compiler"},
    "lowering": {"runtime", "deviceops", "dispatcher", "backends", "compiler"},
    "keys": {"runtime", "deviceops", "typing", "lowering", "tileir", "dispatcher", "backends"},
    "compiler": {"runtime", "deviceops", "dispatcher", "backends"},
    "backends": {"deviceops", "dispatcher"},
}


def test_one_way_doors():
    graph = _room_graph()
    bad = {room: sorted(graph.get(room, set()) & forbidden)
           for room, forbidden in FORBIDDEN.items() if graph.get(room, set()) & forbidden}
    assert bad == {}


def test_the_import_checker_sees_back_edges():
    # the checker itself must see a function-level import and report a cycle
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert "tilejit.runtime.memory" in set(_imports(os.path.join(ROOT, "runtime", "stream.py")))


def test_no_module_is_too_long():
    long = {os.path.relpath(p, ROOT): n for p in _modules()
            if (n := sum(1 for _ in open(p, encoding="utf-8"))) > MAX_LINES}
    assert long == {}


# --- the C sources of the launch path (tilejit/csrc) -------------------------------------------
CSRC = os.path.join(ROOT, "csrc")
MAX_C_FUNCTION_LINES = 80


def _c_sources():
    return sorted(os.path.join(CSRC, f) for f in os.listdir(CSRC) if f.endswith((".c", ".h")))


def _c_functions(path: str):
    """``(name, lines)`` of each function definition: a header at column 0 (possibly over
    several lines) whose first line ending in ``{`` comes before any ending in ``;``, up to the
    ``}`` at column 0."""
    import re
    lines = open(path, encoding="utf-8").read().split("\n")
    start = name = None
    body = False
    for i, line in enumerate(lines):
        if start is None:
            m = re.match(r"^[A-Za-z_][\w\s\*]*?\b(\w+)\(", line)
            if m and not line.startswith(("typedef", "#")):
                start, name, body = i, m.group(1), False
            else:
                continue
        if not body:
            if line.rstrip().endswith(";"):
                start = None            # a prototype
            elif line.rstrip().endswith("{"):
                body = True
            continue
        if line == "}":
            yield name, i - start + 1
            start = None


def test_no_c_source_or_function_is_too_long():
    long_files = {os.path.basename(p): n for p in _c_sources()
                  if (n := sum(1 for _ in open(p, encoding="utf-8"))) > MAX_LINES}
    long_functions = {f"{os.path.basename(p)}:{name}": n for p in _c_sources()
                      for name, n in _c_functions(p) if n > MAX_C_FUNCTION_LINES}
    assert long_files == {} and long_functions == {}
    # the checker sees functions: run_launch and classify_arg exist and are counted
    names = {name for p in _c_sources() for name, _ in _c_functions(p)}
    assert {"run_launch", "classify_arg", "PyInit__native"} <= names


def test_the_extension_builds_every_c_source():
    """pyproject.toml's ext-module lists every C file of tilejit/csrc (and nothing else)."""
    import re
    text = open(os.path.join(os.path.dirname(ROOT), "pyproject.toml"), encoding="utf-8").read()
    block = text[text.index("[[tool.setuptools.ext-modules]]"):]
    listed = set(re.findall(r'"tilejit/csrc/([\w.]+\.c)"', block[:block.index("optional")]))
    assert listed == {os.path.basename(p) for p in _c_sources() if p.endswith(".c")}


def test_every_module_is_in_the_tests_map():
    """tests/MAP.md says where each module is tested; a new module must be added to it
    (`python tools/tests_map.py` rewrites it)."""
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("tests_map", os.path.join(root, "tools",
                                                                           "tests_map.py"))
    tm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tm)
    with open(os.path.join(root, "tests", "MAP.md")) as f:
        assert tm.missing(f.read()) == []
