"""Libraries: FFT plans, linalg errors, cupyx.lapack, TF32, missing libraries, sparse."""

from __future__ import annotations

import numpy as np
import pytest
from simhelpers import run_sim


def test_fft_plan_cache_is_per_device(cp):
    cache = cp.fft.config.get_plan_cache()
    cache.clear()
    x = cp.ones(64, dtype=complex)
    cp.fft.fft(x)
    cp.fft.fft(x)
    assert cache.get_curr_size() == 1 and cache.get_curr_memsize() > 0
    with cp.cuda.Device(1):
        assert cp.fft.config.get_plan_cache().get_curr_size() == 0
    cache.clear()
    assert cache.get_curr_size() == 0


def test_fft_values_and_single_precision(cp, rng):
    h = rng.standard_normal((4, 8)).astype(np.float32)
    y = cp.fft.rfft(cp.asarray(h))
    assert y.dtype == np.complex64
    np.testing.assert_allclose(y.get(), np.fft.rfft(h), rtol=1e-5, atol=1e-5)


def test_singular_matrix_is_silent_by_default_and_raises_under_errstate(cp):
    import cupyx

    a = cp.zeros((3, 3))
    x = cp.linalg.solve(a, cp.ones(3))
    assert np.isnan(x.get()).all()  # cuSOLVER's devInfo ignored: garbage, no error
    with cupyx.errstate(linalg="raise"):
        with pytest.raises(np.linalg.LinAlgError, match=r"Error reported by dgetrf in cuSOLVER. "
                           r"devInfo = \[1\]"):  # fmt: skip
            cp.linalg.solve(a, cp.ones(3))
        with pytest.raises(np.linalg.LinAlgError, match="dpotrf"):
            cp.linalg.cholesky(-cp.eye(2))


def test_lu_of_a_non_finite_matrix_is_undefined_and_cholesky_spreads_nan(cp):
    """On an H200, cuSOLVER's getrf given a NaN returned finite values with devInfo 0, and
    potrf wrote NaN with devInfo 0 (docs/benchmarks/2026-11-26-h200.md): the LU routines
    refuse what they cannot know; Cholesky gives NaN and raises nothing, even under
    errstate."""
    import cupyx
    import cupyx.lapack
    import cupyx.scipy.linalg
    from cupysim import UndefinedResult

    bad = np.eye(3)
    bad[1, 1] = np.nan
    calls = [
        lambda: cp.linalg.inv(cp.asarray(bad)),
        lambda: cp.linalg.solve(cp.asarray(bad), cp.ones(3)),
        lambda: cp.linalg.inv(cp.asarray(np.stack([bad, bad]))),
        lambda: cupyx.lapack.gesv(cp.asarray(bad, order="F"), cp.ones((3, 1), order="F")),
        lambda: cupyx.scipy.linalg.lu_factor(cp.asarray(bad), check_finite=False),
    ]
    for call in calls:
        with pytest.raises(UndefinedResult, match=r"getrf(Batched)? given a matrix holding NaN"):
            call()
    with cupyx.errstate(linalg="raise"):
        assert np.isnan(cp.linalg.cholesky(cp.asarray(bad)).get()).any()
        upper = np.eye(3)
        upper[0, 2] = np.nan  # not read: the factor of the identity
        np.testing.assert_array_equal(cp.linalg.cholesky(cp.asarray(upper)).get(), np.eye(3))
        with pytest.raises(np.linalg.LinAlgError, match="dpotrf"):
            cp.linalg.cholesky(-cp.eye(2))


def test_nrm2_scales_as_cublas_and_refuses_subnormals(cp):
    """cuBLAS's nrm2 on an H200: 1,024 float32 entries of 1e30 give 3.2e31 (no overflow),
    1e-30 give 3.2e-29; subnormal entries gave values orders of magnitude off."""
    import cupy.cublas
    from cupysim import UndefinedResult

    huge = cupy.cublas.nrm2(cp.full(1024, 1e30, dtype=np.float32))
    assert huge.dtype == np.float32 and huge.shape == ()
    np.testing.assert_allclose(float(huge), 3.2e31, rtol=1e-6)
    np.testing.assert_allclose(float(cupy.cublas.nrm2(cp.full(1024, 1e-30))), 3.2e-29)
    assert np.isinf(float(cupy.cublas.nrm2(cp.asarray([1.0, -np.inf]))))
    assert np.isnan(float(cupy.cublas.nrm2(cp.asarray([np.inf, np.nan]))))
    assert cupy.cublas.nrm2(cp.zeros(0, dtype=np.complex64)).dtype == np.float32
    with pytest.raises(UndefinedResult, match="subnormal"):
        cupy.cublas.nrm2(cp.full(8, 1e-310))
    with pytest.raises(ValueError, match="1D"):
        cupy.cublas.nrm2(cp.ones((2, 2)))


def test_lapack_posv_and_potrs(cp, rng):
    import cupyx.lapack

    q = rng.standard_normal((5, 5))
    a = q @ q.T + 5 * np.eye(5)
    b = rng.standard_normal(5)
    x = cupyx.lapack.posv(cp.asarray(a), cp.asarray(b))
    np.testing.assert_allclose(x.get(), np.linalg.solve(a, b), rtol=1e-10)
    L = cp.asarray(np.linalg.cholesky(a))
    bf = cp.asarray(b)
    y = cupyx.lapack.potrs(L, bf, lower=True)
    np.testing.assert_allclose(y.get(), np.linalg.solve(a, b), rtol=1e-10)
    assert y.data.ptr == bf.data.ptr  # solved in b's memory, as cuSOLVER's potrs does


def test_math_mode_per_thread_handle_allows_tf32_in_every_gemm(cp):
    # cuBLAS "cublasMath_t": CUBLAS_TF32_TENSOR_OP_MATH (3) lets CUBLAS_COMPUTE_32F GEMMs,
    # the batched gemmStridedBatchedEx CuPy calls included, use TF32; handles are per
    # thread (cupy/cuda/device.pyx), so the mode does not reach another thread's calls.
    import threading

    import cupysim
    from cupy.cuda import cublas, device

    a = cp.ones((2, 4, 4), dtype=np.complex64)
    handle = device.get_cublas_handle()
    assert cublas.getMathMode(handle) == cublas.CUBLAS_DEFAULT_MATH
    cupysim.clear_tf32_requests()
    cublas.setMathMode(handle, 3)
    try:
        cp.matmul(a, a)
        cp.matmul(a[0], a[0])
        other = threading.Thread(target=lambda: cp.matmul(a[0], a[0]))
        other.start()
        other.join()
    finally:
        cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)
    cp.matmul(a, a)
    reqs = cupysim.tf32_requests()
    assert [(r.routine, r.tf32) for r in reqs] == [
        ("gemmStridedBatched", True), ("gemm", True), ("gemm", False),
        ("gemmStridedBatched", False),
    ]  # fmt: skip
    with pytest.raises(cublas.CUBLASError, match="CUBLAS_STATUS_INVALID_VALUE"):
        cublas.setMathMode(handle, 9)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lapack_batched_posv_reads_the_upper_triangle(cp, rng, dtype):
    # cupyx/lapack.py _batched_posv: a C-ordered copy given to cuSOLVER (column major) with
    # CUBLAS_FILL_MODE_LOWER, b conjugated in and out; the 2-D posv reads the lower triangle.
    import cupyx.lapack

    q = rng.standard_normal((3, 4, 4)) + (
        1j * rng.standard_normal((3, 4, 4)) if dtype is np.complex128 else 0
    )
    h = (q @ np.conj(np.swapaxes(q, -1, -2)) + 4 * np.eye(4)).astype(dtype)
    b = rng.standard_normal((3, 4, 2)).astype(dtype)
    garbage = -100 * np.ones((4, 4))
    upper_only = np.triu(h) + np.tril(garbage, -1)
    lower_only = np.tril(h) + np.triu(garbage, 1)
    x = cupyx.lapack.posv(cp.asarray(upper_only), cp.asarray(b))
    np.testing.assert_allclose(x.get(), np.linalg.solve(h, b), rtol=1e-10)
    x2 = cupyx.lapack.posv(cp.asarray(lower_only[0]), cp.asarray(b[0]))
    np.testing.assert_allclose(x2.get(), np.linalg.solve(h[0], b[0]), rtol=1e-10)


def test_tf32_requests_are_recorded(cp):
    import cupysim
    from cupy._core import _routines_linalg as blas

    a = cp.ones((4, 4), dtype=np.float32)
    cupysim.clear_tf32_requests()
    prev = blas.get_compute_type(np.float32)
    blas.set_compute_type(np.float32, blas.COMPUTE_TYPE_TF32)
    try:
        cp.matmul(a, a)
        cp.matmul(a[None], a[None])  # batched: gemmStridedBatchedEx never asks for TF32
    finally:
        blas.set_compute_type(np.float32, prev)
    cp.matmul(a, a)
    reqs = cupysim.tf32_requests()
    assert [(r.routine, r.tf32) for r in reqs] == [
        ("gemm", True),
        ("gemmStridedBatched", False),
        ("gemm", False),
    ]


def test_cupy_tf32_environment_variable():
    code = ("import cupy, cupysim\na = cupy.ones((2, 2), 'f')\ncupy.matmul(a, a)\n"
            "print(cupysim.tf32_requests()[0].tf32)")  # fmt: skip
    assert run_sim(code, CUPY_TF32="1").stdout.strip() == "True"


def test_missing_libraries_fail_on_first_use():
    code = """
import cupy
a = cupy.zeros((2, 2))  # a memset: no kernel to compile
print(cupy.asarray([1.0]).device)
for f in (lambda: cupy.matmul(a, a), lambda: cupy.fft.fft(a), lambda: __import__('cupyx.lapack')):
    try:
        f()
    except ImportError as e:
        print("ImportError", str(e).split(":")[0])
try:
    a + 1
except RuntimeError as e:
    print(type(e).__name__, str(e).split(":")[0])
"""
    r = run_sim(code, CUPYSIM_FAIL="libs")
    assert r.stdout.splitlines() == [
        "<CUDA Device 0>",
        'ImportError Failure finding "libcublasLt.so.13 or libcublasLt.so.12"',
        'ImportError Failure finding "libcufft.so.12 or libcufft.so.11"',
        'ImportError Failure finding "libcublasLt.so.13 or libcublasLt.so.12"',
        'DynamicLibNotFoundError Failure finding "libnvrtc.so.13 or libnvrtc.so.12"',
    ], r.stderr


def test_sparse_csr_on_the_device(cp, rng):
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    h = sp.random(6, 6, density=0.5, random_state=1, format="csr") + sp.eye(6)
    m = csp.csr_matrix(h)
    v = rng.standard_normal(6)
    assert csp.issparse(m) and m.data.device.id == 0
    np.testing.assert_allclose((m @ cp.asarray(v)).get(), h @ v)
    np.testing.assert_allclose(m.toarray().get(), h.toarray())


def test_nccl_all_reduce_in_a_group_and_across_threads(cp):
    import threading

    from cupy.cuda import nccl

    comms = nccl.NcclCommunicator.initAll([0, 1])
    xs, ys = [], []
    for d in (0, 1):
        with cp.cuda.Device(d):
            xs.append(cp.full(4, d + 1.0))
            ys.append(cp.empty(4))
    nccl.groupStart()
    for c, x, y in zip(comms, xs, ys, strict=True):
        c.allReduce(x.data.ptr, y.data.ptr, 4, nccl.NCCL_FLOAT64, nccl.NCCL_SUM, 0)
    nccl.groupEnd()
    assert [y.get().tolist() for y in ys] == [[3.0] * 4] * 2

    def rank(r):
        with cp.cuda.Device(r):
            comms[r].broadcast(xs[r].data.ptr, ys[r].data.ptr, 4, nccl.NCCL_FLOAT64, 1, 0)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [y.get().tolist() for y in ys] == [[2.0] * 4] * 2


def test_nccl_send_recv_pairs_in_a_group_and_across_threads(cp, monkeypatch):
    # cupy_backends/cuda/libs/nccl.pyx NcclCommunicator.send/recv (NCCL >= 2.7): the k-th
    # send from rank i to rank j meets the k-th recv of rank j from rank i.
    import threading

    import cupysim.nccl
    from cupy.cuda import nccl

    comms = nccl.NcclCommunicator.initAll([0, 1])
    xs, ys = [], []
    for d in (0, 1):
        with cp.cuda.Device(d):
            xs.append(cp.arange(6.0) + 10 * d)
            ys.append(cp.zeros(6))
    nccl.groupStart()
    for r, c in enumerate(comms):  # an exchange: each rank sends half and receives half
        c.send(xs[r].data.ptr + 24 * r, 3, nccl.NCCL_FLOAT64, 1 - r, 0)
        c.recv(ys[r].data.ptr + 24 * (1 - r), 3, nccl.NCCL_FLOAT64, 1 - r, 0)
    nccl.groupEnd()
    assert ys[0].get().tolist() == [0.0, 0.0, 0.0, 13.0, 14.0, 15.0]
    assert ys[1].get().tolist() == [0.0, 1.0, 2.0, 0.0, 0.0, 0.0]

    def rank(r):  # outside a group, from a thread per rank: matched across threads
        with cp.cuda.Device(r):
            if r == 0:
                comms[0].send(xs[0].data.ptr, 48, nccl.NCCL_UINT8, 1, 0)
            else:
                comms[1].recv(ys[1].data.ptr, 48, nccl.NCCL_UINT8, 0, 0)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ys[1].get().tolist() == xs[0].get().tolist()

    nccl.groupStart()  # sizes that do not match are refused on both ranks
    comms[0].send(xs[0].data.ptr, 6, nccl.NCCL_FLOAT64, 1, 0)
    comms[1].recv(ys[1].data.ptr, 5, nccl.NCCL_FLOAT64, 0, 0)
    with pytest.raises(nccl.NcclError, match="sends 48 bytes to rank 1, which receives 40"):
        nccl.groupEnd()
    with pytest.raises(nccl.NcclError, match="peer 2 is not a rank"):
        comms[0].send(xs[0].data.ptr, 6, nccl.NCCL_FLOAT64, 2, 0)
    monkeypatch.setattr(cupysim.nccl, "TIMEOUT", 0.2)
    with pytest.raises(nccl.NcclError, match="waited"):  # one thread, no group: a deadlock
        comms[0].send(xs[0].data.ptr, 6, nccl.NCCL_FLOAT64, 1, 0)


def test_nccl_absent():
    r = run_sim("import cupy.cuda.nccl as n; print(n.available, hasattr(n, 'NcclCommunicator'))",
                CUPYSIM_NCCL="0")  # fmt: skip
    assert r.stdout.strip() == "False False" and "nccl library could not be loaded" in r.stderr


def test_cublas_module_routines(cp, rng):
    import cupy.cublas

    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    c = cupy.cublas.gemm("T", "N", cp.asarray(a), cp.asarray(b))
    np.testing.assert_allclose(c.get(), a.T @ b)
    y = cp.ones(3)
    cupy.cublas.axpy(2.0, cp.arange(3.0), y)
    np.testing.assert_array_equal(y.get(), [1, 3, 5])


def test_address_sanitizer_mode_gives_every_array_its_own_exact_allocation():
    code = """
import cupy
pool = cupy.get_default_memory_pool()
x = cupy.empty(100, dtype='u1')
s = x.data.mem._storage
print(s.size, s.ptr == x.data.ptr, pool.used_bytes())
"""
    r = run_sim(code, CUPYSIM_SANITIZE="address")
    assert r.stdout.split() == ["100", "True", "512"], r.stderr


def test_address_sanitizer_mode_keeps_the_bytes_of_an_allocation_outside_the_pool():
    """cudaMalloc outside the pool (``using_allocator(None)``, as gpukit's long-lived
    buffers are made) holds its bytes in that mode too: only the pool's blocks are
    reservations, cut into exact arrays."""
    code = """
import cupy
with cupy.cuda.using_allocator(None):
    x = cupy.zeros(3, dtype='u4')
x[1] = 7
s = x.data.mem._storage
print(s.size, x.get().tolist(), cupy.get_default_memory_pool().used_bytes())
"""
    r = run_sim(code, CUPYSIM_SANITIZE="address")
    assert r.stdout.split() == ["12", "[0,", "7,", "0]", "0"], r.stderr
