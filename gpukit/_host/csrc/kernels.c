/* gpukit's host kernels: bias + activation forward and backward (with the bias
 * gradient's column sums), softmax cross-entropy forward and backward, the SGD and
 * Adam/AdamW updates, and the test that every element is finite, in float32 and
 * float64. Each makes one pass over its rows (the updates and the test: over flat
 * buffers), a large call (but the test's) split into spans of rows (of elements) over
 * the kernels' own threads (pool.h). gpukit/_host/build_native.py compiles this file
 * beside module.c, the CPython extension module whose functions gpukit/_host/native.py
 * calls, as a unit of its own without Python's headers: how the compiler inlines and
 * contracts (FMA) the kernels' arithmetic depends on the unit, and their results must
 * not.
 *
 * The transcendental functions are gpukit's own, written branch-free so that the
 * compiler vectorises each loop (libm's are scalar calls): exp by range reduction and a
 * polynomial, the normal CDF through erfc(a) = t exp(P(u) - a^2), tanh by its
 * series near 0 and 1 - 2 / (exp(2|x|) + 1) beyond. tools/host_kernel_coefficients.py
 * derives the float64 tables and measures every table's truncation error;
 * docs/kernels.rst gives the accuracy. Built by hatch_build.py
 * (gpukit/_host/build_native.py): on x86-64 with GCC each kernel is cloned for
 * x86-64-v4 (AVX-512), v3 (AVX2, FMA) and the baseline, and picked at load time for the
 * CPU at hand.
 */
#define _GNU_SOURCE /* syscall: the pool's futex */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pool.h"

#if defined(GK_CLONES)
#define GK_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GK_KERNEL
#endif

/* the polynomials' loops unrolled, so that the element loops around them vectorise */
#if defined(__GNUC__) && !defined(__clang__)
#define GK_UNROLL _Pragma("GCC unroll 32")
#elif defined(__clang__)
#define GK_UNROLL _Pragma("unroll")
#else
#define GK_UNROLL
#endif

#if defined(_WIN32)
#define GK_EXPORT __declspec(dllexport)
#else
#define GK_EXPORT __attribute__((visibility("default")))
#endif

/* What native.py checks before using the module: the hash of these sources. */
#ifndef GK_SOURCE_HASH
#define GK_SOURCE_HASH "unknown"
#endif
GK_EXPORT const char *gk_source_hash(void) { return GK_SOURCE_HASH; }

/* The spans of a pass over `units` rows or elements on `threads` threads (pool.h); the
 * module's spans(), which native.py asks for the rows of sums a backward pass fills. */
GK_EXPORT int gk_spans_of(int threads, ptrdiff_t units) { return gk_spans(threads, units); }

/* Elements of size bytes before p's next 64-byte boundary, at most n. The loops bound
 * by memory (identity, ReLU, leaky ReLU, the gradients from the output, the updates) run
 * their vector loop over [0, head) and then [head, n): the second span's stores, and the
 * loads of arrays at the same offset (NumPy's large arrays all start 16 bytes into a
 * page), then never straddle two cache lines. One compiled loop serves both spans, so an
 * element's result does not depend on where a span starts. The loops bound by arithmetic
 * run once from 0: their head would run in the scalar remainder loop, which costs them
 * more than the straddling. */
static inline ptrdiff_t gk_head(const void *p, size_t size, ptrdiff_t n) {
    ptrdiff_t h = (ptrdiff_t)(((64 - ((uintptr_t)p & 63)) & 63) / size);
    return h < n ? h : n;
}

/* Elements per block of gk_all_finite: a block with a NaN or inf ends the pass (16 KiB
 * of float64, in L1) */
#define GK_FINITE_BLOCK 2048

/* the activations, numbered as native.ACTIVATIONS lists them */
enum { GK_IDENTITY, GK_RELU, GK_LEAKY_RELU, GK_GELU, GK_GELU_TANH, GK_SILU, GK_SIGMOID, GK_TANH };

static inline float f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bits_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double f64_bits(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
static inline uint64_t bits_f64(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* exp(x) = 2^n p(r), r = x - n ln2 in [-ln2/2, ln2/2]. Rounding to an integer adds and
 * subtracts 1.5 * 2^23 (2^52): its low bits then hold the integer, and (bits << 23) of
 * 1.5 * 2^23 + n + 127 is the float 2^n. Over all x, 2^n is applied as two factors, each
 * a normal number, so that results down to the smallest subnormal round once; x is
 * clamped first where the result has long overflowed or underflowed (NaN passes). For
 * x <= 40 (exp_low: every argument of the derivatives, erfc and the softmax, all <= 0),
 * one factor 2^(n + 64), normal for every n the clamped x gives, and the polynomial's
 * coefficients times 2^-64 and the power of two the caller scales the result by (exact:
 * p stays far above the subnormals): the one product p 2^(n + 64) then rounds the
 * scaled exp(x) once, with no multiplication after it. */
#define SHIFT32 12582912.0f
static inline float exp_poly_f32(float x, float *n_out, float scale) {
    float n = (x * 1.44269504088896341f + SHIFT32) - SHIFT32;
    float r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    /* degree 6, least squares in relative terms on [-ln2/2, ln2/2]: 1.7e-8 */
    float p = 0.0013859291076446763f * scale;
    p = p * r + 0.008374763974940129f * scale;
    p = p * r + 0.04166772432093334f * scale;
    p = p * r + 0.16666420945132074f * scale;
    p = p * r + 0.4999999535099416f * scale;
    p = p * r + 1.0000000360921262f * scale;
    p = p * r + scale;
    *n_out = n;
    return p;
}

static inline float exp_f32(float x) {
    x = x < -104.0f ? -104.0f : x;
    x = x > 89.0f ? 89.0f : x;
    float n, p = exp_poly_f32(x, &n, 1.0f);
    float n1 = (n * 0.5f + SHIFT32) - SHIFT32, n2 = n - n1;
    float s1 = f32_bits(bits_f32(n1 + (SHIFT32 + 127.0f)) << 23);
    float s2 = f32_bits(bits_f32(n2 + (SHIFT32 + 127.0f)) << 23);
    return p * s1 * s2;
}

/* scale exp(x), scale a power of two from 2^-2 to 4 (a constant where inlined); x is
 * clamped where 4 exp(x) is below half the smallest subnormal */
static inline float exp_low_f32(float x, float scale) {
    x = x < -106.0f ? -106.0f : x;
    float n, p = exp_poly_f32(x, &n, scale * 5.42101086242752217e-20f); /* 2^-64 */
    return p * f32_bits(bits_f32(n + (SHIFT32 + 127.0f + 64.0f)) << 23);
}

#define SHIFT64 6755399441055744.0
static inline double exp_poly_f64(double x, double *n_out, double scale) {
    double n = (x * 1.4426950408889634074 + SHIFT64) - SHIFT64;
    double r = x - n * 6.93147180369123816490e-01;
    r = r - n * 1.90821492927058770002e-10;
    /* 1 + r + r^2 q(r), q of degree 9 (Chebyshev fit): 1.6e-17 relative on
     * [-ln2/2, ln2/2] with the coefficients in float64 */
    double p = 2.5100375832561234e-08 * scale;
    p = p * r + 2.7620075879983367e-07 * scale;
    p = p * r + 2.7557268480310024e-06 * scale;
    p = p * r + 2.4801521322368692e-05 * scale;
    p = p * r + 0.00019841269863040545 * scale;
    p = p * r + 0.0013888888917196719 * scale;
    p = p * r + 0.008333333333330065 * scale;
    p = p * r + 0.041666666666624164 * scale;
    p = p * r + 0.16666666666666669 * scale;
    p = p * r + 0.5000000000000001 * scale;
    p = p * r + scale;
    p = p * r + scale;
    *n_out = n;
    return p;
}

static inline double exp_f64(double x) {
    x = x < -746.0 ? -746.0 : x;
    x = x > 710.0 ? 710.0 : x;
    double n, p = exp_poly_f64(x, &n, 1.0);
    double n1 = (n * 0.5 + SHIFT64) - SHIFT64, n2 = n - n1;
    double s1 = f64_bits(bits_f64(n1 + (SHIFT64 + 1023.0)) << 52);
    double s2 = f64_bits(bits_f64(n2 + (SHIFT64 + 1023.0)) << 52);
    return p * s1 * s2;
}

static inline double exp_low_f64(double x, double scale) {
    x = x < -748.0 ? -748.0 : x;
    double n, p = exp_poly_f64(x, &n, scale * 5.42101086242752217e-20); /* 2^-64 */
    return p * f64_bits(bits_f64(n + (SHIFT64 + 1023.0 + 64.0)) << 52);
}

/* Phi(z), the normal CDF: erfc(a) / 2 for z < 0 and 1 - erfc(a) / 2 for z >= 0,
 * a = |z| / sqrt2, never 1 + erf(z / sqrt2), which cancels for z << 0. erfc(a) =
 * t exp(P(u) - a^2) with t = 2 / (2 + a), u = a / (2 + a); a^2 is taken as z^2 / 2,
 * which rounds once. float32: P a degree-9 polynomial in u over all of a >= 0, 1.4e-7
 * from the function with its coefficients in float32 (about one unit of float32). */
static const float ERFC32[10] = {
    5.914890866534385e-08f, -1.2567726899089637f, -0.30267189607474143f,
    0.15292289918472163f, 0.2573620564409974f, -0.21592261613745042f, 0.6174579855003309f,
    -1.0627180103143337f, 0.7157027647022767f, -0.17087277768335332f};

static inline float phi_f32(float z) {
    float a = fabsf(z) * 0.70710678118654752f;
    a = a > 16.0f ? 16.0f : a; /* erfc(16) has long underflowed; u stays finite */
    float th = 1.0f / (2.0f + a); /* t / 2 */
    float u = a * th;
    float p = ERFC32[9];
    GK_UNROLL for (int k = 8; k >= 0; --k) p = p * u + ERFC32[k];
    float h = 0.5f * z * z;
    float q = th * exp_low_f32(p - h, 1.0f); /* erfc(a) / 2 */
    return z >= 0.0f ? 1.0f - q : q;
}

/* float64: P a polynomial of degree 27 in x = 2 u - 1 over all of a >= 0 (u in [0, 1)),
 * 2.7e-17 from the function with its coefficients in float64; its coefficients' magnitudes
 * sum to 1.46, so Horner's rule rounds as a short sum does. */
static const double ERFC64[28] = {
    -0.6717940840566923, -0.6726432239776567, 0.04734330684190443, 0.0468956102311753,
    -0.009872689366389959, -0.008824938557060623, 0.001758933557799016,
    0.002345812500482853, -0.00014624686337800336, -0.000673678795580235,
    -9.37350311709817e-05, 0.0001743029472030762, 7.14010141275703e-05,
    -3.17451797494374e-05, -3.0187884551394243e-05, -1.3772664134464417e-07,
    8.562623420121286e-06, 2.947986876998259e-06, -1.27231190486887e-06,
    -1.2500276612569754e-06, -1.6849800720653297e-07, 2.495832761719667e-07,
    1.5334345920908177e-07, -1.4448658046252676e-09, -3.9171820510271855e-08,
    -1.1172352263623759e-08, 4.06088214696972e-09, 1.8902306008944537e-09};

static inline double phi_f64(double z) {
    double a = fabs(z) * 0.70710678118654752440;
    a = a > 40.0 ? 40.0 : a; /* erfc(40) has long underflowed; u stays below 1 */
    double t = 2.0 / (2.0 + a);
    double x = a * t - 1.0;
    double p = ERFC64[27];
    GK_UNROLL for (int k = 26; k >= 0; --k) p = p * x + ERFC64[k];
    double q = t * exp_low_f64(p - 0.5 * z * z, 0.5); /* erfc(a) / 2 */
    return z >= 0.0 ? 1.0 - q : q;
}

/* tanh: x + x^3 Q(x^2) (its Taylor series, truncated 2e-19 (float64) and 2e-9 (float32)
 * below the value) for |x| < 0.3, else 1 - 2 / (exp(2|x|) + 1) with x's sign. */
static const float TANH_Q32[5] = {-0.3333333333333333f, 0.13333333333333333f,
                                  -0.05396825396825397f, 0.021869488536155203f,
                                  -0.008863235529902197f};
static const double TANH_Q64[12] = {
    -0.3333333333333333, 0.13333333333333333, -0.05396825396825397, 0.021869488536155203,
    -0.008863235529902197, 0.003592128036572481, -0.0014558343870513183,
    0.000590027440945586, -0.00023912911424355248, 9.691537956929451e-05,
    -3.927832388331683e-05, 1.5918905069328964e-05};

static inline float tanh_f32(float x) {
    float s = x * x, q = TANH_Q32[4];
    GK_UNROLL for (int k = 3; k >= 0; --k) q = q * s + TANH_Q32[k];
    float ax = fabsf(x);
    float big = copysignf(1.0f - 2.0f / (exp_f32(2.0f * ax) + 1.0f), x);
    return ax < 0.3f ? x + x * s * q : big;
}

static inline double tanh_f64(double x) {
    double s = x * x, q = TANH_Q64[11];
    GK_UNROLL for (int k = 10; k >= 0; --k) q = q * s + TANH_Q64[k];
    double ax = fabs(x);
    double big = copysign(1.0 - 2.0 / (exp_f64(2.0 * ax) + 1.0), x);
    return ax < 0.3 ? x + x * s * q : big;
}

#define T float
#define SFX(name) name##_f32
#define EXP exp_f32
#define EXP_LOW exp_low_f32
#define PHI phi_f32
#define TANH tanh_f32
#define LOG logf
#define FABS fabsf
#define SQRT sqrtf
#define T_MAX FLT_MAX
#include "kernels_body.h"
#undef T
#undef SFX
#undef EXP
#undef EXP_LOW
#undef PHI
#undef TANH
#undef LOG
#undef FABS
#undef SQRT
#undef T_MAX

#define T double
#define SFX(name) name##_f64
#define EXP exp_f64
#define EXP_LOW exp_low_f64
#define PHI phi_f64
#define TANH tanh_f64
#define LOG log
#define FABS fabs
#define SQRT sqrt
#define T_MAX DBL_MAX
#include "kernels_body.h"
