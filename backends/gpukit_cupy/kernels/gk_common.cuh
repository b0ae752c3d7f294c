// Shared by gpukit's .cu files. The loader pastes it in place of its #include
// line, so CuPy's compile cache (keyed on the source text) sees every change.
#ifndef GK_COMMON_CUH
#define GK_COMMON_CUH

typedef long long gk_index;

// Grid-stride loop over [0, n): any grid size covers any n, and i never leaves it.
#define GK_GRID_STRIDE(i, n)                                                      \
  for (gk_index i = (gk_index)blockIdx.x * blockDim.x + threadIdx.x; i < (n);   \
       i += (gk_index)blockDim.x * gridDim.x)

// One name per math function for float and double (no headers under NVRTC).
__device__ __forceinline__ float gk_exp(float x) { return expf(x); }
__device__ __forceinline__ double gk_exp(double x) { return exp(x); }
__device__ __forceinline__ float gk_log(float x) { return logf(x); }
__device__ __forceinline__ double gk_log(double x) { return log(x); }
__device__ __forceinline__ float gk_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double gk_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float gk_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double gk_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float gk_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double gk_sqrt(double x) { return sqrt(x); }

template <typename T> __device__ __forceinline__ T gk_nan();
template <> __device__ __forceinline__ float gk_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double gk_nan<double>() {
  return __longlong_as_double(0x7ff8000000000000LL);
}
template <typename T> __device__ __forceinline__ T gk_neg_inf();
template <> __device__ __forceinline__ float gk_neg_inf<float>() {
  return __int_as_float(0xff800000);
}
template <> __device__ __forceinline__ double gk_neg_inf<double>() {
  return __longlong_as_double(0xfff0000000000000LL);
}

#endif  // GK_COMMON_CUH
