/* Classification of one launch argument (runtime/argspec.py: classify is the definition). C
 * reads what Python recorded: a tensor's or partition's sealed ArgInfo (`fast`, ArgInfo.seal),
 * keys from the memo, the keys of Python scalars (set_scalar_keys, from tilejit/scalars.py);
 * anything else is classified by calling argspec.classify. Returns 1 (classified), 0 (the launch
 * goes back to Python: counted by reason) or -1 (error set). */
#include "native.h"
#include <math.h>

void clear_args(Arg *a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(a[i].params); Py_XDECREF(a[i].storage); Py_XDECREF(a[i].info);
        Py_XDECREF(a[i].grid); Py_XDECREF(a[i].hold);
    }
}

static void reset_arg(Arg *a) {
    clear_args(a, 1);
    memset(a, 0, sizeof(Arg));
}

/* an attribute of `o` is None: 1, not None: 0, error: -1 */
static int attr_is_none(PyObject *o, PyObject *name) {
    PyObject *x = PyObject_GetAttr(o, name);
    if (!x) return -1;
    int r = x == Py_None;
    Py_DECREF(x);
    return r;
}

/* Fill `a` from an ArgInfo object (any of argspec's info classes). 1, 0, -1. */
static int from_info(Arg *a, PyObject *info) {
    int r = attr_is_none(info, S_prepare);
    if (r == 1) r = attr_is_none(info, S_finish);
    if (r != 1) return r < 0 ? -1 : give_up(R_HOOKS);
    a->info = info; Py_INCREF(info);
    PyObject *key = PyObject_GetAttr(info, S_key);
    if (!key) return -1;
    a->key = key; Py_DECREF(key); /* kept alive by info */
    PyObject *st = (a->params = PyObject_GetAttr(info, S_params)) ?
                   PyObject_GetAttr(info, S_storage) : NULL;
    if (!st) return -1;
    if (st == Py_None) Py_DECREF(st); else a->storage = st;
    if (!PyTuple_Check(a->params)) return give_up(R_HOOKS);
    PyObject *w = PyObject_GetAttr(info, S_writable);
    if (!w) return -1;
    a->writable = PyObject_IsTrue(w);
    Py_DECREF(w);
    PyObject *ext = PyObject_GetAttr(info, S_extent);
    if (!ext) return -1;
    if (ext == Py_None) {
        a->scalar = 1;
    } else if (PyTuple_Check(ext) && PyTuple_GET_SIZE(ext) == 2) {
        a->start = PyLong_AsLongLong(PyTuple_GET_ITEM(ext, 0));
        a->end = PyLong_AsLongLong(PyTuple_GET_ITEM(ext, 1));
    } else {
        r = give_up(R_HOOKS);       /* extent not known yet */
    }
    Py_DECREF(ext);
    return PyErr_Occurred() ? -1 : r == 0 ? 0 : 1;
}

/* Fill `a` from a sealed info's `fast` tuple (argspec.ArgInfo.seal): 1 ok, 0 not sealed, -1. */
static int from_sealed(Arg *a, PyObject *info) {
    PyObject *f;
    if (Py_TYPE(info) != T_arginfo || !(f = SLOT(info, O.i_sealed))) return 0;
    if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 7 ||
        !PyTuple_Check(PyTuple_GET_ITEM(f, 1)))
        return 0;
    Py_INCREF(f);
    a->hold = f;                                    /* keeps key and the rest alive */
    a->key = PyTuple_GET_ITEM(f, 0);
    a->params = PyTuple_GET_ITEM(f, 1);
    Py_INCREF(a->params);
    PyObject *st = PyTuple_GET_ITEM(f, 2), *g = PyTuple_GET_ITEM(f, 6);
    if (st != Py_None) { Py_INCREF(st); a->storage = st; }
    a->writable = PyTuple_GET_ITEM(f, 3) == Py_True;
    a->start = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 4));
    a->end = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 5));
    if (g != Py_None) { Py_INCREF(g); a->grid = g; }
    return PyErr_Occurred() ? -1 : 1;
}

/* argspec.classify(v, ann, stream) read into `a`. 1, 0, -1. */
static int python_classify(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si) {
    PyObject *info = PyObject_CallFunctionObjArgs(self->classify, v, ann, si->stream, NULL);
    if (!info) return -1;
    int r = from_sealed(a, info);
    if (r == 0) {
        reset_arg(a);
        r = from_info(a, info);
    }
    Py_DECREF(info);
    return r;
}

/* A tilejit tensor of a layout seen before: its key from the memo, no ArgInfo made. 1, 0, -1 */
static int tensor_from_memo(Arg *a, PyObject *t, PyObject *kind, PyObject *extra) {
    PyObject *st = SLOT(t, O.t_storage), *off = SLOT(t, O.t_offset), *shape = SLOT(t, O.t_shape),
             *strides = SLOT(t, O.t_strides), *dt = SLOT(t, O.t_dtype);
    if (!st || !off || !shape || !strides || !dt || Py_TYPE(st) != T_storage ||
        !PyTuple_Check(shape) || !SLOT(st, O.st_ptr))
        return 0;
    PyObject *name = PyObject_GetAttr(dt, S_name);
    if (!name) return -1;
    unsigned long long ptr = PyLong_AsUnsignedLongLong(SLOT(st, O.st_ptr)) +
                             PyLong_AsUnsignedLongLong(off);
    int r = PyErr_Occurred() ? -1 : from_memo(a, kind, name, shape, strides, ptr, extra);
    Py_DECREF(name);
    if (r == 1) { Py_INCREF(st); a->storage = st; }
    return r;
}

static int tensor_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si) {
    if (SLOT(v, O.t_moved) != Py_False) return give_up(R_UNUSABLE);
    PyObject *info = SLOT(v, O.t_info);
    if (!info) return give_up(R_UNUSABLE);
    if (info != Py_None) {
        int r = from_sealed(a, info);
        if (r != 0) return r;
        reset_arg(a);
        return from_info(a, info);
    }
    int r = tensor_from_memo(a, v, S_kind_tensor, Py_False);
    if (r) return r;
    return python_classify(self, a, v, ann, si);     /* makes and caches the info */
}

/* The tensor's shared info for this tile shape (Tensor._pinfo), borrowed, or None. */
static PyObject *shared_partition_info(PyObject *t, PyObject *tile) {
    PyObject *by = SLOT(t, O.t_pinfo);
    if (!by || !PyDict_CheckExact(by)) return Py_None;
    PyObject *info = PyDict_GetItemWithError(by, tile);
    return info ? info : PyErr_Occurred() ? NULL : Py_None;
}

/* An output's classification result `r`: writable, and it must give the grid. */
static int as_output(Arg *a, int r) {
    a->writable = 1;
    if (r == 1 && !a->grid) return give_up(R_GRID);
    return r;
}

static int partition_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si) {
    if (SLOT(v, O.p_consumed) != Py_False) return give_up(R_UNUSABLE);
    if (lease_acquire(v, S_what) < 0) return -1;
    a->partition = v;
    PyObject *info = SLOT(v, O.p_info), *t = SLOT(v, O.p_tensor), *tile = SLOT(v, O.p_tile);
    if (!info || !t || !tile || Py_TYPE(t) != T_tensor) return give_up(R_UNUSABLE);
    if (info == Py_None && !(info = shared_partition_info(t, tile))) return -1;
    int r = info == Py_None ? 0 : from_sealed(a, info);
    if (r == 0) {
        reset_arg(a);
        a->partition = v;
        r = tensor_from_memo(a, t, S_kind_partition, tile);
        if (r == 0) {
            reset_arg(a);
            a->partition = v;
            r = python_classify(self, a, v, ann, si);
        }
    }
    return as_output(a, r);
}

/* tile.partition(array, tile): an output partition of a foreign array; no lease (tilejit does
   not own the memory), the extent check covers aliasing. */
static int foreign_partition_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann,
                                 StreamInfo *si, Py_ssize_t pos) {
    PyObject *inner = SLOT(v, O.fp_value), *tile = SLOT(v, O.fp_tile);
    if (!inner || !tile) return give_up(R_UNUSABLE);
    int r = foreign_arg(self, a, inner, pos, si, S_kind_partition, tile);
    if (r == 0) {
        /* other arrays: classified in Python, which orders the launch after their producer, or
           imports the array for this launch (fp._live, released after it: release_partitions) */
        reset_arg(a);
        a->fpart = v;
        r = python_classify(self, a, v, ann, si);
    }
    return as_output(a, r);
}

/* tile.atomic(x): `x` as a writable tensor (a tilejit tensor of a layout seen before, or a
   torch / CuPy array); anything else (NumPy arrays: copied back) is Python's. 1, 0, -1. */
static int atomic_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si,
                      Py_ssize_t pos) {
    PyObject *inner = SLOT(v, O.a_value);
    if (!inner) return give_up(R_UNUSABLE);
    int r = 0;
    if (Py_TYPE(inner) == T_tensor) {
        if (SLOT(inner, O.t_moved) != Py_False || !SLOT(inner, O.t_info))
            return give_up(R_UNUSABLE);
        r = tensor_from_memo(a, inner, S_kind_tensor, Py_True);
    } else {
        r = foreign_arg(self, a, inner, pos, si, S_kind_tensor, Py_True);
    }
    if (r == 0) {
        reset_arg(a);
        return python_classify(self, a, v, ann, si);
    }
    a->writable = 1;
    return r;
}

/* A Python int/float/bool (exact types): its weak key, the value as is (tilejit/scalars.py). */
static int python_scalar(Arg *a, PyObject *v) {
    PyObject *key;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) return 0;         /* beyond int64: classify raises */
        key = K_int;
    } else if (PyFloat_CheckExact(v)) {
        key = K_float;
    } else if (PyBool_Check(v)) {
        key = K_bool;
    } else {
        return 0;
    }
    a->key = key; a->scalar = 1;
    a->params = PyTuple_Pack(1, v);
    return a->params ? 1 : -1;
}

/* A Python int/float/bool passed to a parameter annotated with a dtype: its plan from
   scalars.annotated_plans (set_annotated_scalars) when the value travels as is (1), else 0
   (argspec.classify converts it, or explains the error). */
static int annotated_scalar(Arg *a, PyObject *v, PyObject *ann) {
    PyTypeObject *tp = Py_TYPE(v);
    int which = tp == &PyLong_Type ? 0 : tp == &PyFloat_Type ? 1 : tp == &PyBool_Type ? 2 : -1;
    if (which < 0 || !A_scalars) return 0;
    PyObject *plans = PyDict_GetItemWithError(A_scalars, ann);
    if (!plans) {
        if (!PyErr_Occurred()) return 0;
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();                  /* an unhashable annotation: Python's to judge */
        return 0;
    }
    PyObject *plan = PyTuple_GET_ITEM(plans, which);
    if (plan == Py_None) return 0;
    PyObject *key = PyTuple_GET_ITEM(plan, 0), *lo = PyTuple_GET_ITEM(plan, 1),
             *hi = PyTuple_GET_ITEM(plan, 2), *param;
    if (which == 0) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) return -1;
        if (overflow || x < PyLong_AsLongLong(lo) || x > PyLong_AsLongLong(hi)) return 0;
        param = v;
        Py_INCREF(param);
    } else if (which == 1) {
        double x = PyFloat_AS_DOUBLE(v);
        if (isfinite(x) && (x < PyFloat_AS_DOUBLE(lo) || x > PyFloat_AS_DOUBLE(hi))) return 0;
        param = v;                      /* the packer rounds it to the slot's precision */
        Py_INCREF(param);
    } else {
        param = PyLong_FromLong(v == Py_True);
        if (!param) return -1;
    }
    a->key = key; a->scalar = 1;        /* the key is kept alive by A_scalars */
    a->params = PyTuple_Pack(1, param);
    Py_DECREF(param);
    return a->params ? 1 : -1;
}

/* Classify args[pos]; 1 ok, 0 give up, -1 error. */
int classify_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si,
                 Py_ssize_t pos) {
    PyTypeObject *tp = Py_TYPE(v);
    if (tp == T_tensor) return tensor_arg(self, a, v, ann, si);
    if (tp == T_partition) return partition_arg(self, a, v, ann, si);
    if (tp == T_fpart) return foreign_partition_arg(self, a, v, ann, si, pos);
    if (tp == T_atomic) return atomic_arg(self, a, v, ann, si, pos);
    if (ann == Py_None) {
        int r = K_int ? python_scalar(a, v) : 0;
        if (r == 0) r = foreign_arg(self, a, v, pos, si, S_kind_tensor, Py_False);
        if (r != 0) return r;
        reset_arg(a);
    } else {        /* an annotation speaks for scalars only (cuTile's annotate them all) */
        int r = annotated_scalar(a, v, ann);
        if (r == 0) r = foreign_arg(self, a, v, pos, si, S_kind_tensor, Py_False);
        if (r != 0) return r;
        reset_arg(a);
    }
    int isop = PyObject_IsInstance(v, self->deviceop_type);
    if (isop) return isop < 0 ? -1 : give_up(R_DEVICEOP);
    /* NumPy arrays are copied in per launch (a prepare hook): the Python path, without a
       classification here that it would redo */
    if (strcmp(tp->tp_name, "numpy.ndarray") == 0) return give_up(R_NUMPY);
    return python_classify(self, a, v, ann, si);
}

/* End the leases the launch's partitions took (`leases`: it launched or failed), and drop the
   arrays imported for foreign partitions (always: a Python retry imports them again). */
void release_partitions(Arg *a, Py_ssize_t n, int leases) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (leases && a[i].partition)
            lease_release(a[i].partition);
        PyObject *live = a[i].fpart ? SLOT(a[i].fpart, O.fp_live) : NULL;
        if (live && live != Py_None) {
            if (Py_TYPE(live) == T_partition) lease_release(live);
            set_slot(a[i].fpart, O.fp_live, Py_None);
        }
    }
}
