"""Memory tokens: the order of a block's memory operations in the generated Tile IR.

Tile IR does not order memory operations by program order: a load, store or atomic is ordered
after another one only when its input token depends on that one's result token. The lowering
threads tokens as follows (a part of :class:`~tilejit.lowering.lower.Lowering`):

* Every *written* array (partitions, ``tile.atomic`` tensors) has a pair of tokens, ``[last store,
  last access]``: a load waits for the last store (read after write), a store or atomic waits for
  every earlier access (write after read or write). The pairs are carried through ``if`` results
  and loop iteration values (``control.py``), so the order survives control flow.
* Reads of read-only tensors take no token: nothing writes them while the kernel runs. A kernel
  that reads a read-only tensor with ``memory_order=`` says that something else does (another
  kernel); then every array gets a token pair.
* **Acquire** (``ACQUIRE``/``ACQ_REL`` on an atomic or load): its result token joins every array's
  pair, so every later memory operation of the block waits for it. A spin lock's loads of the
  protected data thus read after the compare-and-swap that took the lock.
* **Release** (``RELEASE``/``ACQ_REL`` on an atomic or store): its input token joins every array's
  last access, so it waits for every earlier memory operation of the block: the protected stores
  are visible before the lock is given back.
* **Parallel stores**: in a grid-stride ``for`` loop (``range(bid, n, tile.num_blocks(0))``: one
  work item per iteration) whose body touches an array only with one weak tile store, indexed by
  the loop variable itself (``y.store((r, 0), t)``), the iterations write disjoint tiles, so the
  store waits only for what came before the loop, not for the previous iteration's store; the
  token carried out of the loop still joins every store. cuTile Python does this in every
  ``for`` loop; measured on an H200 (tileiras 13.4) it made a grid-stride softmax 3% faster but a
  LayerNorm's loop over the chunks of one row 12% slower (20.7 -> 23.2 us), so tilejit keeps
  the chain in other loops.

Kernels without ordered operations get exactly the tokens they had before (nothing is joined).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from numba.core import ir

from ..tileir import Value
from ..tileir.ir import Operation
from ..tileir.op_table import OPS
from ..typing.templates._base import NOT_STATIC, static_value
from ..typing.types import PartitionType, TensorPartitionViewType, TensorType
from .abi import ArrayParam, flat_params

ACQUIRES = frozenset(["acquire", "acq_rel"])
RELEASES = frozenset(["release", "acq_rel"])

# calls that read memory and take memory_order= (ordered reads of read-only tensors, see above)
_LOAD_OPS = frozenset(["Partition.load", "TileView.load", "Tensor.load", "tile.load",
                       "tile.gather"])


def is_written_array_type(ty) -> bool:
    """A partition, a writable (``tile.atomic``) tensor, or a view of one of those."""
    if isinstance(ty, TensorPartitionViewType):
        ty = ty.source
    return isinstance(ty, PartitionType) or (isinstance(ty, TensorType) and ty.writable)


def is_array_type(ty) -> bool:
    return isinstance(ty, (PartitionType, TensorType, TensorPartitionViewType))


class MemoryTokens:
    """Token state of the lowering: ``self.tokens`` maps an array's name to ``[last store, last
    access]``."""

    #: False lowers acquire and release like relaxed (each array ordered on its own), as tilejit
    #: did before issue 21: tests set it to show that the interleave schedule catches the
    #: missing edges. Never False in use.
    ordering_edges = True
    #: False keeps every loop's stores chained (tools/gpu/run_with.py parallel_stores=False: the
    #: A/B runs of the module docstring's measurements). Never False in use.
    parallel_stores = True

    def init_tokens(self) -> None:
        """One fresh token pair per array that takes tokens (see the module docstring)."""
        self.tokens: Dict[str, List[Value]] = {}
        self.loop_accesses: List[LoopAccesses] = []     # enclosing grid-stride ``for`` loops
        self.ordered_reads = self._has_ordered_reads()
        for p in flat_params(self.params.values()):        # a tuple argument's items too
            if isinstance(p, ArrayParam) and (p.written or self.ordered_reads):
                t = self.b.make_token()
                self.tokens[p.name] = [t, t]

    def _has_ordered_reads(self) -> bool:
        """Whether some read-only array is read with a memory order other than weak."""
        for blk in (self.sk.blocks or {}).values():
            for st in blk.body:
                if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and
                        st.value.op == "call" and st.value in self.calltypes):
                    continue
                info = self.call_info(st.value)
                if info.op not in _LOAD_OPS:
                    continue
                order = self._static_arg_type(info, "memory_order")
                if getattr(order, "name", "WEAK") == "WEAK":
                    continue
                names = [v.name for v in info.args.values() if isinstance(v, ir.Var)]
                if info.receiver is not None:
                    names.append(info.receiver.name)
                if any(is_array_type(self.typemap.get(n)) and
                       not is_written_array_type(self.typemap.get(n)) for n in names):
                    return True
        return False

    def _static_arg_type(self, info, name: str):
        """The compile-time value of argument ``name`` read from its type (before lowering has
        values), or the signature's default."""
        v = info.args.get(name)
        if v is None:
            p = info.signature.pysig.parameters.get(name)
            return None if p is None or p.default is p.empty else p.default
        sv = static_value(self.typemap.get(v.name))
        return None if sv is NOT_STATIC else sv

    def takes_tokens(self, ty) -> bool:
        """Whether memory operations on an array of type ``ty`` carry tokens."""
        return is_written_array_type(ty) or (self.ordered_reads and is_array_type(ty))

    # --- joins ---------------------------------------------------------------------------------
    def join(self, toks: Sequence[Optional[Value]]) -> Optional[Value]:
        """One token depending on all of ``toks`` (None when there is none)."""
        uniq: List[Value] = []
        for t in toks:
            if t is not None and all(t is not u for u in uniq):
                uniq.append(t)
        if not uniq:
            return None
        return uniq[0] if len(uniq) == 1 else self.b.join_tokens(uniq)

    def _all_accesses(self) -> Optional[Value]:
        """The join of every array's last access: what a release waits for."""
        return self.join([self.tokens[nm][1] for nm in self.token_names()])

    def _acquired(self, rtok: Value, released: bool) -> None:
        """After an acquire with result token ``rtok``: every later memory operation waits for it.
        After an acq_rel, ``rtok`` already follows every earlier access, so it replaces them."""
        for nm in self.token_names():
            pair = self.tokens[nm]
            if released:
                pair[0] = pair[1] = rtok
            elif pair[0] is pair[1]:
                pair[0] = pair[1] = self.join([pair[0], rtok])
            else:
                pair[0], pair[1] = self.join([pair[0], rtok]), self.join([pair[1], rtok])

    # --- ordered accesses ----------------------------------------------------------------------
    def _pairs(self, arr) -> List[List[Value]]:
        """The token pairs of ``arr``: its own, or for an array chosen at run time (``xs[i]`` of a
        tuple argument) those of every array it may be."""
        return [self.tokens[n] for n in (arr.aliases or (arr.name,)) if n in self.tokens]

    def ordered_read(self, arr, emit, ordering: str = "weak"):
        """A read of ``arr``: ``emit(token)`` emits it after the last store and returns ``(memory
        value, result token)``; the read becomes part of the last access (and with an acquire
        ``ordering`` every later operation waits for it). Returns the value in its tile dtype."""
        pairs = self._pairs(arr)
        v, rtok = emit(self.join([p[0] for p in pairs]))
        self._note_access(arr, rtok, ordering)
        if ordering in ACQUIRES and self.ordering_edges:
            self._acquired(rtok, released=False)      # joins rtok into this array's pair too
        else:
            for p in pairs:
                p[1] = self.join([p[1], rtok])
        return self._from_mem(v, arr)

    def ordered_write(self, arr, emit, ordering: str = "weak", tile_index=None):
        """A write to ``arr`` (a store or an atomic): ``emit(token)`` emits it after every earlier
        access of ``arr`` (of every array for a release ``ordering``) and returns ``(result,
        result token)``; the write becomes the last store. Returns the result. ``tile_index``:
        the tile index of a tile store (a parallel store candidate), else None."""
        pairs = self._pairs(arr)
        if ordering in RELEASES and self.ordering_edges:
            t_in = self._all_accesses()
        else:
            t_in = self.join([p[1] for p in pairs])
        result, rtok = emit(t_in)
        self._note_access(arr, rtok, ordering, tile_index)
        for p in pairs:
            p[0] = p[1] = rtok
        if ordering in ACQUIRES and self.ordering_edges:
            self._acquired(rtok, released=ordering in RELEASES)
        return result

    def load_view(self, arr, view: Value, index, hints=None, ordering: str = "weak",
                  scope: Optional[str] = None, inbounds: bool = False):
        """A tile load; ``inbounds`` promises the tile lies inside the array (``check_bounds=
        False``; an attribute of bytecode 13.4, left out before)."""
        extra = {"inbounds": (True,) * len(index)} if inbounds and self.version >= (13, 4) \
            else {}
        return self.ordered_read(arr, lambda t: self.b.load_view_tko(
            view, [i.value for i in index], token=t, hints=hints, ordering=ordering,
            scope=scope, **extra), ordering)

    def store_view(self, arr, view: Value, index, t, hints=None, ordering: str = "weak",
                   scope: Optional[str] = None) -> None:
        t = self._to_mem(t, arr)
        idx = [i.value for i in index]
        self.ordered_write(arr, lambda tok: (None, self.b.store_view_tko(
            t.value, view, idx, token=tok, hints=hints, ordering=ordering,
            scope=scope)), ordering, tile_index=idx)

    # --- parallel stores in loops ----------------------------------------------------------------
    def _note_access(self, arr, rtok: Value, ordering: str, tile_index=None) -> None:
        for rec in self.loop_accesses:
            rec.note(arr, rtok, ordering, tile_index)

    def parallelize_loop_stores(self, rec: "LoopAccesses", outer: Dict[str, List[Value]]) -> None:
        """After lowering a ``for`` body: each parallel store (module docstring) waits for the
        last access before the loop (``outer``, the tokens the loop started from) instead of the
        carried one, and the carried token becomes the join of the two, so that what follows the
        loop still waits for every iteration's store."""
        if rec.ordered or not self.parallel_stores:
            return
        for name, accesses in rec.accesses.items():
            if len(accesses) != 1 or name not in outer:
                continue
            rtok, index = accesses[0]
            store = rtok.owner
            if index is None or store.parent is not rec.body or \
                    not any(v is rec.iv for v in index):
                continue
            group = store.group("token")
            carried = group[0]
            group[0] = outer[name][1]
            join = Operation(OPS["join_tokens"], [[carried, rtok]], [rtok.type], loc=store.loc)
            _replace_uses(rec.body, rtok, join.results[0])
            join.operand_groups[0][1] = rtok            # _replace_uses rewrote it too
            rec.body.ops.insert(rec.body.ops.index(store) + 1, join)
            join.parent = rec.body


class LoopAccesses:
    """The memory accesses lowered inside one grid-stride ``for`` body (nested ones included): per
    array with tokens, ``(result token, tile index or None)`` of each; ``ordered``: some access
    had a memory order other than weak (then no store is made parallel)."""

    def __init__(self, body, iv: Value):
        self.body, self.iv = body, iv
        self.accesses: Dict[str, List[tuple]] = {}
        self.ordered = False

    def note(self, arr, rtok: Value, ordering: str, tile_index) -> None:
        if ordering != "weak":
            self.ordered = True
        names = arr.aliases or (arr.name,)
        for n in names:
            # an access through a runtime choice among arrays (aliases) is never a parallel store
            self.accesses.setdefault(n, []).append(
                (rtok, tile_index if len(names) == 1 else None))


def _replace_uses(block, old: Value, new: Value) -> None:
    for op in block.walk():
        for g in op.operand_groups:
            for i, v in enumerate(g):
                if v is old:
                    g[i] = new
