/* ct.launch(stream, grid, kernel, args) in C (tilejit/cutile/_kernel.py: `launch` and
 * `Kernel._plain_launch` are the definition). Python records a plan per kernel after its first
 * launch (Kernel._launch_plan); this replays it when every memo hits: the stream from
 * cutile.streams, the kernel bound to the constants' values from the kernel's _bound memo
 * (same types, floats by bits), the written arrays wrapped in tile.atomic by the kind their type
 * has in cutile.array_types, then the lazy call and submit_on of the C path. Anything else
 * returns None before doing anything, and Python's path runs (and fills the memos). */
#include "native.h"

/* Whether the constants' values as passed, `x`, are those a bound kernel was made for, `y`
   (the memo found them equal, but 1 == True == 1.0 and 0.0 == -0.0): same types, floats by
   bits, tuples item by item; other types only when they are exact ints or strings or the same
   object (Python's path judges the rest). Also the kernel call's memo check (prepared.c). */
int same_constant(PyObject *x, PyObject *y) {
    if (x == y) return 1;
    if (Py_TYPE(x) != Py_TYPE(y)) return 0;
    if (PyFloat_Check(x)) {
        double a = PyFloat_AS_DOUBLE(x), b = PyFloat_AS_DOUBLE(y);
        return memcmp(&a, &b, sizeof a) == 0;
    }
    if (PyTuple_CheckExact(x)) {
        Py_ssize_t n = PyTuple_GET_SIZE(x);
        if (n != PyTuple_GET_SIZE(y)) return 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (!same_constant(PyTuple_GET_ITEM(x, i), PyTuple_GET_ITEM(y, i))) return 0;
        return 1;
    }
    return PyLong_CheckExact(x) || PyUnicode_CheckExact(x);
}

/* getattr(o, name, None) as a new reference; NULL (error cleared) on any other error */
static PyObject *attr_or_none(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v) return v;
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* The tilejit Stream of `obj` (a tile.Stream, a torch stream or an int handle) from
   cutile.streams (borrowed), or NULL (no error set). Python never memoizes the default streams
   0-2 as (handle, None): they are the current device's, which C does not know, so they miss. */
static PyObject *memo_stream(PyObject *obj, PyObject *streams) {
    if (Py_TYPE(obj) == T_stream) return obj;
    PyObject *h, *dev;
    if (PyLong_CheckExact(obj)) {       /* an int handle: keyed (handle, None) */
        h = obj; dev = Py_None;
        Py_INCREF(h); Py_INCREF(dev);
    } else {                            /* torch: (cuda_stream, device_index) */
        h = attr_or_none(obj, S_cuda_stream);
        if (!PyLong_CheckExact(h)) { Py_DECREF(h); return NULL; }
        dev = attr_or_none(obj, S_device_index);
    }
    PyObject *key = PyTuple_Pack(2, h, dev), *s = NULL;
    Py_DECREF(h); Py_DECREF(dev);
    if (key) s = PyDict_GetItemWithError(streams, key);
    Py_XDECREF(key);
    PyErr_Clear();
    return s;
}

/* `grid` as a 3-tuple (a new reference) when it is an int or a tuple of 1 to 3 ints in
   [0, limit) (argspec.normalize_grid's common case), else NULL (Python normalizes or explains) */
static PyObject *plain_grid(PyObject *grid, long long limit) {
    PyObject *g[3] = {NULL, NULL, NULL}, *one = NULL;
    Py_ssize_t n = 1;
    if (PyLong_CheckExact(grid)) {
        g[0] = grid;
    } else if (PyTuple_CheckExact(grid) && (n = PyTuple_GET_SIZE(grid)) >= 1 && n <= 3) {
        for (Py_ssize_t i = 0; i < n; i++) g[i] = PyTuple_GET_ITEM(grid, i);
    } else {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyLong_CheckExact(g[i])) return NULL;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(g[i], &overflow);
        if (overflow || v < 0 || v >= limit) { PyErr_Clear(); return NULL; }
    }
    if (n == 3 && PyTuple_CheckExact(grid)) {
        Py_INCREF(grid);
        return grid;
    }
    if (!(one = PyLong_FromLong(1))) { PyErr_Clear(); return NULL; }
    for (Py_ssize_t i = n; i < 3; i++) g[i] = one;
    PyObject *t = PyTuple_Pack(3, g[0], g[1], g[2]);
    Py_DECREF(one);
    if (!t) PyErr_Clear();
    return t;
}

/* The kernel bound to the constants' values in `args` (borrowed), or NULL (no error set). */
static PyObject *memo_bound(PyObject *bound, PyObject *const_idx, PyObject *args) {
    Py_ssize_t nc = PyTuple_GET_SIZE(const_idx);
    PyObject *raw;
    if (nc == 1) {
        raw = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(const_idx, 0)));
        Py_INCREF(raw);
    } else if (!(raw = PyTuple_New(nc))) {
        PyErr_Clear();
        return NULL;
    } else {
        for (Py_ssize_t i = 0; i < nc; i++) {
            PyObject *v = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(const_idx, i)));
            Py_INCREF(v);
            PyTuple_SET_ITEM(raw, i, v);
        }
    }
    PyObject *hit = PyDict_GetItemWithError(bound, raw), *b = NULL;
    PyErr_Clear();                      /* unhashable: Python's path explains */
    if (hit && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) >= 2 &&
        same_constant(raw, PyTuple_GET_ITEM(hit, 1)))
        b = PyTuple_GET_ITEM(hit, 0);
    Py_DECREF(raw);
    return b;
}

/* The runtime values of `args` (a new tuple), the written arrays wrapped in tile.atomic, or
   NULL (no error set: Python's path) */
static PyObject *runtime_values(PyObject *args, PyObject *rt_idx, PyObject *written,
                                PyObject *kinds) {
    Py_ssize_t n = PyTuple_GET_SIZE(rt_idx);
    PyObject *values = PyTuple_New(n);
    if (!values) { PyErr_Clear(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(rt_idx, i)));
        if (PyTuple_GET_ITEM(written, i) == Py_True) {
            PyObject *kind = PyDict_GetItemWithError(kinds, (PyObject *)Py_TYPE(v));
            long k = kind && PyLong_CheckExact(kind) ? PyLong_AsLong(kind) : -1;
            if (k == 2) {               /* it may hold host memory: a CPU tensor is Python's */
                PyObject *cpu = PyObject_GetAttr(v, S_is_cpu);
                k = cpu == Py_False ? 1 : -1;
                Py_XDECREF(cpu);
            }
            if (k < 0 || k > 1) {
                PyErr_Clear();
                Py_DECREF(values);
                return NULL;
            }
            if (k == 1) {               /* tile.atomic(v), its checks done (a plain array) */
                PyObject *w = T_atomic->tp_alloc(T_atomic, 0);
                if (!w) { PyErr_Clear(); Py_DECREF(values); return NULL; }
                set_slot(w, O.a_value, v);
                PyTuple_SET_ITEM(values, i, w);
                continue;
            }
        }
        Py_INCREF(v);
        PyTuple_SET_ITEM(values, i, v);
    }
    return values;
}

/* Replay `plan` for ct.launch(stream, grid, kernel, args): 1 (launched), 0 (Python's path;
   nothing was done, no error set) or -1 (the launch itself raised). plan: (number of args,
   constants' positions, runtime positions, written flag per runtime value, the _bound memo or
   None, cutile.array_types, cutile.streams, grid limit). */
static int replay(PyObject *plan, PyObject *kernel, PyObject *stream_obj, PyObject *grid_obj,
                  PyObject *args) {
    if (!layout_ok || !T_atomic || !PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 8 ||
        !PyTuple_CheckExact(args) ||
        PyTuple_GET_SIZE(args) != PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 0)))
        goto python;
    PyObject *const_idx = PyTuple_GET_ITEM(plan, 1), *rt_idx = PyTuple_GET_ITEM(plan, 2),
             *written = PyTuple_GET_ITEM(plan, 3), *bound = PyTuple_GET_ITEM(plan, 4),
             *kinds = PyTuple_GET_ITEM(plan, 5), *streams = PyTuple_GET_ITEM(plan, 6);
    PyObject *grid = plain_grid(grid_obj, PyLong_AsLongLong(PyTuple_GET_ITEM(plan, 7)));
    PyObject *stream = grid ? memo_stream(stream_obj, streams) : NULL;
    PyObject *b = !stream ? NULL : bound == Py_None ? kernel : memo_bound(bound, const_idx, args);
    PyObject *values = b ? runtime_values(args, rt_idx, written, kinds) : NULL;
    if (!values) {
        Py_XDECREF(grid);
        goto python;
    }
    Py_INCREF(b);
    Py_INCREF(stream);
    PyObject *op = new_launch(b, values), *f = NULL;
    Py_DECREF(values);
    if (op && Py_TYPE(op) == T_klaunch)
        set_slot(op, O.k_grid, grid);   /* op._grid = grid, as op.grid(g) without a copy */
    else if (op && PyObject_SetAttrString(op, "_grid", grid) < 0)
        Py_CLEAR(op);
    if (op)
        f = submit_on(op, stream);
    Py_XDECREF(op);
    Py_DECREF(b);
    Py_DECREF(stream);
    Py_DECREF(grid);
    if (!f) return -1;
    Py_DECREF(f);
    return 1;
python:
    PyErr_Clear();
    return 0;
}

/* ct_launch(plan, kernel, stream, grid, args) -> True (launched) or None (Python's path; nothing
   was done). */
PyObject *py_ct_launch(PyObject *m, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "ct_launch(plan, kernel, stream, grid, args)");
        return NULL;
    }
    int r = replay(argv[0], argv[1], argv[2], argv[3], argv[4]);
    if (r < 0) return NULL;
    if (r) Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

/* ct.launch's Python path (cutile._kernel._launch_python): checks, binds, launches, records the
   plan */
static PyObject *ct_fallback;

/* ct.launch(stream, grid, kernel, args) itself (no Python frame on a replayed launch): the
   kernel's plan replayed, else the Python path with the same arguments, keywords included
   (which checks them and raises its errors). */
static PyObject *ct_entry(PyObject *m, PyObject *const *argv, Py_ssize_t nargs,
                         PyObject *kwnames) {
    if (nargs == 4 && !kwnames) {
        PyObject *plan = PyObject_GetAttr(argv[2], S_ct_plan);
        if (!plan) {
            PyErr_Clear();          /* not a ct.kernel: Python's path explains */
        } else {
            int r = replay(plan, argv[2], argv[0], argv[1], argv[3]);
            Py_DECREF(plan);
            if (r < 0) return NULL;
            if (r) Py_RETURN_NONE;
        }
    }
    if (!ct_fallback) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native: ct.launch's Python path is not set");
        return NULL;
    }
    return PyObject_Vectorcall(ct_fallback, argv, (size_t)nargs, kwnames);
}

static PyMethodDef ct_entry_def = {
    "launch", (PyCFunction)(void (*)(void))ct_entry, METH_FASTCALL | METH_KEYWORDS,
    "launch(stream, grid, kernel, kernel_args, /)\n--\n\n"
    "``ct.launch(stream, grid, kernel, args)``: queue ``kernel`` on ``stream`` over ``grid`` (1 to "
    "3 dimensions) with the arguments ``args`` (a tuple: arrays, scalars and the values of the "
    "``ct.Constant`` parameters, in parameter order). Arrays the kernel stores into are written "
    "in place (NumPy arrays are copied in and back before this returns)."};

/* set_ct_fallback(fn) -> ct.launch: the C entry (a builtin `launch` of tilejit.cutile), which
   calls fn when it cannot replay */
PyObject *py_set_ct_fallback(PyObject *m, PyObject *fn) {
    Py_INCREF(fn);
    Py_XSETREF(ct_fallback, fn);
    PyObject *mod = PyUnicode_FromString("tilejit.cutile");
    if (!mod) return NULL;
    PyObject *f = PyCFunction_NewEx(&ct_entry_def, NULL, mod);
    Py_DECREF(mod);
    return f;
}
