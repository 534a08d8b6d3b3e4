"""C ``printf``-style formatting of tiles for ``print_tko``.

Each conversion (``%d``, ``%5.2f``, ``%x``, ``%u``, ``%e``, ``%g``, ``%c``, ``%p``, ``%%``...;
length modifiers such as ``l``/``ll``/``h`` are accepted and ignored) consumes one argument. A 0-d tile
prints as one value; a tile of rank >= 1 prints every element with that conversion, nested in
brackets in row-major order: ``"%.1f"`` of a 2x2 tile gives ``[[1.0, 2.0], [3.0, 4.0]]``. Integer
conversions read the bits with C's rules: ``%d``/``%i`` signed, ``%u``/``%x``/``%o`` unsigned;
``i1`` prints as 0/1.
"""
from __future__ import annotations

from typing import List, Tuple, Union

import numpy as np

from ..language import PRINTF_SPEC as _SPEC
from .elements import is_float, signed, unsigned

Piece = Union[str, Tuple[str, str]]


def parse(fmt: str) -> List[Piece]:
    """Literal strings and ``(python_spec, conversion)`` pairs."""
    out: List[Piece] = []
    pos = 0
    for m in _SPEC.finditer(fmt):
        if m.start() > pos:
            out.append(fmt[pos:m.start()])
        conv = m.group("conv")
        if conv == "%":
            out.append("%")
        else:
            spec = "%" + m.group("flags") + (m.group("width") or "")
            if m.group("prec") is not None:
                spec += "." + (m.group("prec") or "0")
            py = {"i": "d", "u": "d", "p": "x", "a": "s", "A": "s"}.get(conv, conv)
            out.append((spec + py, conv))
        pos = m.end()
    if pos < len(fmt):
        out.append(fmt[pos:])
    return out


def conversions(pieces: List[Piece]) -> int:
    return sum(1 for p in pieces if isinstance(p, tuple))


def _as(values, elem, conv: str) -> np.ndarray:
    v = np.asarray(values)
    if elem == "i1":
        v = v.astype(np.int64)                    # a bool prints as 0/1, as in C
        elem = "i64"
    if conv in "di":
        return (np.trunc(np.nan_to_num(v.astype(np.float64))).astype(np.int64)
                if is_float(elem) else signed(v, elem).astype(np.int64))
    if conv in "uoxXpc":
        return (np.trunc(np.nan_to_num(v.astype(np.float64))).astype(np.int64)
                if is_float(elem) else unsigned(v, elem).astype(np.uint64))
    if conv in "aA":
        f = np.vectorize(lambda x: float(x).hex(), otypes=[object])(v.astype(np.float64))
        return f.astype(str)
    if conv == "s":
        return v.astype(str)
    return v.astype(np.float64)


def _render(strs: np.ndarray) -> str:
    if strs.ndim == 0:
        return str(strs[()])
    if strs.ndim == 1:
        return "[" + ", ".join(strs.tolist()) + "]"
    return "[" + ", ".join(_render(s) for s in strs) + "]"


def format_tiles(pieces: List[Piece], values, elems) -> str:
    out = []
    it = iter(zip(values, elems))
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
            continue
        spec, conv = p
        v, e = next(it)
        a = _as(v, e, conv)
        if conv == "p":
            spec = "0x" + spec
        if conv == "c":
            a = np.vectorize(chr, otypes=[str])(a & 0x10FFFF) if a.ndim else chr(int(a) & 0x10FFFF)
            spec = spec[:-1] + "s"
        out.append(_render(np.char.mod(spec, a)))
    return "".join(out)
