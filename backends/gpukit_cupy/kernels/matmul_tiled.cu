// C = A @ B, float32, row-major: the textbook tiled kernel, as a teaching reference.
// Each block of (BM/TM)*(BN/TN) threads computes a BM x BN tile of C. Per step of BK
// along k it stages A's BM x BK tile (transposed, padded against bank conflicts) and
// B's BK x BN tile in shared memory; each thread accumulates a TM x TN register block
// whose rows and columns are strided by the thread grid, so shared-memory reads are
// conflict-free or broadcasts and stores to C coalesce. Out-of-range elements load 0.
#include "gk_common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 gk_index M, gk_index N, gk_index K) {
  constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  // One flat grid of tiles, columns fastest: gridDim.x takes 2**31 - 1 blocks, where
  // row blocks on gridDim.y would stop at 65,535 (8,388,480 rows).
  const gk_index col_blocks = (N + BN - 1) / BN;
  const gk_index row0 = blockIdx.x / col_blocks * BM, col0 = blockIdx.x % col_blocks * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  float ra[TM], rb[TN];
  for (gk_index k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NT) {
      const int r = e / BK, kk = e % BK;
      const gk_index gr = row0 + r, gk = k0 + kk;
      As[kk][r] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NT) {
      const int kk = e / BN, cc = e % BN;
      const gk_index gk = k0 + kk, gc = col0 + cc;
      Bs[kk][cc] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; ++i) ra[i] = As[kk][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) rb[j] = Bs[kk][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const gk_index r = row0 + ty + i * TY;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const gk_index cc = col0 + tx + j * TX;
      if (r < M && cc < N) C[r * N + cc] = acc[i][j];
    }
  }
}
