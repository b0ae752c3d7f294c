"""The host vector space of the Krylov loops (BLAS-1 in place) against NumPy in float64."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit.linalg._blas import HostSpace, host_space

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
