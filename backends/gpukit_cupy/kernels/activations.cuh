// The activations and their derivatives, as device functions: the preamble of the
// bias + activation ElementwiseKernels (gpukit_cupy.kernels._elementwise).
// ACT follows gpukit.backend.kernels.ACTIVATIONS:
// 0 identity, 1 relu, 2 leaky_relu, 3 gelu (erf), 4 gelu_tanh, 5 silu, 6 sigmoid, 7 tanh.
#ifndef GK_ACTIVATIONS_CUH
#define GK_ACTIVATIONS_CUH
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
  // Phi(z) = erfc(-z/sqrt2)/2: 1 + erf(z/sqrt2) cancels for z << 0 (gelu(-5) was 4e-11 off
  // in float64, gelu(-10) 0 in float32)
  if (ACT == 3) return T(0.5) * z * gk_erfc(z * T(-GK_SQRT1_2));
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
  if (ACT == 1) return z <= T(0) ? T(0) : T(1);  // NaN passes the gradient, as in PyTorch
  if (ACT == 2) return z > T(0) ? T(1) : slope;  // NaN takes the slope, as in PyTorch
  if (ACT == 3) {
    const T cdf = T(0.5) * gk_erfc(z * T(-GK_SQRT1_2));
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

// The same from the activation's output y, for the activations whose derivative is a
// function of it (gpukit._host.activations.FROM_OUTPUT: identity, relu, sigmoid, tanh)
template <typename T, int ACT>
__device__ __forceinline__ T act_derivative_of_output(T y) {
  if (ACT == 1) return y <= T(0) ? T(0) : T(1);
  if (ACT == 6) return y * (T(1) - y);
  if (ACT == 7) return T(1) - y * y;
  return T(1);
}

#endif  // GK_ACTIVATIONS_CUH
