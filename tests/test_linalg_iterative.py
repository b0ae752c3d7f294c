"""gk.linalg Krylov solvers against dense float64 solutions and SciPy's solvers."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpukit as gk
from gpukit.linalg import _krylov

from helpers import rel_err

METHODS = ["cg", "gmres", "bicgstab", "minres"]
FORMS = ["dense", "sparse", "linop", "callable"]
RTOL = {np.float32: 1e-6, np.float64: 1e-11}
ERR = {np.float32: 1e-5, np.float64: 1e-10}


def problem(rng, method, n=64):
    """A well-conditioned matrix of the kind each method needs (SPD, general, indefinite)."""
    lap = gk.to_numpy(gk.sparse.poisson2d(int(np.sqrt(n))).toarray())  # host, on any backend
    base = lap / 8 + np.eye(n)  # SPD, condition number ~2
    noise = rng.standard_normal((n, n)) * 0.1 / np.sqrt(n)
    if method == "cg":
        return base + noise @ noise.T
    if method == "minres":
        d = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * (1.5 + rng.random(n))
        sym = noise + noise.T
        return np.diag(d) + sym  # symmetric indefinite, eigenvalues away from 0
    return base + noise  # non-symmetric


def as_form(xp, a, form, dtype):
    if form == "dense":
        return xp.asarray(a.astype(dtype))
    csr = gk.sparse.csr_matrix(sp.csr_matrix(a.astype(dtype)))
    if form == "sparse":
        return csr
    if form == "linop":
        if xp is np:
            return spla.LinearOperator(a.shape, matvec=csr.dot, dtype=dtype)
        import cupyx.scipy.sparse.linalg as cspla

        return cspla.LinearOperator(a.shape, matvec=csr.dot, dtype=dtype)
    return lambda v: csr @ v


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", FORMS)
def test_solves_against_dense_solution(backend, xp, rng, method, dtype, form):
    a = problem(rng, method)
    b = rng.standard_normal(a.shape[0])
    A = as_form(xp, a, form, dtype)
    x, info = getattr(gk.linalg, method)(A, xp.asarray(b.astype(dtype)), rtol=RTOL[dtype])
    assert isinstance(info, gk.linalg.IterativeInfo)
    assert info.converged and info.method == method and info.reason == "converged"
    assert info == 0 and not info  # SciPy's code for success
    assert x.dtype == dtype and type(x) is type(xp.asarray(b))
    assert rel_err(x, np.linalg.solve(a, b)) < ERR[dtype]
    x64 = gk.to_numpy(x).astype(np.float64)
    true = np.linalg.norm(b - a @ x64)
    if dtype == np.float64:
        assert info.residual_norm == pytest.approx(true, rel=1e-3)
    else:
        # Recomputed in float32, b - A x carries rounding of eps * (|A||x| + |b|), the
        # size of the residual itself at this tolerance: only that much agreement holds
        # (a relative bound failed for about one seed in ten).
        rounding = np.finfo(np.float32).eps * (
            np.linalg.norm(a, 2) * np.linalg.norm(x64) + np.linalg.norm(b)
        )
        assert abs(info.residual_norm - true) <= 4 * rounding
    assert true <= 2 * info.tolerance


@pytest.mark.parametrize("method", METHODS)
def test_matches_scipy_solver(backend, xp, rng, method):
    a = sp.csr_matrix(problem(rng, method))
    b = rng.standard_normal(a.shape[0])
    x_ref, code = getattr(spla, method)(a, b, rtol=1e-12)
    assert code == 0
    x, info = getattr(gk.linalg, method)(gk.sparse.csr_matrix(a), xp.asarray(b), rtol=1e-12)
    assert info.converged
    assert rel_err(x, x_ref) < 1e-10


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("form", FORMS)
def test_preconditioner_forms(backend, xp, rng, method, form):
    a = problem(rng, method)
    a[np.diag_indices_from(a)] *= np.linspace(1, 50, a.shape[0])  # badly scaled: Jacobi helps
    if method == "minres":  # M must be SPD: scale by |diag|
        jacobi = np.diag(1 / np.abs(np.diag(a)))
    else:
        jacobi = np.diag(1 / np.diag(a))
    b = rng.standard_normal(a.shape[0])
    fn = getattr(gk.linalg, method)
    x, info = fn(xp.asarray(a), xp.asarray(b), rtol=1e-11, M=as_form(xp, jacobi, form, np.float64))
    assert info.converged
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-9
    _, plain = fn(xp.asarray(a), xp.asarray(b), rtol=1e-11)
    assert info.iterations < plain.iterations


class WithoutDtype(spla.LinearOperator):
    """A LinearOperator applying ``a`` whose dtype is None, as SciPy's IdentityOperator."""

    def __init__(self, a):
        super().__init__(None, a.shape)
        self.a = a

    def _matvec(self, v):
        return self.a @ v


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("which", ["A", "M"])
def test_operator_without_dtype_keeps_the_solve_dtype(rng, method, which):
    # SciPy solves in the dtype of A and b whatever M's; a missing dtype is no float64
    a = problem(rng, method, n=16)
    b = rng.standard_normal(16)
    a32 = a.astype(np.float32)
    A = WithoutDtype(a32) if which == "A" else a32
    M = WithoutDtype(np.eye(16, dtype=np.float32)) if which == "M" else None
    with gk.use_backend("numpy"):
        x, info = getattr(gk.linalg, method)(A, b.astype(np.float32), M=M, rtol=1e-6)
    assert info.converged
    assert x.dtype == np.float32
    assert rel_err(x, np.linalg.solve(a, b)) < ERR[np.float32]


@pytest.mark.parametrize("method", METHODS)
def test_non_convergence_warns_and_reports(backend, xp, rng, method):
    a = gk.to_numpy(gk.sparse.poisson2d(16).toarray())  # host, on any backend
    b = rng.standard_normal(a.shape[0])
    with pytest.warns(gk.ConvergenceWarning, match=f"gk.linalg.{method} did not converge"):
        x, info = getattr(gk.linalg, method)(xp.asarray(a), xp.asarray(b), maxiter=3)
    assert not info.converged
    assert info.iterations == 3 and info == 3 and info  # SciPy's code: the iterations done
    assert info.reason == "maxiter reached"
    assert info.residual_norm == pytest.approx(np.linalg.norm(b - a @ gk.to_numpy(x)), rel=1e-6)
    assert info.residual_norm > info.tolerance


def test_info_is_scipys_integer_code_with_fields(backend, xp, rng):
    a = problem(rng, "cg", n=16)
    b = rng.standard_normal(16)
    _, info = gk.linalg.cg(xp.asarray(a), xp.asarray(b), rtol=1e-10)
    assert isinstance(info, int) and int(info) == 0 and hash(info) == hash(0)
    assert repr(info).startswith("IterativeInfo(converged=True, iterations=")
    for copied in (pickle.loads(pickle.dumps(info)), copy.copy(info), copy.deepcopy(info)):
        assert type(copied) is gk.linalg.IterativeInfo and copied == 0
        assert (copied.converged, copied.iterations, copied.residual_norm, copied.reason) == (
            True, info.iterations, info.residual_norm, "converged"
        )  # fmt: skip
    with pytest.raises(AttributeError, match="immutable"):
        info.converged = False
    with pytest.warns(gk.ConvergenceWarning):  # no iteration allowed: not converged, code 1
        _, info = gk.linalg.cg(xp.asarray(a), xp.asarray(b), maxiter=0)
    assert info.iterations == 0 and info == 1 and not info.converged


def test_cg_on_indefinite_matrix_is_reported(backend, xp, rng):
    a = np.diag(np.r_[np.ones(5), -np.ones(5)])
    b = rng.standard_normal(10)
    with pytest.warns(gk.ConvergenceWarning):
        _, info = gk.linalg.cg(xp.asarray(a), xp.asarray(b))
    assert not info.converged and info.reason.startswith("breakdown") and info == -1


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (_krylov.BICGSTAB_RHO, -10),
        (_krylov.BICGSTAB_RV, -11),
        (_krylov.BICGSTAB_OMEGA, -11),
        (_krylov.CG_INDEFINITE, -1),
        (_krylov.MINRES_SINGULAR, -1),
    ],
)
def test_breakdown_codes_are_scipys_where_scipy_has_one(reason, code):
    info = gk.linalg.IterativeInfo(False, 3, 1.0, 1e-8, "bicgstab", reason)
    assert info == code and info < 0 and not info.converged


@pytest.mark.parametrize("method", METHODS)
def test_callback_and_x0(backend, xp, rng, method):
    a = problem(rng, method)
    b = rng.standard_normal(a.shape[0])
    seen = []
    x0 = xp.asarray(np.linalg.solve(a, b) + 1e-3 * rng.standard_normal(a.shape[0]))
    x0_before = gk.to_numpy(x0).copy()
    x, info = getattr(gk.linalg, method)(
        xp.asarray(a),
        xp.asarray(b),
        x0=x0,
        rtol=1e-11,
        callback=lambda xk: seen.append(gk.to_numpy(xk).copy()),
    )
    assert info.converged
    np.testing.assert_array_equal(gk.to_numpy(x0), x0_before)  # x0 not modified
    if method == "gmres":  # once per restart cycle
        assert 1 <= len(seen) <= info.iterations
    else:
        assert len(seen) == info.iterations
    assert rel_err(seen[-1], gk.to_numpy(x)) < 1e-15


def test_zero_rhs_converges_immediately(backend, xp):
    x, info = gk.linalg.cg(xp.eye(4), xp.zeros(4))
    assert info.converged and info.iterations == 0
    assert float(abs(x).max()) == 0.0


BAD_ARGUMENTS = [
    (lambda xp: ((xp.eye(5), xp.ones(4)), {}), ValueError, r"'A' has shape \(5, 5\).*\(4,\)"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"x0": xp.ones(3)}), ValueError,
     r"'x0' has shape \(3,\).*\(4,\)"),
    (lambda xp: ((xp.eye(4), xp.ones((4, 1))), {}), ValueError, r"'b' must be 1-D"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"M": xp.eye(3)}), ValueError,
     r"'M' has shape \(3, 3\)"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"rtol": -1.0}), ValueError,
     "rtol and atol must be >= 0"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"atol": float("nan")}), ValueError,
     "rtol and atol must be >= 0"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"rtol": "tight"}), TypeError,
     "rtol and atol must be real numbers"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"maxiter": 2.5}), TypeError,
     "maxiter must be an integer or None"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"maxiter": -1}), ValueError, "maxiter must be >= 0"),
    (lambda xp: ((xp.eye(4), xp.ones(4)), {"callback": 3}), TypeError, "callback must be callable"),
]  # fmt: skip


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("case", "error", "match"), BAD_ARGUMENTS)
def test_argument_errors_name_the_solver(backend, xp, method, case, error, match):
    args, kwargs = case(xp)
    with pytest.raises(error, match=match) as info:
        getattr(gk.linalg, method)(*args, **kwargs)
    assert type(info.value) is error
    assert str(info.value).startswith(f"gk.linalg.{method}: ")


def test_gmres_restart_and_complex(backend, xp, rng):
    n = 40
    a = np.eye(n) * 3 + (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(
        n
    )
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    x, info = gk.linalg.gmres(xp.asarray(a), xp.asarray(b), rtol=1e-12, restart=5)
    assert info.converged and x.dtype == np.complex128
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-10
    with pytest.raises(ValueError, match="restart"):
        gk.linalg.gmres(xp.asarray(a), xp.asarray(b), restart=0)


def test_cg_complex_hermitian(backend, xp, rng):
    n = 30
    z = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(n)
    a = z @ z.conj().T + np.eye(n)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    x, info = gk.linalg.cg(xp.asarray(a), xp.asarray(b), rtol=1e-12)
    assert info.converged
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-10


def test_poisson_cg_example_runs():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "GPUKIT_BACKEND": "numpy"}
    out = subprocess.run(
        [sys.executable, str(root / "examples" / "poisson_cg.py"), "64"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "backend numpy" in out.stdout and "relative residual" in out.stdout
