/* Argument keys. A key is always computed by Python (runtime/argspec.py: array_key): C looks it
 * up in the shared memo, argspec.array_keys[(kind, dtype name, shape, strides, ptr % 16, extra)]
 * -> (key, slots, span, grid), and on a miss calls argspec.array_key_named, which computes the
 * entry (or raises its usual error) and memoizes it. Per argument position, the last foreign
 * layout seen is kept by value (FCache), so a repeated layout reads no Python object. */
#include "native.h"

static PyObject *memo, *memo_fill;

/* set_memo(argspec.array_keys, argspec.array_key_named) */
PyObject *py_set_memo(PyObject *m, PyObject *args) {
    PyObject *d, *fill;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &d, &fill)) return NULL;
    Py_INCREF(d); Py_INCREF(fill);
    Py_XSETREF(memo, d);
    Py_XSETREF(memo_fill, fill);
    Py_RETURN_NONE;
}

void fc_forget_layout(FCache *c) {
    c->valid = 0;
    Py_CLEAR(c->name); Py_CLEAR(c->extra); Py_CLEAR(c->key); Py_CLEAR(c->grid);
}

void fc_clear(FCache *c) {
    fc_forget_layout(c);
    Py_CLEAR(c->plain); Py_CLEAR(c->cobj); Py_CLEAR(c->cname);
}

PyObject *tuple_of(const int64_t *x, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *o = PyLong_FromLongLong(x[i]);
        if (!o) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* The memo entry of an array (a new reference, computed by Python on a miss); NULL with an
   error set when Python refuses the array (negative strides ...). */
static PyObject *memo_entry(PyObject *kind, PyObject *name, PyObject *shape, PyObject *strides,
                            unsigned long long ptr, PyObject *extra) {
    if (!memo || !memo_fill) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native: set_memo was not called");
        return NULL;
    }
    PyObject *low = PyLong_FromLong((long)(ptr & 15));
    PyObject *mk = low ? PyTuple_Pack(6, kind, name, shape, strides, low, extra) : NULL;
    Py_XDECREF(low);
    if (!mk) return NULL;
    PyObject *e = PyDict_GetItemWithError(memo, mk);
    Py_DECREF(mk);
    if (e) { Py_INCREF(e); return e; }
    if (PyErr_Occurred()) return NULL;
    PyObject *p = PyLong_FromUnsignedLongLong(ptr);
    e = p ? PyObject_CallFunctionObjArgs(memo_fill, kind, name, shape, strides, p, extra, NULL)
          : NULL;
    Py_XDECREF(p);
    if (e && (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4)) {
        Py_DECREF(e);
        PyErr_SetString(PyExc_TypeError, "array_key_named must return (key, slots, span, grid)");
        return NULL;
    }
    return e;
}

/* Key, grid and extent of an array from its memo entry into `a`: 1, or -1. */
static int take_entry(Arg *a, PyObject *e, unsigned long long ptr) {
    long long span = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 2));
    if (span == -1 && PyErr_Occurred()) return -1;
    PyObject *key = PyTuple_GET_ITEM(e, 0), *grid = PyTuple_GET_ITEM(e, 3);
    Py_INCREF(key); a->hold = key; a->key = key;
    if (grid != Py_None) { Py_INCREF(grid); a->grid = grid; }
    a->start = (long long)ptr;
    a->end = (long long)ptr + span;
    return 1;
}

/* An array given by Python shape/strides tuples at `ptr`: key, grid and extent from the memo,
   params as a tuple (ptr, *shape, *strides). 1, 0 (strides do not match), -1. */
int from_memo(Arg *a, PyObject *kind, PyObject *dtype_name, PyObject *shape, PyObject *strides,
              unsigned long long ptr, PyObject *extra) {
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != nd) return 0;
    PyObject *e = memo_entry(kind, dtype_name, shape, strides, ptr, extra);
    if (!e) return -1;
    int r = take_entry(a, e, ptr);
    Py_DECREF(e);
    if (r != 1) return r;
    PyObject *params = PyTuple_New(1 + 2 * nd);
    PyObject *p0 = params ? PyLong_FromUnsignedLongLong(ptr) : NULL;
    if (!p0) { Py_XDECREF(params); return -1; }
    PyTuple_SET_ITEM(params, 0, p0);
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject *x = PyTuple_GET_ITEM(shape, i), *y = PyTuple_GET_ITEM(strides, i);
        Py_INCREF(x); Py_INCREF(y);
        PyTuple_SET_ITEM(params, 1 + i, x);
        PyTuple_SET_ITEM(params, 1 + nd + i, y);
    }
    a->params = params;
    return 1;
}

/* Whether the position's cache holds this layout (by value; the tile shape by equality). */
static int fc_hit(FCache *c, PyObject *kind, PyObject *extra, PyObject *name, int nd,
                  const int64_t *shape, const int64_t *strides, int align) {
    size_t nb = sizeof(int64_t) * (size_t)nd;
    int hit = c && c->valid && c->kind == kind && c->name == name && c->ndim == nd &&
              c->align == align && memcmp(c->shape, shape, nb) == 0 &&
              memcmp(c->strides, strides, nb) == 0;
    if (hit && c->extra != extra)       /* a tile shape spelled by a new tuple: compare values */
        hit = PyObject_RichCompareBool(c->extra, extra, Py_EQ);
    return hit;
}

static void fc_store(FCache *c, PyObject *kind, PyObject *extra, PyObject *name, int nd,
                     const int64_t *shape, const int64_t *strides, int align, PyObject *e) {
    size_t nb = sizeof(int64_t) * (size_t)nd;
    fc_forget_layout(c);
    c->kind = kind; c->ndim = nd; c->align = align;
    memcpy(c->shape, shape, nb); memcpy(c->strides, strides, nb);
    Py_INCREF(name); c->name = name;
    Py_INCREF(extra); c->extra = extra;
    c->key = PyTuple_GET_ITEM(e, 0); Py_INCREF(c->key);
    c->grid = PyTuple_GET_ITEM(e, 3) == Py_None ? NULL : PyTuple_GET_ITEM(e, 3);
    Py_XINCREF(c->grid);
    c->span = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 2));
    c->valid = !PyErr_Occurred();
    PyErr_Clear();
}

/* An array of dtype `name` laid out as `nd` dims of `shape`/`strides` (elements) at `ptr`: its
   key, grid and span from the position's cache `c` (may be NULL) or the memo, into `a`, params
   as C integers. 1, or -1. */
int layout_arg(Arg *a, FCache *c, PyObject *kind, PyObject *extra, PyObject *name, int nd,
               const int64_t *shape, const int64_t *strides, unsigned long long ptr) {
    int align = (int)(ptr & 15);
    int hit = fc_hit(c, kind, extra, name, nd, shape, strides, align);
    if (hit < 0) return -1;
    if (hit) {
        Py_INCREF(c->key); a->hold = c->key; a->key = c->key;
        if (c->grid) { Py_INCREF(c->grid); a->grid = c->grid; }
        a->start = (long long)ptr;
        a->end = (long long)ptr + c->span;
    } else {
        PyObject *shape_t = tuple_of(shape, nd), *strides_t = tuple_of(strides, nd);
        PyObject *e = shape_t && strides_t
                          ? memo_entry(kind, name, shape_t, strides_t, ptr, extra) : NULL;
        Py_XDECREF(shape_t); Py_XDECREF(strides_t);
        if (!e) return -1;
        if (c) fc_store(c, kind, extra, name, nd, shape, strides, align, e);
        int r = take_entry(a, e, ptr);
        Py_DECREF(e);
        if (r != 1) return r;
    }
    size_t nb = sizeof(int64_t) * (size_t)nd;
    a->iv[0] = (int64_t)ptr;
    memcpy(a->iv + 1, shape, nb);
    memcpy(a->iv + 1 + nd, strides, nb);
    a->niv = 1 + 2 * nd;
    return 1;
}
