"""The Tile IR op table: the single description of every op tilejit knows.

Each :class:`OpDef` mirrors the op's definition in NVIDIA's dialect (operands and attributes in
declaration order, with the bytecode version that introduced each), and adds:

* ``opcode``: the frozen bytecode opcode;
* ``fmt``: the op's textual syntax as an MLIR declarative assembly format, or ``None`` when the
  printer has a hand-written routine for it (``printer.CUSTOM_PRINTERS``);
* ``rule``: the name of the type rule the verifier applies (``verify.RULES``).

The bytecode writer, the text printer, the verifier and the simulator are all driven by this table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

V13_1, V13_2, V13_3, V13_4 = (13, 1), (13, 2), (13, 3), (13, 4)


@dataclass(frozen=True)
class OperandDef:
    name: str
    kind: str = "one"            # "one" | "optional" | "variadic"
    since: Tuple[int, int] = V13_1


@dataclass(frozen=True)
class AttrDef:
    """An attribute. ``kind`` selects its encoding:

    ``enum`` (varint of the keyword's index in ``attrs.ENUMS[enum]``), ``unit`` (only a flag bit),
    ``bool`` (one byte), ``int`` (varint), ``i32_array`` / ``bool_array`` (varint count + LE
    values), ``string`` (string-table id), ``dense`` (constant-table id), ``array`` (count + tagged
    attributes), ``hints`` (optimization hints dictionary), ``predicate`` (tagged assume predicate).
    """

    name: str
    kind: str
    since: Tuple[int, int] = V13_1
    optional: bool = False       # OptionalAttr / UnitAttr: presence is a flag bit
    default: object = None       # DefaultValuedAttr: the value implied when absent
    enum: Optional[str] = None


@dataclass(frozen=True)
class ResultDef:
    name: str
    variadic: bool = False
    since: Tuple[int, int] = V13_1


@dataclass(frozen=True)
class OpDef:
    name: str
    opcode: int
    since: Tuple[int, int]
    operands: Tuple[OperandDef, ...] = ()
    attrs: Tuple[AttrDef, ...] = ()
    results: Tuple[ResultDef, ...] = ()
    attr_sized: bool = False     # AttrSizedOperandSegments: optional operands get flag bits
    num_regions: int = 0
    terminator: bool = False
    pure: bool = False
    fmt: Optional[str] = None    # declarative assembly format; None = custom printer
    rule: Optional[str] = None   # verifier type rule
    _operand_index: Dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        self._operand_index.update({o.name: i for i, o in enumerate(self.operands)})

    def operand_index(self, name: str) -> int:
        return self._operand_index[name]

    def has_operand(self, name: str) -> bool:
        return name in self._operand_index

    def attr(self, name: str) -> AttrDef:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no attribute {name!r}")

    @property
    def is_variadic(self) -> bool:
        """Variadic operands or results: the result-type list is then written with a count."""
        return any(o.kind == "variadic" for o in self.operands) or any(r.variadic for r in self.results)

    def flag_bits(self) -> Dict[str, int]:
        """Bit of each optional attribute / optional operand in the flags varint.

        Bits are assigned in version order; within a version, attributes first, then operands
        (operands only for ops with AttrSizedOperandSegments), each in declaration order.
        """
        items = []
        for a in self.attrs:
            if a.optional:
                items.append((a.since, 0, a.name))
        if self.attr_sized:
            for o in self.operands:
                if o.kind == "optional":
                    items.append((o.since, 1, o.name))
        # stable sort keeps declaration order within (version, attr-before-operand)
        items.sort(key=lambda t: (t[0], t[1]))
        return {name: i for i, (_, _, name) in enumerate(items)}

    def flags_since(self) -> Optional[Tuple[int, int]]:
        """The first version whose encoding has the flags varint (None: never)."""
        vs = [a.since for a in self.attrs if a.optional]
        if self.attr_sized:
            vs += [o.since for o in self.operands if o.kind == "optional"]
        return min(vs) if vs else None


OPS: Dict[str, OpDef] = {}
BY_OPCODE: Dict[int, OpDef] = {}


def _op(name, opcode, since=V13_1, operands=(), attrs=(), results=("result",), **kw) -> OpDef:
    ods = tuple(o if isinstance(o, OperandDef) else OperandDef(o) for o in operands)
    rds = tuple(r if isinstance(r, ResultDef) else ResultDef(r) for r in results)
    d = OpDef(name, opcode, since, ods, tuple(attrs), rds, **kw)
    assert name not in OPS and opcode not in BY_OPCODE, name
    # optional operands get flag bits only with AttrSizedOperandSegments (the writer relies on it)
    assert d.attr_sized or all(o.kind != "optional" for o in ods), name
    OPS[name] = d
    BY_OPCODE[opcode] = d
    return d


def _opt(name, since=V13_1):
    return OperandDef(name, "optional", since)


def _var(name, since=V13_1):
    return OperandDef(name, "variadic", since)


def _enum(name, enum, **kw):
    return AttrDef(name, "enum", enum=enum, **kw)


def _unit(name, since=V13_1):
    return AttrDef(name, "unit", since=since, optional=True)


ROUNDING = lambda name="rounding_mode", **kw: _enum(name, "RoundingMode", **kw)  # noqa: E731
FTZ = _unit("flush_to_zero")
OVERFLOW = lambda since=V13_1: _enum("overflow", "IntegerOverflow", since=since, default="none")  # noqa: E731
SIGNEDNESS = lambda name="signedness": _enum(name, "Signedness")  # noqa: E731
T = "custom<CudaTileType>"

# ---------------------------------------------------------------------------------------------
# Formats shared by families (MLIR declarative assembly format syntax)
F_UNARY = f"$source attr-dict `:` {T}(type($result))"
F_UNARY_FTZ = f"$source (`flush_to_zero` $flush_to_zero^)? attr-dict `:` {T}(type($result))"
F_BINARY = f"$lhs `,` $rhs attr-dict `:` {T}(type($result))"
F_BINARY_OVF = f"$lhs `,` $rhs (`overflow` `` $overflow^)? attr-dict `:` {T}(type($result))"
F_BINARY_SIGN = f"$lhs `,` $rhs custom<Signedness>($signedness) attr-dict `:` {T}(type($result))"
F_FBINARY = (f"$lhs `,` $rhs custom<IEEERoundingMode>($rounding_mode) "
             f"(`flush_to_zero` $flush_to_zero^)? attr-dict `:` {T}(type($result))")
F_MINMAXF = (f"$lhs `,` $rhs oilist(`flush_to_zero` $flush_to_zero | `propagate_nan` $propagate_nan) "
             f"attr-dict `:` {T}(type($result))")
F_CAST = f"$source attr-dict `:` {T}(type($source)) `->` {T}(type($result))"
F_TERM = f"attr-dict ($operands^ `:` {T}(type($operands)))?"

# ---------------------------------------------------------------------------------------------
# Elementwise floating point
for _name, _code in (("absf", 0x00), ("ceil", 0x0D), ("cos", 0x12), ("cosh", 0x13),
                     ("floor", 0x27), ("log", 0x3F), ("log2", 0x40), ("negf", 0x4F),
                     ("sin", 0x62), ("sinh", 0x63), ("tan", 0x69)):
    _op(_name, _code, operands=("source",), pure=True, fmt=F_UNARY, rule="unary_float")
_op("exp", 0x17, operands=("source",), attrs=(ROUNDING(since=V13_3, default="full"),), pure=True,
    fmt=f"$source custom<ExpOpRoundingMode>($rounding_mode) attr-dict `:` {T}(type($result))",
    rule="unary_float")
_op("exp2", 0x18, operands=("source",), attrs=(FTZ,), pure=True, fmt=F_UNARY_FTZ, rule="unary_float")
_op("rsqrt", 0x5D, operands=("source",), attrs=(FTZ,), pure=True, fmt=F_UNARY_FTZ, rule="unary_float")
_op("sqrt", 0x64, operands=("source",), attrs=(ROUNDING(), FTZ), pure=True,
    fmt=(f"$source custom<SqrtOpRoundingMode>($rounding_mode) (`flush_to_zero` $flush_to_zero^)? "
         f"attr-dict `:` {T}(type($result))"), rule="unary_float")
_op("tanh", 0x6A, operands=("source",), attrs=(ROUNDING(since=V13_2, default="full"),), pure=True,
    fmt=f"$source custom<TanHOpRoundingMode>($rounding_mode) attr-dict `:` {T}(type($result))",
    rule="unary_float")
for _name, _code in (("addf", 0x02), ("subf", 0x67), ("mulf", 0x4C)):
    _op(_name, _code, operands=("lhs", "rhs"), attrs=(ROUNDING(), FTZ), pure=True, fmt=F_FBINARY,
        rule="binary_float")
_op("divf", 0x14, operands=("lhs", "rhs"), attrs=(ROUNDING(), FTZ), pure=True,
    fmt=F_FBINARY.replace("IEEERoundingMode", "DivFOpRoundingMode"), rule="binary_float")
_op("remf", 0x59, operands=("lhs", "rhs"), pure=True, fmt=F_BINARY, rule="binary_float")
_op("fpowf", 0x54, operands=("source", "exponent"), pure=True,
    fmt=f"$source `,` $exponent attr-dict `:` {T}(type($result))", rule="binary_float")
_op("atan2", 0x6E, since=V13_2, operands=("x", "y"), pure=True,
    fmt=f"$x `,` $y attr-dict `:` {T}(type($result))", rule="binary_float")
_op("maxf", 0x45, operands=("lhs", "rhs"), attrs=(_unit("propagate_nan"), FTZ), pure=True,
    fmt=F_MINMAXF, rule="binary_float")
_op("minf", 0x47, operands=("lhs", "rhs"), attrs=(_unit("propagate_nan"), FTZ), pure=True,
    fmt=F_MINMAXF, rule="binary_float")
_op("fma", 0x28, operands=("lhs", "rhs", "acc"), attrs=(ROUNDING(), FTZ), pure=True,
    fmt=(f"$lhs `,` $rhs `,` $acc custom<IEEERoundingMode>($rounding_mode) "
         f"(`flush_to_zero` $flush_to_zero^)? attr-dict `:` {T}(type($result))"),
    rule="ternary_float")
_op("cmpf", 0x0E, operands=("lhs", "rhs"),
    attrs=(_enum("comparison_predicate", "ComparisonPredicate"),
           _enum("comparison_ordering", "ComparisonOrdering")), pure=True,
    fmt=(f"custom<ComparisonPredicate>($comparison_predicate) "
         f"custom<ComparisonOrdering>($comparison_ordering) $lhs `,` $rhs attr-dict `:` "
         f"{T}(type($lhs)) `->` {T}(type($result))"), rule="cmp_float")

# ---------------------------------------------------------------------------------------------
# Elementwise integer / bitwise
_op("absi", 0x01, operands=("source",), pure=True, fmt=F_UNARY, rule="unary_int")
_op("negi", 0x50, operands=("source",), attrs=(OVERFLOW(V13_2),), pure=True,
    fmt=f"$source (`overflow` `` $overflow^)? attr-dict `:` {T}(type($result))", rule="unary_int")
for _name, _code in (("addi", 0x03), ("subi", 0x68), ("muli", 0x4E), ("shli", 0x60)):
    _op(_name, _code, operands=("lhs", "rhs"), attrs=(OVERFLOW(),), pure=True, fmt=F_BINARY_OVF,
        rule="binary_int")
for _name, _code in (("andi", 0x04), ("ori", 0x52), ("xori", 0x6C)):
    _op(_name, _code, operands=("lhs", "rhs"), pure=True, fmt=F_BINARY, rule="binary_int")
_op("mulhii", 0x4D, operands=("x", "y"), pure=True,
    fmt=f"$x `,` $y attr-dict `:` {T}(type($result))", rule="binary_int")
for _name, _code in (("maxi", 0x46), ("mini", 0x48), ("remi", 0x5A), ("shri", 0x61)):
    _op(_name, _code, operands=("lhs", "rhs"), attrs=(SIGNEDNESS(),), pure=True, fmt=F_BINARY_SIGN,
        rule="binary_int")
_op("divi", 0x15, operands=("lhs", "rhs"),
    attrs=(SIGNEDNESS(), ROUNDING("rounding", default="zero")),
    fmt=(f"$lhs `,` $rhs custom<Signedness>($signedness) (`rounding` `` $rounding^)? attr-dict "
         f"`:` {T}(type($result))"), rule="binary_int")
_op("cmpi", 0x0F, operands=("lhs", "rhs"),
    attrs=(_enum("comparison_predicate", "ComparisonPredicate"), SIGNEDNESS()), pure=True,
    fmt=(f"custom<ComparisonPredicate>($comparison_predicate) $lhs `,` $rhs `,` "
         f"custom<Signedness>($signedness) attr-dict `:` {T}(type($lhs)) `->` {T}(type($result))"),
    rule="cmp_int")

# ---------------------------------------------------------------------------------------------
# Conversions
_op("bitcast", 0x09, operands=("source",), pure=True, fmt=F_CAST, rule="bitcast")
_op("exti", 0x25, operands=("from",), attrs=(SIGNEDNESS(),), results=("to",), pure=True,
    fmt=(f"$from custom<Signedness>($signedness) attr-dict `:` {T}(type($from)) `->` "
         f"{T}(type($to))"), rule="exti")
_op("trunci", 0x6B, operands=("from",), attrs=(OVERFLOW(),), results=("to",), pure=True,
    fmt=(f"$from (`overflow` `` $overflow^)? attr-dict `:` {T}(type($from)) `->` "
         f"{T}(type($to))"), rule="trunci")
_op("ftof", 0x2A, operands=("from",), attrs=(ROUNDING(default="nearest_even"),), results=("to",),
    pure=True,
    fmt=(f"$from custom<IEEERoundingMode>($rounding_mode) attr-dict `:` {T}(type($from)) `->` "
         f"{T}(type($to))"), rule="ftof")
_op("ftoi", 0x2B, operands=("from",),
    attrs=(SIGNEDNESS(), ROUNDING(), _unit("saturating", V13_4)), results=("to",), pure=True,
    fmt=(f"$from custom<Signedness>($signedness) custom<IntegerRoundingMode>($rounding_mode) "
         f"(`saturating` $saturating^)? attr-dict `:` {T}(type($from)) `->` {T}(type($to))"),
    rule="ftoi")
_op("itof", 0x3B, operands=("from",), attrs=(SIGNEDNESS(), ROUNDING()), results=("to",), pure=True,
    fmt=(f"$from custom<Signedness>($signedness) custom<IEEERoundingMode>($rounding_mode) attr-dict "
         f"`:` {T}(type($from)) `->` {T}(type($to))"), rule="itof")
_op("int_to_ptr", 0x33, operands=("source",), pure=True, fmt=F_CAST, rule="int_to_ptr")
_op("ptr_to_int", 0x56, operands=("source",), pure=True, fmt=F_CAST, rule="ptr_to_int")
_op("ptr_to_ptr", 0x57, operands=("source",), pure=True, fmt=F_CAST, rule="ptr_to_ptr")

# ---------------------------------------------------------------------------------------------
# Tile construction and shape manipulation
_op("constant", 0x10, attrs=(AttrDef("value", "dense"),), pure=True,
    fmt="custom<DenseTypedElementsAttr>($value, type($result)) attr-dict", rule="constant")
_op("iota", 0x3A, pure=True, fmt=f"attr-dict `:` {T}(type($result))", rule="iota")
_op("broadcast", 0x0B, operands=("source",), pure=True, fmt=F_CAST, rule="broadcast")
_op("reshape", 0x5B, operands=("source",), pure=True, fmt=F_CAST, rule="reshape")
_op("permute", 0x53, operands=("source",), attrs=(AttrDef("permutation", "i32_array"),), pure=True,
    fmt=f"$source $permutation attr-dict `:` {T}(type($source)) `->` {T}(type($result))",
    rule="permute")
_op("cat", 0x0C, operands=("lhs", "rhs"), attrs=(AttrDef("dim", "int"),), pure=True,
    fmt=(f"$lhs `,` $rhs `dim` `=` $dim attr-dict `:` {T}(type($lhs)) `,` {T}(type($rhs)) `->` "
         f"{T}(type($result))"), rule="cat")
_op("extract", 0x26, operands=("source", _var("indices")), pure=True,
    fmt=f"$source `[` $indices `]` attr-dict `:` {T}(type($source)) `->` {T}(type($result))",
    rule="extract")
_op("select", 0x5F, operands=("cond", "val_if_true", "val_if_false"), pure=True,
    fmt=(f"$cond `,` $val_if_true `,` $val_if_false attr-dict `:` {T}(type($cond)) `,` "
         f"{T}(type($result))"), rule="select")
_op("offset", 0x51, operands=("ptr", "offset"), pure=True,
    fmt=(f"$ptr `,` $offset attr-dict `:` {T}(type($ptr)) `,` {T}(type($offset)) `->` "
         f"{T}(type($result))"), rule="offset")
_op("assume", 0x06, operands=("value",), attrs=(AttrDef("predicate", "predicate"),),
    fmt=f"custom<AssumePredicate>($predicate) `,` $value attr-dict `:` {T}(type($value))",
    rule="assume")

# ---------------------------------------------------------------------------------------------
# Matrix multiply, reductions, scans
_op("mmaf", 0x49, operands=("lhs", "rhs", "acc"), attrs=(_unit("fast_acc", V13_3),), pure=True,
    fmt=(f"$lhs `,` $rhs `,` $acc (`fast_acc` $fast_acc^)? attr-dict `:` {T}(type($lhs)) `,` "
         f"{T}(type($rhs)) `,` {T}(type($acc))"), rule="mmaf")
_op("mmaf_scaled", 0x72, since=V13_3, operands=("lhs", "rhs", "acc", "lhs_scale", "rhs_scale"),
    pure=True,
    fmt=(f"$lhs `,` $rhs `,` $acc `,` $lhs_scale `,` $rhs_scale attr-dict `:` {T}(type($lhs)) "
         f"`,` {T}(type($rhs)) `,` {T}(type($acc)) `,` {T}(type($lhs_scale)) `,` "
         f"{T}(type($rhs_scale))"), rule="mmaf_scaled")
_op("mmai", 0x4A, operands=("lhs", "rhs", "acc"),
    attrs=(SIGNEDNESS("signedness_lhs"), SIGNEDNESS("signedness_rhs")), pure=True,
    fmt=(f"$lhs `,` $rhs `,` $acc custom<Signedness>($signedness_lhs) "
         f"custom<Signedness>($signedness_rhs) attr-dict `:` {T}(type($lhs)) `,` {T}(type($rhs)) "
         f"`,` {T}(type($acc))"), rule="mmai")
_op("reduce", 0x58, operands=(_var("operands"),),
    attrs=(AttrDef("dim", "int"), AttrDef("identities", "array")),
    results=(ResultDef("results", variadic=True),), num_regions=1,
    fmt=(f"$operands attr-dict ` ` `dim` `` `=` `` $dim `identities` `` `=` `` $identities `:` "
         f"{T}(type($operands)) `->` {T}(type($results)) custom<ArgumentRegion>($body)"),
    rule="reduce")
_op("scan", 0x5E, operands=(_var("operands"),),
    attrs=(AttrDef("dim", "int"), AttrDef("reverse", "bool"), AttrDef("identities", "array")),
    results=(ResultDef("results", variadic=True),), num_regions=1,
    fmt=(f"$operands attr-dict ` ` `dim` `` `=` `` $dim `reverse` `` `=` `` $reverse "
         f"`identities` `` `=` `` $identities `:` {T}(type($operands)) `->` {T}(type($results)) "
         f"custom<ArgumentRegion>($body)"), rule="scan")

# ---------------------------------------------------------------------------------------------
# Grid queries
_op("get_tile_block_id", 0x30, results=("blockId_x", "blockId_y", "blockId_z"), pure=True,
    fmt=f"attr-dict `:` {T}(type($blockId_x))", rule="grid_query")
_op("get_num_tile_blocks", 0x2E, results=("gridSize_x", "gridSize_y", "gridSize_z"), pure=True,
    fmt=f"attr-dict `:` {T}(type($gridSize_x))", rule="grid_query")

# ---------------------------------------------------------------------------------------------
# Views and memory
_op("make_tensor_view", 0x43, operands=("base", _var("dynamicShape"), _var("dynamicStrides")),
    attr_sized=True, pure=True, rule="make_tensor_view")
_op("make_partition_view", 0x42, operands=("tensor_view",), pure=True, rule="make_partition_view")
_op("get_tensor_shape", 0x2F, operands=("src",), results=(ResultDef("result", variadic=True),),
    pure=True, rule="get_shape")
_op("get_index_space_shape", 0x2D, operands=("src",), results=(ResultDef("result", variadic=True),),
    pure=True, rule="get_shape")
_MEM_ORDER = _enum("memory_ordering_semantics", "MemoryOrderingSemantics")
_MEM_SCOPE_OPT = _enum("memory_scope", "MemoryScope", optional=True)
_HINTS_OPT = AttrDef("optimization_hints", "hints", optional=True)
# 13.4: per-index promise that the access is in bounds (lets tileiras drop masking)
_INBOUNDS = AttrDef("inbounds", "bool_array", since=V13_4,
                    default=lambda op: (False,) * len(op.group("index")))
_op("load_view_tko", 0x3E, operands=("view", _var("index"), _opt("token")),
    attrs=(_MEM_ORDER, _MEM_SCOPE_OPT, _HINTS_OPT, _INBOUNDS), results=("tile", "result_token"),
    attr_sized=True, rule="load_view")
_op("store_view_tko", 0x66, operands=("tile", "view", _var("index"), _opt("token")),
    attrs=(_MEM_ORDER, _MEM_SCOPE_OPT, _HINTS_OPT, _INBOUNDS), results=("result_token",), attr_sized=True,
    rule="store_view")
_op("load_ptr_tko", 0x3D, operands=("source", _opt("mask"), _opt("paddingValue"), _opt("token")),
    attrs=(_MEM_ORDER, _MEM_SCOPE_OPT, _HINTS_OPT), results=("result", "result_token"),
    attr_sized=True,
    fmt=(f"$memory_ordering_semantics ($memory_scope^)? $source (`,` $mask^)? "
         f"(`,` $paddingValue^)? (`token` `` `=` `` $token^)? "
         f"(`optimization_hints` `=` $optimization_hints^)? attr-dict `:` {T}(type($source)) "
         f"(`,` {T}(type($mask))^)? (`,` {T}(type($paddingValue))^)? `->` {T}(type($result)) "
         f"`,` {T}(type($result_token))"), rule="load_ptr")
_op("store_ptr_tko", 0x65, operands=("destination", "value", _opt("mask"), _opt("token")),
    attrs=(_MEM_ORDER, _MEM_SCOPE_OPT, _HINTS_OPT), results=("result_token",), attr_sized=True,
    fmt=(f"$memory_ordering_semantics ($memory_scope^)? $destination `,` $value (`,` $mask^)? "
         f"(`token` `` `=` `` $token^)? (`optimization_hints` `=` $optimization_hints^)? attr-dict "
         f"`:` {T}(type($destination)) `,` {T}(type($value)) (`,` {T}(type($mask))^)? `->` "
         f"{T}(type($result_token))"), rule="store_ptr")
_op("atomic_rmw_tko", 0x08, operands=("pointers", "arg", _opt("mask"), _opt("token")),
    attrs=(_MEM_ORDER, _enum("memory_scope", "MemoryScope"), _enum("mode", "AtomicRMWMode")),
    results=("result", "result_token"), attr_sized=True,
    fmt=(f"$memory_ordering_semantics $memory_scope $pointers `,` $mode `,` $arg (`,` $mask^)? "
         f"(`token` `` `=` `` $token^)? attr-dict `:` {T}(type($pointers)) `,` {T}(type($arg)) "
         f"(`,` {T}(type($mask))^)? `->` {T}(type($result)) `,` {T}(type($result_token))"),
    rule="atomic_rmw")
_op("atomic_cas_tko", 0x07, operands=("pointers", "cmp", "val", _opt("mask"), _opt("token")),
    attrs=(_MEM_ORDER, _enum("memory_scope", "MemoryScope")),
    results=("result", "result_token"), attr_sized=True,
    fmt=(f"$memory_ordering_semantics $memory_scope $pointers `,` $cmp `,` $val (`,` $mask^)? "
         f"(`token` `` `=` `` $token^)? attr-dict `:` {T}(type($pointers)) `,` {T}(type($val)) "
         f"(`,` {T}(type($mask))^)? `->` {T}(type($result)) `,` {T}(type($result_token))"),
    rule="atomic_cas")
_op("make_token", 0x44, pure=True, fmt=f"attr-dict `:` {T}(type($result))", rule="make_token")
_op("join_tokens", 0x3C, operands=(_var("tokens"),), pure=True,
    fmt=f"$tokens attr-dict `:` {T}(type($result))", rule="join_tokens")

# ---------------------------------------------------------------------------------------------
# Control flow
_op("if", 0x32, operands=("condition",), results=(ResultDef("results", variadic=True),),
    num_regions=2, rule="if")
_op("for", 0x29, operands=("lowerBound", "upperBound", "step", _var("initValues")),
    attrs=(_unit("unsignedCmp", V13_2),), results=(ResultDef("resultValues", variadic=True),),
    num_regions=1, rule="for")
_op("loop", 0x41, operands=(_var("initValues"),),
    results=(ResultDef("resultValues", variadic=True),), num_regions=1, rule="loop")
for _name, _code in (("yield", 0x6D), ("continue", 0x11), ("break", 0x0A), ("return", 0x5C)):
    _op(_name, _code, operands=(_var("operands"),), results=(), terminator=True, fmt=F_TERM,
        rule="terminator")

# ---------------------------------------------------------------------------------------------
# Debugging
_op("print_tko", 0x55, operands=(_var("args"), _opt("token", V13_2)),
    attrs=(AttrDef("str", "string"),), results=(ResultDef("result_token", since=V13_2),),
    attr_sized=True,
    fmt=(f"$str (`,` $args^)? (`token` `` `=` `` $token^)? attr-dict "
         f"(`:` {T}(type($args))^)? `->` {T}(type($result_token))"), rule="print")
_op("assert", 0x05, operands=("condition",), attrs=(AttrDef("message", "string"),), results=(),
    fmt=f"$condition `,` $message attr-dict `:` {T}(type($condition))", rule="assert")


def opdef(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown Tile IR op {name!r}") from None
