// The Krylov loops' fused steps on the GPU (gpukit_cupy/krylov.py launches them).
//
// Each kernel does one step of a loop of gpukit/linalg/_krylov.py: the vector updates,
// the dot products of the updated vectors, and the scalar work that follows from them
// (alpha, beta, the rotations, the tests that end the loop), so that the scalars never
// leave the device. They live in `sc`, an array of doubles (a complex scalar takes two),
// with the loop's status first:
//   sc[0] the stop code (0 while the loop runs; gpukit.backend KRYLOV_STOPS, 1-based),
//   sc[1] the iterations of the iterate the stop keeps, sc[2] the residual estimate,
//   sc[3] the tolerance, sc[4] the dtype's eps; then each method's scalars.
// Once a stop is written every later update is skipped, so the iterate stays the one the
// stop describes until the host reads the status (every few iterations).
//
// A reduction is one launch: each block sums its share in shared memory and writes a
// partial; the last block to finish (a ticket taken with atomicAdd after a
// __threadfence, as in CUDA's threadFenceReduction sample) sums the partials in block
// order and its thread 0 does the step's scalar work. The sums are the same on every run
// with the same grid. Dot products of float32 vectors accumulate in double.
#include "gk_common.cuh"

#define GK_KB 256  // threads per block (the launcher uses this block size)
#define GK_NR_MAX 6  // the most sums one step forms

enum {
  GK_RUNNING = 0,
  GK_CONVERGED = 1,
  GK_NONFINITE = 2,
  GK_CG_INDEFINITE = 3,
  GK_M_INDEFINITE = 4,
  GK_BICGSTAB_RHO = 5,
  GK_BICGSTAB_RV = 6,
  GK_BICGSTAB_OMEGA = 7,
  GK_MINRES_SINGULAR = 8
};

template <typename R> struct gk_cx {  // the layout of numpy's complex64 / complex128
  R re, im;
};
typedef gk_cx<double> gk_z;

// The sums' and scalars' type for vectors of T: double, or complex double.
template <typename T> struct gk_acc { typedef double type; };
template <typename R> struct gk_acc<gk_cx<R>> { typedef gk_z type; };

// --- scalars ----------------------------------------------------------------------
__device__ __forceinline__ void gk_zero(double& a) { a = 0.0; }
__device__ __forceinline__ void gk_zero(gk_z& a) { a.re = a.im = 0.0; }
__device__ __forceinline__ double gk_add(double a, double b) { return a + b; }
__device__ __forceinline__ gk_z gk_add(gk_z a, gk_z b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ double gk_real(double a) { return a; }
__device__ __forceinline__ double gk_real(gk_z a) { return a.re; }
__device__ __forceinline__ double gk_abs(double a) { return fabs(a); }
__device__ __forceinline__ double gk_abs(gk_z a) { return hypot(a.re, a.im); }
__device__ __forceinline__ bool gk_finite(double a) { return isfinite(a); }
__device__ __forceinline__ bool gk_finite(gk_z a) { return isfinite(a.re) && isfinite(a.im); }
__device__ __forceinline__ bool gk_is_zero(double a) { return a == 0.0; }
__device__ __forceinline__ bool gk_is_zero(gk_z a) { return a.re == 0.0 && a.im == 0.0; }
__device__ __forceinline__ double gk_mul(double a, double b) { return a * b; }
__device__ __forceinline__ gk_z gk_mul(gk_z a, gk_z b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ __forceinline__ double gk_div(double a, double b) { return a / b; }
__device__ __forceinline__ gk_z gk_div(gk_z a, double b) { return {a.re / b, a.im / b}; }
// a / b as CPython divides complex numbers (Smith's method), so the host steps and these
// agree on the scalars
__device__ __forceinline__ gk_z gk_div(gk_z a, gk_z b) {
  const double abs_re = fabs(b.re), abs_im = fabs(b.im);
  if (abs_re >= abs_im) {
    const double ratio = b.im / b.re, denom = b.re + b.im * ratio;
    return {(a.re + a.im * ratio) / denom, (a.im - a.re * ratio) / denom};
  }
  const double ratio = b.re / b.im, denom = b.re * ratio + b.im;
  return {(a.re * ratio + a.im) / denom, (a.im * ratio - a.re) / denom};
}
__device__ __forceinline__ double gk_neg(double a) { return -a; }
__device__ __forceinline__ gk_z gk_neg(gk_z a) { return {-a.re, -a.im}; }

__device__ __forceinline__ void gk_load(const double* sc, int j, double& v) { v = sc[j]; }
__device__ __forceinline__ void gk_load(const double* sc, int j, gk_z& v) {
  v.re = sc[j];
  v.im = sc[j + 1];
}
__device__ __forceinline__ void gk_store(double* sc, int j, double v) { sc[j] = v; }
__device__ __forceinline__ void gk_store(double* sc, int j, gk_z v) {
  sc[j] = v.re;
  sc[j + 1] = v.im;
}

// --- elements ---------------------------------------------------------------------
// conj(a) * b and |a|^2, widened to the sums' type
__device__ __forceinline__ double gk_dot(float a, float b) { return (double)a * (double)b; }
__device__ __forceinline__ double gk_dot(double a, double b) { return a * b; }
template <typename R> __device__ __forceinline__ gk_z gk_dot(gk_cx<R> a, gk_cx<R> b) {
  const double ar = a.re, ai = a.im, br = b.re, bi = b.im;
  return {ar * br + ai * bi, ar * bi - ai * br};
}
__device__ __forceinline__ double gk_abs2(float a) { return (double)a * (double)a; }
__device__ __forceinline__ double gk_abs2(double a) { return a * a; }
template <typename R> __device__ __forceinline__ double gk_abs2(gk_cx<R> a) {
  const double re = a.re, im = a.im;
  return re * re + im * im;
}
// a scalar as an element (what CuPy's kernels are given: the scalar cast to the dtype)
__device__ __forceinline__ void gk_set(float& t, double s) { t = (float)s; }
__device__ __forceinline__ void gk_set(double& t, double s) { t = s; }
template <typename R> __device__ __forceinline__ void gk_set(gk_cx<R>& t, double s) {
  t.re = (R)s;
  t.im = 0;
}
template <typename R> __device__ __forceinline__ void gk_set(gk_cx<R>& t, gk_z s) {
  t.re = (R)s.re;
  t.im = (R)s.im;
}
// y + a * x and a * x in the elements' precision
__device__ __forceinline__ float gk_axpy(float y, float a, float x) { return y + a * x; }
__device__ __forceinline__ double gk_axpy(double y, double a, double x) { return y + a * x; }
template <typename R>
__device__ __forceinline__ gk_cx<R> gk_axpy(gk_cx<R> y, gk_cx<R> a, gk_cx<R> x) {
  return {y.re + (a.re * x.re - a.im * x.im), y.im + (a.re * x.im + a.im * x.re)};
}
__device__ __forceinline__ float gk_scale(float a, float x) { return a * x; }
__device__ __forceinline__ double gk_scale(double a, double x) { return a * x; }
template <typename R> __device__ __forceinline__ gk_cx<R> gk_scale(gk_cx<R> a, gk_cx<R> x) {
  return {a.re * x.re - a.im * x.im, a.re * x.im + a.im * x.re};
}
__device__ __forceinline__ float gk_minus(float a, float b) { return a - b; }
__device__ __forceinline__ double gk_minus(double a, double b) { return a - b; }
template <typename R> __device__ __forceinline__ gk_cx<R> gk_minus(gk_cx<R> a, gk_cx<R> b) {
  return {a.re - b.re, a.im - b.im};
}
__device__ __forceinline__ float gk_plus(float a, float b) { return a + b; }
__device__ __forceinline__ double gk_plus(double a, double b) { return a + b; }
template <typename R> __device__ __forceinline__ gk_cx<R> gk_plus(gk_cx<R> a, gk_cx<R> b) {
  return {a.re + b.re, a.im + b.im};
}

// --- status -----------------------------------------------------------------------
__device__ __forceinline__ bool gk_running(const double* sc) { return sc[0] == GK_RUNNING; }
// sc[23]: iterations a CUDA graph's replays have added to the `k` its kernels were captured
// with (krylov.py _Steps.replay_block), so that a replayed block counts its own iterations
#define GK_K0 23
__device__ __forceinline__ long long gk_k0(const double* sc) { return (long long)sc[GK_K0]; }
// iteration k's updates apply: no stop, or a stop that keeps iteration k's iterate
__device__ __forceinline__ bool gk_applies(const double* sc, long long k) {
  return sc[0] == GK_RUNNING || sc[1] >= (double)k;
}
__device__ __forceinline__ void gk_halt(double* sc, int code, long long iterations,
                                        double estimate) {
  sc[0] = code;
  sc[1] = (double)iterations;
  sc[2] = estimate;
}

// --- one-launch reduction ---------------------------------------------------------
__device__ __forceinline__ double gk_volatile(const double* p) {
  return *(const volatile double*)p;
}
__device__ __forceinline__ void gk_volatile(const double* p, double& a) { a = gk_volatile(p); }
__device__ __forceinline__ void gk_volatile(const gk_z* p, gk_z& a) {
  const double* q = (const double*)p;
  a.re = gk_volatile(q);
  a.im = gk_volatile(q + 1);
}

template <int NR, typename A> __device__ void gk_block_sum(A (&sh)[NR][GK_KB]) {
  const unsigned int tid = threadIdx.x;
  __syncthreads();
  for (unsigned int s = GK_KB / 2; s > 0; s >>= 1) {
    if (tid < s) {
      for (int j = 0; j < NR; ++j) sh[j][tid] = gk_add(sh[j][tid], sh[j][tid + s]);
    }
    __syncthreads();
  }
}

// Sums `acc` over the grid. True in one thread (thread 0 of the last block to finish),
// which then holds the sums in `total`; `part` holds gridDim.x * NR partials, `ticket`
// is 0 between launches.
template <int NR, typename A>
__device__ bool gk_grid_sum(const A (&acc)[NR], A* part, unsigned int* ticket, A (&total)[NR]) {
  __shared__ A sh[NR][GK_KB];
  __shared__ bool last;
  const unsigned int tid = threadIdx.x;
  for (int j = 0; j < NR; ++j) sh[j][tid] = acc[j];
  gk_block_sum<NR, A>(sh);
  if (tid == 0) {
    for (int j = 0; j < NR; ++j) part[(gk_index)blockIdx.x * NR + j] = sh[j][0];
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return false;
  __threadfence();
  for (int j = 0; j < NR; ++j) {
    A a;
    gk_zero(a);
    for (gk_index b = tid; b < (gk_index)gridDim.x; b += GK_KB) {
      A p;
      gk_volatile(&part[b * NR + j], p);
      a = gk_add(a, p);
    }
    sh[j][tid] = a;
  }
  gk_block_sum<NR, A>(sh);
  if (tid != 0) return false;
  for (int j = 0; j < NR; ++j) total[j] = sh[j][0];
  *ticket = 0;
  return true;
}

#define GK_SUMS(NR)       \
  A acc[NR], total[NR];   \
  for (int j = 0; j < NR; ++j) gk_zero(acc[j])

// --- conjugate gradients: sc[5] rho, sc[6] alpha, sc[7] beta -------------------------
// alpha = rho / p^H q (q = A p)
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_cg_alpha(gk_index n, const T* p, const T* q, double* sc,
                typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) { acc[0] = gk_add(acc[0], gk_dot(p[i], q[i])); }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  const double pq = gk_real(total[0]);
  if (!(pq > 0.0 && isfinite(pq))) {
    gk_halt(sc, isfinite(pq) ? GK_CG_INDEFINITE : GK_NONFINITE, k - 1, 0.0);
  } else {
    sc[6] = sc[5] / pq;
  }
}

// x += alpha p, r -= alpha q; ||r|| ends the loop or (unpreconditioned) gives beta
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_cg_update(gk_index n, const T* p, const T* q, T* x, T* r, double* sc,
                 typename gk_acc<T>::type* part, unsigned int* ticket, long long k,
                 int preconditioned) {
  k += gk_k0(sc);
  double acc[1] = {0.0}, total[1];
  const bool on = gk_running(sc);
  T alpha, minus_alpha;
  gk_set(alpha, sc[6]);
  gk_set(minus_alpha, -sc[6]);
  GK_GRID_STRIDE(i, n) {
    T ri = r[i];
    if (on) {
      x[i] = gk_axpy(x[i], alpha, p[i]);
      ri = gk_axpy(ri, minus_alpha, q[i]);
      r[i] = ri;
    }
    acc[0] += gk_abs2(ri);
  }
  if (!gk_grid_sum<1, double>(acc, (double*)part, ticket, total) || !gk_running(sc)) return;
  const double rr = total[0], rnorm = sqrt(rr);
  if (rnorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, rnorm);
  } else if (!isfinite(rr)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
  } else if (!preconditioned) {
    sc[7] = rr / sc[5];
    sc[5] = rr;
  }
}

// rho = r^H z (z = M r), judged; beta after the first (k = 0: the loop's start)
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_cg_rho(gk_index n, const T* r, const T* z, double* sc, typename gk_acc<T>::type* part,
              unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) { acc[0] = gk_add(acc[0], gk_dot(r[i], z[i])); }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  const double rho = gk_real(total[0]);
  if (!(rho > 0.0 && isfinite(rho))) {
    gk_halt(sc, isfinite(rho) ? GK_M_INDEFINITE : GK_NONFINITE, k, 0.0);
    return;
  }
  if (k > 0) sc[7] = rho / sc[5];
  sc[5] = rho;
}

// p = z + beta p
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_cg_direction(gk_index n, const T* z, T* p, const double* sc) {
  if (!gk_running(sc)) return;
  T beta;
  gk_set(beta, sc[7]);
  GK_GRID_STRIDE(i, n) { p[i] = gk_axpy(z[i], beta, p[i]); }
}

// --- MINRES: sc[5] beta, [6] oldb, [7] alfa, [8] dbar, [9] epsln, [10] phibar,
// [11] tnorm2, [12] cs, [13] sn, [14] oldeps, [15] delta, [16] gamma, [17] phi ---------
// beta1 = sqrt(r^H y) (y = M r) at the start
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_start(gk_index n, const T* r, const T* y, double* sc,
                    typename gk_acc<T>::type* part, unsigned int* ticket) {
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) { acc[0] = gk_add(acc[0], gk_dot(r[i], y[i])); }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  const double beta2 = gk_real(total[0]);
  if (!(beta2 > 0.0)) {
    gk_halt(sc, isfinite(beta2) ? GK_M_INDEFINITE : GK_NONFINITE, 0, 0.0);
    return;
  }
  sc[5] = sc[10] = sqrt(beta2);
}

// v = y / beta
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_basis(gk_index n, const T* y, T* v, const double* sc) {
  if (!gk_running(sc)) return;
  T s;
  gk_set(s, 1.0 / sc[5]);
  GK_GRID_STRIDE(i, n) { v[i] = gk_scale(s, y[i]); }
}

// nxt = A v - (beta / oldb) r1 (after the first), alfa = v^H nxt
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_alfa(gk_index n, const T* av, const T* r1, const T* v, T* nxt, double* sc,
                   typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  T c;
  gk_set(c, k >= 2 ? -sc[5] / sc[6] : 0.0);
  GK_GRID_STRIDE(i, n) {
    const T u = k >= 2 ? gk_plus(gk_scale(c, r1[i]), av[i]) : av[i];
    nxt[i] = u;
    acc[0] = gk_add(acc[0], gk_dot(v[i], u));
  }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  sc[7] = gk_real(total[0]);
}

// beta = sqrt(beta2) and the next Givens rotation of the tridiagonal, judged
__device__ void gk_minres_rotate(double* sc, double beta2, long long k) {
  const double alfa = sc[7], oldb = sc[5];
  if (!isfinite(alfa) || !isfinite(beta2)) {
    gk_halt(sc, GK_NONFINITE, k - 1, 0.0);
    return;
  }
  if (beta2 < 0.0) {
    gk_halt(sc, GK_M_INDEFINITE, k - 1, 0.0);
    return;
  }
  const double beta = sqrt(beta2);
  const double tnorm2 = sc[11] + (alfa * alfa + beta2 + (k >= 2 ? oldb * oldb : 0.0));
  sc[11] = tnorm2;
  const double cs = sc[12], sn = sc[13], dbar = sc[8];
  sc[14] = sc[9];
  sc[15] = cs * dbar + sn * alfa;
  const double gbar = sn * dbar - cs * alfa;
  sc[9] = sn * beta;
  sc[8] = -cs * beta;
  const double gamma = hypot(gbar, beta);
  if (gamma <= sc[4] * sqrt(tnorm2)) {
    gk_halt(sc, GK_MINRES_SINGULAR, k - 1, 0.0);
    return;
  }
  sc[12] = gbar / gamma;
  sc[13] = beta / gamma;
  sc[16] = gamma;
  sc[17] = sc[12] * sc[10];
  sc[10] = sc[13] * sc[10];
  sc[6] = oldb;
  sc[5] = beta;
  if (sc[10] <= sc[3] || beta == 0.0) gk_halt(sc, GK_CONVERGED, k, sc[10]);
}

// nxt -= (alfa / beta) r2; with `rotate` (no preconditioner: y = nxt) beta2 = nxt^H nxt
// and the rotation
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_next(gk_index n, const T* r2, T* nxt, double* sc,
                   typename gk_acc<T>::type* part, unsigned int* ticket, long long k,
                   int rotate) {
  k += gk_k0(sc);
  double acc[1] = {0.0}, total[1];
  T c;
  gk_set(c, -sc[7] / sc[5]);
  GK_GRID_STRIDE(i, n) {
    const T u = gk_axpy(nxt[i], c, r2[i]);
    nxt[i] = u;
    acc[0] += gk_abs2(u);
  }
  if (!rotate) return;
  if (!gk_grid_sum<1, double>(acc, (double*)part, ticket, total) || !gk_running(sc)) return;
  gk_minres_rotate(sc, total[0], k);
}

// beta2 = r2^H y (y = M r2) and the rotation
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_beta(gk_index n, const T* r2, const T* y, double* sc,
                   typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) { acc[0] = gk_add(acc[0], gk_dot(r2[i], y[i])); }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  gk_minres_rotate(sc, gk_real(total[0]), k);
}

// w = (v - oldeps w1 - delta w2) / gamma, x += phi w; the next v = y / beta
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_minres_update(gk_index n, T* v, const T* w1, const T* w2, T* w, T* x, const T* y,
                     const double* sc, long long k) {
  k += gk_k0(sc);
  if (!gk_applies(sc, k)) return;
  const bool next = gk_running(sc);
  T minus_oldeps, minus_delta, inv_gamma, phi, inv_beta;
  gk_set(minus_oldeps, -sc[14]);
  gk_set(minus_delta, -sc[15]);
  gk_set(inv_gamma, 1.0 / sc[16]);
  gk_set(phi, sc[17]);
  gk_set(inv_beta, 1.0 / sc[5]);
  GK_GRID_STRIDE(i, n) {
    T wi = gk_axpy(gk_scale(minus_oldeps, w1[i]), minus_delta, w2[i]);
    wi = gk_scale(inv_gamma, gk_plus(wi, v[i]));
    w[i] = wi;
    x[i] = gk_axpy(x[i], phi, wi);
    if (next) v[i] = gk_scale(inv_beta, y[i]);
  }
}

// --- BiCGSTAB: sc[6] rho, [8] rho_prev, [10] alpha, [12] omega, [14] beta (complex: two
// doubles each), [16] cos_prev, [17] ||rhat||, [18] ||r||, [19] ||s|| ------------------
// rho = rhat^H r at the start of iteration k, judged (a breakdown keeps iteration k - 1)
template <typename A> __device__ void gk_bicgstab_rho(double* sc, A rho, long long k) {
  if (!gk_finite(rho)) {
    gk_halt(sc, GK_NONFINITE, k - 1, 0.0);
    return;
  }
  const double eps = sc[4], scale = sc[17] * sc[18];
  const double cosine = scale != 0.0 ? gk_abs(rho) / scale : 1.0;
  if (gk_is_zero(rho) || (cosine <= 1024.0 * eps && cosine <= sqrt(eps) * sc[16])) {
    gk_halt(sc, GK_BICGSTAB_RHO, k - 1, 0.0);
    return;
  }
  sc[16] = cosine;
  if (k > 1) {
    A rho_prev, alpha, omega;
    gk_load(sc, 8, rho_prev);
    gk_load(sc, 10, alpha);
    gk_load(sc, 12, omega);
    gk_store(sc, 14, gk_mul(gk_div(rho, rho_prev), gk_div(alpha, omega)));
  }
  gk_store(sc, 6, rho);
}

template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_start(gk_index n, const T* rhat, const T* r, double* sc,
                      typename gk_acc<T>::type* part, unsigned int* ticket) {
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) { acc[0] = gk_add(acc[0], gk_dot(rhat[i], r[i])); }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  gk_bicgstab_rho(sc, total[0], 1);
}

// p = r + beta (p - omega v)
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_direction(gk_index n, const T* r, const T* v, T* p, const double* sc) {
  typedef typename gk_acc<T>::type A;
  if (!gk_running(sc)) return;
  A beta_s, omega_s;
  gk_load(sc, 14, beta_s);
  gk_load(sc, 12, omega_s);
  T beta, minus_omega;
  gk_set(beta, beta_s);
  gk_set(minus_omega, gk_neg(omega_s));
  GK_GRID_STRIDE(i, n) { p[i] = gk_axpy(r[i], beta, gk_axpy(p[i], minus_omega, v[i])); }
}

// v = A phat (av, kept past A's next call), alpha = rho / rhat^H v
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_alpha(gk_index n, const T* rhat, const T* av, T* v, double* sc,
                      typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(1);
  GK_GRID_STRIDE(i, n) {
    const T u = av[i];
    v[i] = u;
    acc[0] = gk_add(acc[0], gk_dot(rhat[i], u));
  }
  if (!gk_grid_sum<1, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  const A rv = total[0];
  if (!gk_finite(rv)) {
    gk_halt(sc, GK_NONFINITE, k - 1, 0.0);
  } else if (gk_is_zero(rv)) {
    gk_halt(sc, GK_BICGSTAB_RV, k - 1, 0.0);
  } else {
    A rho;
    gk_load(sc, 6, rho);
    gk_store(sc, 10, gk_div(rho, rv));
  }
}

// x += alpha phat, r -= alpha v (r is now s), whose norm may end the loop
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_half(gk_index n, const T* phat, const T* v, T* x, T* r, double* sc,
                     typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  double acc[1] = {0.0}, total[1];
  const bool on = gk_running(sc);
  A alpha_s;
  gk_load(sc, 10, alpha_s);
  T alpha, minus_alpha;
  gk_set(alpha, alpha_s);
  gk_set(minus_alpha, gk_neg(alpha_s));
  GK_GRID_STRIDE(i, n) {
    T ri = r[i];
    if (on) {
      x[i] = gk_axpy(x[i], alpha, phat[i]);
      ri = gk_axpy(ri, minus_alpha, v[i]);
      r[i] = ri;
    }
    acc[0] += gk_abs2(ri);
  }
  if (!gk_grid_sum<1, double>(acc, (double*)part, ticket, total) || !gk_running(sc)) return;
  const double snorm = sqrt(total[0]);
  sc[19] = snorm;
  if (snorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, snorm);
  } else if (!isfinite(snorm)) {
    gk_halt(sc, GK_NONFINITE, k, snorm);
  }
}

// omega = ts / tt into slot 12, or the loop halted: non-finite sums, or omega zero or
// at rounding level (|ts| <= eps sqrt(tt) ||s||: a stagnation breakdown)
template <typename A>
__device__ void gk_bicgstab_judge_omega(double* sc, long long k, A ts, double tt,
                                        double snorm) {
  if (!isfinite(tt) || !gk_finite(ts)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
    return;
  }
  A omega;
  if (tt != 0.0) {
    omega = gk_div(ts, tt);
  } else {
    gk_zero(omega);
  }
  if (gk_is_zero(omega) || gk_abs(ts) <= sc[4] * sqrt(tt) * snorm) {
    gk_halt(sc, GK_BICGSTAB_OMEGA, k, 0.0);
    return;
  }
  gk_store(sc, 12, omega);
}

// omega = t^H s / t^H t (t = A shat), judged
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_omega(gk_index n, const T* t, const T* s, double* sc,
                      typename gk_acc<T>::type* part, unsigned int* ticket, long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(2);
  GK_GRID_STRIDE(i, n) {
    const T ti = t[i];
    acc[0] = gk_add(acc[0], A{gk_abs2(ti)});
    acc[1] = gk_add(acc[1], gk_dot(ti, s[i]));
  }
  if (!gk_grid_sum<2, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  gk_bicgstab_judge_omega(sc, k, total[1], gk_real(total[0]), sc[19]);
}

// x += omega shat, r -= omega t; ||r|| may end the loop, else rho of the next iteration
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_update(gk_index n, const T* shat, const T* t, const T* rhat, T* x, T* r,
                       double* sc, typename gk_acc<T>::type* part, unsigned int* ticket,
                       long long k, long long maxiter) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  GK_SUMS(2);
  const bool on = gk_running(sc);
  A omega_s;
  gk_load(sc, 12, omega_s);
  T omega, minus_omega;
  gk_set(omega, omega_s);
  gk_set(minus_omega, gk_neg(omega_s));
  GK_GRID_STRIDE(i, n) {
    T ri = r[i];
    if (on) {
      x[i] = gk_axpy(x[i], omega, shat[i]);
      ri = gk_axpy(ri, minus_omega, t[i]);
      r[i] = ri;
    }
    acc[0] = gk_add(acc[0], A{gk_abs2(ri)});
    acc[1] = gk_add(acc[1], gk_dot(rhat[i], ri));
  }
  if (!gk_grid_sum<2, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  const double rnorm = sqrt(gk_real(total[0]));
  sc[18] = rnorm;
  if (rnorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, rnorm);
    return;
  }
  if (!isfinite(rnorm)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
    return;
  }
  A rho;
  gk_load(sc, 6, rho);
  gk_store(sc, 8, rho);
  if (k < maxiter) gk_bicgstab_rho(sc, total[1], k + 1);  // judged here: a replay knows k
}

// --- pipelined BiCGSTAB (unpreconditioned): Cools & Vanroose, "The communication-hiding
// pipelined BiCGStab method for the parallel solution of large unsymmetric linear systems",
// Parallel Computing 65 (2017), Algorithm 3. Besides r and p the loop carries w = A r,
// s = A p and z = A s by recurrences, so that each kernel's updates use only scalars the
// previous kernel finalised, and the dot products of the next scalars are formed in the
// same pass as the vectors they are of. An iteration is t = A w, gk_bicgstab_pipe_omega,
// v = A z, gk_bicgstab_pipe_update. The slots are BiCGSTAB's above; 19 holds ||q||, q = r -
// alpha s (the classic loop's s). Between the kernels p, s and z hold p - omega s,
// s - omega z and z - omega v, the parts of the next p, s, z that omega completes.
//
// The recurrences drift from the products they stand for, and near a breakdown (large
// alpha and beta) the drift grows geometrically. The update kernel bounds it: slots 24-27
// hold upper bounds of the gaps ||b - A x - r||, ||A r - w||, ||A p - s||, ||A s - z||,
// propagated through the recurrences with |alpha|, |beta|, |omega| and grown by each
// step's rounding, eps (||u|| + ||A|| ||v||) for a vector u standing for A v (van der
// Vorst & Ye, SIAM J. Sci. Comput. 22 (2000), for the residual; Cools et al.'s analyses
// of pipelined CG and BiCGStab for the auxiliary vectors). ||A|| (slot 20) is the largest
// ||A v|| / ||v|| the loop has seen. When the bound of r's or of w's gap first exceeds
// sqrt(eps) times the vector's norm (van der Vorst & Ye's criterion, for each: slots 22
// and 31 hold whether they were within it the iteration before), slot 5 asks the host for
// a replacement: r, w, s and z recomputed from their definitions
// (gk_bicgstab_pipe_replace), at its next checkpoint. Slots 21 ||w||, 28-30 ||p||, ||s||,
// ||z|| as the omega kernel formed them.

// ||A||, the gap bounds and the request for a replacement, from fresh vectors
__device__ __forceinline__ void gk_pipe_fresh(double* sc, double rnorm, double xnorm,
                                              double wnorm) {
  const double eps = sc[4], a = fmax(sc[20], rnorm > 0.0 ? wnorm / rnorm : 0.0);
  sc[20] = a;
  sc[21] = wnorm;
  sc[24] = eps * (rnorm + a * xnorm);
  sc[25] = eps * (wnorm + a * rnorm);
  sc[26] = eps * (sc[29] + a * sc[28]);
  sc[27] = eps * (sc[30] + a * sc[29]);
  sc[22] = sc[24] <= sqrt(eps) * rnorm;
  sc[31] = sc[25] <= sqrt(eps) * wnorm;
  sc[5] = 0.0;
}

// rhat = r, w = A r (ar); rho = rhat^H r judged, alpha = rho / rhat^H w
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_pipe_start(gk_index n, const T* r, const T* ar, const T* x, T* rhat, T* w,
                           double* sc, typename gk_acc<T>::type* part, unsigned int* ticket) {
  typedef typename gk_acc<T>::type A;
  GK_SUMS(4);
  GK_GRID_STRIDE(i, n) {
    const T ri = r[i], wi = ar[i];
    rhat[i] = ri;
    w[i] = wi;
    acc[0] = gk_add(acc[0], gk_dot(ri, ri));
    acc[1] = gk_add(acc[1], gk_dot(ri, wi));
    acc[2] = gk_add(acc[2], A{gk_abs2(wi)});
    acc[3] = gk_add(acc[3], A{gk_abs2(x[i])});
  }
  if (!gk_grid_sum<4, A>(acc, part, ticket, total) || !gk_running(sc)) return;
  gk_pipe_fresh(sc, sqrt(gk_real(total[0])), sqrt(gk_real(total[3])), sqrt(gk_real(total[2])));
  gk_bicgstab_rho(sc, total[0], 1);
  if (!gk_running(sc)) return;
  if (!gk_finite(total[1])) {
    gk_halt(sc, GK_NONFINITE, 0, 0.0);
  } else if (gk_is_zero(total[1])) {
    gk_halt(sc, GK_BICGSTAB_RV, 0, 0.0);
  } else {
    gk_store(sc, 10, gk_div(total[0], total[1]));
  }
}

// t = A w (aw, kept past A's next call); p = r + beta p, s = w + beta s, z = t + beta z;
// then q = r - alpha s into r and y = A q = w - alpha z into w. ||q|| may end the loop
// (x gets alpha p in the next kernel), else omega = y^H q / y^H y, judged
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_pipe_omega(gk_index n, const T* aw, T* r, T* w, T* t, T* p, T* s, T* z,
                           double* sc, typename gk_acc<T>::type* part, unsigned int* ticket,
                           long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  if (!gk_running(sc)) return;
  GK_SUMS(6);
  A alpha_s, beta_s;
  gk_load(sc, 10, alpha_s);
  gk_load(sc, 14, beta_s);
  T minus_alpha, beta;
  gk_set(minus_alpha, gk_neg(alpha_s));
  gk_set(beta, beta_s);
  GK_GRID_STRIDE(i, n) {
    const T ri = r[i], wi = w[i], ti = aw[i];
    const T pi = gk_axpy(ri, beta, p[i]);
    const T si = gk_axpy(wi, beta, s[i]), zi = gk_axpy(ti, beta, z[i]);
    const T qi = gk_axpy(ri, minus_alpha, si), yi = gk_axpy(wi, minus_alpha, zi);
    t[i] = ti;
    p[i] = pi;
    s[i] = si;
    z[i] = zi;
    r[i] = qi;
    w[i] = yi;
    acc[0] = gk_add(acc[0], gk_dot(yi, qi));
    acc[1] = gk_add(acc[1], A{gk_abs2(yi)});
    acc[2] = gk_add(acc[2], A{gk_abs2(qi)});
    acc[3] = gk_add(acc[3], A{gk_abs2(pi)});
    acc[4] = gk_add(acc[4], A{gk_abs2(si)});
    acc[5] = gk_add(acc[5], A{gk_abs2(zi)});
  }
  if (!gk_grid_sum<6, A>(acc, part, ticket, total)) return;
  const double qnorm = sqrt(gk_real(total[2]));
  sc[19] = qnorm;
  sc[28] = sqrt(gk_real(total[3]));
  sc[29] = sqrt(gk_real(total[4]));
  sc[30] = sqrt(gk_real(total[5]));
  if (qnorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, qnorm);
    return;
  }
  if (!isfinite(qnorm)) {
    gk_halt(sc, GK_NONFINITE, k, qnorm);
    return;
  }
  gk_bicgstab_judge_omega(sc, k, total[0], gk_real(total[1]), qnorm);
}

// The gap bounds after iteration k (the scalars are still iteration k's), and the request
// for a replacement when they first exceed sqrt(eps) times ||r|| or ||w||
__device__ void gk_pipe_drift(double* sc, double rnorm, double xnorm, double wnorm) {
  const double eps = sc[4];
  const double a = hypot(sc[10], sc[11]), b = hypot(sc[14], sc[15]), o = hypot(sc[12], sc[13]);
  const double na = fmax(sc[20], rnorm > 0.0 ? wnorm / rnorm : 0.0);
  const double pn = sc[28], sn = sc[29], zn = sc[30], w0 = sc[21];
  const double f = sc[24], g = sc[25], s = sc[26], z = sc[27];
  const double s1 = g + b * s + eps * (sn + na * pn);  // s = w + beta s
  const double z1 = b * z + eps * (na * w0 + zn + na * sn);  // z = t + beta z, t = A w
  sc[24] = f + a * s1 + o * (g + a * z1) + eps * (rnorm + na * xnorm);
  sc[25] = g + a * z1 + eps * (wnorm + na * rnorm + o * na * (w0 + a * zn));
  sc[26] = s1 + o * z1 + eps * (sn + na * pn);
  sc[27] = z1 + eps * (zn + na * sn + o * na * zn);
  sc[20] = na;
  sc[21] = wnorm;
  const bool r_within = sc[24] <= sqrt(eps) * rnorm, w_within = sc[25] <= sqrt(eps) * wnorm;
  if ((sc[22] != 0.0 && !r_within) || (sc[31] != 0.0 && !w_within)) sc[5] = 1.0;
  sc[22] = r_within;
  sc[31] = w_within;
}

// x += alpha p (also when the last kernel stopped at this iteration) + omega q; r = q -
// omega y, w = y - omega (t - alpha v) (v = A z), and p, s, z less omega s, z, v. ||r||
// may end the loop, else the gap bounds, the next rho, judged, beta, and alpha = rho /
// rhat^H (A p) with rhat^H A p = rhat^H w + beta rhat^H s
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_pipe_update(gk_index n, const T* av, const T* rhat, T* x, T* r, T* w,
                            const T* t, T* p, T* s, T* z, double* sc,
                            typename gk_acc<T>::type* part, unsigned int* ticket, long long k,
                            long long maxiter) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  if (!gk_applies(sc, k)) return;
  const bool on = gk_running(sc);
  GK_SUMS(6);
  A alpha_s, omega_s;
  gk_load(sc, 10, alpha_s);
  gk_load(sc, 12, omega_s);
  T alpha, minus_alpha, omega, minus_omega;
  gk_set(alpha, alpha_s);
  gk_set(minus_alpha, gk_neg(alpha_s));
  gk_set(omega, omega_s);
  gk_set(minus_omega, gk_neg(omega_s));
  GK_GRID_STRIDE(i, n) {
    const T pi = p[i], qi = r[i];
    T xi = gk_axpy(x[i], alpha, pi);
    if (on) {
      const T yi = w[i], si = s[i], zi = z[i], vi = av[i], hi = rhat[i];
      xi = gk_axpy(xi, omega, qi);
      const T ri = gk_axpy(qi, minus_omega, yi);
      const T wi = gk_axpy(yi, minus_omega, gk_axpy(t[i], minus_alpha, vi));
      const T s2 = gk_axpy(si, minus_omega, zi);
      r[i] = ri;
      w[i] = wi;
      p[i] = gk_axpy(pi, minus_omega, si);
      s[i] = s2;
      z[i] = gk_axpy(zi, minus_omega, vi);
      acc[0] = gk_add(acc[0], A{gk_abs2(ri)});
      acc[1] = gk_add(acc[1], gk_dot(hi, ri));
      acc[2] = gk_add(acc[2], gk_dot(hi, wi));
      acc[3] = gk_add(acc[3], gk_dot(hi, s2));
      acc[4] = gk_add(acc[4], A{gk_abs2(xi)});
      acc[5] = gk_add(acc[5], A{gk_abs2(wi)});
    }
    x[i] = xi;
  }
  if (!on || !gk_grid_sum<6, A>(acc, part, ticket, total)) return;
  const double rnorm = sqrt(gk_real(total[0]));
  sc[18] = rnorm;
  if (rnorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, rnorm);
    return;
  }
  if (!isfinite(rnorm)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
    return;
  }
  gk_pipe_drift(sc, rnorm, sqrt(gk_real(total[4])), sqrt(gk_real(total[5])));
  if (k >= maxiter) return;  // no next iteration to judge: a replayed block knows k here
  A rho;
  gk_load(sc, 6, rho);
  gk_store(sc, 8, rho);
  const double cos_prev = sc[16], root_eps = sqrt(sc[4]);
  gk_bicgstab_rho(sc, total[1], k + 1);
  if (!gk_running(sc)) return;
  // rho collapsing in one step, if short of a breakdown: alpha and beta grow next, and
  // the recurrences' rounding with them, which the classic loop's products would not
  if (sc[16] <= root_eps && sc[16] <= root_eps * cos_prev) {
    gk_halt(sc, GK_BICGSTAB_RHO, k, 0.0);
    return;
  }
  A beta;
  gk_load(sc, 14, beta);
  const A rap = gk_add(total[2], gk_mul(beta, total[3]));
  if (!gk_finite(rap)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
  } else if (gk_is_zero(rap)) {
    gk_halt(sc, GK_BICGSTAB_RV, k, 0.0);
  } else {
    gk_load(sc, 6, rho);
    gk_store(sc, 10, gk_div(rho, rap));
  }
}

// The replacement after iteration k: r = b - A x, w = A r, s = A p (the host's, in
// place) and z = A s (as); the next rho from the fresh r (beta rescaled to it), alpha from
// the fresh w and s, the bounds from scratch. ||r|| may end the loop: the true residual
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_bicgstab_pipe_replace(gk_index n, const T* as, const T* rhat, const T* x, const T* r,
                             const T* w, const T* s, T* z, double* sc,
                             typename gk_acc<T>::type* part, unsigned int* ticket,
                             long long k) {
  k += gk_k0(sc);
  typedef typename gk_acc<T>::type A;
  if (!gk_running(sc)) return;
  GK_SUMS(6);
  GK_GRID_STRIDE(i, n) {
    const T ri = r[i], wi = w[i], hi = rhat[i];
    z[i] = as[i];
    acc[0] = gk_add(acc[0], A{gk_abs2(ri)});
    acc[1] = gk_add(acc[1], gk_dot(hi, ri));
    acc[2] = gk_add(acc[2], gk_dot(hi, wi));
    acc[3] = gk_add(acc[3], gk_dot(hi, s[i]));
    acc[4] = gk_add(acc[4], A{gk_abs2(x[i])});
    acc[5] = gk_add(acc[5], A{gk_abs2(wi)});
  }
  if (!gk_grid_sum<6, A>(acc, part, ticket, total)) return;
  const double rnorm = sqrt(gk_real(total[0]));
  sc[18] = rnorm;
  if (rnorm <= sc[3]) {
    gk_halt(sc, GK_CONVERGED, k, rnorm);
    return;
  }
  const A rho_new = total[1];
  if (!isfinite(rnorm) || !gk_finite(rho_new)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
    return;
  }
  if (gk_is_zero(rho_new)) {
    gk_halt(sc, GK_BICGSTAB_RHO, k, 0.0);
    return;
  }
  gk_pipe_fresh(sc, rnorm, sqrt(gk_real(total[4])), sqrt(gk_real(total[5])));
  A rho, beta;
  gk_load(sc, 6, rho);
  gk_load(sc, 14, beta);
  beta = gk_mul(beta, gk_div(rho_new, rho));
  gk_store(sc, 14, beta);
  gk_store(sc, 6, rho_new);
  const A rap = gk_add(total[2], gk_mul(beta, total[3]));
  if (!gk_finite(rap)) {
    gk_halt(sc, GK_NONFINITE, k, 0.0);
  } else if (gk_is_zero(rap)) {
    gk_halt(sc, GK_BICGSTAB_RV, k, 0.0);
  } else {
    gk_store(sc, 10, gk_div(rho_new, rap));
  }
}

// --- GMRES -------------------------------------------------------------------------
// Arnoldi with classical Gram-Schmidt applied twice, the second pass delayed by one step
// (low-synchronisation "DCGS2": Bielich, Langou, Thomas, Swirydowicz, Yamazaki, Boman,
// Parallel Computing 2022), so that a step is the product and two launches, and one grid
// reduction forms all of a step's sums. The basis V is (m + 1) rows of n, row k times
// rs[k] the vector. At step j, rows k < j are final (orthonormal); row j, u (its scale
// rs[j]), has had one pass against them. Given P = A M V[j] (z = rs[j] P):
//   gk_gmres_dots: s = Q^H u and t = Q^H z (Q the final rows), ||u||^2 and u^H z; then
//     rho = sqrt(||u||^2 - ||s||^2) (Pythagoras), the norm u - Q s will have, and
//     delta = u^H z - s^H t = (u - Q s)^H z, and the next pass's coefficients;
//   gk_gmres_apply: row j = (u - Q s) / rho (u's second pass, delayed), its norm nu
//     summed directly (rs[j] = 1 / nu: a cancelled Pythagorean rho only scales), and
//     row j + 1 = (z - Q t - row j delta / rho) / rho: z's first pass against rows 0..j.
// Each step writes its record `rec`: delta (re, im), rho, nu, then (s_k, t_k) for k < j
// and (||u||^2, u^H z), as (re, im) pairs; the host forms the Hessenberg column j - 1
// from the records of steps j - 1 and j (krylov.py _Gmres.column), so a cycle's last
// column needs one more pass without a product (next = 0). Step 0 takes u = r / ||r||
// as final (rho = nu = 1): its norm is the residual kernel's.
__device__ __forceinline__ void gk_pair(double* out, gk_index k, double a) {
  out[k * 2] = a;
  out[k * 2 + 1] = 0.0;
}
__device__ __forceinline__ void gk_pair(double* out, gk_index k, gk_z a) {
  out[k * 2] = a.re;
  out[k * 2 + 1] = a.im;
}
__device__ __forceinline__ void gk_unpair(const double* in, gk_index k, double& a) {
  a = in[k * 2];
}
__device__ __forceinline__ void gk_unpair(const double* in, gk_index k, gk_z& a) {
  a.re = in[k * 2];
  a.im = in[k * 2 + 1];
}
// s v, widened to the sums' type
__device__ __forceinline__ double gk_wide(float v, double s) { return s * (double)v; }
__device__ __forceinline__ double gk_wide(double v, double s) { return s * v; }
template <typename R> __device__ __forceinline__ gk_z gk_wide(gk_cx<R> v, double s) {
  return {s * (double)v.re, s * (double)v.im};
}
__device__ __forceinline__ double gk_times(double a, double s) { return a * s; }
__device__ __forceinline__ gk_z gk_times(gk_z a, double s) { return {a.re * s, a.im * s}; }

// out[2k] = (rs[k] V[k])^H u and out[2k + 1] = (rs[k] V[k])^H z for k <= j, as (re, im)
// pairs, summed over the grid two rows (four sums) at a time per block; true in every
// thread of the last block to finish, once `out` is written.
template <typename T>
__device__ bool gk_gmres_sums(gk_index n, const T* V, long long j, const T* P, const double* rs,
                              typename gk_acc<T>::type* part, unsigned int* ticket,
                              double* out) {
  typedef typename gk_acc<T>::type A;
  __shared__ A sh[4][GK_KB];
  __shared__ bool last;
  const unsigned int tid = threadIdx.x;
  const gk_index nout = 2 * (j + 1);
  const double sj = rs[j];
  const T* uj = V + j * n;
  for (long long g = 0; g <= j; g += 2) {
    const bool pair = g + 1 <= j;
    const double s0 = rs[g], s1 = pair ? rs[g + 1] : 0.0;
    const T *v0 = V + g * n, *v1 = pair ? v0 + n : v0;
    A acc[4];
    for (int q = 0; q < 4; ++q) gk_zero(acc[q]);
    GK_GRID_STRIDE(i, n) {
      const A u = gk_wide(uj[i], sj), z = gk_wide(P[i], sj);
      const A a = gk_wide(v0[i], s0);
      acc[0] = gk_add(acc[0], gk_dot(a, u));
      acc[1] = gk_add(acc[1], gk_dot(a, z));
      if (pair) {
        const A b = gk_wide(v1[i], s1);
        acc[2] = gk_add(acc[2], gk_dot(b, u));
        acc[3] = gk_add(acc[3], gk_dot(b, z));
      }
    }
    for (int q = 0; q < 4; ++q) sh[q][tid] = acc[q];
    gk_block_sum<4, A>(sh);
    if (tid == 0) {
      A* mine = part + (gk_index)blockIdx.x * nout + 2 * g;
      for (int q = 0; q < (pair ? 4 : 2); ++q) mine[q] = sh[q][0];
    }
    __syncthreads();
  }
  if (tid == 0) {
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return false;
  __threadfence();
  for (gk_index k = tid; k < nout; k += GK_KB) {
    A a;
    gk_zero(a);
    for (gk_index b = 0; b < (gk_index)gridDim.x; ++b) {
      A p;
      gk_volatile(&part[b * nout + k], p);
      a = gk_add(a, p);
    }
    gk_pair(out, k, a);
  }
  __syncthreads();
  if (tid == 0) *ticket = 0;
  return true;
}

// Step j's sums into rec; rho and delta; the coefficients of gk_gmres_apply into coef:
// (re, im) pairs e = rs[j] / rho, -delta / rho^2, then -s_k rs[k] / rho, -t_k rs[k] / rho
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_gmres_dots(gk_index n, const T* V, long long j, const T* P, const double* rs, double* rec,
                  double* coef, typename gk_acc<T>::type* part, unsigned int* ticket) {
  typedef typename gk_acc<T>::type A;
  double* out = rec + 4;
  if (!gk_gmres_sums(n, V, j, P, rs, part, ticket, out)) return;
  __shared__ double inv;
  if (threadIdx.x == 0) {
    A uu, delta;
    gk_unpair(out, 2 * j, uu);
    gk_unpair(out, 2 * j + 1, delta);
    double rho2 = gk_real(uu);
    for (long long k = 0; k < j; ++k) {
      A s, t;
      gk_unpair(out, 2 * k, s);
      gk_unpair(out, 2 * k + 1, t);
      rho2 -= gk_abs2(s);
      delta = gk_minus(delta, gk_dot(s, t));
    }
    // cancelled (u in the rows' span: the column before broke down) or not finite: a
    // scale all the same, nu then measures what rho missed
    const double alpha = gk_real(uu);
    const double rho = j == 0 ? 1.0 : rho2 > 0.0 ? sqrt(rho2) : alpha > 0.0 ? sqrt(alpha) : 1.0;
    gk_pair(rec, 0, delta);
    rec[2] = rho;
    gk_pair(coef, 0, rs[j] / rho);
    gk_pair(coef, 1, gk_neg(gk_times(delta, 1.0 / (rho * rho))));
    inv = 1.0 / rho;
  }
  __syncthreads();
  for (long long k = threadIdx.x; k < j; k += GK_KB) {
    A s, t;
    gk_unpair(out, 2 * k, s);
    gk_unpair(out, 2 * k + 1, t);
    gk_pair(coef, 2 + 2 * k, gk_neg(gk_times(s, rs[k] * inv)));
    gk_pair(coef, 3 + 2 * k, gk_neg(gk_times(t, rs[k] * inv)));
  }
}

// Row j = (u - Q s) / rho, its norm nu (rs[j] = 1 / nu), and with `next` row j + 1 =
// (z - Q t - row j delta / rho) / rho (rs[j + 1] = 1), from gk_gmres_dots' coefficients
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_gmres_apply(gk_index n, T* V, long long j, const T* P, const double* coef, double* rs,
                   double* rec, double* part, unsigned int* ticket, int next) {
  typedef typename gk_acc<T>::type A;
  T e, g;
  {
    A c;
    gk_unpair(coef, 0, c);
    gk_set(e, c);
    gk_unpair(coef, 1, c);
    gk_set(g, c);
  }
  T* row = V + j * n;
  double acc[1] = {0.0}, total[1];
  GK_GRID_STRIDE(i, n) {
    T q = gk_scale(e, row[i]);
    T w = next ? gk_scale(e, P[i]) : q;  // P may be row j itself (M and A the identity)
    for (long long k = 0; k < j; ++k) {
      const T vk = V[k * n + i];
      A c;
      T ck;
      gk_unpair(coef, 2 + 2 * k, c);
      gk_set(ck, c);
      q = gk_axpy(q, ck, vk);
      if (next) {
        gk_unpair(coef, 3 + 2 * k, c);
        gk_set(ck, c);
        w = gk_axpy(w, ck, vk);
      }
    }
    row[i] = q;
    if (next) row[n + i] = gk_axpy(w, g, q);
    acc[0] += gk_abs2(q);
  }
  if (!gk_grid_sum<1, double>(acc, part, ticket, total)) return;
  const double nu = j == 0 ? 1.0 : sqrt(total[0]);
  rec[3] = nu;
  // a zero row (an exact breakdown the host ends the cycle at) keeps a finite scale
  rs[j] = nu > 0.0 && isfinite(1.0 / nu) ? 1.0 / nu : 1.0;
  if (next) rs[j + 1] = 1.0;
}

// ||v|| as scale * sqrt(ssq), summed without over- or underflow (LAPACK's scaled sum of
// squares): a residual from a huge x0 has squares beyond double
struct gk_ssq {
  double scale, ssq;
};
__device__ __forceinline__ void gk_zero(gk_ssq& a) { a.scale = a.ssq = 0.0; }
__device__ __forceinline__ gk_ssq gk_add(gk_ssq a, gk_ssq b) {
  if (a.scale < b.scale) {
    const gk_ssq t = a;
    a = b;
    b = t;
  }
  if (b.scale == a.scale || b.scale == 0.0) {  // equal (also both inf), or nothing to add
    a.ssq += b.ssq;
  } else {
    const double ratio = b.scale / a.scale;
    a.ssq += b.ssq * ratio * ratio;
  }
  return a;
}
__device__ __forceinline__ void gk_volatile(const gk_ssq* p, gk_ssq& a) {
  const double* q = (const double*)p;
  a.scale = gk_volatile(q);
  a.ssq = gk_volatile(q + 1);
}
__device__ __forceinline__ gk_ssq gk_ssq_of(double v) {  // NaN stays NaN in ssq
  if (v != v) return {0.0, v};
  return v == 0.0 ? gk_ssq{0.0, 0.0} : gk_ssq{fabs(v), 1.0};
}
__device__ __forceinline__ gk_ssq gk_ssq_add(gk_ssq a, float v) {
  return gk_add(a, gk_ssq_of(v));
}
__device__ __forceinline__ gk_ssq gk_ssq_add(gk_ssq a, double v) {
  return gk_add(a, gk_ssq_of(v));
}
template <typename R> __device__ __forceinline__ gk_ssq gk_ssq_add(gk_ssq a, gk_cx<R> v) {
  return gk_add(gk_add(a, gk_ssq_of(v.re)), gk_ssq_of(v.im));
}

// r = b - A x (ax), V[0] = r, beta = ||r|| (hb[0]) and rs[0] = 1 / beta
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_gmres_residual(gk_index n, const T* b, const T* ax, T* r, T* v0, double* hb,
                      double* rs, double* part, unsigned int* ticket) {
  gk_ssq acc[1], total[1];
  gk_zero(acc[0]);
  GK_GRID_STRIDE(i, n) {
    const T ri = gk_minus(b[i], ax[i]);
    r[i] = ri;
    v0[i] = ri;
    acc[0] = gk_ssq_add(acc[0], ri);
  }
  if (!gk_grid_sum<1, gk_ssq>(acc, (gk_ssq*)part, ticket, total)) return;
  hb[0] = total[0].scale * sqrt(total[0].ssq);
  rs[0] = 1.0 / hb[0];
}

// out = V[:k]^T (rs y) (add: x += it)
template <typename T>
__global__ void __launch_bounds__(GK_KB)
    gk_gmres_combine(gk_index n, const T* V, long long k, const double* rs, const T* y, T* out,
                     int add) {
  GK_GRID_STRIDE(i, n) {
    T u;
    gk_set(u, 0.0);
    for (long long q = 0; q < k; ++q) {
      T s;
      gk_set(s, rs[q]);
      u = gk_axpy(u, y[q], gk_scale(s, V[q * n + i]));
    }
    out[i] = add ? gk_plus(out[i], u) : u;
  }
}
