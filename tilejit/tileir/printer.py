"""Tile IR text printer.

The output is the syntax NVIDIA's ``tileirdisasm`` prints, so that ``print_module(m)`` equals the
disassembly of ``write_bytecode(m)`` (the golden tests check this). Three rules of that syntax are
reproduced here:

* ops are printed from their declarative assembly format (``OpDef.fmt``) with MLIR's spacing
  rules, whose state is *static*: an absent optional group still updates it, and a custom
  directive that prints nothing still gets its leading space (hence ``addf %a, %b  : tile<f32>``);
* SSA names: unnamed results are numbered ``%0, %1 ...`` per function; some ops suggest names
  (``%cst_1_i32``, ``%tview``, ``%pview``, ``%for``, ``%reduce``, ``%assume_tview`` ...) that are
  uniqued with a global ``_N`` suffix; nested regions continue numbering after their parent region
  and sibling regions restart from the same point; region arguments are ``%argN`` unless the op
  names them (``%loopIdx``, ``%iterArg0``, ``%reduce_lhs``);
* an implicit terminator without operands (``yield`` in ``if``, ``continue`` in ``for``/``loop``)
  is not printed.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from . import attrs as A
from .bytecode import FLOAT_NP_DTYPES, float_bits
from .ir import Block, Function, Module, Operation, Value
from .types import ELEMENT_TYPES

# ------------------------------------------------------------------------------------------------
# Numbers


# element -> significand precision in bits (including the implicit bit), as APFloat counts it
_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "tf32": 11, "f64": 53, "f8E4M3FN": 4, "f8E5M2": 3,
              "f8E8M0FNU": 1, "f4E2M1FN": 2}


def _adjust_digits(digits: str, exp: int, precision: int) -> Tuple[str, int]:
    """Round a digit string (most significant first) to ``precision`` digits, half up."""
    n = len(digits)
    if n <= precision:
        return digits, exp
    cut = n - precision
    keep, dropped = digits[:precision], digits[precision]
    exp += cut
    if dropped < "5":
        stripped = keep.rstrip("0")
        return stripped, exp + (len(keep) - len(stripped))
    i = len(keep) - 1
    while i >= 0 and keep[i] == "9":
        i -= 1
    if i < 0:
        return "1", exp + precision
    up = keep[:i] + chr(ord(keep[i]) + 1)
    return up, exp + (len(keep) - len(up))


def apfloat_string(x: float, element: str, precision: int = 0, max_padding: int = 3,
                   truncate_zero: bool = True) -> str:
    """LLVM APFloat's ``toString`` of a finite value of the given float format."""
    if precision == 0:
        precision = 2 + _PRECISION[element] * 59 // 196
    sign = "-" if (x < 0 or (x == 0 and np.signbit(x))) else ""
    num, den = abs(x).as_integer_ratio()
    if num == 0:
        sig, exp = 0, 0
    elif den == 1:
        sig, exp = num, 0
    else:
        k = den.bit_length() - 1
        sig, exp = num * 5 ** k, -k
    # first, drop whole decimal digits that cannot matter (truncating, as APFloat does)
    bits_required = (precision * 196 + 58) // 59
    bits = sig.bit_length()
    if bits > bits_required:
        tens = (bits - bits_required) * 59 // 196
        if tens:
            exp += tens
            sig //= 10 ** tens
    digits = str(sig) if sig else "0"
    stripped = digits.rstrip("0") or "0"
    exp += len(digits) - len(stripped)
    digits, exp = _adjust_digits(stripped, exp, precision)
    nd = len(digits)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or nd + exp > precision
    else:
        msd = exp + nd - 1
        scientific = msd < 0 and -msd > max_padding
    if scientific:
        e = exp + nd - 1
        s = digits[0] + "."
        if nd == 1 and truncate_zero:
            s += "0"
        else:
            s += digits[1:]
        if not truncate_zero and precision > nd - 1:
            s += "0" * (precision - nd + 1)
        s += "E" if truncate_zero else "e"
        s += "+" if e >= 0 else "-"
        ed = str(abs(e))
        if not truncate_zero and len(ed) < 2:
            ed = "0" + ed
        return sign + s + ed
    if exp >= 0:
        return sign + digits + "0" * exp
    whole = exp + nd
    if whole > 0:
        return sign + digits[:whole] + "." + digits[whole:]
    return sign + "0." + "0" * (-whole) + digits


def format_float(x: float, element: str) -> str:
    """A float constant as MLIR prints it (``1.000000e+00``, ``3.14159274``, ``0x7F800000``)."""
    bits = float_bits(x, element)
    width = ELEMENT_TYPES[element][1] if element != "tf32" else 19
    v = _bits_value(bits, element)
    if np.isfinite(v):
        s = apfloat_string(v, element, 6, 0, False)
        if float_bits(float(s), element) == bits:
            return s
        s = apfloat_string(v, element)
        if "." in s:
            return s
    return "0x" + format(bits, "X").rjust((width + 3) // 4, "0")


def _bits_value(bits: int, element: str) -> float:
    """The exact value of a float bit pattern (as a Python float)."""
    if element == "tf32":
        bits <<= 13
        element = "f32"
    npdt = FLOAT_NP_DTYPES[element]
    width = npdt.itemsize
    return float(np.frombuffer(bits.to_bytes(width, "little"), dtype=npdt)[0])


def format_int(x: int, element: str) -> str:
    bits = ELEMENT_TYPES[element][1]
    if element == "i1":
        return "true" if x else "false"
    x &= (1 << bits) - 1
    if x >> (bits - 1):
        x -= 1 << bits
    return str(x)


def _scalar_text(x, element: str) -> str:
    if ELEMENT_TYPES[element][2] == "i":
        return format_int(int(x), element)
    return format_float(float(x), element)


def dense_text(c: A.DenseConst) -> str:
    """``<f32: 1.000000e+00> : tile<f32>`` (the constant op's value syntax)."""
    elem = c.type.element
    v = np.asarray(c.value)
    if v.ndim == 0:
        body = _scalar_text(v.item(), elem)
    else:
        def nested(a):
            if a.ndim == 1:
                return "[" + ", ".join(_scalar_text(x, elem) for x in a.tolist()) + "]"
            return "[" + ", ".join(nested(s) for s in a) + "]"
        body = nested(v)
    return f"<{elem}: {body}> : {c.type}"


def typed_value_text(t: A.TypedValue) -> str:
    return f"{_scalar_text(t.value, t.element)} : {t.element}"


def string_literal(s: str) -> str:
    """A quoted string as MLIR prints it: non-printable characters, quotes and backslashes as \\XX."""
    out = []
    for ch in s.encode("utf-8"):
        if 0x20 <= ch < 0x7F and ch not in (0x22, 0x5C):
            out.append(chr(ch))
        else:
            out.append("\\%02X" % ch)
    return '"' + "".join(out) + '"'


def _attr_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, A.TypedValue):
        return typed_value_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr_text(x) for x in value) + "]"
    if isinstance(value, A.OptHints):
        return hints_text(value)
    raise TypeError(f"cannot print attribute {value!r}")


def hints_text(h: A.OptHints) -> str:
    parts = []
    for arch, items in sorted(h.per_arch):
        inner = ", ".join(f"{k} = {_attr_text(v)}" for k, v in sorted(items))
        parts.append(f"{arch} = {{{inner}}}")
    return "<" + ", ".join(parts) + ">"


def predicate_text(p) -> str:
    if isinstance(p, A.DivBy):
        s = f"div_by<{p.divisor}"
        if p.every is not None:
            s += f", every {p.every} along {p.along}"
        return s + ">"
    if isinstance(p, A.Bounded):
        lb = "?" if p.lb is None else str(p.lb)
        ub = "?" if p.ub is None else str(p.ub)
        return f"bounded<{lb}, {ub}>"
    if isinstance(p, A.SameElements):
        return "same_elements<[" + ", ".join(map(str, p.values)) + "]>"
    raise TypeError(f"bad predicate {p!r}")


# ------------------------------------------------------------------------------------------------
# SSA names


def _constant_name(op: Operation) -> str:
    c: A.DenseConst = op.attrs["value"]
    elem = c.type.element
    vals = np.asarray(c.value).reshape(-1)
    if elem == "i1":
        if all(bool(x) for x in vals):
            return "true"
        if not any(bool(x) for x in vals):
            return "false"
        return "cst_i1"
    name = "cst"
    if vals.size == 1 or np.all(vals == vals[0]):
        x = vals[0]
        if ELEMENT_TYPES[elem][2] == "i":
            name += "_" + format_int(int(x), elem)
        else:
            f = float(x)
            if np.isnan(f):
                name += "_NaN"
            elif f >= 0 and np.isfinite(f) and f == int(f) and f < 2.0 ** 64:
                name += f"_{int(f)}"
    return f"{name}_{elem}"


def _result_name_hints(op: Operation) -> Dict[int, str]:
    n = op.name
    if n == "constant":
        return {0: _constant_name(op)}
    fixed = {"broadcast": "bcast", "reshape": "reshape", "make_tensor_view": "tview",
             "make_partition_view": "pview"}
    if n in fixed:
        return {0: fixed[n]}
    if n in ("for", "reduce") and op.results:
        return {0: n}
    rdefs = op.opdef.results
    if len(rdefs) > 1 and not any(r.variadic for r in rdefs):
        # ops with several fixed results are printed with their result names (%tile, %result_token)
        return {i: rd.name for i, rd in enumerate(rdefs)}
    if n == "assume":
        src = op.operand("value")
        prod = src.owner if isinstance(src.owner, Operation) else None
        if prod is not None and prod.name in _NAMING_OPS:
            return {0: "assume_" + _result_name_hints(prod).get(src.index, "")}
        return {0: "assume"}
    return {}


_NAMING_OPS = {"constant", "broadcast", "reshape", "make_tensor_view", "make_partition_view",
               "for", "reduce", "assume"}


def _block_arg_hints(op: Operation, block: Block) -> Dict[int, str]:
    if op.name == "for":
        return {i: ("loopIdx" if i == 0 else f"iterArg{i - 1}") for i in range(len(block.args))}
    if op.name == "reduce":
        nargs = len(block.args)
        out = {}
        for i in range(nargs):
            name = "reduce_lhs" if i % 2 == 0 else "reduce_rhs"
            if nargs > 2:
                name += str(i // 2)
            out[i] = name
        return out
    return {}


_IDENT_OK = re.compile(r"[A-Za-z0-9_$.\-]")


class _Names:
    """SSA value names for one function, following MLIR's SSANameState."""

    def __init__(self, fn: Function):
        self.names: Dict[Value, str] = {}
        self.group_of: Dict[Value, Tuple[str, int, int]] = {}   # value -> (name, index, size)
        self.conflict_id = 0
        self.scopes: List[set] = []
        self._number_region(fn.body, None, next_value=0, next_arg=0)

    def _used(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    def _unique(self, name: str) -> str:
        name = "".join(c if _IDENT_OK.match(c) else "_" for c in name) or "_"
        if name[0].isdigit():
            name = "_" + name
        if self._used(name):
            while True:
                probe = f"{name}_{self.conflict_id}"
                self.conflict_id += 1
                if not self._used(probe):
                    name = probe
                    break
        self.scopes[-1].add(name)
        return name

    def _number_region(self, block: Block, owner: Optional[Operation], next_value: int,
                       next_arg: int) -> None:
        self.scopes.append(set())
        hints = _block_arg_hints(owner, block) if owner is not None else {}
        state = [next_value, next_arg]

        def set_name(v: Value, name: str):
            if not name:
                self.names[v] = str(state[0])
                state[0] += 1
            else:
                self.names[v] = self._unique(name)

        for i, a in enumerate(block.args):
            if i in hints:
                set_name(a, hints[i])
            else:
                set_name(a, f"arg{state[1]}")
                state[1] += 1
        for op in block.ops:
            if not op.results:
                continue
            hints_r = _result_name_hints(op)
            for i, nm in sorted(hints_r.items()):
                set_name(op.results[i], nm)
            if 0 not in hints_r:
                self.names[op.results[0]] = str(state[0])
                state[0] += 1
            # result groups: a group starts at 0 and at every other named result
            starts = sorted({0} | {i for i in hints_r if i != 0})
            for gi, s in enumerate(starts):
                e = starts[gi + 1] if gi + 1 < len(starts) else len(op.results)
                base = self.names[op.results[s]]
                for k in range(s, e):
                    self.group_of[op.results[k]] = (base, k - s, e - s)
        saved = (state[0], state[1], self.conflict_id)
        for op in block.ops:
            for r in op.regions:
                self.conflict_id = max(self.conflict_id, saved[2])
                self._number_region(r, op, saved[0], saved[1])
        self.scopes.pop()

    def ref(self, v: Value) -> str:
        g = self.group_of.get(v)
        if g is not None:
            base, k, size = g
            return f"%{base}#{k}" if size > 1 else f"%{base}"
        return "%" + self.names[v]

    def def_list(self, op: Operation) -> str:
        parts = []
        i = 0
        while i < len(op.results):
            base, _, size = self.group_of[op.results[i]]
            parts.append(f"%{base}" + (f":{size}" if size > 1 else ""))
            i += size
        return ", ".join(parts)


# ------------------------------------------------------------------------------------------------
# Declarative assembly formats

_TOKEN = re.compile(r"\s*(`[^`]*`|\$\w+|custom<\w+>\(|type\(\$\w+\)|attr-dict-with-keyword|"
                    r"attr-dict|oilist\(|\(|\)\?|\)|\^|\||,)")


def _tokenize(fmt: str) -> List[str]:
    toks, pos = [], 0
    while pos < len(fmt):
        m = _TOKEN.match(fmt, pos)
        if not m:
            if fmt[pos:].strip() == "":
                break
            raise ValueError(f"cannot parse format at {fmt[pos:]!r}")
        toks.append(m.group(1))
        pos = m.end()
    return toks


def _parse(toks: List[str], i: int, stop: Tuple[str, ...]) -> Tuple[list, int]:
    elems = []
    while i < len(toks) and toks[i] not in stop:
        t = toks[i]
        if t.startswith("`"):
            elems.append(("lit", t[1:-1]))
            i += 1
        elif t.startswith("$"):
            anchor = i + 1 < len(toks) and toks[i + 1] == "^"
            elems.append(("var", t[1:], anchor))
            i += 2 if anchor else 1
        elif t.startswith("type("):
            anchor = i + 1 < len(toks) and toks[i + 1] == "^"
            elems.append(("type", t[6:-1], anchor))
            i += 2 if anchor else 1
        elif t.startswith("custom<"):
            name = t[7:-2]
            args, i = _parse(toks, i + 1, (")",))
            i += 1  # ')'
            anchor = i < len(toks) and toks[i] == "^"
            if anchor:
                i += 1
            elems.append(("custom", name, [a for a in args if a[0] != "comma"], anchor))
        elif t in ("attr-dict", "attr-dict-with-keyword"):
            elems.append(("attrdict",))
            i += 1
        elif t == "(":
            inner, i = _parse(toks, i + 1, (")?",))
            i += 1
            elems.append(("opt", inner))
        elif t == "oilist(":
            clauses, cur = [], []
            i += 1
            while toks[i] != ")":
                if toks[i] == "|":
                    clauses.append(cur)
                    cur = []
                    i += 1
                    continue
                sub, i = _parse(toks, i, ("|", ")"))
                cur.extend(sub)
            clauses.append(cur)
            i += 1
            elems.append(("oilist", clauses))
        elif t == ",":
            elems.append(("comma",))
            i += 1
        else:
            raise ValueError(f"unexpected format token {t!r}")
    return elems, i


_FORMAT_CACHE: Dict[str, list] = {}


def _format(fmt: str) -> list:
    f = _FORMAT_CACHE.get(fmt)
    if f is None:
        f, _ = _parse(_tokenize(fmt), 0, ())
        _FORMAT_CACHE[fmt] = f
    return f


def _space_before(value: str, last_punct: bool) -> bool:
    if len(value) != 1 and value != "->":
        return True
    if last_punct:
        return value[0] not in ">)}],"
    return value[0] not in "<>(){}[],"


class _OpPrinter:
    """Prints one op's format; ``st`` holds MLIR's (should_emit_space, last_was_punct)."""

    def __init__(self, fp: "_FunctionPrinter", op: Operation):
        self.fp = fp
        self.op = op
        self.out: List[str] = []
        self.space = True
        self.punct = False

    # --- presence and values -------------------------------------------------------------------
    def present(self, name: str) -> bool:
        op = self.op
        if op.opdef.has_operand(name):
            return bool(op.group(name))
        if name in ("body", "thenRegion", "elseRegion"):
            return True
        for rd in op.opdef.results:
            if rd.name == name:
                return bool(op.results)
        val = op.attrs.get(name)
        ad = op.opdef.attr(name)
        if ad.kind == "unit":
            return bool(val)
        if ad.default is not None:
            return val is not None and val != ad.default
        return val is not None

    def _types_of(self, name: str) -> List:
        op = self.op
        if op.opdef.has_operand(name):
            return [v.type for v in op.group(name)]
        rdefs = op.opdef.results
        if len(rdefs) > 1 and not any(r.variadic for r in rdefs):
            return [op.results[i].type for i, rd in enumerate(rdefs) if rd.name == name]
        return [r.type for r in op.results]

    # --- element emission ----------------------------------------------------------------------
    def literal(self, value: str, emit: bool) -> None:
        if emit:
            if self.space and _space_before(value, self.punct):
                self.out.append(" ")
            self.out.append(value)
        self.space = len(value) != 1 or value[0] not in "<({["
        self.punct = value[0] != "_" and not value[0].isalpha()

    def whitespace(self, value: str, emit: bool) -> None:
        if value:
            if emit:
                self.out.append(" ")
            self.punct = False
        else:
            self.punct = True
        self.space = False

    def element(self, text: Optional[str], emit: bool) -> None:
        if emit:
            if self.space or not self.punct:
                self.out.append(" ")
            self.out.append(text or "")
        self.punct = False
        self.space = True

    def var_text(self, name: str) -> str:
        op = self.op
        if op.opdef.has_operand(name):
            return ", ".join(self.fp.names.ref(v) for v in op.group(name))
        ad = op.opdef.attr(name)
        val = op.attrs.get(name, ad.default)
        if ad.kind == "enum":
            return f"<{val}>" if ad.enum in ("IntegerOverflow", "RoundingMode", "Signedness") else val
        if ad.kind == "i32_array":
            return "[" + ", ".join(str(x) for x in val) + "]"
        if ad.kind == "string":
            return string_literal(val)
        if ad.kind == "hints":
            return hints_text(val)
        return _attr_text(val)

    def custom(self, name: str, args) -> str:
        op = self.op
        if name == "CudaTileType":
            ref = args[0][1]
            return ", ".join(str(t) for t in self._types_of(ref))
        if name == "ArgumentRegion":
            return self.fp.argument_region(op, op.regions[0])
        if name == "IfOpRegion":
            return self.fp.region(op, op.regions[0 if args[0][1] == "thenRegion" else 1], "yield")
        if name == "DenseTypedElementsAttr":
            return dense_text(op.attrs["value"])
        attr = args[0][1]
        val = op.attrs.get(attr, op.opdef.attr(attr).default)
        if name in ("Signedness", "ComparisonPredicate", "ComparisonOrdering"):
            return val
        if name == "AssumePredicate":
            return predicate_text(val)
        default = {"IEEERoundingMode": "nearest_even", "DivFOpRoundingMode": "nearest_even",
                   "SqrtOpRoundingMode": "nearest_even", "TanHOpRoundingMode": "full",
                   "ExpOpRoundingMode": "full", "IntegerRoundingMode": "nearest_int_to_zero"}[name]
        return "" if val == default else f"rounding<{val}>"

    def run(self, elems, emit: bool = True) -> None:
        for e in elems:
            kind = e[0]
            if kind == "lit":
                if e[1] in ("", " "):
                    self.whitespace(e[1], emit)
                else:
                    self.literal(e[1], emit)
            elif kind == "var":
                self.element(self.var_text(e[1]) if emit else None, emit)
            elif kind == "type":
                self.element(", ".join(map(str, self._types_of(e[1]))) if emit else None, emit)
            elif kind == "custom":
                self.element(self.custom(e[1], e[2]) if emit else None, emit)
            elif kind == "attrdict":
                self.punct = False
            elif kind == "opt":
                anchor = self._anchor(e[1])
                on = emit and self.present(anchor)
                elided = None
                first = e[1][0]
                for sub in e[1]:
                    if sub[0] == "var" and sub[1] == anchor and sub is not first and \
                            not self.op.opdef.has_operand(anchor) and \
                            self.op.opdef.attr(anchor).kind == "unit":
                        elided = sub
                self.run([s for s in e[1] if s is not elided], on)
            elif kind == "oilist":
                for clause in e[1]:
                    lit = clause[0]
                    vars_ = [s for s in clause[1:] if s[0] == "var"]
                    on = emit and any(self.present(v[1]) for v in vars_)
                    self.literal(lit[1], on)
                    units = [v for v in vars_ if self.op.opdef.attr(v[1]).kind == "unit"]
                    if not units:
                        self.run(clause[1:], on)

    @staticmethod
    def _anchor(elems) -> str:
        for e in elems:
            if e[0] in ("var", "type") and e[2]:
                return e[1]
            if e[0] == "custom" and e[3]:
                return e[2][0][1]
        raise ValueError("optional group without anchor")


# ------------------------------------------------------------------------------------------------
# Custom op printers (ops whose syntax is hand-written in the dialect)


def _memory_attrs(op: Operation) -> str:
    s = " " + op.attrs.get("memory_ordering_semantics", "weak")
    if op.attrs.get("memory_scope") is not None:
        s += " " + op.attrs["memory_scope"]
    return s


def _index_types(idx: List[Value]) -> str:
    if not idx:
        return ""
    types = [str(v.type) for v in idx]
    if all(t == types[0] for t in types):
        return ", " + types[0]
    return "".join(", " + t for t in types)


def _view_optionals(fp, op) -> str:
    s = ""
    tok = op.operand("token")
    if tok is not None:
        s += " token = " + fp.names.ref(tok)
    if op.attrs.get("optimization_hints"):
        s += " optimization_hints = " + hints_text(op.attrs["optimization_hints"])
    inb = op.attrs.get("inbounds")
    if inb and any(inb):
        s += " inbounds = [" + ", ".join("true" if x else "false" for x in inb) + "]"
    return s


def _print_load_view(fp, op) -> str:
    view = op.operand("view")
    idx = op.group("index")
    s = _memory_attrs(op) + " " + fp.names.ref(view) + "[" + ", ".join(fp.names.ref(v) for v in idx) + "]"
    s += _view_optionals(fp, op)
    s += " : " + str(view.type) + _index_types(idx)
    s += " -> " + str(op.results[0].type) + ", " + str(op.results[1].type)
    return s


def _print_store_view(fp, op) -> str:
    view = op.operand("view")
    idx = op.group("index")
    tile = op.operand("tile")
    s = (_memory_attrs(op) + " " + fp.names.ref(tile) + ", " + fp.names.ref(view) + "["
         + ", ".join(fp.names.ref(v) for v in idx) + "]")
    s += _view_optionals(fp, op)
    s += " : " + str(tile.type) + ", " + str(view.type) + _index_types(idx)
    s += " -> " + str(op.results[0].type)
    return s


def _print_make_tensor_view(fp, op) -> str:
    tv = op.results[0].type
    dyn_shape = list(op.group("dynamicShape"))
    dyn_strides = list(op.group("dynamicStrides"))

    def mixed(static, dyn):
        it = iter(dyn)
        return ", ".join(fp.names.ref(next(it)) if d is None else str(d) for d in static)

    s = (" " + fp.names.ref(op.operand("base")) + ", shape = [" + mixed(tv.shape, dyn_shape)
         + "], strides = [" + mixed(tv.strides, dyn_strides) + "] : ")
    if dyn_shape or dyn_strides:
        s += str((dyn_shape or dyn_strides)[0].type) + " -> "
    return s + str(tv)


def _print_make_partition_view(fp, op) -> str:
    return " " + fp.names.ref(op.operand("tensor_view")) + " : " + str(op.results[0].type)


def _print_get_shape(fp, op) -> str:
    src = op.operand("src")
    return " " + fp.names.ref(src) + " : " + str(src.type) + " -> " + str(op.results[0].type)


def _print_for(fp, op) -> str:
    body = op.regions[0]
    iv = body.args[0]
    lb, ub, step = (op.operand(n) for n in ("lowerBound", "upperBound", "step"))
    s = " unsigned" if op.attrs.get("unsignedCmp") else ""
    s += (f" {fp.names.ref(iv)} in ({fp.names.ref(lb)} to {fp.names.ref(ub)}, step "
          f"{fp.names.ref(step)}) : {iv.type} ")
    inits = op.group("initValues")
    if inits:
        s += "iter_values(" + ", ".join(
            f"{fp.names.ref(a)} = {fp.names.ref(v)}" for a, v in zip(body.args[1:], inits))
        s += ") -> (" + ", ".join(str(v.type) for v in inits) + ") "
    return s + fp.region(op, body, "continue")


def _print_loop(fp, op) -> str:
    body = op.regions[0]
    inits = op.group("initValues")
    s = " "
    if inits:
        s += "iter_values(" + ", ".join(
            f"{fp.names.ref(a)} = {fp.names.ref(v)}" for a, v in zip(body.args, inits)) + ") "
    if inits or op.results:
        s += ": "
    if inits:
        s += ", ".join(str(v.type) for v in inits) + " "
        if op.results:
            s += "-> "
    if op.results:
        s += ", ".join(str(r.type) for r in op.results) + " "
    return s + fp.region(op, body, "continue")


def _print_if(fp, op) -> str:
    s = " " + fp.names.ref(op.operand("condition"))
    if op.results:
        s += " -> (" + ", ".join(str(r.type) for r in op.results) + ")"
    s += " " + fp.region(op, op.regions[0], "yield")
    s += " else " + fp.region(op, op.regions[1], "yield")
    return s


CUSTOM_PRINTERS: Dict[str, Callable] = {
    "load_view_tko": _print_load_view, "store_view_tko": _print_store_view,
    "make_tensor_view": _print_make_tensor_view, "make_partition_view": _print_make_partition_view,
    "get_tensor_shape": _print_get_shape, "get_index_space_shape": _print_get_shape,
    "for": _print_for, "loop": _print_loop, "if": _print_if,
}


# ------------------------------------------------------------------------------------------------
class _FunctionPrinter:
    INDENT = 2

    def __init__(self, fn: Function):
        self.fn = fn
        self.names = _Names(fn)
        self.indent = 0

    def op_text(self, op: Operation) -> str:
        head = ""
        if op.results:
            head = self.names.def_list(op) + " = "
        printer = CUSTOM_PRINTERS.get(op.name)
        if printer is not None:
            body = printer(self, op)
        else:
            p = _OpPrinter(self, op)
            p.run(_format(op.opdef.fmt))
            body = "".join(p.out)
        return head + op.name + body

    def block_lines(self, block: Block, print_terminator: bool = True) -> str:
        self.indent += self.INDENT
        ops = block.ops if print_terminator else block.ops[:-1]
        lines = []
        for op in ops:
            lines.append(" " * self.indent + self.op_text(op) + "\n")
        self.indent -= self.INDENT
        return "".join(lines)

    def region(self, owner: Operation, block: Block, implicit_terminator: str) -> str:
        term = block.ops[-1] if block.ops else None
        show_term = not (term is not None and term.name == implicit_terminator and not term.operands)
        return "{\n" + self.block_lines(block, show_term) + " " * self.indent + "}"

    def argument_region(self, owner: Operation, block: Block) -> str:
        sig = "(" + ", ".join(f"{self.names.ref(a)}: {a.type}" for a in block.args) + ")"
        return "\n" + " " * self.indent + sig + " " + self.region(owner, block, "")

    def text(self) -> str:
        fn = self.fn
        kw = "entry" if fn.entry else "func"
        sig = "(" + ", ".join(f"{self.names.ref(a)}: {a.type}" for a in fn.args) + ")"
        s = f"{kw} @{fn.name}{sig}"
        if fn.hints:
            s += " optimization_hints=" + hints_text(fn.hints)
        return s + " {\n" + self.block_lines(fn.body) + "}\n"


def print_function(fn: Function) -> str:
    return _FunctionPrinter(fn).text()


def print_module(module: Module) -> str:
    """The module's functions as ``tileirdisasm`` prints them."""
    return "".join(print_function(f) for f in module.functions)
