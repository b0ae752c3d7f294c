"""The Krylov loops' vector spaces, fused updates against float64: BLAS-1 in place on the
host, one ElementwiseKernel per update on CuPy (``gpu``: a GPU or ``--cupy=sim``)."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit_numpy.krylov import HostSpace, host_space

from helpers import rel_err

DTYPES = ["float32", "float64", "complex64", "complex128"]


def _vec(rng, n, dtype):
    v = rng.standard_normal(n)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_updates_are_in_place_and_match_numpy(rng, dtype):
    space = host_space(np.dtype(dtype))
    x, y = _vec(rng, 257, dtype), _vec(rng, 257, dtype)
    alpha = 0.75 - 0.5j if np.dtype(dtype).kind == "c" else 0.75
    want = y.astype(np.complex128) + alpha * x.astype(np.complex128)
    before = y
    space.axpy(alpha, x, y)
    assert y is before
    tol = 1e-6 if dtype in ("float32", "complex64") else 1e-14
    assert rel_err(y, want) < tol
    want = x.astype(np.complex128) + 0.5 * y.astype(np.complex128)
    space.xpay(x, 0.5, y)
    assert rel_err(y, want) < tol
    got = space.scalar_dot(x, y)
    assert isinstance(got, (float, complex))
    ref = np.vdot(x.astype(np.complex128), y.astype(np.complex128))  # conjugates x
    assert abs(got - ref) / abs(ref) < tol


def test_mixed_dtypes_and_other_functions_follow_numpy(rng):
    space = HostSpace(np.dtype(np.float64))
    a, b = _vec(rng, 9, "float64"), _vec(rng, 9, "complex128")
    assert abs(space.scalar_dot(a, b) - np.vdot(a, b)) < 1e-12 * np.abs(b).sum()
    assert space.empty_like is np.empty_like


def test_dtypes_blas_lacks_use_numpy():
    assert host_space(np.dtype(np.float16)) is np


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres", "gmres"])
def test_empty_system_solves_on_the_host(method):
    x, info = getattr(gk.linalg, method)(np.zeros((0, 0)), np.zeros(0))
    assert x.shape == (0,) and info.converged


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_space_updates_in_place_in_one_kernel_and_matches_float64(cupy_backend, rng, dtype):
    import cupy

    space = cupy_backend.krylov_space(np.dtype(dtype))
    assert callable(space.axpy) and space.vdot is cupy.vdot  # the rest is CuPy's
    x, y = _vec(rng, 1031, dtype), _vec(rng, 1031, dtype)
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    alpha = 0.75 - 0.5j if np.dtype(dtype).kind == "c" else 0.75
    before = dy.data.ptr
    space.axpy(alpha, dx, dy)
    assert dy.data.ptr == before and dy.dtype == np.dtype(dtype)
    want = y.astype(np.complex128) + alpha * x.astype(np.complex128)
    tol = 1e-6 if dtype in ("float32", "complex64") else 1e-14
    assert rel_err(cupy.asnumpy(dy), want) < tol
    space.xpay(dx, -1.25, dy)
    want = x.astype(np.complex128) - 1.25 * want
    assert rel_err(cupy.asnumpy(dy), want) < tol


@pytest.mark.gpu
def test_cupy_space_takes_ufuncs_for_a_vector_of_another_dtype(cupy_backend, rng):
    import cupy

    space = cupy_backend.krylov_space(np.dtype(np.float64))
    x, y = _vec(rng, 33, "float32"), _vec(rng, 33, "float64")
    dy = cupy.asarray(y)
    space.axpy(2.0, cupy.asarray(x), dy)
    assert rel_err(cupy.asnumpy(dy), y + 2.0 * x.astype(np.float64)) < 1e-14
    with pytest.raises(TypeError):  # complex into real: NumPy's casting rule, not a kernel's
        space.axpy(1.0, cupy.asarray(_vec(rng, 33, "complex128")), dy)


@pytest.mark.gpu
def test_cg_on_cupy_runs_the_fused_updates(cupy_backend, rng, monkeypatch):
    """The solver's updates go through the space: a spy on the kernel counts them."""
    import gpukit_cupy.krylov as krylov

    calls = []
    real = krylov.DeviceSpace.axpy

    def spy(self, alpha, x, y):
        calls.append(y.dtype)
        real(self, alpha, x, y)

    monkeypatch.setattr(krylov.DeviceSpace, "axpy", spy)
    a = rng.standard_normal((40, 40))
    a = a @ a.T + 40 * np.eye(40)
    b = rng.standard_normal(40)
    x, info = gk.linalg.cg(gk.asarray(a), gk.asarray(b), rtol=1e-10)
    assert info.converged and calls and set(calls) == {np.dtype(np.float64)}
    assert rel_err(gk.to_numpy(x), np.linalg.solve(a, b)) < 1e-8
