"""The typing layer: Numba types, the isolated typing context, templates and the front end.

``type_kernel(pyfunc, arg_keys, constants) -> TypedKernel`` is the entry point (``pipeline.py``).
"""
from .types import (TileType, TensorType, PartitionType, TensorPartitionViewType, DTypeType,
                    EnumClassType, EnumMemberType, TileFunctionType)
from .pipeline import type_kernel, type_function, TypedKernel, KernelParam, CallInfo
from .arg_types import arg_type

__all__ = ["type_kernel", "type_function", "TypedKernel", "KernelParam", "CallInfo", "arg_type",
           "TileType", "TensorType", "PartitionType", "TensorPartitionViewType", "DTypeType",
           "EnumClassType", "EnumMemberType", "TileFunctionType"]
