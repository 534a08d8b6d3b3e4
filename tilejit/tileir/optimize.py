"""Clean-ups on a lowered module before it is written: the rewrites tileiras does not do for us.

* :func:`contract_fma`: ``a * b + c`` and ``a * b - c`` with a product used only there become one
  ``fma`` (as C compilers do by default, and as cuTile Python does). Tile IR's ``mulf``/``addf``
  carry an explicit rounding mode, which keeps the backend from contracting them itself; in an
  online-softmax inner loop that is one instruction less per element.
* :func:`hoist_invariants`: pure ops in a loop body whose operands are all defined outside the loop
  (broadcasts of a scale, reshapes of a bound) move in front of the loop.
* :func:`fuse_transposed_loads`: a ``permute`` of a freshly loaded tile (``k.load(...).T``,
  possibly through a reshape that drops unit axes) becomes a load through a partition view whose
  ``dim_map`` is permuted, which the hardware reads transposed instead of shuffling registers.
* :func:`drop_unused_loop_tokens`: a memory token a ``for`` loop carries that nothing after the
  loop reads, and that inside the loop only feeds its own next value (through ``join_tokens``),
  is dropped with its joins (a loop of parallel stores, see ``lowering/tokens.py``).
* :func:`drop_invariant_loop_values`: a value a ``for`` loop carries but hands on unchanged on
  every path (typically the memory token of an array the loop never touches, threaded through
  an ``if``) is replaced by its initial value, so the loop carries only what it changes, as
  cuTile Python's loops do.
"""
from __future__ import annotations

from typing import Dict, List, Set

from .ir import Block, Function, Module, Operation, Value
from .op_table import OPS
from .types import TOKEN, PartitionViewType

LOOPS = ("for", "loop")
# pure, but undefined for some inputs: not moved where a zero-trip loop would not have run them
_MAY_TRAP = frozenset(["divi", "remi"])


def optimize_module(module: Module, fma: bool = True) -> Module:
    for fn in module.functions:
        fuse_transposed_loads(fn)
        if fma:
            contract_fma(fn)
        hoist_invariants(fn)
        drop_invariant_loop_values(fn)
        drop_unused_loop_tokens(fn)
    return module


# --------------------------------------------------------------------------------------------------
# fma contraction
def _users(fn: Function) -> Dict[Value, List[Operation]]:
    """Each value's using ops (one entry per use)."""
    users: Dict[Value, List[Operation]] = {}
    for op in fn.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    return users


def _use_counts(fn: Function) -> Dict[Value, int]:
    return {v: len(ops) for v, ops in _users(fn).items()}


def _plain(op: Operation) -> bool:
    """Round-to-nearest-even and no flush-to-zero (the rounding fma itself does)."""
    return op.attrs.get("rounding_mode", "nearest_even") == "nearest_even" and \
        not op.attrs.get("flush_to_zero")


def contract_fma(fn: Function) -> None:
    counts = _use_counts(fn)
    subst: Dict[Value, Value] = {}
    _contract_block(fn.body, counts, subst)


def _contract_block(block: Block, counts, subst) -> None:
    out: List[Operation] = []
    for op in block.ops:
        if subst:
            op.operand_groups = [[subst.get(v, v) for v in g] for g in op.operand_groups]
        for r in op.regions:
            _contract_block(r, counts, subst)
        fused = _fuse(op, counts, out) if op.name in ("addf", "subf") and _plain(op) else None
        if fused is None:
            out.append(op)
            continue
        subst[op.result] = fused.result
        out.append(fused)
    block.ops = out


def _product(v: Value, counts, out: List[Operation]):
    """The single-use, plain ``mulf`` of this block that defines ``v``, or None."""
    d = v.owner
    if isinstance(d, Operation) and d.name == "mulf" and counts.get(v) == 1 and _plain(d) and \
            d in out:
        return d
    return None


def _fuse(op: Operation, counts, out: List[Operation]):
    x, y = op.operands
    if op.name == "addf":
        mul, other = (_product(x, counts, out), y)
        if mul is None:
            mul, other = (_product(y, counts, out), x)
        if mul is None:
            return None
        a, b = mul.operands
        c = other
    else:                                   # subf: x - y
        mul = _product(x, counts, out)
        if mul is not None:                 # a*b - y = fma(a, b, -y)
            a, b = mul.operands
            c = _insert_before(out, "negf", [y], y.type)
        else:
            mul = _product(y, counts, out)
            if mul is None:
                return None
            a, b = mul.operands             # x - a*b = fma(-a, b, x)
            a = _insert_before(out, "negf", [a], a.type)
            c = x
    out.remove(mul)
    fused = Operation(OPS["fma"], [[a], [b], [c]], [op.result.type],
                      {"rounding_mode": "nearest_even"}, loc=op.loc)
    fused.parent = op.parent
    return fused


def _insert_before(out: List[Operation], name: str, operands, type) -> Value:
    neg = Operation(OPS[name], [[v] for v in operands], [type], loc=None)
    out.append(neg)
    return neg.result


# --------------------------------------------------------------------------------------------------
# loop-invariant code motion
def hoist_invariants(fn: Function) -> None:
    _hoist_in(fn.body)


def _hoist_in(block: Block) -> None:
    out: List[Operation] = []
    for op in block.ops:
        for r in op.regions:
            _hoist_in(r)
        if op.name in LOOPS:
            for moved in _invariants(op):
                moved.parent = block
                out.append(moved)
        out.append(op)
    block.ops = out


def _invariants(loop: Operation) -> List[Operation]:
    body = loop.regions[0]
    inside: Set[Value] = set(body.args)
    moved, kept = [], []
    for op in body.ops:
        if op.opdef.pure and not op.regions and op.name not in _MAY_TRAP and op.results and \
                not any(v in inside for v in op.operands):
            moved.append(op)
            continue
        kept.append(op)
        for o in op.walk():
            inside.update(o.results)
    body.ops = kept
    return moved


# --------------------------------------------------------------------------------------------------
# transposed loads
def fuse_transposed_loads(fn: Function) -> None:
    counts = _use_counts(fn)
    plans = {}
    for op in fn.walk():
        if op.name != "permute":
            continue
        src = op.operands[0]
        reshape = None
        if isinstance(src.owner, Operation) and src.owner.name == "reshape" and counts.get(src) == 1:
            reshape = src.owner
            src = reshape.operands[0]
        load = src.owner
        if isinstance(load, Operation) and load.name == "load_view_tko" and \
                counts.get(load.results[0]) == 1 and load.parent is op.parent and \
                (reshape is None or reshape.parent is op.parent):
            order = _load_order(load, reshape, op)
            if order is not None:
                plans[op] = (load, reshape, order)
    views = {}
    for load, _, order in plans.values():     # the permuted views, next to the originals
        make = load.operand("view").owner
        key = (id(make), tuple(order))
        if key not in views:
            views[key] = _permuted_view(make, order)
    if plans:
        _apply_transposed(fn.body, plans, views, {})


def _load_order(load: Operation, reshape, permute: Operation):
    """The permutation of the load's tile axes that yields the permute's result (up to unit
    axes), or None when the reshape does more than add or drop unit axes."""
    tile = load.results[0].type.shape
    mid = reshape.results[0].type.shape if reshape is not None else tile
    if [d for d in tile if d != 1] != [d for d in mid if d != 1]:
        return None
    big = [i for i, d in enumerate(tile) if d != 1]             # load axes with extent > 1
    rank_in_mid = {}
    for j, d in enumerate(mid):
        if d != 1:
            rank_in_mid[j] = len(rank_in_mid)
    wanted = [big[rank_in_mid[j]] for j in permute.attrs["permutation"] if mid[j] != 1]
    order = list(range(len(tile)))
    for slot, axis in zip(big, wanted):
        order[slot] = axis
    return None if order == list(range(len(tile))) else order


def _apply_transposed(block: Block, plans, views, subst) -> None:
    """Rewrite ``block`` (and nested blocks): each planned load reads through a permuted view; its
    reshape disappears and its permute becomes a reshape (or nothing)."""
    drop = {id(r) for (_, r, _) in plans.values() if r is not None}
    loads = {id(l): (p, o) for p, (l, _, o) in plans.items()}
    out: List[Operation] = []
    for op in block.ops:
        if subst:
            op.operand_groups = [[subst.get(v, v) for v in g] for g in op.operand_groups]
        for r in op.regions:
            _apply_transposed(r, plans, views, subst)
        if id(op) in drop:
            continue
        if id(op) in loads:
            permute, order = loads[id(op)]
            view = views[(id(op.operand("view").owner), tuple(order))]
            new = _permuted_load(op, view, order)
            subst[op.results[1]] = new.results[1]
            out.append(new)
            shape = permute.results[0].type
            if new.results[0].type == shape:
                subst[permute.results[0]] = new.results[0]
            else:
                rs = Operation(OPS["reshape"], [[new.results[0]]], [shape], loc=permute.loc)
                rs.parent = block
                out.append(rs)
                subst[permute.results[0]] = rs.result
            continue
        if op in plans:
            continue                        # the permute: replaced where its load was
        out.append(op)
    block.ops = out


def _permuted_view(make: Operation, order) -> Value:
    """A ``make_partition_view`` like ``make`` with its tile axes taken in ``order``, inserted
    right after it."""
    pv: PartitionViewType = make.result.type
    new_pv = PartitionViewType(tuple(pv.tile_shape[a] for a in order), pv.tensor_view,
                               tuple(pv.dim_map[a] for a in order), pv.padding)
    mk = Operation(OPS["make_partition_view"], [list(g) for g in make.operand_groups], [new_pv],
                   dict(make.attrs), loc=make.loc)
    blk = make.parent
    mk.parent = blk
    blk.ops.insert(blk.ops.index(make) + 1, mk)
    return mk.result


def _permuted_load(load: Operation, view: Value, order) -> Operation:
    index = load.group("index")
    groups = [[view], [index[a] for a in order], list(load.group("token"))]
    new = Operation(OPS["load_view_tko"], groups, [view.type.tile_type, load.results[1].type],
                    dict(load.attrs), loc=load.loc)
    new.parent = load.parent
    return new


# --------------------------------------------------------------------------------------------------
# unused loop-carried tokens
def drop_unused_loop_tokens(fn: Function) -> None:
    changed = True
    while changed:
        users = _users(fn)
        changed = any(_drop_token(loop, i, users) for loop in fn.walk() if loop.name == "for"
                      for i in range(len(loop.results) - 1, -1, -1))
        if changed:
            _drop_dead_joins(fn)


def owning_loop(op: Operation):
    """The innermost ``for``/``loop`` whose body holds ``op`` (through nested ``if`` regions)."""
    block = op.parent
    while block is not None and block.parent_op is not None:
        owner = block.parent_op
        if owner.name in LOOPS:
            return owner
        block = owner.parent
    return None


def _drop_token(loop: Operation, i: int, users) -> bool:
    """Drop carried value ``i`` of ``loop`` when it is a token nothing reads after the loop and
    that inside it only feeds its own next value (directly or through ``join_tokens``)."""
    if loop.results[i].type != TOKEN or users.get(loop.results[i]):
        return False
    body = loop.regions[0]
    derived, todo = {body.args[1 + i]}, [body.args[1 + i]]
    while todo:
        for op in users.get(todo.pop(), ()):
            if op.name == "join_tokens":
                if op.results[0] not in derived:
                    derived.add(op.results[0])
                    todo.append(op.results[0])
            elif op.name != "continue" or owning_loop(op) is not loop or \
                    [j for j, v in enumerate(op.operands) if v in derived] != [i]:
                return False
    exits = [op for op in body.walk() if op.name in ("continue", "break") and
             owning_loop(op) is loop]
    if any(op.name == "break" for op in exits):
        return False
    _remove_carried(loop, i, exits)
    return True


def _remove_carried(loop: Operation, i: int, exits) -> None:
    """Delete carried value ``i`` of ``loop``: its initial value, body argument, result and the
    operand of each of the loop's ``exits`` (its ``continue`` ops)."""
    for op in exits:
        del op.operand_groups[0][i]
    del loop.group("initValues")[i]
    del loop.regions[0].args[1 + i]
    del loop.results[i]
    for k, v in enumerate(loop.regions[0].args):
        v.index = k
    for k, v in enumerate(loop.results):
        v.index = k


def _drop_dead_joins(fn: Function) -> None:
    """Remove ``join_tokens`` ops whose result nothing uses (until none is left)."""
    while True:
        users = _users(fn)
        dead = [op for op in fn.walk() if op.name == "join_tokens" and not users.get(op.results[0])]
        if not dead:
            return
        for op in dead:
            op.parent.ops.remove(op)


# --------------------------------------------------------------------------------------------------
# values a loop carries unchanged
def drop_invariant_loop_values(fn: Function) -> None:
    # inner loops first (reversed pre-order): an inner loop's dropped result becomes its initial
    # value, often the outer loop's own carried value, which the outer loop then hands on too
    for loop in reversed([op for op in fn.walk() if op.name == "for"]):
        _drop_invariants(fn, loop)


def _passed_through(v: Value, arg: Value) -> bool:
    """``v`` is ``arg`` itself, or an ``if`` result every yielding branch of which hands on
    ``arg`` (a branch that leaves by ``continue``/``break``/``return`` yields nothing)."""
    if v is arg:
        return True
    op = v.owner
    if not isinstance(op, Operation) or op.name != "if":
        return False
    yields = [r.terminator for r in op.regions
              if r.terminator is not None and r.terminator.name == "yield"]
    return bool(yields) and all(_passed_through(y.operands[v.index], arg) for y in yields)


def _drop_invariants(fn: Function, loop: Operation) -> None:
    """Replace the values ``loop`` hands on unchanged on every path by their initial values, and
    stop carrying them."""
    body = loop.regions[0]
    exits = [op for op in body.walk() if op.name in ("continue", "break") and
             owning_loop(op) is loop]
    if any(op.name == "break" for op in exits):
        return
    drop = [i for i in range(len(loop.results))
            if all(_passed_through(op.operand_groups[0][i], body.args[1 + i]) for op in exits)]
    if not drop:
        return
    subst = {}
    for i in drop:
        subst[body.args[1 + i]] = subst[loop.results[i]] = loop.group("initValues")[i]
    for op in fn.walk():
        for group in op.operand_groups:
            for k, v in enumerate(group):
                group[k] = subst.get(v, v)
    for i in reversed(drop):
        _remove_carried(loop, i, exits)
