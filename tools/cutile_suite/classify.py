"""Sort the failures of cuTile Python's tests on tilejit by cause.

``read_junit`` reads pytest's junit XML (``-o junit_family=xunit1 --tb=short``) into ``Case``
entries; ``classify(case)`` gives each failure or error a ``(bucket, key)``: the bucket is the
cause, the key the detail that groups alike failures (the missing name, the first line of the
message). The rules, first match wins (``text`` is the failure's whole report; ``the exception``
its first ``E   `` line; ``the innermost frame`` the last ``path:N: in f`` of the traceback):

1. ``cuTile internals``: the test used cuTile's private API: the text names ``CuTileInternal``
   (``shim.Placeholder``) or a ``<placeholder cuda.tile._X>``; an import error names
   ``cuda.tile._*`` (or a private submodule: ``cuda.tile.compilation._signature``),
   ``cuda.tile_internal``, ``cutile_cache`` or a private name (``cannot import
   name '_tune'``); a private attribute is missing (``'Kernel' object has no attribute
   '_pyfunc'``); a mock of one reports (``<MagicMock name='compile_tile'``: the test patched
   ``cuda.tile._compile.compile_tile``); or the traceback passes through
   ``get_bytecode``/``filecheck`` (util.py's IR dumps: ``get_bytecode`` fails at once, on
   ``isinstance(kernel, ct.kernel)``, a class in cuTile); or an assertion on the extents or
   strides a JIT signature makes constants (``sig.parameters[0].shape_constant == (None, 1)``:
   which launch values cuTile's dispatcher specializes on is its policy; tilejit's
   ``from_kernel_args`` reports its own). Not tilejit's concern; left out of "concerning
   tilejit".
2. ``missing API``: a public name of cuTile that tilejit.cutile lacks (shim.py makes each a
   placeholder): ``MissingAPI: cuda.tile.X`` or ``<placeholder cuda.tile.X>`` (in a kernel's
   error); or an enum member: an AttributeError for ``Y`` where a frame's line reads
   ``ct.X.Y`` (``ct.RoundingMode.RA``). Key: ``X`` (up to its first private part), ``X.Y``.
3. ``accepted invalid program``: ``DID NOT RAISE`` (cuTile rejects it, tilejit did not).
4. ``undefined behaviour refused``: what cuTile calls undefined behaviour and tilejit refuses on
   purpose, with its message: a tile index out of bounds of an array with an empty extent (a
   load from an empty slice: the simulator's ``TileIndexError`` "array 'x' of shape (0,)").
   Counted apart, still in "concerning tilejit" (report.py gives the pass rate with and
   without them).
5. ``simulator limit``: a pytest-timeout ``Timeout``; a pytest process killed in the test
   (``died (exit -9)``: out of memory, e.g. cuTile's 4 GiB int64-index tests); torch's ``not
   compiled with CUDA``, ``CUDA error``/``CUDA driver`` (a CUDA feature the harness does not
   map: graphs...); torch's CPU build lacking an op (``from the 'CPU' backend``, ``not
   implemented for 'Half'``); tilejit saying the simulator lacks it.
6. ``harness``: the innermost frame is in ``tools/cutile_suite`` (the mapping itself).
7. ``internal error``: ``internal error``, ``invalid Tile IR``, ``VerifyError`` or
   ``InternalError`` ("This is a bug in tilejit") in the text, or
   a Python error (KeyError, AttributeError, IndexError, TypeError, ValueError, ...) whose
   innermost frame is in tilejit's own modules on a line that is not a deliberate ``raise``.
8. ``different error``: tilejit rejected a program the test expects rejected, but not with
   cuTile's exception or message: ``Regex pattern did not match`` or the plugin's note
   ``[cutile_suite] expected X`` (another exception left a ``pytest.raises(X)`` block).
9. ``refused valid program``: tilejit refused the kernel: its ``TypingError``,
   ``UnsupportedError``, ``CompileError``, ``TileTypeError``/``TileSyntaxError`` or a deliberate
   ``raise`` in its modules (the test expected no error, or another one).
10. ``wrong value``: an ``AssertionError`` (values, ``assert_equal``/``assert_close``: "Mismatched
   elements", a test's own ``assert x == y``).
11. ``other``: the rest.
"""
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

BUCKETS = ["wrong value", "internal error", "refused valid program", "accepted invalid program",
           "different error", "missing API", "cuTile internals", "undefined behaviour refused",
           "simulator limit", "harness", "other"]

_FRAME = re.compile(r"^(\S[^\n]*?):\d+: in (\S+)\n(?:    (.*))?", re.M)   # pytest --tb=short
_BUG_TYPES = ("KeyError", "AttributeError", "IndexError", "TypeError", "ValueError", "NameError",
              "UnboundLocalError", "AssertionError", "ZeroDivisionError", "RecursionError",
              "NotImplementedError", "RuntimeError", "OverflowError")
_MISSING = re.compile(r"MissingAPI: cuda\.tile\.([\w.]+)|<placeholder cuda\.tile\.([\w.]+)>")
_REFUSED = ("TypingError", "UnsupportedError", "CompileError", "TileTypeError",
            "TileSyntaxError", "TileUnsupportedFeatureError", "TileError")


@dataclass
class Case:
    file: str            # test file, relative to cuTile's test/
    name: str            # test id within the file
    outcome: str         # passed, failed, error, skipped
    message: str = ""    # junit's message attribute
    text: str = ""       # the failure's report (traceback)


def read_junit(path: str) -> list:
    cases = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        file = tc.get("file") or tc.get("classname", "").replace(".", "/") + ".py"
        case = Case(file.rsplit("/", 1)[-1] if file else "?", tc.get("name", ""), "passed")
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                case.outcome = {"failure": "failed"}.get(tag, tag)
                case.message, case.text = el.get("message", ""), el.text or ""
                break
        cases.append(case)
    return cases


def write_junit(cases, path: str) -> None:
    """``cases`` as junit XML that ``read_junit`` reads back (failures as errors)."""
    suite = ET.Element("testsuite", name="cutile_suite")
    for c in cases:
        tc = ET.SubElement(suite, "testcase", file=c.file, name=c.name)
        if c.outcome != "passed":
            tag = "skipped" if c.outcome == "skipped" else "error"
            ET.SubElement(tc, tag, message=c.message).text = c.text
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def exception_line(case: Case) -> str:
    """The failure's exception, one line: pytest's first ``E   `` line."""
    for line in case.text.splitlines():
        if line.startswith("E   ") and line[4:].strip():
            return line[4:].strip()
    return (case.message or case.text).strip().split("\n")[0]


def _short(line: str) -> str:
    line = re.sub(r"^(?:[a-z_]+\.)+(?=[A-Z]\w*:)", "", line)   # tilejit.errors.TypingError
    line = re.sub(r"\S+\.py:\d+: ", "", line)                 # tilejit's "file:line: "
    line = re.sub(r" at 0x[0-9a-f]+", "", line)
    line = re.sub(r"^(\w+: )in `[^`]*`: ", r"\1", line)        # the source expression
    return line[:160]


def classify(case: Case):
    """``(bucket, key)`` for a failed or errored case; ``None`` for one that passed or skipped."""
    if case.outcome not in ("failed", "error"):
        return None
    text = f"{case.message}\n{case.text}"
    exc = exception_line(case)
    frames = _FRAME.findall(case.text)
    inner_file, _, inner_line = frames[-1] if frames else ("", "", "")
    funcs = {f for _, f, _ in frames}

    if ("CuTileInternal" in text or "<placeholder cuda.tile._" in text
            or re.search(r"(No module named|cannot import name .* from) "
                         r"'(?:cuda\.tile(?:_internal|(?:\.[a-z]\w*)*\._)|cutile_cache)", text)
            or re.search(r"cannot import name '_\w+' from '(?:cuda\.tile|tilejit\.cutile)", text)
            or re.search(r"object has no attribute '_[a-z]\w*'", exc) or "<MagicMock name=" in text
            or {"get_bytecode", "filecheck"} & funcs
            or (exc.startswith("assert ") and
                re.search(r"\.parameters\[\d+\]\.(?:shape|stride)_constant ==", inner_line))):
        return "cuTile internals", _short(exc)
    m = _MISSING.search(text)
    if m:
        return "missing API", re.sub(r"\._.*|\(\).*|\[\].*", "", m.group(1) or m.group(2))
    m = re.fullmatch(r"AttributeError: (?:.*has no attribute ')?(\w+)'?", exc)
    used = m and [u.group(1) for _, _, code in frames
                  for u in [re.search(rf"\bct\.(\w+\.{m.group(1)})\b", code)] if u]
    if used:                                   # ct.RoundingMode.RA: an enum member
        return "missing API", used[0]
    if "DID NOT RAISE" in text:
        return "accepted invalid program", _short(exc)
    if re.match(r"(?:\w+\.)*TileIndexError: .*(?:the array|array '[^']*') of shape "
                r"\([^)]*\b0\b", exc):
        return "undefined behaviour refused", _short(exc)
    if (re.search(r"Timeout|not compiled with CUDA|CUDA graph|CUDA error|CUDA driver|from the "
                  r"'CPU' backend|not implemented for '|died \(exit -9\)", exc)
            or re.search(r"not supported (by|on) the simulator", text)):
        return "simulator limit", _short(exc)
    if "/cutile_suite/" in inner_file:
        return "harness", _short(exc)
    in_tilejit = "tilejit/" in inner_file and "tests/" not in inner_file
    exc_type = "AssertionError" if exc.startswith("assert ") else \
        exc.split(":")[0].rsplit(".", 1)[-1]
    if (re.search(r"internal error|invalid Tile IR|VerifyError|InternalError", text)
            or (in_tilejit and exc_type in _BUG_TYPES and not inner_line.startswith("raise"))):
        return "internal error", _short(exc)
    m = re.search(r"\[cutile_suite\] expected (\S+)", text)
    if m or "Regex pattern did not match" in text:
        return "different error", f"expected {m.group(1)}, got {_short(exc)}" if m else _short(exc)
    if exc_type in _REFUSED or in_tilejit:
        return "refused valid program", _short(exc)
    if exc_type == "AssertionError":
        return "wrong value", _short(exc)
    return "other", _short(exc)
