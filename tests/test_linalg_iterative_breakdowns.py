"""BiCGSTAB's rho breakdown, reached on any BLAS kernels (issue 27, item 1).

``rho = rhat^H r`` vanishing is a breakdown of BiCGSTAB's recurrence, not of the problem:
the solver restarts from ``x`` with its true residual as a fresh shadow residual. Whether
a rounded ``rho`` of a true breakdown falls below a threshold depends on the machine's
BLAS kernels, so these tests build cases whose ``rho`` is exactly 0 on every kernel, and
many tiny perturbations of them and of SciPy's case that hit it only on some, each of
which must converge (checked in float64) or say honestly that it did not.
"""

from __future__ import annotations

import math
import warnings
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpukit as gk
from gpukit._select import registry as _registry
from gpukit.linalg import _krylov

from helpers import rel_err

NumpyBackend = type(_registry.load("numpy"))
NOT_CONVERGED = ("breakdown: ", "maxiter reached", "stagnation: ")


@pytest.fixture
def id_rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's id: the same cases on every run and machine."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def exact_breakdown(rng, n, dtype, j):
    """``(A, b)`` on which BiCGSTAB's second ``rho`` is exactly 0 in floating point.

    Row ``j`` of ``A`` is ``2 e_j`` and ``b = 4 e_j``, so ``rhat = b`` is a left
    eigenvector of ``A``: after one step ``x_j = 2`` exactly, every later residual has
    entry ``j`` exactly 0 (``2 * 0`` plus products with 0), and ``rho = 4 r_j`` is 0
    whatever order a kernel sums in. The other rows are random and diagonally dominant.
    """
    a = rng.standard_normal((n, n)) / np.sqrt(n) + 3 * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n)) / np.sqrt(n)
    a[j] = 0
    a[j, j] = 2
    b = np.zeros(n)
    b[j] = 4
    return a.astype(dtype), b.astype(dtype)


def scipy_nonsymposdef():
    """SciPy's "nonsymposdef" case (its test_iterative.py), which rounds to a rho
    breakdown on OpenBLAS's SkylakeX kernels and not on its Haswell ones."""
    data = np.ones((2, 10))
    data[0], data[1] = 2, -1
    return sp.dia_array((data, [0, -1]), shape=(10, 10)).toarray(), np.arange(10.0)


class Spy:
    """Records what each run of the BiCGSTAB loop ended in (the driver looks the loop up
    on every solve, so patching the module reaches every backend and space)."""

    def __init__(self, monkeypatch):
        self.outcomes = []
        loop = _krylov.bicgstab

        def spy(*args, **kwargs):
            out = loop(*args, **kwargs)
            self.outcomes.append((out.reason, out.iterations, out.restartable))
            return out

        monkeypatch.setattr(_krylov, "bicgstab", spy)


def check_restarted_and_converged(spy, x, info, a, b, rtol):
    """The first loop broke down on rho after one step, the restarted one converged, and
    so did the solve, in float64."""
    assert spy.outcomes[0] == (_krylov.BICGSTAB_RHO, 1, True)
    assert spy.outcomes[-1][0] == _krylov.CONVERGED and len(spy.outcomes) == 2
    assert info.converged and info.reason == "converged"
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    x64 = np.asarray(gk.to_numpy(x)).astype(np.complex128)
    assert np.linalg.norm(b64 - a64 @ x64) <= 2 * rtol * np.linalg.norm(b64)
    assert rel_err(x64, np.linalg.solve(a64, b64)) < 100 * rtol


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n", [3, 17, 64])
def test_an_exact_rho_breakdown_restarts_and_converges(backend, xp, id_rng, monkeypatch, dtype, n):
    a, b = exact_breakdown(id_rng, n, dtype, j=int(id_rng.integers(n)))
    rtol = 1e-5 if np.finfo(dtype).eps > 1e-10 else 1e-10
    assert spla.bicgstab(a, b, rtol=rtol)[1] == -10  # SciPy stops there
    spy = Spy(monkeypatch)
    x, info = gk.linalg.bicgstab(xp.asarray(a), xp.asarray(b), rtol=rtol)
    check_restarted_and_converged(spy, x, info, a, b, rtol)


@pytest.mark.parametrize("devices", [1, 3])
def test_an_exact_rho_breakdown_restarts_on_sharded_operands(id_rng, monkeypatch, devices):
    a, b = exact_breakdown(id_rng, 40, np.float64, j=17)
    spy = Spy(monkeypatch)
    with gk.use_backend(NumpyBackend(devices)):
        x, info = gk.linalg.bicgstab(gk.shard(a), b, rtol=1e-10)
        x = x.gather()
    check_restarted_and_converged(spy, x, info, a, b, 1e-10)


def test_an_exact_rho_breakdown_restarts_on_dask_vectors(id_rng, monkeypatch):
    da = pytest.importorskip("dask.array", reason='pip install -e ".[dask]"')
    a, b = exact_breakdown(id_rng, 24, np.float64, j=5)
    spy = Spy(monkeypatch)
    x, info = gk.linalg.bicgstab(
        da.from_array(a, chunks=(7, 24)), da.from_array(b, chunks=7), rtol=1e-10
    )
    check_restarted_and_converged(spy, x.compute(), info, a, b, 1e-10)


def test_restarts_after_a_breakdown_are_bounded():
    """A loop that breaks down restartably every time is run 1 + BREAKDOWN_RESTARTS times,
    then reported as broken down; maxiter ends it first when it is smaller."""
    calls = []

    def always_breaks_down(xp, matvec, psolve, b, x, r, rnorm, tol, maxiter, callback):
        calls.append(maxiter)
        return _krylov.Outcome(x, 1, False, _krylov.BICGSTAB_RHO, restartable=True)

    b, x = np.ones(4), np.zeros(4)
    out = _krylov.run(always_breaks_down, np, lambda v: v, None, b, x, True, 1e-8, 100, None)
    assert len(calls) == 1 + _krylov.BREAKDOWN_RESTARTS
    assert calls == list(range(100, 100 - len(calls), -1))  # each run gets what is left
    assert not out.converged and out.reason == _krylov.BICGSTAB_RHO
    assert out.iterations == len(calls) and out.residual == 2.0
    calls.clear()
    out = _krylov.run(always_breaks_down, np, lambda v: v, None, b, x, True, 1e-8, 4, None)
    assert len(calls) == 4 and out.reason == _krylov.MAXITER and not out.converged


def perturbed(rng, a, b, size, fill):
    """``a`` and ``b`` times ``1 + d`` entry by entry, ``|d|`` about ``size``, which keeps
    their zeros (and an exact breakdown's structure, its rho then rounding noise); with
    ``fill``, ``a`` plus a dense perturbation of that relative size too."""
    a = a * (1 + size * rng.standard_normal(a.shape))
    if fill:
        a = a + size * np.abs(a).max() * rng.standard_normal(a.shape)
    return a, b * (1 + size * rng.standard_normal(b.shape))


FAMILIES = ["scipy_nonsymposdef", "scipy_nonsymposdef_x0_b", "exact"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_perturbations_converge_or_say_they_did_not(backend, xp, id_rng, family, dtype):
    """Near a breakdown the rounded rho lands on either side of any threshold, depending on
    the kernels: each of 40 perturbations of a breaking-down case must converge (checked in
    float64) or report honestly that it did not, and converge wherever SciPy does."""
    eps = np.finfo(dtype).eps
    rtol = 1e-5 if dtype == np.float32 else 1e-8
    if family == "exact":
        base = exact_breakdown(id_rng, 30, np.float64, j=11)
    else:
        base = scipy_nonsymposdef()
    for case in range(40):
        size = 10 ** id_rng.uniform(math.log10(eps) - 1, math.log10(eps) + 4)
        a, b = perturbed(id_rng, *base, size, fill=case % 2 == 1)
        a, b = a.astype(dtype), b.astype(dtype)
        x0 = b.copy() if family.endswith("x0_b") else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x, info = gk.linalg.bicgstab(
                xp.asarray(a), xp.asarray(b), None if x0 is None else xp.asarray(x0), rtol=rtol
            )
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        x64 = np.asarray(gk.to_numpy(x)).astype(np.float64)
        true = np.linalg.norm(b64 - a64 @ x64)
        # what recomputing b - A x in the working precision may differ by
        rounding = 4 * eps * (np.linalg.norm(a64, 2) * np.linalg.norm(x64) + np.linalg.norm(b64))
        what = f"case {case} (perturbation {size:.1e}): {info}"
        assert np.isfinite(x64).all(), what
        assert abs(info.residual_norm - true) <= rounding, what
        if info.converged:
            assert true <= info.tolerance + rounding, what
            assert true <= 2 * rtol * np.linalg.norm(b64), what
        else:
            assert info.reason.startswith(NOT_CONVERGED), what
            assert true > info.tolerance - rounding, what
            assert any(issubclass(w.category, gk.ConvergenceWarning) for w in caught), what
            _, code = spla.bicgstab(a, b, x0=x0, rtol=rtol)
            assert code != 0, f"SciPy converges, gpukit does not: {what}"
