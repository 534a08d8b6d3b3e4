"""tilejit: a Numba-style JIT compiler for NVIDIA GPUs targeting Tile IR.

``import tilejit as tile``. Public names only; implementations live in the subpackages.
"""
import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

from .errors import (TileJitError, DeviceError, DriverError, ContextError, KernelCacheError,
                     SchedulingError, LaunchError, InternalError, CompileError, TypingError,
                     UnsupportedError, ToolchainError, TensorError, DeviceMemoryError,
                     StaticEvalError)
from .dtypes import (DType, bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,
                     bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2,
                     float8_e8m0fnu, float4_e2m1fn)

__version__ = "0.1.0"

# Everything below errors, dtypes and the kernel language loads on first use (PEP 562): ``import
# tilejit`` loads neither NumPy, the CUDA bindings, Numba nor the compiler (a cold start cheaper
# than cuTile Python's); ``tile.entry`` etc. import their module when first read.
_LAZY = {}      # public name -> (submodule, attribute in it; None: the submodule itself)


def _lazy(module: str, *names: str) -> None:
    for n in names:
        _LAZY[n] = (module, n)


# --- runtime (host) public names: section owned by the runtime work ---------------------------------
_lazy(".runtime", "Device", "current_device", "Stream", "Event", "Tensor", "Partition",
      "ForeignPartition", "partition", "atomic", "from_dlpack", "Module", "Function",
      "load_module_from_ptx", "load_module_from_file")
#: ``tile.writable(x)``: ``x`` as a writable tensor argument, for stores, scatters and atomics;
#: ``tile.atomic(x)`` is the same class under its first name (which reads as "only for atomics")
_LAZY["writable"] = (".runtime", "atomic")
_lazy(".deviceops", "DeviceOp", "DeviceFuture", "ExecutionContext", "value", "shared", "zip",
      "with_context", "SchedulingPolicy", "StreamPoolRoundRobin", "SingleStream",
      "set_default_policy", "LaunchConfig", "AsyncKernelLaunch")

# --- kernel language public names: section owned by the front-end work ------------------------------
from . import language
from .language import *  # noqa: F401,F403  (Constant, function, cdiv, PaddingMode, load_tile_like, ...)
from .language import __all__ as _language_names

# --- kernels: the @tile.entry dispatcher -------------------------------------------------------------
_lazy(".compiler", "CompileOptions")
_lazy(".dispatcher", "Kernel", "entry")
_lazy(".kernel_launch", "KernelLaunch", "PreparedLaunch")
_lazy(".toolchain.remarks", "Remark")
_lazy(".autotune", "Autotuned", "Config", "autotune")
_lazy(".deviceops.graph", "CudaGraph")
_LAZY["api"] = (".api", None)

if _typing.TYPE_CHECKING:
    # the same names for static readers (type checkers, IDEs, mkdocstrings for the API pages);
    # tests/test_cold_start.py checks that this list and _LAZY agree
    from . import api
    from .autotune import Autotuned, Config, autotune
    from .compiler import CompileOptions
    from .deviceops import (AsyncKernelLaunch, DeviceFuture, DeviceOp, ExecutionContext,
                            LaunchConfig, SchedulingPolicy, SingleStream, StreamPoolRoundRobin,
                            set_default_policy, shared, value, with_context, zip)
    from .deviceops.graph import CudaGraph
    from .dispatcher import Kernel, entry
    from .kernel_launch import KernelLaunch, PreparedLaunch
    from .runtime import (Device, Event, ForeignPartition, Function, Module, Partition, Stream,
                          Tensor, atomic, current_device, from_dlpack, load_module_from_file,
                          load_module_from_ptx, partition)
    from .toolchain.remarks import Remark
    writable = atomic

# the submodules ``import tilejit`` used to load, still readable as attributes without an import
_SUBMODULES = frozenset((
    "api", "backends", "compiler", "deviceops", "dispatcher", "envvars", "fingerprint",
    "kernel_launch", "keys", "language_math", "layout", "memo", "native", "runtime", "scalars",
    "stubs", "toolchain", "tracebacks", "tuning_config", "tuning_source", "tuning_space"))

# (the submodules too: ``from tilejit import *`` gave them when they were imported eagerly)
__all__ = sorted({n for n in globals() if not n.startswith("_")} | set(_LAZY) | _SUBMODULES)


class _Package(_types.ModuleType):
    def __setattr__(self, name, value):
        # importing the submodule tilejit.autotune binds it here; tile.autotune is the decorator
        if name in _LAZY and isinstance(value, _types.ModuleType) and \
                _LAZY[name][1] is not None:
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


def __getattr__(name):
    where = _LAZY.get(name)
    if where is not None or name in _SUBMODULES:
        module, attr = where or ("." + name, None)
        mod = _importlib.import_module(module, __name__)
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    hint = language.OTHER_SPELLINGS.get(name)
    if hint is not None:
        raise AttributeError(f"module 'tilejit' has no attribute '{name}'; tilejit spells it "
                             f"{hint}")
    raise AttributeError(f"module 'tilejit' has no attribute '{name}'")
