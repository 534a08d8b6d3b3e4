"""The in-memory Tile IR: values, operations, single-block regions, functions and modules.

Every Tile IR region has exactly one block, so a region *is* a :class:`Block` here. Operands are
kept in groups that follow the op table's operand list (a group is one value, an optional value
that may be absent, or a variadic list), which is what the bytecode writer and the printer need.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence

from .types import FunctionType, Type


class Value:
    """An SSA value: an operation result or a block argument."""

    __slots__ = ("type", "owner", "index", "hint")

    def __init__(self, type: Type, owner, index: int, hint: Optional[str] = None):
        self.type = type
        self.owner = owner          # Operation (result) or Block (argument)
        self.index = index
        self.hint = hint            # a name for debugging dumps; never affects semantics

    def __repr__(self) -> str:
        where = self.owner.name if isinstance(self.owner, Operation) else "arg"
        return f"<Value {where}#{self.index}: {self.type}>"


class Operation:
    """One op. ``opdef`` is its entry in the op table (:mod:`tilejit.tileir.op_table`)."""

    __slots__ = ("opdef", "operand_groups", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, opdef, operand_groups: List[List[Value]], result_types: Sequence[Type],
                 attrs: Optional[Dict[str, object]] = None, num_regions: int = 0, loc=None):
        self.opdef = opdef
        self.operand_groups = operand_groups
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = [Block(parent_op=self) for _ in range(num_regions)]
        self.loc = loc              # tilejit.errors.SourceLocation or None
        self.parent: Optional[Block] = None

    @property
    def name(self) -> str:
        return self.opdef.name

    @property
    def operands(self) -> List[Value]:
        return [v for g in self.operand_groups for v in g]

    def group(self, name: str) -> List[Value]:
        """The operand group called ``name`` in the op table (possibly empty)."""
        return self.operand_groups[self.opdef.operand_index(name)]

    def operand(self, name: str) -> Optional[Value]:
        g = self.group(name)
        return g[0] if g else None

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    def walk(self) -> Iterator["Operation"]:
        """This op and every op nested in its regions, in pre-order."""
        yield self
        for r in self.regions:
            for op in r.ops:
                yield from op.walk()

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


class Block:
    """The single block of a region (or of a function body)."""

    __slots__ = ("args", "ops", "parent_op")

    def __init__(self, arg_types: Sequence[Type] = (), parent_op=None):
        self.args: List[Value] = []
        self.ops: List[Operation] = []
        self.parent_op = parent_op
        for t in arg_types:
            self.add_arg(t)

    def add_arg(self, type: Type, hint: Optional[str] = None) -> Value:
        v = Value(type, self, len(self.args), hint)
        self.args.append(v)
        return v

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    @property
    def terminator(self) -> Optional[Operation]:
        if self.ops and self.ops[-1].opdef.terminator:
            return self.ops[-1]
        return None

    def walk(self) -> Iterator[Operation]:
        for op in self.ops:
            yield from op.walk()


class Function:
    """A kernel entry (``entry``) with its parameters as the body's block arguments."""

    def __init__(self, name: str, arg_types: Sequence[Type], *, entry: bool = True,
                 hints=None, loc=None, arg_names: Optional[Sequence[str]] = None):
        self.name = name
        self.entry = entry
        self.hints = hints          # attrs.OptHints or None
        self.loc = loc
        self.body = Block()
        names = list(arg_names or [])
        for i, t in enumerate(arg_types):
            self.body.add_arg(t, names[i] if i < len(names) else None)

    @property
    def args(self) -> List[Value]:
        return self.body.args

    @property
    def type(self) -> FunctionType:
        return FunctionType(tuple(a.type for a in self.body.args), ())

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()


class Module:
    """A compilation unit: one or more functions."""

    def __init__(self, name: str = "kernels", functions: Sequence[Function] = ()):
        self.name = name
        self.functions: List[Function] = list(functions)

    def add(self, fn: Function) -> Function:
        self.functions.append(fn)
        return fn

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)
