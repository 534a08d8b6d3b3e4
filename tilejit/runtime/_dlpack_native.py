"""Native (C ABI) DLPack deleters: from tilejit's C extension, or compiled once with Numba.

A DLPack producer's deleter and capsule destructor are called from C, possibly without the GIL and
possibly while the consumer has an exception pending (e.g. NumPy rejecting a CUDA capsule).
A Python callback (ctypes) cannot run in that state: CPython turns the pending exception into a
SystemError and loses it. These functions never run Python code: they take the GIL and drop one
reference to the export's keep-alive object with ``Py_DecRef``; CPython's deallocation machinery
then frees the object (saving any pending exception around finalizers).

Layout facts used (DLPack 1.x, 64-bit):
``DLManagedTensor``: ``{DLTensor dl_tensor (48 bytes); void *manager_ctx; deleter}``;
``DLManagedTensorVersioned``: ``{DLPackVersion (8 bytes); void *manager_ctx; deleter; ...}``;
``PyCapsule``: ``{PyObject_HEAD; void *pointer; const char *name; ...}``.
"""
from __future__ import annotations

import ctypes
import threading

from .. import native

_HEAD = object.__basicsize__                      # PyObject_HEAD size (16 on regular builds)
CAPSULE_POINTER_OFFSET = _HEAD
CAPSULE_NAME_OFFSET = _HEAD + ctypes.sizeof(ctypes.c_void_p)
CTX_OFFSET = 48                                   # DLManagedTensor.manager_ctx
CTX_OFFSET_VERSIONED = 8                          # DLManagedTensorVersioned.manager_ctx
DLTENSOR_PREFIX = int.from_bytes(b"dltensor", "little")

_lock = threading.Lock()
_compiled = None


def addresses():
    """``(deleter, deleter_versioned, capsule_destructor)`` function addresses: tilejit's C
    extension's when it is built (no Numba import), else compiled with Numba on first use."""
    global _compiled
    if _compiled is None:
        with _lock:
            if _compiled is None:
                ext = native.ext()
                _compiled = ext.dlpack_deleters() if ext is not None else _compile()
    return _compiled


def _compile():
    from llvmlite import ir
    from numba import cfunc, types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def load_i64(typingctx, addr):
        def codegen(context, builder, sig, args):
            return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))
        return types.int64(types.int64), codegen

    @intrinsic
    def load_u8(typingctx, addr):
        def codegen(context, builder, sig, args):
            v = builder.load(builder.inttoptr(args[0], ir.IntType(8).as_pointer()))
            return builder.zext(v, ir.IntType(64))
        return types.int64(types.int64), codegen

    @intrinsic
    def py_decref_with_gil(typingctx, obj):
        def codegen(context, builder, sig, args):
            i32 = ir.IntType(32)
            i8p = ir.IntType(8).as_pointer()
            ensure = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, []),
                                                    "PyGILState_Ensure")
            release = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i32]), "PyGILState_Release")
            decref = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p]), "Py_DecRef")
            state = builder.call(ensure, [])
            builder.call(decref, [builder.inttoptr(args[0], i8p)])
            builder.call(release, [state])
            return context.get_dummy_value()
        return types.void(types.int64), codegen

    ctx_off, ctx_off_v = CTX_OFFSET, CTX_OFFSET_VERSIONED
    name_off, ptr_off, prefix = CAPSULE_NAME_OFFSET, CAPSULE_POINTER_OFFSET, DLTENSOR_PREFIX

    def make_deleter(off):
        # Numba freezes the closure variable ``off`` as a constant when compiling (right here).
        @cfunc(types.void(types.int64), nopython=True)
        def deleter(managed):
            if managed != 0:
                ctx = load_i64(managed + off)
                if ctx != 0:
                    py_decref_with_gil(ctx)
        return deleter

    deleter = make_deleter(ctx_off)
    deleter_versioned = make_deleter(ctx_off_v)

    @cfunc(types.void(types.int64), nopython=True)
    def capsule_destructor(capsule):
        # Consumed capsules are renamed "used_dltensor..." and their consumer calls the deleter.
        name = load_i64(capsule + name_off)
        if name == 0 or load_i64(name) != prefix:
            return
        managed = load_i64(capsule + ptr_off)
        if managed == 0:
            return
        ctx = load_i64(managed + (ctx_off if load_u8(name + 8) == 0 else ctx_off_v))
        if ctx != 0:
            py_decref_with_gil(ctx)

    return deleter.address, deleter_versioned.address, capsule_destructor.address


__all__ = ["addresses"]
