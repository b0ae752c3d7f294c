// The bias + activation backward pass in one launch: grad_x = grad_y * act'(x + bias)
// (OF_OUTPUT: grad_y * act'(z) from x holding the forward output y = act(z), bias
// unused) and its column sums, the bias gradient. Every block owns strips of 32 columns: its
// warps walk down the rows (a warp reads 32 consecutive elements of a row), each
// thread adds its column's values in double, and the warps' partial sums meet in
// shared memory in a fixed order, so the sum is the same on every run.
#include "activations.cuh"

#define GK_STRIP 32

// x, grad_y, grad_x: (rows, c) C-contiguous; bias, grad_bias: (c,). blockDim.x: a
// multiple of 32, at most 1024.
template <typename T, int ACT, int OF_OUTPUT>
__global__ void bias_act_backward(const T* __restrict__ grad_y, const T* __restrict__ x,
                                  const T* __restrict__ bias, T* __restrict__ grad_x,
                                  T* __restrict__ grad_bias, gk_index rows, gk_index c,
                                  T slope) {
  __shared__ double partial[32][GK_STRIP];
  const int col = threadIdx.x % GK_STRIP, warp = threadIdx.x / GK_STRIP;
  const int warps = blockDim.x / GK_STRIP;
  for (gk_index strip = blockIdx.x; strip * GK_STRIP < c; strip += gridDim.x) {
    const gk_index j = strip * GK_STRIP + col;
    double sum = 0.0;
    if (j < c) {
      const T b = bias[j];
      for (gk_index r = warp; r < rows; r += warps) {
        const gk_index i = r * c + j;
        const T d = OF_OUTPUT ? act_derivative_of_output<T, ACT>(x[i])
                              : act_derivative<T, ACT>(x[i] + b, slope);
        const T g = grad_y[i] * d;
        grad_x[i] = g;
        sum += (double)g;
      }
    }
    partial[warp][col] = sum;
    __syncthreads();
    if (warp == 0 && j < c) {
      for (int w = 1; w < warps; ++w) sum += partial[w][col];
      grad_bias[j] = (T)sum;
    }
    __syncthreads();  // the next strip overwrites the partial sums
  }
}
