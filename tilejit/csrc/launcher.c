/* Launcher(fast, anns, DeviceOp, classify, nparams, simple, const_pos).launch(args, stream)
 * -> bool: one plain kernel launch (no constants, no launch options), classification to
 * cuLaunchKernel. Returns False, having launched nothing, whenever Python must take over;
 * native.stats() counts why. Checks C makes (devices, aliasing, grid) only filter: any launch
 * they do not clear goes to Python, which decides and words the error. */
#include "native.h"

static void forget_last(Launcher *self) {
    for (Py_ssize_t i = 0; i < self->last_n; i++) Py_CLEAR(self->last_keys[i]);
    Py_CLEAR(self->last_device);
    Py_CLEAR(self->last_exe);
    self->last_n = 0;
}

/* Whether every global the kernel read is still the object it compiled with (Kernel.watch:
   a flat tuple of (globals dict, name, value) triples). 1 yes, 0 no, -1 error. */
static int globals_unchanged(Launcher *self) {
    PyObject *w = self->watch;
    if (!w) return 1;
    for (Py_ssize_t i = 0; i + 2 < PyTuple_GET_SIZE(w); i += 3) {
        PyObject *v = PyDict_GetItemWithError(PyTuple_GET_ITEM(w, i), PyTuple_GET_ITEM(w, i + 1));
        if (v != PyTuple_GET_ITEM(w, i + 2)) return PyErr_Occurred() ? -1 : 0;
    }
    return 1;
}

/* The stream of a plain launch: a tilejit Stream outside a graph capture. 1, 0. */
static int stream_info(StreamInfo *si, PyObject *stream) {
    if (!layout_ok) return give_up(R_LAYOUT);
    if (Py_TYPE(stream) != T_stream || SLOT(stream, O.s_capture) != Py_None)
        return give_up(R_STREAM);
    si->stream = stream;
    si->device = SLOT(stream, O.s_device);
    PyObject *handle = SLOT(stream, O.s_handle);
    if (!si->device || !handle) return give_up(R_STREAM);
    si->ordinal = device_ordinal(si->device);
    si->handle = PyLong_AsUnsignedLongLong(handle);
    si->torch_checked = si->cupy_checked = 0;
    return PyErr_Occurred() ? -1 : 1;
}

/* The launch grid into g: `explicit_grid` (a 3-tuple given with .grid()) when not NULL, else
   the one every partition implies (all equal); within the limits. 1, 0, -1. */
static int launch_grid(Arg *a, Py_ssize_t n, PyObject *explicit_grid, PyObject **grid,
                       unsigned g[3]) {
    if (explicit_grid) *grid = explicit_grid;
    for (Py_ssize_t i = 0; !explicit_grid && i < n; i++) {
        if (!a[i].grid) continue;
        if (!*grid) { *grid = a[i].grid; continue; }
        int eq = PyObject_RichCompareBool(*grid, a[i].grid, Py_EQ);
        if (eq != 1) return eq < 0 ? -1 : give_up(R_GRID);
    }
    if (!*grid || !PyTuple_Check(*grid) || PyTuple_GET_SIZE(*grid) != 3) return give_up(R_GRID);
    for (int d = 0; d < 3; d++) {
        long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(*grid, d));
        if (x == -1 && PyErr_Occurred()) return -1;
        if (x < 0 || x >= GRID_LIMIT) return give_up(R_GRID);
        g[d] = (unsigned)x;
    }
    return 1;
}

/* Whether the executable accepts arguments i and j sharing memory: its `alias_ok` (a frozenset
   of (i, j) pairs) holds the pair once Python's check_launch_aliasing has judged it harmless for
   this specialization (a ct.kernel storing into at most one of them). 1, 0, -1. */
static int alias_accepted(PyObject *exe, Py_ssize_t i, Py_ssize_t j) {
    PyObject *ok = PyObject_GetAttr(exe, S_alias_ok);
    if (!ok) { PyErr_Clear(); return 0; }
    int r = 0;
    if (PyFrozenSet_Check(ok) && PySet_GET_SIZE(ok)) {
        PyObject *pair = Py_BuildValue("(nn)", i, j);
        r = pair ? PySet_Contains(ok, pair) : -1;
        Py_XDECREF(pair);
    }
    Py_DECREF(ok);
    return r;
}

/* Every array on the launch's device, and no output overlapping another argument unless `exe`
   accepts the pair (anything else that might overlap is left to Python's checks). 1, 0, -1. */
static int devices_and_aliases(Arg *a, Py_ssize_t n, PyObject *device, PyObject *exe) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *st = a[i].storage;
        if (st && (Py_TYPE(st) != T_storage || SLOT(st, O.st_device) != device))
            return give_up(R_DEVICE);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!a[i].writable) continue;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (j == i || a[j].scalar) continue;
            if (a[i].start < a[j].end && a[j].start < a[i].end && a[i].start != a[i].end &&
                a[j].start != a[j].end) {
                int ok = alias_accepted(exe, i, j);
                if (ok != 1) return ok < 0 ? -1 : give_up(R_ALIAS);
            }
        }
    }
    return 1;
}

/* The executable, keyed like Kernel._executables: (argument keys, device, grid axes of extent 1); the
   last lookup is remembered by key identity. A new reference, NULL with an error set, or NULL
   without one (a cache miss: counted). */
static PyObject *find_executable(Launcher *self, Arg *a, Py_ssize_t n, PyObject *device,
                                 const unsigned g[3]) {
    int ones_bits = (g[0] == 1) | ((g[1] == 1) << 1) | ((g[2] == 1) << 2);
    if (self->last_exe && self->last_n == n && self->last_device == device &&
        self->last_ones == ones_bits) {
        Py_ssize_t i = 0;
        while (i < n && self->last_keys[i] == a[i].key) i++;
        if (i == n) { Py_INCREF(self->last_exe); return self->last_exe; }
    }
    PyObject *keys = PyTuple_New(n);
    for (Py_ssize_t i = 0; keys && i < n; i++) {
        Py_INCREF(a[i].key);
        PyTuple_SET_ITEM(keys, i, a[i].key);
    }
    PyObject *lookup = keys ? Py_BuildValue("(OO(OOO))", keys, device, g[0] == 1 ? Py_True :
                                            Py_False, g[1] == 1 ? Py_True : Py_False,
                                            g[2] == 1 ? Py_True : Py_False) : NULL;
    Py_XDECREF(keys);
    PyObject *exe = lookup ? PyDict_GetItemWithError(self->fast, lookup) : NULL; /* borrowed */
    Py_XDECREF(lookup);
    if (!exe) {
        if (!PyErr_Occurred()) give_up(R_CACHE_MISS);
        return NULL;
    }
    if (n <= LAST_MAX) {
        forget_last(self);
        for (Py_ssize_t i = 0; i < n; i++) { Py_INCREF(a[i].key); self->last_keys[i] = a[i].key; }
        Py_INCREF(device); self->last_device = device;
        Py_INCREF(exe); self->last_exe = exe;
        self->last_ones = ones_bits;
        self->last_n = n;
    }
    Py_INCREF(exe);
    return exe;
}

/* Order every storage on the stream (Storage.use). 0, -1. */
static int use_storages(Arg *a, Py_ssize_t n, PyObject *stream) {
    int fast = SLOT(stream, O.s_ephemeral) == Py_False;
    PyObject *epoch = SLOT(stream, O.s_epoch);
    if (!epoch) {
        PyErr_SetString(PyExc_RuntimeError, "the launch's stream is not usable");
        return -1;
    }
    Py_INCREF(epoch);
    int r = 0;
    for (Py_ssize_t i = 0; i < n && r == 0; i++)
        if (a[i].storage) r = use_storage(a[i].storage, stream, fast, epoch);
    Py_DECREF(epoch);
    return r;
}

/* Pack straight from the arguments by exe._native = (function, context, layout, checks) and
   launch. 1, 0 (a value that does not fit its slot: Python explains), -1. */
static int launch_native(PyObject *exe, PyObject *nat, Arg *a, Py_ssize_t n, StreamInfo *si,
                         const unsigned g[3], PyObject *grid) {
    if (!PyTuple_Check(nat) || PyTuple_GET_SIZE(nat) != 4 ||
        !PyBytes_Check(PyTuple_GET_ITEM(nat, 2)) || !PyBytes_Check(PyTuple_GET_ITEM(nat, 3))) {
        PyErr_SetString(PyExc_TypeError, "executable._native must be (fn, ctx, layout, checks)");
        return -1;
    }
    unsigned long long fn = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(nat, 0));
    unsigned long long ctx = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(nat, 1));
    if (PyErr_Occurred()) return -1;
    PyObject *lay = PyTuple_GET_ITEM(nat, 2);
    const char *layout = PyBytes_AS_STRING(lay);
    Py_ssize_t nlayout = PyBytes_GET_SIZE(lay), pos = 0;
    ParamBuf pb;
    pb.size = pb.count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((a[i].niv ? pack_ints(&pb, layout, nlayout, &pos, a[i].iv, a[i].niv)
                      : pack_values(&pb, layout, nlayout, &pos, a[i].params)) < 0) {
            PyErr_Clear();
            return give_up(R_PACK);
        }
    }
    if (pos != nlayout) return give_up(R_PACK);
    if (check_scalars(&pb, PyTuple_GET_ITEM(nat, 3), exe) < 0) return -1;
    CUresult err = do_launch((void *)(uintptr_t)fn, (void *)(uintptr_t)ctx, g,
                             (void *)(uintptr_t)si->handle, &pb);
    return err ? raise_launch_error(exe, err, grid) : 1;
}

/* An executable without a C launch (the simulator): exe.launch(grid, params, stream). */
static int launch_python(PyObject *exe, Arg *a, Py_ssize_t n, StreamInfo *si, PyObject *grid) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        total += a[i].niv ? a[i].niv : PyTuple_GET_SIZE(a[i].params);
    PyObject *params = PyTuple_New(total);
    for (Py_ssize_t i = 0, k = 0; params && i < n; i++) {
        if (a[i].niv) {
            for (int j = 0; j < a[i].niv && params; j++) {
                PyObject *x = PyLong_FromLongLong(a[i].iv[j]);
                if (!x) Py_CLEAR(params); else PyTuple_SET_ITEM(params, k++, x);
            }
            continue;
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(a[i].params); j++) {
            PyObject *x = PyTuple_GET_ITEM(a[i].params, j);
            Py_INCREF(x);
            PyTuple_SET_ITEM(params, k++, x);
        }
    }
    if (!params) return -1;
    PyObject *r = PyObject_CallMethodObjArgs(exe, S_launch, grid, params, si->stream, NULL);
    Py_DECREF(params);
    if (!r) return -1;
    Py_DECREF(r);
    return 1;
}

/* Order, pack and launch on a found executable (an empty grid launches nothing). 1, 0, -1. */
static int launch_on(PyObject *exe, Arg *a, Py_ssize_t n, StreamInfo *si, const unsigned g[3],
                     PyObject *grid) {
    if (use_storages(a, n, si->stream) < 0) return -1;
    if (!(g[0] && g[1] && g[2])) return 1;
    PyObject *nat = PyObject_GetAttr(exe, S_native);
    if (!nat) return -1;
    int r = nat != Py_None ? launch_native(exe, nat, a, n, si, g, grid)
                           : launch_python(exe, a, n, si, grid);
    Py_DECREF(nat);
    return r;
}

/* One plain launch of `args` (a tuple) on `stream` over `grid` (a 3-tuple, or NULL / None: the
   partitions' grid): 1 launched, 0 nothing done (the Python path takes over), -1 error set. */
int run_launch(Launcher *self, PyObject *args, PyObject *stream, PyObject *grid_in) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n != PyTuple_GET_SIZE(self->anns) || n > MAX_ARGS) return give_up(R_ARITY);
    StreamInfo si;
    int ok = stream_info(&si, stream);
    if (ok != 1) return ok;
    ok = globals_unchanged(self);
    if (ok != 1) return ok < 0 ? -1 : give_up(R_GLOBALS);
    Arg a[MAX_ARGS];
    memset(a, 0, sizeof(Arg) * (size_t)n);
    PyObject *grid = NULL, *exe = NULL;       /* grid: borrowed from an argument */
    unsigned g[3] = {0, 0, 0};
    for (Py_ssize_t i = 0; i < n && ok == 1; i++)
        ok = classify_arg(self, &a[i], PyTuple_GET_ITEM(args, i),
                          PyTuple_GET_ITEM(self->anns, i), &si, i);
    if (ok == 1) ok = launch_grid(a, n, grid_in == Py_None ? NULL : grid_in, &grid, g);
    if (ok == 1 && !(exe = find_executable(self, a, n, si.device, g)))
        ok = PyErr_Occurred() ? -1 : 0;
    if (ok == 1) ok = devices_and_aliases(a, n, si.device, exe);
    if (ok == 1) ok = launch_on(exe, a, n, &si, g, grid);
    Py_XDECREF(exe);
    release_partitions(a, n, ok != 0);  /* the launch consumed them (or failed) */
    clear_args(a, n);
    if (ok == 1) { self->launches++; self->total++; c_launches++; }
    return ok;
}

/* --- the Launcher type ---------------------------------------------------------------------- */
static void Launcher_dealloc(Launcher *self) {
    Py_XDECREF(self->fast); Py_XDECREF(self->anns); Py_XDECREF(self->deviceop_type);
    Py_XDECREF(self->classify); Py_XDECREF(self->watch);
    forget_last(self);
    for (int i = 0; i < FC_MAX; i++) fc_clear(&self->fc[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* cpos/rpos from `const_pos` (increasing positions of the tile.Constant parameters among
   nparams; the nrt others are the runtime ones); none given or too many parameters: nconst -1.
   0, -1. */
static int set_positions(Launcher *self, PyObject *const_pos, Py_ssize_t nrt) {
    self->nconst = -1;
    if (!const_pos || self->nparams > MAX_ARGS) return 0;
    Py_ssize_t nc = PyTuple_GET_SIZE(const_pos), c = 0, r = 0;
    for (Py_ssize_t i = 0; i < self->nparams; i++) {
        Py_ssize_t p = c < nc ? PyLong_AsSsize_t(PyTuple_GET_ITEM(const_pos, c)) : -1;
        if (p == -1 && PyErr_Occurred()) return -1;
        if (p == i) self->cpos[c++] = (unsigned char)i;
        else self->rpos[r++] = (unsigned char)i;
    }
    if (c != nc || r != nrt) {
        PyErr_SetString(PyExc_ValueError, "const_pos: increasing positions of the parameters "
                        "that anns leaves out");
        return -1;
    }
    self->nconst = nc;
    return 0;
}

/* Launcher(fast, anns, DeviceOp, classify[, nparams, simple, const_pos]) */
static int Launcher_init(Launcher *self, PyObject *args, PyObject *kw) {
    PyObject *fast, *anns, *dt, *cl, *const_pos = NULL;
    Py_ssize_t nparams = -1;
    int simple = 0;
    if (!PyArg_ParseTuple(args, "O!O!OO|npO!", &PyDict_Type, &fast, &PyTuple_Type, &anns, &dt,
                          &cl, &nparams, &simple, &PyTuple_Type, &const_pos))
        return -1;
    if (self->fast) {
        PyErr_SetString(PyExc_TypeError, "Launcher is initialized once");
        return -1;
    }
    self->nparams = nparams < 0 ? PyTuple_GET_SIZE(anns) : nparams;
    self->simple = simple;
    if (set_positions(self, const_pos, PyTuple_GET_SIZE(anns)) < 0) return -1;
    Py_INCREF(fast); Py_INCREF(anns); Py_INCREF(dt); Py_INCREF(cl);
    self->fast = fast; self->anns = anns; self->deviceop_type = dt; self->classify = cl;
    return 0;
}

static PyObject *Launcher_launch(Launcher *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3 || !PyTuple_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "launch(args: tuple, stream[, grid])");
        return NULL;
    }
    int ok = run_launch(self, argv[0], argv[1], nargs == 3 ? argv[2] : NULL);
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}

/* take_launches() -> int: launches since the last call (Kernel.stats folds them in) */
static PyObject *Launcher_take_launches(Launcher *self, PyObject *noargs) {
    unsigned long long n = self->launches;
    self->launches = 0;
    return PyLong_FromUnsignedLongLong(n);
}

/* forget(): drop the remembered lookup (Kernel._executables was cleared) */
static PyObject *Launcher_forget(Launcher *self, PyObject *noargs) {
    forget_last(self);
    Py_RETURN_NONE;
}

/* set_watch(tuple or None): the globals to check by identity before each launch */
static PyObject *Launcher_set_watch(Launcher *self, PyObject *watch) {
    if (watch != Py_None && !PyTuple_Check(watch)) {
        PyErr_SetString(PyExc_TypeError, "set_watch takes a tuple of (dict, name, value) triples");
        return NULL;
    }
    Py_XSETREF(self->watch, watch == Py_None ? NULL : (Py_INCREF(watch), watch));
    Py_RETURN_NONE;
}

/* One classified argument as Python sees an ArgInfo (tests compare them field by field). */
static PyObject *describe_arg(Arg *a) {
    PyObject *params = a->niv ? tuple_of(a->iv, a->niv) : (Py_INCREF(a->params), a->params);
    if (!params) return NULL;
    PyObject *extent = a->scalar ? (Py_INCREF(Py_None), Py_None)
                                 : Py_BuildValue("(LL)", a->start, a->end);
    return Py_BuildValue("{sOsNsOsOsNsO}", "key", a->key, "params", params, "storage",
                         a->storage ? a->storage : Py_None, "writable",
                         a->writable ? Py_True : Py_False, "extent", extent, "grid",
                         a->grid ? a->grid : Py_None);
}

/* describe(args, stream) -> [dict per argument] or None (a launch Python would take): the C
   classification without launching; leases a partition took here are given back */
static PyObject *Launcher_describe(Launcher *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(argv[0]) ||
        PyTuple_GET_SIZE(argv[0]) != PyTuple_GET_SIZE(self->anns) ||
        PyTuple_GET_SIZE(argv[0]) > MAX_ARGS) {
        PyErr_SetString(PyExc_TypeError, "describe(args: tuple of the kernel's arity, stream)");
        return NULL;
    }
    PyObject *args = argv[0];
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    StreamInfo si;
    int ok = stream_info(&si, argv[1]);
    Arg a[MAX_ARGS];
    memset(a, 0, sizeof(Arg) * (size_t)n);
    int was_leased[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(args, i);
        was_leased[i] = Py_TYPE(v) == T_partition && SLOT(v, O.p_leased) == Py_True;
    }
    for (Py_ssize_t i = 0; i < n && ok == 1; i++)
        ok = classify_arg(self, &a[i], PyTuple_GET_ITEM(args, i),
                          PyTuple_GET_ITEM(self->anns, i), &si, i);
    PyObject *out = ok == 1 ? PyList_New(n) : NULL;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *d = describe_arg(&a[i]);
        if (!d) Py_CLEAR(out); else PyList_SET_ITEM(out, i, d);
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i].partition && was_leased[i]) a[i].partition = NULL;
    release_partitions(a, n, 1);
    clear_args(a, n);
    if (ok == 0) Py_RETURN_NONE;
    return out;
}

static PyMemberDef Launcher_members[] = {
    {"total", T_ULONGLONG, offsetof(Launcher, total), READONLY, "launches made here, ever"},
    {NULL, 0, 0, 0, NULL}};

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL,
     "launch(args, stream[, grid]) -> bool: launch if the fast path applies (tilejit/native.py)"},
    {"describe", (PyCFunction)(void (*)(void))Launcher_describe, METH_FASTCALL,
     "describe(args, stream) -> list of dicts | None: the C classification, nothing launched"},
    {"take_launches", (PyCFunction)Launcher_take_launches, METH_NOARGS,
     "take_launches() -> int: launches made here since the last call"},
    {"forget", (PyCFunction)Launcher_forget, METH_NOARGS,
     "forget(): drop the remembered executable lookup"},
    {"set_watch", (PyCFunction)Launcher_set_watch, METH_O,
     "set_watch(triples): globals (dict, name, value) checked by identity before each launch"},
    {NULL, NULL, 0, NULL}};

PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tilejit._native.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A kernel's plain launches in C (see tilejit/native.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_methods = Launcher_methods,
    .tp_members = Launcher_members,
};
