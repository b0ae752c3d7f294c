/* gpukit's host kernels (kernels.c) as a CPython extension module, gpukit._host._kernels,
 * built by gpukit/_host/build_native.py and called by gpukit/_host/native.py.
 *
 * Each kernel (kernels.c, compiled beside this file) is a function of the module per
 * floating type (gk_bias_act_f32, ...), with the C kernel's arguments in its order. A
 * pointer argument is either
 *   - an object with the buffer protocol (a NumPy array): its buffer, which must be
 *     C-contiguous, writable where the kernel writes it, aligned for its element type
 *     and long enough for every element the kernel touches, or ValueError is raised
 *     before the kernel runs; or
 *   - an int, an address (native.py's unplanned calls): taken as it is, aligned and not
 *     NULL, the caller's to keep in bounds;
 *   - None where the kernel takes NULL (no bias gradient, no momentum buffer).
 * The GIL is released while the kernel runs a pass of more than GK_HOLD_GIL elements, so
 * that other Python threads go on. Only the documented C API is used, and no NumPy
 * header: the build runs before NumPy is installed.
 *
 * A METH_FASTCALL call with its arguments converted here costs far less than a ctypes
 * call, which builds a C argument list through libffi and converts each argument through
 * its ctypes type (docs/kernels.rst has the measurements). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* kernels.c's functions (compiled as a unit of its own: see there) */
const char *gk_source_hash(void);
int gk_spans_of(int threads, ptrdiff_t units);
#define GK_DECLARE(T, SFX)                                                                   \
    void gk_bias_act_##SFX(const T *, const T *, T *, ptrdiff_t, ptrdiff_t, ptrdiff_t, int,   \
                           double);                                                          \
    void gk_bias_act_grad_##SFX(const T *, const T *, const T *, T *, double *, T *,         \
                                ptrdiff_t, ptrdiff_t, ptrdiff_t, int, double, int);          \
    void gk_xent_##SFX(const T *, const int64_t *, T *, T *, ptrdiff_t, ptrdiff_t, double);  \
    void gk_xent_grad_##SFX(const T *, const int64_t *, const T *, T *, ptrdiff_t,           \
                            ptrdiff_t, double);                                              \
    void gk_sgd_##SFX(T *, const T *, T *, ptrdiff_t, double, double, double, double, int,   \
                      int);                                                                  \
    void gk_adam_##SFX(T *, const T *, T *, T *, ptrdiff_t, double, double, double, double,  \
                       double, double, double, double);                                      \
    void gk_bias_act_par_##SFX(const T *, const T *, T *, ptrdiff_t, ptrdiff_t, ptrdiff_t,   \
                               int, double, int, int);                                       \
    void gk_bias_act_grad_par_##SFX(const T *, const T *, const T *, T *, double *, T *,     \
                                    ptrdiff_t, ptrdiff_t, ptrdiff_t, int, double, int, int,  \
                                    int);                                                    \
    void gk_xent_par_##SFX(const T *, const int64_t *, T *, T *, ptrdiff_t, ptrdiff_t,       \
                           double, int);                                                     \
    void gk_xent_grad_par_##SFX(const T *, const int64_t *, const T *, T *, ptrdiff_t,       \
                                ptrdiff_t, double, int);                                     \
    void gk_sgd_par_##SFX(T *, const T *, T *, ptrdiff_t, double, double, double, double,    \
                          int, int, int);                                                    \
    void gk_adam_par_##SFX(T *, const T *, T *, T *, ptrdiff_t, double, double, double,      \
                           double, double, double, double, double, int);                     \
    int gk_all_finite_##SFX(const T *, ptrdiff_t);
GK_DECLARE(float, f32)
GK_DECLARE(double, f64)

#define GK_MAX_ARGS 16

/* One argument of a kernel, as converted: a pointer with the bytes its buffer holds (-1:
 * an address or None, not checked), a size, an int or a double. */
typedef struct {
    void *p;
    Py_ssize_t len;
    Py_ssize_t n;
    int i;
    double d;
} gk_arg;

/* The buffers taken for one call, released after it. */
typedef struct {
    Py_buffer views[GK_MAX_ARGS];
    int count;
} gk_held;

static void gk_release(gk_held *held) {
    for (int k = 0; k < held->count; ++k) PyBuffer_Release(&held->views[k]);
    held->count = 0;
}

/* A kernel's arguments, one letter each, in its C order:
 *   r  an array of T it reads          w  an array of T it writes
 *   W  an array of T it writes, or None (NULL)
 *   l  an array of int64 it reads      a  an array of double it adds to, or None
 *   n  a count (Py_ssize_t, at least 0)   i  an int   d  a double
 *   t  a thread count (an int, at least 1: the _par kernels' threads, csrc/pool.h)
 * check: refuses (ValueError) buffers too short for the call's sizes; call: runs it on
 * the converted arguments, in float64 where f64 is set. */
typedef struct {
    const char *sig;
    int (*check)(const char *name, const gk_arg *a, size_t t);
    void (*call)(const gk_arg *a, int f64);
    int rows_at, cols_at; /* the counts whose product is the pass's elements (cols_at -1:
                             rows_at is the count; rows_at -1: a _par kernel's large pass) */
} gk_kernel;

/* Passes of up to this many elements run with the GIL held: releasing and taking it back
 * costs about as much as such a pass (~400 instructions, measured with callgrind: more
 * than a 32-element tanh), and the hold is short (well under a microsecond for every
 * activation), as NumPy keeps it for short ufunc loops. */
#define GK_HOLD_GIL 1024

/* The exception a failed PyObject_GetBuffer left, as ValueError naming the argument (a
 * TypeError, an object without the buffer protocol, stays one). */
static void gk_buffer_error(const char *name, int k, int write, PyObject *o) {
    PyObject *why;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
    int type_error = PyErr_GivenExceptionMatches(exc, PyExc_TypeError);
    why = exc ? PyObject_Str(exc) : NULL;
    Py_XDECREF(exc);
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    int type_error = PyErr_GivenExceptionMatches(type, PyExc_TypeError);
    why = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
#endif
    if (why == NULL) {
        PyErr_Clear();
        why = PyUnicode_FromString("?");
        if (why == NULL) return;
    }
    PyErr_Format(type_error ? PyExc_TypeError : PyExc_ValueError,
                 "%s: argument %d takes an address (int) or a C-contiguous%s buffer; "
                 "got %s (%U)",
                 name, k + 1, write ? ", writable" : "", Py_TYPE(o)->tp_name, why);
    Py_DECREF(why);
}

/* Argument k, a pointer to elements of align bytes (write: the kernel writes them;
 * nullable: None gives NULL). */
static int gk_pointer(const char *name, int k, PyObject *o, size_t align, int write,
                      int nullable, gk_arg *a, gk_held *held) {
    a->len = -1;
    if (PyLong_Check(o)) {
        a->p = PyLong_AsVoidPtr(o);
        if (a->p == NULL && PyErr_Occurred()) return -1;
    } else if (o == Py_None && nullable) {
        a->p = NULL;
        return 0;
    } else {
        Py_buffer *view = &held->views[held->count];
        if (PyObject_GetBuffer(o, view, write ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
            gk_buffer_error(name, k, write, o);
            return -1;
        }
        held->count++;
        a->p = view->buf;
        a->len = view->len;
    }
    if (a->p == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: argument %d is a NULL address", name, k + 1);
        return -1;
    }
    if ((uintptr_t)a->p % align) {
        PyErr_Format(PyExc_ValueError,
                     "%s: argument %d (address %p) is not aligned to its elements' %zu bytes",
                     name, k + 1, a->p, align);
        return -1;
    }
    return 0;
}

static int gk_parse(const char *name, const char *sig, size_t t, PyObject *const *args,
                    Py_ssize_t nargs, gk_arg *a, gk_held *held) {
    Py_ssize_t want = (Py_ssize_t)strlen(sig);
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    for (int k = 0; k < want; ++k) {
        PyObject *o = args[k];
        int err = 0;
        switch (sig[k]) {
        case 'r': err = gk_pointer(name, k, o, t, 0, 0, &a[k], held); break;
        case 'w': err = gk_pointer(name, k, o, t, 1, 0, &a[k], held); break;
        case 'W': err = gk_pointer(name, k, o, t, 1, 1, &a[k], held); break;
        case 'l': err = gk_pointer(name, k, o, sizeof(int64_t), 0, 0, &a[k], held); break;
        case 'a': err = gk_pointer(name, k, o, sizeof(double), 1, 1, &a[k], held); break;
        case 'n':
            a[k].n = PyLong_AsSsize_t(o);
            if (a[k].n == -1 && PyErr_Occurred()) return -1;
            if (a[k].n < 0) {
                PyErr_Format(PyExc_ValueError, "%s: argument %d is a count, got %zd", name,
                             k + 1, a[k].n);
                return -1;
            }
            break;
        case 'i':
        case 't': {
            long v = PyLong_AsLong(o);
            if (v == -1 && PyErr_Occurred()) return -1;
            if (v < INT_MIN || v > INT_MAX) {
                PyErr_Format(PyExc_OverflowError, "%s: argument %d (%ld) overflows a C int",
                             name, k + 1, v);
                return -1;
            }
            if (sig[k] == 't' && v < 1) {
                PyErr_Format(PyExc_ValueError, "%s: argument %d is a thread count, got %ld",
                             name, k + 1, v);
                return -1;
            }
            a[k].i = (int)v;
            break;
        }
        case 'd':
            a[k].d = PyFloat_AsDouble(o);
            if (a[k].d == -1.0 && PyErr_Occurred()) return -1;
            break;
        default: PyErr_SetString(PyExc_SystemError, "gpukit: bad kernel signature"); return -1;
        }
        if (err) return -1;
    }
    return 0;
}

/* Whether argument k holds count elements of size bytes (an address: the caller's to
 * know); ValueError where it does not. */
static int gk_need(const char *name, const gk_arg *a, int k, Py_ssize_t count, size_t size) {
    if (a[k].len < 0 || count <= a[k].len / (Py_ssize_t)size) return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: argument %d holds %zd bytes; this call touches %zd elements of %zu "
                 "bytes",
                 name, k + 1, a[k].len, count, size);
    return -1;
}

/* The elements a rows x cols matrix with rows ld elements apart spans, into *count;
 * ValueError where ld < cols (rows that overlap) or the span overflows. */
static int gk_matrix(const char *name, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t ld,
                     Py_ssize_t *count) {
    if (ld < cols) {
        PyErr_Format(PyExc_ValueError, "%s: rows %zd elements apart hold %zd columns", name,
                     ld, cols);
        return -1;
    }
    if (rows == 0 || cols == 0) {
        *count = 0;
        return 0;
    }
    if (rows - 1 > (PY_SSIZE_T_MAX - cols) / ld) { /* ld >= cols > 0 here */
        PyErr_Format(PyExc_ValueError, "%s: %zd rows of %zd elements overflow", name, rows,
                     ld);
        return -1;
    }
    *count = (rows - 1) * ld + cols;
    return 0;
}

/* -- each kernel: what it touches (check) and its call ---------------------------------- */

/* x, b, y, rows, cols, ld, act, slope */
static int check_bias_act(const char *name, const gk_arg *a, size_t t) {
    Py_ssize_t m, cols = a[4].n;
    if (gk_matrix(name, a[3].n, cols, a[5].n, &m)) return -1;
    Py_ssize_t nb = m ? cols : 0;
    return gk_need(name, a, 0, m, t) || gk_need(name, a, 1, nb, t) || gk_need(name, a, 2, m, t);
}
static void call_bias_act(const gk_arg *a, int f64) {
    if (f64)
        gk_bias_act_f64(a[0].p, a[1].p, a[2].p, a[3].n, a[4].n, a[5].n, a[6].i, a[7].d);
    else
        gk_bias_act_f32(a[0].p, a[1].p, a[2].p, a[3].n, a[4].n, a[5].n, a[6].i, a[7].d);
}
/* ..., threads, by_cols: the same arrays */
static void call_bias_act_par(const gk_arg *a, int f64) {
    if (f64)
        gk_bias_act_par_f64(a[0].p, a[1].p, a[2].p, a[3].n, a[4].n, a[5].n, a[6].i, a[7].d,
                            a[8].i, a[9].i);
    else
        gk_bias_act_par_f32(a[0].p, a[1].p, a[2].p, a[3].n, a[4].n, a[5].n, a[6].i, a[7].d,
                            a[8].i, a[9].i);
}

/* g, v, b, gx, acc, part, rows, cols, ld, act, slope, of_output; acc and part hold
 * spans rows of cols elements (the _par kernel's, one per span) */
static int check_grad_spans(const char *name, const gk_arg *a, size_t t, Py_ssize_t spans) {
    Py_ssize_t m, cols = a[7].n;
    if (gk_matrix(name, a[6].n, cols, a[8].n, &m)) return -1;
    Py_ssize_t nc = m ? cols : 0, sums = nc > PY_SSIZE_T_MAX / spans ? -1 : spans * nc;
    if (sums < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %zd spans of %zd sums overflow", name, spans, nc);
        return -1;
    }
    return gk_need(name, a, 0, m, t) || gk_need(name, a, 1, m, t) ||
           gk_need(name, a, 2, nc, t) || gk_need(name, a, 3, m, t) ||
           gk_need(name, a, 4, sums, sizeof(double)) || gk_need(name, a, 5, sums, t);
}
static int check_bias_act_grad(const char *name, const gk_arg *a, size_t t) {
    return check_grad_spans(name, a, t, 1);
}
static void call_bias_act_grad(const gk_arg *a, int f64) {
    if (f64)
        gk_bias_act_grad_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].p, a[5].p, a[6].n, a[7].n,
                             a[8].n, a[9].i, a[10].d, a[11].i);
    else
        gk_bias_act_grad_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].p, a[5].p, a[6].n, a[7].n,
                             a[8].n, a[9].i, a[10].d, a[11].i);
}

/* ..., threads, by_cols: spans of columns (one row of sums) or of rows (one each) */
static int check_bias_act_grad_par(const char *name, const gk_arg *a, size_t t) {
    return check_grad_spans(name, a, t, a[13].i ? 1 : gk_spans_of(a[12].i, a[6].n));
}
static void call_bias_act_grad_par(const gk_arg *a, int f64) {
    if (f64)
        gk_bias_act_grad_par_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].p, a[5].p, a[6].n,
                                 a[7].n, a[8].n, a[9].i, a[10].d, a[11].i, a[12].i, a[13].i);
    else
        gk_bias_act_grad_par_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].p, a[5].p, a[6].n,
                                 a[7].n, a[8].n, a[9].i, a[10].d, a[11].i, a[12].i, a[13].i);
}

/* xent: x, labels, loss, p, rows, cols, smoothing; xent_grad: p, labels, gl, g, ... */
static int check_rows(const char *name, const gk_arg *a, size_t t) {
    Py_ssize_t m, rows = a[4].n;
    if (gk_matrix(name, rows, a[5].n, a[5].n, &m)) return -1;
    return gk_need(name, a, 0, m, t) || gk_need(name, a, 1, rows, sizeof(int64_t)) ||
           gk_need(name, a, 2, rows, t) || gk_need(name, a, 3, m, t);
}
static void call_xent(const gk_arg *a, int f64) {
    if (f64)
        gk_xent_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d);
    else
        gk_xent_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d);
}
static void call_xent_grad(const gk_arg *a, int f64) {
    if (f64)
        gk_xent_grad_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d);
    else
        gk_xent_grad_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d);
}
static void call_xent_par(const gk_arg *a, int f64) {
    if (f64)
        gk_xent_par_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d, a[7].i);
    else
        gk_xent_par_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d, a[7].i);
}
static void call_xent_grad_par(const gk_arg *a, int f64) {
    if (f64)
        gk_xent_grad_par_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d, a[7].i);
    else
        gk_xent_grad_par_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].n, a[6].d, a[7].i);
}

/* the updates: n elements of each array, n after the arrays */
static int check_flat(const char *name, const gk_arg *a, size_t t, int arrays) {
    Py_ssize_t n = a[arrays].n;
    for (int k = 0; k < arrays; ++k)
        if (gk_need(name, a, k, n, t)) return -1;
    return 0;
}
/* p, g, buf, n, lr, momentum, dampening, weight_decay, nesterov, first_step */
static int check_sgd(const char *name, const gk_arg *a, size_t t) {
    return check_flat(name, a, t, 3);
}
static void call_sgd(const gk_arg *a, int f64) {
    if (f64)
        gk_sgd_f64(a[0].p, a[1].p, a[2].p, a[3].n, a[4].d, a[5].d, a[6].d, a[7].d, a[8].i,
                   a[9].i);
    else
        gk_sgd_f32(a[0].p, a[1].p, a[2].p, a[3].n, a[4].d, a[5].d, a[6].d, a[7].d, a[8].i,
                   a[9].i);
}
static void call_sgd_par(const gk_arg *a, int f64) {
    if (f64)
        gk_sgd_par_f64(a[0].p, a[1].p, a[2].p, a[3].n, a[4].d, a[5].d, a[6].d, a[7].d, a[8].i,
                       a[9].i, a[10].i);
    else
        gk_sgd_par_f32(a[0].p, a[1].p, a[2].p, a[3].n, a[4].d, a[5].d, a[6].d, a[7].d, a[8].i,
                       a[9].i, a[10].i);
}
/* p, g, m, v, n, omb1, beta2, omb2, eps, l2, decay, step_size, inv_bc2 */
static int check_adam(const char *name, const gk_arg *a, size_t t) {
    return check_flat(name, a, t, 4);
}
static void call_adam(const gk_arg *a, int f64) {
    if (f64)
        gk_adam_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].d, a[6].d, a[7].d, a[8].d,
                    a[9].d, a[10].d, a[11].d, a[12].d);
    else
        gk_adam_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].d, a[6].d, a[7].d, a[8].d,
                    a[9].d, a[10].d, a[11].d, a[12].d);
}
static void call_adam_par(const gk_arg *a, int f64) {
    if (f64)
        gk_adam_par_f64(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].d, a[6].d, a[7].d,
                        a[8].d, a[9].d, a[10].d, a[11].d, a[12].d, a[13].i);
    else
        gk_adam_par_f32(a[0].p, a[1].p, a[2].p, a[3].p, a[4].n, a[5].d, a[6].d, a[7].d,
                        a[8].d, a[9].d, a[10].d, a[11].d, a[12].d, a[13].i);
}

static const gk_kernel K_bias_act = {"rrwnnnid", check_bias_act, call_bias_act, 3, 4};
static const gk_kernel K_bias_act_grad = {"rrrwawnnnidi", check_bias_act_grad,
                                          call_bias_act_grad, 6, 7};
static const gk_kernel K_xent = {"rlwwnnd", check_rows, call_xent, 4, 5};
static const gk_kernel K_xent_grad = {"rlrwnnd", check_rows, call_xent_grad, 4, 5};
static const gk_kernel K_sgd = {"wrWnddddii", check_sgd, call_sgd, 3, -1};
static const gk_kernel K_adam = {"wrwwndddddddd", check_adam, call_adam, 4, -1};
/* each kernel's spans over the module's own threads (csrc/pool.h): the thread count
 * last, then for the bias kernels whether the spans are of columns */
static const gk_kernel K_bias_act_par = {"rrwnnnidti", check_bias_act, call_bias_act_par, -1,
                                         -1};
static const gk_kernel K_bias_act_grad_par = {"rrrwawnnniditi", check_bias_act_grad_par,
                                              call_bias_act_grad_par, -1, -1};
static const gk_kernel K_xent_par = {"rlwwnndt", check_rows, call_xent_par, -1, -1};
static const gk_kernel K_xent_grad_par = {"rlrwnndt", check_rows, call_xent_grad_par, -1,
                                          -1};
static const gk_kernel K_sgd_par = {"wrWnddddiit", check_sgd, call_sgd_par, -1, -1};
static const gk_kernel K_adam_par = {"wrwwnddddddddt", check_adam, call_adam_par, -1, -1};

/* Whether k's pass over these arguments has at most GK_HOLD_GIL elements (counts are at
 * least 0: gk_parse). */
static int gk_short(const gk_kernel *k, const gk_arg *a) {
    if (k->rows_at < 0) return 0;
    Py_ssize_t rows = a[k->rows_at].n;
    if (k->cols_at < 0) return rows <= GK_HOLD_GIL;
    return rows == 0 || a[k->cols_at].n <= GK_HOLD_GIL / rows;
}

/* One call: the arguments converted and checked with the GIL held, the kernel run
 * without it unless its pass is short (GK_HOLD_GIL). */
static PyObject *gk_run(const gk_kernel *k, int f64, const char *name, PyObject *const *args,
                        Py_ssize_t nargs) {
    gk_arg a[GK_MAX_ARGS];
    gk_held held;
    held.count = 0;
    size_t t = f64 ? sizeof(double) : sizeof(float);
    if (gk_parse(name, k->sig, t, args, nargs, a, &held) || k->check(name, a, t)) {
        gk_release(&held);
        return NULL;
    }
    if (gk_short(k, a)) {
        k->call(a, f64);
    } else {
        Py_BEGIN_ALLOW_THREADS
        k->call(a, f64);
        Py_END_ALLOW_THREADS
    }
    gk_release(&held);
    Py_RETURN_NONE;
}

#define GK_ENTRY(NAME)                                                                   \
    static PyObject *py_##NAME##_f32(PyObject *m, PyObject *const *args, Py_ssize_t n) { \
        (void)m;                                                                         \
        return gk_run(&K_##NAME, 0, "gk_" #NAME "_f32", args, n);                        \
    }                                                                                    \
    static PyObject *py_##NAME##_f64(PyObject *m, PyObject *const *args, Py_ssize_t n) { \
        (void)m;                                                                         \
        return gk_run(&K_##NAME, 1, "gk_" #NAME "_f64", args, n);                        \
    }
GK_ENTRY(bias_act)
GK_ENTRY(bias_act_grad)
GK_ENTRY(xent)
GK_ENTRY(xent_grad)
GK_ENTRY(sgd)
GK_ENTRY(adam)
GK_ENTRY(bias_act_par)
GK_ENTRY(bias_act_grad_par)
GK_ENTRY(xent_par)
GK_ENTRY(xent_grad_par)
GK_ENTRY(sgd_par)
GK_ENTRY(adam_par)

/* spans(threads, units): the spans of a pass over units rows on threads threads. */
static PyObject *py_spans(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "spans: takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    long threads = PyLong_AsLong(args[0]);
    Py_ssize_t units = PyLong_AsSsize_t(args[1]);
    if ((threads == -1 || units == -1) && PyErr_Occurred()) return NULL;
    if (threads < 1 || threads > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "spans: threads must be 1 to %d, not %ld", INT_MAX,
                     threads);
        return NULL;
    }
    return PyLong_FromLong(gk_spans_of((int)threads, units));
}

/* address(obj): the address of obj's first element, through the buffer protocol (any
 * strides, read-only too), for gpukit's ctypes calls into BLAS and LAPACK. */
static PyObject *py_address(PyObject *m, PyObject *o) {
    (void)m;
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_STRIDES) < 0) return NULL;
    PyObject *p = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return p;
}

/* all_finite(x): whether every element of x is finite, for a contiguous buffer (C or
 * Fortran order) of float32 or float64, or of their complex pairs, in native byte order
 * (a NumPy array's); None for any other object, which the caller then checks itself.
 * The GIL is released for a pass of more than GK_HOLD_GIL elements. */
static PyObject *py_all_finite(PyObject *m, PyObject *o) {
    (void)m;
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_ANY_CONTIGUOUS) < 0) {
        PyErr_Clear(); /* no such buffer: not this function's to refuse */
        Py_RETURN_NONE;
    }
    const char *f = view.format ? view.format : "B";
#if PY_LITTLE_ENDIAN
    if (*f == '@' || *f == '=' || *f == '<') ++f;
#else
    if (*f == '@' || *f == '=' || *f == '>' || *f == '!') ++f;
#endif
    Py_ssize_t pair = *f == 'Z' ? 2 : 1; /* a complex element: two of its real type */
    f += pair - 1;
    size_t size = f[0] == 'd' && f[1] == '\0' ? sizeof(double)
                  : f[0] == 'f' && f[1] == '\0' ? sizeof(float)
                                                : 0;
    if (size == 0 || view.itemsize != pair * (Py_ssize_t)size || (uintptr_t)view.buf % size) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    Py_ssize_t n = view.len / (Py_ssize_t)size;
    int finite;
    if (n <= GK_HOLD_GIL) {
        finite = size == sizeof(double) ? gk_all_finite_f64(view.buf, n)
                                        : gk_all_finite_f32(view.buf, n);
    } else {
        Py_BEGIN_ALLOW_THREADS
        finite = size == sizeof(double) ? gk_all_finite_f64(view.buf, n)
                                        : gk_all_finite_f32(view.buf, n);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(finite);
}

#define GK_METHODS(NAME)                                                                  \
    {"gk_" #NAME "_f32", (PyCFunction)(void (*)(void))py_##NAME##_f32, METH_FASTCALL,     \
     "gk_" #NAME " in float32 (csrc/kernels_body.h)"},                                    \
    {"gk_" #NAME "_f64", (PyCFunction)(void (*)(void))py_##NAME##_f64, METH_FASTCALL,     \
     "gk_" #NAME " in float64 (csrc/kernels_body.h)"},

static PyMethodDef gk_methods[] = {
    GK_METHODS(bias_act) GK_METHODS(bias_act_grad) GK_METHODS(xent) GK_METHODS(xent_grad)
    GK_METHODS(sgd) GK_METHODS(adam) GK_METHODS(bias_act_par) GK_METHODS(bias_act_grad_par)
    GK_METHODS(xent_par) GK_METHODS(xent_grad_par) GK_METHODS(sgd_par) GK_METHODS(adam_par)
    {"spans", (PyCFunction)(void (*)(void))py_spans, METH_FASTCALL,
     "spans(threads, units): the spans of a pass over units rows on threads threads."},
    {"address", py_address, METH_O, "address(obj): the address of obj's first element."},
    {"all_finite", py_all_finite, METH_O,
     "all_finite(x): whether every element of x is finite; None where x is no contiguous "
     "float32/float64 (complex) buffer in native byte order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gk_module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "gpukit's compiled host kernels (gpukit/_host/csrc); gpukit/_host/native.py calls them.",
    -1, gk_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    PyObject *m = PyModule_Create(&gk_module);
    if (m == NULL) return NULL;
    /* what native.py compares with the sources beside it before using the module */
    if (PyModule_AddStringConstant(m, "gk_source_hash", gk_source_hash()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
