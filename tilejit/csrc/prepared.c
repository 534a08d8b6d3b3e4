/* The lazy call in C (Kernel.__call__, KernelLaunch.submit_on / sync_on / grid / generics,
 * Tensor.partition, tile.partition) and Prepared, a launch packed once (dispatcher.PreparedLaunch).
 * install() puts these methods on the Python classes (dispatcher._install_native); each takes
 * the common case and hands anything else to the Python method it replaced, so behaviour and
 * error messages are the pure-Python build's. */
#include "native.h"

static PyObject *fb_call, *fb_submit, *fb_sync, *fb_submit_plain, *fb_sync_plain, *fb_sync_quietly,
    *fb_partition, *fb_tensor_partition, *fb_grid, *fb_generics;

/* The per-thread submission guard (runtime/submission.py uses it when the extension is on). */
static _Thread_local int tl_executing;

PyObject *py_executing(PyObject *m, PyObject *noargs) { return PyBool_FromLong(tl_executing); }

/* not_plain(): count a launch Python takes as a general one (constants with generics, options
   or a baked grid; see plain_launch) */
PyObject *py_not_plain(PyObject *m, PyObject *noargs) {
    give_up(R_NOT_PLAIN);
    Py_RETURN_NONE;
}

PyObject *py_swap_executing(PyObject *m, PyObject *flag) {
    int v = PyObject_IsTrue(flag);
    if (v < 0) return NULL;
    int prev = tl_executing;
    tl_executing = v;
    return PyBool_FromLong(prev);
}

/* DeviceFuture(out, stream), its __init__ inlined (done at once on a simulated stream) */
static PyObject *make_future(PyObject *out, PyObject *stream) {
    PyObject *cu = SLOT(stream, O.s_cu);
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

/* Kernel.__call__: a KernelLaunch of positional arguments (binding keywords is Python's), a
   clone of KernelLaunch's prototype with the call's fields set */
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
    PyObject *op = clone_proto(P_launch);
    PyObject *arity = op ? PyLong_FromSsize_t(n) : NULL;
    if (!arity) { Py_XDECREF(op); return NULL; }
    set_slot(op, O.k_kernel, kernel);
    set_slot(op, O.k_args, args);
    set_slot(op, O.k_arity, arity);
    set_slot(op, O.k_simple, simple ? Py_True : Py_False);
    Py_CLEAR(SLOT(op, O.k_ran));        /* the prototype counts as run; a new call has not */
    Py_DECREF(arity);
    return op;
}

/* normalize_grid's inline case: a tuple of three ints (not bools), each in [0, 2^24); it
   returns the tuple itself */
static int grid3_ok(PyObject *g) {
    if (!PyTuple_CheckExact(g) || PyTuple_GET_SIZE(g) != 3) return 0;
    for (int i = 0; i < 3; i++) {
        PyObject *x = PyTuple_GET_ITEM(g, i);
        int overflow = 0;
        long v = PyLong_CheckExact(x) ? PyLong_AsLongAndOverflow(x, &overflow) : -1;
        if (overflow || v < 0 || v >= GRID_LIMIT) return 0;
    }
    return 1;
}

/* fn(self, *argv, **kwnames): a METH_FASTCALL method's Python fallback */
static PyObject *vectorcall_prepended(PyObject *fn, PyObject *self, PyObject *const *argv,
                                      Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8], **all = n < 8 ? small : PyMem_Malloc((n + 1) * sizeof(PyObject *));
    if (!all) return PyErr_NoMemory();
    all[0] = self;
    if (n) memcpy(all + 1, argv, n * sizeof(PyObject *));
    PyObject *r = PyObject_Vectorcall(fn, all, (size_t)nargs + 1, kwnames);
    if (all != small) PyMem_Free(all);
    return r;
}

/* KernelLaunch.grid(g): account_for(self) and the copy KernelLaunch(self.kernel, self.args,
   g, self._const_grid, self._generics, self._options), made in C for a grid normalize_grid
   passes as is (grid3_ok). The copy's slots are what __init__ sets: the same args tuple
   (tuple() of a tuple), its length, the shared empty generics or a copy of the dict, and
   self's _simple and _values (the parameters' values with generics, a tuple or None), since
   every input of them (kernel, args, arity, generics, options, const_grid) is self's; _ran
   unset, so the copy warns if dropped unrun. Anything else (another spelling, an error, a
   subclass, an unset slot) is the Python method's. */
static PyObject *klaunch_grid(PyObject *self, PyObject *const *argv, Py_ssize_t nargs,
                              PyObject *kwnames) {
    if (nargs != 1 || kwnames || !layout_ok || Py_TYPE(self) != T_klaunch || !grid3_ok(argv[0]))
        return vectorcall_prepended(fb_grid, self, argv, nargs, kwnames);
    PyObject *kernel = SLOT(self, O.k_kernel), *args = SLOT(self, O.k_args),
             *simple = SLOT(self, O.k_simple), *generics = SLOT(self, O.k_generics),
             *const_grid = SLOT(self, O.k_const_grid), *options = SLOT(self, O.k_options),
             *values = SLOT(self, O.k_values),
             *no_generics = SLOT(P_launch, O.k_generics);      /* the shared empty one */
    if (!kernel || !args || !PyTuple_CheckExact(args) || !const_grid || !options || !values ||
        (simple != Py_True && simple != Py_False) || !generics ||
        (generics != no_generics && (!PyDict_CheckExact(generics) || !PyDict_GET_SIZE(generics))))
        return vectorcall_prepended(fb_grid, self, argv, nargs, kwnames);
    PyObject *op = clone_proto(P_launch);
    PyObject *arity = op ? PyLong_FromSsize_t(PyTuple_GET_SIZE(args)) : NULL;
    PyObject *g = !arity ? NULL : generics == no_generics ? (Py_INCREF(generics), generics)
                                                          : PyDict_Copy(generics);
    if (!g) { Py_XDECREF(op); Py_XDECREF(arity); return NULL; }
    set_slot(op, O.k_kernel, kernel);
    set_slot(op, O.k_args, args);
    set_slot(op, O.k_arity, arity);
    set_slot(op, O.k_grid, argv[0]);
    set_slot(op, O.k_const_grid, const_grid);
    set_slot(op, O.k_generics, g);
    set_slot(op, O.k_options, options);
    set_slot(op, O.k_values, values);
    set_slot(op, O.k_simple, simple);
    Py_CLEAR(SLOT(op, O.k_ran));        /* the prototype counts as run; the copy has not */
    Py_DECREF(arity);
    Py_DECREF(g);
    /* account_for(self): the copy replaces it (ran False: no warning when dropped, and C's
       finalizer skips it when it holds no lazy argument, accounted_without_inputs) */
    if (!SLOT(self, O.k_ran))
        set_slot(self, O.k_ran, Py_False);
    return op;
}

/* --- KernelLaunch.generics(**named) ------------------------------------------------------ */
static PyTypeObject *T_kernel;          /* dispatcher.Kernel (install) */
static PyObject *missing;               /* kernel_launch.MISSING (install) */

/* the Kernel attributes klaunch_generics reads (what the Python method and Kernel._with_generics
   read), interned at install */
enum { A_CONSTANT_NAMES, A_PARAM_NAMES, A_CONST_POS, A_RUNTIME_POS, A_RUNTIME_NAMES,
       A_CONSTANT_DEFAULTS, A_SIMPLE, A_COUNT };
static const char *const attr_names[A_COUNT] = {"constant_names", "param_names", "_const_pos",
    "_runtime_pos", "runtime_names", "_constant_defaults", "_simple"};
static PyObject *attr_strs[A_COUNT];

/* `name in names` for a tuple of str: 1, 0, or -1 where an element is no str (Python's) */
static int str_in(PyObject *name, PyObject *names) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *x = PyTuple_GET_ITEM(names, i);
        if (x == name) return 1;
        if (!PyUnicode_CheckExact(x)) return -1;
        if (PyUnicode_Compare(x, name) == 0) return 1;
    }
    return 0;
}

/* pos[j], an index below n (an int, as Kernel.__init__ made it), or -1 (Python's) */
static Py_ssize_t index_at(PyObject *pos, Py_ssize_t j, Py_ssize_t n) {
    PyObject *x = PyTuple_GET_ITEM(pos, j);
    if (!PyLong_CheckExact(x)) return -1;
    Py_ssize_t i = PyLong_AsSsize_t(x);
    if (i < 0 || i >= n) { PyErr_Clear(); return -1; }
    return i;
}

/* d[key] for a str key: 1 found (*v a new reference), 0 absent, -1 an error or a key that is
   no str (a lookup that could run Python code), no error set: Python's */
static int str_get(PyObject *d, PyObject *key, PyObject **v) {
    if (!PyUnicode_CheckExact(key)) return -1;
    *v = PyDict_GetItemWithError(d, key);
    if (!*v) {
        if (!PyErr_Occurred()) return 0;
        PyErr_Clear();
        return -1;
    }
    Py_INCREF(*v);
    return 1;
}

/* Kernel._with_generics(args, g) with a[] the kernel's attributes: every parameter's value in
   order, the constants g binds (and the defaults) in place, as a new tuple (what __init__
   stores as _values); Py_None where it returns None (a constant given twice, another arity);
   NULL, no error set, where the kernel's tables are not what Kernel.__init__ made (Python's) */
static PyObject *with_generics(PyObject *args, PyObject *g, PyObject **a) {
    PyObject *names = a[A_PARAM_NAMES], *cpos = a[A_CONST_POS], *rpos = a[A_RUNTIME_POS],
             *defaults = a[A_CONSTANT_DEFAULTS];
    if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(cpos) || !PyTuple_CheckExact(rpos) ||
        !PyTuple_CheckExact(a[A_RUNTIME_NAMES]) || !PyDict_CheckExact(defaults))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args), np = PyTuple_GET_SIZE(names);
    int all = n == np;
    if (!all && n != PyTuple_GET_SIZE(a[A_RUNTIME_NAMES])) Py_RETURN_NONE;
    PyObject *values = PyTuple_New(np);
    if (!values) return NULL;       /* (an error set: MemoryError) */
    if (all) {              /* values = list(args); each constant g binds must be MISSING */
        for (Py_ssize_t i = 0; i < np; i++) {
            PyObject *v = PyTuple_GET_ITEM(args, i);
            Py_INCREF(v);
            PyTuple_SET_ITEM(values, i, v);
        }
    } else {                /* [MISSING] * len(names), the runtime values at their positions */
        for (Py_ssize_t i = 0; i < np; i++) {
            Py_INCREF(missing);
            PyTuple_SET_ITEM(values, i, missing);
        }
        Py_ssize_t m = PyTuple_GET_SIZE(rpos) < n ? PyTuple_GET_SIZE(rpos) : n;   /* zip */
        for (Py_ssize_t j = 0; j < m; j++) {
            Py_ssize_t i = index_at(rpos, j, np);
            if (i < 0) { Py_DECREF(values); return NULL; }
            PyObject *v = PyTuple_GET_ITEM(args, j);
            Py_INCREF(v);
            Py_SETREF(PyTuple_GET_ITEM(values, i), v);
        }
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(cpos); j++) {
        Py_ssize_t i = index_at(cpos, j, np);
        if (i < 0) { Py_DECREF(values); return NULL; }
        PyObject *name = PyTuple_GET_ITEM(names, i), *v = NULL, *d = NULL;
        int r = str_get(g, name, &v);
        if (r < 0) { Py_DECREF(values); return NULL; }
        if (all) {          /* names[i] in generics: bound in place, where MISSING */
            if (!r) continue;
            if (PyTuple_GET_ITEM(values, i) != missing) {
                Py_DECREF(v);
                Py_DECREF(values);
                Py_RETURN_NONE;
            }
        } else {            /* generics.get(name, defaults.get(name, MISSING)) */
            int rd = str_get(defaults, name, &d);
            if (rd < 0) { Py_XDECREF(v); Py_DECREF(values); return NULL; }
            if (!r) { v = rd ? d : (Py_INCREF(missing), missing); d = NULL; }
            Py_XDECREF(d);
        }
        Py_SETREF(PyTuple_GET_ITEM(values, i), v);
    }
    return values;
}

/* KernelLaunch.generics(**named): account_for(self) and the copy KernelLaunch(k, self.args,
   self._grid, self._const_grid, g, self._options), g = dict(self._generics) updated with the
   keywords, made in C when every keyword names one of kernel.constant_names (a Kernel, not a
   subclass). The copy's slots are what __init__ sets: the same args tuple, its length, g (a new
   dict, as dict(g) makes it), _values as Kernel._with_generics computes them from the kernel's
   tables (a tuple, or None), _simple False (kernel._simple is a bool and g is not empty); _ran
   unset, so the copy warns if dropped unrun. Positional values, no keyword, an unknown name
   (its error), a subclass, an unset slot or tables other than Kernel.__init__ makes are the
   Python method's, before anything is changed. */
static PyObject *klaunch_generics(PyObject *self, PyObject *const *argv, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    if (nargs || !kwnames || !PyTuple_GET_SIZE(kwnames) || !layout_ok || !missing ||
        Py_TYPE(self) != T_klaunch)
        return vectorcall_prepended(fb_generics, self, argv, nargs, kwnames);
    PyObject *s[6] = {SLOT(self, O.k_kernel), SLOT(self, O.k_args), SLOT(self, O.k_grid),
                      SLOT(self, O.k_const_grid), SLOT(self, O.k_generics),
                      SLOT(self, O.k_options)};
    PyObject *no_generics = SLOT(P_launch, O.k_generics);      /* the shared empty one */
    for (int i = 0; i < 6; i++)
        if (!s[i]) return vectorcall_prepended(fb_generics, self, argv, nargs, kwnames);
    PyObject *kernel = s[0], *args = s[1], *generics = s[4];
    if (Py_TYPE(kernel) != T_kernel || !PyTuple_CheckExact(args) ||
        (generics != no_generics && !PyDict_CheckExact(generics)))
        return vectorcall_prepended(fb_generics, self, argv, nargs, kwnames);
    for (int i = 0; i < 6; i++) Py_INCREF(s[i]);   /* reading the kernel may run Python code */
    PyObject *a[A_COUNT] = {NULL}, *g = NULL, *values = NULL, *op = NULL, *arity = NULL;
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    int ok = 1;
    for (int i = 0; ok && i < A_COUNT; i++)
        ok = (a[i] = PyObject_GetAttr(kernel, attr_strs[i])) != NULL;
    ok = ok && PyTuple_CheckExact(a[A_CONSTANT_NAMES]) &&
         (a[A_SIMPLE] == Py_True || a[A_SIMPLE] == Py_False);
    for (Py_ssize_t j = 0; ok && j < nkw; j++)      /* an unknown name: Python raises */
        ok = str_in(PyTuple_GET_ITEM(kwnames, j), a[A_CONSTANT_NAMES]) == 1;
    if (ok) {
        g = generics == no_generics ? PyDict_New() : PyDict_Copy(generics);
        for (Py_ssize_t j = 0; g && j < nkw; j++)
            if (PyDict_SetItem(g, PyTuple_GET_ITEM(kwnames, j), argv[j]) < 0) Py_CLEAR(g);
        values = g ? with_generics(args, g, a) : NULL;
        ok = values != NULL;
    }
    if (!ok) {
        Py_XDECREF(g);
        if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            op = vectorcall_prepended(fb_generics, self, argv, nargs, kwnames);
        }
        goto done;
    }
    op = clone_proto(P_launch);
    arity = op ? PyLong_FromSsize_t(PyTuple_GET_SIZE(args)) : NULL;
    if (!arity) { Py_CLEAR(op); Py_DECREF(g); goto done; }
    /* account_for(self): the copy replaces it (as klaunch_grid) */
    if (!SLOT(self, O.k_ran))
        set_slot(self, O.k_ran, Py_False);
    set_slot(op, O.k_kernel, kernel);
    set_slot(op, O.k_args, args);
    set_slot(op, O.k_arity, arity);
    set_slot(op, O.k_grid, s[2]);
    set_slot(op, O.k_const_grid, s[3]);
    set_slot(op, O.k_generics, g);
    set_slot(op, O.k_options, s[5]);
    set_slot(op, O.k_values, values);
    set_slot(op, O.k_simple, Py_False);
    Py_CLEAR(SLOT(op, O.k_ran));        /* the prototype counts as run; the copy has not */
    Py_DECREF(arity);
    Py_DECREF(g);
done:
    Py_XDECREF(values);
    for (int i = 0; i < A_COUNT; i++) Py_XDECREF(a[i]);
    for (int i = 0; i < 6; i++) Py_DECREF(s[i]);
    return op;
}

/* Whether submit_on/sync_on may take the C path: 1 a plain launch, 2 one with constants or
   compile options (submit_bound); counts why not. */
static int plain_launch(PyObject *op, PyObject *stream) {
    if (!layout_ok) return give_up(R_LAYOUT);
    if (Py_TYPE(stream) != T_stream) return give_up(R_STREAM);
    if (Py_TYPE(op) != T_klaunch) return give_up(R_NOT_PLAIN);
    if (SLOT(op, O.k_simple) != Py_True) return 2;
    if (tl_executing) return give_up(R_REENTRANT);
    return 1;
}

/* After a C launch: the future, or (sync) the output once the stream is done. */
static PyObject *finish_launch(PyObject *args, PyObject *stream, int wait) {
    if (!wait) return make_future(args, stream);
    PyObject *r = PyObject_CallMethodNoArgs(stream, S_synchronize);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_INCREF(args);
    return args;
}

/* As DeviceOp.sync_on on an error: drain the stream, then raise. */
static PyObject *drain_and_raise(PyObject *stream) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallFunctionObjArgs(fb_sync_quietly, stream, NULL);
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return NULL;
}

/* Whether the constants' values as passed, `raw`, are those of the memo hit `hit` = (bound
   kernel, values, their types or None), as keys.same_binding checks it (1 == True == 1.0 as
   keys): the same types when flat and float-free, else same_constant (floats by bits) */
static int same_binding(PyObject *raw, PyObject *hit) {
    PyObject *types = PyTuple_GET_ITEM(hit, 2);
    if (types == Py_None) return same_constant(raw, PyTuple_GET_ITEM(hit, 1));
    Py_ssize_t n = PyTuple_GET_SIZE(raw);
    if (!PyTuple_CheckExact(types) || PyTuple_GET_SIZE(types) != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((PyObject *)Py_TYPE(PyTuple_GET_ITEM(raw, i)) != PyTuple_GET_ITEM(types, i)) return 0;
    return 1;
}

/* The kernel bound to what `op` passes (constants' values, compile options) where
   KernelLaunch._launch_bound finds it in the memo (Kernel._bound_for): `values`, every
   parameter's value (the call's arguments, or with generics the launch's _values), no baked
   grid or lazy argument, and a hit in kernel._bindings by (the constants' values as passed,
   the options). A new reference, its runtime arguments in *rt (a new tuple); or NULL, no error
   set: Python decides (it binds on a miss, explains errors, counts the general path). The memo
   is read at each call, never kept: _forget_bound clears it, and a bound kernel's launcher
   checks the globals itself. */
static PyObject *memo_bound(PyObject *op, PyObject *kernel, PyObject *values, PyObject **rt) {
    PyObject *options = SLOT(op, O.k_options);
    if (!options || SLOT(op, O.k_const_grid) != Py_None)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyObject_TypeCheck(PyTuple_GET_ITEM(values, i), T_klaunch->tp_base)) return NULL;
    PyObject *nat = PyObject_GetAttr(kernel, S_native);
    PyObject *memo = nat ? PyObject_GetAttr(kernel, S_bindings) : NULL;
    PyObject *raw = NULL, *key = NULL, *hit = NULL, *b = NULL;
    Launcher *L = (Launcher *)nat;
    if (!memo || !PyDict_CheckExact(memo) || !Py_IS_TYPE(nat, &LauncherType) || L->nconst < 0 ||
        n != L->nparams || !(raw = PyTuple_New(L->nconst)))
        goto done;
    for (Py_ssize_t i = 0; i < L->nconst; i++) {
        PyObject *v = PyTuple_GET_ITEM(values, L->cpos[i]);
        Py_INCREF(v);
        PyTuple_SET_ITEM(raw, i, v);
    }
    if (!(key = PyTuple_Pack(2, raw, options))) goto done;
    hit = PyDict_GetItemWithError(memo, key);       /* unhashable: an error, cleared below */
    Py_XINCREF(hit);
    if (!hit || !PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) != 3 || !same_binding(raw, hit)
        || !(*rt = PyTuple_New(n - L->nconst)))
        goto done;
    for (Py_ssize_t i = 0; i < n - L->nconst; i++) {
        PyObject *v = PyTuple_GET_ITEM(values, L->rpos[i]);
        Py_INCREF(v);
        PyTuple_SET_ITEM(*rt, i, v);
    }
    b = PyTuple_GET_ITEM(hit, 0);
    Py_INCREF(b);
done:
    PyErr_Clear();
    Py_XDECREF(nat); Py_XDECREF(memo); Py_XDECREF(raw); Py_XDECREF(key); Py_XDECREF(hit);
    return b;
}

/* KernelLaunch.submit_on / sync_on of a call with constants (as arguments or through
   .generics) or compile options, as _launch_bound makes it: the plain launch of the bound
   kernel's runtime arguments on the call's grid, under the submission guard; the output is
   every argument as passed. Anything else is the Python method's. */
static PyObject *submit_bound(PyObject *op, PyObject *stream, int wait) {
    PyObject *kernel = SLOT(op, O.k_kernel), *args = SLOT(op, O.k_args), *rt = NULL;
    /* with .generics(): the lookup is on every parameter's value, which KernelLaunch.__init__
       computed once (Kernel._with_generics: the constants bound in place, defaults filled);
       None (a constant given twice, an arity to explain) is the general path's */
    PyObject *values = args;
    if (SLOT(op, O.k_generics) != SLOT(P_launch, O.k_generics))    /* not the shared empty one */
        values = SLOT(op, O.k_values);
    if (!kernel || !args || !PyTuple_Check(args) || !values || !PyTuple_Check(values))
        return PyObject_CallFunctionObjArgs(wait ? fb_sync : fb_submit, op, stream, NULL);
    Py_INCREF(kernel);
    Py_INCREF(args);
    Py_INCREF(values);      /* the memo's lookup may run Python code (a value's __hash__) */
    PyObject *b = memo_bound(op, kernel, values, &rt), *result = NULL;
    PyObject *nat = b ? PyObject_GetAttr(b, S_native) : NULL;
    int ok = 0;
    if (nat && Py_IS_TYPE(nat, &LauncherType) && !tl_executing) {
        PyObject *grid = SLOT(op, O.k_grid);
        tl_executing = 1;
        ok = run_launch((Launcher *)nat, rt, stream, grid);
        tl_executing = 0;
        if (ok == 0) {      /* given back (a miss compiles): Python's plain path of it */
            PyObject *inner = new_launch(b, rt), *f = NULL;
            if (inner && grid && Py_TYPE(inner) == T_klaunch)
                set_slot(inner, O.k_grid, grid);
            else if (inner && grid && PyObject_SetAttrString(inner, "_grid", grid) < 0)
                Py_CLEAR(inner);
            if (inner)
                f = PyObject_CallFunctionObjArgs(fb_submit_plain, inner, stream, NULL);
            ok = f ? 1 : -1;
            Py_XDECREF(inner); Py_XDECREF(f);
        }
        if (ok == 1)
            result = finish_launch(args, stream, wait);
        else if (wait)
            result = drain_and_raise(stream);
    } else {
        if (nat && tl_executing) give_up(R_REENTRANT);     /* Python raises SchedulingError */
        PyErr_Clear();
        result = PyObject_CallFunctionObjArgs(wait ? fb_sync : fb_submit, op, stream, NULL);
    }
    Py_DECREF(kernel); Py_DECREF(args); Py_DECREF(values); Py_XDECREF(b); Py_XDECREF(rt);
    Py_XDECREF(nat);
    return result;
}

/* KernelLaunch.submit_on / sync_on on a tilejit Stream */
static PyObject *submit_common(PyObject *op, PyObject *stream, int wait) {
    if (layout_ok && Py_TYPE(op) == T_klaunch)
        set_slot(op, O.k_ran, Py_True);     /* it ran: no "never run" warning when freed */
    int how = plain_launch(op, stream);
    if (how == 2)
        return submit_bound(op, stream, wait);
    if (!how)
        return PyObject_CallFunctionObjArgs(wait ? fb_sync : fb_submit, op, stream, NULL);
    PyObject *kernel = SLOT(op, O.k_kernel), *args = SLOT(op, O.k_args);
    if (!kernel || !args || !PyTuple_Check(args))
        return PyObject_CallFunctionObjArgs(wait ? fb_sync : fb_submit, op, stream, NULL);
    Py_INCREF(kernel);
    Py_INCREF(args);
    PyObject *nat = PyObject_GetAttr(kernel, S_native), *result = NULL;
    int ok = nat ? 0 : -1;
    if (nat && Py_IS_TYPE(nat, &LauncherType)) {
        tl_executing = 1;
        ok = run_launch((Launcher *)nat, args, stream, SLOT(op, O.k_grid));
        tl_executing = 0;
    }
    if (ok == 1)
        result = finish_launch(args, stream, wait);
    else if (ok == 0)       /* the general path (compiles on a miss, explains errors) */
        result = PyObject_CallFunctionObjArgs(wait ? fb_sync_plain : fb_submit_plain, op, stream,
                                              NULL);
    else if (wait)
        result = drain_and_raise(stream);
    Py_DECREF(kernel); Py_DECREF(args); Py_XDECREF(nat);
    return result;
}

/* op.submit_on(stream): the KernelLaunch method, and ct.launch's replay (csrc/cutile.c) */
PyObject *submit_on(PyObject *op, PyObject *stream) { return submit_common(op, stream, 0); }

PyObject *new_launch(PyObject *kernel, PyObject *args) { return kernel_call(kernel, args, NULL); }

static PyObject *klaunch_sync_on(PyObject *op, PyObject *stream) {
    return submit_common(op, stream, 1);
}

/* a tuple of `ndim` (1-3) powers of two */
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
   is the common case (a clone of ForeignPartition's prototype); the rest (and every error) is
   runtime.partition.partition's */
PyObject *py_partition(PyObject *m, PyObject *const *argv, Py_ssize_t nargs,
                       PyObject *kwnames) {
    if (nargs == 2 && !kwnames && layout_ok && PyTuple_CheckExact(argv[1]) &&
        tile_ok(argv[1], foreign_ndim(argv[0]))) {
        PyObject *p = clone_proto(P_fpart);
        if (!p) return NULL;
        set_slot(p, O.fp_value, argv[0]);
        set_slot(p, O.fp_tile, argv[1]);
        return p;
    }
    if (!fb_partition) {
        PyErr_SetString(PyExc_RuntimeError, "tilejit._native.partition: not installed");
        return NULL;
    }
    return PyObject_Vectorcall(fb_partition, argv, (size_t)nargs, kwnames);
}

/* Whether Tensor.partition(shape) is the common case C makes: a usable, unshared tensor, a
   tuple of powers of two, no broadcast (zero-stride) axis. */
static int plain_partition(PyObject *t, PyObject *shape) {
    if (!layout_ok || Py_TYPE(t) != T_tensor || !PyTuple_CheckExact(shape)) return 0;
    PyObject *tshape = SLOT(t, O.t_shape), *strides = SLOT(t, O.t_strides),
             *extent = SLOT(t, O.t_extent), *share = SLOT(t, O.t_share);
    if (SLOT(t, O.t_moved) != Py_False || !share || !PyLong_CheckExact(share) ||
        !tshape || !strides || !extent || !PyTuple_Check(tshape) || !PyTuple_Check(strides) ||
        !PyTuple_Check(extent) || !tile_ok(shape, (int)PyTuple_GET_SIZE(tshape)))
        return 0;
    int overflow = 0;
    if (PyLong_AsLongAndOverflow(share, &overflow) != 0 || overflow) return 0;  /* shared */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strides); i++) {
        PyObject *x = PyTuple_GET_ITEM(strides, i);
        if (!PyLong_CheckExact(x) || (PyLong_AsLongAndOverflow(x, &overflow) == 0 && !overflow))
            return 0;                                          /* a broadcast axis: Python */
    }
    return 1;
}

/* Tensor.partition(shape): the common case in C, a clone of Partition's prototype with the
   tensor, tile, extent and its own weakref set; its lease as Partition._create takes it */
static PyObject *tensor_partition(PyObject *t, PyObject *shape) {
    if (!plain_partition(t, shape))
        return PyObject_CallFunctionObjArgs(fb_tensor_partition, t, shape, NULL);
    PyObject *p = clone_proto(P_partition);
    if (!p) return NULL;
    set_slot(p, O.p_tensor, t);
    set_slot(p, O.p_tile, shape);
    set_slot(p, O.p_extent, SLOT(t, O.t_extent));
    PyObject *ref = PyWeakref_NewRef(p, NULL);
    if (!ref) { Py_DECREF(p); return NULL; }
    set_slot(p, O.p_ref, ref);
    Py_DECREF(ref);
    /* as Partition._create: a failed lease leaves no partition behind */
    if (lease_acquire(p, S_kind_partition) < 0) { Py_DECREF(p); return NULL; }
    return p;
}

static PyMethodDef tensor_partition_def = {"partition", (PyCFunction)tensor_partition, METH_O,
    "A borrowed output partition: the kernel writes into this tensor in place.\n\n"
    "``shape`` is the tile shape (powers of two, rank 1-3, same rank as the tensor). No other\n"
    "live partition may cover any of its bytes (views do not count; disjoint slices of one\n"
    "tensor may be partitioned at once)."};
static PyMethodDef kernel_call_def = {"__call__", (PyCFunction)(void (*)(void))kernel_call,
    METH_VARARGS | METH_KEYWORDS, "kernel(*args) -> KernelLaunch (a lazy launch)"};
static PyMethodDef submit_on_def = {"submit_on", (PyCFunction)submit_on, METH_O,
    "Queue the launch on `stream` without waiting (the hot path of a kernel call)."};
static PyMethodDef grid_def = {"grid", (PyCFunction)(void (*)(void))klaunch_grid,
    METH_FASTCALL | METH_KEYWORDS,
    "Launch on an explicit runtime grid ``(gx, gy, gz)`` instead of the partitions' grid."};
static PyMethodDef generics_def = {"generics", (PyCFunction)(void (*)(void))klaunch_generics,
    METH_FASTCALL | METH_KEYWORDS,
    "Bind ``tile.Constant`` parameters: ``.generics([64, 32])`` (in parameter order) or\n"
    "``.generics(BM=64, BK=32)``."};
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
           KernelLaunch._submit_plain, KernelLaunch._sync_plain, _sync_quietly, Tensor.partition,
           KernelLaunch.grid):
   the C methods above replace the Python ones on Kernel, KernelLaunch and Tensor (the latter two
   as set_layout registered them); the Python ones stay the fallback. KernelLaunch.generics too
   (its Python method, then kernel_launch.MISSING, the sentinel Kernel._with_generics fills in,
   are the last two arguments). */
PyObject *py_install(PyObject *m, PyObject *args) {
    PyObject *kt, *f[10];
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOOO", &PyType_Type, &kt, &f[0], &f[1], &f[2], &f[3],
                          &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]))
        return NULL;
    if (!layout_ok || fb_call) {
        PyErr_SetString(PyExc_RuntimeError, layout_ok ? "tilejit._native.install: already "
                        "installed" : "tilejit._native.install: no layout (set_layout)");
        return NULL;
    }
    for (int i = 0; i < A_COUNT; i++)
        if (!attr_strs[i] && !(attr_strs[i] = PyUnicode_InternFromString(attr_names[i])))
            return NULL;
    PyObject **dst[10] = {&fb_call, &fb_submit, &fb_sync, &fb_submit_plain, &fb_sync_plain,
                          &fb_sync_quietly, &fb_tensor_partition, &fb_grid, &fb_generics,
                          &missing};
    for (int i = 0; i < 10; i++) { Py_INCREF(f[i]); *dst[i] = f[i]; }
    Py_INCREF(kt); T_kernel = (PyTypeObject *)kt;
    if (put_method((PyTypeObject *)kt, &kernel_call_def) < 0 ||
        put_method(T_klaunch, &submit_on_def) < 0 || put_method(T_klaunch, &sync_on_def) < 0 ||
        put_method(T_klaunch, &grid_def) < 0 || put_method(T_tensor, &tensor_partition_def) < 0 ||
        put_method(T_klaunch, &generics_def) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* install_finalizer(DeviceOp.__del__): KernelLaunch objects are finalized here, which reads the
   "ran" slot (deviceops/deviceop.py RAN_SLOT) and calls the Python __del__ only for a launch that never
   ran (it warns): a Python __del__ per launch cost about 0.2 us */
static PyObject *fb_del;

/* A launch accounted for (ran False: replaced by its copy, as kernel(...).grid(g) replaces the
   call's launch) whose arguments hold no DeviceOp: the Python __del__ would have nothing to do
   (deviceop._dropped_unrun accounts for the inputs of such a launch, and it has none). Its
   instance dict is not read: KernelLaunch keeps its state in slots. */
static int accounted_without_inputs(PyObject *op) {
    if (SLOT(op, O.k_ran) != Py_False || Py_TYPE(op) != T_klaunch) return 0;
    PyObject *args = SLOT(op, O.k_args);
    if (!args || !PyTuple_Check(args)) return 0;
    PyTypeObject *deviceop = T_klaunch->tp_base;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (PyObject_TypeCheck(a, deviceop) || PyTuple_Check(a) || PyList_Check(a)) return 0;
    }
    return 1;
}

static void klaunch_finalize(PyObject *op) {
    if (SLOT(op, O.k_ran) == Py_True || accounted_without_inputs(op)) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallOneArg(fb_del, op);
    if (r) Py_DECREF(r); else PyErr_WriteUnraisable(op);
    PyErr_Restore(et, ev, tb);
}

PyObject *py_install_finalizer(PyObject *m, PyObject *del) {
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
PyObject *py_set_partition_fallback(PyObject *m, PyObject *fn) {
    Py_INCREF(fn);
    Py_XSETREF(fb_partition, fn);
    Py_RETURN_NONE;
}

/* --- Prepared: a launch packed once (dispatcher.PreparedLaunch) ------------------------------ */
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
   launch errors are raised by executable.raise_launch_error(code, grid); the weak scalars were
   checked once by PreparedLaunch; a failure (the Python launch takes over) is counted */
static int prepared_init(Prepared *self, PyObject *args, PyObject *kw);

static int Prepared_init(Prepared *self, PyObject *args, PyObject *kw) {
    int r = prepared_init(self, args, kw);
    if (r < 0) give_up(R_PREPARED);
    return r;
}

static int prepared_init(Prepared *self, PyObject *args, PyObject *kw) {
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
    if (PyErr_Occurred() || pack_prepared(&self->pb, layout, nlayout, params) < 0) return -1;
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
    int r = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->storages) && r == 0; i++)
        r = use_storage(PyTuple_GET_ITEM(self->storages, i), stream, fast, epoch);
    Py_DECREF(epoch);
    if (r < 0) return NULL;
    if (self->g[0] && self->g[1] && self->g[2]) {
        CUresult err = do_launch(self->fn, self->ctx, self->g, (void *)(uintptr_t)self->sh,
                                 &self->pb);
        if (err == -1 && PyErr_Occurred()) return NULL;
        if (err) return raise_launch_error(self->exe, err, self->grid), NULL;
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

PyTypeObject PreparedType = {
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
