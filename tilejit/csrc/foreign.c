/* Foreign GPU arrays read in C, as runtime/foreign.py's readers read them: torch tensors
 * (through DLPack's C exchange API when torch has it, else their attributes) and CuPy arrays
 * (their attributes). The readers register the types and dtype maps (set_torch, set_cupy,
 * set_torch_exchange); keys come from the shared memo (memo.c). An array these readers cannot
 * describe (host memory, another device, a negated torch view, an unknown dtype, odd strides)
 * is classified by Python, which raises its usual error or handles it. */
#include "native.h"

PyObject *torch_type, *param_type, *cupy_type;
static PyObject *torch_dtypes, *torch_stream_fn, *cupy_dtypes, *cupy_stream_fn;
const DLPackExchangeAPI *torch_api;
static PyObject *torch_api_capsule;
/* DLPack (code, bits) -> tilejit dtype name (set_torch_exchange) */
typedef struct { uint8_t code, bits; PyObject *name; } DLName;
#define MAX_DL_NAMES 32
static DLName dl_names[MAX_DL_NAMES];
static int n_dl_names;

/* an exact torch.Tensor or nn.Parameter: read through the exchange API */
int is_torch(PyObject *v) {
    PyObject *tp = (PyObject *)Py_TYPE(v);
    return torch_api && tp && (tp == torch_type || tp == param_type);
}

/* any torch.Tensor (subclasses included) */
int torch_any(PyObject *v) {
    return torch_type && PyObject_TypeCheck(v, (PyTypeObject *)torch_type);
}

static long call_long(PyObject *o, PyObject *method, int *err) {
    PyObject *r = PyObject_CallMethodNoArgs(o, method);
    if (!r) { *err = 1; return 0; }
    long v = PyLong_AsLong(r);
    Py_DECREF(r);
    if (v == -1 && PyErr_Occurred()) *err = 1;
    return v;
}

/* stream.wait_raw(producer) unless the launch runs on the producer's stream: 1, or -1. */
static int wait_producer(StreamInfo *si, unsigned long long hv) {
    if (hv == si->handle) return 1;
    PyObject *h = PyLong_FromUnsignedLongLong(hv);
    if (!h) return -1;
    PyObject *w = PyObject_CallMethodOneArg(si->stream, S_wait_raw, h);
    Py_DECREF(h);
    if (!w) return -1;
    Py_DECREF(w);
    return 1;
}

/* Order the launch after torch's pending work on its current stream (DLPack's rule); once per
   launch: every torch argument is on the launch's device, so on the same stream. */
static int order_after_torch(StreamInfo *si, long dev) {
    if (si->torch_checked) return 1;
    si->torch_checked = 1;
    unsigned long long hv;
    if (torch_api) {
        void *cs = NULL;
        if (torch_api->current_work_stream(DL_CUDA, (int32_t)dev, &cs) != 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "torch: no current CUDA stream");
            return -1;
        }
        hv = (unsigned long long)(uintptr_t)cs;
    } else {
        PyObject *h = PyObject_CallFunction(torch_stream_fn, "l", dev);
        if (!h) return -1;
        hv = PyLong_AsUnsignedLongLong(h);
        Py_DECREF(h);
        if (PyErr_Occurred()) return -1;
    }
    return wait_producer(si, hv);
}

/* A torch GPU tensor read from its attributes (torch < 2.10, or a subclass). 1, 0, -1. */
static int torch_arg(Arg *a, PyObject *v, StreamInfo *si, PyObject *kind, PyObject *extra) {
    int err = 0;
    long dev = call_long(v, S_get_device, &err);
    if (err) return -1;
    if (dev < 0 || dev != si->ordinal) return 0;        /* host tensor / wrong device: Python */
    long neg = call_long(v, S_is_neg, &err);
    if (err) return -1;
    if (neg) return 0;
    PyObject *tdt = PyObject_GetAttr(v, S_dtype);
    if (!tdt) return -1;
    PyObject *name = PyDict_GetItemWithError(torch_dtypes, tdt); /* borrowed */
    Py_DECREF(tdt);
    if (!name) return PyErr_Occurred() ? -1 : 0;
    PyObject *pr = PyObject_CallMethodNoArgs(v, S_data_ptr);
    if (!pr) return -1;
    unsigned long long ptr = PyLong_AsUnsignedLongLong(pr);
    Py_DECREF(pr);
    if (PyErr_Occurred()) return -1;
    PyObject *shape = PyObject_GetAttr(v, S_shape);
    if (!shape) return -1;
    PyObject *strides = PyObject_CallMethodNoArgs(v, S_stride);
    if (!strides) { Py_DECREF(shape); return -1; }
    int r = PyTuple_Check(shape) ? from_memo(a, kind, name, shape, strides, ptr, extra) : 0;
    Py_DECREF(shape); Py_DECREF(strides);
    if (r != 1) return r;
    return order_after_torch(si, dev);
}

static PyObject *dl_name(DLDataType t) {
    if (t.lanes != 1) return NULL;
    for (int i = 0; i < n_dl_names; i++)
        if (dl_names[i].code == t.code && dl_names[i].bits == t.bits) return dl_names[i].name;
    return NULL;
}

/* 0 when `v` is a lazily negated torch view (its data read as is would be wrong: Python
   explains), 1 otherwise. Checked once per tensor object: the position's weakref tells the same
   live object (the bit is fixed when a view is made). */
static int not_negated(FCache *c, PyObject *v) {
    if (c && c->plain && PyWeakref_GetObject(c->plain) == v) return 1;
    int err = 0;
    long neg = call_long(v, S_is_neg, &err);
    if (err) return -1;
    if (neg) return 0;
    if (c) {
        PyObject *w = PyWeakref_NewRef(v, NULL);
        if (!w) PyErr_Clear(); else Py_XSETREF(c->plain, w);
    }
    return 1;
}

/* A torch tensor read through the DLPack C exchange API, with no Python call on a repeated
   layout. 1, 0, -1. */
static int exchange_arg(Arg *a, PyObject *v, FCache *c, StreamInfo *si, PyObject *kind,
                        PyObject *extra) {
    DLTensor dl;
    if (torch_api->dltensor_from_py_object_no_sync(v, &dl) != 0) {
        PyErr_Clear();          /* not describable: Python explains */
        return 0;
    }
    if (dl.device.device_type != DL_CUDA || dl.device.device_id != si->ordinal) return 0;
    int nd = dl.ndim;
    PyObject *name = dl_name(dl.dtype);
    if (nd < 0 || nd > MAX_DIMS || !name) return 0;
    int r = not_negated(c, v);
    if (r != 1) return r;
    int64_t strides[MAX_DIMS];
    if (dl.strides) {
        memcpy(strides, dl.strides, sizeof(int64_t) * (size_t)nd);
    } else {                    /* DLPack: NULL strides mean compact row-major */
        int64_t acc = 1;
        for (int d = nd - 1; d >= 0; d--) { strides[d] = acc; acc *= dl.shape[d]; }
    }
    r = layout_arg(a, c, kind, extra, name, nd, dl.shape, strides,
                   (unsigned long long)(uintptr_t)dl.data + dl.byte_offset);
    if (r != 1) return r;
    return order_after_torch(si, dl.device.device_id);
}

static int ints_of(PyObject *t, int64_t *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (x == -1 && PyErr_Occurred()) return -1;
        out[i] = x;
    }
    return 0;
}

/* What never changes for one CuPy array (data pointer, device, dtype), kept in the position's
   cache for the last array seen there (by weakref). 1, 0 (unknown dtype), -1. */
static int cupy_identity(FCache *c, PyObject *v) {
    if (c->cobj && PyWeakref_GetObject(c->cobj) == v) return 1;
    PyObject *data = PyObject_GetAttr(v, S_data);
    if (!data) return -1;
    PyObject *p = PyObject_GetAttr(data, S_ptr);
    PyObject *d = p ? PyObject_GetAttr(data, S_device_id) : NULL;
    Py_DECREF(data);
    if (!d) { Py_XDECREF(p); return -1; }
    long dev = PyLong_AsLong(d);
    unsigned long long ptr = PyLong_AsUnsignedLongLong(p);
    Py_DECREF(d); Py_DECREF(p);
    if (PyErr_Occurred()) return -1;
    PyObject *dt = PyObject_GetAttr(v, S_dtype);
    if (!dt) return -1;
    PyObject *nm = PyDict_GetItemWithError(cupy_dtypes, dt); /* borrowed: (name, itemsize) */
    Py_DECREF(dt);
    if (!nm) return PyErr_Occurred() ? -1 : 0;
    Py_CLEAR(c->cobj);
    c->cptr = ptr; c->cdev = dev;
    c->cisz = PyLong_AsLongLong(PyTuple_GET_ITEM(nm, 1));
    Py_INCREF(PyTuple_GET_ITEM(nm, 0));
    Py_XSETREF(c->cname, PyTuple_GET_ITEM(nm, 0));
    if (!(c->cobj = PyWeakref_NewRef(v, NULL))) PyErr_Clear();
    return 1;
}

/* Shape and element strides of a CuPy array (read every call: `a.shape = ...` changes them in
   place). 1, 0 (odd strides or rank), -1. */
static int cupy_layout(PyObject *v, long long isz, int64_t *sh, int64_t *es, int *nd_out) {
    PyObject *shape = PyObject_GetAttr(v, S_shape);
    PyObject *bstr = shape ? PyObject_GetAttr(v, S_strides) : NULL;
    int r = bstr ? 1 : -1;
    Py_ssize_t nd = r == 1 && PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (r == 1 && (nd < 0 || nd > MAX_DIMS || !PyTuple_Check(bstr) ||
                   PyTuple_GET_SIZE(bstr) != nd || isz <= 0))
        r = 0;
    if (r == 1 && (ints_of(shape, sh, nd) < 0 || ints_of(bstr, es, nd) < 0)) r = -1;
    for (Py_ssize_t i = 0; r == 1 && i < nd; i++) {
        if (es[i] % isz) r = 0;                         /* odd byte strides: Python explains */
        else es[i] /= isz;
    }
    Py_XDECREF(shape); Py_XDECREF(bstr);
    *nd_out = (int)nd;
    return r;
}

/* A CuPy array, ordered after CuPy's current stream once per launch. 1, 0, -1. */
static int cupy_arg(Arg *a, PyObject *v, FCache *c, StreamInfo *si, PyObject *kind,
                    PyObject *extra) {
    FCache tmp;
    int own = c == NULL;
    if (own) { memset(&tmp, 0, sizeof(tmp)); c = &tmp; }
    int64_t sh[MAX_DIMS], es[MAX_DIMS];
    int nd = 0;
    int r = cupy_identity(c, v);
    if (r == 1 && c->cdev != si->ordinal) r = 0;      /* another device: Python explains */
    if (r == 1) r = cupy_layout(v, c->cisz, sh, es, &nd);
    if (r == 1) r = layout_arg(a, own ? NULL : c, kind, extra, c->cname, nd, sh, es, c->cptr);
    if (own) fc_clear(&tmp);
    if (r != 1 || si->cupy_checked) return r;
    si->cupy_checked = 1;
    PyObject *cs = PyObject_CallNoArgs(cupy_stream_fn);
    PyObject *h = cs ? PyObject_GetAttr(cs, S_ptr) : NULL;
    Py_XDECREF(cs);
    if (!h) return -1;
    unsigned long long hv = PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    if (PyErr_Occurred()) return -1;
    return wait_producer(si, hv);
}

/* A torch tensor or CuPy array `v` (a tensor, or the array of tile.partition(v, tile): `kind`
   and `extra` as in argspec.array_key) at argument position `pos`: 1 described here, 0 not a
   type these readers describe (Python classifies it), -1 error. */
int foreign_arg(Launcher *self, Arg *a, PyObject *v, Py_ssize_t pos, StreamInfo *si,
                PyObject *kind, PyObject *extra) {
    FCache *c = pos < FC_MAX ? &self->fc[pos] : NULL;
    if (is_torch(v)) return exchange_arg(a, v, c, si, kind, extra);
    if (torch_any(v)) return torch_arg(a, v, si, kind, extra);
    if (cupy_type && (PyObject *)Py_TYPE(v) == cupy_type) return cupy_arg(a, v, c, si, kind, extra);
    return 0;
}

/* The rank of a GPU torch tensor or CuPy array `v` read in C (tile.partition's fast path), or -1
   (Python's tile.partition decides). */
int foreign_ndim(PyObject *v) {
    if (is_torch(v)) {
        DLTensor dl;
        /* a tensor in host memory is written back through NumPy: Python's HostPartition */
        if (torch_api->dltensor_from_py_object_no_sync(v, &dl) == 0)
            return dl.device.device_type == DL_CUDA
                ? dl.ndim : -1;
        PyErr_Clear();
        return -1;
    }
    if (cupy_type && (PyObject *)Py_TYPE(v) == cupy_type) {
        PyObject *nd = PyObject_GetAttr(v, S_ndim);
        long n = nd && PyLong_Check(nd) ? PyLong_AsLong(nd) : -1;
        Py_XDECREF(nd);
        PyErr_Clear();
        return (int)n;
    }
    return -1;
}

/* --- registration by runtime/foreign.py's readers ---------------------------------------- */
/* set_torch(Tensor, {torch dtype: dtype name}, current_raw_stream) */
PyObject *py_set_torch(PyObject *self, PyObject *args) {
    PyObject *tt, *dmap, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &tt, &PyDict_Type, &dmap, &fn))
        return NULL;
    Py_INCREF(tt); Py_INCREF(dmap); Py_INCREF(fn);
    Py_XSETREF(torch_type, tt); Py_XSETREF(torch_dtypes, dmap); Py_XSETREF(torch_stream_fn, fn);
    Py_RETURN_NONE;
}

/* set_cupy(ndarray, {numpy dtype: (name, itemsize)}, get_current_stream) */
PyObject *py_set_cupy(PyObject *self, PyObject *args) {
    PyObject *tp, *dmap, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &tp, &PyDict_Type, &dmap, &fn))
        return NULL;
    PyObject *k, *v;
    Py_ssize_t it = 0;
    while (PyDict_Next(dmap, &it, &k, &v)) {
        if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 2 ||
            !PyLong_Check(PyTuple_GET_ITEM(v, 1))) {
            PyErr_SetString(PyExc_TypeError, "set_cupy: dtypes map to (name, itemsize)");
            return NULL;
        }
    }
    Py_INCREF(tp); Py_INCREF(dmap); Py_INCREF(fn);
    Py_XSETREF(cupy_type, tp); Py_XSETREF(cupy_dtypes, dmap); Py_XSETREF(cupy_stream_fn, fn);
    Py_RETURN_NONE;
}

static int set_dl_names(PyObject *names) {
    for (int i = 0; i < n_dl_names; i++) Py_CLEAR(dl_names[i].name);
    n_dl_names = 0;
    PyObject *k, *v;
    Py_ssize_t it = 0;
    while (PyDict_Next(names, &it, &k, &v) && n_dl_names < MAX_DL_NAMES) {
        int code, bits;
        if (!PyArg_ParseTuple(k, "ii", &code, &bits)) return -1;
        dl_names[n_dl_names].code = (uint8_t)code;
        dl_names[n_dl_names].bits = (uint8_t)bits;
        Py_INCREF(v);
        dl_names[n_dl_names++].name = v;
    }
    return 0;
}

/* set_torch_exchange(capsule or None, nn.Parameter, {(dlpack code, bits): dtype name}) -> bool:
   read torch tensors through torch.Tensor.__dlpack_c_exchange_api__ (True when usable) */
PyObject *py_set_torch_exchange(PyObject *self, PyObject *args) {
    PyObject *cap, *ptype, *names;
    if (!PyArg_ParseTuple(args, "OOO!", &cap, &ptype, &PyDict_Type, &names)) return NULL;
    if (set_dl_names(names) < 0) return NULL;
    torch_api = NULL;
    Py_CLEAR(torch_api_capsule);
    Py_INCREF(ptype);
    Py_XSETREF(param_type, ptype);
    if (cap == Py_None) Py_RETURN_FALSE;
    const DLPackExchangeAPI *api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    if (!api) { PyErr_Clear(); Py_RETURN_FALSE; }
    if (api->version.major != 1 || !api->dltensor_from_py_object_no_sync ||
        !api->current_work_stream)
        Py_RETURN_FALSE;
    Py_INCREF(cap);
    torch_api_capsule = cap;
    torch_api = api;
    Py_RETURN_TRUE;
}

/* torch_stream_of(values) -> (ordinal, handle) of torch's current stream for the first torch GPU
   tensor among `values` (tile.partition()s of them included), None when there is none, or
   NotImplemented when a value needs the Python reader */
PyObject *py_torch_stream_of(PyObject *m, PyObject *values) {
    if (!torch_api || !layout_ok || !PyTuple_Check(values)) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values); i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i);
        if (Py_TYPE(v) == T_fpart && !(v = SLOT(v, O.fp_value))) continue;
        if (!is_torch(v)) {
            if (torch_any(v)) Py_RETURN_NOTIMPLEMENTED;
            continue;
        }
        DLTensor dl;
        void *cs = NULL;
        if (torch_api->dltensor_from_py_object_no_sync(v, &dl) != 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        if (dl.device.device_type != DL_CUDA) continue;
        if (torch_api->current_work_stream(DL_CUDA, dl.device.device_id, &cs) != 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        return Py_BuildValue("(iK)", (int)dl.device.device_id,
                             (unsigned long long)(uintptr_t)cs);
    }
    Py_RETURN_NONE;
}
