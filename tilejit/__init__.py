"""tilejit: a Numba-style JIT compiler for NVIDIA GPUs targeting Tile IR.

``import tilejit as tile``. Public names only; implementations live in the subpackages.
"""
from .errors import (TileJitError, DeviceError, DriverError, ContextError, KernelCacheError,
                     SchedulingError, LaunchError, InternalError, CompileError, TypingError,
                     UnsupportedError, ToolchainError, TensorError, DeviceMemoryError,
                     StaticEvalError)
from .dtypes import (DType, bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,
                     bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2,
                     float8_e8m0fnu, float4_e2m1fn)

__version__ = "0.1.0"

# --- runtime (host) public names: section owned by the runtime work ---------------------------------
from .runtime import (Device, current_device, Stream, Event, Tensor, Partition, ForeignPartition,
                      partition, atomic, from_dlpack, Module,
                      Function, load_module_from_ptx, load_module_from_file)
#: ``tile.writable(x)``: ``x`` as a writable tensor argument, for stores, scatters and atomics;
#: ``tile.atomic(x)`` is the same class under its first name (which reads as "only for atomics")
writable = atomic
from .deviceops import (DeviceOp, DeviceFuture, ExecutionContext, value, shared, zip, with_context,
                  SchedulingPolicy, StreamPoolRoundRobin, SingleStream, set_default_policy,
                  LaunchConfig, AsyncKernelLaunch)

# --- kernel language public names: section owned by the front-end work ------------------------------
from . import language
from .language import *  # noqa: F401,F403  (Constant, function, cdiv, PaddingMode, load_tile_like, ...)
from .language import __all__ as _language_names

# --- kernels: the @tile.entry dispatcher -------------------------------------------------------------
from .compiler import CompileOptions
from .dispatcher import Kernel, KernelLaunch, PreparedLaunch, entry
from .toolchain.remarks import Remark
from .autotune import Autotuned, Config, autotune
from .deviceops.graph import CudaGraph
from . import api


def __getattr__(name):
    hint = language.OTHER_SPELLINGS.get(name)
    if hint is not None:
        raise AttributeError(f"module 'tilejit' has no attribute '{name}'; tilejit spells it "
                             f"{hint}")
    raise AttributeError(f"module 'tilejit' has no attribute '{name}'")
