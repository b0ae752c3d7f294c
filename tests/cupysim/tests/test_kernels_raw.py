"""RawModule / RawKernel on the simulator: compilation, lookup, attributes, cache."""

from __future__ import annotations

import pytest

pytest.importorskip("cupysim.kernels", reason="the CuPy simulator's own tests run with --cupy=sim")

import os
import pickle
import subprocess
import sys
import threading

import cupy
import numpy as np

SAXPY = r"""
template <typename T>
__global__ void saxpy(T a, const T* __restrict__ x, T* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill(float* y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}
__global__ void cpp_linkage(float* y) { y[0] = 1.0f; }
"""


def test_name_expressions_instantiate_templates_and_run(rng):
    mod = cupy.RawModule(code=SAXPY, name_expressions=["saxpy<float>", "saxpy<double>"])
    for dtype in (np.float32, np.float64):
        x, y = rng.standard_normal(1000).astype(dtype), rng.standard_normal(1000).astype(dtype)
        dx, dy = cupy.asarray(x), cupy.asarray(y)
        k = mod.get_function(f"saxpy<{'float' if dtype == np.float32 else 'double'}>")
        k((3,), (128,), (dtype(2.5), dx, dy, np.int64(1000)))
        np.testing.assert_allclose(cupy.asnumpy(dy), 2.5 * x + y, rtol=1e-6)


def test_get_function_returns_the_lowered_name():
    # cupy/_core/raw.pyx: RawModule.get_function maps a name expression to its
    # mangled name, and the RawKernel carries that name.
    mod = cupy.RawModule(code=SAXPY, name_expressions=["saxpy<float>"])
    assert mod.get_function("saxpy<float>").name == "_Z5saxpyIfEvT_PKS0_PS0_x"
    assert mod.get_function("fill").name == "fill"


def test_extern_c_kernels_are_found_by_name_and_cpp_ones_by_mangled_name():
    mod = cupy.RawModule(code=SAXPY)
    y = cupy.zeros(10, dtype=np.float32)
    mod.get_function("fill")((1,), (16,), (y, np.float32(3.0), np.int32(10)))
    assert (cupy.asnumpy(y) == 3.0).all()
    with pytest.raises(cupy.cuda.driver.CUDADriverError, match="CUDA_ERROR_NOT_FOUND"):
        mod.get_function("cpp_linkage")  # a C++ name is mangled, as NVRTC lowers it
    mod.get_function("_Z11cpp_linkagePf")((1,), (1,), (y,))
    assert cupy.asnumpy(y)[0] == 1.0


def test_raw_kernel_compiles_per_device_and_runs_there():
    k = cupy.RawKernel(SAXPY, "fill")
    with cupy.cuda.Device(1):
        y = cupy.zeros(4, dtype=np.float32)
        k((1,), (4,), (y, np.float32(7.0), np.int32(4)))
    assert y.device.id == 1
    assert (cupy.asnumpy(y) == 7.0).all()


def test_compile_error_is_a_compile_exception_with_the_line():
    bad = 'extern "C" __global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n'
    with pytest.raises(cupy.cuda.compiler.CompileException, match=r"kernel.cu:2"):
        cupy.RawModule(code=bad).compile()


def test_unknown_name_expression_is_a_compile_error():
    with pytest.raises(cupy.cuda.compiler.CompileException):
        cupy.RawModule(code=SAXPY, name_expressions=["nosuch<int>"]).compile()


def test_raw_module_argument_checks_follow_cupy():
    with pytest.raises(TypeError, match="Exactly one of `code` and `path`"):
        cupy.RawModule()
    with pytest.raises(ValueError, match="need CUDA C\\+\\+ code"):
        cupy.RawModule(path="x.cubin", name_expressions=["f"])
    with pytest.raises(ValueError, match="only nvrtc"):
        cupy.RawModule(code=SAXPY, backend="nvcc", name_expressions=["f"])
    with pytest.raises(TypeError, match="expected tuple, got list"):
        cupy.RawModule(code=SAXPY, options=["-DX"])
    with pytest.raises(NotImplementedError, match="cubin"):
        cupy.RawModule(path="kernel.cubin").get_function("f")


def test_options_reach_the_compiler():
    code = 'extern "C" __global__ void k(int* y) { y[0] = VALUE; }'
    y = cupy.zeros(1, dtype=np.int32)
    for value in (3, 5):
        cupy.RawKernel(code, "k", options=(f"-DVALUE={value}",))((1,), (1,), (y,))
        assert int(cupy.asnumpy(y)[0]) == value


def test_attributes_match_the_driver_view():
    code = r"""
    template <int N>
    __device__ float helper(float v) {
      __shared__ float scratch[N];
      scratch[threadIdx.x % N] = v;
      __syncthreads();
      return scratch[0];
    }
    template <int N>
    __global__ void __launch_bounds__(N * 2) k(float* y) {
      __shared__ double own[N];
      own[threadIdx.x % N] = 1.0;
      y[threadIdx.x] = helper<N>(own[0]);
    }
    """
    mod = cupy.RawModule(code=code, name_expressions=["k<64>"])
    k = mod.get_function("k<64>")
    attrs = k.attributes
    assert set(attrs) == {
        "max_threads_per_block",
        "shared_size_bytes",
        "const_size_bytes",
        "local_size_bytes",
        "num_regs",
        "ptx_version",
        "binary_version",
        "cache_mode_ca",
        "max_dynamic_shared_size_bytes",
        "preferred_shared_memory_carveout",
    }
    assert attrs["max_threads_per_block"] == 128  # __launch_bounds__(N * 2)
    assert attrs["shared_size_bytes"] == 64 * 8 + 64 * 4  # its own and its callee's
    assert attrs["max_dynamic_shared_size_bytes"] == 49152 - 768


def test_raw_kernel_pickles_and_recompiles():
    k = pickle.loads(pickle.dumps(cupy.RawKernel(SAXPY, "fill")))
    y = cupy.zeros(2, dtype=np.float32)
    k((1,), (2,), (y, np.float32(1.5), np.int32(2)))
    assert (cupy.asnumpy(y) == 1.5).all()


def test_concurrent_first_compilations_from_threads():
    code = 'extern "C" __global__ void k(int* y, int v) { y[threadIdx.x] = v + TAG; }'
    tag = int.from_bytes(os.urandom(4), "little") % 1_000_000  # a source no cache has seen
    results, errors = {}, []

    def run(i: int) -> None:
        try:
            y = cupy.zeros(32, dtype=np.int32)
            cupy.RawKernel(code, "k", options=(f"-DTAG={tag}",))((1,), (32,), (y, np.int32(i)))
            results[i] = cupy.asnumpy(y)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, y in results.items():
        assert (y == i + tag).all()


def test_second_process_loads_the_cached_library(tmp_path):
    code = 'extern "C" __global__ void k(int* y) { y[0] = 41 + 1; }'
    script = (
        "import numpy as np, cupy\n"
        "y = cupy.zeros(1, dtype=np.int32)\n"
        f"cupy.RawKernel({code!r}, 'k')((1,), (1,), (y,))\n"
        "assert int(cupy.asnumpy(y)[0]) == 42\n"
    )
    env = {**os.environ, "CUPYSIM_CACHE": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", script], env=env, check=True)
    libraries = [p for p in tmp_path.iterdir() if p.suffix == ".so" and "rt" not in p.name]
    assert len(libraries) == 1  # compiled once, loaded twice
    assert not list(tmp_path.glob("*.tmp"))


def test_same_kernel_name_in_two_modules_stays_apart():
    # Each module's kernels, parameter tables and __shared__ arrays are its own, even
    # when another loaded module instantiates the same names with other types.
    code = r"""
    template <typename T> __device__ T twice(T v) { __shared__ T s[4]; s[0] = v; return 2 * s[0]; }
    extern "C" __global__ void k(TYPE a, TYPE* y) { y[threadIdx.x] = twice(a); }
    """
    y32 = cupy.zeros(2, dtype=np.float32)
    y64 = cupy.zeros(3, dtype=np.float64)
    k32 = cupy.RawKernel(code, "k", options=("-DTYPE=float",))
    k64 = cupy.RawKernel(code, "k", options=("-DTYPE=double",))
    for _ in range(2):
        k32((1,), (2,), (np.float32(1.5), y32))
        k64((1,), (3,), (np.float64(2.25), y64))
    assert cupy.asnumpy(y32).tolist() == [3.0, 3.0]
    assert cupy.asnumpy(y64).tolist() == [4.5, 4.5, 4.5]


def test_kernel_configuration_from_the_environment():
    from cupysim.config import Config

    c = Config.from_env({"CUPYSIM_KERNEL_THREADS": "3", "CUPYSIM_CACHE": "/tmp/k"})
    assert (c.kernel_threads, c.cache) == (3, "/tmp/k")
    assert (Config.from_env({}).kernel_threads, Config.from_env({}).cache) == (None, None)
    with pytest.raises(ValueError, match="CUPYSIM_KERNEL_THREADS must be >= 1"):
        Config.from_env({"CUPYSIM_KERNEL_THREADS": "0"})
