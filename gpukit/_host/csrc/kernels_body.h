/* The kernels of one floating type, included by kernels.c once per type with T (the
 * type), SFX (the exported names' suffix), EXP, EXP_LOW, PHI, TANH, LOG, FABS, SQRT
 * (its functions) and T_MAX (its largest finite value) defined. A matrix is rows x cols
 * elements, row i starting ld elements after row i - 1 (a span of a larger matrix's
 * columns has ld > cols); x and y (g and gx) may be the same array: each element is
 * read before its own output is written, and never again, so the loops are vectorised
 * as free of dependences ("omp simd", -fopenmp-simd: no OpenMP run time, no threads of
 * its own). */

/* one pass over the rows: z = x + b, y = EXPR(z); ALIGN (a constant): from the output
 * row's first 64-byte boundary (gk_head) */
#define GK_FORWARD_COLS(EXPR, J0, J1)                                         \
    _Pragma("omp simd") for (ptrdiff_t j = (J0); j < (J1); ++j) {             \
        T z = xr[j] + b[j];                                                   \
        yr[j] = (EXPR);                                                       \
    }
#define GK_FORWARD(EXPR, ALIGN)                                               \
    for (ptrdiff_t i = 0; i < rows; ++i) {                                    \
        const T *xr = x + i * ld;                                             \
        T *yr = y + i * ld;                                                   \
        if (ALIGN) {                                                          \
            ptrdiff_t h = gk_head(yr, sizeof(T), cols);                       \
            for (ptrdiff_t j0 = 0, j1 = h; j0 < cols; j0 = j1, j1 = cols) {   \
                GK_FORWARD_COLS(EXPR, j0, j1)                                 \
            }                                                                 \
        } else {                                                              \
            GK_FORWARD_COLS(EXPR, 0, cols)                                    \
        }                                                                     \
    }                                                                         \
    break

static inline T SFX(sigmoid)(T z) { return (T)1 / ((T)1 + EXP(-z)); }

/* gelu's tanh form through a sigmoid: 0.5 (1 + tanh(y)) = sigmoid(2 y), exact in the
 * tail where 1 + tanh(y) cancels */
static inline T SFX(gelu_tanh_gate)(T z) {
    return SFX(sigmoid)((T)(2 * 0.7978845608028654) * (z + (T)0.044715 * z * z * z));
}

/* y = act(x + b) for rows x cols elements; b: cols elements (-0.0 for none: x + -0.0
 * is x, signed zeros too) */
GK_EXPORT GK_KERNEL void SFX(gk_bias_act)(const T *x, const T *b, T *y, ptrdiff_t rows,
                                          ptrdiff_t cols, ptrdiff_t ld, int act,
                                          double slope_) {
    const T slope = (T)slope_;
    switch (act) {
    case GK_IDENTITY: GK_FORWARD(z, 1);
    /* NaN and -0.0 pass through, as in PyTorch (z > 0 ? z : 0 gave 0 for both) */
    case GK_RELU: GK_FORWARD(z < 0 ? (T)0 : z, 1);
    case GK_LEAKY_RELU: GK_FORWARD(z > 0 ? z : z * slope, 1);
    case GK_GELU: GK_FORWARD(z * PHI(z), 0);
    case GK_GELU_TANH: GK_FORWARD(z * SFX(gelu_tanh_gate)(z), 0);
    case GK_SILU: GK_FORWARD(z * SFX(sigmoid)(z), 0);
    case GK_SIGMOID: GK_FORWARD(SFX(sigmoid)(z), 0);
    case GK_TANH: GK_FORWARD(TANH(z), 0);
    default: break;
    }
}
#undef GK_FORWARD
#undef GK_FORWARD_COLS

/* The same over the pool's threads (pool.h): spans of rows, or of columns (by_cols: too
 * few rows for the threads; b then spans with them), several a thread (gk_spans). */
typedef struct {
    const T *x, *b;
    T *y;
    ptrdiff_t rows, cols, ld;
    int act, by_cols;
    double slope;
} SFX(gk_forward_job);

static void SFX(gk_forward_span)(const void *job, int k, int n) {
    const SFX(gk_forward_job) *j = job;
    if (j->by_cols) {
        ptrdiff_t lo = gk_bound(j->cols, k, n), hi = gk_bound(j->cols, k + 1, n);
        SFX(gk_bias_act)(j->x + lo, j->b + lo, j->y + lo, j->rows, hi - lo, j->ld, j->act,
                         j->slope);
    } else {
        ptrdiff_t lo = gk_bound(j->rows, k, n), hi = gk_bound(j->rows, k + 1, n);
        SFX(gk_bias_act)(j->x + lo * j->ld, j->b, j->y + lo * j->ld, hi - lo, j->cols, j->ld,
                         j->act, j->slope);
    }
}

GK_EXPORT void SFX(gk_bias_act_par)(const T *x, const T *b, T *y, ptrdiff_t rows,
                                    ptrdiff_t cols, ptrdiff_t ld, int act, double slope,
                                    int threads, int by_cols) {
    SFX(gk_forward_job) job = {x, b, y, rows, cols, ld, act, by_cols, slope};
    gk_parallel(SFX(gk_forward_span), &job, gk_spans(threads, by_cols ? cols : rows), threads);
}

/* act'(z) for the backward pass */
static inline T SFX(derivative)(T z, int act, T slope) {
    switch (act) {
    case GK_RELU: return z <= 0 ? (T)0 : (T)1; /* NaN passes the gradient, as in PyTorch */
    case GK_LEAKY_RELU: return z > 0 ? (T)1 : slope; /* NaN takes the slope, as in PyTorch */
    case GK_GELU: /* Phi(z) + z phi(z) */
        return PHI(z) + z * (T)0.3989422804014327 * EXP_LOW((T)-0.5 * z * z, (T)1);
    case GK_GELU_TANH: { /* s + 2 z s (1 - s) k (1 + 3 c z^2), s = sigmoid(2 k (z + c z^3)) */
        T s = SFX(gelu_tanh_gate)(z);
        return s + (T)(2 * 0.7978845608028654) * z * s * ((T)1 - s) *
                       ((T)1 + (T)(3 * 0.044715) * z * z);
    }
    case GK_SILU: { /* s (1 + z (1 - s)) */
        T s = SFX(sigmoid)(z);
        return s * ((T)1 + z * ((T)1 - s));
    }
    case GK_SIGMOID: { /* s (1 - s) = e / (1 + e)^2, e = exp(-|z|): no 1 - s to cancel */
        T e = EXP_LOW(-FABS(z), (T)1);
        T d = (T)1 + e;
        return e / (d * d);
    }
    case GK_TANH: { /* 1 - tanh^2 = 4 e / (1 + e)^2, e = exp(-2|z|) */
        T e4 = EXP_LOW((T)-2 * FABS(z), (T)4);
        T d = e4 * (T)0.25 + (T)1;
        return e4 / (d * d);
    }
    default: return (T)1;
    }
}

/* the same from the activation's output y (identity, relu, sigmoid, tanh) */
static inline T SFX(derivative_of_output)(T y, int act) {
    switch (act) {
    case GK_RELU: return y <= 0 ? (T)0 : (T)1;
    case GK_SIGMOID: return y * ((T)1 - y);
    case GK_TANH: return (T)1 - y * y;
    default: return (T)1;
    }
}

/* The column sums of gx are kept in T over blocks of GK_SUM_ROWS rows (part: cols
 * elements of scratch), then added to acc in double: the sums cost a T add per element,
 * not two conversions and two double adds, and their rounding grows with GK_SUM_ROWS
 * and the float64 additions, not with the number of rows. */
#ifndef GK_SUM_ROWS
#define GK_SUM_ROWS 32
#endif

/* one pass: gx = g * D, added to part as it is stored, and part added to acc[j] every
 * GK_SUM_ROWS rows (acc: NULL for none; part: cols elements of scratch, always). D is
 * computed in one loop only, whatever the sums: every variant of a loop is compiled on
 * its own (contractions into FMA included), and gx must not depend on which rows a
 * thread was given, nor on whether the bias gradient is wanted. */
#define GK_BACKWARD_COLS(D, J0, J1)                                           \
    _Pragma("omp simd") for (ptrdiff_t j = (J0); j < (J1); ++j) {             \
        T o = gr[j] * (D);                                                    \
        or_[j] = o;                                                           \
        part[j] += o;                                                         \
    }
#define GK_BACKWARD(D, ALIGN)                                                 \
    for (ptrdiff_t i0 = 0; i0 < rows; i0 += GK_SUM_ROWS) {                    \
        ptrdiff_t i1 = i0 + GK_SUM_ROWS < rows ? i0 + GK_SUM_ROWS : rows;     \
        memset(part, 0, (size_t)cols * sizeof(T));                            \
        for (ptrdiff_t i = i0; i < i1; ++i) {                                 \
            const T *gr = g + i * ld, *vr = v + i * ld;                       \
            T *or_ = gx + i * ld;                                             \
            (void)vr;                                                         \
            if (ALIGN) {                                                      \
                ptrdiff_t h = gk_head(or_, sizeof(T), cols);                  \
                for (ptrdiff_t j0 = 0, j1 = h; j0 < cols; j0 = j1, j1 = cols) { \
                    GK_BACKWARD_COLS(D, j0, j1)                               \
                }                                                             \
            } else {                                                          \
                GK_BACKWARD_COLS(D, 0, cols)                                  \
            }                                                                 \
        }                                                                     \
        if (acc) {                                                            \
            _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) {        \
                acc[j] += (double)part[j];                                    \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    break

/* The identity's column sums of g alone, where the caller's gx is g itself (the kernel
 * API returns grad_y as the identity's grad_x, as PyTorch's autograd passes it through):
 * g is only read, so a read-only g is fine. Kept in T over GK_SUM_ROWS rows as the
 * others, four rows at a time: part is loaded and stored once per four rows read (a
 * row at a time, that store bounds the loop: the rows come from cache). */
static inline void SFX(sum_only)(const T *g, double *acc, T *part, ptrdiff_t rows,
                                 ptrdiff_t cols, ptrdiff_t ld) {
    for (ptrdiff_t i0 = 0; i0 < rows; i0 += GK_SUM_ROWS) {
        ptrdiff_t i1 = i0 + GK_SUM_ROWS < rows ? i0 + GK_SUM_ROWS : rows;
        ptrdiff_t i = i0 + 1;
        const T *g0 = g + i0 * ld;
        _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) part[j] = g0[j];
        for (; i + 4 <= i1; i += 4) {
            const T *ga = g + i * ld, *gb = ga + ld, *gc = gb + ld, *gd = gc + ld;
            _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) {
                part[j] += (ga[j] + gb[j]) + (gc[j] + gd[j]);
            }
        }
        for (; i < i1; ++i) {
            const T *gr = g + i * ld;
            _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) part[j] += gr[j];
        }
        _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) acc[j] += (double)part[j];
    }
}

/* The identity's gradient: gx = g and, with acc, its column sums, in one pass: each row
 * is copied and added to part in the same loop (part kept in T over GK_SUM_ROWS rows,
 * then added to acc in double, as for the other activations), without a second pass
 * that rereads the row. */
static inline void SFX(copy_sum)(const T *g, T *gx, double *acc, T *part, ptrdiff_t rows,
                                 ptrdiff_t cols, ptrdiff_t ld) {
    for (ptrdiff_t i0 = 0; i0 < rows; i0 += GK_SUM_ROWS) {
        ptrdiff_t i1 = i0 + GK_SUM_ROWS < rows ? i0 + GK_SUM_ROWS : rows;
        const T *g0 = g + i0 * ld;
        T *o0 = gx + i0 * ld;
        ptrdiff_t h = gk_head(o0, sizeof(T), cols);
        for (ptrdiff_t j0 = 0, j1 = h; j0 < cols; j0 = j1, j1 = cols) {
            _Pragma("omp simd") for (ptrdiff_t j = j0; j < j1; ++j) {
                T e = g0[j];
                o0[j] = e;
                part[j] = e;
            }
        }
        for (ptrdiff_t i = i0 + 1; i < i1; ++i) {
            const T *gr = g + i * ld;
            T *or_ = gx + i * ld;
            h = gk_head(or_, sizeof(T), cols);
            for (ptrdiff_t j0 = 0, j1 = h; j0 < cols; j0 = j1, j1 = cols) {
                _Pragma("omp simd") for (ptrdiff_t j = j0; j < j1; ++j) {
                    T e = gr[j];
                    or_[j] = e;
                    part[j] += e;
                }
            }
        }
        _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) acc[j] += (double)part[j];
    }
}

/* gx = g * act'(v + b) (of_output: g * act'(z) from v = act(z); b unused) and, with
 * acc, its column sums added to acc (part: cols elements of scratch, always) */
GK_EXPORT GK_KERNEL void SFX(gk_bias_act_grad)(const T *g, const T *v, const T *b, T *gx,
                                               double *acc, T *part, ptrdiff_t rows,
                                               ptrdiff_t cols, ptrdiff_t ld, int act,
                                               double slope_, int of_output) {
    const T slope = (T)slope_;
    if (gx == g && act == GK_IDENTITY) { /* gx is g already: at most the sums to make */
        if (acc) SFX(sum_only)(g, acc, part, rows, cols, ld);
        return;
    }
    if (acc && (act == GK_IDENTITY || (of_output && act != GK_RELU && act != GK_SIGMOID &&
                                       act != GK_TANH))) {
        SFX(copy_sum)(g, gx, acc, part, rows, cols, ld);
        return;
    }
    if (of_output) {
        switch (act) {
        case GK_RELU: GK_BACKWARD(SFX(derivative_of_output)(vr[j], GK_RELU), 1);
        case GK_SIGMOID: GK_BACKWARD(SFX(derivative_of_output)(vr[j], GK_SIGMOID), 1);
        case GK_TANH: GK_BACKWARD(SFX(derivative_of_output)(vr[j], GK_TANH), 1);
        default: GK_BACKWARD((T)1, 1);
        }
        return;
    }
    switch (act) {
    case GK_IDENTITY: GK_BACKWARD((T)1, 1);
    case GK_RELU: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_RELU, slope), 1);
    case GK_LEAKY_RELU: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_LEAKY_RELU, slope), 1);
    case GK_GELU: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_GELU, slope), 0);
    case GK_GELU_TANH: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_GELU_TANH, slope), 0);
    case GK_SILU: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_SILU, slope), 0);
    case GK_SIGMOID: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_SIGMOID, slope), 0);
    case GK_TANH: GK_BACKWARD(SFX(derivative)(vr[j] + b[j], GK_TANH, slope), 0);
    default: break;
    }
}
#undef GK_BACKWARD
#undef GK_BACKWARD_COLS

/* The same over the pool's threads: gk_spans(threads, rows) spans of rows, span k's sums
 * into row k of acc (spans x cols) and its scratch at part + k cols, or spans of columns
 * (by_cols), the sums into acc's one row, the scratch at part + the span's first column. */
typedef struct {
    const T *g, *v, *b;
    T *gx, *part;
    double *acc;
    ptrdiff_t rows, cols, ld;
    int act, of_output, by_cols;
    double slope;
} SFX(gk_backward_job);

static void SFX(gk_backward_span)(const void *job, int k, int n) {
    const SFX(gk_backward_job) *j = job;
    if (j->by_cols) {
        ptrdiff_t lo = gk_bound(j->cols, k, n), hi = gk_bound(j->cols, k + 1, n);
        SFX(gk_bias_act_grad)(j->g + lo, j->v + lo, j->b + lo, j->gx + lo,
                              j->acc ? j->acc + lo : NULL, j->part + lo, j->rows, hi - lo,
                              j->ld, j->act, j->slope, j->of_output);
    } else {
        ptrdiff_t lo = gk_bound(j->rows, k, n), hi = gk_bound(j->rows, k + 1, n);
        ptrdiff_t o = lo * j->ld;
        SFX(gk_bias_act_grad)(j->g + o, j->v + o, j->b, j->gx + o,
                              j->acc ? j->acc + k * j->cols : NULL, j->part + k * j->cols,
                              hi - lo, j->cols, j->ld, j->act, j->slope, j->of_output);
    }
}

GK_EXPORT void SFX(gk_bias_act_grad_par)(const T *g, const T *v, const T *b, T *gx,
                                         double *acc, T *part, ptrdiff_t rows,
                                         ptrdiff_t cols, ptrdiff_t ld, int act,
                                         double slope, int of_output, int threads,
                                         int by_cols) {
    SFX(gk_backward_job) job = {g, v, b, gx, part, acc, rows, cols, ld,
                                act, of_output, by_cols, slope};
    gk_parallel(SFX(gk_backward_span), &job, gk_spans(threads, by_cols ? cols : rows), threads);
}

/* Softmax cross-entropy, row by row: with z = x - max(x) (exact where it matters),
 * p = exp(z) / sum exp(z) and loss = log sum exp(z) - (1 - eps) z[label]
 * - sum (eps / cols) z, each term scaled before the sum so that logits near the type's
 * largest do not overflow it. A label outside [0, cols) gives a NaN loss. */
GK_EXPORT GK_KERNEL void SFX(gk_xent)(const T *x, const int64_t *labels, T *loss, T *p,
                                      ptrdiff_t rows, ptrdiff_t cols, double smoothing) {
    const T k = (T)(smoothing / (double)cols);
    for (ptrdiff_t i = 0; i < rows; ++i) {
        const T *xr = x + i * cols;
        T *pr = p + i * cols;
        T m = -INFINITY;
        _Pragma("omp simd reduction(max : m)") for (ptrdiff_t j = 0; j < cols; ++j) {
            m = xr[j] > m ? xr[j] : m;
        }
        T s = 0, zs = 0;
        if (smoothing != 0.0) {
            _Pragma("omp simd reduction(+ : s, zs)") for (ptrdiff_t j = 0; j < cols; ++j) {
                T z = xr[j] - m;
                T e = EXP_LOW(z, (T)1);
                pr[j] = e;
                s += e;
                zs += z * k;
            }
        } else {
            _Pragma("omp simd reduction(+ : s)") for (ptrdiff_t j = 0; j < cols; ++j) {
                T e = EXP_LOW(xr[j] - m, (T)1);
                pr[j] = e;
                s += e;
            }
        }
        _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) pr[j] = pr[j] / s;
        int64_t lab = labels[i];
        T picked = (lab >= 0 && lab < cols) ? xr[lab] - m : (T)NAN;
        loss[i] = LOG(s) - ((T)1 - (T)smoothing) * picked - zs;
    }
}

/* Its gradient: g = (p - eps / cols - (1 - eps) [j == label]) grad_loss, row by row; a
 * row whose label is outside [0, cols) is NaN. */
GK_EXPORT GK_KERNEL void SFX(gk_xent_grad)(const T *p, const int64_t *labels, const T *gl,
                                           T *g, ptrdiff_t rows, ptrdiff_t cols,
                                           double smoothing) {
    const T k = (T)(smoothing / (double)cols);
    for (ptrdiff_t i = 0; i < rows; ++i) {
        const T *pr = p + i * cols;
        T *gr = g + i * cols;
        const T w = gl[i];
        int64_t lab = labels[i];
        if (lab < 0 || lab >= cols) {
            for (ptrdiff_t j = 0; j < cols; ++j) gr[j] = (T)NAN;
            continue;
        }
        _Pragma("omp simd") for (ptrdiff_t j = 0; j < cols; ++j) gr[j] = (pr[j] - k) * w;
        gr[lab] = ((pr[lab] - k) - ((T)1 - (T)smoothing)) * w;
    }
}

/* Both over the pool's threads: spans of rows, several a thread (gk_spans). */
typedef struct {
    const T *a;
    const int64_t *labels;
    T *per_row, *out;
    ptrdiff_t rows, cols;
    double smoothing;
    int grad;
} SFX(gk_xent_job);

static void SFX(gk_xent_span)(const void *job, int k, int n) {
    const SFX(gk_xent_job) *j = job;
    ptrdiff_t lo = gk_bound(j->rows, k, n), hi = gk_bound(j->rows, k + 1, n);
    ptrdiff_t o = lo * j->cols;
    if (j->grad) {
        SFX(gk_xent_grad)(j->a + o, j->labels + lo, j->per_row + lo, j->out + o, hi - lo,
                          j->cols, j->smoothing);
    } else {
        SFX(gk_xent)(j->a + o, j->labels + lo, j->per_row + lo, j->out + o, hi - lo, j->cols,
                     j->smoothing);
    }
}

GK_EXPORT void SFX(gk_xent_par)(const T *x, const int64_t *labels, T *loss, T *p,
                                ptrdiff_t rows, ptrdiff_t cols, double smoothing,
                                int threads) {
    SFX(gk_xent_job) job = {x, labels, loss, p, rows, cols, smoothing, 0};
    gk_parallel(SFX(gk_xent_span), &job, gk_spans(threads, rows), threads);
}

GK_EXPORT void SFX(gk_xent_grad_par)(const T *p, const int64_t *labels, const T *gl, T *g,
                                     ptrdiff_t rows, ptrdiff_t cols, double smoothing,
                                     int threads) {
    /* gl is only read: the job's per_row is not const for the forward's loss */
    SFX(gk_xent_job) job = {p, labels, (T *)gl, g, rows, cols, smoothing, 1};
    gk_parallel(SFX(gk_xent_span), &job, gk_spans(threads, rows), threads);
}

/* The optimizer updates, in place over n elements of flat buffers that do not overlap
 * (the callers refuse ones that do), one pass: each element's parameter, gradient and
 * state are read once and written once. Every flag and hyper-parameter is invariant in
 * the loop, so the compiler makes a vectorised loop per combination, or selects between
 * both sides of a condition: a side not taken never reaches the result (weight_decay
 * * param is not added where weight_decay is 0: an infinite parameter makes it NaN). */

/* torch.optim.SGD: d = g + weight_decay p; with momentum (buf not NULL) buf = d on the
 * first step, else momentum buf + (1 - dampening) d, and the step is d + momentum buf
 * (Nesterov) or buf; p -= lr step. */
GK_EXPORT GK_KERNEL void SFX(gk_sgd)(T *p, const T *g, T *buf, ptrdiff_t n, double lr_,
                                     double momentum_, double dampening_,
                                     double weight_decay_, int nesterov, int first_step) {
    const T lr = (T)lr_, mu = (T)momentum_, damp1 = (T)(1.0 - dampening_);
    const T wd = (T)weight_decay_;
    const int decay = weight_decay_ != 0.0;
    const ptrdiff_t h = gk_head(p, sizeof(T), n);
    if (buf == NULL) {
        for (ptrdiff_t i0 = 0, i1 = h; i0 < n; i0 = i1, i1 = n) {
            _Pragma("omp simd") for (ptrdiff_t i = i0; i < i1; ++i) {
                T d = decay ? g[i] + wd * p[i] : g[i];
                p[i] = p[i] - lr * d;
            }
        }
        return;
    }
    for (ptrdiff_t i0 = 0, i1 = h; i0 < n; i0 = i1, i1 = n) {
        _Pragma("omp simd") for (ptrdiff_t i = i0; i < i1; ++i) {
            /* every load before the stores: the buffers often start at the same offset
             * in a page (NumPy's large arrays all do), and a load issued after a store to
             * the same page offset may wait on it as if it were the same address */
            T pi = p[i], bi = buf[i];
            T d = decay ? g[i] + wd * pi : g[i];
            T b = first_step ? d : mu * bi + damp1 * d;
            T s = nesterov ? d + mu * b : b;
            buf[i] = b;
            p[i] = pi - lr * s;
        }
    }
}

/* torch.optim.Adam (AdamW: l2 = 0, decay = 1 - lr weight_decay; Adam: decay = 1):
 * g += l2 p; p *= decay; m += (1 - beta1) (g - m) (a lerp, as torch computes it);
 * v = beta2 v + (1 - beta2) g^2; p -= step_size m / (sqrt(v) / sqrt(1 - beta2^t) + eps),
 * with step_size = lr / (1 - beta1^t) and 1 / sqrt(1 - beta2^t) given as inv_bc2. */
GK_EXPORT GK_KERNEL void SFX(gk_adam)(T *p, const T *g, T *m, T *v, ptrdiff_t n,
                                      double omb1_, double beta2_, double omb2_,
                                      double eps_, double l2_, double decay_,
                                      double step_size_, double inv_bc2_) {
    const T omb1 = (T)omb1_, beta2 = (T)beta2_, omb2 = (T)omb2_, eps = (T)eps_;
    const T l2 = (T)l2_, decay = (T)decay_, step_size = (T)step_size_;
    const T inv_bc2 = (T)inv_bc2_;
    const int add_l2 = l2_ != 0.0;
    const ptrdiff_t h = gk_head(p, sizeof(T), n);
    for (ptrdiff_t i0 = 0, i1 = h; i0 < n; i0 = i1, i1 = n) {
        _Pragma("omp simd") for (ptrdiff_t i = i0; i < i1; ++i) {
            T pi = p[i];
            T gi = add_l2 ? g[i] + l2 * pi : g[i];
            T mi = m[i] + omb1 * (gi - m[i]);
            T vi = beta2 * v[i] + omb2 * (gi * gi);
            m[i] = mi;
            v[i] = vi;
            p[i] = pi * decay - step_size * (mi / (SQRT(vi) * inv_bc2 + eps));
        }
    }
}

/* The updates over the pool's threads: spans of elements, several a thread (gk_spans). */
typedef struct {
    T *p, *buf;
    const T *g;
    ptrdiff_t n;
    double lr, momentum, dampening, weight_decay;
    int nesterov, first_step;
} SFX(gk_sgd_job);

static void SFX(gk_sgd_span)(const void *job, int k, int n) {
    const SFX(gk_sgd_job) *j = job;
    ptrdiff_t lo = gk_bound(j->n, k, n), hi = gk_bound(j->n, k + 1, n);
    SFX(gk_sgd)(j->p + lo, j->g + lo, j->buf ? j->buf + lo : NULL, hi - lo, j->lr,
                j->momentum, j->dampening, j->weight_decay, j->nesterov, j->first_step);
}

GK_EXPORT void SFX(gk_sgd_par)(T *p, const T *g, T *buf, ptrdiff_t n, double lr,
                               double momentum, double dampening, double weight_decay,
                               int nesterov, int first_step, int threads) {
    SFX(gk_sgd_job) job = {p, buf, g, n, lr, momentum, dampening, weight_decay, nesterov,
                           first_step};
    gk_parallel(SFX(gk_sgd_span), &job, gk_spans(threads, n), threads);
}

typedef struct {
    T *p, *m, *v;
    const T *g;
    ptrdiff_t n;
    double omb1, beta2, omb2, eps, l2, decay, step_size, inv_bc2;
} SFX(gk_adam_job);

static void SFX(gk_adam_span)(const void *job, int k, int n) {
    const SFX(gk_adam_job) *j = job;
    ptrdiff_t lo = gk_bound(j->n, k, n), hi = gk_bound(j->n, k + 1, n);
    SFX(gk_adam)(j->p + lo, j->g + lo, j->m + lo, j->v + lo, hi - lo, j->omb1, j->beta2,
                 j->omb2, j->eps, j->l2, j->decay, j->step_size, j->inv_bc2);
}

GK_EXPORT void SFX(gk_adam_par)(T *p, const T *g, T *m, T *v, ptrdiff_t n, double omb1,
                                double beta2, double omb2, double eps, double l2,
                                double decay, double step_size, double inv_bc2,
                                int threads) {
    SFX(gk_adam_job) job = {p, m, v, g, n, omb1, beta2, omb2, eps, l2, decay, step_size,
                            inv_bc2};
    gk_parallel(SFX(gk_adam_span), &job, gk_spans(threads, n), threads);
}

/* Whether each of the n elements at x is finite (SciPy's check_finite, gk.linalg's
 * checks): |x| <= T_MAX is false for inf and NaN, OR-ed over blocks of GK_FINITE_BLOCK
 * elements, each one vectorised loop without a branch; the pass stops after the first
 * block holding one. */
GK_EXPORT GK_KERNEL int SFX(gk_all_finite)(const T *x, ptrdiff_t n) {
    for (ptrdiff_t lo = 0; lo < n; lo += GK_FINITE_BLOCK) {
        ptrdiff_t hi = n - lo > GK_FINITE_BLOCK ? lo + GK_FINITE_BLOCK : n;
        int bad = 0;
        _Pragma("omp simd reduction(|:bad)") for (ptrdiff_t i = lo; i < hi; ++i) {
            bad |= !(FABS(x[i]) <= T_MAX);
        }
        if (bad) return 0;
    }
    return 1;
}
