/* A stub CUDA driver for CPU tests of tilejit's C launcher (tests/stub_cuda.py builds it).
 *
 * It exports the three driver entry points the launcher calls (cuLaunchKernel, cuCtxGetCurrent,
 * cuCtxSetCurrent) and records every launch: grid, stream, current context and the packed
 * parameter bytes. A "function handle" is the address of a StubFunction that says how many
 * parameters the kernel takes and how many bytes they span (the real driver reads that from the
 * cubin). It also provides a DLPack C exchange API (as torch.Tensor.__dlpack_c_exchange_api__
 * does) that describes stand-in objects from their `_dl` attribute, so the torch fast path runs
 * without torch and without a GPU.
 */
#include "native.h"        /* tilejit/csrc: Python.h and the DLPack structs */

typedef struct { int32_t nparams, size; } StubFunction;

typedef struct {
    void *fn, *stream, *ctx;
    uint32_t grid[3], block[3], shared;
    int32_t nparams, size;
    int32_t offsets[512];
    unsigned char bytes[4096];
} Record;

static Record last;
static long long count, switches;
static void *current_ctx;
static int fail_next;

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)extra;
    if (fail_next) {
        int code = fail_next;
        fail_next = 0;
        return code;
    }
    const StubFunction *sf = (const StubFunction *)f;
    memset(&last, 0, sizeof(last));
    last.fn = f; last.stream = stream; last.ctx = current_ctx;
    last.grid[0] = gx; last.grid[1] = gy; last.grid[2] = gz;
    last.block[0] = bx; last.block[1] = by; last.block[2] = bz;
    last.shared = shared;
    if (sf && (uintptr_t)sf > 4096 && params) {
        last.nparams = sf->nparams;
        last.size = sf->size;
        const unsigned char *base = (const unsigned char *)params[0];
        for (int i = 0; i < sf->nparams && i < 512; i++)
            last.offsets[i] = (int32_t)((const unsigned char *)params[i] - base);
        if (sf->nparams && sf->size <= (int)sizeof(last.bytes))
            memcpy(last.bytes, base, (size_t)sf->size);
    }
    count++;
    return 0;
}

int cuCtxGetCurrent(void **ctx) { *ctx = current_ctx; return 0; }
int cuCtxSetCurrent(void *ctx) { current_ctx = ctx; switches++; return 0; }

/* --- test controls ---------------------------------------------------------------------- */
void stub_reset(void) { memset(&last, 0, sizeof(last)); count = switches = 0; fail_next = 0; }
long long stub_count(void) { return count; }
long long stub_switches(void) { return switches; }
void stub_fail_next(int code) { fail_next = code; }
void stub_set_current(void *ctx) { current_ctx = ctx; }
const Record *stub_last(void) { return &last; }
size_t stub_record_size(void) { return sizeof(Record); }

/* --- a DLPack C exchange API over stand-in objects (the structs: tilejit/csrc/native.h) --- */
static int64_t shapes[16][8], strides[16][8];
static int ring;
static void *work_stream;
static int stream_fails;

/* obj._dl = (data, device_type, device_id, code, bits, shape, strides or None, byte_offset),
   read without parsing a format or making the attribute's name per call (torch's own reader is a
   C++ cast: the stand-ins' cost should not hide the launcher's) */
static PyObject *dl_attr;

static int describe(void *py_object, DLTensor *out) {
    if (!dl_attr && !(dl_attr = PyUnicode_InternFromString("_dl"))) return -1;
    PyObject *d = PyObject_GetAttr((PyObject *)py_object, dl_attr);
    if (!d) return -1;
    PyObject *shape = PyTuple_Check(d) && PyTuple_GET_SIZE(d) == 8 ? PyTuple_GET_ITEM(d, 5)
                                                                    : NULL;
    int ok = shape && PyTuple_Check(shape);
    if (ok) {
        PyObject *st = PyTuple_GET_ITEM(d, 6);
        Py_ssize_t nd = PyTuple_GET_SIZE(shape);
        int slot = ring++ & 15;
        out->data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(d, 0));
        out->device.device_type = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(d, 1));
        out->device.device_id = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(d, 2));
        out->ndim = (int32_t)nd;
        out->dtype.code = (uint8_t)PyLong_AsLong(PyTuple_GET_ITEM(d, 3));
        out->dtype.bits = (uint8_t)PyLong_AsLong(PyTuple_GET_ITEM(d, 4));
        out->dtype.lanes = 1;
        out->byte_offset = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(d, 7));
        for (Py_ssize_t i = 0; i < nd && i < 8; i++) {
            shapes[slot][i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
            if (st != Py_None) strides[slot][i] = PyLong_AsLongLong(PyTuple_GET_ITEM(st, i));
        }
        out->shape = shapes[slot];
        out->strides = st == Py_None ? NULL : strides[slot];
        ok = !PyErr_Occurred();
    } else {
        PyErr_SetString(PyExc_TypeError, "stub: _dl must be an 8-tuple with a shape tuple");
    }
    Py_DECREF(d);
    return ok ? 0 : -1;
}

static int current_stream(int32_t device_type, int32_t device_id, void **out) {
    (void)device_type; (void)device_id;
    if (stream_fails) return -1;
    *out = work_stream;
    return 0;
}

static DLPackExchangeAPI api = {{1, 3}, NULL, NULL, NULL, NULL, describe, current_stream};

const DLPackExchangeAPI *stub_exchange_api(void) { return &api; }
void stub_set_work_stream(void *s, int fails) { work_stream = s; stream_fails = fails; }
