// Row-wise softmax cross-entropy (forward: loss per row and probs; backward: grad
// of the logits). Labels outside [0, c) give NaN, and are never used as an index.
#include "gk_common.cuh"

// Running max m and sum of exp(l - m) s: the online softmax state.
template <typename T>
struct SoftmaxAcc {
  T m, s;
};

template <typename T>
__device__ __forceinline__ SoftmaxAcc<T> combine(SoftmaxAcc<T> a, SoftmaxAcc<T> b) {
  if (b.s == T(0)) return a;  // s == 0: saw no element
  if (a.s == T(0)) return b;
  const T m = a.m > b.m ? a.m : b.m;
  return {m, a.s * gk_exp(a.m - m) + b.s * gk_exp(b.m - m)};
}

template <typename T>
__device__ __forceinline__ SoftmaxAcc<T> shfl_down(SoftmaxAcc<T> a, int off) {
  return {__shfl_down_sync(0xffffffffu, a.m, off), __shfl_down_sync(0xffffffffu, a.s, off)};
}

__device__ __forceinline__ float shfl_down(float a, int off) {
  return __shfl_down_sync(0xffffffffu, a, off);
}
__device__ __forceinline__ double shfl_down(double a, int off) {
  return __shfl_down_sync(0xffffffffu, a, off);
}

template <typename T>
__device__ __forceinline__ T combine(T a, T b) { return a + b; }

// Reduce V over the block with combine(); every thread gets the result. `empty` is
// the identity. blockDim.x: a multiple of 32, at most 1024.
template <typename V>
__device__ V block_reduce(V a, V empty) {
  __shared__ V slots[32];
  for (int off = 16; off > 0; off >>= 1) a = combine(a, shfl_down(a, off));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) slots[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < (int)(blockDim.x >> 5) ? slots[lane] : empty;
    for (int off = 16; off > 0; off >>= 1) a = combine(a, shfl_down(a, off));
    if (lane == 0) slots[0] = a;
  }
  __syncthreads();
  const V out = slots[0];
  __syncthreads();  // the next reduction may overwrite the slots
  return out;
}

// One row's max and sum of exp(l - max) in one pass (online rescaling), over the block;
// every thread gets them.
template <typename T>
__device__ SoftmaxAcc<T> row_max_sum(const T* l, gk_index c) {
  SoftmaxAcc<T> a = {gk_neg_inf<T>(), T(0)};
  for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {
    const T v = l[j];
    if (v > a.m) {
      a.s = a.s * gk_exp(a.m - v) + T(1);
      a.m = v;
    } else if (v > gk_neg_inf<T>()) {  // a -inf logit adds 0; exp(-inf - -inf) is NaN
      a.s += gk_exp(v - a.m);
    }
  }
  return block_reduce(a, SoftmaxAcc<T>{T(0), T(0)});
}

// A label outside [0, c) recorded in the device's status buffer (gpukit._runtime.
// device_status: the flag, the first call's serial, the labels' range, the class count),
// which the host reads later; optimizer kernels skip their update while the flag is set.
__device__ __forceinline__ void gk_flag_label(long long* status, long long serial, long long y,
                                              gk_index c) {
  atomicOr(reinterpret_cast<unsigned long long*>(status), 1ull);
  atomicMin(status + 1, serial);
  atomicMin(status + 2, y);
  atomicMax(status + 3, y);
  atomicMax(status + 4, (long long)c);
}

// One block per row, rows grid-strided. With z = l - max(l) (exact where it matters):
// loss = log sum_j exp(z_j) - (1 - eps) z_y - eps/c sum_j z_j. A -inf (masked) logit
// has probability 0; with eps > 0 the loss is +inf (smoothing puts mass on it), as in
// PyTorch, while the gradient stays finite. status: null, or where bad labels are flagged.
template <typename T, typename L>
__global__ void softmax_xent_forward(const T* __restrict__ logits, const L* __restrict__ labels,
                                     T* __restrict__ loss, T* __restrict__ probs, gk_index n,
                                     gk_index c, T smoothing, long long* __restrict__ status,
                                     long long serial) {
  for (gk_index row = blockIdx.x; row < n; row += gridDim.x) {
    const T* l = logits + row * c;
    T* p = probs + row * c;
    const SoftmaxAcc<T> a = row_max_sum(l, c);
    // The smoothing term sum_j (eps/c) z_j, each term scaled before it is added so that
    // a finite result never overflows on the way (c logits near the dtype's max).
    const T w = smoothing / T(c);
    T zsum = T(0);
    for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {
      const T z = l[j] - a.m;
      p[j] = gk_exp(z) / a.s;
      if (smoothing != T(0)) zsum += w * z;
    }
    if (smoothing != T(0)) zsum = block_reduce(zsum, T(0));
    if (threadIdx.x == 0) {
      const L y = labels[row];
      T out = gk_nan<T>();
      if (y >= 0 && (gk_index)y < c) {
        out = gk_log(a.s) - (T(1) - smoothing) * (l[y] - a.m);
        if (smoothing != T(0)) out -= zsum;  // -inf logits make it +inf, as in PyTorch
      } else if (status != nullptr) {
        gk_flag_label(status, serial, (long long)y, c);
      }
      loss[row] = out;
    }
  }
}

// grad[i, j] = grad_loss[i] * (probs[i, j] - off - (j == y_i ? on : 0)), over n * c elements;
// on = 1 - smoothing, off = smoothing / c.
template <typename T, typename L>
__global__ void softmax_xent_backward(const T* __restrict__ probs, const L* __restrict__ labels,
                                      const T* __restrict__ grad_loss, T* __restrict__ grad,
                                      gk_index total, gk_index c, T on, T off) {
  GK_GRID_STRIDE(i, total) {
    const gk_index row = i / c, j = i - row * c;
    const L y = labels[row];
    T g = gk_nan<T>();
    if (y >= 0 && (gk_index)y < c) g = (probs[i] - off - ((gk_index)y == j ? on : T(0))) * grad_loss[row];
    grad[i] = g;
  }
}

// A training step's loss in one launch: the rows as softmax_xent_forward, but each row
// writes the gradient of the reduced loss, scale * (probs - off - (j == y ? on : 0)),
// in place of its probabilities (NaN for a label outside [0, c), which is flagged), and
// the last block to finish adds the n row losses (in double, in a fixed order) and
// writes their sum over `divisor` (n: the mean; 1: the sum) to the 0-d `loss`;
// scale = 1 / divisor. `ticket` counts the finished
// blocks: 0 at launch, left 0 by the last block, so one counter serves every launch
// ordered after the previous one (a stream's).
template <typename T, typename L>
__global__ void softmax_xent_train(const T* __restrict__ logits, const L* __restrict__ labels,
                                   T* __restrict__ row_loss, T* __restrict__ grad,
                                   T* __restrict__ loss, gk_index n, gk_index c, T smoothing,
                                   T scale, gk_index divisor, long long* __restrict__ status,
                                   long long serial, unsigned int* __restrict__ ticket) {
  const T on = T(1) - smoothing, off = smoothing / T(c);
  for (gk_index row = blockIdx.x; row < n; row += gridDim.x) {
    const T* l = logits + row * c;
    T* g = grad + row * c;
    const SoftmaxAcc<T> a = row_max_sum(l, c);
    const L y = labels[row];
    const bool valid = y >= 0 && (gk_index)y < c;
    const T w = smoothing / T(c);
    T zsum = T(0);
    for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {
      const T z = l[j] - a.m;
      const T p = gk_exp(z) / a.s;
      g[j] = valid ? (p - off - ((gk_index)y == j ? on : T(0))) * scale : gk_nan<T>();
      if (smoothing != T(0)) zsum += w * z;
    }
    if (smoothing != T(0)) zsum = block_reduce(zsum, T(0));
    if (threadIdx.x == 0) {
      T out = gk_nan<T>();
      if (valid) {
        out = gk_log(a.s) - (T(1) - smoothing) * (l[y] - a.m);
        if (smoothing != T(0)) out -= zsum;
      } else if (status != nullptr) {
        gk_flag_label(status, serial, (long long)y, c);
      }
      row_loss[row] = out;
    }
  }
  // The last block: every other block's row losses are visible once its ticket is seen
  // (each block fences its writes before taking one).
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const volatile T* rows = row_loss;
  double sum = 0.0;
  for (gk_index i = threadIdx.x; i < n; i += blockDim.x) sum += (double)rows[i];
  sum = block_reduce(sum, 0.0);
  if (threadIdx.x == 0) {
    *loss = (T)(sum / (double)divisor);
    *ticket = 0u;
  }
}
