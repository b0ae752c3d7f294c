"""CUDA semantics executed on the host: built-in variables, shared memory, barriers,
warp shuffles and votes, atomics, device-side failures, and what a GPU leaves
undefined (reported as KernelFault)."""

from __future__ import annotations

import pytest

pytest.importorskip("cupysim.kernels", reason="the CuPy simulator's own tests run with --cupy=sim")

import cupy
import numpy as np
from cupysim.kernels import KernelFault

DriverError = cupy.cuda.driver.CUDADriverError


def run(code: str, name: str, grid, block, args, **kw):
    cupy.RawModule(code=code).get_function(name)(grid, block, args, **kw)


def test_builtin_variables_in_3d():
    code = r"""
    extern "C" __global__ void ids(int* out) {
      int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
      int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
      int* o = out + 8 * (block * blockDim.x * blockDim.y * blockDim.z + t);
      o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
      o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
      o[6] = blockDim.x * blockDim.y * blockDim.z; o[7] = gridDim.x * gridDim.y * gridDim.z;
    }"""
    grid, block = (2, 3, 2), (4, 2, 3)
    nb, nt = 12, 24
    out = cupy.zeros(8 * nb * nt, dtype=np.int32)
    run(code, "ids", grid, block, (out,))
    got = cupy.asnumpy(out).reshape(2, 3, 2, 3, 2, 4, 8)  # bz by bx tz ty tx, fields
    bz, by, bx, tz, ty, tx = np.indices((2, 3, 2, 3, 2, 4))
    for k, want in enumerate((tx, ty, tz, bx, by, bz)):
        np.testing.assert_array_equal(got[..., k], want)
    assert (got[..., 6] == nt).all() and (got[..., 7] == nb).all()


def test_static_and_dynamic_shared_memory_with_barriers(rng):
    code = r"""
    extern "C" __global__ void rev(const float* x, float* y) {
      __shared__ float tile[256];
      extern __shared__ float extra[];
      int t = threadIdx.x, base = blockIdx.x * 256;
      tile[t] = x[base + t];
      extra[t] = 2.0f * x[base + t];
      __syncthreads();
      y[base + t] = tile[255 - t] + extra[255 - t];
    }"""
    x = rng.standard_normal(4 * 256).astype(np.float32)
    y = cupy.zeros_like(cupy.asarray(x))
    run(code, "rev", (4,), (256,), (cupy.asarray(x), y), shared_mem=256 * 4)
    np.testing.assert_allclose(cupy.asnumpy(y), 3 * x.reshape(4, 256)[:, ::-1].ravel(), rtol=1e-6)


def test_block_tree_reduction(rng):
    code = r"""
    extern "C" __global__ void bsum(const double* x, double* out, int n) {
      __shared__ double s[512];
      double acc = 0;
      for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
      s[threadIdx.x] = acc;
      __syncthreads();
      for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
      }
      if (threadIdx.x == 0) out[0] = s[0];
    }"""
    x = rng.standard_normal(100003)
    out = cupy.zeros(1)
    run(code, "bsum", (1,), (512,), (cupy.asarray(x), out, np.int32(x.size)))
    # a tree order, not NumPy's: judged against the sum of |x| (the sum itself may cancel)
    assert abs(cupy.asnumpy(out)[0] - x.sum()) <= 1e-12 * np.abs(x).sum()


def test_syncthreads_count_and_or():
    code = r"""
    extern "C" __global__ void votes(int* out) {
      int c = __syncthreads_count(threadIdx.x % 3 == 0);
      int a = __syncthreads_and(threadIdx.x < 1000);
      int o = __syncthreads_or(threadIdx.x == 77);
      int z = __syncthreads_or(0);
      if (threadIdx.x == 5) { out[0] = c; out[1] = a; out[2] = o; out[3] = z; }
    }"""
    out = cupy.zeros(4, dtype=np.int32)
    run(code, "votes", (1,), (200,), (out,))
    assert cupy.asnumpy(out).tolist() == [67, 1, 1, 0]


SHFL = r"""
extern "C" __global__ void shfl(const int* x, int* out) {
  int v = x[threadIdx.x], lane = threadIdx.x % 32;
  int* o = out + 6 * threadIdx.x;
  o[0] = __shfl_down_sync(0xffffffffu, v, 3);
  o[1] = __shfl_up_sync(0xffffffffu, v, 2, 8);
  o[2] = __shfl_xor_sync(0xffffffffu, v, 5, 16);
  o[3] = __shfl_sync(0xffffffffu, v, 35, 16);
  o[4] = __ballot_sync(0xffffffffu, v % 2);
  o[5] = __any_sync(0xffffffffu, lane == 31) + 2 * __all_sync(0xffffffffu, v >= 0) +
         4 * __reduce_add_sync(0xffffffffu, (unsigned)v);
}"""


def _shfl_reference(x: np.ndarray) -> np.ndarray:
    """The CUDA C++ Programming Guide's shuffle semantics, per warp."""
    out = np.zeros((x.size, 6), dtype=np.int64)
    for base in range(0, x.size, 32):
        w = x[base : base + 32]
        for lane in range(32):
            seg, width = lane & ~7, 8
            down = lane + 3 if lane + 3 < 32 else lane
            up = lane - 2 if lane - seg >= 2 else lane
            s16 = lane & ~15
            xor = lane ^ 5 if (lane ^ 5) < s16 + 16 else lane
            idx = s16 + (35 & 15)
            ballot = sum(1 << k for k in range(32) if w[k] % 2)
            out[base + lane] = [
                w[down],
                w[up],
                w[xor],
                w[idx],
                ballot,
                1 + 2 * (w >= 0).all() + 4 * int(w.sum()),
            ]
            del width
    return out


def test_warp_shuffles_and_votes(rng):
    x = rng.integers(0, 1000, 128).astype(np.int32)
    out = cupy.zeros(6 * 128, dtype=np.int32)
    run(SHFL, "shfl", (1,), (128,), (cupy.asarray(x), out))
    want = _shfl_reference(x).astype(np.int32)  # ballot wraps to int32 as on a GPU
    np.testing.assert_array_equal(cupy.asnumpy(out).reshape(128, 6), want)


def test_warp_reduction_by_shuffles(rng):
    code = r"""
    extern "C" __global__ void wsum(const double* x, double* out) {
      double v = x[blockIdx.x * blockDim.x + threadIdx.x];
      for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
      if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
    }"""
    x = rng.standard_normal(3 * 256)
    out = cupy.zeros(3 * 8)
    run(code, "wsum", (3,), (256,), (cupy.asarray(x), out))
    # a shuffle tree, not NumPy's order: judged against the sums of |x| per warp
    terms = np.abs(x).reshape(24, 32).sum(1)
    assert np.all(np.abs(cupy.asnumpy(out) - x.reshape(24, 32).sum(1)) <= 1e-12 * terms)


def test_partial_mask_shuffle():
    code = r"""
    extern "C" __global__ void half(int* out) {
      int v = threadIdx.x;
      if (threadIdx.x < 16) v = __shfl_xor_sync(0x0000ffffu, v, 1);
      out[threadIdx.x] = v;
    }"""
    out = cupy.zeros(32, dtype=np.int32)
    run(code, "half", (1,), (32,), (out,))
    want = np.arange(32)
    want[:16] ^= 1
    np.testing.assert_array_equal(cupy.asnumpy(out), want)


@pytest.mark.parametrize(
    "body, block, match",
    [
        # a barrier some threads never reach (they exit first)
        ("if (threadIdx.x < 100) return; __syncthreads();", 128, "100 threads have exited"),
        # two different barriers
        (
            "if (threadIdx.x < 64) {\n __syncthreads();\n} else {\n __syncthreads();\n}",
            128,
            "reached different barriers",
        ),
        # a full-mask shuffle in a block of 16 threads: lanes 16-31 do not exist
        ("int v = __shfl_down_sync(0xffffffffu, 1, 1); (void)v;", 16, "warp 0 has only lanes"),
        # the calling lane is not in the mask
        ("int v = __shfl_sync(0x1u, 1, 0); (void)v;", 32, "not in its mask"),
        # lanes of one warp disagree on the operation
        (
            "int v = threadIdx.x < 8 ? __shfl_down_sync(0xffffffffu, 1, 1)"
            " : __shfl_xor_sync(0xffffffffu, 1, 1); (void)v;",
            32,
            "disagree",
        ),
        # a lane reads another that is not in the mask
        (
            "if (threadIdx.x < 16) { int v = __shfl_down_sync(0xffffu, 1, 8); (void)v; }",
            32,
            "not in the mask",
        ),
        # lanes exit before a full-warp shuffle the others execute
        (
            "if (threadIdx.x % 32 == 3) return; int v = __shfl_down_sync(0xffffffffu, 1, 1);"
            " (void)v;",
            64,
            "lane 2 waits|exited after",
        ),
    ],
)
def test_undefined_synchronization_is_a_kernel_fault(body, block, match):
    code = 'extern "C" __global__ void bad(int* out) { ' + body + " }"
    out = cupy.zeros(1, dtype=np.int32)
    with pytest.raises(KernelFault, match=match):
        run(code, "bad", (2,), (block,), (out,))
    # the scheduler recovers: the next launch runs
    run(
        'extern "C" __global__ void ok(int* out) { __syncthreads(); out[0] = 7; }',
        "ok",
        (2,),
        (block,),
        (out,),
    )
    assert cupy.asnumpy(out)[0] == 7


def test_atomics_across_parallel_blocks():
    code = r"""
    extern "C" __global__ void count(int* n, unsigned long long* u, float* f, double* d,
                                     int* mx, int* cas) {
      atomicAdd(n, 1);
      atomicAdd(u, 2ull);
      atomicAdd(f, 0.5f);
      atomicAdd(d, 0.25);
      atomicMax(mx, (int)(blockIdx.x * blockDim.x + threadIdx.x));
      int old;
      do { old = *cas; } while (atomicCAS(cas, old, old + 3) != old);
    }"""
    bufs = [
        cupy.zeros(1, dtype=t)
        for t in (np.int32, np.uint64, np.float32, np.float64, np.int32, np.int32)
    ]
    run(code, "count", (64,), (128,), tuple(bufs))
    got = [cupy.asnumpy(b)[0] for b in bufs]
    assert got == [8192, 16384, 4096.0, 2048.0, 8191, 3 * 8192]


def test_grid_stride_loop_over_a_million_elements(rng):
    # gpukit's elementwise launch shape on the H100 profile: 132 * 32 blocks of 256.
    code = r"""
    extern "C" __global__ void axpb(const float* x, float* y, long long n) {
      for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
           i += (long long)blockDim.x * gridDim.x)
        y[i] = 3.0f * x[i] + 1.0f;
    }"""
    n = 1_000_003
    x = rng.standard_normal(n).astype(np.float32)
    y = cupy.full(n, np.nan, dtype=np.float32)
    run(code, "axpb", (132 * 32,), (256,), (cupy.asarray(x), y, np.int64(n)))
    np.testing.assert_allclose(cupy.asnumpy(y), 3 * x + 1, rtol=1e-6)


def test_device_assert_and_trap_fail_like_the_driver():
    code = r"""
    extern "C" __global__ void check(const int* x) { assert(x[threadIdx.x] >= 0); }
    extern "C" __global__ void stop(int* x) { if (threadIdx.x == 3) __trap(); }
    """
    x = cupy.asarray(np.array([0, 1, -1, 2], dtype=np.int32))
    mod = cupy.RawModule(code=code)
    with pytest.raises(DriverError, match="CUDA_ERROR_ASSERT: device-side assert triggered"):
        mod.get_function("check")((1,), (4,), (x,))
    with pytest.raises(DriverError, match="CUDA_ERROR_ILLEGAL_INSTRUCTION"):
        mod.get_function("stop")((1,), (4,), (x,))


def test_math_functions_and_intrinsics():
    code = r"""
    extern "C" __global__ void m(const double* x, double* y) {
      double v = x[0];
      y[0] = erfinv(erf(v)); y[1] = rsqrt(v * v); y[2] = normcdf(v);
      y[3] = __int_as_float(0x3f800000); y[4] = __popc(0xf0f0u); y[5] = __brev(1u);
      y[6] = min(3, 5) + max(2.5f, 1.5f); y[7] = sinpi(0.5);
    }"""
    y = cupy.zeros(8)
    run(code, "m", (1,), (1,), (cupy.asarray(np.array([0.3])), y))
    from math import erfc, sqrt

    want = [0.3, 1 / 0.3, 0.5 * erfc(-0.3 / sqrt(2)), 1.0, 8, 2**31, 5.5, 1.0]
    np.testing.assert_allclose(cupy.asnumpy(y), want, rtol=1e-12)
