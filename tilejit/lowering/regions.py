"""The region tree: structured control flow over typed Numba IR, ready for Tile IR lowering.

``lowering.structurize.structurize(typed_kernel)`` builds a :class:`StructuredKernel` whose
``body`` is a :class:`Region`. A region is a list of nodes followed by one terminator:

==================  ===============================================================================
``Block``           straight-line typed Numba IR statements (``ir.Assign``, ``ir.Print``,
                    ``ir.SetItem``...), in order; never phis, jumps, branches or returns
``If``              ``cond`` (a bool variable) -> ``then`` / ``orelse`` regions; ``results`` are
                    the variables defined after the ``if`` (the join's phis)
``For``             a counted loop over ``range(start, stop, step)``
``Loop``            a general loop (``while``; ``for`` with ``break``)
------------------  -------------------------------------------------------------------------------
``Yield(values)``   ends an ``If`` arm: the values of the ``If``'s results on this path
``Continue(values)`` next iteration of the innermost loop: new values of its carried variables
``Break(values)``   leaves the innermost loop: the values of its results
``Return()``        ends the kernel; only ever the terminator of the top-level region
``None``            the region ends with an ``If`` both of whose arms end in Break/Continue
==================  ===============================================================================

Values (``Yield.values``, ``Carried.init``...) are :data:`Operand` s: a Numba variable name
(``str``), :class:`Const` (a synthetic constant, e.g. an exit selector) or :class:`Undef` (a value
that is never observed on that path: lowering may use any value of the type, e.g. zeros).

Naming: every variable is defined exactly once in the tree. ``If.results``, ``Carried.name`` and
``LoopResult.name`` are the Numba variables (phis in the IR) that the structured op defines:
inside a loop body a carried name is the loop's iteration argument; after the loop a result name
is the loop's result. Types are in ``StructuredKernel.typemap`` and on each definition.

Example: the K-loop matmul of ``tests/corpus/matmul.py`` (``for k in range(cdiv(K, BK)): acc =
mma(a.load(...), b.load(...), acc)``) dumps as::

    block 0  (29 stmts)
    for $200for_iter.2 in range(0, $174call.29, 1)   step>0   # line 17
        carried acc.2: Tile[float32, 64x64] = acc
        block 200  (1 stmts)                    # `$phi202.1 = $200for_iter.2` (the loop index)
        block 202  (12 stmts)
        continue(acc.1)
    -> acc.2.1 = acc.2                          # result = final carried value
    block 354  (8 stmts)                        # c.store(acc.2.1.astype(...))
    return

and ``i = 0; while i < n: i += 1; if i % 2 == 0: continue; t = t + i`` dumps as (CPython rotates
``while`` and ``continue`` jumps to the top test, which makes two nested natural loops; the inner
one leaves with an exit selector: 1 = ``continue`` the outer loop, 2 = leave both)::

    block 0  (9 stmts)
    loop   # line 72
        carried i.2: int64 = i
        carried t.3: Tile[float32, 64] = t
        block 50  (3 stmts)                     # the top test i < n
        if $60pred:   # line 72
            loop   # line 73
                carried i.3: int64 = i.2
                carried t.2: Tile[float32, 64] = t.3
                block 62  (9 stmts)
                if $88pred:   # line 74            # i % 2 == 0: continue (outer)
                    break(1, i.1, t.2, undef)
                else:
                    block 92  (5 stmts)
                    if $112pred:   # line 72       # the rotated bottom test i < n
                        continue(i.1, t.1)
                    else:
                        break(2, undef, undef, t.1)
            -> $exit_sel: int32, i.2.1: int64, t.3.1: Tile[float32, 64], t.4.1: Tile[float32, 64]
            block 115  (1 stmts)                # $exit_sel_is_1 = $exit_sel == 1
            if $exit_sel_is_1:   # line 73
                continue(i.2.1, t.3.1)
            else:
                break(t.4.1)
        else:
            break(t.3)
    -> t.4.2: Tile[float32, 64]
    block 114  (6 stmts)
    return

Lowering contract:

* ``Block``: lower each statement in order. A variable whose type is a ``Literal``, ``DTypeType``
  or ``EnumMemberType`` is a compile-time constant (emit it as a constant, or not at all).
  ``getiter``/``range`` statements of a ``For`` are not in any block.
* ``If``: ``if %cond -> (types of results) { then; yield } else { orelse; yield }``. An arm that
  ends in ``Break``/``Continue`` emits that op instead of ``yield`` (Tile IR allows
  ``break``/``continue`` inside an ``if`` nested in a ``loop``). ``If.terminates`` is True when
  no arm yields: nothing follows the ``If`` in its region, but Tile IR still wants a terminator
  after it (emit an unreachable ``continue`` with the current carried values).
* ``For`` without ``has_break``: ``for %iv in (start to stop, step step) iter_values(carried =
  init)`` with body terminated by ``continue`` (values in order of ``carried``). After the loop,
  ``results[i]`` is ``exit_values[i]`` evaluated on the *final* carried values (usually
  ``exit_values[i]`` is a carried name: the ``for``'s i-th result). Tile IR ``for`` takes a
  non-negative step: when ``step_sign`` is -1 or None (unknown) iterate ``j`` over the trip
  count and compute ``iv = start + j * step``.
* ``For`` with ``has_break`` and ``Loop``: Tile IR ``loop iter_values(...)``. For a ``For``,
  add the induction variable as an extra carried value and test it at the top (``break`` with
  ``exit_values`` when the range is exhausted). ``Break.values`` are in order of ``results``.
* ``Return``: ``return`` (kernels return nothing). It never appears inside an ``If``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Union


# --------------------------------------------------------------------------------------------------
# Values
@dataclass(frozen=True)
class Const:
    """A synthetic compile-time constant (exit selectors, folded short-circuit conditions)."""
    value: object
    type: object

    def __str__(self):
        return repr(self.value)


@dataclass(frozen=True)
class Undef:
    """A value that is never observed on its path; any value of ``type`` will do."""
    type: object

    def __str__(self):
        return "undef"


Operand = Union[str, Const, Undef]


def operand_text(v: Operand) -> str:
    return v if isinstance(v, str) else str(v)


# --------------------------------------------------------------------------------------------------
# Definitions made by structured ops
@dataclass
class Result:
    """A variable defined by an ``If`` (after it) or a loop (after it)."""
    name: str
    type: object


@dataclass
class Carried:
    """A loop-carried variable: ``name`` is the iteration argument inside the body; ``init`` its
    value on entry. Its next value is in each ``Continue``."""
    name: str
    type: object
    init: Operand


# --------------------------------------------------------------------------------------------------
# Terminators
@dataclass
class Yield:
    values: List[Operand] = field(default_factory=list)


@dataclass
class Continue:
    values: List[Operand] = field(default_factory=list)


@dataclass
class Break:
    values: List[Operand] = field(default_factory=list)


@dataclass
class Return:
    pass


Terminator = Union[Yield, Continue, Break, Return, None]


# --------------------------------------------------------------------------------------------------
# Nodes
@dataclass
class Block:
    label: int
    stmts: list


@dataclass
class Region:
    nodes: list
    term: Terminator = None


@dataclass
class If:
    cond: str
    then: Region
    orelse: Region
    results: List[Result]
    loc: object = None

    @property
    def terminates(self) -> bool:
        """True when neither arm yields (both leave through Break/Continue)."""
        return not isinstance(self.then.term, Yield) and not isinstance(self.orelse.term, Yield) \
            and ends_without_fallthrough(self.then) and ends_without_fallthrough(self.orelse)


def ends_without_fallthrough(r: Region) -> bool:
    """True when control never falls off the end of ``r``: its terminator is not a ``Yield``,
    or it has none and ends with an ``If`` that terminates."""
    if r.term is not None:
        return not isinstance(r.term, Yield)
    return bool(r.nodes) and isinstance(r.nodes[-1], If) and r.nodes[-1].terminates


@dataclass
class For:
    iv: str                    # the induction variable (Numba name), an integer scalar
    iv_type: object
    start: Operand
    stop: Operand
    step: Operand
    step_sign: Optional[int]   # +1, -1, or None when only known at run time
    carried: List[Carried]
    body: Region
    results: List[Result]
    exit_values: List[Operand]  # values of ``results`` when the range is exhausted
    has_break: bool
    loc: object = None
    grid_stride: bool = False  # range(start, stop, tile.num_blocks(axis)): one work item each


@dataclass
class Loop:
    carried: List[Carried]
    body: Region
    results: List[Result]
    loc: object = None


Node = Union[Block, If, For, Loop]


@dataclass
class StructuredKernel:
    """The region tree of one typed kernel plus the (extended) type information."""
    typed: object              # the TypedKernel
    body: Region
    typemap: dict              # TypedKernel.typemap plus the synthetic variables
    calltypes: dict            # TypedKernel.calltypes plus synthetic comparisons
    blocks: dict               # the normalized Numba blocks the tree was built from

    def dump(self, labels: bool = True, stmts: bool = False) -> str:
        return dump_region(self.body, self.typemap, labels=labels, stmts=stmts)

    def skeleton(self):
        return skeleton(self.body)

    def __str__(self):
        return self.dump()


# --------------------------------------------------------------------------------------------------
# Text
def _line(loc) -> str:
    return f"   # line {loc.line}" if loc is not None and getattr(loc, "line", None) else ""


def _vals(values) -> str:
    return ", ".join(operand_text(v) for v in values)


def dump_region(region: Region, typemap=None, labels=True, stmts=False, indent=0) -> str:
    out: List[str] = []
    _dump(region, out, indent, typemap or {}, labels, stmts)
    return "\n".join(out)


def _dump(region: Region, out, ind, tm, labels, stmts):
    pad = "    " * ind
    for node in region.nodes:
        if isinstance(node, Block):
            head = f"block {node.label}" if labels else "block"
            out.append(f"{pad}{head}  ({len(node.stmts)} stmts)")
            if stmts:
                for s in node.stmts:
                    out.append(f"{pad}    | {s}")
        elif isinstance(node, If):
            out.append(f"{pad}if {node.cond}:{_line(node.loc)}")
            _dump(node.then, out, ind + 1, tm, labels, stmts)
            out.append(f"{pad}else:")
            _dump(node.orelse, out, ind + 1, tm, labels, stmts)
            if node.results:
                out.append(f"{pad}-> " + ", ".join(f"{r.name}: {r.type}" for r in node.results))
        elif isinstance(node, For):
            sign = {1: "step>0", -1: "step<0", None: "step sign at run time"}[node.step_sign]
            brk = "   has break" if node.has_break else ""
            out.append(f"{pad}for {node.iv} in range({operand_text(node.start)}, "
                       f"{operand_text(node.stop)}, {operand_text(node.step)})   {sign}{brk}"
                       f"{_line(node.loc)}")
            for c in node.carried:
                out.append(f"{pad}    carried {c.name}: {c.type} = {operand_text(c.init)}")
            _dump(node.body, out, ind + 1, tm, labels, stmts)
            if node.results:
                out.append(f"{pad}-> " + ", ".join(
                    f"{r.name} = {operand_text(v)}" for r, v in zip(node.results,
                                                                   node.exit_values)))
        elif isinstance(node, Loop):
            out.append(f"{pad}loop{_line(node.loc)}")
            for c in node.carried:
                out.append(f"{pad}    carried {c.name}: {c.type} = {operand_text(c.init)}")
            _dump(node.body, out, ind + 1, tm, labels, stmts)
            if node.results:
                out.append(f"{pad}-> " + ", ".join(f"{r.name}: {r.type}" for r in node.results))
    t = region.term
    if isinstance(t, Yield):
        if t.values:
            out.append(f"{pad}yield({_vals(t.values)})")
    elif isinstance(t, Continue):
        out.append(f"{pad}continue({_vals(t.values)})")
    elif isinstance(t, Break):
        out.append(f"{pad}break({_vals(t.values)})")
    elif isinstance(t, Return):
        out.append(f"{pad}return")


def skeleton(region: Region):
    """A label-free summary of the tree shape for tests (stable across Python versions).

    Consecutive blocks collapse into one ``"block"``; an ``If`` is ``("if", n_results, then,
    else)``, a ``For`` ``("for", sign, has_break, n_carried, n_results, body)``, a ``Loop``
    ``("loop", n_carried, n_results, body)``; terminators are ``"yield"``, ``"continue"``,
    ``"break"``, ``"return"``; a region is a tuple of those.
    """
    items = []
    for node in region.nodes:
        if isinstance(node, Block):
            if not node.stmts:
                continue
            if items and items[-1] == "block":
                continue
            items.append("block")
        elif isinstance(node, If):
            items.append(("if", len(node.results), skeleton(node.then), skeleton(node.orelse)))
        elif isinstance(node, For):
            items.append(("for", node.step_sign, node.has_break, len(node.carried),
                          len(node.results), skeleton(node.body)))
        elif isinstance(node, Loop):
            items.append(("loop", len(node.carried), len(node.results), skeleton(node.body)))
    t = region.term
    if isinstance(t, Yield):
        items.append("yield")
    elif isinstance(t, Continue):
        items.append("continue")
    elif isinstance(t, Break):
        items.append("break")
    elif isinstance(t, Return):
        items.append("return")
    return tuple(items)


def walk_nodes(region: Region):
    """Every node of the tree, depth first."""
    for node in region.nodes:
        yield node
        if isinstance(node, If):
            yield from walk_nodes(node.then)
            yield from walk_nodes(node.orelse)
        elif isinstance(node, (For, Loop)):
            yield from walk_nodes(node.body)


__all__ = ["Const", "Undef", "Operand", "Result", "Carried", "Yield", "Continue", "Break",
           "Return", "Block", "Region", "If", "For", "Loop", "StructuredKernel", "dump_region",
           "skeleton", "walk_nodes", "operand_text", "ends_without_fallthrough"]
