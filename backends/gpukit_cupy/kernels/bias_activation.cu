// Fused bias + activation: y = act(x + bias) and its backward.
// ACT follows gpukit.kernels._registry.ACTIVATIONS:
// 0 identity, 1 relu, 2 leaky_relu, 3 gelu (erf), 4 gelu_tanh, 5 silu, 6 sigmoid, 7 tanh.
#include "gk_common.cuh"

#define GK_SQRT1_2 0.70710678118654752440
#define GK_INV_SQRT_2PI 0.39894228040143267794
#define GK_K_TANH 0.79788456080286535588  // sqrt(2/pi)
#define GK_C_TANH 0.044715

template <typename T>
__device__ __forceinline__ T gk_sigmoid(T z) { return T(1) / (T(1) + gk_exp(-z)); }

template <typename T, int ACT>
__device__ __forceinline__ T act_forward(T z, T slope) {
  if (ACT == 1) return z < T(0) ? T(0) : z;  // NaN propagates, as in PyTorch
  if (ACT == 2) return z < T(0) ? z * slope : z;
  if (ACT == 3) return T(0.5) * z * (T(1) + gk_erf(z * T(GK_SQRT1_2)));
  if (ACT == 4) {
    const T inner = T(GK_K_TANH) * z * (T(1) + T(GK_C_TANH) * z * z);
    return T(0.5) * z * (T(1) + gk_tanh(inner));
  }
  if (ACT == 5) return z * gk_sigmoid(z);
  if (ACT == 6) return gk_sigmoid(z);
  if (ACT == 7) return gk_tanh(z);
  return z;
}

template <typename T, int ACT>
__device__ __forceinline__ T act_derivative(T z, T slope) {
  if (ACT == 1) return z > T(0) ? T(1) : T(0);
  if (ACT == 2) return z <= T(0) ? slope : T(1);
  if (ACT == 3) {
    const T cdf = T(0.5) * (T(1) + gk_erf(z * T(GK_SQRT1_2)));
    return cdf + z * T(GK_INV_SQRT_2PI) * gk_exp(T(-0.5) * z * z);
  }
  if (ACT == 4) {
    const T z2 = z * z;
    const T t = gk_tanh(T(GK_K_TANH) * z * (T(1) + T(GK_C_TANH) * z2));
    const T dinner = T(0.5 * GK_K_TANH) * z * (T(1) + T(3.0 * GK_C_TANH) * z2);
    return T(0.5) * (T(1) + t) + (T(1) - t * t) * dinner;
  }
  if (ACT == 5) {
    const T s = gk_sigmoid(z);
    return s * (T(1) + z * (T(1) - s));
  }
  if (ACT == 6) {
    const T s = gk_sigmoid(z);
    return s * (T(1) - s);
  }
  if (ACT == 7) {
    const T t = gk_tanh(z);
    return T(1) - t * t;
  }
  return T(1);
}

// y[i] = act(x[i] + bias[i % c]) over n elements (rows of c, C-contiguous).
template <typename T, int ACT>
__global__ void bias_act_forward(const T* __restrict__ x, const T* __restrict__ bias,
                                 T* __restrict__ y, gk_index n, gk_index c, T slope) {
  GK_GRID_STRIDE(i, n) { y[i] = act_forward<T, ACT>(x[i] + bias[i % c], slope); }
}

// grad_x = grad_y * act'(x + bias) over rows x c, and per-block column sums of
// grad_x into partial[blockIdx.y, :]. Block (bx, by): bx columns, by rows (by a power
// of two); rows are grid-strided over gridDim.y, so partial has gridDim.y rows.
template <typename T, int ACT>
__global__ void bias_act_backward(const T* __restrict__ grad_y, const T* __restrict__ x,
                                  const T* __restrict__ bias, T* __restrict__ grad_x,
                                  T* __restrict__ partial, gk_index rows, gk_index c, T slope) {
  extern __shared__ __align__(16) unsigned char gk_smem[];
  T* acc_s = reinterpret_cast<T*>(gk_smem);
  const gk_index col = (gk_index)blockIdx.x * blockDim.x + threadIdx.x;
  T acc = T(0);
  if (col < c) {
    const T b = bias[col];
    for (gk_index r = (gk_index)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
         r += (gk_index)gridDim.y * blockDim.y) {
      const gk_index i = r * c + col;
      const T g = grad_y[i] * act_derivative<T, ACT>(x[i] + b, slope);
      grad_x[i] = g;
      acc += g;
    }
  }
  const unsigned slot = threadIdx.y * blockDim.x + threadIdx.x;
  acc_s[slot] = acc;
  __syncthreads();
  for (unsigned s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) acc_s[slot] += acc_s[slot + s * blockDim.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && col < c) partial[(gk_index)blockIdx.y * c + col] = acc_s[threadIdx.x];
}

// out[j] = sum_r partial[r, j]: the second, small stage of the bias gradient.
template <typename T>
__global__ void sum_rows(const T* __restrict__ partial, T* __restrict__ out, gk_index rows,
                         gk_index c) {
  GK_GRID_STRIDE(j, c) {
    T acc = T(0);
    for (gk_index r = 0; r < rows; ++r) acc += partial[r * c + j];
    out[j] = acc;
  }
}
