"""Kernel entry: parameters from the specialization keys (contract C1/C2) and the prologue.

Each array argument becomes ``base, shape_0.., stride_0..``; the prologue turns the key's facts
into ``assume`` ops (pointer alignment, non-negative extents, divisibility) and a tensor view whose
unit strides are static, so tileiras can pick vector loads and TMA.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .. import dtypes as D
from ..dtypes import DType
from ..keys import Facts, as_key, index_dtype
from ..tileir import Builder, Function, TileType, Value
from ..tileir import attrs as A
from ..tileir.types import ptr, scalar
from ..scalars import checked_slot, needs_check
from .emit import TV, Emitter, WeakParamTV, elem, mem_elem


@dataclass
class ArrayParam:
    """An array argument inside the kernel: its tensor view and what is known about it."""

    name: str
    kind: str                       # "tensor" | "partition"
    dtype: DType
    ndim: int
    facts: Optional[tuple]
    tile_shape: Optional[Tuple[int, ...]] = None
    writable: bool = False
    base: Optional[Value] = None
    shape: List[TV] = field(default_factory=list)
    strides: List[TV] = field(default_factory=list)
    tview: Optional[Value] = None
    views: Dict[tuple, Value] = field(default_factory=dict)
    #: for in-kernel views (``x.slice``) built from runtime values: partition views are made
    #: where they are used, by this builder, instead of once in the entry block
    local_builder: Optional[Builder] = None
    #: for an array chosen at run time from a tuple: the arrays it may be (memory ordering)
    aliases: Tuple[str, ...] = ()
    #: this array with its last axis split in pieces of n elements (``load(box_width=n)``)
    splits: Dict[int, "ArrayParam"] = field(default_factory=dict)

    @property
    def index_dtype(self) -> DType:
        return index_dtype(self.facts)

    @property
    def written(self) -> bool:
        return self.kind == "partition" or self.writable

    def partition_view(self, hoist: Builder, tile_shape, padding: Optional[str] = None,
                       dim_map: Optional[Sequence[int]] = None) -> Value:
        """A partition view of this array's tensor view, created once per tile shape/padding by
        ``hoist`` (a builder for the entry block, so the view dominates every use)."""
        if self.local_builder is not None:
            return self.local_builder.make_partition_view(self.tview, tuple(tile_shape),
                                                          dim_map=dim_map, padding=padding)
        key = (tuple(tile_shape), padding, None if dim_map is None else tuple(dim_map))
        v = self.views.get(key)
        if v is None:
            v = hoist.make_partition_view(self.tview, tuple(tile_shape), dim_map=dim_map,
                                          padding=padding)
            self.views[key] = v
        return v

    def stride(self, i: int, hoist_em) -> TV:
        """Stride ``i`` in elements (a constant 1 for a static unit stride)."""
        s = self.strides[i]
        if s is None:
            s = self.strides[i] = hoist_em.const(1, self.index_dtype)
        return s


@dataclass
class ViewRef:
    """``x.partition(shape)`` inside a kernel: a tile view of an array parameter."""

    array: ArrayParam
    tile_shape: Tuple[int, ...]
    padding: Optional[str] = "zero"


@dataclass
class ScalarParam:
    name: str
    dtype: DType
    value: Optional[TV] = None
    #: a weak (Python) scalar: the dtypes the kernel converts it into (checked at the call)
    uses: Optional[set] = None


class EntryABI:
    """The entry's parameter slots (``fn.abi``), read after lowering: a weak scalar's slot names
    the dtypes it was converted into (``tilejit.scalars.checked_slot``)."""

    def __init__(self, keys, params: Dict[str, object]):
        self.keys = keys
        self.params = params

    def slots(self) -> Tuple[str, ...]:
        out: Tuple[str, ...] = ()
        for k, p in zip(self.keys, self.params.values()):
            out += _slots(k, p)
        return out


def _slots(k, p) -> Tuple[str, ...]:
    if isinstance(p, tuple):                    # a tuple argument: its items' slots in order
        return sum((_slots(kj, pj) for kj, pj in zip(k.items, p)), ())
    s = k.abi_slots()
    if isinstance(p, ScalarParam) and p.uses:
        s = (checked_slot(s[0], [d for d in p.uses if needs_check(p.dtype, d)]),)
    return s


def flat_params(params):
    """The parameters in ``params`` with tuple arguments' items in their place."""
    for q in params:
        if isinstance(q, tuple):
            yield from flat_params(q)
        else:
            yield q


def _entry_types(keys) -> List[TileType]:
    """The entry's parameter types: one per ABI slot of each key (contract C1)."""
    types = []
    for k in keys:
        if k.kind == "tuple":
            types += _entry_types(k.items)
            continue
        dt = D.from_name(k.dtype)
        if k.kind == "scalar":
            types.append(scalar("i32" if dt.is_bool else elem(dt)))
            continue
        types.append(ptr(mem_elem(dt)))
        types += [scalar(elem(index_dtype(k.facts)))] * (2 * k.ndim)
    return types


def build_entry(name: str, param_names: Sequence[str], keys: Sequence[tuple], *,
                hints: Optional[A.OptHints] = None, loc=None):
    """Create the entry function and its prologue. Returns ``(fn, builder, params)`` where
    ``params`` maps each runtime parameter name to an ArrayParam or ScalarParam (a tuple of them
    for a tuple argument)."""
    keys = [as_key(k) for k in keys]
    fn = Function(name, _entry_types(keys), hints=hints, loc=loc)
    b = Builder(fn.body, loc)
    em = Emitter(b)
    args = iter(fn.args)
    params: Dict[str, object] = {}
    for pname, k in zip(param_names, keys):
        params[pname] = _param(pname, k, args, b, em)
    fn.abi = EntryABI(keys, params)
    return fn, b, params


def _param(pname: str, k, args, b: Builder, em: Emitter):
    """The kernel parameter ``pname`` of key ``k`` from the entry arguments ``args``."""
    kind = k.kind
    if kind == "tuple":
        return tuple(_param(f"{pname}[{j}]", kj, args, b, em) for j, kj in enumerate(k.items))
    dt = D.from_name(k.dtype)
    if kind == "scalar":
        raw = next(args)
        raw.hint = pname
        p = ScalarParam(pname, dt)
        if dt.is_bool:
            p.value = em.compare("!=", TV(raw, D.int32), em.const(0, D.int32))
        elif k.weak:
            p.uses = set()
            p.value = WeakParamTV(raw, dt, p.uses)
        else:
            p.value = TV(raw, dt)
        return p
    ndim, facts = k.ndim, k.facts
    p = ArrayParam(pname, kind, dt, ndim, facts,
                   tile_shape=tuple(k.tile_shape) if kind == "partition" else None,
                   writable=bool(k.writable) if kind == "tensor" else True)
    base = next(args)
    base.hint = pname
    shape_vals = [next(args) for _ in range(ndim)]
    stride_vals = [next(args) for _ in range(ndim)]
    _, base_div, shape_div, stride_div, stride_one = facts or Facts.unknown(ndim)
    if base_div > 1:
        base = b.assume(base, A.DivBy(base_div))
    p.base = base
    idx_dt = p.index_dtype
    shape_tvs, tv_shape = [], []
    for i, s in enumerate(shape_vals):
        s = b.assume(s, A.Bounded(0, None))
        if shape_div[i] > 1:
            s = b.assume(s, A.DivBy(shape_div[i]))
        shape_tvs.append(TV(s, idx_dt))
        tv_shape.append(s)
    stride_tvs, tv_strides = [], []
    for i, s in enumerate(stride_vals):
        if stride_one[i]:
            # static unit stride on any axis: a column-major operand (fp8 B, transposed views)
            # then gets TMA and K-major tensor-core loads; a dynamic 1 hides that from tileiras
            tv_strides.append(1)
            stride_tvs.append(None)                     # materialized on demand (stride())
            continue
        s = b.assume(s, A.Bounded(0, None))
        if stride_div[i] > 1:
            s = b.assume(s, A.DivBy(stride_div[i]))
        tv_strides.append(s)
        stride_tvs.append(TV(s, idx_dt))
    p.shape, p.strides = shape_tvs, stride_tvs
    p.tview = b.make_tensor_view(base, tv_shape, tv_strides)
    return p


def select_item(lw, items: tuple, index: TV):
    """``items[index]`` for an index known only at run time: numbers and tiles by ``where``;
    arrays (read-only tensors of one dtype, rank and facts, as a tuple argument's are) as a
    tensor view whose base, extents and strides are selected, made where it is used."""
    em = lw.em
    conds = [em.compare("==", index, em.const(j, index.dtype, index.shape))
             for j in range(len(items))]
    if all(isinstance(x, ArrayParam) for x in items):
        first = items[0]
        if any((x.kind, x.dtype, x.ndim, x.facts, x.writable) !=
               (first.kind, first.dtype, first.ndim, first.facts, first.writable) for x in items):
            raise lw.error("indexing a tuple of arrays at run time needs arrays of one dtype, "
                           "rank and writability")
        v = ArrayParam(first.name, first.kind, first.dtype, first.ndim, first.facts,
                       writable=first.writable, local_builder=lw.b,
                       aliases=tuple(a for x in items for a in (x.aliases or (x.name,))))

        def pick(values):
            r = values[-1]
            for c, x in zip(reversed(conds[:-1]), reversed(values[:-1])):
                r = em.where(c, x, r)
            return r
        bases = [em.cast(TV(lw.b.ptr_to_int(x.base), D.int64), D.int64) for x in items]
        v.base = lw.b.int_to_ptr(pick(bases).value, mem_elem(first.dtype))
        facts = first.facts or Facts.unknown(first.ndim)
        if facts.base_div > 1:                       # every base is aligned (merged facts)
            v.base = lw.b.assume(v.base, A.DivBy(facts.base_div))
        v.shape = [pick([x.shape[i] for x in items]) for i in range(first.ndim)]
        unit = [all(x.strides[i] is None for x in items) for i in range(first.ndim)]
        v.strides = [None if unit[i] else pick([x.stride(i, lw.hoist_em) for x in items])
                     for i in range(first.ndim)]
        v.tview = lw.b.make_tensor_view(v.base, [s.value for s in v.shape],
                                        [1 if s is None else s.value for s in v.strides])
        return v
    if any(isinstance(x, (ArrayParam, ViewRef, tuple)) for x in items):
        raise lw.error("indexing a tuple at run time needs elements of one kind (all arrays, "
                       "or all numbers and tiles)")
    tvs = [lw.tv(x) for x in items]
    r = tvs[-1]
    for c, x in zip(reversed(conds[:-1]), reversed(tvs[:-1])):
        r = em.where(c, x, r)
    return r
