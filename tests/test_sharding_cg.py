"""Krylov solves on row-sharded operators, N = 1..4 virtual CPU devices.

References: ``numpy.linalg.solve`` in float64 and the unsharded ``gk.linalg.cg``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpukit as gk
from gpukit._select import registry as _registry
from gpukit.sharding._array import split
from gpukit.testing import random_spd

from helpers import rel_err

NumpyBackend = type(_registry.load("numpy"))
RTOL = {np.float32: 1e-6, np.float64: 1e-11}
ERR = {np.float32: 1e-4, np.float64: 1e-9}


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def blocks_for(a, sizes, sparse):
    bounds = np.cumsum([0, *sizes])
    rows = [a[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    return [sp.csr_matrix(r) for r in rows] if sparse else rows


FORMS = ["sharded_dense", "blocks_csr", "csr_sharded_b", "dense_sharded_b"]


def sharded_problem(form, a, b):
    """``(A, b)`` in one of the documented sharded forms."""
    if form == "sharded_dense":
        return gk.shard(a), b
    sb = gk.shard(b)
    if form == "blocks_csr":
        return blocks_for(a, sb.sizes, sparse=True), b
    if form == "csr_sharded_b":
        return sp.csr_matrix(a), sb
    return a, sb


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 50])  # 3 rows: fewer than 4 devices; 50: uneven splits
def test_cg_sharded_matches_dense_solution_and_unsharded_cg(cpu_devices, rng, form, dtype, n):
    a = random_spd(n, dtype, rng=rng)
    b = rng.standard_normal(n).astype(dtype)
    A, rhs = sharded_problem(form, a, b)
    x, info = gk.linalg.cg(A, rhs, rtol=RTOL[dtype])
    assert isinstance(x, gk.ShardedArray) and x.devices == tuple(range(cpu_devices.device_count()))
    assert x.dtype == dtype and x.shape == (n,)
    assert info.converged and info.method == "cg"
    assert type(info) is gk.linalg.IterativeInfo and info == 0  # SciPy's code, as unsharded
    assert rel_err(x, np.linalg.solve(a.astype(np.float64), b.astype(np.float64))) < ERR[dtype]
    x1, info1 = gk.linalg.cg(a, b, rtol=RTOL[dtype])
    assert abs(info.iterations - info1.iterations) <= 1
    assert rel_err(x, gk.to_numpy(x1)) < ERR[dtype]
    a64, x64 = a.astype(np.float64), gk.to_numpy(x).astype(np.float64)
    true = np.linalg.norm(b - a64 @ x64)  # the reported residual is the true one, to rounding
    slack = 10 * np.finfo(dtype).eps * np.linalg.norm(a64) * np.linalg.norm(x64)
    assert abs(info.residual_norm - true) <= 1e-3 * true + slack


def test_cg_sharded_complex_hermitian(cpu_devices, rng):
    a = random_spd(23, np.complex128, rng=rng)
    b = rng.standard_normal(23) + 1j * rng.standard_normal(23)
    x, info = gk.linalg.cg(gk.shard(a), b, rtol=1e-12)
    assert info.converged and x.dtype == np.complex128
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-10


def test_cg_sharded_preconditioner_and_x0(cpu_devices, rng):
    n = 41
    scale = np.sqrt(np.linspace(1, 50, n))
    a = random_spd(n, rng=rng) * np.outer(scale, scale)  # badly scaled, still SPD: Jacobi helps
    b = rng.standard_normal(n)
    x0 = rng.standard_normal(n)
    x0_before = x0.copy()
    jacobi = sp.diags(1 / np.diag(a)).tocsr()
    x, info = gk.linalg.cg(gk.shard(a), b, x0=x0, M=jacobi, rtol=1e-12)
    ref, ref_info = gk.linalg.cg(a, b, x0=x0, M=jacobi, rtol=1e-12)
    assert info.converged and abs(info.iterations - ref_info.iterations) <= 1
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-10 and rel_err(x, ref) < 1e-10
    assert np.array_equal(x0, x0_before)  # not modified


@pytest.mark.parametrize("method", ["bicgstab", "minres"])
def test_other_solvers_take_sharded_operators(cpu_devices, rng, method):
    n = 30
    a = random_spd(n, rng=rng)
    if method == "bicgstab":
        a = a + 0.1 * np.triu(rng.standard_normal((n, n)), 1)  # non-symmetric
    b = rng.standard_normal(n)
    x, info = getattr(gk.linalg, method)(gk.shard(a), gk.shard(b), rtol=1e-12)
    assert info.converged and isinstance(x, gk.ShardedArray)
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-9


def test_sharded_cg_is_deterministic(rng):
    a, b = random_spd(64, rng=rng), rng.standard_normal(64)
    with gk.use_backend(NumpyBackend(3)):
        runs = [gk.to_numpy(gk.linalg.cg(gk.shard(a), b, rtol=1e-10)[0]) for _ in range(3)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


def test_sharded_callable_operator(rng):
    a, b = random_spd(20, rng=rng), rng.standard_normal(20)
    with gk.use_backend(NumpyBackend(2)):
        sa = gk.shard(a)
        x, info = gk.linalg.cg(lambda v: gk.sharding.matmul(sa, v.gather()), gk.shard(b))
    assert info.converged and rel_err(x, np.linalg.solve(a, b)) < 1e-4


def test_sharded_solve_errors(rng):
    a, b = random_spd(10, rng=rng), rng.standard_normal(10)
    with gk.use_backend(NumpyBackend(3)):
        sa = gk.shard(a)
        with pytest.raises(TypeError, match="gmres does not take sharded"):
            gk.linalg.gmres(sa, b)
        with pytest.raises(TypeError, match="LinearOperator 'A' cannot take sharded"):
            gk.linalg.cg(spla.aslinearoperator(a), gk.shard(b))
        uneven = split(gk.get_backend(), b, 0, (0, 1, 2), (2, 4, 4))
        with pytest.raises(ValueError, match=r"'b' has shard lengths \(2, 4, 4\).*\(4, 3, 3\)"):
            gk.linalg.cg(sa, uneven)
        with pytest.raises(
            gk.DeviceMismatchError, match=r"'b' is sharded over numpy:\(1, 2\).*numpy:\(0, 1\)"
        ):
            gk.linalg.cg(gk.shard(a, devices=[0, 1]), gk.shard(b, devices=[1, 2]))
        with pytest.raises(ValueError, match=r"must have shape \(10,\).*got \(9,\)"):
            gk.linalg.cg(sa, b[:9])
        with pytest.raises(ValueError, match="split along its rows"):
            gk.linalg.cg(gk.shard(a, axis=1), b)
        with pytest.raises(ValueError, match=r"row blocks have shapes \[\(4, 10\), \(6, 10\)"):
            gk.linalg.cg([a[:4], a[4:]], gk.shard(b, devices=[0, 1]))
        with pytest.raises(ValueError, match="'A' has 2 row blocks but the vectors are sharded"):
            gk.linalg.cg([a[:5], a[5:]], gk.shard(b))
        with pytest.raises(ValueError, match="4 row blocks but backend 'numpy' has 3 devices"):
            gk.linalg.cg([a[:3], a[3:6], a[6:8], a[8:]], b)


def test_sharded_norms_do_not_underflow_into_a_false_convergence(cpu_devices):
    """The sharded space's largest magnitude rescales a norm whose squares underflow: a
    float32 b of 1.2e-38 against A = 0 is an honest failure with b's true norm."""
    b = np.full(8, 1.1754944e-38, dtype=np.float32)
    with pytest.warns(gk.ConvergenceWarning):
        x, info = gk.linalg.cg(gk.shard(np.zeros((8, 8), np.float32)), gk.shard(b))
    assert not gk.to_numpy(x).any()
    assert not info.converged and info != 0
    assert info.residual_norm == pytest.approx(float(np.linalg.norm(b.astype(np.float64))))


@pytest.mark.parametrize("magnitude", [1e-20, 1e20])
def test_sharded_solves_of_badly_scaled_systems_converge(cpu_devices, rng, magnitude):
    """The power-of-two rescaling of b runs on shards too: a float32 b of 1e-20 or 1e20
    converges (CG's dot products flushed to zero or overflowed before)."""
    a = gk.sparse.poisson2d(4).toarray().astype(np.float32)
    b = (rng.standard_normal(16) * magnitude).astype(np.float32)
    x, info = gk.linalg.cg(gk.shard(a), gk.shard(b))
    assert info.converged, info.reason
    assert isinstance(x, gk.ShardedArray)
    ref = np.linalg.solve(a.astype(np.float64), b.astype(np.float64) / magnitude)
    assert rel_err(gk.to_numpy(x).astype(np.float64) / magnitude, ref) < 1e-3
