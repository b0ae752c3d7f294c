// The bias + activation backward pass in one launch: grad_x = grad_y * act'(x + bias)
// (OF_OUTPUT: grad_y * act'(z) from x holding the forward output y = act(z), bias
// unused) and its column sums, the bias gradient. A block owns a strip of 32 columns and
// one of gridDim.y chunks of rows: its warps walk down the chunk's rows (a warp reads 32
// consecutive elements of a row), each thread adds its column's values in double, and the
// warps' partial sums meet in shared memory in a fixed order. With one chunk that sum is
// the bias gradient; with several (too few strips to fill the GPU, each thread's rows one
// dependent load after another) each chunk's sum goes to `part` (gridDim.y x c doubles)
// and the last block to finish adds the chunks in order. Either way the sum is the same
// on every run.
#include "activations.cuh"

#define GK_STRIP 32

// x, grad_y, grad_x: (rows, c) C-contiguous; bias, grad_bias: (c,). blockDim.x: a
// multiple of 32, at most 1024. gridDim.y > 1: `part` holds gridDim.y * c doubles and
// `ticket` counts the finished blocks (0 at launch, left 0 by the last block, as
// softmax_xent_train's); gridDim.y == 1: neither is read.
template <typename T, int ACT, int OF_OUTPUT>
__global__ void bias_act_backward(const T* __restrict__ grad_y, const T* __restrict__ x,
                                  const T* __restrict__ bias, T* __restrict__ grad_x,
                                  T* __restrict__ grad_bias, gk_index rows, gk_index c,
                                  T slope, double* __restrict__ part,
                                  unsigned int* __restrict__ ticket) {
  __shared__ double partial[32][GK_STRIP];
  const int col = threadIdx.x % GK_STRIP, warp = threadIdx.x / GK_STRIP;
  const int warps = blockDim.x / GK_STRIP;
  const gk_index chunk = (rows + gridDim.y - 1) / gridDim.y;
  const gk_index first = (gk_index)blockIdx.y * chunk;
  const gk_index end = first + chunk < rows ? first + chunk : rows;
  for (gk_index strip = blockIdx.x; strip * GK_STRIP < c; strip += gridDim.x) {
    const gk_index j = strip * GK_STRIP + col;
    double sum = 0.0;
    if (j < c) {
      const T b = bias[j];
      for (gk_index r = first + warp; r < end; r += warps) {
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
      if (gridDim.y == 1)
        grad_bias[j] = (T)sum;
      else
        part[(gk_index)blockIdx.y * c + j] = sum;
    }
    __syncthreads();  // the next strip overwrites the partial sums
  }
  if (gridDim.y == 1) return;
  // The last block: every other block's chunk sums are visible once its ticket is seen
  // (each block fences its writes before taking one).
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == (gk_index)gridDim.x * gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const volatile double* sums = part;
  for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {
    double total = 0.0;
    for (unsigned int k = 0; k < gridDim.y; ++k) total += sums[(gk_index)k * c + j];
    grad_bias[j] = (T)total;
  }
  if (threadIdx.x == 0) *ticket = 0u;
}
