"""Tile IR verifier: types, SSA dominance, single-block regions with the right terminators.

It runs before a module is written, so that a lowering bug is reported by tilejit with the op's
name (and the Python source line when the op has one), not by tileiras. ``RULES`` maps the op
table's ``rule`` names to type checks.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set

from ..errors import InternalError
from .ir import Block, Function, Module, Operation, Value
from .types import PartitionViewType, TensorViewType, TileType, TokenType


class VerifyError(InternalError):
    """The Tile IR module is malformed (a bug in tilejit's lowering, or a hand-built module)."""

    def __init__(self, message: str, op: Optional[Operation] = None):
        if op is not None and op.loc is not None:
            message += f"\n  (from {op.loc})"
        super().__init__(message)
        self.op = op


class _Fail(Exception):
    pass


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise _Fail(msg)


def _tile(v: Value, what: str) -> TileType:
    _need(isinstance(v.type, TileType), f"{what} must be a tile, got {v.type}")
    return v.type


def _float(v: Value, what: str) -> TileType:
    t = _tile(v, what)
    _need(t.is_float, f"{what} must be a float tile, got {t}")
    return t


def _int(v: Value, what: str) -> TileType:
    t = _tile(v, what)
    _need(t.is_int, f"{what} must be an integer tile, got {t}")
    return t


def _same(a: Value, b, what_a: str, what_b: str) -> None:
    tb = b.type if isinstance(b, Value) else b
    _need(a.type == tb, f"{what_b} has type {tb}, expected {a.type} (the type of {what_a})")


def _scalar_int(v: Value, what: str) -> TileType:
    t = _int(v, what)
    _need(t.rank == 0, f"{what} must be a scalar (0-d) integer tile, got {t}")
    return t


def _result_is(op: Operation, t) -> None:
    _need(op.results[0].type == t, f"result has type {op.results[0].type}, expected {t}")


# ------------------------------------------------------------------------------------------------
def _unary(kind):
    def rule(op):
        src = op.operands[0]
        (_float if kind == "f" else _int)(src, "source")
        _result_is(op, src.type)
    return rule


def _binary(kind, n=2):
    def rule(op):
        vals = op.operands
        (_float if kind == "f" else _int)(vals[0], op.opdef.operands[0].name)
        for od, v in zip(op.opdef.operands[1:n], vals[1:n]):
            _same(vals[0], v, op.opdef.operands[0].name, od.name)
        _result_is(op, vals[0].type)
    return rule


def _cmp(kind):
    def rule(op):
        lhs, rhs = op.operands
        (_float if kind == "f" else _int)(lhs, "lhs")
        _same(lhs, rhs, "lhs", "rhs")
        _result_is(op, lhs.type.with_element("i1"))
    return rule


def _cast(src_kind, dst_kind, width=None):
    def rule(op):
        src = _tile(op.operands[0], "source")
        dst = _tile(op.results[0], "result")
        _need(src.shape == dst.shape, f"source shape {src.shape} and result shape {dst.shape} differ")
        for t, k, w in ((src, src_kind, "source"), (dst, dst_kind, "result")):
            _need((t.is_float if k == "f" else t.is_int), f"{w} {t} must be "
                  f"{'a float' if k == 'f' else 'an integer'} tile")
        if width == "wider":
            _need(dst.bits > src.bits, f"exti must widen: {src} -> {dst}")
        elif width == "narrower":
            _need(dst.bits < src.bits, f"trunci must narrow: {src} -> {dst}")
    return rule


def _bitcast(op):
    src = _tile(op.operands[0], "source")
    dst = _tile(op.results[0], "result")
    _need(src.shape == dst.shape and src.bits == dst.bits,
          f"bitcast needs the same shape and element width: {src} -> {dst}")


def _int_to_ptr(op):
    src = _int(op.operands[0], "source")
    dst = _tile(op.results[0], "result")
    _need(src.element == "i64" and dst.is_ptr and src.shape == dst.shape,
          f"int_to_ptr converts i64 tiles to pointer tiles of the same shape: {src} -> {dst}")


def _ptr_to_int(op):
    src = _ptr_tile(op.operands[0], "source")
    _result_is(op, src.with_element("i64"))


def _ptr_to_ptr(op):
    src = _tile(op.operands[0], "source")
    dst = _tile(op.results[0], "result")
    _need(src.is_ptr and dst.is_ptr and src.shape == dst.shape, f"bad ptr_to_ptr {src} -> {dst}")


def _constant(op):
    c = op.attrs.get("value")
    _need(c is not None, "missing value")
    _result_is(op, c.type)


def _iota(op):
    t = _tile(op.results[0], "result")
    _need(t.is_int and t.rank == 1, f"iota produces a 1-D integer tile, got {t}")


def _broadcast(op):
    src = _tile(op.operands[0], "source")
    dst = _tile(op.results[0], "result")
    _need(src.element == dst.element and src.rank == dst.rank and
          all(a in (1, b) for a, b in zip(src.shape, dst.shape)),
          f"cannot broadcast {src} to {dst} (ranks must match; dims must be 1 or equal)")


def _reshape(op):
    src = _tile(op.operands[0], "source")
    dst = _tile(op.results[0], "result")
    _need(src.element == dst.element and src.numel == dst.numel, f"cannot reshape {src} to {dst}")


def _permute(op):
    src = _tile(op.operands[0], "source")
    perm = tuple(op.attrs.get("permutation", ()))
    _need(sorted(perm) == list(range(src.rank)), f"bad permutation {list(perm)} for rank {src.rank}")
    _result_is(op, src.with_shape([src.shape[p] for p in perm]))


def _cat(op):
    a, b = (_tile(v, n) for v, n in zip(op.operands, ("lhs", "rhs")))
    d = op.attrs.get("dim")
    _need(a.element == b.element and a.rank == b.rank and 0 <= d < a.rank, f"cannot cat {a} and {b}")
    shape = list(a.shape)
    shape[d] += b.shape[d]
    _need(all(x == y for i, (x, y) in enumerate(zip(a.shape, b.shape)) if i != d),
          f"cat dims other than {d} must match: {a} vs {b}")
    _result_is(op, a.with_shape(shape))


def _extract(op):
    src = _tile(op.operands[0], "source")
    idx = op.group("indices")
    _need(len(idx) == src.rank, f"extract needs {src.rank} indices, got {len(idx)}")
    for v in idx:
        _need(v.type == TileType("i32"), f"extract indices must be tile<i32>, got {v.type}")
    dst = _tile(op.results[0], "result")
    _need(dst.element == src.element and dst.rank == src.rank and
          all(s % d == 0 for s, d in zip(src.shape, dst.shape)), f"cannot extract {dst} from {src}")


def _select(op):
    c, a, b = op.operands
    _tile(c, "cond")
    _need(c.type.element == "i1" and c.type.shape == _tile(a, "val_if_true").shape,
          f"cond must be an i1 tile of the values' shape, got {c.type} for {a.type}")
    _same(a, b, "val_if_true", "val_if_false")
    _result_is(op, a.type)


def _offset(op):
    p, o = op.operands
    pt = _ptr_tile(p, "ptr")
    ot = _int(o, "offset")
    _need(pt.shape == ot.shape, f"ptr {pt} and offset {ot} must have the same shape")
    _result_is(op, pt)


def _assume(op):
    _result_is(op, op.operands[0].type)


def _mma_dims(a, b, acc):
    _need(a.rank == b.rank == acc.rank and a.rank in (2, 3),
          f"mma operands must all be 2-D (or 3-D batched): {a}, {b}, {acc}")
    if a.rank == 3:
        _need(a.shape[0] == b.shape[0] == acc.shape[0], f"mma batch sizes differ: {a}, {b}, {acc}")
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    _need(k == k2 and acc.shape[-2:] == (m, n),
          f"mma shape mismatch: lhs {a.shape}, rhs {b.shape}, acc {acc.shape} (need (M,K), (K,N), (M,N))")


def _mmaf(op):
    a, b, acc = (_float(v, n) for v, n in zip(op.operands, ("lhs", "rhs", "acc")))
    _need(a.element == b.element or (a.is_float and {a.element, b.element} <= {"f8E4M3FN", "f8E5M2"}),
          f"mmaf operand element types differ: {a.element} vs {b.element}")
    _mma_dims(a, b, acc)
    _result_is(op, acc)


#: (operand element, scale element) -> the scale block sizes along K the op supports
MMAF_SCALED = {("f8E4M3FN", "f8E8M0FNU"): (32,), ("f8E5M2", "f8E8M0FNU"): (32,),
               ("f4E2M1FN", "f8E8M0FNU"): (16, 32), ("f4E2M1FN", "f8E4M3FN"): (16,)}


def _mmaf_scaled(op):
    a, b, acc, sa, sb = (_float(v, n) for v, n in zip(op.operands, ("lhs", "rhs", "acc",
                                                                      "lhs_scale", "rhs_scale")))
    _need(a.element == b.element and sa.element == sb.element,
          f"mmaf_scaled: lhs/rhs and the two scales must share element types: {a.element}, "
          f"{b.element}, {sa.element}, {sb.element}")
    blocks = MMAF_SCALED.get((a.element, sa.element))
    _need(blocks is not None and acc.element == "f32",
          f"mmaf_scaled does not take {a.element} operands with {sa.element} scales into "
          f"{acc.element}")
    _mma_dims(a, b, acc)
    k = a.shape[-1]
    _need(sa.shape[:-1] == a.shape[:-1] and sb.shape[:-2] + sb.shape[-1:] ==
          b.shape[:-2] + b.shape[-1:] and sa.shape[-1] == sb.shape[-2] and sa.shape[-1] > 0 and
          k % sa.shape[-1] == 0 and k // sa.shape[-1] in blocks,
          f"mmaf_scaled scale shapes {sa.shape}, {sb.shape} do not fit lhs {a.shape} and rhs "
          f"{b.shape} with a block of {blocks} along K")
    _result_is(op, acc)


def _mmai(op):
    a, b, acc = (_int(v, n) for v, n in zip(op.operands, ("lhs", "rhs", "acc")))
    _need(a.element == b.element == "i8" and acc.element == "i32",
          f"mmai takes i8 x i8 -> i32, got {a.element} x {b.element} -> {acc.element}")
    _mma_dims(a, b, acc)
    _result_is(op, acc)


def _reduce_like(op, is_scan):
    ops_ = op.group("operands")
    d = op.attrs.get("dim")
    ids = op.attrs.get("identities", [])
    _need(len(ids) == len(ops_), f"{len(ops_)} operands need {len(ops_)} identities, got {len(ids)}")
    _need(len(op.results) == len(ops_), "one result per operand")
    blk = op.regions[0]
    _need(len(blk.args) == 2 * len(ops_), f"region needs {2 * len(ops_)} arguments, has {len(blk.args)}")
    for i, v in enumerate(ops_):
        t = _tile(v, f"operand #{i}")
        _need(d is not None and 0 <= d < t.rank, f"dim {d} out of range for {t}")
        shape = list(t.shape)
        if not is_scan:
            del shape[d]
        _need(op.results[i].type == t.with_shape(shape), f"result #{i} has type "
              f"{op.results[i].type}, expected {t.with_shape(shape)}")
        for a in blk.args[2 * i:2 * i + 2]:
            _need(a.type == TileType(t.element), f"region arguments must be tile<{t.element}>")


def _grid_query(op):
    for r in op.results:
        _need(r.type == TileType("i32"), f"results must be tile<i32>, got {r.type}")


def _make_tensor_view(op):
    base = _tile(op.operand("base"), "base")
    _need(base.is_ptr and base.rank == 0, f"base must be a scalar pointer tile, got {base}")
    tv = op.results[0].type
    _need(isinstance(tv, TensorViewType), f"result must be a tensor_view, got {tv}")
    _need(tv.element == base.element.pointee,
          f"pointer to {base.element.pointee} cannot build a tensor_view of {tv.element}")
    nd = sum(d is None for d in tv.shape)
    ns = sum(d is None for d in tv.strides)
    _need(len(op.group("dynamicShape")) == nd and len(op.group("dynamicStrides")) == ns,
          f"{tv} needs {nd} dynamic shape and {ns} dynamic stride operands")
    dyn = op.group("dynamicShape") + op.group("dynamicStrides")
    for v in dyn:
        _scalar_int(v, "dynamic extent")
        _need(v.type == dyn[0].type, "dynamic extents must all have one integer type")


def _make_partition_view(op):
    pv = op.results[0].type
    _need(isinstance(pv, PartitionViewType), f"result must be a partition_view, got {pv}")
    _need(pv.tensor_view == op.operands[0].type, f"tensor_view operand type {op.operands[0].type} "
          f"differs from the partition's {pv.tensor_view}")
    for d in pv.tile_shape:
        _need(d > 0 and d & (d - 1) == 0, f"partition tile dimensions must be powers of two, got {pv.tile_shape}")


def _get_shape(op):
    src = op.operands[0].type
    _need(len(op.results) == src.rank, f"expected {src.rank} results, got {len(op.results)}")


def _indices(op, view_t):
    idx = op.group("index")
    _need(len(idx) == view_t.rank, f"view of rank {view_t.rank} needs {view_t.rank} indices, got {len(idx)}")
    for v in idx:
        _scalar_int(v, "index")


def _token_operand(op):
    tok = op.operand("token")
    if tok is not None:
        _need(isinstance(tok.type, TokenType), f"token operand has type {tok.type}")


def _load_view(op):
    view = op.operand("view").type
    _need(isinstance(view, PartitionViewType), f"view must be a partition_view, got {view}")
    _indices(op, view)
    _token_operand(op)
    _need(op.results[0].type == view.tile_type, f"loaded tile type {op.results[0].type} does not "
          f"match the view's tile {view.tile_type}")


def _store_view(op):
    view = op.operand("view").type
    _need(isinstance(view, PartitionViewType), f"view must be a partition_view, got {view}")
    _indices(op, view)
    _token_operand(op)
    tile = _tile(op.operand("tile"), "tile")
    _need(tile == view.tile_type, f"stored tile {tile} does not match the view's tile {view.tile_type}")


def _ptr_tile(v, what) -> TileType:
    t = _tile(v, what)
    _need(t.is_ptr, f"{what} must be a pointer tile, got {t}")
    return t


def _mask(op, shape):
    m = op.operand("mask")
    if m is not None:
        want = TileType("i1", shape)
        _need(m.type == want, f"mask must be {want}, got {m.type}")


def _load_ptr(op):
    p = _ptr_tile(op.operand("source"), "source")
    _mask(op, p.shape)
    _token_operand(op)
    _need(op.results[0].type == TileType(p.element.pointee, p.shape),
          f"loads of {p} produce tile of {p.element.pointee}, got {op.results[0].type}")


def _store_ptr(op):
    p = _ptr_tile(op.operand("destination"), "destination")
    v = _tile(op.operand("value"), "value")
    _need(v == TileType(p.element.pointee, p.shape), f"value {v} does not match destination {p}")
    _mask(op, p.shape)
    _token_operand(op)


def _atomic(op):
    p = _ptr_tile(op.operand("pointers"), "pointers")
    for name in ("arg", "cmp", "val"):
        if op.opdef.has_operand(name):
            v = _tile(op.operand(name), name)
            _need(v == TileType(p.element.pointee, p.shape), f"{name} {v} does not match pointers {p}")
    _mask(op, p.shape)
    _token_operand(op)


def _tokens(op):
    for v in op.operands:
        _need(isinstance(v.type, TokenType), f"operand has type {v.type}, expected token")
    _need(isinstance(op.results[0].type, TokenType), "result must be a token")


def _if(op):
    c = op.operand("condition")
    _need(c.type == TileType("i1"), f"condition must be tile<i1>, got {c.type}")


def _for(op):
    lb, ub, step = (op.operand(n) for n in ("lowerBound", "upperBound", "step"))
    t = _scalar_int(lb, "lower bound")
    _need(ub.type == t and step.type == t, f"bounds and step must share one type: {lb.type}, "
          f"{ub.type}, {step.type}")
    inits = op.group("initValues")
    _need([r.type for r in op.results] == [v.type for v in inits], "results must match iter_values")
    args = op.regions[0].args
    _need([a.type for a in args] == [t] + [v.type for v in inits],
          "region arguments must be (induction variable, iter_values...)")


def _loop(op):
    inits = op.group("initValues")
    _need([a.type for a in op.regions[0].args] == [v.type for v in inits],
          "region arguments must match iter_values")


def _print(op):
    for v in op.group("args"):
        _tile(v, "print argument")


def _assert(op):
    c = _tile(op.operands[0], "condition")
    _need(c.element == "i1", f"condition must be an i1 tile, got {c}")


def _nothing(op):
    pass


RULES: Dict[str, Callable[[Operation], None]] = {
    "unary_float": _unary("f"), "unary_int": _unary("i"),
    "binary_float": _binary("f"), "ternary_float": _binary("f", 3), "binary_int": _binary("i"),
    "cmp_float": _cmp("f"), "cmp_int": _cmp("i"),
    "bitcast": _bitcast, "exti": _cast("i", "i", "wider"), "trunci": _cast("i", "i", "narrower"),
    "ftof": _cast("f", "f"), "ftoi": _cast("f", "i"), "itof": _cast("i", "f"),
    "int_to_ptr": _int_to_ptr, "ptr_to_int": _ptr_to_int, "ptr_to_ptr": _ptr_to_ptr,
    "constant": _constant, "iota": _iota, "broadcast": _broadcast, "reshape": _reshape,
    "permute": _permute, "cat": _cat, "extract": _extract, "select": _select, "offset": _offset,
    "assume": _assume, "mmaf": _mmaf, "mmaf_scaled": _mmaf_scaled, "mmai": _mmai,
    "reduce": lambda op: _reduce_like(op, False), "scan": lambda op: _reduce_like(op, True),
    "grid_query": _grid_query, "make_tensor_view": _make_tensor_view,
    "make_partition_view": _make_partition_view, "get_shape": _get_shape,
    "load_view": _load_view, "store_view": _store_view, "load_ptr": _load_ptr,
    "store_ptr": _store_ptr, "atomic_rmw": _atomic, "atomic_cas": _atomic,
    "make_token": _tokens, "join_tokens": _tokens, "if": _if, "for": _for, "loop": _loop,
    "terminator": _nothing, "print": _print, "assert": _assert,
}

# region owner -> allowed terminators of its block(s)
_TERMINATORS = {"if": ("yield", "break", "continue"), "for": ("continue",),
                "loop": ("continue", "break"), "reduce": ("yield",), "scan": ("yield",)}


class _Verifier:
    def __init__(self, fn: Function):
        self.fn = fn

    def fail(self, op: Operation, msg: str):
        raise VerifyError(f"invalid Tile IR in function '{self.fn.name}': op '{op.name}': {msg}", op)

    def run(self) -> None:
        body = self.fn.body
        if not body.ops or body.ops[-1].name != "return":
            raise VerifyError(f"invalid Tile IR in function '{self.fn.name}': the body must end "
                              f"with 'return' (missing terminator)")
        self.block(body, set(body.args), loops=[], owner=None)

    def block(self, blk: Block, visible: Set[Value], loops: List[Operation],
              owner: Optional[Operation]) -> None:
        visible = set(visible) | set(blk.args)
        for i, op in enumerate(blk.ops):
            last = i == len(blk.ops) - 1
            if op.opdef.terminator and not last:
                self.fail(op, "a terminator must be the last op of its block")
            for gi, g in enumerate(op.operand_groups):
                for v in g:
                    if v not in visible:
                        od = op.opdef.operands[gi]
                        self.fail(op, f"operand '{od.name}' uses a value that is not defined before "
                                      f"it in an enclosing block (use before def / out of scope)")
            rule = RULES.get(op.opdef.rule or "", _nothing)
            try:
                rule(op)
            except _Fail as e:
                self.fail(op, str(e))
            except (IndexError, KeyError, AttributeError, TypeError) as e:
                self.fail(op, f"malformed op ({type(e).__name__}: {e})")
            if op.opdef.terminator:
                self.terminator(op, owner, loops)
            for r in op.regions:
                inner_loops = loops + [op] if op.name in ("for", "loop") else loops
                if op.name in ("reduce", "scan"):
                    inner_loops = []
                self.region_end(op, r)
                self.block(r, visible, inner_loops, op)
            visible.update(op.results)

    def region_end(self, op: Operation, r: Block) -> None:
        allowed = _TERMINATORS.get(op.name)
        if allowed is None:
            self.fail(op, "op has regions but no terminator rule")
        if not r.ops or not r.ops[-1].opdef.terminator:
            self.fail(op, f"region must end with a terminator ({' or '.join(allowed)}); "
                          f"missing terminator")
        term = r.ops[-1]
        if term.name not in allowed:
            self.fail(term, f"'{term.name}' cannot end a region of '{op.name}' "
                            f"(expected {' or '.join(allowed)})")

    def terminator(self, op: Operation, owner: Optional[Operation], loops: List[Operation]) -> None:
        vals = [v.type for v in op.operands]
        if op.name == "return":
            if owner is not None:
                self.fail(op, "'return' is only allowed at the top level of a function "
                              "(tileiras rejects it inside regions)")
            if vals:
                self.fail(op, "entry functions return no values")
            return
        if op.name == "yield":
            if owner is None:
                self.fail(op, "'yield' outside of a region")
            expected = ([r.type for r in owner.results] if owner.name == "if" else
                        [a.type for a in owner.regions[0].args[0::2]])
            if vals != expected:
                self.fail(op, f"yields ({', '.join(map(str, vals))}) but '{owner.name}' expects "
                              f"({', '.join(map(str, expected))})")
            return
        if not loops:
            self.fail(op, f"'{op.name}' must be inside a 'for' or 'loop'")
        loop = loops[-1]
        if op.name == "continue":
            expected = [a.type for a in loop.regions[0].args[(1 if loop.name == "for" else 0):]]
        else:
            if loop.name == "for":
                self.fail(op, "'break' is not allowed in 'for' (it cannot exit early); use 'loop'")
            expected = [r.type for r in loop.results]
        if vals != expected:
            self.fail(op, f"passes ({', '.join(map(str, vals))}) but the enclosing '{loop.name}' "
                          f"expects ({', '.join(map(str, expected))})")


def verify_function(fn: Function) -> None:
    _Verifier(fn).run()


def verify_module(module: Module) -> None:
    """Raise VerifyError (naming the function and op) if ``module`` is malformed."""
    names = set()
    for fn in module.functions:
        if fn.name in names:
            raise VerifyError(f"duplicate function name '{fn.name}'")
        names.add(fn.name)
        for a in fn.args:
            if isinstance(a.type, TileType) and a.type.rank != 0:
                raise VerifyError(f"entry '{fn.name}': parameters must be scalar (0-d) tiles, "
                                  f"got {a.type}")
        verify_function(fn)
