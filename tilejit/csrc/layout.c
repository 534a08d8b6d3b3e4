/* The runtime's classes, read by __slots__ offset. Every class the hot path touches keeps its
 * state in __slots__; set_layout() records where each slot lives, so a launch reads them with a
 * load instead of an attribute lookup (most of a launch's host time otherwise). An unset slot
 * reads NULL: the caller gives the launch to Python, which raises the usual error. Without a
 * layout (a class changed shape) every C path falls back to Python.
 *
 * Objects C makes (KernelLaunch, Partition, ForeignPartition) are clones of prototypes the one
 * Python constructor of each class made: C sets only what the call gives. */
#include "native.h"

PyTypeObject *T_tensor, *T_partition, *T_storage, *T_freestate, *T_stream, *T_arginfo,
    *T_klaunch, *T_fpart, *T_future, *T_atomic;
struct Offsets O;
int layout_ok;
PyObject *P_launch, *P_partition, *P_fpart;

/* The offset of the __slots__ member `name` of `tp` or a base (-1 if it is not a writable object
   slot). */
static Py_ssize_t slot_offset(PyTypeObject *tp, const char *name) {
    PyObject *d = PyObject_GetAttrString((PyObject *)tp, name);
    if (!d) { PyErr_Clear(); return -1; }
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) off = m->offset;
    }
    Py_DECREF(d);
    return off;
}

void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject **p = (PyObject **)((char *)o + off);
    Py_INCREF(v);
    Py_XSETREF(*p, v);
}

/* A new object of `proto`'s type with every __slots__ value of `proto` (its class and bases). */
PyObject *clone_proto(PyObject *proto) {
    PyTypeObject *tp = Py_TYPE(proto);
    PyObject *o = tp->tp_alloc(tp, 0);
    if (!o) return NULL;
    for (PyTypeObject *t = tp; t; t = t->tp_base) {
        for (PyMemberDef *m = t->tp_members; m && m->name; m++) {
            if (m->type != T_OBJECT_EX || (m->flags & READONLY)) continue;
            PyObject *v = SLOT(proto, m->offset);
            if (v) set_slot(o, m->offset, v);
        }
    }
    return o;
}

typedef struct { PyTypeObject **tp; Py_ssize_t *off; const char *name; } SlotSpec;

static const SlotSpec specs[] = {
    {&T_tensor, &O.t_moved, "_moved"}, {&T_tensor, &O.t_info, "_info"},
    {&T_tensor, &O.t_storage, "_storage"}, {&T_tensor, &O.t_shape, "_shape"},
    {&T_tensor, &O.t_strides, "_strides"}, {&T_tensor, &O.t_offset, "_offset_bytes"},
    {&T_tensor, &O.t_dtype, "_dtype"}, {&T_tensor, &O.t_extent, "_extent"},
    {&T_tensor, &O.t_share, "_share_count"}, {&T_tensor, &O.t_pinfo, "_pinfo"},
    {&T_partition, &O.p_tensor, "_tensor"}, {&T_partition, &O.p_tile, "tile_shape"},
    {&T_partition, &O.p_owned, "owned"}, {&T_partition, &O.p_leased, "_leased"},
    {&T_partition, &O.p_consumed, "_consumed"}, {&T_partition, &O.p_info, "_info"},
    {&T_partition, &O.p_grid, "_grid"}, {&T_partition, &O.p_extent, "_extent"},
    {&T_partition, &O.p_ref, "_ref"},
    {&T_storage, &O.st_ptr, "ptr"}, {&T_storage, &O.st_device, "device"},
    {&T_storage, &O.st_h, "_h"}, {&T_storage, &O.st_leases, "leases"},
    {&T_freestate, &O.h_stream, "stream"}, {&T_freestate, &O.h_epoch, "epoch"},
    {&T_stream, &O.s_device, "device"}, {&T_stream, &O.s_handle, "handle"},
    {&T_stream, &O.s_cu, "_cu"}, {&T_stream, &O.s_epoch, "_epoch"},
    {&T_stream, &O.s_ephemeral, "_ephemeral"}, {&T_stream, &O.s_capture, "_capture"},
    {&T_arginfo, &O.i_sealed, "sealed"},
    {&T_klaunch, &O.k_kernel, "kernel"}, {&T_klaunch, &O.k_args, "args"},
    {&T_klaunch, &O.k_arity, "arity"}, {&T_klaunch, &O.k_simple, "_simple"},
    {&T_klaunch, &O.k_grid, "_grid"}, {&T_klaunch, &O.k_generics, "_generics"},
    {&T_klaunch, &O.k_const_grid, "_const_grid"}, {&T_klaunch, &O.k_options, "_options"},
    {&T_klaunch, &O.k_values, "_values"},
    {&T_klaunch, &O.k_ran, "_ran"},     /* deviceops/deviceop.py RAN_SLOT: the "never run" warning */
    {&T_fpart, &O.fp_value, "value"}, {&T_fpart, &O.fp_tile, "tile_shape"},
    {&T_fpart, &O.fp_live, "_live"},
    {&T_future, &O.f_out, "_out"}, {&T_future, &O.f_stream, "stream"},
    {&T_future, &O.f_done, "_done"},
    {&T_atomic, &O.a_value, "value"},
};

/* set_layout(Tensor, Partition, Storage, _FreeState, Stream, ArgInfo, KernelLaunch,
              ForeignPartition, DeviceFuture, atomic, prototypes) -> bool; `prototypes`: a
   KernelLaunch, a Partition and a ForeignPartition made by their Python constructors */
PyObject *py_set_layout(PyObject *m, PyObject *args) {
    PyObject *t[10], *protos;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!O!O!", &PyType_Type, &t[0], &PyType_Type,
                          &t[1], &PyType_Type, &t[2], &PyType_Type, &t[3], &PyType_Type, &t[4],
                          &PyType_Type, &t[5], &PyType_Type, &t[6], &PyType_Type, &t[7],
                          &PyType_Type, &t[8], &PyType_Type, &t[9], &PyTuple_Type, &protos))
        return NULL;
    PyTypeObject **types[10] = {&T_tensor, &T_partition, &T_storage, &T_freestate, &T_stream,
                                &T_arginfo, &T_klaunch, &T_fpart, &T_future, &T_atomic};
    layout_ok = 0;
    for (int i = 0; i < 10; i++) {
        Py_INCREF(t[i]);
        Py_XSETREF(*types[i], (PyTypeObject *)t[i]);
    }
    PyObject **pp[3] = {&P_launch, &P_partition, &P_fpart};
    PyTypeObject *pt[3] = {T_klaunch, T_partition, T_fpart};
    if (PyTuple_GET_SIZE(protos) != 3) Py_RETURN_FALSE;
    for (int i = 0; i < 3; i++) {
        PyObject *p = PyTuple_GET_ITEM(protos, i);
        if (Py_TYPE(p) != pt[i]) Py_RETURN_FALSE;
        Py_INCREF(p);
        Py_XSETREF(*pp[i], p);
    }
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        *specs[i].off = slot_offset(*specs[i].tp, specs[i].name);
        if (*specs[i].off < 0) Py_RETURN_FALSE;
    }
    layout_ok = 1;
    Py_RETURN_TRUE;
}

/* Device.ordinal of the last device asked (Device objects never change ordinal) */
static PyObject *last_ordinal_dev;
static long last_ordinal;

long device_ordinal(PyObject *dev) {
    if (dev == last_ordinal_dev) return last_ordinal;
    PyObject *o = PyObject_GetAttrString(dev, "ordinal");
    if (!o) return -1;
    long v = PyLong_AsLong(o);
    Py_DECREF(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    Py_INCREF(dev);
    Py_XSETREF(last_ordinal_dev, dev);
    last_ordinal = v;
    return v;
}

/* --- leases (runtime/partition.py: Partition._acquire / _release) ------------------------- */
/* The storage of partition `p`'s tensor, or NULL (borrowed) */
static PyObject *partition_storage(PyObject *p) {
    PyObject *t = SLOT(p, O.p_tensor);
    PyObject *st = t && Py_TYPE(t) == T_tensor ? SLOT(t, O.t_storage) : NULL;
    return st && Py_TYPE(st) == T_storage ? st : NULL;
}

/* Whether `p` can take its lease without Python: no other live leased partition on a short
   lease list (anything else, a possible overlap included, is Partition._acquire's to decide).
   Appends the lease when so: 1 taken, 0 not decided here, -1 error. */
static int lease_inline(PyObject *p, PyObject *st, PyObject *ref) {
    PyObject *leases = SLOT(st, O.st_leases);
    if (!leases) return 0;
    if (leases == Py_None) {
        PyObject *l = PyList_New(1);
        if (!l) return -1;
        Py_INCREF(ref);
        PyList_SET_ITEM(l, 0, ref);
        set_slot(st, O.st_leases, l);
        Py_DECREF(l);
        return 1;
    }
    if (!PyList_CheckExact(leases) || PyList_GET_SIZE(leases) > 8) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leases); i++) {
        PyObject *w = PyList_GET_ITEM(leases, i);
        PyObject *q = PyWeakref_Check(w) ? PyWeakref_GetObject(w) : NULL;
        if (!q || (q != Py_None && q != p && (Py_TYPE(q) != T_partition ||
                                              SLOT(q, O.p_leased) != Py_False)))
            return 0;
    }
    return PyList_Append(leases, ref) < 0 ? -1 : 1;
}

/* Partition._acquire with its common case inline (`p` a Partition). 1 ok, -1 error. */
int lease_acquire(PyObject *p, PyObject *what) {
    PyObject *leased = SLOT(p, O.p_leased);
    if (leased == Py_True) return 1;
    PyObject *st = partition_storage(p), *ref = SLOT(p, O.p_ref);
    int r = leased == Py_False && st && ref ? lease_inline(p, st, ref) : 0;
    if (r < 0) return -1;
    if (r == 0) {
        PyObject *x = PyObject_CallMethodOneArg(p, S_acquire, what);
        if (!x) return -1;
        Py_DECREF(x);
        return 1;
    }
    set_slot(p, O.p_leased, Py_True);
    return 1;
}

/* Partition._release inline (`p` a Partition); never fails. */
void lease_release(PyObject *p) {
    if (SLOT(p, O.p_leased) != Py_True) return;
    set_slot(p, O.p_leased, Py_False);
    PyObject *st = partition_storage(p), *ref = SLOT(p, O.p_ref);
    PyObject *leases = st ? SLOT(st, O.st_leases) : NULL;
    if (!ref || !leases || !PyList_CheckExact(leases)) return;
    for (Py_ssize_t i = PyList_GET_SIZE(leases) - 1; i >= 0; i--) {
        if (PyList_GET_ITEM(leases, i) == ref) {
            if (PyList_SetSlice(leases, i, i + 1, NULL) < 0) PyErr_Clear();
            return;
        }
    }
}

/* Storage.use(stream) with its common case inline (memory.use_all); -1 on error. */
int use_storage(PyObject *st, PyObject *stream, int fast, PyObject *epoch) {
    if (fast && Py_TYPE(st) == T_storage) {
        PyObject *h = SLOT(st, O.st_h);
        if (h && Py_TYPE(h) == T_freestate && SLOT(h, O.h_stream) == stream) {
            set_slot(h, O.h_epoch, epoch);
            return 0;
        }
    }
    PyObject *r = PyObject_CallMethodOneArg(st, S_use, stream);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* --- why launches went back to Python ---------------------------------------------------- */
const char *const reason_names[R_COUNT] = {
    [R_LAYOUT] = "runtime classes changed shape (set_layout failed)",
    [R_STREAM] = "not a tilejit Stream, or a graph capture",
    [R_NOT_PLAIN] = "constants, generics, compile options or a grid baked into the kernel",
    [R_REENTRANT] = "launched inside a running op",
    [R_ARITY] = "argument count",
    [R_GLOBALS] = "a global the kernel reads changed",
    [R_UNUSABLE] = "a moved, consumed or unusable tensor or partition",
    [R_NUMPY] = "a NumPy array (copied in per launch)",
    [R_DEVICEOP] = "a lazy (DeviceOp) argument",
    [R_HOOKS] = "an argument with copy-in/copy-back hooks",
    [R_FOREIGN] = "a foreign array the C readers do not describe",
    [R_CACHE_MISS] = "no compiled specialization for these keys yet",
    [R_GRID] = "no grid from the partitions, different grids, or one beyond the limits",
    [R_DEVICE] = "an array on another device",
    [R_ALIAS] = "an output that may overlap another argument",
    [R_PACK] = "a value that does not fit its slot",
    [R_PREPARED] = "a prepared launch C could not pack (PreparedLaunch.launch runs in Python)",
};
unsigned long long fallbacks[R_COUNT], c_launches;

int give_up(int reason) {
    fallbacks[reason]++;
    return 0;
}

/* stats() -> {"launches": n, "fallbacks": {reason: count}} since the last reset_stats() */
PyObject *py_stats(PyObject *m, PyObject *noargs) {
    PyObject *fb = PyDict_New();
    for (int i = 0; fb && i < R_COUNT; i++) {
        if (!fallbacks[i]) continue;
        PyObject *n = PyLong_FromUnsignedLongLong(fallbacks[i]);
        if (!n || PyDict_SetItemString(fb, reason_names[i], n) < 0) Py_CLEAR(fb);
        Py_XDECREF(n);
    }
    if (!fb) return NULL;
    PyObject *r = Py_BuildValue("{sKsN}", "launches", c_launches, "fallbacks", fb);
    return r;
}

PyObject *py_reset_stats(PyObject *m, PyObject *noargs) {
    memset(fallbacks, 0, sizeof(fallbacks));
    c_launches = 0;
    Py_RETURN_NONE;
}
