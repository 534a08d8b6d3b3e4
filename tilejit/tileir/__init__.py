"""The in-memory Tile IR: the hub every layer meets at.

Typing and lowering build a :class:`Module` with a :class:`Builder`; the printer renders it as the
text ``tileirdisasm`` prints, the bytecode writer serializes it for tileiras, and the simulator
interprets it. :mod:`.ops` is the op table all of them are driven by.
"""
from . import attrs
from .attrs import Bounded, DenseConst, DivBy, OptHints, SameElements, TypedValue
from .builder import Builder
from .bytecode import BytecodeError, write_bytecode
from .ir import Block, Function, Module, Operation, Value
from .op_table import OPS, OpDef, opdef
from .printer import print_function, print_module
from .types import (BF16, F16, F32, F64, I1, I8, I16, I32, I64, TOKEN, FunctionType,
                    PartitionViewType, PointerType, TensorViewType, TileType, TokenType, ptr,
                    scalar, tile)
from .verify import VerifyError, verify_module
from .version import LATEST, SUPPORTED, BytecodeVersion, as_version
