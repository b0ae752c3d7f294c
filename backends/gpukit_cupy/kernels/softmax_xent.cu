// Row-wise softmax cross-entropy (forward: loss per row and probs; backward: grad
// of the logits). Labels outside [0, c) give NaN, and are never used as an index.
#include "gk_common.cuh"

// Running max m, sum of exp(l - m) s, and sum of logits: the online softmax state.
template <typename T>
struct SoftmaxAcc {
  T m, s, sum;
};

template <typename T>
__device__ __forceinline__ SoftmaxAcc<T> combine(SoftmaxAcc<T> a, SoftmaxAcc<T> b) {
  if (b.s == T(0)) return {a.m, a.s, a.sum + b.sum};  // s == 0: saw no element
  if (a.s == T(0)) return {b.m, b.s, a.sum + b.sum};
  const T m = a.m > b.m ? a.m : b.m;
  return {m, a.s * gk_exp(a.m - m) + b.s * gk_exp(b.m - m), a.sum + b.sum};
}

// Every thread of the block gets the combined state. blockDim.x: multiple of 32, <= 1024.
template <typename T>
__device__ SoftmaxAcc<T> block_combine(SoftmaxAcc<T> a) {
  __shared__ T sm[32], ss[32], ssum[32];
  for (int off = 16; off > 0; off >>= 1) {
    SoftmaxAcc<T> o = {__shfl_down_sync(0xffffffffu, a.m, off),
                       __shfl_down_sync(0xffffffffu, a.s, off),
                       __shfl_down_sync(0xffffffffu, a.sum, off)};
    a = combine(a, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = a.m;
    ss[warp] = a.s;
    ssum[warp] = a.sum;
  }
  __syncthreads();
  if (warp == 0) {
    const int nwarps = blockDim.x >> 5;
    a = lane < nwarps ? SoftmaxAcc<T>{sm[lane], ss[lane], ssum[lane]}
                      : SoftmaxAcc<T>{T(0), T(0), T(0)};
    for (int off = 16; off > 0; off >>= 1) {
      SoftmaxAcc<T> o = {__shfl_down_sync(0xffffffffu, a.m, off),
                         __shfl_down_sync(0xffffffffu, a.s, off),
                         __shfl_down_sync(0xffffffffu, a.sum, off)};
      a = combine(a, o);
    }
    if (lane == 0) {
      sm[0] = a.m;
      ss[0] = a.s;
      ssum[0] = a.sum;
    }
  }
  __syncthreads();
  const SoftmaxAcc<T> out = {sm[0], ss[0], ssum[0]};
  __syncthreads();  // the next row may overwrite the shared slots
  return out;
}

// One block per row, rows grid-strided. loss = m + log s - (1 - eps) l_y - eps/c sum_j l_j.
template <typename T, typename L>
__global__ void softmax_xent_forward(const T* __restrict__ logits, const L* __restrict__ labels,
                                     T* __restrict__ loss, T* __restrict__ probs, gk_index n,
                                     gk_index c, T smoothing) {
  for (gk_index row = blockIdx.x; row < n; row += gridDim.x) {
    const T* l = logits + row * c;
    T* p = probs + row * c;
    SoftmaxAcc<T> a = {gk_neg_inf<T>(), T(0), T(0)};
    for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {
      const T v = l[j];
      if (v > a.m) {
        a.s = a.s * gk_exp(a.m - v) + T(1);
        a.m = v;
      } else {
        a.s += gk_exp(v - a.m);
      }
      a.sum += v;
    }
    a = block_combine(a);
    for (gk_index j = threadIdx.x; j < c; j += blockDim.x) p[j] = gk_exp(l[j] - a.m) / a.s;
    if (threadIdx.x == 0) {
      const L y = labels[row];
      T out = gk_nan<T>();
      if (y >= 0 && (gk_index)y < c) {
        out = gk_log(a.s) + a.m - (T(1) - smoothing) * l[y] - smoothing / T(c) * a.sum;
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
