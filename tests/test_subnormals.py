"""Single-precision subnormals: the backend's ``flushes_single_subnormals`` tells the truth
(docs/numerics.rst). On a real GPU these tests check the simulator's model as well."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import flushed

TINY32 = np.float32(np.finfo(np.float32).smallest_subnormal)
NORMAL32 = np.finfo(np.float32).tiny


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64])
def test_the_flag_says_what_element_wise_operations_do(backend, xp, dtype):
    sub = np.float32(1000 * TINY32) if dtype != np.float64 else 1e-310
    host = np.array([sub, -sub, 3.0], dtype)
    got = gk.to_numpy(xp.asarray(host) * 2)
    single = dtype != np.float64
    if backend.flushes_single_subnormals and single:
        assert got[:2].tolist() == [0.0, 0.0] and np.signbit(got[1].real)
    else:
        assert got[:2].tolist() == [2 * host[0], 2 * host[1]]
    assert got[2] == 6.0


def test_flushed_is_the_input_as_the_backend_reads_it(backend, xp):
    host = np.array([1000 * TINY32, -TINY32, NORMAL32, 0.5], np.float32)
    want = flushed(host, backend)
    got = gk.to_numpy(xp.asarray(host) * np.float32(1))
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    c = host + 1j * host[::-1]
    got_c = gk.to_numpy(xp.asarray(c.astype(np.complex64)) * np.complex64(1))
    assert np.array_equal(got_c, flushed(c.astype(np.complex64), backend))


def test_gpukit_kernels_follow_the_flag(backend):
    """gpukit's own fused kernels are compiled by CuPy too."""
    x = np.array([[1000 * TINY32, 2.0]], np.float32)
    y = gk.to_numpy(gk.kernels.bias_activation(x, np.zeros(2, np.float32), "relu"))
    assert y[0, 1] == 2.0
    assert y[0, 0] == (0.0 if backend.flushes_single_subnormals else x[0, 0])


@pytest.mark.gpu
def test_cublas_products_keep_single_subnormal_results(cupy_backend):
    """cuBLAS is not compiled by CuPy; the simulator does not flush its products. A real
    GPU's run of this test is the check of that rule."""
    import cupy

    a = cupy.full((4, 4), 1e-20, dtype=np.float32)
    product = cupy.asnumpy(a @ a)
    assert (product > 0).all() and (product < NORMAL32).all()
