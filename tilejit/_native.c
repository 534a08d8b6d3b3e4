/* tilejit._native: the launch hot path in C (see tilejit/native.py for the contract).
 *
 * launch(fn, ctx, gx, gy, gz, stream, layout, params) -> CUresult
 *     Pack `params` (Python ints/floats) by `layout` (one struct-style code per slot) into a
 *     stack buffer with natural alignment and call cuLaunchKernel with block (1,1,1). The
 *     kernel's context is made current first when it is not. Raises ValueError/OverflowError
 *     when a value does not fit its slot (the caller explains it).
 *
 * Launcher(fast, anns, Tensor, Partition, DeviceOp, classify).launch(args, stream) -> bool
 *     One plain kernel launch, classification to cuLaunchKernel. Returns False, having launched
 *     nothing, whenever the Python path must take over (see native.py).
 *
 * The CUDA driver is opened with dlopen on first use, so importing this module never needs a GPU.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUcontext;

static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void **, void **);
static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static int driver_state; /* 0: not loaded yet, 1: loaded, -1: unavailable */

#define MAX_PARAMS 512
#define MAX_PARAM_BYTES 4096
#define MAX_ARGS 64
#define GRID_LIMIT (1 << 24)

static int load_driver(void) {
    if (driver_state)
        return driver_state;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        h = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    if (h) {
        p_cuLaunchKernel = dlsym(h, "cuLaunchKernel");
        p_cuCtxGetCurrent = dlsym(h, "cuCtxGetCurrent");
        p_cuCtxSetCurrent = dlsym(h, "cuCtxSetCurrent");
    }
    driver_state = (p_cuLaunchKernel && p_cuCtxGetCurrent && p_cuCtxSetCurrent) ? 1 : -1;
    return driver_state;
}

/* --- packing -------------------------------------------------------------------------------- */
static int slot_size(char c) {
    switch (c) {
    case 'Q': case 'q': case 'd': return 8;
    case 'I': case 'i': case 'f': return 4;
    case 'H': case 'h': case 'e': case 'E': return 2;
    case 'B': case 'b': return 1;
    default: return 0;
    }
}

static uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

/* Pack one value at buf; 0 on success, -1 with a Python error set. */
static int pack_one(char c, PyObject *v, char *buf) {
    switch (c) {
    case 'Q': {
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        memcpy(buf, &x, 8); return 0;
    }
    case 'q': {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        memcpy(buf, &x, 8); return 0;
    }
    case 'I': case 'i': case 'H': case 'h': case 'B': case 'b': {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        long long lo, hi;
        switch (c) {
        case 'I': lo = 0; hi = 0xffffffffLL; break;
        case 'i': lo = INT32_MIN; hi = INT32_MAX; break;
        case 'H': lo = 0; hi = 0xffff; break;
        case 'h': lo = INT16_MIN; hi = INT16_MAX; break;
        case 'B': lo = 0; hi = 0xff; break;
        default: lo = -128; hi = 127; break;
        }
        if (x < lo || x > hi) {
            PyErr_Format(PyExc_OverflowError, "value %lld does not fit slot '%c'", x, c);
            return -1;
        }
        if (c == 'I' || c == 'i') { int32_t y = (int32_t)x; memcpy(buf, &y, 4); }
        else if (c == 'H' || c == 'h') { int16_t y = (int16_t)x; memcpy(buf, &y, 2); }
        else { int8_t y = (int8_t)x; memcpy(buf, &y, 1); }
        return 0;
    }
    case 'd': case 'f': case 'e': case 'E': {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        if (c == 'd') { memcpy(buf, &x, 8); return 0; }
        if (c == 'f') { float y = (float)x; memcpy(buf, &y, 4); return 0; }
#if PY_VERSION_HEX < 0x030B0000
        if (c == 'e') return _PyFloat_Pack2(x, (unsigned char *)buf, 1);
#else
        if (c == 'e') return PyFloat_Pack2(x, buf, 1);
#endif
        { uint16_t y = bf16_bits((float)x); memcpy(buf, &y, 2); return 0; }
    }
    }
    PyErr_Format(PyExc_ValueError, "unknown parameter slot '%c'", c);
    return -1;
}

typedef struct {
    char data[MAX_PARAM_BYTES] __attribute__((aligned(16)));
    void *ptrs[MAX_PARAMS];
    Py_ssize_t size, count;
} ParamBuf;

/* Append the values of tuple `vals` by layout[*pos...]; -1 with an error set on failure. */
static int pack_values(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
                       PyObject *vals) {
    Py_ssize_t n = PyTuple_GET_SIZE(vals);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (*pos >= nlayout || pb->count >= MAX_PARAMS) {
            PyErr_SetString(PyExc_ValueError, "more parameter values than slots");
            return -1;
        }
        char c = layout[(*pos)++];
        int sz = slot_size(c);
        if (!sz) {
            PyErr_Format(PyExc_ValueError, "unknown parameter slot '%c'", c);
            return -1;
        }
        Py_ssize_t off = (pb->size + sz - 1) / sz * sz;
        if (off + sz > MAX_PARAM_BYTES) {
            PyErr_SetString(PyExc_ValueError, "kernel parameters too large");
            return -1;
        }
        if (pack_one(c, PyTuple_GET_ITEM(vals, i), pb->data + off) < 0)
            return -1;
        pb->ptrs[pb->count++] = pb->data + off;
        pb->size = off + sz;
    }
    return 0;
}

/* cuLaunchKernel with `ctx` current; returns the CUresult (or -1 with an error set). */
static CUresult do_launch(void *fn, void *ctx, unsigned gx, unsigned gy, unsigned gz,
                          void *stream, ParamBuf *pb) {
    if (load_driver() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native: libcuda could not be loaded");
        return -1;
    }
    CUresult err;
    Py_BEGIN_ALLOW_THREADS
    CUcontext cur = NULL;
    int switched = 0;
    err = p_cuCtxGetCurrent(&cur);
    if (!err && cur != (CUcontext)ctx) {
        err = p_cuCtxSetCurrent((CUcontext)ctx);
        switched = !err;
    }
    if (!err)
        err = p_cuLaunchKernel((CUfunction)fn, gx, gy, gz, 1, 1, 1, 0, (CUstream)stream,
                               pb->count ? pb->ptrs : NULL, NULL);
    if (switched)       /* give the caller (torch, the CUDA runtime) its current device back */
        p_cuCtxSetCurrent(cur);
    Py_END_ALLOW_THREADS
    return err;
}

static PyObject *py_launch(PyObject *self, PyObject *args) {
    unsigned long long fn, ctx, stream;
    unsigned int gx, gy, gz;
    const char *layout;
    Py_ssize_t nlayout;
    PyObject *params;
    if (!PyArg_ParseTuple(args, "KKIIIKy#O!", &fn, &ctx, &gx, &gy, &gz, &stream, &layout,
                          &nlayout, &PyTuple_Type, &params))
        return NULL;
    ParamBuf pb;
    pb.size = pb.count = 0;
    Py_ssize_t pos = 0;
    if (pack_values(&pb, layout, nlayout, &pos, params) < 0)
        return NULL;
    if (pos != nlayout) {
        PyErr_Format(PyExc_ValueError, "%zd parameter values for %zd slots", pos, nlayout);
        return NULL;
    }
    CUresult err = do_launch((void *)fn, (void *)ctx, gx, gy, gz, (void *)stream, &pb);
    if (err == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(err);
}

/* --- Launcher ------------------------------------------------------------------------------- */
#define LAST_MAX 16
typedef struct {
    PyObject_HEAD
    PyObject *fast, *anns, *tensor_type, *partition_type, *deviceop_type, *classify, *memo;
    /* the last lookup, by identity: a loop of launches of one layout skips building and
       hashing the key tuple (Kernel._fast entries never change once set) */
    Py_ssize_t last_n;
    PyObject *last_keys[LAST_MAX], *last_device, *last_exe;
    int last_ones;
} Launcher;

static void forget_last(Launcher *self) {
    for (Py_ssize_t i = 0; i < self->last_n; i++) Py_CLEAR(self->last_keys[i]);
    Py_CLEAR(self->last_device);
    Py_CLEAR(self->last_exe);
    self->last_n = 0;
}

/* what a launch needs to know about its stream */
typedef struct {
    PyObject *device;       /* owned */
    long ordinal;
    unsigned long long handle;
    int torch_checked;      /* torch's current stream already ordered before this launch */
} StreamInfo;

/* torch, when a torch reader registered it (set_torch) */
static PyObject *torch_type, *torch_dtypes, *torch_stream_fn;
/* runtime.partition.ForeignPartition (tile.partition of a foreign array), when registered */
static PyObject *fpart_type;

static PyObject *S_moved, *S_info, *S_consumed, *S_leased, *S_acquire, *S_release, *S_key,
    *S_params, *S_storage, *S_writable, *S_extent, *S_prepare, *S_finish, *S_grid, *S_device,
    *S_capture, *S_ephemeral, *S_epoch, *S_h_epoch, *S_h, *S_stream, *S_use, *S_native, *S_launch, *S_cu,
    *S_handle, *S_what, *S_name, *S_launch_error, *S__storage, *S_ptr, *S__offset_bytes, *S__shape,
    *S__strides, *S__dtype, *S__tensor, *S_tile_shape, *S_ordinal, *S_wait_raw, *S_get_device,
    *S_is_neg, *S_dtype, *S_data_ptr, *S_shape, *S_stride, *S_kind_tensor, *S_kind_partition,
    *S_value;
static PyObject *K_int, *K_float, *K_bool, *ONE, *ZERO;

static void Launcher_dealloc(Launcher *self) {
    Py_XDECREF(self->fast); Py_XDECREF(self->anns); Py_XDECREF(self->tensor_type);
    Py_XDECREF(self->partition_type); Py_XDECREF(self->deviceop_type); Py_XDECREF(self->classify);
    Py_XDECREF(self->memo);
    forget_last(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Launcher_init(Launcher *self, PyObject *args, PyObject *kw) {
    PyObject *fast, *anns, *tt, *pt, *dt, *cl, *memo;
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!", &PyDict_Type, &fast, &PyTuple_Type, &anns, &tt, &pt,
                          &dt, &cl, &PyDict_Type, &memo))
        return -1;
    Py_INCREF(fast); Py_INCREF(anns); Py_INCREF(tt); Py_INCREF(pt); Py_INCREF(dt); Py_INCREF(cl);
    Py_INCREF(memo);
    self->fast = fast; self->anns = anns; self->tensor_type = tt; self->partition_type = pt;
    self->deviceop_type = dt; self->classify = cl; self->memo = memo;
    return 0;
}

typedef struct {
    PyObject *key;      /* borrowed from info (or a module constant) */
    PyObject *params;   /* owned */
    PyObject *storage;  /* owned or NULL */
    PyObject *info;     /* owned or NULL (scalars handled here have none) */
    PyObject *grid;     /* owned or NULL: partitions */
    PyObject *partition;/* borrowed: the Partition argument, or NULL */
    PyObject *hold;     /* owned: keeps `key` alive when it came from the memo */
    int writable, scalar;
    long long start, end; /* byte extent (arrays) */
} Arg;

static void clear_args(Arg *a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(a[i].params); Py_XDECREF(a[i].storage); Py_XDECREF(a[i].info);
        Py_XDECREF(a[i].grid); Py_XDECREF(a[i].hold);
    }
}

/* Fill `a` from an ArgInfo object; 1 ok, 0 give up, -1 error. */
static int from_info(Arg *a, PyObject *info) {
    PyObject *hook = PyObject_GetAttr(info, S_prepare);
    if (!hook) return -1;
    int has = hook != Py_None;
    Py_DECREF(hook);
    if (has) return 0;
    hook = PyObject_GetAttr(info, S_finish);
    if (!hook) return -1;
    has = hook != Py_None;
    Py_DECREF(hook);
    if (has) return 0;
    a->info = info; Py_INCREF(info);
    PyObject *key = PyObject_GetAttr(info, S_key);
    if (!key) return -1;
    a->key = key; Py_DECREF(key); /* kept alive by info */
    a->params = PyObject_GetAttr(info, S_params);
    if (!a->params) return -1;
    if (!PyTuple_Check(a->params)) return 0;
    PyObject *st = PyObject_GetAttr(info, S_storage);
    if (!st) return -1;
    if (st == Py_None) Py_DECREF(st); else a->storage = st;
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
        if (PyErr_Occurred()) { Py_DECREF(ext); return -1; }
    } else {
        Py_DECREF(ext);
        return 0; /* extent not known yet */
    }
    Py_DECREF(ext);
    return 1;
}

/* The memoized key of an array (argspec.array_key's memo); 1 found, 0 not memoized yet, -1. */
static int from_memo(Launcher *self, Arg *a, PyObject *kind, PyObject *dtype_name,
                     PyObject *shape, PyObject *strides, unsigned long long ptr, PyObject *extra) {
    PyObject *low = PyLong_FromUnsignedLongLong(ptr & 15);
    if (!low) return -1;
    PyObject *mk = PyTuple_Pack(6, kind, dtype_name, shape, strides, low, extra);
    Py_DECREF(low);
    if (!mk) return -1;
    PyObject *hit = PyDict_GetItemWithError(self->memo, mk); /* borrowed */
    Py_DECREF(mk);
    if (!hit) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 4) return 0;
    Py_INCREF(hit);
    a->hold = hit;
    a->key = PyTuple_GET_ITEM(hit, 0);
    long long span = PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 2));
    if (span == -1 && PyErr_Occurred()) return -1;
    a->start = (long long)ptr;
    a->end = (long long)ptr + span;
    PyObject *grid = PyTuple_GET_ITEM(hit, 3);
    if (grid != Py_None) { Py_INCREF(grid); a->grid = grid; }
    /* params: (ptr, *shape, *strides) */
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != nd) return 0;
    PyObject *params = PyTuple_New(1 + 2 * nd);
    if (!params) return -1;
    PyObject *p0 = PyLong_FromUnsignedLongLong(ptr);
    if (!p0) { Py_DECREF(params); return -1; }
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

/* A tilejit tensor without a cached info (a fresh view or import): its key from the memo. */
static int tensor_from_memo(Launcher *self, Arg *a, PyObject *t, PyObject *kind, PyObject *extra) {
    PyObject *st = PyObject_GetAttr(t, S__storage);
    if (!st) return -1;
    PyObject *sp = PyObject_GetAttr(st, S_ptr), *off = PyObject_GetAttr(t, S__offset_bytes);
    PyObject *shape = PyObject_GetAttr(t, S__shape), *strides = PyObject_GetAttr(t, S__strides);
    PyObject *dt = PyObject_GetAttr(t, S__dtype);
    PyObject *name = dt ? PyObject_GetAttr(dt, S_name) : NULL;
    int r = -1;
    if (sp && off && shape && strides && name && PyTuple_Check(shape)) {
        unsigned long long ptr = PyLong_AsUnsignedLongLong(sp) + PyLong_AsUnsignedLongLong(off);
        if (!PyErr_Occurred())
            r = from_memo(self, a, kind, name, shape, strides, ptr, extra);
    } else if (shape && !PyTuple_Check(shape)) {
        r = 0;
    }
    Py_XDECREF(sp); Py_XDECREF(off); Py_XDECREF(shape); Py_XDECREF(strides); Py_XDECREF(dt);
    Py_XDECREF(name);
    if (r == 1) a->storage = st; else Py_DECREF(st);
    return r;
}

static long call_long(PyObject *o, PyObject *method, int *err) {
    PyObject *r = PyObject_CallMethodNoArgs(o, method);
    if (!r) { *err = 1; return 0; }
    long v = PyLong_AsLong(r);
    Py_DECREF(r);
    if (v == -1 && PyErr_Occurred()) *err = 1;
    return v;
}

/* A torch GPU tensor read from its metadata (runtime.foreign's torch reader, in C); `kind` and
   `extra` as in argspec.array_key (a tensor and its writable flag, or a partition and its tile). */
static int torch_arg(Launcher *self, Arg *a, PyObject *v, StreamInfo *si, PyObject *stream,
                     PyObject *kind, PyObject *extra) {
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
    int r = PyTuple_Check(shape) ? from_memo(self, a, kind, name, shape, strides, ptr, extra) : 0;
    Py_DECREF(shape); Py_DECREF(strides);
    if (r != 1) return r;
    /* order the launch after torch's pending work on its current stream (DLPack's rule); once
       per launch: every torch argument is on the launch's device, so on the same stream */
    if (si->torch_checked) return 1;
    si->torch_checked = 1;
    PyObject *h = PyObject_CallFunction(torch_stream_fn, "l", dev);
    if (!h) return -1;
    unsigned long long hv = PyLong_AsUnsignedLongLong(h);
    if (PyErr_Occurred()) { Py_DECREF(h); return -1; }
    if (hv != si->handle) {
        PyObject *w = PyObject_CallMethodOneArg(stream, S_wait_raw, h);
        if (!w) { Py_DECREF(h); return -1; }
        Py_DECREF(w);
    }
    Py_DECREF(h);
    return 1;
}

static int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* Classify args[i]; 1 ok, 0 give up, -1 error. */
static int classify_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, PyObject *stream,
                        StreamInfo *si) {
    PyTypeObject *tp = Py_TYPE(v);
    if ((PyObject *)tp == self->tensor_type) {
        int moved = truthy_attr(v, S_moved);
        if (moved) return moved < 0 ? -1 : 0;
        PyObject *info = PyObject_GetAttr(v, S_info);
        if (!info) return -1;
        if (info == Py_None) {
            Py_DECREF(info);
            int r = tensor_from_memo(self, a, v, S_kind_tensor, Py_False);
            if (r) return r;
            /* first time this layout is seen: classify makes (and caches) the info */
            info = PyObject_CallFunctionObjArgs(self->classify, v, ann, stream, NULL);
            if (!info) return -1;
        }
        int r = from_info(a, info);
        Py_DECREF(info);
        return r;
    }
    if ((PyObject *)tp == self->partition_type) {
        int consumed = truthy_attr(v, S_consumed);
        if (consumed) return consumed < 0 ? -1 : 0;
        int leased = truthy_attr(v, S_leased);
        if (leased < 0) return -1;
        if (!leased) {
            PyObject *r = PyObject_CallMethodOneArg(v, S_acquire, S_what);
            if (!r) return -1;
            Py_DECREF(r);
        }
        PyObject *info = PyObject_GetAttr(v, S_info);
        if (!info) return -1;
        if (info == Py_None) {
            Py_DECREF(info);
            PyObject *t = PyObject_GetAttr(v, S__tensor);
            PyObject *tile = t ? PyObject_GetAttr(v, S_tile_shape) : NULL;
            int r = tile ? tensor_from_memo(self, a, t, S_kind_partition, tile) : -1;
            Py_XDECREF(t); Py_XDECREF(tile);
            if (r < 0) return -1;
            if (r == 1) {
                if (!a->grid) return 0;
                a->partition = v;
                a->writable = 1;
                return 1;
            }
            info = PyObject_CallFunctionObjArgs(self->classify, v, ann, stream, NULL);
            if (!info) return -1;
        }
        int r = from_info(a, info);
        Py_DECREF(info);
        if (r != 1) return r;
        a->partition = v;
        a->grid = PyObject_GetAttr(a->info, S_grid);
        return a->grid ? 1 : -1;
    }
    if (torch_type && ann == Py_None && PyObject_TypeCheck(v, (PyTypeObject *)torch_type)) {
        int r = torch_arg(self, a, v, si, stream, S_kind_tensor, Py_False);
        if (r) return r;
    }
    if (fpart_type && (PyObject *)tp == fpart_type) {
        /* tile.partition(torch_tensor, tile): an output partition read from torch's metadata;
           no lease (tilejit does not own the memory), the extent check covers aliasing */
        PyObject *inner = PyObject_GetAttr(v, S_value);
        if (!inner) return -1;
        PyObject *tile = PyObject_GetAttr(v, S_tile_shape);
        if (!tile) { Py_DECREF(inner); return -1; }
        int r = 0;
        if (torch_type && PyObject_TypeCheck(inner, (PyTypeObject *)torch_type))
            r = torch_arg(self, a, inner, si, stream, S_kind_partition, tile);
        Py_DECREF(inner); Py_DECREF(tile);
        if (r == 1) {
            if (!a->grid) return 0;
            a->writable = 1;
        }
        return r;
    }
    if (ann == Py_None && K_int) {
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow) return 0;
            a->key = K_int; a->scalar = 1;
            a->params = PyTuple_Pack(1, v);
            return a->params ? 1 : -1;
        }
        if (PyFloat_CheckExact(v)) {
            /* rounded to float32, as the GPU and the simulator see it */
            PyObject *f = PyFloat_FromDouble((double)(float)PyFloat_AS_DOUBLE(v));
            if (!f) return -1;
            a->key = K_float; a->scalar = 1;
            a->params = PyTuple_Pack(1, f);
            Py_DECREF(f);
            return a->params ? 1 : -1;
        }
        if (PyBool_Check(v)) {
            a->key = K_bool; a->scalar = 1;
            a->params = PyTuple_Pack(1, v == Py_True ? ONE : ZERO);
            return a->params ? 1 : -1;
        }
    }
    int isop = PyObject_IsInstance(v, self->deviceop_type);
    if (isop) return isop < 0 ? -1 : 0;
    /* NumPy arrays are copied in per launch (a prepare hook): the Python path, without a
       classification here that it would redo */
    if (strcmp(tp->tp_name, "numpy.ndarray") == 0) return 0;
    PyObject *info = PyObject_CallFunctionObjArgs(self->classify, v, ann, stream, NULL);
    if (!info) return -1;
    int r = from_info(a, info);
    Py_DECREF(info);
    return r;
}

/* Storage.use(stream) with its common case inline (memory.use_all); -1 on error. */
static int use_storage(PyObject *st, PyObject *stream, int fast, PyObject *epoch) {
    if (fast) {
        PyObject *h = PyObject_GetAttr(st, S_h);
        if (!h) return -1;
        PyObject *last = PyObject_GetAttr(h, S_stream);
        if (!last) { Py_DECREF(h); return -1; }
        int same = last == stream;
        Py_DECREF(last);
        if (same) {
            int r = PyObject_SetAttr(h, S_h_epoch, epoch);
            Py_DECREF(h);
            return r;
        }
        Py_DECREF(h);
    }
    PyObject *r = PyObject_CallMethodOneArg(st, S_use, stream);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static void release_partitions(Arg *a, Py_ssize_t n) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i].partition) {
            PyObject *r = PyObject_CallMethodNoArgs(a[i].partition, S_release);
            if (!r) PyErr_Clear(); else Py_DECREF(r);
        }
    }
    PyErr_Restore(et, ev, tb);
}

static PyObject *Launcher_launch(Launcher *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "launch(args: tuple, stream)");
        return NULL;
    }
    PyObject *args = argv[0], *stream = argv[1];
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n != PyTuple_GET_SIZE(self->anns) || n > MAX_ARGS)
        Py_RETURN_FALSE;
    PyObject *cap = PyObject_GetAttr(stream, S_capture);
    if (!cap) return NULL;
    int capturing = cap != Py_None;
    Py_DECREF(cap);
    if (capturing)
        Py_RETURN_FALSE; /* graph captures keep extra bookkeeping: the Python path */

    Arg a[MAX_ARGS];
    memset(a, 0, sizeof(Arg) * (size_t)n);
    PyObject *result = NULL, *keys = NULL, *lookup = NULL, *device = NULL, *grid = NULL;
    PyObject *params = NULL, *epoch = NULL;
    int ok = 0; /* 1 launched, 0 give up, -1 error */
    StreamInfo si;

    device = PyObject_GetAttr(stream, S_device);
    if (!device) return NULL;
    {
        PyObject *o = PyObject_GetAttr(device, S_ordinal);
        PyObject *h = o ? PyObject_GetAttr(stream, S_handle) : NULL;
        si.device = device;
        si.ordinal = o ? PyLong_AsLong(o) : -1;
        si.handle = h ? PyLong_AsUnsignedLongLong(h) : 0;
        si.torch_checked = 0;
        Py_XDECREF(o); Py_XDECREF(h);
        if (PyErr_Occurred()) { ok = -1; goto done; }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        ok = classify_arg(self, &a[i], PyTuple_GET_ITEM(args, i),
                          PyTuple_GET_ITEM(self->anns, i), stream, &si);
        if (ok != 1) goto done;
    }
    /* the grid: every partition's, all equal */
    for (Py_ssize_t i = 0; i < n && ok == 1; i++) {
        if (!a[i].grid) continue;
        if (!grid) { grid = a[i].grid; Py_INCREF(grid); continue; }
        int eq = PyObject_RichCompareBool(grid, a[i].grid, Py_EQ);
        if (eq != 1) ok = eq < 0 ? -1 : 0;
    }
    unsigned long g[3] = {0, 0, 0};
    if (ok == 1) {
        if (!grid || !PyTuple_Check(grid) || PyTuple_GET_SIZE(grid) != 3) ok = 0;
        for (int d = 0; d < 3 && ok == 1; d++) {
            long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(grid, d));
            if (x == -1 && PyErr_Occurred()) ok = -1;
            else if (x < 0 || x >= GRID_LIMIT) ok = 0;
            else g[d] = (unsigned long)x;
        }
    }
    if (ok != 1) goto done;
    /* every array on the launch's device (else the Python path explains) */
    for (Py_ssize_t i = 0; i < n && ok == 1; i++) {
        if (!a[i].storage) continue;
        PyObject *d = PyObject_GetAttr(a[i].storage, S_device);
        if (!d) { ok = -1; break; }
        if (d != device) ok = 0;
        Py_DECREF(d);
    }
    /* outputs may not alias other arguments: anything that might is left to the Python check */
    for (Py_ssize_t i = 0; i < n && ok == 1; i++) {
        if (!a[i].writable) continue;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (j == i || a[j].scalar) continue;
            if (a[i].start < a[j].end && a[j].start < a[i].end && a[i].start != a[i].end &&
                a[j].start != a[j].end) { ok = 0; break; }
        }
    }
    if (ok != 1) goto done;
    /* the executable, keyed like Kernel._fast: (argument keys, device, grid axes of extent 1) */
    int ones_bits = (g[0] == 1) | ((g[1] == 1) << 1) | ((g[2] == 1) << 2);
    PyObject *exe = NULL;
    if (self->last_exe && self->last_n == n && self->last_device == device &&
        self->last_ones == ones_bits) {
        Py_ssize_t i = 0;
        while (i < n && self->last_keys[i] == a[i].key) i++;
        if (i == n) { exe = self->last_exe; Py_INCREF(exe); }
    }
    if (!exe) {
    keys = PyTuple_New(n);
    if (!keys) { ok = -1; goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(a[i].key);
        PyTuple_SET_ITEM(keys, i, a[i].key);
    }
    PyObject *ones = PyTuple_Pack(3, g[0] == 1 ? Py_True : Py_False,
                                  g[1] == 1 ? Py_True : Py_False, g[2] == 1 ? Py_True : Py_False);
    if (!ones) { ok = -1; goto done; }
    lookup = PyTuple_Pack(3, keys, device, ones);
    Py_DECREF(ones);
    if (!lookup) { ok = -1; goto done; }
    exe = PyDict_GetItemWithError(self->fast, lookup); /* borrowed */
    if (!exe) { ok = PyErr_Occurred() ? -1 : 0; goto done; }
    Py_INCREF(exe);
    if (n <= LAST_MAX) {
        forget_last(self);
        for (Py_ssize_t i = 0; i < n; i++) { Py_INCREF(a[i].key); self->last_keys[i] = a[i].key; }
        Py_INCREF(device); self->last_device = device;
        Py_INCREF(exe); self->last_exe = exe;
        self->last_ones = ones_bits;
        self->last_n = n;
    }
    }

    /* order every storage on the stream (Storage.use) */
    int fast = 1;
    {
        int eph = truthy_attr(stream, S_ephemeral);
        if (eph < 0) { ok = -1; Py_DECREF(exe); goto done; }
        fast = !eph;
    }
    epoch = PyObject_GetAttr(stream, S_epoch);
    if (!epoch) { ok = -1; Py_DECREF(exe); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i].storage && use_storage(a[i].storage, stream, fast, epoch) < 0) {
            ok = -1; Py_DECREF(exe); goto done;
        }
    }

    if (g[0] && g[1] && g[2]) {
        PyObject *nat = PyObject_GetAttr(exe, S_native);
        if (!nat) { ok = -1; Py_DECREF(exe); goto done; }
        if (nat != Py_None) {
            /* (function, context, layout): pack straight from the argument tuples */
            unsigned long long fn = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(nat, 0));
            unsigned long long ctx = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(nat, 1));
            PyObject *lay = PyTuple_GET_ITEM(nat, 2);
            unsigned long long sh = si.handle;
            if (PyErr_Occurred()) { Py_DECREF(nat); Py_DECREF(exe); ok = -1; goto done; }
            ParamBuf pb;
            pb.size = pb.count = 0;
            Py_ssize_t pos = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (pack_values(&pb, PyBytes_AS_STRING(lay), PyBytes_GET_SIZE(lay), &pos,
                                a[i].params) < 0) {
                    /* a value that does not fit: the Python path explains it */
                    PyErr_Clear();
                    Py_DECREF(nat); Py_DECREF(exe); ok = 0; goto done;
                }
            }
            Py_DECREF(nat);
            CUresult err = do_launch((void *)fn, (void *)ctx, (unsigned)g[0], (unsigned)g[1],
                                     (unsigned)g[2], (void *)sh, &pb);
            if (err) {
                if (!PyErr_Occurred()) {
                    PyObject *r = PyObject_CallMethod(exe, "raise_launch_error", "iO", err, grid);
                    Py_XDECREF(r);
                }
                Py_DECREF(exe); ok = -1; goto done;
            }
        } else {
            Py_DECREF(nat);
            params = PyTuple_New(0);
            for (Py_ssize_t i = 0; i < n && params; i++) {
                PyObject *cat = PySequence_Concat(params, a[i].params);
                Py_DECREF(params);
                params = cat;
            }
            if (!params) { Py_DECREF(exe); ok = -1; goto done; }
            PyObject *r = PyObject_CallMethodObjArgs(exe, S_launch, grid, params, stream, NULL);
            if (!r) { Py_DECREF(exe); ok = -1; goto done; }
            Py_DECREF(r);
        }
    }
    Py_DECREF(exe);
    ok = 1;

done:
    if (ok == 1 || ok == -1)
        release_partitions(a, n); /* the launch consumed them (or failed) */
    clear_args(a, n);
    Py_XDECREF(keys); Py_XDECREF(lookup); Py_XDECREF(device); Py_XDECREF(grid);
    Py_XDECREF(params); Py_XDECREF(epoch);
    if (ok < 0)
        return NULL;
    result = ok ? Py_True : Py_False;
    Py_INCREF(result);
    return result;
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL,
     "launch(args, stream) -> bool: launch if the fast path applies (see tilejit/native.py)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tilejit._native.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A kernel's plain launches in C (see tilejit/native.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_methods = Launcher_methods,
};

/* The bytes launch() would pass for `params` (tests compare them with runtime.launch.ParamPacker). */
static PyObject *py_pack(PyObject *self, PyObject *args) {
    const char *layout;
    Py_ssize_t nlayout;
    PyObject *params;
    if (!PyArg_ParseTuple(args, "y#O!", &layout, &nlayout, &PyTuple_Type, &params))
        return NULL;
    ParamBuf pb;
    pb.size = pb.count = 0;
    Py_ssize_t pos = 0;
    memset(pb.data, 0, sizeof(pb.data));
    if (pack_values(&pb, layout, nlayout, &pos, params) < 0)
        return NULL;
    if (pos != nlayout) {
        PyErr_Format(PyExc_ValueError, "%zd parameter values for %zd slots", pos, nlayout);
        return NULL;
    }
    return PyBytes_FromStringAndSize(pb.data, pb.size);
}

static PyObject *py_set_scalar_keys(PyObject *self, PyObject *args) {
    PyObject *ki, *kf, *kb;
    if (!PyArg_ParseTuple(args, "OOO", &ki, &kf, &kb))
        return NULL;
    Py_INCREF(ki); Py_INCREF(kf); Py_INCREF(kb);
    Py_XDECREF(K_int); Py_XDECREF(K_float); Py_XDECREF(K_bool);
    K_int = ki; K_float = kf; K_bool = kb;
    Py_RETURN_NONE;
}

/* --- DLPack export deleters (runtime/dlpack.py; the pure-Python build compiles them with Numba) -- */
/* Each export's manager_ctx holds one reference to its keep-alive object; dropping it frees the
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

static PyObject *py_set_torch(PyObject *self, PyObject *args) {
    PyObject *tt, *dmap, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &tt, &PyDict_Type, &dmap, &fn))
        return NULL;
    Py_INCREF(tt); Py_INCREF(dmap); Py_INCREF(fn);
    Py_XDECREF(torch_type); Py_XDECREF(torch_dtypes); Py_XDECREF(torch_stream_fn);
    torch_type = tt; torch_dtypes = dmap; torch_stream_fn = fn;
    Py_RETURN_NONE;
}

static PyObject *py_set_foreign_partition(PyObject *self, PyObject *args) {
    PyObject *tp;
    if (!PyArg_ParseTuple(args, "O!", &PyType_Type, &tp)) return NULL;
    Py_INCREF(tp);
    Py_XDECREF(fpart_type);
    fpart_type = tp;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_foreign_partition", py_set_foreign_partition, METH_VARARGS,
     "set_foreign_partition(ForeignPartition): launch tile.partition(torch_tensor, tile) in C"},
    {"dlpack_deleters", py_dlpack_deleters, METH_NOARGS,
     "(deleter, versioned deleter, capsule destructor) addresses for DLPack exports"},
    {"set_torch", py_set_torch, METH_VARARGS,
     "set_torch(Tensor, {torch dtype: dtype name}, current_raw_stream): read torch tensors in C"},
    {"launch", py_launch, METH_VARARGS,
     "launch(fn, ctx, gx, gy, gz, stream, layout, params) -> CUresult"},
    {"pack", py_pack, METH_VARARGS, "pack(layout, params) -> bytes (what launch() passes)"},
    {"set_scalar_keys", py_set_scalar_keys, METH_VARARGS,
     "set_scalar_keys(int_key, float_key, bool_key): the keys of weak Python scalars"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native",
                                       "tilejit's launch hot path in C", -1, module_methods};

#define INTERN(var, s) if (!(var = PyUnicode_InternFromString(s))) return NULL

PyMODINIT_FUNC PyInit__native(void) {
    INTERN(S_moved, "_moved"); INTERN(S_info, "_info"); INTERN(S_consumed, "_consumed");
    INTERN(S_leased, "_leased"); INTERN(S_acquire, "_acquire"); INTERN(S_release, "_release");
    INTERN(S_key, "key"); INTERN(S_params, "params"); INTERN(S_storage, "storage");
    INTERN(S_writable, "writable"); INTERN(S_extent, "extent"); INTERN(S_prepare, "prepare");
    INTERN(S_finish, "finish"); INTERN(S_grid, "grid"); INTERN(S_device, "device");
    INTERN(S_capture, "_capture"); INTERN(S_ephemeral, "_ephemeral"); INTERN(S_epoch, "_epoch");
    INTERN(S_h_epoch, "epoch");
    INTERN(S_h, "_h"); INTERN(S_stream, "stream"); INTERN(S_use, "use");
    INTERN(S_native, "_native"); INTERN(S_launch, "launch"); INTERN(S_cu, "_cu");
    INTERN(S_handle, "handle"); INTERN(S_what, "pass to a kernel"); INTERN(S_name, "name");
    INTERN(S_launch_error, "raise_launch_error");
    INTERN(S__storage, "_storage"); INTERN(S_ptr, "ptr"); INTERN(S__offset_bytes, "_offset_bytes");
    INTERN(S__shape, "_shape"); INTERN(S__strides, "_strides"); INTERN(S__dtype, "_dtype");
    INTERN(S__tensor, "_tensor"); INTERN(S_tile_shape, "tile_shape"); INTERN(S_ordinal, "ordinal");
    INTERN(S_wait_raw, "wait_raw"); INTERN(S_get_device, "get_device"); INTERN(S_is_neg, "is_neg");
    INTERN(S_dtype, "dtype"); INTERN(S_data_ptr, "data_ptr"); INTERN(S_shape, "shape");
    INTERN(S_stride, "stride"); INTERN(S_kind_tensor, "tensor");
    INTERN(S_kind_partition, "partition"); INTERN(S_value, "value");
    if (!(ONE = PyLong_FromLong(1)) || !(ZERO = PyLong_FromLong(0)))
        return NULL;
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
