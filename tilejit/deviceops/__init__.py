"""Lazy GPU work: the DeviceOp base class, its combinators and scheduling policies."""
from .deviceop import DeviceOp, DeviceFuture, execute_input, into_op
from .execution import ExecutionContext
from .combinators import value, shared, zip, with_context
from .custom import AsyncKernelLaunch, LaunchConfig
from . import transfer  # noqa: F401  (binds Tensor.to_host / Tensor.dup to their DeviceOps)
from .scheduling import (SchedulingPolicy, StreamPoolRoundRobin, SingleStream, set_default_policy,
                         default_policy)

__all__ = ["DeviceOp", "DeviceFuture", "ExecutionContext", "execute_input", "into_op", "value",
           "shared", "zip", "with_context", "SchedulingPolicy", "StreamPoolRoundRobin",
           "SingleStream", "set_default_policy", "default_policy", "AsyncKernelLaunch", "LaunchConfig"]
