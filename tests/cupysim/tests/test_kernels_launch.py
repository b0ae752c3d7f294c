"""Launch configuration checks (as the CUDA driver fails) and argument marshalling
(CuPy's rules, then the compiled parameter list)."""

from __future__ import annotations

import pytest

pytest.importorskip("cupysim.kernels", reason="the CuPy simulator's own tests run with --cupy=sim")

import contextlib

import cupy
import numpy as np
from cupysim import runtime
from cupysim.kernels import KernelArgumentError

CODE = r"""
extern "C" __global__ void touch(float* y) { if (threadIdx.x == 0 && blockIdx.x == 0) y[0] = 1; }
extern "C" __global__ void dyn(float* y, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = (float)i;
  __syncthreads();
  if (threadIdx.x == 0) y[0] = buf[n - 1];
}
template <int N>
__global__ void __launch_bounds__(N) bounded(float* y) { y[threadIdx.x] = 1; }
extern "C" __global__ void args(const float* x, float* y, int n, float s, long long m,
                                bool flag, double d) {
  y[0] = x[0] * s + n + m + flag + d;
}
"""

DriverError = cupy.cuda.driver.CUDADriverError


@pytest.fixture(scope="module")
def mod():
    return cupy.RawModule(code=CODE, name_expressions=["bounded<64>"])


@pytest.mark.parametrize(
    "grid, block",
    [
        ((1,), (1025,)),  # more than MaxThreadsPerBlock
        ((1,), (32, 32, 2)),  # 2048 threads
        ((1,), (1, 1, 65)),  # MaxBlockDimZ is 64
        ((1, 65536), (1,)),  # MaxGridDimY is 65535
        ((1, 1, 65536), (1,)),
        ((2**31,), (1,)),  # MaxGridDimX is 2**31 - 1
    ],
)
def test_out_of_range_launch_is_invalid_value(mod, grid, block):
    y = cupy.zeros(1, dtype=np.float32)
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_VALUE: invalid argument"):
        mod.get_function("touch")(grid, block, (y,))
    assert cupy.asnumpy(y)[0] == 0  # nothing ran


def test_zero_and_negative_dimensions_are_clamped_to_one(mod):
    # cupy/cuda/function.pyx: Function.__call__ passes max(1, d) for each dimension.
    y = cupy.zeros(1, dtype=np.float32)
    mod.get_function("touch")((0,), (-3,), (y,))
    assert cupy.asnumpy(y)[0] == 1


def test_grid_and_block_must_be_tuples(mod):
    y = cupy.zeros(1, dtype=np.float32)
    with pytest.raises(TypeError, match="expected tuple, got list"):
        mod.get_function("touch")([1], (1,), (y,))


def test_dynamic_shared_memory_above_48k_needs_the_opt_in(mod):
    k = mod.get_function("dyn")
    y = cupy.zeros(1, dtype=np.float32)
    n = 16384  # 64 KiB of floats
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_VALUE"):
        k((1,), (128,), (y, np.int32(n)), shared_mem=4 * n)
    k.max_dynamic_shared_size_bytes = 4 * n
    k((1,), (128,), (y, np.int32(n)), shared_mem=4 * n)
    assert cupy.asnumpy(y)[0] == n - 1
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_VALUE"):
        k.max_dynamic_shared_size_bytes = 232448 + 4  # above the H100 opt-in limit


def test_more_threads_than_launch_bounds_is_out_of_resources(mod):
    k = mod.get_function("bounded<64>")
    y = cupy.zeros(128, dtype=np.float32)
    k((1,), (64,), (y,))
    with pytest.raises(DriverError, match="CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        k((1,), (128,), (y,))


def _args(mod, *values):
    mod.get_function("args")((1,), (1,), values)


def test_arguments_by_cupy_rules_reach_the_kernel(mod):
    x = cupy.asarray(np.array([2.0], dtype=np.float32))
    y = cupy.zeros(1, dtype=np.float32)
    # numpy scalars by their type; a Python int is an int64 (long long); a bool is a
    # bool; a size-one numpy array passes its value (cupy/cuda/function.pyx: _pointer).
    _args(mod, x, y, np.int32(3), np.float32(0.5), 10, True, np.array([0.25]))
    assert cupy.asnumpy(y)[0] == pytest.approx(2.0 * 0.5 + 3 + 10 + 1 + 0.25)


@pytest.mark.parametrize(
    "values, match",
    [
        ((None, None, 1, np.float32(1), 1, True, 1.0), "'int', 4 bytes.*8 bytes"),
        ((None, None, np.int32(1), 1.0, 1, True, 1.0), "'float', 4 bytes.*8 bytes"),
        ((None, None, np.int32(1), np.float32(1), 1.5, True, 1.0), "float64 value in a 'long"),
        ((None, None, np.int32(1), np.float32(1), 1, np.int8(1), 1.0), "int8 value in a 'bool'"),
        ((None, np.float32(1), np.int32(1), np.float32(1), 1, True, 1.0), "pointer parameter"),
        ((None, None, np.int32(1), np.float32(1), 1, True), "takes 7 arguments"),
    ],
)
def test_arguments_checked_against_the_parameter_list(mod, values, match):
    # The driver copies each parameter's size from whatever was passed; the simulator
    # refuses before anything runs (None pointers are never dereferenced).
    with pytest.raises(KernelArgumentError, match=match):
        _args(mod, *values)


def test_array_passed_by_value_is_an_argument_error(mod):
    x = cupy.zeros(1, dtype=np.float32)
    with pytest.raises(KernelArgumentError, match="array is passed as a pointer"):
        _args(mod, x, x, x, np.float32(1), 1, True, 1.0)


def test_numpy_arrays_larger_than_one_are_refused_as_in_cupy(mod):
    y = cupy.zeros(1, dtype=np.float32)
    with pytest.raises(TypeError, match=r"Only numpy\.ndarrays of size one"):
        _args(mod, np.zeros(3, np.float32), y, np.int32(1), np.float32(1), 1, True, 1.0)


def test_unsupported_argument_type(mod):
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        _args(mod, [1], None, np.int32(1), np.float32(1), 1, True, 1.0)


def test_launch_reports_reads_and_writes(monkeypatch, mod):
    seen = []
    real = runtime.launch

    @contextlib.contextmanager
    def spy(name, reads, writes, **kw):
        seen.append((name, [id(a) for a in reads], [id(a) for a in writes], kw["kind"]))
        with real(name, reads, writes, **kw) as stream:
            yield stream

    monkeypatch.setattr(runtime, "launch", spy)
    x, y = cupy.zeros(1, dtype=np.float32), cupy.zeros(1, dtype=np.float32)
    _args(mod, x, y, np.int32(1), np.float32(1), 1, True, 1.0)
    assert seen == [("args", [id(x), id(y)], [id(y)], "raw")]  # const float* is only read


@pytest.mark.parametrize(
    "values, what",
    [
        ((None, None, 1, np.float32(1), 1, True, 1.0), "is a int:"),
        ((None, None, np.int32(1), np.float64(1), 1, True, 1.0), "is a numpy.float64:"),
        ((None, None, np.int32(1), np.float32(1), 1, True, np.array([1.0, 2.0])), "shape"),
    ],
)
def test_argument_errors_say_what_was_passed(mod, values, what):
    # the description is made only for the message (a dtype's str is costly Python)
    with pytest.raises((KernelArgumentError, TypeError), match=what):
        _args(mod, *values)
