/* The CUDA driver, opened with dlopen on first use (importing the module never needs a GPU), and
 * the packing of kernel parameters by layout code (runtime/cuda_executable.py: _NATIVE_CODE, the one
 * table of codes; ParamPacker packs the same bytes in Python). */
#include "native.h"
#include <dlfcn.h>
#include <math.h>

typedef void *CUfunction, *CUstream, *CUcontext;
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void **, void **);
static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static int driver_state; /* 0: not loaded yet, 1: loaded, -1: unavailable */

static int bind_driver(void *h) {
    p_cuLaunchKernel = h ? dlsym(h, "cuLaunchKernel") : NULL;
    p_cuCtxGetCurrent = h ? dlsym(h, "cuCtxGetCurrent") : NULL;
    p_cuCtxSetCurrent = h ? dlsym(h, "cuCtxSetCurrent") : NULL;
    driver_state = (p_cuLaunchKernel && p_cuCtxGetCurrent && p_cuCtxSetCurrent) ? 1 : -1;
    return driver_state;
}

static int load_driver(void) {
    if (driver_state)
        return driver_state;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        h = dlopen("libcuda.so", RTLD_NOW | RTLD_GLOBAL);
    return bind_driver(h);
}

/* use_driver(path or None): launch through the library at `path` (a stub driver that records
   launches, for CPU tests); None goes back to libcuda on the next launch */
PyObject *py_use_driver(PyObject *self, PyObject *path) {
    if (path == Py_None) {
        driver_state = 0;
        Py_RETURN_NONE;
    }
    PyObject *b = PyUnicode_EncodeFSDefault(path);
    if (!b) return NULL;
    void *h = dlopen(PyBytes_AS_STRING(b), RTLD_NOW | RTLD_LOCAL);
    Py_DECREF(b);
    if (!h || bind_driver(h) < 0) {
        driver_state = 0;
        PyErr_Format(PyExc_OSError, "use_driver: %s", h ? "missing entry points" : dlerror());
        return NULL;
    }
    Py_RETURN_NONE;
}

/* --- packing ------------------------------------------------------------------------------ */
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

static int pack_int(char c, PyObject *v, char *buf) {
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

static int pack_float(char c, PyObject *v, char *buf) {
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    if (c == 'd') { memcpy(buf, &x, 8); return 0; }
    if (c == 'f') { float y = (float)x; memcpy(buf, &y, 4); return 0; }
#if PY_VERSION_HEX < 0x030B0000
    if (c == 'e') return _PyFloat_Pack2(x, (unsigned char *)buf, 1);
#else
    if (c == 'e') return PyFloat_Pack2(x, buf, 1);
#endif
    uint16_t y = bf16_bits((float)x);
    memcpy(buf, &y, 2);
    return 0;
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
    case 'I': case 'i': case 'H': case 'h': case 'B': case 'b':
        return pack_int(c, v, buf);
    case 'd': case 'f': case 'e': case 'E':
        return pack_float(c, v, buf);
    }
    PyErr_Format(PyExc_ValueError, "unknown parameter slot '%c'", c);
    return -1;
}

/* The next slot of the layout, aligned in the buffer: its address, or NULL with an error. */
static char *next_slot(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
                       char *code) {
    if (*pos >= nlayout) {
        PyErr_SetString(PyExc_ValueError, "more parameter values than slots");
        return NULL;
    }
    if (pb->count >= MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "too many kernel parameters (at most 512)");
        return NULL;
    }
    char c = layout[(*pos)++];
    int sz = slot_size(c);
    if (!sz) {
        PyErr_Format(PyExc_ValueError, "unknown parameter slot '%c'", c);
        return NULL;
    }
    /* at most 512 slots of at most 8 bytes, naturally aligned: never beyond the buffer. Sizes
       are powers of two: a mask, not a division (49 slots for fft's seven rank-3 arrays) */
    Py_ssize_t off = (pb->size + sz - 1) & ~(Py_ssize_t)(sz - 1);
    /* the alignment gap zeroed: the driver never reads it, but a launch's buffer is on the stack
       and the bytes are then always the Python packer's (the stub driver records them all) */
    while (pb->size < off) pb->data[pb->size++] = 0;
    pb->ptrs[pb->count++] = pb->data + off;
    pb->size = off + sz;
    *code = c;
    return pb->data + off;
}

/* Append the values of tuple `vals` by layout[*pos...]; -1 with an error set on failure. */
int pack_values(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
                PyObject *vals) {
    Py_ssize_t n = PyTuple_GET_SIZE(vals);
    for (Py_ssize_t i = 0; i < n; i++) {
        char c;
        char *buf = next_slot(pb, layout, nlayout, pos, &c);
        if (!buf || pack_one(c, PyTuple_GET_ITEM(vals, i), buf) < 0)
            return -1;
    }
    return 0;
}

/* Append C integers (a foreign array's pointer, shape and strides) by layout[*pos...]. */
int pack_ints(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
              const int64_t *vals, int n) {
    for (int i = 0; i < n; i++) {
        char c;
        char *buf = next_slot(pb, layout, nlayout, pos, &c);
        if (!buf) return -1;
        int64_t x = vals[i];
        if (c == 'Q' || c == 'q') {
            memcpy(buf, &x, 8);
        } else if ((c == 'i' && x >= INT32_MIN && x <= INT32_MAX) ||
                   (c == 'I' && x >= 0 && x <= 0xffffffffLL)) {
            int32_t y = (int32_t)x;
            memcpy(buf, &y, 4);
        } else {
            PyErr_SetString(PyExc_OverflowError, "array parameter does not fit its slot");
            return -1;
        }
    }
    return 0;
}

/* Weak scalars checked at the call (tilejit/scalars.py, runtime/launch.native_checks): one record
   per checked parameter; a packed value outside [lo, hi] goes to exe.scalar_out_of_range(index,
   value), which raises (an int that does not fit) or warns (a float that overflows). 0, or -1. */
typedef struct { int32_t slot, kind; union { int64_t i; double d; } lo, hi; } Check;

int check_scalars(ParamBuf *pb, PyObject *checks, PyObject *exe) {
    Py_ssize_t n = PyBytes_GET_SIZE(checks) / (Py_ssize_t)sizeof(Check);
    for (Py_ssize_t k = 0; k < n; k++) {
        Check c;
        memcpy(&c, PyBytes_AS_STRING(checks) + k * (Py_ssize_t)sizeof(Check), sizeof(Check));
        if (c.slot < 0 || c.slot >= pb->count) continue;
        PyObject *v;
        if (c.kind == 1) {
            int64_t x;
            memcpy(&x, pb->ptrs[c.slot], 8);
            if (x >= c.lo.i && x <= c.hi.i) continue;
            v = PyLong_FromLongLong(x);
        } else {
            double x;
            memcpy(&x, pb->ptrs[c.slot], 8);
            if (x >= c.lo.d && x <= c.hi.d) continue;
            v = PyFloat_FromDouble(x);
        }
        PyObject *i = v ? PyLong_FromLong(c.slot) : NULL;
        PyObject *r = i ? PyObject_CallMethodObjArgs(exe, S_out_of_range, i, v, NULL) : NULL;
        Py_XDECREF(i);
        Py_XDECREF(v);
        if (!r) return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* cuLaunchKernel with `ctx` current; returns the CUresult (or -1 with an error set). */
CUresult do_launch(void *fn, void *ctx, const unsigned g[3], void *stream, ParamBuf *pb) {
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
        err = p_cuLaunchKernel((CUfunction)fn, g[0], g[1], g[2], 1, 1, 1, 0, (CUstream)stream,
                               pb->count ? pb->ptrs : NULL, NULL);
    if (switched)       /* give the caller (torch, the CUDA runtime) its current device back */
        p_cuCtxSetCurrent(cur);
    Py_END_ALLOW_THREADS
    return err;
}

/* exe.raise_launch_error(err, grid) (the executable words the error); always -1. */
int raise_launch_error(PyObject *exe, CUresult err, PyObject *grid) {
    if (PyErr_Occurred()) return -1;
    PyObject *r = PyObject_CallMethod(exe, "raise_launch_error", "iO", err, grid);
    Py_XDECREF(r);
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed (CUresult %d)", err);
    return -1;
}

/* Pack `params` by `layout` into `pb`, every slot filled: 0, or -1 with an error set. */
static int pack_all(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, PyObject *params) {
    pb->size = pb->count = 0;
    Py_ssize_t pos = 0;
    if (pack_values(pb, layout, nlayout, &pos, params) < 0)
        return -1;
    if (pos != nlayout) {
        PyErr_Format(PyExc_ValueError, "%zd parameter values for %zd slots", pos, nlayout);
        return -1;
    }
    return 0;
}

/* launch(fn, ctx, gx, gy, gz, stream, layout, params) -> CUresult: pack `params` (Python
   ints/floats) by `layout` and call cuLaunchKernel with block (1,1,1); ValueError/OverflowError
   when a value does not fit its slot (runtime.cuda_executable.CudaExecutable explains it). */
PyObject *py_launch(PyObject *self, PyObject *args) {
    unsigned long long fn, ctx, stream;
    unsigned g[3];
    const char *layout;
    Py_ssize_t nlayout;
    PyObject *params;
    if (!PyArg_ParseTuple(args, "KKIIIKy#O!", &fn, &ctx, &g[0], &g[1], &g[2], &stream, &layout,
                          &nlayout, &PyTuple_Type, &params))
        return NULL;
    ParamBuf pb;
    if (pack_all(&pb, layout, nlayout, params) < 0)
        return NULL;
    CUresult err = do_launch((void *)(uintptr_t)fn, (void *)(uintptr_t)ctx, g,
                             (void *)(uintptr_t)stream, &pb);
    if (err == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(err);
}

/* pack(layout, params) -> bytes: what launch() passes (tests compare it with ParamPacker). */
PyObject *py_pack(PyObject *self, PyObject *args) {
    const char *layout;
    Py_ssize_t nlayout;
    PyObject *params;
    if (!PyArg_ParseTuple(args, "y#O!", &layout, &nlayout, &PyTuple_Type, &params))
        return NULL;
    ParamBuf pb;
    memset(pb.data, 0, sizeof(pb.data));
    if (pack_all(&pb, layout, nlayout, params) < 0)
        return NULL;
    return PyBytes_FromStringAndSize(pb.data, pb.size);
}

/* Pack for a Prepared launch (prepared.c): the same as py_launch's packing. */
int pack_prepared(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, PyObject *params) {
    return pack_all(pb, layout, nlayout, params);
}
