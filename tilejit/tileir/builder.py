"""A builder for Tile IR: creates ops at an insertion point and infers their result types.

    fn = Function("add", [ptr("f32"), I32])
    b = Builder(fn.body)
    bx, _, _ = b.get_tile_block_id()
    ...
    b.return_()

Region-carrying ops (``if_``, ``for_``, ``loop``, ``reduce``, ``scan``) return the op; fill their
blocks with ``with b.at(op.regions[i]): ...``. ``b.loc`` is attached to every op created (the
lowering sets it to the Python source location of the statement being lowered).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from . import attrs as A
from .ir import Block, Operation, Value
from .op_table import OPS
from .types import TOKEN, PartitionViewType, PointerType, TensorViewType, TileType, Type, scalar

Operand = Union[Value, None, Sequence[Value]]


class Builder:
    def __init__(self, block: Block, loc=None):
        self.block = block
        self.loc = loc

    @contextmanager
    def at(self, block: Block):
        saved = self.block
        self.block = block
        try:
            yield self
        finally:
            self.block = saved

    # --- generic -------------------------------------------------------------------------------
    def create(self, name: str, groups: Sequence[Operand] = (), result_types: Sequence[Type] = (),
               attrs: Optional[dict] = None) -> Operation:
        """Create op ``name``. ``groups`` follow the op table's operand list: a Value, None for an
        absent optional operand, or a list for a variadic group."""
        d = OPS[name]
        if len(groups) != len(d.operands):
            raise ValueError(f"{name}: expected {len(d.operands)} operand groups "
                             f"({', '.join(o.name for o in d.operands)}), got {len(groups)}")
        norm: List[List[Value]] = []
        for od, g in zip(d.operands, groups):
            if g is None:
                if od.kind == "one":
                    raise ValueError(f"{name}: operand '{od.name}' is required")
                norm.append([])
            elif isinstance(g, Value):
                norm.append([g])
            else:
                if od.kind != "variadic":
                    raise ValueError(f"{name}: operand '{od.name}' takes one value")
                norm.append(list(g))
            for v in norm[-1]:
                if not isinstance(v, Value):
                    raise TypeError(f"{name}: operand '{od.name}' must be a Value, got {v!r}")
        clean = {}
        for k, v in (attrs or {}).items():
            if v is None or (v is False and d.attr(k).kind == "unit"):
                continue
            clean[k] = v
        op = Operation(d, norm, result_types, clean, d.num_regions, self.loc)
        self.block.append(op)
        return op

    def _one(self, name, groups, rtype, **attrs) -> Value:
        return self.create(name, groups, [rtype], attrs).results[0]

    # --- constants -----------------------------------------------------------------------------
    def constant(self, value, type: TileType) -> Value:
        """A splat (Python scalar) or dense (array of ``type.shape``) constant."""
        elem = type.element
        if isinstance(elem, PointerType):
            raise ValueError("pointer constants are not supported")
        arr = np.asarray(value)
        if arr.ndim and arr.shape != type.shape:
            raise ValueError(f"constant of shape {arr.shape} for {type}")
        c = A.DenseConst(type, arr, key=repr((str(type), arr.tolist())).encode())
        return self._one("constant", [], type, value=c)

    def iota(self, type: TileType) -> Value:
        return self._one("iota", [], type)

    # --- elementwise ---------------------------------------------------------------------------
    def unary(self, name: str, x: Value, **attrs) -> Value:
        return self._one(name, [x], x.type, **attrs)

    def binary(self, name: str, x: Value, y: Value, **attrs) -> Value:
        return self._one(name, [x, y], x.type, **attrs)

    def fma(self, a: Value, b: Value, c: Value, **attrs) -> Value:
        return self._one("fma", [a, b, c], a.type, rounding_mode=attrs.pop("rounding_mode",
                         "nearest_even"), **attrs)

    def cmpf(self, predicate: str, x: Value, y: Value, ordering: str = "ordered") -> Value:
        return self._one("cmpf", [x, y], x.type.with_element("i1"),
                         comparison_predicate=predicate, comparison_ordering=ordering)

    def cmpi(self, predicate: str, x: Value, y: Value, signedness: str = "signed") -> Value:
        return self._one("cmpi", [x, y], x.type.with_element("i1"),
                         comparison_predicate=predicate, signedness=signedness)

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self._one("select", [cond, a, b], a.type)

    # float ops with required rounding attributes get IEEE defaults
    def addf(self, x, y, **kw):
        return self.binary("addf", x, y, rounding_mode=kw.pop("rounding_mode", "nearest_even"), **kw)

    def subf(self, x, y, **kw):
        return self.binary("subf", x, y, rounding_mode=kw.pop("rounding_mode", "nearest_even"), **kw)

    def mulf(self, x, y, **kw):
        return self.binary("mulf", x, y, rounding_mode=kw.pop("rounding_mode", "nearest_even"), **kw)

    def divf(self, x, y, **kw):
        return self.binary("divf", x, y, rounding_mode=kw.pop("rounding_mode", "nearest_even"), **kw)

    def sqrt(self, x, **kw):
        return self.unary("sqrt", x, rounding_mode=kw.pop("rounding_mode", "nearest_even"), **kw)

    # --- conversions ---------------------------------------------------------------------------
    def exti(self, x: Value, elem: str, signed: bool) -> Value:
        return self._one("exti", [x], x.type.with_element(elem),
                         signedness="signed" if signed else "unsigned")

    def trunci(self, x: Value, elem: str) -> Value:
        return self._one("trunci", [x], x.type.with_element(elem))

    def ftof(self, x: Value, elem: str, rounding: str = "nearest_even") -> Value:
        return self._one("ftof", [x], x.type.with_element(elem), rounding_mode=rounding)

    def ftoi(self, x: Value, elem: str, signed: bool, rounding: str = "nearest_int_to_zero") -> Value:
        return self._one("ftoi", [x], x.type.with_element(elem),
                         signedness="signed" if signed else "unsigned", rounding_mode=rounding)

    def itof(self, x: Value, elem: str, signed: bool, rounding: str = "nearest_even") -> Value:
        return self._one("itof", [x], x.type.with_element(elem),
                         signedness="signed" if signed else "unsigned", rounding_mode=rounding)

    def bitcast(self, x: Value, type: TileType) -> Value:
        return self._one("bitcast", [x], type)

    def int_to_ptr(self, x: Value, pointee: str) -> Value:
        return self._one("int_to_ptr", [x], x.type.with_element(PointerType(pointee)))

    def ptr_to_ptr(self, x: Value, pointee: str) -> Value:
        return self._one("ptr_to_ptr", [x], x.type.with_element(PointerType(pointee)))

    def ptr_to_int(self, x: Value) -> Value:
        return self._one("ptr_to_int", [x], x.type.with_element("i64"))

    # --- shapes --------------------------------------------------------------------------------
    def broadcast(self, x: Value, shape) -> Value:
        return self._one("broadcast", [x], x.type.with_shape(shape))

    def reshape(self, x: Value, shape) -> Value:
        return self._one("reshape", [x], x.type.with_shape(shape))

    def permute(self, x: Value, perm) -> Value:
        shape = tuple(x.type.shape[p] for p in perm)
        return self._one("permute", [x], x.type.with_shape(shape), permutation=tuple(perm))

    def cat(self, x: Value, y: Value, dim: int) -> Value:
        shape = list(x.type.shape)
        shape[dim] += y.type.shape[dim]
        return self._one("cat", [x, y], x.type.with_shape(shape), dim=dim)

    def extract(self, x: Value, indices: Sequence[Value], shape) -> Value:
        return self._one("extract", [x, list(indices)], x.type.with_shape(shape))

    def offset(self, ptrs: Value, offsets: Value) -> Value:
        return self._one("offset", [ptrs, offsets], ptrs.type.with_shape(offsets.type.shape))

    def assume(self, x: Value, predicate) -> Value:
        return self._one("assume", [x], x.type, predicate=predicate)

    # --- matmul, reductions --------------------------------------------------------------------
    def mmaf(self, a: Value, b: Value, acc: Value, fast_acc: bool = False) -> Value:
        return self._one("mmaf", [a, b, acc], acc.type, fast_acc=fast_acc)

    def mmaf_scaled(self, a: Value, b: Value, acc: Value, a_scale: Value, b_scale: Value) -> Value:
        return self._one("mmaf_scaled", [a, b, acc, a_scale, b_scale], acc.type)

    def mmai(self, a: Value, b: Value, acc: Value, signed_a: bool = True,
             signed_b: bool = True) -> Value:
        return self._one("mmai", [a, b, acc], acc.type,
                         signedness_lhs="signed" if signed_a else "unsigned",
                         signedness_rhs="signed" if signed_b else "unsigned")

    def reduce(self, operands: Sequence[Value], dim: int, identities) -> Operation:
        """A reduce op; its region has (lhs, rhs) 0-d tile arguments per operand. Fill it and
        end with ``yield``."""
        result_types = []
        for v in operands:
            shape = list(v.type.shape)
            del shape[dim]
            result_types.append(v.type.with_shape(shape))
        op = self.create("reduce", [list(operands)], result_types,
                         {"dim": dim, "identities": list(identities)})
        _add_pair_args(op, operands)
        return op

    def scan(self, operands: Sequence[Value], dim: int, identities, reverse: bool = False) -> Operation:
        op = self.create("scan", [list(operands)], [v.type for v in operands],
                         {"dim": dim, "identities": list(identities), "reverse": bool(reverse)})
        _add_pair_args(op, operands)
        return op

    # --- grid ----------------------------------------------------------------------------------
    def get_tile_block_id(self) -> Tuple[Value, Value, Value]:
        return tuple(self.create("get_tile_block_id", [], [scalar("i32")] * 3).results)

    def get_num_tile_blocks(self) -> Tuple[Value, Value, Value]:
        return tuple(self.create("get_num_tile_blocks", [], [scalar("i32")] * 3).results)

    # --- views and memory ----------------------------------------------------------------------
    def make_tensor_view(self, base: Value, shape: Sequence[Union[int, Value]],
                         strides: Sequence[Union[int, Value]]) -> Value:
        """Static extents are ints, dynamic ones Values (all dynamic ones of one integer type)."""
        elem = base.type.element.pointee
        tv = TensorViewType(elem, tuple(None if isinstance(d, Value) else int(d) for d in shape),
                            tuple(None if isinstance(d, Value) else int(d) for d in strides))
        dyn_shape = [d for d in shape if isinstance(d, Value)]
        dyn_strides = [d for d in strides if isinstance(d, Value)]
        return self._one("make_tensor_view", [base, dyn_shape, dyn_strides], tv)

    def make_partition_view(self, tv: Value, tile_shape, dim_map=None, padding=None) -> Value:
        pv = PartitionViewType(tuple(tile_shape), tv.type, None if dim_map is None else tuple(dim_map),
                               padding)
        return self._one("make_partition_view", [tv], pv)

    def get_tensor_shape(self, tv: Value, elem: str = "i32") -> List[Value]:
        return self.create("get_tensor_shape", [tv], [scalar(elem)] * tv.type.rank).results

    def get_index_space_shape(self, view: Value, elem: str = "i32") -> List[Value]:
        return self.create("get_index_space_shape", [view], [scalar(elem)] * view.type.rank).results

    def load_view_tko(self, view: Value, index: Sequence[Value], token: Optional[Value] = None,
                      ordering: str = "weak", scope: Optional[str] = None,
                      hints: Optional[A.OptHints] = None,
                      inbounds: Optional[Sequence[bool]] = None) -> Tuple[Value, Value]:
        pv: PartitionViewType = view.type
        attrs = {"memory_ordering_semantics": ordering, "memory_scope": scope,
                 "optimization_hints": hints}
        if inbounds is not None:
            attrs["inbounds"] = tuple(inbounds)
        op = self.create("load_view_tko", [view, list(index), token], [pv.tile_type, TOKEN],
                         attrs)
        return op.results[0], op.results[1]

    def store_view_tko(self, tile: Value, view: Value, index: Sequence[Value],
                       token: Optional[Value] = None, ordering: str = "weak",
                       scope: Optional[str] = None, hints: Optional[A.OptHints] = None) -> Value:
        return self._one("store_view_tko", [tile, view, list(index), token], TOKEN,
                         memory_ordering_semantics=ordering, memory_scope=scope,
                         optimization_hints=hints)

    def load_ptr_tko(self, ptrs: Value, mask: Optional[Value] = None, padding: Optional[Value] = None,
                     token: Optional[Value] = None, ordering: str = "weak",
                     scope: Optional[str] = None, hints=None) -> Tuple[Value, Value]:
        rtype = TileType(ptrs.type.element.pointee, ptrs.type.shape)
        op = self.create("load_ptr_tko", [ptrs, mask, padding, token], [rtype, TOKEN],
                         {"memory_ordering_semantics": ordering, "memory_scope": scope,
                          "optimization_hints": hints})
        return op.results[0], op.results[1]

    def store_ptr_tko(self, ptrs: Value, value: Value, mask: Optional[Value] = None,
                      token: Optional[Value] = None, ordering: str = "weak",
                      scope: Optional[str] = None, hints=None) -> Value:
        return self._one("store_ptr_tko", [ptrs, value, mask, token], TOKEN,
                         memory_ordering_semantics=ordering, memory_scope=scope,
                         optimization_hints=hints)

    def atomic_rmw_tko(self, ptrs: Value, mode: str, arg: Value, mask: Optional[Value] = None,
                       token: Optional[Value] = None, ordering: str = "relaxed",
                       scope: str = "device") -> Tuple[Value, Value]:
        op = self.create("atomic_rmw_tko", [ptrs, arg, mask, token], [arg.type, TOKEN],
                         {"memory_ordering_semantics": ordering, "memory_scope": scope,
                          "mode": mode})
        return op.results[0], op.results[1]

    def atomic_cas_tko(self, ptrs: Value, cmp: Value, val: Value, mask: Optional[Value] = None,
                       token: Optional[Value] = None, ordering: str = "relaxed",
                       scope: str = "device") -> Tuple[Value, Value]:
        op = self.create("atomic_cas_tko", [ptrs, cmp, val, mask, token], [val.type, TOKEN],
                         {"memory_ordering_semantics": ordering, "memory_scope": scope})
        return op.results[0], op.results[1]

    def make_token(self) -> Value:
        return self._one("make_token", [], TOKEN)

    def join_tokens(self, tokens: Sequence[Value]) -> Value:
        return self._one("join_tokens", [list(tokens)], TOKEN)

    # --- control flow --------------------------------------------------------------------------
    def if_(self, cond: Value, result_types: Sequence[Type] = ()) -> Operation:
        return self.create("if", [cond], list(result_types))

    def for_(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value] = (),
             unsigned: bool = False) -> Operation:
        op = self.create("for", [lb, ub, step, list(inits)], [v.type for v in inits],
                         {"unsignedCmp": unsigned})
        op.regions[0].add_arg(lb.type)
        for v in inits:
            op.regions[0].add_arg(v.type)
        return op

    def loop(self, inits: Sequence[Value] = (), result_types: Sequence[Type] = ()) -> Operation:
        op = self.create("loop", [list(inits)], list(result_types))
        for v in inits:
            op.regions[0].add_arg(v.type)
        return op

    def yield_(self, values: Sequence[Value] = ()) -> Operation:
        return self.create("yield", [list(values)])

    def continue_(self, values: Sequence[Value] = ()) -> Operation:
        return self.create("continue", [list(values)])

    def break_(self, values: Sequence[Value] = ()) -> Operation:
        return self.create("break", [list(values)])

    def return_(self, values: Sequence[Value] = ()) -> Operation:
        return self.create("return", [list(values)])

    # --- debugging -----------------------------------------------------------------------------
    def print_(self, fmt: str, args: Sequence[Value] = (), token: Optional[Value] = None) -> Value:
        return self._one("print_tko", [list(args), token], TOKEN, str=fmt)

    def assert_(self, cond: Value, message: str) -> Operation:
        return self.create("assert", [cond], [], {"message": message})


def _add_pair_args(op: Operation, operands: Sequence[Value]) -> None:
    """The (lhs, rhs) 0-d tile arguments of a reduce/scan region, one pair per operand."""
    for v in operands:
        op.regions[0].add_arg(scalar(v.type.element))
        op.regions[0].add_arg(scalar(v.type.element))
