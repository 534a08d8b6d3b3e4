/* tilejit._native: the launch hot path in C (see tilejit/native.py for the contract).
 *
 * launch(fn, ctx, gx, gy, gz, stream, layout, params) -> CUresult
 *     Pack `params` (Python ints/floats) by `layout` (one struct-style code per slot) into a
 *     stack buffer with natural alignment and call cuLaunchKernel with block (1,1,1). The
 *     kernel's context is made current first when it is not. Raises ValueError/OverflowError
 *     when a value does not fit its slot (the caller explains it).
 *
 * Launcher(fast, anns, DeviceOp, classify, memo).launch(args, stream) -> bool
 *     One plain kernel launch, classification to cuLaunchKernel. Returns False, having launched
 *     nothing, whenever the Python path must take over (see native.py).
 *
 * The CUDA driver is opened with dlopen on first use, so importing this module never needs a GPU.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
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

/* DLPack (dlpack.h 1.3): the tensor description and the C exchange API a producer type exposes
   as `type(x).__dlpack_c_exchange_api__` (torch >= 2.10): a tensor's metadata without a Python
   call, a capsule or an allocation, and the producer's current stream */
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct {
    struct { uint32_t major, minor; } version;
    void *prev_api;
    void *managed_tensor_allocator, *managed_tensor_from_py_object_no_sync,
        *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out);
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **out_stream);
} DLPackExchangeAPI;
#define DL_CUDA 2
#define MAX_DIMS 8          /* foreign arrays of higher rank take the Python path */

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

/* Append C integers (a foreign array's pointer, shape and strides) by layout[*pos...]. */
static int pack_ints(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
                     const int64_t *vals, int n) {
    for (int i = 0; i < n; i++) {
        if (*pos >= nlayout || pb->count >= MAX_PARAMS) {
            PyErr_SetString(PyExc_ValueError, "more parameter values than slots");
            return -1;
        }
        char c = layout[(*pos)++];
        int sz = slot_size(c);
        Py_ssize_t off = sz ? (pb->size + sz - 1) / sz * sz : 0;
        if (!sz || off + sz > MAX_PARAM_BYTES) {
            PyErr_SetString(PyExc_ValueError, "bad slot for an array parameter");
            return -1;
        }
        int64_t x = vals[i];
        char *buf = pb->data + off;
        switch (c) {
        case 'Q': case 'q': memcpy(buf, &x, 8); break;
        case 'I': case 'i': {
            if (c == 'I' ? (x < 0 || x > 0xffffffffLL) : (x < INT32_MIN || x > INT32_MAX)) {
                PyErr_SetString(PyExc_OverflowError, "array parameter does not fit its slot");
                return -1;
            }
            int32_t y = (int32_t)x; memcpy(buf, &y, 4); break;
        }
        default:
            PyErr_SetString(PyExc_ValueError, "bad slot for an array parameter");
            return -1;
        }
        pb->ptrs[pb->count++] = buf;
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

/* --- the runtime's classes, read by __slots__ offset ---------------------------------------------
 * Every class the hot path touches keeps its state in __slots__; set_layout() records where each
 * slot lives, so a launch reads them with a load instead of an attribute lookup (most of a
 * launch's host time otherwise). An unset slot reads NULL: the caller gives the launch to Python,
 * which raises the usual error. Without a layout (a class changed shape) every C path falls back
 * to Python. */
#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
static PyTypeObject *T_tensor, *T_partition, *T_storage, *T_freestate, *T_stream, *T_arginfo,
    *T_klaunch, *T_fpart, *T_future;
static struct {
    Py_ssize_t t_moved, t_info, t_storage, t_shape, t_strides, t_offset, t_dtype, t_extent, t_share,
        t_pinfo;
    Py_ssize_t p_tensor, p_tile, p_owned, p_leased, p_consumed, p_info, p_grid, p_extent, p_ref;
    Py_ssize_t st_ptr, st_device, st_h, st_leases;
    Py_ssize_t h_stream, h_epoch;
    Py_ssize_t s_device, s_handle, s_cu, s_epoch, s_ephemeral, s_capture;
    Py_ssize_t i_fast;
    Py_ssize_t k_kernel, k_args, k_arity, k_simple, k_grid, k_const_grid, k_options, k_generics,
        k_ran;
    Py_ssize_t fp_value, fp_tile, fp_live;
    Py_ssize_t f_out, f_stream, f_done;
} O;
static int layout_ok;

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

static void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject **p = (PyObject **)((char *)o + off);
    Py_INCREF(v);
    Py_XSETREF(*p, v);
}

typedef struct { PyTypeObject **tp; Py_ssize_t *off; const char *name; } SlotSpec;

/* set_layout(Tensor, Partition, Storage, _FreeState, Stream, ArgInfo, KernelLaunch,
              ForeignPartition, DeviceFuture) -> bool */
static PyObject *py_set_layout(PyObject *m, PyObject *args) {
    PyObject *t[9];
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!", &PyType_Type, &t[0], &PyType_Type, &t[1],
                          &PyType_Type, &t[2], &PyType_Type, &t[3], &PyType_Type, &t[4],
                          &PyType_Type, &t[5], &PyType_Type, &t[6], &PyType_Type, &t[7],
                          &PyType_Type, &t[8]))
        return NULL;
    PyTypeObject **types[9] = {&T_tensor, &T_partition, &T_storage, &T_freestate, &T_stream,
                               &T_arginfo, &T_klaunch, &T_fpart, &T_future};
    layout_ok = 0;
    for (int i = 0; i < 9; i++) {
        Py_INCREF(t[i]);
        Py_XSETREF(*types[i], (PyTypeObject *)t[i]);
    }
    SlotSpec specs[] = {
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
        {&T_arginfo, &O.i_fast, "fast"},
        {&T_klaunch, &O.k_kernel, "kernel"}, {&T_klaunch, &O.k_args, "args"},
        {&T_klaunch, &O.k_arity, "arity"}, {&T_klaunch, &O.k_simple, "_simple"},
        {&T_klaunch, &O.k_grid, "_grid"}, {&T_klaunch, &O.k_const_grid, "_const_grid"},
        {&T_klaunch, &O.k_options, "_options"}, {&T_klaunch, &O.k_generics, "_generics"},
        {&T_klaunch, &O.k_ran, "_ran"},     /* ops/deviceop.py RAN_SLOT: "never run" warning */
        {&T_fpart, &O.fp_value, "value"}, {&T_fpart, &O.fp_tile, "tile_shape"},
        {&T_fpart, &O.fp_live, "_live"},
        {&T_future, &O.f_out, "_out"}, {&T_future, &O.f_stream, "stream"},
        {&T_future, &O.f_done, "_done"},
    };
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

static long device_ordinal(PyObject *dev) {
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

/* --- Launcher ------------------------------------------------------------------------------- */
#define LAST_MAX 16
/* The memo entry of the last foreign array seen at one argument position, by value: the next
   call with the same layout reads no Python object (argspec.array_keys is the memo behind it) */
typedef struct {
    int valid, ndim, align;
    PyObject *name;         /* owned: the tilejit dtype name */
    PyObject *kind;         /* interned: "tensor" / "partition" */
    PyObject *extra;        /* owned: writable flag or tile shape */
    int64_t shape[MAX_DIMS], strides[MAX_DIMS];
    PyObject *key, *grid;   /* owned (grid NULL for tensors) */
    long long span;
    PyObject *plain;        /* owned weakref: the last object seen without torch's neg bit */
    /* the last CuPy array seen here: what never changes for one array (data, dtype) */
    PyObject *cobj;         /* owned weakref */
    PyObject *cname;        /* owned: its dtype name */
    unsigned long long cptr;
    long cdev;
    long long cisz;
} FCache;
#define FC_MAX 16

typedef struct {
    PyObject_HEAD
    PyObject *fast, *anns, *deviceop_type, *classify, *memo;
    /* the last lookup, by identity: a loop of launches of one layout skips building and
       hashing the key tuple (Kernel._fast entries never change once set) */
    Py_ssize_t last_n;
    PyObject *last_keys[LAST_MAX], *last_device, *last_exe;
    int last_ones;
    Py_ssize_t nparams;     /* parameters including tile.Constant ones (Kernel.__call__) */
    int simple;             /* no tile.Constant parameters */
    unsigned long long launches;   /* launched here, not yet folded into Kernel.stats */
    unsigned long long total;      /* launched here, ever (every 256th checks the globals) */
    FCache fc[FC_MAX];
} Launcher;

static void forget_last(Launcher *self) {
    for (Py_ssize_t i = 0; i < self->last_n; i++) Py_CLEAR(self->last_keys[i]);
    Py_CLEAR(self->last_device);
    Py_CLEAR(self->last_exe);
    self->last_n = 0;
}

/* forget the layout (not the per-object entries) */
static void fc_forget_layout(FCache *c) {
    c->valid = 0;
    Py_CLEAR(c->name); Py_CLEAR(c->extra); Py_CLEAR(c->key); Py_CLEAR(c->grid);
}

static void fc_clear(FCache *c) {
    fc_forget_layout(c);
    Py_CLEAR(c->plain); Py_CLEAR(c->cobj); Py_CLEAR(c->cname);
}

/* what a launch needs to know about its stream */
typedef struct {
    PyObject *device;       /* owned */
    long ordinal;
    unsigned long long handle;
    int torch_checked;      /* torch's current stream already ordered before this launch */
    int cupy_checked;       /* CuPy's, likewise */
} StreamInfo;

/* CuPy, when its reader registered it (set_cupy): ndarray, {numpy dtype: (name, itemsize)},
   cupy.cuda.get_current_stream */
static PyObject *cupy_type, *cupy_dtypes, *cupy_stream_fn;
/* torch, when a torch reader registered it (set_torch) */
static PyObject *torch_type, *torch_dtypes, *torch_stream_fn;
/* runtime.partition.ForeignPartition (tile.partition of a foreign array), when registered */
/* torch.Tensor's DLPack C exchange API (NULL: read its attributes), and nn.Parameter, the one
   subclass read through it (others may override data access with __torch_function__) */
static const DLPackExchangeAPI *torch_api;
static PyObject *param_type;
/* DLPack (code, bits) -> tilejit dtype name (set_torch_exchange) */
typedef struct { uint8_t code, bits; PyObject *name; } DLName;
#define MAX_DL_NAMES 32
static DLName dl_names[MAX_DL_NAMES];
static int n_dl_names;

/* interned attribute names */
static PyObject *S_acquire, *S_key, *S_params, *S_storage, *S_writable, *S_extent, *S_prepare,
    *S_finish, *S_grid, *S_use, *S_native, *S_launch, *S_what, *S_name, *S_ptr, *S_wait_raw,
    *S_get_device, *S_is_neg, *S_dtype, *S_data_ptr, *S_shape, *S_stride, *S_kind_tensor,
    *S_kind_partition, *S_data, *S_device_id, *S_strides, *S_fast, *S_ndim;
static PyObject *K_int, *K_float, *K_bool, *ONE, *ZERO;

static void Launcher_dealloc(Launcher *self) {
    Py_XDECREF(self->fast); Py_XDECREF(self->anns); Py_XDECREF(self->deviceop_type);
    Py_XDECREF(self->classify);
    Py_XDECREF(self->memo);
    forget_last(self);
    for (int i = 0; i < FC_MAX; i++) fc_clear(&self->fc[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Launcher(fast, anns, DeviceOp, classify, memo[, nparams, simple]) */
static int Launcher_init(Launcher *self, PyObject *args, PyObject *kw) {
    PyObject *fast, *anns, *dt, *cl, *memo;
    Py_ssize_t nparams = -1;
    int simple = 0;
    if (!PyArg_ParseTuple(args, "O!O!OOO!|np", &PyDict_Type, &fast, &PyTuple_Type, &anns, &dt,
                          &cl, &PyDict_Type, &memo, &nparams, &simple))
        return -1;
    if (self->fast) {
        PyErr_SetString(PyExc_TypeError, "Launcher is initialized once");
        return -1;
    }
    self->nparams = nparams < 0 ? PyTuple_GET_SIZE(anns) : nparams;
    self->simple = simple;
    Py_INCREF(fast); Py_INCREF(anns); Py_INCREF(dt); Py_INCREF(cl); Py_INCREF(memo);
    self->fast = fast; self->anns = anns; self->deviceop_type = dt; self->classify = cl;
    self->memo = memo;
    return 0;
}

typedef struct {
    PyObject *key;      /* borrowed from info (or a module constant) */
    PyObject *params;   /* owned */
    PyObject *storage;  /* owned or NULL */
    PyObject *info;     /* owned or NULL (scalars handled here have none) */
    PyObject *grid;     /* owned or NULL: partitions */
    PyObject *partition;/* borrowed: the Partition argument, or NULL */
    PyObject *fpart;    /* borrowed: a ForeignPartition classified in Python, or NULL */
    PyObject *hold;     /* owned: keeps `key` alive when it came from the memo */
    int writable, scalar;
    int niv;            /* params as C integers instead (foreign arrays): pointer, shape, strides */
    int64_t iv[1 + 2 * MAX_DIMS];
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

/* argspec.array_keys[(kind, dtype name, shape, strides, ptr % 16, extra)]: its key (borrowed,
   kept alive by the memo, which only grows), span and grid (borrowed, NULL for tensors).
   1 found, 0 not memoized yet (the Python path computes it), -1 error. */
static int memo_lookup(Launcher *self, PyObject *kind, PyObject *name, PyObject *shape,
                       PyObject *strides, int align, PyObject *extra, PyObject **key,
                       long long *span, PyObject **grid) {
    PyObject *low = PyLong_FromLong(align);
    if (!low) return -1;
    PyObject *mk = PyTuple_Pack(6, kind, name, shape, strides, low, extra);
    Py_DECREF(low);
    if (!mk) return -1;
    PyObject *m = PyDict_GetItemWithError(self->memo, mk); /* borrowed */
    Py_DECREF(mk);
    if (!m) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) != 4) return 0;
    *key = PyTuple_GET_ITEM(m, 0);
    *span = PyLong_AsLongLong(PyTuple_GET_ITEM(m, 2));
    if (*span == -1 && PyErr_Occurred()) return -1;
    *grid = PyTuple_GET_ITEM(m, 3) == Py_None ? NULL : PyTuple_GET_ITEM(m, 3);
    return 1;
}

/* An array given by Python shape/strides tuples at `ptr`: key, grid and extent from the memo,
   params as a tuple (ptr, *shape, *strides). 1, 0 (not memoized yet), -1. */
static int from_memo(Launcher *self, Arg *a, PyObject *kind, PyObject *dtype_name,
                     PyObject *shape, PyObject *strides, unsigned long long ptr, PyObject *extra) {
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != nd) return 0;
    PyObject *key, *grid;
    long long span;
    int r = memo_lookup(self, kind, dtype_name, shape, strides, (int)(ptr & 15), extra, &key,
                        &span, &grid);
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
    Py_INCREF(key); a->hold = key; a->key = key;
    if (grid) { Py_INCREF(grid); a->grid = grid; }
    a->start = (long long)ptr;
    a->end = (long long)ptr + span;
    return 1;
}

/* A tilejit tensor without a cached info (a fresh view or import): its key from the memo. */
static int tensor_from_memo(Launcher *self, Arg *a, PyObject *t, PyObject *kind, PyObject *extra) {
    if (Py_TYPE(t) != T_tensor) return 0;
    PyObject *st = SLOT(t, O.t_storage), *off = SLOT(t, O.t_offset), *shape = SLOT(t, O.t_shape),
             *strides = SLOT(t, O.t_strides), *dt = SLOT(t, O.t_dtype);
    if (!st || !off || !shape || !strides || !dt || Py_TYPE(st) != T_storage ||
        !PyTuple_Check(shape) || !SLOT(st, O.st_ptr))
        return 0;
    PyObject *name = PyObject_GetAttr(dt, S_name);
    if (!name) return -1;
    unsigned long long ptr = PyLong_AsUnsignedLongLong(SLOT(st, O.st_ptr)) +
                             PyLong_AsUnsignedLongLong(off);
    int r = PyErr_Occurred() ? -1 : from_memo(self, a, kind, name, shape, strides, ptr, extra);
    Py_DECREF(name);
    if (r == 1) { Py_INCREF(st); a->storage = st; }
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

static PyObject *tuple_of(const int64_t *x, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *o = PyLong_FromLongLong(x[i]);
        if (!o) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* stream.wait_raw(producer) unless the launch runs on the producer's stream: 1, or -1. */
static int wait_producer(StreamInfo *si, PyObject *stream, unsigned long long hv) {
    if (hv == si->handle) return 1;
    PyObject *h = PyLong_FromUnsignedLongLong(hv);
    if (!h) return -1;
    PyObject *w = PyObject_CallMethodOneArg(stream, S_wait_raw, h);
    Py_DECREF(h);
    if (!w) return -1;
    Py_DECREF(w);
    return 1;
}

/* Order the launch after torch's pending work on its current stream (DLPack's rule); once per
   launch: every torch argument is on the launch's device, so on the same stream. */
static int order_after_torch(StreamInfo *si, PyObject *stream, long dev) {
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
    return wait_producer(si, stream, hv);
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
    return order_after_torch(si, stream, dev);
}

static PyObject *dl_name(DLDataType t) {
    if (t.lanes != 1) return NULL;
    for (int i = 0; i < n_dl_names; i++)
        if (dl_names[i].code == t.code && dl_names[i].bits == t.bits) return dl_names[i].name;
    return NULL;
}

/* 0 when `v` is a lazily negated torch view (its data read as is would be wrong: the Python
   path explains), 1 otherwise. Checked once per tensor object: the position's weakref tells the
   same live object (the bit is fixed when a view is made). */
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


/* An array of dtype `name` laid out as `nd` dims of `shape`/`strides` (elements) at `ptr`: its
   key, grid and span from the position's cache `c` (by value) or the shared memo
   (argspec.array_keys; not there yet: 0, the Python path computes it), into `a`. 1, 0, -1. */
static int layout_arg(Launcher *self, Arg *a, FCache *c, PyObject *kind, PyObject *extra,
                      PyObject *name, int nd, const int64_t *shape, const int64_t *strides,
                      unsigned long long ptr) {
    int align = (int)(ptr & 15);
    size_t nb = sizeof(int64_t) * (size_t)nd;
    int hit = c && c->valid && c->kind == kind && c->name == name && c->ndim == nd &&
              c->align == align && memcmp(c->shape, shape, nb) == 0 &&
              memcmp(c->strides, strides, nb) == 0;
    if (hit && c->extra != extra) {     /* a tile shape spelled by a new tuple: compare values */
        hit = PyObject_RichCompareBool(c->extra, extra, Py_EQ);
        if (hit < 0) return -1;
    }
    PyObject *key, *grid;
    long long span;
    if (hit) {
        key = c->key; grid = c->grid; span = c->span;
    } else {
        PyObject *shape_t = tuple_of(shape, nd), *strides_t = tuple_of(strides, nd);
        int r = shape_t && strides_t
                    ? memo_lookup(self, kind, name, shape_t, strides_t, align, extra, &key, &span,
                                  &grid)
                    : -1;
        Py_XDECREF(shape_t); Py_XDECREF(strides_t);
        if (r != 1) return r;
        if (c) {
            fc_forget_layout(c);
            c->kind = kind; c->ndim = nd; c->align = align;
            memcpy(c->shape, shape, nb); memcpy(c->strides, strides, nb);
            Py_INCREF(name); c->name = name;
            Py_INCREF(extra); c->extra = extra;
            Py_INCREF(key); c->key = key;
            Py_XINCREF(grid); c->grid = grid;
            c->span = span;
            c->valid = 1;
        }
    }
    Py_INCREF(key); a->hold = key; a->key = key;
    if (grid) { Py_INCREF(grid); a->grid = grid; }
    a->start = (long long)ptr;
    a->end = (long long)ptr + span;
    a->iv[0] = (int64_t)ptr;
    memcpy(a->iv + 1, shape, nb);
    memcpy(a->iv + 1 + nd, strides, nb);
    a->niv = 1 + 2 * nd;
    return 1;
}

/* A torch tensor read through the DLPack C exchange API, with no Python call on a repeated
   layout: same contract as torch_arg. `pos`: the argument position (its FCache). */
static int exchange_arg(Launcher *self, Arg *a, PyObject *v, Py_ssize_t pos, StreamInfo *si,
                        PyObject *stream, PyObject *kind, PyObject *extra) {
    DLTensor dl;
    if (torch_api->dltensor_from_py_object_no_sync(v, &dl) != 0) {
        PyErr_Clear();          /* not describable: the Python path explains */
        return 0;
    }
    if (dl.device.device_type != DL_CUDA || dl.device.device_id != si->ordinal) return 0;
    int nd = dl.ndim;
    if (nd < 0 || nd > MAX_DIMS) return 0;
    PyObject *name = dl_name(dl.dtype);
    if (!name) return 0;
    FCache *c = pos < FC_MAX ? &self->fc[pos] : NULL;
    int r = not_negated(c, v);
    if (r != 1) return r;
    int64_t strides[MAX_DIMS];
    if (dl.strides) {
        memcpy(strides, dl.strides, sizeof(int64_t) * (size_t)nd);
    } else {                    /* DLPack: NULL strides mean compact row-major */
        int64_t acc = 1;
        for (int d = nd - 1; d >= 0; d--) { strides[d] = acc; acc *= dl.shape[d]; }
    }
    r = layout_arg(self, a, c, kind, extra, name, nd, dl.shape, strides,
                   (unsigned long long)(uintptr_t)dl.data + dl.byte_offset);
    if (r != 1) return r;
    return order_after_torch(si, stream, dl.device.device_id);
}

static int ints_of(PyObject *t, int64_t *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (x == -1 && PyErr_Occurred()) return -1;
        out[i] = x;
    }
    return 0;
}

/* A CuPy array read from its attributes, ordered after CuPy's current stream once per launch;
   `kind`/`extra` as in torch_arg. An array's data pointer, device and dtype never change, so the
   position's cache keeps them for the last array seen there (by weakref); shape and strides
   (which `a.shape = ...` may change in place) are read every call. */
static int cupy_arg(Launcher *self, Arg *a, PyObject *v, Py_ssize_t pos, StreamInfo *si,
                    PyObject *stream, PyObject *kind, PyObject *extra) {
    FCache *c = pos < FC_MAX ? &self->fc[pos] : NULL, tmp;
    if (!c) { memset(&tmp, 0, sizeof(tmp)); c = &tmp; }
    if (!(c->cobj && PyWeakref_GetObject(c->cobj) == v)) {
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
        Py_CLEAR(c->cobj); Py_CLEAR(c->cname);
        c->cptr = ptr; c->cdev = dev;
        c->cisz = PyLong_AsLongLong(PyTuple_GET_ITEM(nm, 1));
        c->cname = PyTuple_GET_ITEM(nm, 0);
        Py_INCREF(c->cname);
        if (c != &tmp && !(c->cobj = PyWeakref_NewRef(v, NULL))) PyErr_Clear();
    }
    PyObject *name = c->cname;
    Py_INCREF(name);            /* `tmp` owns nothing once we return */
    long long isz = c->cisz;
    unsigned long long ptr = c->cptr;
    int ok_dev = c->cdev == si->ordinal;
    if (c == &tmp) Py_CLEAR(tmp.cname);
    int r = 0;
    PyObject *shape = NULL, *bstr = NULL;
    if (!ok_dev || isz <= 0) goto out;                  /* another device: Python explains */
    shape = PyObject_GetAttr(v, S_shape);
    bstr = shape ? PyObject_GetAttr(v, S_strides) : NULL;
    if (!bstr) { r = -1; goto out; }
    Py_ssize_t nd = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (nd < 0 || nd > MAX_DIMS || !PyTuple_Check(bstr) || PyTuple_GET_SIZE(bstr) != nd)
        goto out;
    int64_t sh[MAX_DIMS], es[MAX_DIMS];
    if (ints_of(shape, sh, nd) < 0 || ints_of(bstr, es, nd) < 0) { r = -1; goto out; }
    for (Py_ssize_t i = 0; i < nd; i++) {
        if (es[i] % isz) goto out;                      /* odd byte strides: Python explains */
        es[i] /= isz;
    }
    r = layout_arg(self, a, c == &tmp ? NULL : c, kind, extra, name, (int)nd, sh, es, ptr);
out:
    Py_DECREF(name); Py_XDECREF(shape); Py_XDECREF(bstr);
    if (r != 1 || si->cupy_checked) return r;
    si->cupy_checked = 1;
    PyObject *cs = PyObject_CallNoArgs(cupy_stream_fn);
    PyObject *h = cs ? PyObject_GetAttr(cs, S_ptr) : NULL;
    Py_XDECREF(cs);
    if (!h) return -1;
    unsigned long long hv = PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    if (PyErr_Occurred()) return -1;
    return wait_producer(si, stream, hv);
}

/* Fill `a` from a sealed info's `fast` tuple (argspec.ArgInfo.seal): 1 ok, 0 not sealed, -1. */
static int from_fast(Arg *a, PyObject *info) {
    PyObject *f;
    if (Py_TYPE(info) == T_arginfo) {
        f = SLOT(info, O.i_fast);
        if (!f) return 0;
        Py_INCREF(f);
    } else if (!(f = PyObject_GetAttr(info, S_fast))) {
        return -1;
    }
    if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 7) { Py_DECREF(f); return 0; }
    a->hold = f;                                    /* keeps key and the rest alive */
    a->key = PyTuple_GET_ITEM(f, 0);
    a->params = PyTuple_GET_ITEM(f, 1);
    Py_INCREF(a->params);
    PyObject *st = PyTuple_GET_ITEM(f, 2);
    if (st != Py_None) { Py_INCREF(st); a->storage = st; }
    a->writable = PyTuple_GET_ITEM(f, 3) == Py_True;
    a->start = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 4));
    a->end = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 5));
    PyObject *g = PyTuple_GET_ITEM(f, 6);
    if (g != Py_None) { Py_INCREF(g); a->grid = g; }
    if (!PyTuple_Check(a->params)) return 0;
    return PyErr_Occurred() ? -1 : 1;
}

/* The storage of partition `p`'s tensor, or NULL (borrowed) */
static PyObject *partition_storage(PyObject *p) {
    PyObject *t = SLOT(p, O.p_tensor);
    PyObject *st = t && Py_TYPE(t) == T_tensor ? SLOT(t, O.t_storage) : NULL;
    return st && Py_TYPE(st) == T_storage ? st : NULL;
}

/* Partition._acquire with its common cases inline (`p` a Partition): no other live partition
   holds a lease on the storage. Otherwise (a possible overlap, a long list to prune) Python
   decides and raises. 1 ok, -1 error. */
static int lease_acquire(PyObject *p, PyObject *what) {
    PyObject *leased = SLOT(p, O.p_leased);
    if (leased == Py_True) return 1;
    PyObject *st = partition_storage(p), *ref = SLOT(p, O.p_ref);
    PyObject *leases = st ? SLOT(st, O.st_leases) : NULL;
    int python = leased != Py_False || !ref || !leases;
    if (!python && leases == Py_None) {
        PyObject *l = PyList_New(1);
        if (!l) return -1;
        Py_INCREF(ref);
        PyList_SET_ITEM(l, 0, ref);
        set_slot(st, O.st_leases, l);
        Py_DECREF(l);
    } else if (!python && PyList_CheckExact(leases) && PyList_GET_SIZE(leases) <= 8) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leases) && !python; i++) {
            PyObject *w = PyList_GET_ITEM(leases, i);
            PyObject *q = PyWeakref_Check(w) ? PyWeakref_GetObject(w) : NULL;
            if (!q || (q != Py_None && q != p && (Py_TYPE(q) != T_partition ||
                                                  SLOT(q, O.p_leased) != Py_False)))
                python = 1;
        }
        if (!python && PyList_Append(leases, ref) < 0) return -1;
    } else {
        python = 1;
    }
    if (python) {
        PyObject *x = PyObject_CallMethodOneArg(p, S_acquire, what);
        if (!x) return -1;
        Py_DECREF(x);
        return 1;
    }
    set_slot(p, O.p_leased, Py_True);
    return 1;
}

/* Partition._release inline (`p` a Partition); never fails. */
static void lease_release(PyObject *p) {
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

/* Classify args[i]; 1 ok, 0 give up, -1 error. */
static int classify_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, PyObject *stream,
                        StreamInfo *si, Py_ssize_t pos) {
    PyTypeObject *tp = Py_TYPE(v);
    if (tp == T_tensor) {
        if (SLOT(v, O.t_moved) != Py_False) return 0;   /* moved (or odd): Python explains */
        PyObject *info = SLOT(v, O.t_info);
        if (!info) return 0;
        Py_INCREF(info);
        if (info == Py_None) {
            Py_DECREF(info);
            int r = tensor_from_memo(self, a, v, S_kind_tensor, Py_False);
            if (r) return r;
            /* first time this layout is seen: classify makes (and caches) the info */
            info = PyObject_CallFunctionObjArgs(self->classify, v, ann, stream, NULL);
            if (!info) return -1;
        }
        int r = from_fast(a, info);
        if (r == 0) {
            clear_args(a, 1);
            memset(a, 0, sizeof(Arg));
            r = from_info(a, info);
        }
        Py_DECREF(info);
        return r;
    }
    if (tp == T_partition) {
        if (SLOT(v, O.p_consumed) != Py_False) return 0;
        if (lease_acquire(v, S_what) < 0) return -1;
        PyObject *info = SLOT(v, O.p_info), *t = SLOT(v, O.p_tensor), *tile = SLOT(v, O.p_tile);
        if (!info || !t || !tile || Py_TYPE(t) != T_tensor) return 0;
        if (info == Py_None) {
            /* a new partition: its tensor's shared info for this tile shape, once sealed */
            PyObject *by = SLOT(t, O.t_pinfo);
            if (by && PyDict_CheckExact(by)) {
                info = PyDict_GetItemWithError(by, tile); /* borrowed */
                if (!info) {
                    if (PyErr_Occurred()) return -1;
                    info = Py_None;
                }
            }
        }
        Py_INCREF(info);
        if (info != Py_None) {
            int r = from_fast(a, info);
            if (r != 0) {
                Py_DECREF(info);
                if (r < 0) return -1;
                a->partition = v;
                a->writable = 1;
                return a->grid ? 1 : 0;
            }
            clear_args(a, 1);
            memset(a, 0, sizeof(Arg));
        }
        if (info == Py_None) {
            Py_DECREF(info);
            int r = tensor_from_memo(self, a, t, S_kind_partition, tile);
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
        int r = torch_api && ((PyObject *)tp == torch_type || (PyObject *)tp == param_type)
                    ? exchange_arg(self, a, v, pos, si, stream, S_kind_tensor, Py_False)
                    : torch_arg(self, a, v, si, stream, S_kind_tensor, Py_False);
        if (r) return r;
    }
    if (cupy_type && ann == Py_None && (PyObject *)tp == cupy_type) {
        int r = cupy_arg(self, a, v, pos, si, stream, S_kind_tensor, Py_False);
        if (r) return r;
    }
    if (tp == T_fpart) {
        /* tile.partition(array, tile): an output partition of a foreign array; no lease (tilejit
           does not own the memory), the extent check covers aliasing */
        PyObject *inner = SLOT(v, O.fp_value), *tile = SLOT(v, O.fp_tile);
        if (!inner || !tile) return 0;
        PyObject *itp = (PyObject *)Py_TYPE(inner);
        int r;
        if (torch_api && (itp == torch_type || itp == param_type)) {
            r = exchange_arg(self, a, inner, pos, si, stream, S_kind_partition, tile);
        } else if (torch_type && PyObject_TypeCheck(inner, (PyTypeObject *)torch_type)) {
            r = torch_arg(self, a, inner, si, stream, S_kind_partition, tile);
        } else if (cupy_type && itp == cupy_type &&
                   (r = cupy_arg(self, a, inner, pos, si, stream, S_kind_partition, tile)) != 0) {
            if (r < 0) return -1;
        } else {
            /* CuPy, __cuda_array_interface__ and DLPack arrays: classified in Python, which orders
               the launch after their producer, or imports the array for this launch (fp._live,
               released after it by release_partitions) */
            a->fpart = v;
            PyObject *info = PyObject_CallFunctionObjArgs(self->classify, v, ann, stream, NULL);
            if (!info) return -1;
            r = from_info(a, info);
            Py_DECREF(info);
            if (r == 1 && !(a->grid = PyObject_GetAttr(a->info, S_grid))) return -1;
            return r;
        }
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

/* End the leases the launch's partitions took (`leases`: it launched or failed), and drop the
   arrays imported for foreign partitions (always: a Python retry imports them again). */
static void release_partitions(Arg *a, Py_ssize_t n, int leases) {
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

/* One plain launch of `args` (a tuple) on `stream`: 1 launched, 0 nothing done (the Python
   path takes over), -1 error set. */
static int run_launch(Launcher *self, PyObject *args, PyObject *stream) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n != PyTuple_GET_SIZE(self->anns) || n > MAX_ARGS)
        return 0;
    /* a tilejit Stream outside a graph capture (captures keep extra bookkeeping: Python) */
    if (!layout_ok || Py_TYPE(stream) != T_stream || SLOT(stream, O.s_capture) != Py_None)
        return 0;

    Arg a[MAX_ARGS];
    memset(a, 0, sizeof(Arg) * (size_t)n);
    PyObject *keys = NULL, *lookup = NULL, *device = NULL, *grid = NULL;
    PyObject *params = NULL, *epoch = NULL;
    int ok = 0; /* 1 launched, 0 give up, -1 error */
    StreamInfo si;

    device = SLOT(stream, O.s_device);
    PyObject *handle = SLOT(stream, O.s_handle);
    if (!device || !handle) return 0;
    Py_INCREF(device);
    si.device = device;
    si.ordinal = device_ordinal(device);
    si.handle = PyLong_AsUnsignedLongLong(handle);
    si.torch_checked = si.cupy_checked = 0;
    if (PyErr_Occurred()) { ok = -1; goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        ok = classify_arg(self, &a[i], PyTuple_GET_ITEM(args, i),
                          PyTuple_GET_ITEM(self->anns, i), stream, &si, i);
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
        PyObject *st = a[i].storage;
        if (Py_TYPE(st) != T_storage || SLOT(st, O.st_device) != device) ok = 0;
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
    int fast = SLOT(stream, O.s_ephemeral) == Py_False;
    epoch = SLOT(stream, O.s_epoch);
    if (!epoch) { ok = 0; Py_DECREF(exe); goto done; }
    Py_INCREF(epoch);
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
                if ((a[i].niv ? pack_ints(&pb, PyBytes_AS_STRING(lay), PyBytes_GET_SIZE(lay),
                                          &pos, a[i].iv, a[i].niv)
                              : pack_values(&pb, PyBytes_AS_STRING(lay), PyBytes_GET_SIZE(lay),
                                            &pos, a[i].params)) < 0) {
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
                PyObject *mine = a[i].niv ? tuple_of(a[i].iv, a[i].niv) : NULL;
                if (a[i].niv && !mine) { Py_CLEAR(params); break; }
                PyObject *cat = PySequence_Concat(params, mine ? mine : a[i].params);
                Py_XDECREF(mine);
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
    release_partitions(a, n, ok != 0); /* the launch consumed them (or failed) */
    clear_args(a, n);
    Py_XDECREF(keys); Py_XDECREF(lookup); Py_XDECREF(device); Py_XDECREF(grid);
    Py_XDECREF(params); Py_XDECREF(epoch);
    if (ok == 1) { self->launches++; self->total++; }
    return ok;
}

static PyObject *Launcher_launch(Launcher *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "launch(args: tuple, stream)");
        return NULL;
    }
    int ok = run_launch(self, argv[0], argv[1]);
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}

/* take_launches() -> int: launches since the last call (Kernel.stats folds them in) */
static PyObject *Launcher_take_launches(Launcher *self, PyObject *noargs) {
    unsigned long long n = self->launches;
    self->launches = 0;
    return PyLong_FromUnsignedLongLong(n);
}

static PyMemberDef Launcher_members[] = {
    {"total", T_ULONGLONG, offsetof(Launcher, total), READONLY,
     "launches made here, ever (every 256th checks the kernel's frozen globals)"},
    {NULL, 0, 0, 0, NULL}};

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL,
     "launch(args, stream) -> bool: launch if the fast path applies (see tilejit/native.py)"},
    {"take_launches", (PyCFunction)Launcher_take_launches, METH_NOARGS,
     "take_launches() -> int: launches made here since the last call"},
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
    .tp_members = Launcher_members,
};

/* --- the lazy call in C: Kernel.__call__, KernelLaunch.submit_on / sync_on, tile.partition -----
 * install() puts these methods on the Python classes (dispatcher._install_native); each takes the
 * common case and hands anything else to the Python method it replaced, so behaviour and error
 * messages are the pure-Python build's. */
static PyObject *fb_call, *fb_submit, *fb_sync, *fb_submit_plain, *fb_sync_plain, *fb_sync_quietly,
    *fb_partition;
static PyObject *S_check_globals, *S_synchronize;

/* The per-thread submission guard (runtime/submission.py uses it when the extension is on). */
static _Thread_local int tl_executing;

static PyObject *py_executing(PyObject *m, PyObject *noargs) { return PyBool_FromLong(tl_executing); }

static PyObject *py_swap_executing(PyObject *m, PyObject *flag) {
    int v = PyObject_IsTrue(flag);
    if (v < 0) return NULL;
    int prev = tl_executing;
    tl_executing = v;
    return PyBool_FromLong(prev);
}

/* DeviceFuture(out, stream), its __init__ inlined (done at once on a simulated stream) */
static PyObject *make_future(PyObject *out, PyObject *stream) {
    PyObject *cu = SLOT(stream, O.s_cu);       /* a Stream (submit_common checked) */
    PyObject *f = T_future->tp_alloc(T_future, 0);
    if (!f) return NULL;
    set_slot(f, O.f_out, out);
    set_slot(f, O.f_stream, stream);
    set_slot(f, O.f_done, cu == Py_None ? Py_True : Py_False);
    return f;
}

static PyObject *call_prepended(PyObject *fn, PyObject *self, PyObject *args, PyObject *kw) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *all = PyTuple_New(n + 1);
    if (!all) return NULL;
    Py_INCREF(self);
    PyTuple_SET_ITEM(all, 0, self);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        Py_INCREF(x);
        PyTuple_SET_ITEM(all, i + 1, x);
    }
    PyObject *r = PyObject_Call(fn, all, kw);
    Py_DECREF(all);
    return r;
}

/* Kernel.__call__: a KernelLaunch of positional arguments (binding keywords is Python's) */
static PyObject *kernel_call(PyObject *kernel, PyObject *args, PyObject *kw) {
    PyObject *nat = PyObject_GetAttr(kernel, S_native);
    if (!nat) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!layout_ok || !Py_IS_TYPE(nat, &LauncherType) || (kw && PyDict_GET_SIZE(kw))) {
        Py_DECREF(nat);
        return call_prepended(fb_call, kernel, args, kw);
    }
    Launcher *L = (Launcher *)nat;
    Py_ssize_t nrt = PyTuple_GET_SIZE(L->anns);
    int simple = L->simple && n == nrt, known = n == nrt || n == L->nparams;
    Py_DECREF(nat);
    if (!known)
        return call_prepended(fb_call, kernel, args, kw);
    /* KernelLaunch.__init__ for a plain call, slot by slot */
    PyObject *op = T_klaunch->tp_alloc(T_klaunch, 0);
    PyObject *arity = op ? PyLong_FromSsize_t(n) : NULL;
    PyObject *generics = arity ? PyDict_New() : NULL;
    if (!generics) {
        Py_XDECREF(arity);
        Py_XDECREF(op);
        return NULL;
    }
    set_slot(op, O.k_kernel, kernel);
    set_slot(op, O.k_args, args);
    set_slot(op, O.k_arity, arity);
    set_slot(op, O.k_simple, simple ? Py_True : Py_False);
    set_slot(op, O.k_grid, Py_None);
    set_slot(op, O.k_const_grid, Py_None);
    set_slot(op, O.k_options, Py_None);
    set_slot(op, O.k_generics, generics);
    Py_DECREF(arity);
    Py_DECREF(generics);
    return op;
}

/* KernelLaunch.submit_on / sync_on of a plain launch on a tilejit Stream */
static PyObject *submit_common(PyObject *op, PyObject *stream, int wait) {
    PyObject *full = wait ? fb_sync : fb_submit;
    if (layout_ok && Py_TYPE(op) == T_klaunch)
        set_slot(op, O.k_ran, Py_True);     /* it ran: no "never run" warning when freed */
    if (!layout_ok || Py_TYPE(stream) != T_stream || Py_TYPE(op) != T_klaunch || tl_executing ||
        SLOT(op, O.k_simple) != Py_True || SLOT(op, O.k_grid) != Py_None)
        return PyObject_CallFunctionObjArgs(full, op, stream, NULL);
    PyObject *kernel = SLOT(op, O.k_kernel), *args = SLOT(op, O.k_args);
    if (!kernel || !args || !PyTuple_Check(args))
        return PyObject_CallFunctionObjArgs(full, op, stream, NULL);
    Py_INCREF(kernel);
    Py_INCREF(args);
    PyObject *nat = PyObject_GetAttr(kernel, S_native);
    PyObject *result = NULL;
    if (!nat) goto out;
    int ok = 0;
    if (Py_IS_TYPE(nat, &LauncherType)) {
        Launcher *L = (Launcher *)nat;
        tl_executing = 1;
        ok = run_launch(L, args, stream);
        tl_executing = 0;
        if (ok == 1 && !(L->total & 255)) {     /* now and then: did a frozen global change? */
            PyObject *r = PyObject_CallMethodNoArgs(kernel, S_check_globals);
            if (!r) ok = -1; else Py_DECREF(r);
        }
    }
    if (ok == 1) {
        if (!wait) {
            result = make_future(args, stream);
        } else {
            PyObject *r = PyObject_CallMethodNoArgs(stream, S_synchronize);
            if (r) { Py_DECREF(r); Py_INCREF(args); result = args; }
        }
    } else if (ok == 0) {       /* the general path (compiles on a miss, explains errors) */
        result = PyObject_CallFunctionObjArgs(wait ? fb_sync_plain : fb_submit_plain, op, stream,
                                              NULL);
    } else if (wait) {          /* as DeviceOp.sync_on: drain the stream, then raise */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *r = PyObject_CallFunctionObjArgs(fb_sync_quietly, stream, NULL);
        Py_XDECREF(r);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
out:
    Py_DECREF(kernel); Py_DECREF(args); Py_XDECREF(nat);
    return result;
}

static PyObject *klaunch_submit_on(PyObject *op, PyObject *stream) {
    return submit_common(op, stream, 0);
}

static PyObject *klaunch_sync_on(PyObject *op, PyObject *stream) {
    return submit_common(op, stream, 1);
}

static int tile_ok(PyObject *tile, int ndim) {
    Py_ssize_t r = PyTuple_GET_SIZE(tile);
    if (r != ndim || r < 1 || r > 3) return 0;
    for (Py_ssize_t i = 0; i < r; i++) {
        PyObject *x = PyTuple_GET_ITEM(tile, i);
        if (!PyLong_CheckExact(x)) return 0;
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow || n < 1 || (n & (n - 1))) return 0;
    }
    return 1;
}

/* tile.partition(array, tile_shape): a torch tensor or CuPy array and a tuple of powers of two
   is the common case; the rest (and every error) is runtime.partition.partition's */
static PyObject *new_foreign_partition(PyObject *v, PyObject *tile) {
    PyObject *p = T_fpart->tp_alloc(T_fpart, 0);
    if (!p) return NULL;
    set_slot(p, O.fp_value, v);
    set_slot(p, O.fp_tile, tile);
    set_slot(p, O.fp_live, Py_None);
    return p;
}

static PyObject *py_partition(PyObject *m, PyObject *const *argv, Py_ssize_t nargs,
                              PyObject *kwnames) {
    if (nargs == 2 && !kwnames && layout_ok && PyTuple_CheckExact(argv[1])) {
        PyObject *v = argv[0], *tile = argv[1], *tp = (PyObject *)Py_TYPE(v);
        if (torch_api && (tp == torch_type || tp == param_type)) {
            DLTensor dl;
            if (torch_api->dltensor_from_py_object_no_sync(v, &dl) != 0)
                PyErr_Clear();
            else if (tile_ok(tile, dl.ndim))
                return new_foreign_partition(v, tile);
        } else if (cupy_type && tp == cupy_type) {
            PyObject *nd = PyObject_GetAttr(v, S_ndim);
            long n = nd && PyLong_Check(nd) ? PyLong_AsLong(nd) : -1;
            Py_XDECREF(nd);
            PyErr_Clear();
            if (n >= 0 && tile_ok(tile, (int)n))
                return new_foreign_partition(v, tile);
        }
    }
    if (!fb_partition) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native.partition: not installed");
        return NULL;
    }
    return PyObject_Vectorcall(fb_partition, argv, (size_t)nargs, kwnames);
}

/* Tensor.partition(shape): the common case (a usable, unshared tensor, a tuple of powers of
   two, no broadcast axis, no other live partition of its storage) in C */
static PyObject *fb_tensor_partition;

static PyObject *tensor_partition(PyObject *t, PyObject *shape) {
    if (!layout_ok || Py_TYPE(t) != T_tensor || !PyTuple_CheckExact(shape))
        goto slow;
    PyObject *tshape = SLOT(t, O.t_shape), *strides = SLOT(t, O.t_strides),
             *extent = SLOT(t, O.t_extent), *share = SLOT(t, O.t_share);
    if (SLOT(t, O.t_moved) != Py_False || !share || !PyLong_CheckExact(share) ||
        !tshape || !strides || !extent || !PyTuple_Check(tshape) || !PyTuple_Check(strides) ||
        !PyTuple_Check(extent) || !tile_ok(shape, (int)PyTuple_GET_SIZE(tshape)))
        goto slow;
    int overflow = 0;
    if (PyLong_AsLongAndOverflow(share, &overflow) != 0 || overflow) goto slow;  /* shared */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strides); i++) {
        PyObject *x = PyTuple_GET_ITEM(strides, i);
        if (!PyLong_CheckExact(x) || (PyLong_AsLongAndOverflow(x, &overflow) == 0 && !overflow))
            goto slow;                                          /* a broadcast axis: Python */
    }
    PyObject *p = T_partition->tp_alloc(T_partition, 0);
    if (!p) return NULL;
    set_slot(p, O.p_tensor, t);
    set_slot(p, O.p_tile, shape);
    set_slot(p, O.p_owned, Py_False);
    set_slot(p, O.p_leased, Py_False);
    set_slot(p, O.p_consumed, Py_False);
    set_slot(p, O.p_info, Py_None);
    set_slot(p, O.p_grid, Py_None);
    set_slot(p, O.p_extent, extent);
    PyObject *ref = PyWeakref_NewRef(p, NULL);
    if (!ref) { Py_DECREF(p); return NULL; }
    set_slot(p, O.p_ref, ref);
    Py_DECREF(ref);
    /* as Partition._create: a failed lease leaves no partition behind */
    if (lease_acquire(p, S_kind_partition) < 0) { Py_DECREF(p); return NULL; }
    return p;
slow:
    return PyObject_CallFunctionObjArgs(fb_tensor_partition, t, shape, NULL);
}

static PyMethodDef tensor_partition_def = {"partition", (PyCFunction)tensor_partition, METH_O,
    "A borrowed output partition: the kernel writes into this tensor in place.\n\n"
    "``shape`` is the tile shape (powers of two, rank 1-3, same rank as the tensor). Needs\n"
    "exclusive access to the storage (no other live view or partition)."};

static int put_method(PyTypeObject *tp, PyMethodDef *def);

/* --- Prepared: a launch packed once (dispatcher.PreparedLaunch) --------------------------------- */
typedef struct {
    PyObject_HEAD
    void *fn, *ctx;
    unsigned g[3];
    unsigned long long sh;
    PyObject *stream, *storages, *closed_error, *exe, *grid;
    int closed;
    ParamBuf pb;
} Prepared;

static void Prepared_dealloc(Prepared *self) {
    Py_XDECREF(self->stream); Py_XDECREF(self->storages); Py_XDECREF(self->closed_error);
    Py_XDECREF(self->exe); Py_XDECREF(self->grid);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Prepared(function, context, grid, stream, layout, params, storages, closed_error, executable):
   launch errors are raised by executable.raise_launch_error(code, grid) */
static int Prepared_init(Prepared *self, PyObject *args, PyObject *kw) {
    unsigned long long fn, ctx;
    PyObject *grid, *stream, *params, *storages, *err, *exe;
    const char *layout;
    Py_ssize_t nlayout;
    if (!PyArg_ParseTuple(args, "KKO!Oy#O!O!OO", &fn, &ctx, &PyTuple_Type, &grid, &stream,
                          &layout, &nlayout, &PyTuple_Type, &params, &PyTuple_Type, &storages,
                          &err, &exe))
        return -1;
    if (self->stream) {
        PyErr_SetString(PyExc_TypeError, "Prepared is initialized once");
        return -1;
    }
    if (!PyArg_ParseTuple(grid, "III", &self->g[0], &self->g[1], &self->g[2])) return -1;
    if (!layout_ok || Py_TYPE(stream) != T_stream || !SLOT(stream, O.s_handle)) {
        PyErr_SetString(PyExc_TypeError, "Prepared needs a tilejit Stream");
        return -1;
    }
    self->sh = PyLong_AsUnsignedLongLong(SLOT(stream, O.s_handle));
    if (PyErr_Occurred()) return -1;
    self->pb.size = self->pb.count = 0;
    Py_ssize_t pos = 0;
    if (pack_values(&self->pb, layout, nlayout, &pos, params) < 0) return -1;
    if (pos != nlayout) {
        PyErr_Format(PyExc_ValueError, "%zd parameter values for %zd slots", pos, nlayout);
        return -1;
    }
    self->fn = (void *)(uintptr_t)fn;
    self->ctx = (void *)(uintptr_t)ctx;
    Py_INCREF(stream); self->stream = stream;
    Py_INCREF(storages); self->storages = storages;
    Py_INCREF(err); self->closed_error = err;
    Py_INCREF(exe); self->exe = exe;
    Py_INCREF(grid); self->grid = grid;
    return 0;
}

static PyObject *Prepared_launch(Prepared *self, PyObject *noargs) {
    if (self->closed || !self->stream) {
        PyErr_SetString(self->closed_error ? self->closed_error : PyExc_RuntimeError,
                        "this prepared launch was closed");
        return NULL;
    }
    PyObject *stream = self->stream;
    int fast = SLOT(stream, O.s_capture) == Py_None && SLOT(stream, O.s_ephemeral) == Py_False;
    PyObject *epoch = SLOT(stream, O.s_epoch);
    if (!epoch) {
        PyErr_SetString(PyExc_RuntimeError, "the prepared launch's stream is not usable");
        return NULL;
    }
    Py_INCREF(epoch);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->storages); i++) {
        if (use_storage(PyTuple_GET_ITEM(self->storages, i), stream, fast, epoch) < 0) {
            Py_DECREF(epoch);
            return NULL;
        }
    }
    Py_DECREF(epoch);
    if (self->g[0] && self->g[1] && self->g[2]) {
        CUresult err = do_launch(self->fn, self->ctx, self->g[0], self->g[1], self->g[2],
                                 (void *)(uintptr_t)self->sh, &self->pb);
        if (err == -1 && PyErr_Occurred()) return NULL;
        if (err) {
            PyObject *r = PyObject_CallMethod(self->exe, "raise_launch_error", "iO", err,
                                              self->grid);
            Py_XDECREF(r);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed (CUresult %d)", err);
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *Prepared_close(Prepared *self, PyObject *noargs) {
    self->closed = 1;
    Py_RETURN_NONE;
}

static PyMethodDef Prepared_methods[] = {
    {"launch", (PyCFunction)Prepared_launch, METH_NOARGS,
     "launch(): queue the kernel on the prepared stream (no wait)"},
    {"close", (PyCFunction)Prepared_close, METH_NOARGS, "close(): later launches raise"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject PreparedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tilejit._native.Prepared",
    .tp_basicsize = sizeof(Prepared),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A launch packed once (dispatcher.PreparedLaunch).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Prepared_init,
    .tp_dealloc = (destructor)Prepared_dealloc,
    .tp_methods = Prepared_methods,
};

static PyMethodDef kernel_call_def = {"__call__", (PyCFunction)(void (*)(void))kernel_call,
    METH_VARARGS | METH_KEYWORDS, "kernel(*args) -> KernelLaunch (a lazy launch)"};
static PyMethodDef submit_on_def = {"submit_on", (PyCFunction)klaunch_submit_on, METH_O,
    "Queue the launch on `stream` without waiting (the hot path of a kernel call)."};
static PyMethodDef sync_on_def = {"sync_on", (PyCFunction)klaunch_sync_on, METH_O,
    "Run on `stream` and wait for completion; return the output."};

static int put_method(PyTypeObject *tp, PyMethodDef *def) {
    PyObject *d = PyDescr_NewMethod(tp, def);
    if (!d) return -1;
    int r = PyObject_SetAttrString((PyObject *)tp, def->ml_name, d);
    Py_DECREF(d);
    return r;
}

/* install(Kernel, Kernel.__call__, KernelLaunch.submit_on, KernelLaunch.sync_on,
           KernelLaunch._submit_plain, KernelLaunch._sync_plain, _sync_quietly, Tensor.partition):
   the C methods above replace the Python ones on Kernel, KernelLaunch and Tensor (the latter two
   as set_layout registered them); the Python ones stay the fallback */
static PyObject *py_install(PyObject *m, PyObject *args) {
    PyObject *kt, *c, *su, *sy, *sp, *syp, *sq, *tp;
    if (!PyArg_ParseTuple(args, "O!OOOOOOO", &PyType_Type, &kt, &c, &su, &sy, &sp, &syp, &sq,
                          &tp))
        return NULL;
    if (!layout_ok) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native.install: no layout (set_layout)");
        return NULL;
    }
    if (fb_call) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native.install: already installed");
        return NULL;
    }
    Py_INCREF(c); Py_INCREF(su); Py_INCREF(sy); Py_INCREF(sp); Py_INCREF(syp); Py_INCREF(sq);
    Py_INCREF(tp);
    fb_call = c; fb_submit = su; fb_sync = sy; fb_submit_plain = sp; fb_sync_plain = syp;
    fb_sync_quietly = sq; fb_tensor_partition = tp;
    if (put_method((PyTypeObject *)kt, &kernel_call_def) < 0 ||
        put_method(T_klaunch, &submit_on_def) < 0 || put_method(T_klaunch, &sync_on_def) < 0 ||
        put_method(T_tensor, &tensor_partition_def) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* install_finalizer(DeviceOp.__del__): KernelLaunch objects are freed by the C finalizer below,
   which reads the "ran" slot (ops/deviceop.py RAN_SLOT) and calls the Python __del__ only for a
   launch that never ran (it warns): a Python __del__ per launch cost about 0.2 us */
static PyObject *fb_del;

static void klaunch_finalize(PyObject *op) {
    if (SLOT(op, O.k_ran) == Py_True) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallOneArg(fb_del, op);
    if (r) Py_DECREF(r); else PyErr_WriteUnraisable(op);
    PyErr_Restore(et, ev, tb);
}

static PyObject *py_install_finalizer(PyObject *m, PyObject *del) {
    if (!layout_ok) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native.install_finalizer: no layout");
        return NULL;
    }
    Py_INCREF(del);
    Py_XSETREF(fb_del, del);
    T_klaunch->tp_finalize = klaunch_finalize;
    Py_RETURN_NONE;
}

/* set_partition_fallback(runtime.partition.partition) */
static PyObject *py_set_partition_fallback(PyObject *m, PyObject *fn) {
    Py_INCREF(fn);
    Py_XSETREF(fb_partition, fn);
    Py_RETURN_NONE;
}

/* torch_stream_of(values) -> (ordinal, handle) of torch's current stream for the first torch GPU
   tensor among `values` (tile.partition()s of them included), None when there is none, or
   NotImplemented when a value needs the Python reader */
static PyObject *py_torch_stream_of(PyObject *m, PyObject *values) {
    if (!torch_api || !layout_ok || !PyTuple_Check(values)) Py_RETURN_NOTIMPLEMENTED;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values); i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i);
        if (Py_TYPE(v) == T_fpart) {
            v = SLOT(v, O.fp_value);
            if (!v) continue;
        }
        PyObject *tp = (PyObject *)Py_TYPE(v);
        if (tp != torch_type && tp != param_type) {
            if (torch_type && PyObject_TypeCheck(v, (PyTypeObject *)torch_type))
                Py_RETURN_NOTIMPLEMENTED;
            continue;
        }
        DLTensor dl;
        if (torch_api->dltensor_from_py_object_no_sync(v, &dl) != 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        if (dl.device.device_type != DL_CUDA) continue;
        void *cs = NULL;
        if (torch_api->current_work_stream(DL_CUDA, dl.device.device_id, &cs) != 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        return Py_BuildValue("(iK)", (int)dl.device.device_id,
                             (unsigned long long)(uintptr_t)cs);
    }
    Py_RETURN_NONE;
}

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

static PyObject *py_set_cupy(PyObject *self, PyObject *args) {
    PyObject *tp, *dmap, *fn;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &tp, &PyDict_Type, &dmap, &fn))
        return NULL;
    PyObject *k, *v;
    Py_ssize_t it = 0;
    while (PyDict_Next(dmap, &it, &k, &v)) {
        if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 2 || !PyLong_Check(PyTuple_GET_ITEM(v, 1))) {
            PyErr_SetString(PyExc_TypeError, "set_cupy: dtypes map to (name, itemsize)");
            return NULL;
        }
    }
    Py_INCREF(tp); Py_INCREF(dmap); Py_INCREF(fn);
    Py_XSETREF(cupy_type, tp); Py_XSETREF(cupy_dtypes, dmap); Py_XSETREF(cupy_stream_fn, fn);
    Py_RETURN_NONE;
}

/* set_torch_exchange(capsule or None, nn.Parameter, {(dlpack code, bits): dtype name}) -> bool:
   read torch tensors through torch.Tensor.__dlpack_c_exchange_api__ (True when usable) */
static PyObject *torch_api_capsule;
static PyObject *py_set_torch_exchange(PyObject *self, PyObject *args) {
    PyObject *cap, *ptype, *names;
    if (!PyArg_ParseTuple(args, "OOO!", &cap, &ptype, &PyDict_Type, &names)) return NULL;
    for (int i = 0; i < n_dl_names; i++) Py_CLEAR(dl_names[i].name);
    n_dl_names = 0;
    PyObject *k, *v;
    Py_ssize_t it = 0;
    while (PyDict_Next(names, &it, &k, &v) && n_dl_names < MAX_DL_NAMES) {
        int code, bits;
        if (!PyArg_ParseTuple(k, "ii", &code, &bits)) return NULL;
        dl_names[n_dl_names].code = (uint8_t)code;
        dl_names[n_dl_names].bits = (uint8_t)bits;
        Py_INCREF(v);
        dl_names[n_dl_names++].name = v;
    }
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

static PyMethodDef module_methods[] = {
    {"set_torch_exchange", py_set_torch_exchange, METH_VARARGS,
     "set_torch_exchange(capsule, Parameter, {(code, bits): name}) -> bool: torch via DLPack's C API"},
    {"set_layout", py_set_layout, METH_VARARGS,
     "set_layout(Tensor, Partition, Storage, _FreeState, Stream, ArgInfo, KernelLaunch, "
     "ForeignPartition, DeviceFuture) -> bool"},
    {"install", py_install, METH_VARARGS,
     "install(Kernel, *python fallbacks): the C lazy call and Tensor.partition"},
    {"install_finalizer", py_install_finalizer, METH_O,
     "install_finalizer(DeviceOp.__del__): KernelLaunch's 'never run' check in C"},
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
    {"swap_executing", py_swap_executing, METH_O,
     "swap_executing(flag) -> bool: set this thread's submission guard, return the old value"},
    {"dlpack_deleters", py_dlpack_deleters, METH_NOARGS,
     "(deleter, versioned deleter, capsule destructor) addresses for DLPack exports"},
    {"set_cupy", py_set_cupy, METH_VARARGS,
     "set_cupy(ndarray, {numpy dtype: (name, itemsize)}, get_current_stream): read CuPy in C"},
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
    INTERN(S_acquire, "_acquire"); INTERN(S_key, "key"); INTERN(S_params, "params");
    INTERN(S_storage, "storage"); INTERN(S_writable, "writable"); INTERN(S_extent, "extent");
    INTERN(S_prepare, "prepare"); INTERN(S_finish, "finish"); INTERN(S_grid, "grid");
    INTERN(S_use, "use"); INTERN(S_native, "_native"); INTERN(S_launch, "launch");
    INTERN(S_what, "pass to a kernel"); INTERN(S_name, "name"); INTERN(S_ptr, "ptr");
    INTERN(S_wait_raw, "wait_raw"); INTERN(S_get_device, "get_device"); INTERN(S_is_neg, "is_neg");
    INTERN(S_dtype, "dtype"); INTERN(S_data_ptr, "data_ptr"); INTERN(S_shape, "shape");
    INTERN(S_stride, "stride"); INTERN(S_kind_tensor, "tensor");
    INTERN(S_kind_partition, "partition"); INTERN(S_fast, "fast"); INTERN(S_data, "data");
    INTERN(S_device_id, "device_id"); INTERN(S_strides, "strides"); INTERN(S_ndim, "ndim");
    INTERN(S_check_globals, "check_globals"); INTERN(S_synchronize, "synchronize");
    if (!(ONE = PyLong_FromLong(1)) || !(ZERO = PyLong_FromLong(0)))
        return NULL;
    if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&PreparedType) < 0)
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
    Py_INCREF(&PreparedType);
    if (PyModule_AddObject(m, "Prepared", (PyObject *)&PreparedType) < 0) {
        Py_DECREF(&PreparedType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
