/* Module setup: the method table, interned attribute names, the keys of Python scalars, and the
 * DLPack export deleters (runtime/_dlpack_native.py; without the extension they are compiled
 * with Numba). */
#include "native.h"

PyObject *S_acquire, *S_key, *S_params, *S_storage, *S_writable, *S_extent, *S_prepare,
    *S_finish, *S_grid, *S_use, *S_native, *S_launch, *S_what, *S_name, *S_ptr, *S_wait_raw,
    *S_get_device, *S_is_neg, *S_dtype, *S_data_ptr, *S_shape, *S_stride, *S_kind_tensor,
    *S_kind_partition, *S_data, *S_device_id, *S_strides, *S_sealed, *S_ndim, *S_check_globals,
    *S_synchronize, *S_out_of_range, *S_raise_launch_error, *S_cuda_stream, *S_device_index,
    *S_is_cpu, *S_ct_plan, *S_bindings, *S_alias_ok;
PyObject *K_int, *K_float, *K_bool;
PyObject *A_scalars;

/* set_annotated_scalars({dtype: (int plan, float plan, bool plan)}): how Python scalars passed to
   annotated parameters travel (tilejit/scalars.py: annotated_plans) */
static PyObject *py_set_annotated_scalars(PyObject *self, PyObject *plans) {
    if (!PyDict_Check(plans)) {
        PyErr_SetString(PyExc_TypeError, "set_annotated_scalars() takes a dict");
        return NULL;
    }
    PyObject *k, *v;
    Py_ssize_t i = 0;
    while (PyDict_Next(plans, &i, &k, &v)) {
        int ok = PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 3;
        for (int j = 0; ok && j < 3; j++) {
            PyObject *p = PyTuple_GET_ITEM(v, j);
            ok = p == Py_None || (PyTuple_Check(p) && PyTuple_GET_SIZE(p) == 3 &&
                                  (j == 1 ? PyFloat_Check(PyTuple_GET_ITEM(p, 1)) &&
                                   PyFloat_Check(PyTuple_GET_ITEM(p, 2))
                                   : PyLong_Check(PyTuple_GET_ITEM(p, 1)) &&
                                   PyLong_Check(PyTuple_GET_ITEM(p, 2))));
        }
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "set_annotated_scalars(): each value must be "
                            "(int plan, float plan, bool plan), a plan (key, lo, hi) or None");
            return NULL;
        }
    }
    Py_INCREF(plans);
    Py_XSETREF(A_scalars, plans);
    Py_RETURN_NONE;
}

/* set_scalar_keys(int_key, float_key, bool_key): the keys of weak Python scalars
   (tilejit/scalars.py: PYTHON_SCALARS) */
static PyObject *py_set_scalar_keys(PyObject *self, PyObject *args) {
    PyObject *k[3];
    if (!PyArg_ParseTuple(args, "OOO", &k[0], &k[1], &k[2]))
        return NULL;
    PyObject **dst[3] = {&K_int, &K_float, &K_bool};
    for (int i = 0; i < 3; i++) { Py_INCREF(k[i]); Py_XSETREF(*dst[i], k[i]); }
    Py_RETURN_NONE;
}

static PyObject *py_fallback_reasons(PyObject *self, PyObject *noargs) {
    PyObject *t = PyTuple_New(R_COUNT);
    for (int i = 0; t && i < R_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(reason_names[i]);
        if (!s) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* --- DLPack export deleters ------------------------------------------------------------------
   Each export's manager_ctx holds one reference to its keep-alive object; dropping it frees the
   export. They may be called without the GIL and with an exception pending: take the GIL, keep
   the error state untouched. */
static void drop_ctx(void *ctx) {
    if (!ctx) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_DECREF((PyObject *)ctx);
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
}

static void dl_deleter(void *managed) {          /* DLManagedTensor: manager_ctx at 48 */
    if (managed) drop_ctx(*(void **)((char *)managed + 48));
}

static void dl_deleter_versioned(void *managed) { /* DLManagedTensorVersioned: at 8 */
    if (managed) drop_ctx(*(void **)((char *)managed + 8));
}

static void dl_capsule_destructor(PyObject *capsule) {
    /* consumed capsules are renamed "used_dltensor..." and their consumer calls the deleter */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyCapsule_IsValid(capsule, "dltensor"))
        dl_deleter(PyCapsule_GetPointer(capsule, "dltensor"));
    else if (PyCapsule_IsValid(capsule, "dltensor_versioned"))
        dl_deleter_versioned(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    PyErr_Restore(et, ev, tb);
}

static PyObject *py_dlpack_deleters(PyObject *self, PyObject *noargs) {
    return Py_BuildValue("(KKK)", (unsigned long long)(uintptr_t)dl_deleter,
                         (unsigned long long)(uintptr_t)dl_deleter_versioned,
                         (unsigned long long)(uintptr_t)dl_capsule_destructor);
}

static PyMethodDef module_methods[] = {
    {"set_layout", py_set_layout, METH_VARARGS,
     "set_layout(Tensor, Partition, Storage, _FreeState, Stream, ArgInfo, KernelLaunch, "
     "ForeignPartition, DeviceFuture, prototypes) -> bool"},
    {"set_memo", py_set_memo, METH_VARARGS,
     "set_memo(argspec.array_keys, argspec.array_key_named): where array keys come from"},
    {"install_finalizer", py_install_finalizer, METH_O,
     "install_finalizer(DeviceOp.__del__): KernelLaunch's 'never run' check in C"},
    {"install", py_install, METH_VARARGS,
     "install(Kernel, *python fallbacks): the C lazy call and Tensor.partition"},
    {"set_partition_fallback", py_set_partition_fallback, METH_O,
     "set_partition_fallback(fn): what partition() calls outside its fast path"},
    {"partition", (PyCFunction)(void (*)(void))py_partition, METH_FASTCALL | METH_KEYWORDS,
     "partition(array, tile_shape)\n--\n\n"
     "An output partition of `array` with tiles of `tile_shape` (powers of two, one per axis):\n"
     "t.partition(tile_shape) for a tile.Tensor; for a GPU array of another library (a torch\n"
     "tensor, a CuPy array, ...) a lightweight partition read from its metadata at each launch,\n"
     "the cheap way to write kernel outputs into them."},
    {"torch_stream_of", py_torch_stream_of, METH_O,
     "torch_stream_of(values) -> (ordinal, handle) | None | NotImplemented"},
    {"executing", py_executing, METH_NOARGS, "executing() -> bool: this thread's submission guard"},
    {"not_plain", py_not_plain, METH_NOARGS,
     "not_plain(): count a launch that goes the general way (constants and more)"},
    {"swap_executing", py_swap_executing, METH_O,
     "swap_executing(flag) -> bool: set this thread's submission guard, return the old value"},
    {"dlpack_deleters", py_dlpack_deleters, METH_NOARGS,
     "(deleter, versioned deleter, capsule destructor) addresses for DLPack exports"},
    {"set_cupy", py_set_cupy, METH_VARARGS,
     "set_cupy(ndarray, {numpy dtype: (name, itemsize)}, get_current_stream): read CuPy in C"},
    {"set_torch", py_set_torch, METH_VARARGS,
     "set_torch(Tensor, {torch dtype: dtype name}, current_raw_stream): read torch tensors in C"},
    {"set_torch_exchange", py_set_torch_exchange, METH_VARARGS,
     "set_torch_exchange(capsule, Parameter, {(code, bits): name}) -> bool: torch via DLPack's C API"},
    {"launch", py_launch, METH_VARARGS,
     "launch(fn, ctx, gx, gy, gz, stream, layout, params) -> CUresult"},
    {"pack", py_pack, METH_VARARGS, "pack(layout, params) -> bytes (what launch() passes)"},
    {"use_driver", py_use_driver, METH_O,
     "use_driver(path | None): launch through another driver library (tests: a stub driver)"},
    {"set_scalar_keys", py_set_scalar_keys, METH_VARARGS,
     "set_scalar_keys(int_key, float_key, bool_key): the keys of weak Python scalars"},
    {"set_annotated_scalars", py_set_annotated_scalars, METH_O,
     "set_annotated_scalars({dtype: (int plan, float plan, bool plan)}): Python scalars passed "
     "to annotated parameters"},
    {"ct_launch", (PyCFunction)(void (*)(void))py_ct_launch, METH_FASTCALL,
     "ct_launch(plan, kernel, stream, grid, args) -> True | None: ct.launch from its memos"},
    {"set_ct_fallback", py_set_ct_fallback, METH_O,
     "set_ct_fallback(fn) -> ct.launch in C (a builtin named launch), which calls fn (ct.launch's "
     "Python path) when it cannot replay"},
    {"stats", py_stats, METH_NOARGS,
     "stats() -> {'launches': n, 'fallbacks': {reason: count}}"},
    {"reset_stats", py_reset_stats, METH_NOARGS, "reset_stats(): zero the counters"},
    {"fallback_reasons", py_fallback_reasons, METH_NOARGS,
     "fallback_reasons() -> every reason stats() may count"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native",
                                       "tilejit's launch hot path in C", -1, module_methods};

typedef struct { PyObject **var; const char *s; } Name;

static int intern_names(void) {
    const Name names[] = {
        {&S_acquire, "_acquire"}, {&S_key, "key"}, {&S_params, "params"},
        {&S_storage, "storage"}, {&S_writable, "writable"}, {&S_extent, "extent"},
        {&S_prepare, "prepare"}, {&S_finish, "finish"}, {&S_grid, "grid"}, {&S_use, "use"},
        {&S_native, "_native"}, {&S_launch, "launch"}, {&S_what, "pass to a kernel"},
        {&S_name, "name"}, {&S_ptr, "ptr"}, {&S_wait_raw, "wait_raw"},
        {&S_get_device, "get_device"}, {&S_is_neg, "is_neg"}, {&S_dtype, "dtype"},
        {&S_data_ptr, "data_ptr"}, {&S_shape, "shape"}, {&S_stride, "stride"},
        {&S_kind_tensor, "tensor"}, {&S_kind_partition, "partition"}, {&S_sealed, "sealed"},
        {&S_data, "data"}, {&S_device_id, "device_id"}, {&S_strides, "strides"},
        {&S_ndim, "ndim"}, {&S_check_globals, "check_globals"},
        {&S_synchronize, "synchronize"}, {&S_out_of_range, "scalar_out_of_range"},
        {&S_raise_launch_error, "raise_launch_error"}, {&S_cuda_stream, "cuda_stream"},
        {&S_device_index, "device_index"}, {&S_is_cpu, "is_cpu"},
        {&S_ct_plan, "_ct_plan"}, {&S_bindings, "_bindings"}, {&S_alias_ok, "alias_ok"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(*names[i].var = PyUnicode_InternFromString(names[i].s))) return -1;
    return 0;
}

static int add_type(PyObject *m, const char *name, PyTypeObject *tp) {
    if (PyType_Ready(tp) < 0) return -1;
    Py_INCREF(tp);
    if (PyModule_AddObject(m, name, (PyObject *)tp) < 0) {
        Py_DECREF(tp);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__native(void) {
    if (intern_names() < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    if (add_type(m, "Launcher", &LauncherType) < 0 || add_type(m, "Prepared", &PreparedType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
