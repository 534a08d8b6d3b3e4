"""Tile IR bytecode writer (versions 13.1 - 13.4).

Layout (all integers little-endian; ``varint`` is unsigned LEB128)::

    magic 7F 'TileIR' 00 | u8 major | u8 minor | u16 tag
    sections: Global? Func Constant? Debug? Type String, then 00
    section := u8 (id | 0x80 if aligned) | varint length | [varint align | 0xCB padding] | payload

Operations are encoded from the op table (:mod:`.ops`): result types (with a count when the op
has variadic operands or results), a flags varint for optional attributes/operands, attributes in
declaration order, operands (groups with a count where variadic), then regions. Value ids are
numbered per function: parameters first, then results in order; a region's block arguments and
ops take the next ids, and the counter is restored when the region ends.
"""
from __future__ import annotations

import os
import struct
from typing import Dict, List, Optional

import numpy as np

from . import attrs as A
from ..dtypes import ALL_DTYPES
from .ir import Block, Function, Module, Operation, Value
from .types import (ELEMENT_TYPES, FunctionType, PartitionViewType, PointerType, TensorViewType,
                    TileType, TokenType, Type)
from .version import LATEST, BytecodeVersion, as_version

MAGIC = b"\x7fTileIR\x00"
PAD = 0xCB
SEC_END, SEC_STRING, SEC_FUNC, SEC_DEBUG, SEC_CONSTANT, SEC_TYPE, SEC_GLOBAL = 0, 1, 2, 3, 4, 5, 6
TAG_POINTER, TAG_TILE, TAG_TENSOR_VIEW, TAG_PARTITION_VIEW, TAG_FUNCTION, TAG_TOKEN = 12, 13, 14, 15, 16, 17
ATTR_INTEGER, ATTR_FLOAT, ATTR_BOOL, ATTR_ARRAY = 1, 2, 3, 6
ATTR_DIV_BY, ATTR_SAME_ELEMENTS, ATTR_DICTIONARY, ATTR_OPT_HINTS, ATTR_BOUNDED = 8, 9, 10, 11, 12
FN_ENTRY, FN_HAS_HINTS = 0x02, 0x04
DI_COMPILE_UNIT, DI_FILE, DI_LOC, DI_SUBPROGRAM = 1, 2, 4, 5
DYNAMIC = -(1 << 63)
_MASK64 = (1 << 64) - 1


class BytecodeError(ValueError):
    """The module cannot be encoded for the requested bytecode version."""


# ------------------------------------------------------------------------------------------------
# Primitive encoders
class Buf(bytearray):
    def varint(self, v: int) -> "Buf":
        if v < 0:
            raise BytecodeError(f"varint must be non-negative, got {v}")
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                self.append(b | 0x80)
            else:
                self.append(b)
                return self

    def svarint(self, v: int) -> "Buf":
        """Zigzag-encoded signed varint of a 64-bit two's complement value."""
        v &= _MASK64
        signed = v - (1 << 64) if v >> 63 else v
        return self.varint(((v << 1) & _MASK64) ^ ((signed >> 63) & _MASK64))

    def le(self, v: int, width: int) -> "Buf":
        self += (v & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        return self

    def int_list(self, values, width: int) -> "Buf":
        self.varint(len(values))
        for x in values:
            self.le(x, width)
        return self

    def align(self, alignment: int, base: int = 0) -> "Buf":
        while (base + len(self)) % alignment:
            self.append(PAD)
        return self


def attr_default(op: Operation, ad):
    """The value an absent attribute stands for (defaults may depend on the op's operands)."""
    return ad.default(op) if callable(ad.default) else ad.default


# float element type -> NumPy storage dtype (tf32 is stored as f32; ml_dtypes for bf16 and fp8)
FLOAT_NP_DTYPES: Dict[str, np.dtype] = {d.tileir: d.np_dtype for d in ALL_DTYPES if d.is_float}


def float_bits(value: float, element: str) -> int:
    """The bit pattern of ``value`` rounded to the float element type (round to nearest even)."""
    arr = np.array(value, dtype=np.float64).astype(FLOAT_NP_DTYPES[element])
    bits = int.from_bytes(arr.tobytes(), "little")
    if element == "tf32":  # keep the 19 high bits of the f32 pattern (1 sign, 8 exp, 10 mantissa)
        mant = bits & 0x1FFF
        bits >>= 13
        if mant > 0x1000 or (mant == 0x1000 and bits & 1):   # round to nearest even
            bits += 1
    return bits


def element_storage_bytes(element: str) -> int:
    if element == "tf32":
        return 3
    return (ELEMENT_TYPES[element][1] + 7) // 8


def dense_payload(c: A.DenseConst) -> bytes:
    """Raw little-endian element data of a dense constant (one element for a splat)."""
    elem = c.type.element
    if not isinstance(elem, str):
        raise BytecodeError("pointer constants are not supported")
    vals = np.asarray(c.value)
    flat = vals.reshape(-1) if vals.ndim else vals.reshape(1)
    if elem == "i1":
        bools = [bool(x) for x in flat]
        if len(bools) == 1:
            return b"\xff" if bools[0] else b"\x00"
        out = bytearray((len(bools) + 7) // 8)
        for i, b in enumerate(bools):
            if b:
                out[i // 8] |= 1 << (i % 8)
        return bytes(out)
    if elem != "tf32" and ELEMENT_TYPES[elem][2] == "f" and _vectorizable(flat.dtype):
        # what float_bits does per element: through float64, round to the element's dtype; its
        # native bytes (read as little-endian, written little-endian) are the payload
        return flat.astype(np.float64).astype(FLOAT_NP_DTYPES[elem]).tobytes()
    width = element_storage_bytes(elem)
    out = Buf()
    if ELEMENT_TYPES[elem][2] == "i":
        for x in flat:
            out.le(int(x), width)
    else:
        for x in flat:
            out.le(float_bits(float(x), elem), width)
    return bytes(out)


def _vectorizable(dt: np.dtype) -> bool:
    """Arrays whose ``astype(float64)`` equals ``float(x)`` per element (no objects, no complex)."""
    return dt.kind in "biuf" or any(dt == d for d in FLOAT_NP_DTYPES.values())


# ------------------------------------------------------------------------------------------------
class _Interned:
    """An interning table: ids assigned densely in order of first use."""

    def __init__(self):
        self.ids: Dict[object, int] = {}
        self.items: List[bytes] = []

    def add(self, key, payload_fn) -> int:
        i = self.ids.get(key)
        if i is None:
            payload = payload_fn()
            i = self.ids.get(key)       # payload_fn may have registered dependencies
            if i is None:
                i = len(self.items)
                self.ids[key] = i
                self.items.append(payload)
        return i

    def table(self, index_size: int, base: int = 0) -> bytes:
        out = Buf().varint(len(self.items))
        out.align(index_size, base)
        off = 0
        for it in self.items:
            out.le(off, index_size)
            off += len(it)
        for it in self.items:
            out += it
        return bytes(out)


class _DebugInfo:
    """The Debug section: per function, ``[its location, then every op's location in pre-order]``
    as ids into a table of tagged records (ids from 1; 0 is "unknown"). Locations are DILoc
    records scoped to the function's DISubprogram.

    tileiras uses it for ``loc("file.py":line:col)`` in its diagnostics and, with ``--lineinfo``,
    for the source lines that profilers show next to SASS.
    """

    def __init__(self, string):
        self._string = string                        # the writer's String-table id of a str
        self.records = _Interned()
        self.lists: List[List[int]] = []
        self.scope = 0                               # the current function's DISubprogram id

    def _record(self, key, payload_fn) -> int:
        return self.records.add(key, payload_fn) + 1

    def _file(self, path: str) -> int:
        directory, name = os.path.split(path)
        return self._record(("file", path), lambda: bytes(
            Buf().varint(DI_FILE).varint(self._string(name)).varint(self._string(directory))))

    def begin_function(self, fn: Function) -> int:
        """Start ``fn``'s list; returns its 1-based index (the function table's debug index)."""
        loc = fn.loc
        self.scope = 0
        if loc is None:                              # 0: unknown, and no list for its ops
            return 0
        f = self._file(loc.filename)
        cu = self._record(("cu", f), lambda: bytes(Buf().varint(DI_COMPILE_UNIT).varint(f)))
        self.scope = self._record(("sub", fn.name, f, loc.line), lambda: bytes(
            Buf().varint(DI_SUBPROGRAM).varint(f).varint(loc.line)
            .varint(self._string(loc.function or fn.name)).varint(self._string(fn.name))
            .varint(cu).varint(loc.line)))
        self.lists.append([])
        self.op(loc)                                 # the function's own location comes first
        return len(self.lists)

    def op(self, loc) -> None:
        """Record the location of the next op (pre-order), or "unknown"."""
        if not self.scope:
            return
        if loc is None:
            self.lists[-1].append(0)
            return
        col = (loc.col or 0) + 1                    # Tile IR columns are 1-based
        key = ("loc", self.scope, loc.filename, loc.line, col)
        self.lists[-1].append(self._record(key, lambda: bytes(
            Buf().varint(DI_LOC).varint(self.scope).varint(self._string(loc.filename))
            .varint(loc.line).varint(col))))

    def section(self) -> Optional[bytes]:
        if not self.records.items:
            return None
        out = Buf().varint(len(self.lists)).align(4)
        first = 0
        for entries in self.lists:
            out.le(first, 4)
            first += len(entries)
        out.varint(first).align(8)
        for entries in self.lists:
            for i in entries:
                out.le(i, 8)
        return bytes(out) + self.records.table(4, base=len(out))


class _Writer:
    def __init__(self, version: BytecodeVersion, debug: bool = True):
        self.v = version
        self.strings = _Interned()
        self.types = _Interned()
        self.constants = _Interned()
        self.used: set = set()
        self.debug = _DebugInfo(self.string) if debug else None

    # --- tables --------------------------------------------------------------------------------
    def string(self, s: str) -> int:
        return self.strings.add(("s", s), lambda: s.encode("utf-8"))

    def type_id(self, t) -> int:
        if isinstance(t, str):                      # element type
            return self.types.add(t, lambda: bytes(Buf().varint(ELEMENT_TYPES[t][0])))
        return self.types.add(t, lambda: self._type_payload(t))

    def _type_payload(self, t: Type) -> bytes:
        b = Buf()
        v = self.v
        if isinstance(t, PointerType):
            pointee = self.type_id(t.pointee)
            b.varint(TAG_POINTER)
            if v >= (13, 4):
                b.varint(0)                          # flags: no pointer attribute
            b.varint(pointee)
        elif isinstance(t, TileType):
            elem = self.type_id(t.element)
            b.varint(TAG_TILE).varint(elem).int_list(t.shape, 8)
        elif isinstance(t, TensorViewType):
            elem = self.type_id(t.element)
            b.varint(TAG_TENSOR_VIEW)
            if v >= (13, 4):
                b.varint(0)
            b.varint(elem)
            b.int_list([DYNAMIC if d is None else d for d in t.shape], 8)
            b.int_list([DYNAMIC if d is None else d for d in t.strides], 8)
        elif isinstance(t, PartitionViewType):
            tv = self.type_id(t.tensor_view)
            pad = None if t.padding is None else A.enum_value("PaddingValue", t.padding)
            pad_flag = 0 if pad is None else 1
            b.varint(TAG_PARTITION_VIEW)
            if v >= (13, 3):                         # 13.3 moved the padding flag to the front
                b.varint(pad_flag)
            b.int_list(t.tile_shape, 4).varint(tv).int_list(t.dim_map, 4)
            if v < (13, 3):
                b.varint(pad_flag)
            if pad is not None:
                b.append(pad)
        elif isinstance(t, TokenType):
            b.varint(TAG_TOKEN)
        elif isinstance(t, FunctionType):
            ins = [self.type_id(x) for x in t.inputs]
            outs = [self.type_id(x) for x in t.results]
            b.varint(TAG_FUNCTION).varint(len(ins))
            for i in ins:
                b.varint(i)
            b.varint(len(outs))
            for i in outs:
                b.varint(i)
        else:
            raise BytecodeError(f"cannot encode type {t!r}")
        return bytes(b)

    def constant(self, c: A.DenseConst) -> int:
        payload = dense_payload(c)
        return self.constants.add(("c", str(c.type), payload),
                                  lambda: bytes(Buf().varint(len(payload))) + payload)

    # --- attributes ----------------------------------------------------------------------------
    def tagged(self, b: Buf, value) -> None:
        """A self-describing attribute (inside arrays, dictionaries and hints)."""
        if isinstance(value, bool):
            b.varint(ATTR_BOOL).append(1 if value else 0)
        elif isinstance(value, int):
            b.varint(ATTR_INTEGER).varint(self.type_id("i32")).varint(value & 0xFFFFFFFF)
        elif isinstance(value, A.TypedValue):
            elem = value.element
            bits = ELEMENT_TYPES[elem][1]
            if ELEMENT_TYPES[elem][2] == "i":
                b.varint(ATTR_INTEGER).varint(self.type_id(elem))
                b.varint(int(value.value) & ((1 << bits) - 1))
            else:
                b.varint(ATTR_FLOAT).varint(self.type_id(elem))
                fb = float_bits(float(value.value), elem)
                if bits <= 8:
                    b.append(fb)
                else:
                    b.svarint(fb)
        elif isinstance(value, dict):
            b.varint(ATTR_DICTIONARY)
            self.dictionary(b, value)
        else:
            raise BytecodeError(f"cannot encode attribute value {value!r}")

    def dictionary(self, b: Buf, d: dict) -> None:
        # dictionary attributes are ordered by key
        b.varint(len(d))
        for k, val in sorted(d.items()):
            b.varint(self.string(k))
            self.tagged(b, val)

    def hints(self, b: Buf, h: A.OptHints, tagged: bool) -> None:
        if tagged:
            b.varint(ATTR_OPT_HINTS)
        self.dictionary(b, h.as_dict())

    def predicate(self, b: Buf, p) -> None:
        if isinstance(p, A.DivBy):
            b.varint(ATTR_DIV_BY).varint(p.divisor)
            b.append((1 if p.every is not None else 0) | (2 if p.along is not None else 0))
            if p.every is not None:
                b.svarint(p.every)
            if p.along is not None:
                b.svarint(p.along)
        elif isinstance(p, A.Bounded):
            b.varint(ATTR_BOUNDED)
            b.append((1 if p.lb is not None else 0) | (2 if p.ub is not None else 0))
            if p.lb is not None:
                b.svarint(p.lb)
            if p.ub is not None:
                b.svarint(p.ub)
        elif isinstance(p, A.SameElements):
            b.varint(ATTR_SAME_ELEMENTS).int_list(p.values, 8)
        else:
            raise BytecodeError(f"bad assume predicate {p!r}")

    def attribute(self, b: Buf, op: Operation, ad, value) -> None:
        k = ad.kind
        if k == "enum":
            b.varint(A.enum_value(ad.enum, value))
        elif k == "bool":
            b.append(1 if value else 0)
        elif k == "int":
            b.varint(int(value))
        elif k == "i32_array":
            b.int_list(list(value), 4)
        elif k == "bool_array":
            b.int_list([1 if x else 0 for x in value], 1)
        elif k == "string":
            b.varint(self.string(value))
        elif k == "dense":
            b.varint(self.constant(value))
        elif k == "array":
            b.varint(len(value))
            for x in value:
                self.tagged(b, x)
        elif k == "hints":
            self.hints(b, value, tagged=False)
        elif k == "predicate":
            self.predicate(b, value)
        else:
            raise BytecodeError(f"{op.name}: cannot encode attribute kind {k!r}")

    # --- operations ----------------------------------------------------------------------------
    def op(self, b: Buf, op: Operation, ids: Dict[Value, int], counter: List[int]) -> None:
        d = op.opdef
        v = self.v
        if v < d.since:
            raise BytecodeError(f"'{d.name}' needs bytecode {d.since[0]}.{d.since[1]}, "
                                f"targeting {v}")
        b.varint(d.opcode)
        if self.debug is not None:                   # pre-order: before the op's regions
            self.debug.op(op.loc)
        # results (a result introduced after the target version is dropped; it must be unused)
        if d.results and d.results[-1].variadic:
            results = list(op.results)
        else:
            results = []
            for r, rd in zip(op.results, d.results):
                if rd.since <= v:
                    results.append(r)
                elif r in self.used:
                    raise BytecodeError(f"{d.name}: result '{rd.name}' needs bytecode "
                                        f"{rd.since[0]}.{rd.since[1]} but is used, targeting {v}")
        if d.is_variadic:
            b.varint(len(results))
        for r in results:
            b.varint(self.type_id(r.type))
        # flags (every op with optional operands is attr_sized: ops._op checks it)
        bits = d.flag_bits()
        flags = 0
        for a in d.attrs:
            if a.optional and op.attrs.get(a.name) not in (None, False):
                self._check_since(op, a.name, a.since)
                flags |= 1 << bits[a.name]
        for i, o in enumerate(d.operands):
            if o.kind == "optional" and op.operand_groups[i]:
                self._check_since(op, o.name, o.since)
                flags |= 1 << bits[o.name]
        fs = d.flags_since()
        if fs is not None and v >= fs:
            b.varint(flags)
        # attributes
        for a in d.attrs:
            if a.kind == "unit":
                continue
            val = op.attrs.get(a.name)
            if val is None:
                val = attr_default(op, a)
            if a.optional:
                if val is None:
                    continue
            elif v < a.since:
                if val != attr_default(op, a):
                    raise BytecodeError(f"{d.name}: attribute '{a.name}' = {val!r} needs bytecode "
                                        f"{a.since[0]}.{a.since[1]}, targeting {v}")
                continue
            elif val is None:
                raise BytecodeError(f"{d.name}: missing required attribute '{a.name}'")
            self.attribute(b, op, a, val)
        # operands
        if d.attr_sized:
            for i, o in enumerate(d.operands):
                g = op.operand_groups[i]
                if o.kind == "optional":
                    for x in g:
                        b.varint(ids[x])
                else:
                    if o.kind == "variadic":
                        b.varint(len(g))
                    for x in g:
                        b.varint(ids[x])
        else:
            flat = op.operands
            if any(o.kind != "one" for o in d.operands):
                b.varint(len(flat))
            for x in flat:
                b.varint(ids[x])
        # regions
        if d.num_regions:
            b.varint(len(op.regions))
            for region in op.regions:
                self.block(b, region, ids, counter)
        for r in results:
            ids[r] = counter[0]
            counter[0] += 1

    def _check_since(self, op, name, since):
        if self.v < since:
            raise BytecodeError(f"{op.name}: '{name}' needs bytecode {since[0]}.{since[1]}, "
                                f"targeting {self.v}")

    def block(self, b: Buf, blk: Block, ids: Dict[Value, int], counter: List[int]) -> None:
        saved = counter[0]
        b.varint(1)                                  # one block per region
        b.varint(len(blk.args))
        for a in blk.args:
            b.varint(self.type_id(a.type))
            ids[a] = counter[0]
            counter[0] += 1
        b.varint(len(blk.ops))
        for op in blk.ops:
            self.op(b, op, ids, counter)
        for a in blk.args:
            ids.pop(a, None)
        counter[0] = saved

    def function(self, fn: Function) -> bytes:
        self.used = {x for op in fn.walk() for x in op.operands}
        debug_index = self.debug.begin_function(fn) if self.debug is not None else 0
        body = Buf()
        ids: Dict[Value, int] = {}
        counter = [0]
        for a in fn.args:
            ids[a] = counter[0]
            counter[0] += 1
        for op in fn.body.ops:
            self.op(body, op, ids, counter)
        out = Buf()
        out.varint(self.string(fn.name)).varint(self.type_id(fn.type))
        flags = FN_ENTRY if fn.entry else 0
        hints = fn.hints if fn.entry and fn.hints else None
        if hints:
            flags |= FN_HAS_HINTS
        out.append(flags)
        out.varint(debug_index)
        if hints:
            self.hints(out, hints, tagged=True)
        out.varint(len(body))
        out += body
        return bytes(out)


def _section(out: Buf, sid: int, payload: bytes, align: int) -> None:
    out.append(sid | (0x80 if align > 1 else 0))
    out.varint(len(payload))
    if align > 1:
        out.varint(align).align(align)
    out += payload


def write_bytecode(module: Module, version=None, debug_info: bool = True) -> bytes:
    """Serialize ``module`` to Tile IR bytecode of ``version`` (default: the latest, 13.4).

    ``debug_info``: write the ops' source locations (the Debug section); without it the bytecode
    does not change when only the kernel's position in its file does.
    """
    v = as_version(version) if version is not None else LATEST
    w = _Writer(v, debug_info)
    func = Buf().varint(len(module.functions))
    for fn in module.functions:
        func += w.function(fn)
    func.align(8)
    out = Buf(MAGIC)
    out += bytes([v.major, v.minor]) + struct.pack("<H", v.tag)
    _section(out, SEC_FUNC, bytes(func), 8)
    if w.constants.items:
        _section(out, SEC_CONSTANT, w.constants.table(8), 8)
    debug = w.debug.section() if w.debug is not None else None
    if debug is not None:
        _section(out, SEC_DEBUG, debug, 8)
    _section(out, SEC_TYPE, w.types.table(4), 4)
    _section(out, SEC_STRING, w.strings.table(4), 4)
    out.append(SEC_END)
    return bytes(out)
