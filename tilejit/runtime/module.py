"""Loading CUDA modules (cubin, fatbin, PTX, Tile IR bytecode) and getting their functions.

``tile.load_module_from_ptx(src, device=None)``, ``tile.load_module_from_file(path, device=None)``,
``load_module_from_data(image, device=None)`` return a :class:`Module` loaded on ``device`` (None:
the calling thread's current device, as ``cuModuleLoadData`` itself loads into the current
context; 0 in a thread that has none); ``module.function(name)`` a
:class:`Function` (cached). Modules are unloaded when garbage-collected (functions keep their module
alive). ``Module.borrow_raw`` / ``Function.borrow_raw`` wrap handles owned by someone else.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Dict, Optional

from ..errors import ContextError, DriverError
from . import driver as _d
from .device import Device

_PTX_MAGIC = b".version"
_BINARY_MAGICS = (b"\x7fELF", b"\x50\xed\x55\xba")     # cubin (ELF), fatbin


def _device(device) -> Device:
    dev = Device(device)            # None: the current device
    if dev.is_simulated:
        from . import backend as _backend
        raise ContextError(f"loading CUDA modules needs a GPU, but tilejit is running on the CPU "
                           f"simulator ({_backend.reason()}); PTX and cubins cannot be simulated")
    return dev


class Module:
    """A loaded CUDA module on one device."""

    def __init__(self, cu_module, device: Device, owned: bool = True, name: str = "<module>"):
        self._cu = cu_module
        self.device = device
        self.name = name
        self._functions: Dict[str, "Function"] = {}
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _unload, cu_module) if owned else None
        if self._finalizer is not None:
            self._finalizer.atexit = False

    @classmethod
    def borrow_raw(cls, handle, device=None) -> "Module":
        """Wrap a ``CUmodule`` owned by someone else (never unloaded by tilejit)."""
        dev = _device(device)
        cu = handle if isinstance(handle, _d.drv.CUmodule) else _d.drv.CUmodule(int(handle))
        return cls(cu, dev, owned=False, name="<borrowed module>")

    def function(self, name: str) -> "Function":
        """The kernel ``name`` (its ``.entry`` / ``extern "C" __global__`` name)."""
        fn = self._functions.get(name)
        if fn is not None:
            return fn
        with self._lock:
            fn = self._functions.get(name)
            if fn is None:
                with self.device.current():
                    err, cu_fn = _d.drv.cuModuleGetFunction(self._cu, name.encode())
                if err != _d.SUCCESS:
                    raise DriverError(f"kernel {name!r} not found in {self.name}: "
                                      f"{_d.error_text(err)}; check the entry name (C++ kernels "
                                      f"need extern \"C\" or their mangled name)", code=int(err))
                fn = Function(cu_fn, self.device, name, module=self)
                self._functions[name] = fn
        return fn

    load_function = function     # the cuTile Rust spelling

    @property
    def handle(self) -> int:
        return int(self._cu)

    def __repr__(self) -> str:
        return f"<tilejit.Module {self.name} on {self.device!r}>"


class Function:
    """A kernel in a loaded module; launch it with ``tile.AsyncKernelLaunch(fn)`` or a
    :class:`~tilejit.runtime.cuda_executable.CudaExecutable`."""

    def __init__(self, cu_function, device: Device, name: str, module: Optional[Module] = None):
        self._cu = cu_function
        self.device = device
        self.name = name
        self.module = module       # keeps the module loaded

    @classmethod
    def borrow_raw(cls, handle, device=None, name: str = "<borrowed>") -> "Function":
        dev = _device(device)
        cu = handle if isinstance(handle, _d.drv.CUfunction) else _d.drv.CUfunction(int(handle))
        return cls(cu, dev, name)

    def attribute(self, name: str) -> int:
        """A ``CU_FUNC_ATTRIBUTE_<name>`` value, e.g. ``attribute("NUM_REGS")``."""
        key = name.upper()
        if not key.startswith("CU_FUNC_ATTRIBUTE_"):
            key = "CU_FUNC_ATTRIBUTE_" + key
        enum = getattr(_d.drv.CUfunction_attribute, key, None)
        if enum is None:
            raise ValueError(f"unknown function attribute {name!r}")
        return int(_d.check(_d.drv.cuFuncGetAttribute(enum, self._cu), f"cuFuncGetAttribute({key})"))

    @property
    def handle(self) -> int:
        return int(self._cu)

    def __repr__(self) -> str:
        return f"<tilejit.Function {self.name!r} on {self.device!r}>"


def load_module_from_data(image, device=None, name: str = "<module>") -> Module:
    """Load a cubin / fatbin / PTX (str or bytes) / Tile IR bytecode image on ``device`` (None:
    the current device)."""
    dev = _device(device)
    if isinstance(image, str):
        image = image.encode()
    data = bytes(image)
    is_ptx = data[:4] not in _BINARY_MAGICS and _PTX_MAGIC in data[:65536]
    if is_ptx and not data.endswith(b"\0"):
        data += b"\0"               # the driver reads PTX as a NUL-terminated string
    drv = _d.drv
    with dev.current():
        err, cu_mod = drv.cuModuleLoadData(data)
        log = _jit_error_log(data) if is_ptx and err != _d.SUCCESS else ""
    if err != _d.SUCCESS:
        raise DriverError(f"cannot load {name} on {dev.name}: {_d.error_text(err)}"
                          + (f"\nJIT log:\n{log}" if log else "")
                          + ("" if log or not is_ptx else
                             f"; check the PTX with `ptxas --gpu-name {dev.arch}`"),
                          code=int(err))
    return Module(cu_mod, dev, owned=True, name=name)


def _jit_error_log(data: bytes) -> str:
    """The PTX JIT's error log (second load attempt with a log buffer; best effort)."""
    try:
        drv = _d.drv
        buf = bytearray(16384)
        opts = [drv.CUjit_option.CU_JIT_ERROR_LOG_BUFFER,
                drv.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        err, mod = drv.cuModuleLoadDataEx(data, len(opts), opts, [buf, len(buf)])
        if err == _d.SUCCESS:
            drv.cuModuleUnload(mod)
            return ""
        return bytes(buf).split(b"\0", 1)[0].decode(errors="replace").strip()
    except Exception:
        return ""


def load_module_from_ptx(src, device=None) -> Module:
    """JIT-compile and load PTX source (str or bytes) on ``device`` (None: the current device)."""
    return load_module_from_data(src, device, name="<ptx>")


def load_module_from_file(path, device=None) -> Module:
    """Load a ``.cubin``, ``.fatbin`` or ``.ptx`` file on ``device`` (None: the current device)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    return load_module_from_data(data, device, name=os.path.basename(path))


def _unload(cu_module) -> None:
    try:
        _d.drv.cuModuleUnload(cu_module)
    except Exception:
        pass


__all__ = ["Module", "Function", "load_module_from_ptx", "load_module_from_file",
           "load_module_from_data"]
