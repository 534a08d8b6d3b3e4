/* tilejit._native: the launch hot path in C. Shared declarations of the extension's sources:
 *
 *   driver.c   the CUDA driver (dlopen), parameter packing, weak-scalar checks, raw launch()
 *   layout.c   the runtime classes read by __slots__ offset, prototypes, leases, fallback stats
 *   memo.c     argument keys: the shared memo (argspec.array_keys) and per-position caches
 *   foreign.c  torch tensors (DLPack C exchange API or attributes) and CuPy arrays
 *   args.c     classification of one launch argument
 *   launcher.c the Launcher type: one plain launch, classification to cuLaunchKernel
 *   prepared.c the Prepared type (dispatcher.PreparedLaunch) and the lazy call (kernel(...),
 *              op.submit_on/sync_on, t.partition, tile.partition)
 *   cutile.c   ct.launch (tilejit.cutile) replayed from its memos
 *   module.c   module setup, interned names, DLPack export deleters
 *
 * The rules live in Python (tilejit/native.py explains the split): C replays what Python
 * recorded (keys in the memo, sealed ArgInfo tuples, slot layouts, scalar checks, prototypes of
 * the objects it makes) and hands anything else back to Python, counting why (native.stats()).
 */
#ifndef TILEJIT_NATIVE_H
#define TILEJIT_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

typedef int CUresult;

/* DLPack (dlpack.h 1.3): the tensor description and the C exchange API a producer type exposes
   as `type(x).__dlpack_c_exchange_api__` (torch >= 2.10) */
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

/* --- driver.c --------------------------------------------------------------------------- */
typedef struct {
    char data[MAX_PARAM_BYTES] __attribute__((aligned(16)));
    void *ptrs[MAX_PARAMS];
    Py_ssize_t size, count;
} ParamBuf;

int pack_values(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
                PyObject *vals);
int pack_ints(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, Py_ssize_t *pos,
              const int64_t *vals, int n);
int check_scalars(ParamBuf *pb, PyObject *checks, PyObject *exe);
CUresult do_launch(void *fn, void *ctx, const unsigned g[3], void *stream, ParamBuf *pb);
int raise_launch_error(PyObject *exe, CUresult err, PyObject *grid);
int pack_prepared(ParamBuf *pb, const char *layout, Py_ssize_t nlayout, PyObject *params);
PyObject *py_launch(PyObject *self, PyObject *args);
PyObject *py_pack(PyObject *self, PyObject *args);
PyObject *py_use_driver(PyObject *self, PyObject *path);

/* --- layout.c --------------------------------------------------------------------------- */
#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
extern PyTypeObject *T_tensor, *T_partition, *T_storage, *T_freestate, *T_stream, *T_arginfo,
    *T_klaunch, *T_fpart, *T_future, *T_atomic;
extern struct Offsets {
    Py_ssize_t t_moved, t_info, t_storage, t_shape, t_strides, t_offset, t_dtype, t_extent,
        t_share, t_pinfo;
    Py_ssize_t p_tensor, p_tile, p_owned, p_leased, p_consumed, p_info, p_grid, p_extent, p_ref;
    Py_ssize_t st_ptr, st_device, st_h, st_leases;
    Py_ssize_t h_stream, h_epoch;
    Py_ssize_t s_device, s_handle, s_cu, s_epoch, s_ephemeral, s_capture;
    Py_ssize_t i_sealed;
    Py_ssize_t k_kernel, k_args, k_arity, k_simple, k_grid, k_ran, k_generics, k_const_grid,
        k_options, k_values;
    Py_ssize_t fp_value, fp_tile, fp_live;
    Py_ssize_t f_out, f_stream, f_done;
    Py_ssize_t a_value;
} O;
extern int layout_ok;
extern PyObject *P_launch, *P_partition, *P_fpart;   /* prototypes made by the Python ctors */

void set_slot(PyObject *o, Py_ssize_t off, PyObject *v);
PyObject *clone_proto(PyObject *proto);
long device_ordinal(PyObject *dev);
int lease_acquire(PyObject *p, PyObject *what);
void lease_release(PyObject *p);
int use_storage(PyObject *st, PyObject *stream, int fast, PyObject *epoch);
PyObject *py_set_layout(PyObject *m, PyObject *args);

/* Why a launch went back to Python (native.stats()); give_up() counts one and returns 0. */
enum {
    R_LAYOUT, R_STREAM, R_NOT_PLAIN, R_REENTRANT, R_ARITY, R_GLOBALS, R_UNUSABLE, R_NUMPY,
    R_DEVICEOP, R_HOOKS, R_FOREIGN, R_CACHE_MISS, R_GRID, R_DEVICE, R_ALIAS, R_PACK, R_PREPARED,
    R_COUNT
};
extern const char *const reason_names[R_COUNT];
extern unsigned long long fallbacks[R_COUNT], c_launches;
int give_up(int reason);
PyObject *py_stats(PyObject *m, PyObject *noargs);
PyObject *py_reset_stats(PyObject *m, PyObject *noargs);

/* --- module.c: interned names and the keys of Python scalars ------------------------------ */
extern PyObject *S_acquire, *S_key, *S_params, *S_storage, *S_writable, *S_extent, *S_prepare,
    *S_finish, *S_grid, *S_use, *S_native, *S_launch, *S_what, *S_name, *S_ptr, *S_wait_raw,
    *S_get_device, *S_is_neg, *S_dtype, *S_data_ptr, *S_shape, *S_stride, *S_kind_tensor,
    *S_kind_partition, *S_data, *S_device_id, *S_strides, *S_sealed, *S_ndim, *S_check_globals,
    *S_synchronize, *S_out_of_range, *S_raise_launch_error, *S_cuda_stream, *S_device_index,
    *S_is_cpu, *S_ct_plan, *S_bindings, *S_alias_ok;
extern PyObject *K_int, *K_float, *K_bool;
extern PyObject *A_scalars;     /* scalars.annotated_plans(), or NULL */

/* --- memo.c ----------------------------------------------------------------------------- */
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

/* One classified argument. */
typedef struct {
    PyObject *key;      /* borrowed from `hold`, `info` or a module constant */
    PyObject *params;   /* owned, or NULL when `niv` C integers hold them */
    PyObject *storage;  /* owned or NULL */
    PyObject *info;     /* owned or NULL (scalars handled here have none) */
    PyObject *grid;     /* owned or NULL: partitions */
    PyObject *partition;/* borrowed: the Partition argument, or NULL */
    PyObject *fpart;    /* borrowed: a ForeignPartition classified in Python, or NULL */
    PyObject *hold;     /* owned: keeps `key` alive */
    int writable, scalar;
    int niv;            /* params as C integers (foreign arrays): pointer, shape, strides */
    int64_t iv[1 + 2 * MAX_DIMS];
    long long start, end; /* byte extent (arrays) */
} Arg;

/* what a launch needs to know about its stream */
typedef struct {
    PyObject *stream;       /* borrowed */
    PyObject *device;       /* borrowed (the stream holds it) */
    long ordinal;
    unsigned long long handle;
    int torch_checked;      /* torch's current stream already ordered before this launch */
    int cupy_checked;       /* CuPy's, likewise */
} StreamInfo;

#define LAST_MAX 16
typedef struct {
    PyObject_HEAD
    PyObject *fast, *anns, *deviceop_type, *classify;
    PyObject *watch;        /* (globals dict, name, value, ...): read by the kernel, by identity */
    /* the last lookup, by identity: a loop of launches of one layout skips building and
       hashing the key tuple (Kernel._executables entries never change once set; forget() on clears) */
    Py_ssize_t last_n;
    PyObject *last_keys[LAST_MAX], *last_device, *last_exe;
    int last_ones;
    Py_ssize_t nparams;     /* parameters including tile.Constant ones (Kernel.__call__) */
    int simple;             /* no tile.Constant parameters */
    /* the kernel's tile.Constant parameters (Kernel._const_pos: cpos) and the others (rpos):
       a call passing its constants is launched through the kernel bound to them (prepared.c);
       nconst -1: not given, that lookup is Python's */
    Py_ssize_t nconst;
    unsigned char cpos[MAX_ARGS], rpos[MAX_ARGS];
    unsigned long long launches;   /* launched here, not yet folded into Kernel.stats */
    unsigned long long total;      /* launched here, ever */
    FCache fc[FC_MAX];
} Launcher;
extern PyTypeObject LauncherType, PreparedType;

void fc_forget_layout(FCache *c);
void fc_clear(FCache *c);
int from_memo(Arg *a, PyObject *kind, PyObject *dtype_name, PyObject *shape, PyObject *strides,
              unsigned long long ptr, PyObject *extra);
int layout_arg(Arg *a, FCache *c, PyObject *kind, PyObject *extra, PyObject *name, int nd,
               const int64_t *shape, const int64_t *strides, unsigned long long ptr);
PyObject *tuple_of(const int64_t *x, int n);
PyObject *py_set_memo(PyObject *m, PyObject *args);

/* --- foreign.c -------------------------------------------------------------------------- */
extern PyObject *torch_type, *param_type, *cupy_type;
extern const DLPackExchangeAPI *torch_api;
int is_torch(PyObject *v);
int torch_any(PyObject *v);
int foreign_arg(Launcher *self, Arg *a, PyObject *v, Py_ssize_t pos, StreamInfo *si,
                PyObject *kind, PyObject *extra);
int foreign_ndim(PyObject *v);
PyObject *py_set_torch(PyObject *self, PyObject *args);
PyObject *py_set_cupy(PyObject *self, PyObject *args);
PyObject *py_set_torch_exchange(PyObject *self, PyObject *args);
PyObject *py_torch_stream_of(PyObject *m, PyObject *values);

/* --- args.c ----------------------------------------------------------------------------- */
int classify_arg(Launcher *self, Arg *a, PyObject *v, PyObject *ann, StreamInfo *si,
                 Py_ssize_t pos);
void clear_args(Arg *a, Py_ssize_t n);
void release_partitions(Arg *a, Py_ssize_t n, int leases);

/* --- launcher.c / prepared.c ------------------------------------------------------------ */
int run_launch(Launcher *self, PyObject *args, PyObject *stream, PyObject *grid);
PyObject *py_install(PyObject *m, PyObject *args);
PyObject *py_install_finalizer(PyObject *m, PyObject *del);
PyObject *py_partition(PyObject *m, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames);
PyObject *py_set_partition_fallback(PyObject *m, PyObject *fn);
PyObject *py_executing(PyObject *m, PyObject *noargs);
PyObject *py_not_plain(PyObject *m, PyObject *noargs);
PyObject *py_swap_executing(PyObject *m, PyObject *flag);
PyObject *new_launch(PyObject *kernel, PyObject *args);     /* kernel(*args) */
PyObject *submit_on(PyObject *op, PyObject *stream);        /* op.submit_on(stream) */

/* --- cutile.c --------------------------------------------------------------------------- */
int same_constant(PyObject *x, PyObject *y);
PyObject *py_ct_launch(PyObject *m, PyObject *const *argv, Py_ssize_t nargs);
PyObject *py_set_ct_fallback(PyObject *m, PyObject *fn);

#endif
