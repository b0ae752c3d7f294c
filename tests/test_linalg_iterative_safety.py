"""Krylov solvers never write into what they do not own, never claim convergence they did
not reach, and report breakdowns (issue 16, items 1-3 and 14).

Each class of defect is tested over every solver and every operator form, on fresh random
problems, against float64 references (``numpy.linalg.solve``, the float64 true residual,
SciPy's solvers for breakdown codes).
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import rel_err

METHODS = ["cg", "gmres", "bicgstab", "minres"]
SOLVE = {m: getattr(gk.linalg, m) for m in METHODS}
#: Every reason an IterativeInfo may carry (docs/linalg.rst lists them).
REASONS = {
    "converged",
    "maxiter reached",
    "breakdown: NaN or inf (from A or M, or the iteration's products overflowed)",
    "breakdown: A is not positive definite (p^H A p <= 0)",
    "breakdown: M is not positive definite (r^H M r <= 0)",
    "breakdown: rho = 0 (the shadow residual is orthogonal to the residual, also after 10 "
    "restarts with the residual as a fresh one)",
    "breakdown: rhat^H A p = 0",
    "breakdown: omega = 0 (A s is orthogonal to s; the iteration stagnates)",
    "breakdown: A is singular on the Krylov subspace (b may not be in its range)",
    "breakdown: the Krylov subspace is invariant and the residual did not decrease "
    "(A or M singular on it)",
    "stagnation: the recurrence met the tolerance but the true residual did not, and "
    "restarting did not reduce it (rounding limits the attainable accuracy)",
    "range: the solve of b scaled by a power of two converged, but its solution scaled back "
    "over- or underflows the dtype, and the solution as returned misses the tolerance",
}


def problem(rng, method, n=40):
    """A well-conditioned matrix of the kind each method needs, with a Jacobi preconditioner
    that is Hermitian positive definite (what cg and minres require of M)."""
    noise = rng.standard_normal((n, n)) * 0.3 / np.sqrt(n)
    scale = rng.uniform(1, 5, n)
    if method == "cg":
        a = np.diag(scale) + noise @ noise.T
    elif method == "minres":
        a = np.diag(scale * np.where(np.arange(n) % 2, 1.0, -1.0)) + noise + noise.T
    else:
        a = np.diag(scale) + noise
    return a, np.diag(1 / np.abs(np.diag(a)))


class Recorder:
    """A callable operator returning a fresh array per call; remembers each result and a
    copy of it, so a test can check that the solver wrote into none of them."""

    def __init__(self, xp, a):
        self.xp, self.a, self.seen = xp, xp.asarray(a), []

    def __call__(self, v):
        out = self.a @ v
        self.seen.append((out, out.copy()))
        return out

    def untouched(self) -> bool:
        return all(bool((out == copy).all()) for out, copy in self.seen)


class Reuser:
    """A callable operator writing every result into one buffer it returns (``out=``),
    read-only on NumPy so that any write into it raises."""

    def __init__(self, xp, a):
        self.xp, self.a = xp, xp.asarray(a)
        self.buf = xp.empty(a.shape[0], dtype=self.a.dtype)

    def __call__(self, v):
        if self.xp is np:
            self.buf.flags.writeable = True
            np.matmul(self.a, v, out=self.buf)
            self.buf.flags.writeable = False
        else:
            self.xp.matmul(self.a, v, out=self.buf)
        return self.buf


def operator(xp, a, form):
    """``a`` in one of the forms a solver accepts (``record`` and ``reuse`` are callables)."""
    if form == "dense":
        return xp.asarray(a)
    csr = gk.sparse.csr_matrix(sp.csr_matrix(a))
    if form == "sparse":
        return csr
    if form == "linop":
        if xp is np:
            return spla.LinearOperator(a.shape, matvec=csr.dot, dtype=a.dtype)
        import cupyx.scipy.sparse.linalg as cspla

        return cspla.LinearOperator(a.shape, matvec=csr.dot, dtype=a.dtype)
    return Recorder(xp, a) if form == "record" else Reuser(xp, a)


def readonly(xp, v):
    """``v`` on the backend, read-only where the library has the notion (NumPy)."""
    out = xp.asarray(v).copy()
    if xp is np:
        out.flags.writeable = False
    return out


FORMS = ["dense", "sparse", "linop", "record", "reuse"]
PRECONDITIONERS = [None, "dense", "linop", "record", "reuse"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("precond", PRECONDITIONERS)
def test_solver_owns_only_its_workspace(backend, xp, rng, method, form, precond):
    """Results of A and M are only read (and only until the operator's next call), b and x0
    are never written, and the answer matches float64 ``numpy.linalg.solve``."""
    a, jacobi = problem(rng, method)
    b = rng.standard_normal(a.shape[0])
    x_ref = np.linalg.solve(a, b)
    x0 = x_ref + 0.1 * rng.standard_normal(a.shape[0])
    A = operator(xp, a, form)
    M = None if precond is None else operator(xp, jacobi, precond)
    b_dev, x0_dev = readonly(xp, b), readonly(xp, x0)
    x, info = SOLVE[method](A, b_dev, x0=x0_dev, M=M, rtol=1e-11)
    assert info.converged, info
    assert rel_err(x, x_ref) < 1e-9
    np.testing.assert_array_equal(gk.to_numpy(b_dev), b)
    np.testing.assert_array_equal(gk.to_numpy(x0_dev), x0)
    for op in (A, M):
        if isinstance(op, Recorder):
            assert op.seen and op.untouched()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("precond", [None, "identity"])
def test_identity_operator_returning_its_input(backend, xp, rng, method, precond):
    """``A = lambda v: v`` (and the same M) hands the solver its own buffer back: the
    answer is b (cg used to return x = 0, minres and bicgstab a wrong x "converged")."""
    b = rng.standard_normal(30)
    M = None if precond is None else (lambda v: v)
    x, info = SOLVE[method](lambda v: v, xp.asarray(b), M=M, rtol=1e-12)
    assert info.converged and info.iterations == 1
    assert rel_err(x, b) < 1e-14


@pytest.mark.parametrize("method", METHODS)
def test_operator_and_preconditioner_sharing_one_buffer_pattern(backend, xp, rng, method):
    """An operator that reuses its output buffer (``numpy.dot(A, v, out=buf)``), the case
    where bicgstab's second mat-vec used to overwrite the first one's result."""
    a, jacobi = problem(rng, method, n=60)
    b = rng.standard_normal(60)
    x, info = SOLVE[method](Reuser(xp, a), xp.asarray(b), M=Reuser(xp, jacobi), rtol=1e-11)
    assert info.converged
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-9


def true_residual(a, b, x) -> float:
    return float(np.linalg.norm(b - a @ gk.to_numpy(x).astype(np.complex128)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("where", ["nan", "inf"])
@pytest.mark.parametrize("arg", ["b", "x0"])
def test_non_finite_b_or_x0_is_a_value_error(backend, xp, rng, method, where, arg):
    a, _ = problem(rng, method, n=10)
    vectors = {"b": rng.standard_normal(10), "x0": rng.standard_normal(10)}
    vectors[arg][rng.integers(10)] = np.nan if where == "nan" else -np.inf
    with pytest.raises(ValueError, match=rf"gk.linalg.{method}: argument '{arg}' holds NaN or inf"):
        SOLVE[method](xp.asarray(a), xp.asarray(vectors["b"]), x0=xp.asarray(vectors["x0"]))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("arg", ["A", "M"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("zero_b", [False, True])
def test_non_finite_operator_array_is_a_value_error(backend, xp, rng, method, arg, layout, zero_b):
    """An A or M array with NaN/inf is refused before iterating; with ``b = 0`` the solve
    used to return x = 0 as exact although ``A @ 0`` is NaN (found by the fuzz test)."""
    import scipy.sparse

    a, jacobi = problem(rng, method, n=10)
    ops = {"A": a.copy(), "M": jacobi.copy()}
    ops[arg][3, 3] = np.inf
    if layout == "sparse":
        ops = {k: scipy.sparse.csr_matrix(v) for k, v in ops.items()}
    else:
        ops = {k: xp.asarray(v) for k, v in ops.items()}
    b = np.zeros(10) if zero_b else rng.standard_normal(10)
    with pytest.raises(ValueError, match=rf"gk.linalg.{method}: argument '{arg}' holds NaN or inf"):
        SOLVE[method](ops["A"], xp.asarray(b), M=ops["M"])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_a_large_matrix_is_checked_without_a_boolean_array(rng, dtype, order, compiled):
    """The numpy backend checks a large array in one pass, by the compiled kernel or (from
    2**18 entries, without it) through its sum first: one non-finite entry anywhere (NaN,
    +-inf, inf and -inf in one row, in a complex part) is found, and a finite matrix whose
    sum overflows is still finite."""
    import tracemalloc

    from gpukit._host import native

    if compiled and not native.available():
        pytest.skip("gpukit's host kernel module is not built (pip install -e .)")
    n = 520  # 270,400 entries
    a = np.asarray(rng.standard_normal((n, n)), dtype=dtype, order=order)
    with contextlib.ExitStack() as stack:
        if not compiled:
            stack.enter_context(native.disabled())
        backend = stack.enter_context(gk.use_backend("numpy"))
        tracemalloc.start()
        try:
            assert backend.linalg_all_finite(a)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < n * n // 8  # no boolean array of a's size
        for bad in (np.nan, np.inf, -np.inf):
            i, j = rng.integers(n, size=2)
            worse = a.copy(order=order)
            worse[i, j] = bad
            assert not backend.linalg_all_finite(worse), (bad, i, j)
        both = a.copy(order=order)
        both[7, 3], both[7, 400] = np.inf, -np.inf
        assert not backend.linalg_all_finite(both)
        if np.dtype(dtype).kind == "c":
            imag = a.copy(order=order)
            imag[n - 1, 0] = complex(1.0, np.inf)
            assert not backend.linalg_all_finite(imag)
        huge = a.copy(order=order)
        huge[5, :] = np.finfo(huge.real.dtype).max  # its sum overflows: still finite
        assert backend.linalg_all_finite(huge)


def test_a_large_dense_operator_with_nan_is_refused(rng):
    """Through the solver: a 600x600 A with one NaN is a ValueError."""
    n = 600
    a = np.eye(n) * 4 + rng.standard_normal((n, n)) * 0.01
    a[int(rng.integers(n)), int(rng.integers(n))] = np.nan
    with gk.use_backend("numpy"), pytest.raises(ValueError, match=r"argument 'A' holds NaN or inf"):
        gk.linalg.cg(a, rng.standard_normal(n))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("when", [0, 1, 3])
def test_operator_producing_nan_ends_with_a_reason(backend, xp, rng, method, when):
    """A (or a callable) that starts returning NaN after ``when`` calls: the solve stops,
    not converged, with the non-finite reason (it used to report convergence or loop)."""
    a, _ = problem(rng, method, n=20)
    b = rng.standard_normal(20)
    calls = [0]

    def matvec(v):
        calls[0] += 1
        out = xp.asarray(a) @ v
        return out * np.nan if calls[0] > when else out

    with pytest.warns(gk.ConvergenceWarning, match="NaN or inf"):
        _, info = SOLVE[method](matvec, xp.asarray(b), x0=xp.zeros(20), rtol=1e-12)
    assert not info.converged
    assert info.reason.startswith("breakdown: NaN or inf (from A or M")
    # stopped at once, not after maxiter NaN iterations: on the host after the call that
    # gave NaN and the driver's residual; a device space reads its stop at the end of
    # iterations 1, 2 and 4, so it may make one call more (the rest of the iteration)
    assert calls[0] <= when + 2 + (xp is not np)


@pytest.mark.parametrize("method", METHODS)
def test_convergence_warning_points_at_the_caller(backend, xp, method):
    with pytest.warns(gk.ConvergenceWarning) as seen:
        SOLVE[method](-xp.eye(4) if method == "cg" else xp.eye(4), xp.ones(4), maxiter=0)
    assert seen[0].filename == __file__


@pytest.mark.parametrize("method", METHODS)
def test_zero_matrix_is_never_converged(backend, xp, rng, method):
    """minres used to claim convergence on A = 0."""
    b = rng.standard_normal(8)
    with pytest.warns(gk.ConvergenceWarning):
        x, info = SOLVE[method](xp.zeros((8, 8)), xp.asarray(b))
    assert not info.converged and info.reason.startswith("breakdown")
    assert info.residual_norm == pytest.approx(np.linalg.norm(b), rel=1e-12)
    assert not np.isnan(gk.to_numpy(x)).any()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.bool_])
def test_low_precision_input_computes_in_a_precision_that_meets_the_tolerance(
    backend, xp, rng, method, dtype
):
    """float16 computes in float32 (bool and integers in float64, as the dense solvers):
    float16 iterations used to report convergence with a residual 53x the tolerance."""
    a, _ = problem(rng, method, n=30)
    a = np.round(a * 4) if dtype is not np.float16 else a
    if dtype is np.bool_:
        a = np.eye(30)
    b = np.round(rng.standard_normal(30) * 4)
    a_in, b_in = a.astype(dtype), (b != 0 if dtype is np.bool_ else b).astype(dtype)
    a64, b64 = a_in.astype(np.float64), b_in.astype(np.float64)
    x, info = SOLVE[method](xp.asarray(a_in), xp.asarray(b_in), rtol=1e-5)
    expected = np.float32 if dtype is np.float16 else np.float64
    assert x.dtype == expected
    assert info.converged
    rounding = (
        4
        * np.finfo(expected).eps
        * (np.linalg.norm(a64, 2) * np.linalg.norm(gk.to_numpy(x)) + np.linalg.norm(b64))
    )
    assert true_residual(a64, b64, x) <= info.tolerance + rounding
    assert rel_err(x, np.linalg.solve(a64, b64)) < 1e-3


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
def test_convergence_is_judged_on_the_true_residual(backend, xp, rng, method):
    """Ill-conditioned float32 problems at tolerances near what single precision can
    reach: the recurrences' residuals drift from b - A x. Whatever the outcome, a
    "converged" is backed by the true residual, and anything else carries a known reason."""
    n = 60
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eig = np.logspace(0, 4, n)
    if method == "minres":
        eig = eig * np.where(np.arange(n) % 2, 1.0, -1.0)
    a = (q * eig) @ q.T
    if method == "bicgstab":
        a = a + np.triu(rng.standard_normal((n, n)), 1) * 0.5
    b = rng.standard_normal(n)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for rtol in (1e-3, 1e-5, 1e-6, 1e-7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gk.ConvergenceWarning)
            x, info = SOLVE[method](xp.asarray(a32), xp.asarray(b32), rtol=rtol, maxiter=2000)
        assert info.reason in REASONS
        x64 = gk.to_numpy(x).astype(np.float64)
        rounding = (
            4
            * np.finfo(np.float32).eps
            * (np.linalg.norm(a32, 2) * np.linalg.norm(x64) + np.linalg.norm(b32))
        )
        if info.converged:
            assert true_residual(a32.astype(np.float64), b32, x) <= info.tolerance + rounding
        assert info.residual_norm == pytest.approx(
            true_residual(a32.astype(np.float64), b32, x), abs=rounding
        )


def test_gmres_rank_deficient_preconditioner_and_nonzero_x0(backend, xp):
    """SciPy's test_defective_precond_breakdown: M singular, x0 != 0. gmres used to make
    no progress (a tiny pivot in its small least-squares problem)."""
    M = np.eye(3)
    M[2, 2] = 0
    b = np.array([0.0, 1.0, 1.0])
    a = np.diag([2.0, 3.0, 4.0])
    with pytest.warns(gk.ConvergenceWarning, match="breakdown"):
        x, info = gk.linalg.gmres(
            xp.asarray(a), xp.asarray(b), x0=xp.asarray([1.0, 0.0, 0.0]), M=xp.asarray(M),
            rtol=1e-15, atol=0,
        )  # fmt: skip
    x = gk.to_numpy(x)
    assert not np.isnan(x).any() and not info.converged
    np.testing.assert_allclose(M @ (a @ x), M @ b, atol=1e-14)  # solved off M's null space
    assert info.residual_norm == pytest.approx(1.0)  # the part M cannot reach


def test_gmres_rank_deficient_preconditioner_random(backend, xp, rng):
    """The class: a random non-symmetric A, a preconditioner of rank n - k, a nonzero x0.
    GMRES finds the least-squares answer on M's range, reports the breakdown, no NaN."""
    n, k = 30, 3
    a = np.eye(n) * 3 + rng.standard_normal((n, n)) / np.sqrt(n)
    u = np.linalg.qr(rng.standard_normal((n, n - k)))[0]
    M = u @ u.T  # an orthogonal projector of rank n - k
    b = rng.standard_normal(n)
    x0 = rng.standard_normal(n)
    with pytest.warns(gk.ConvergenceWarning):
        x, info = gk.linalg.gmres(
            xp.asarray(a), xp.asarray(b), x0=xp.asarray(x0), M=xp.asarray(M), rtol=1e-12,
            restart=n,
        )  # fmt: skip
    x = gk.to_numpy(x)
    assert not np.isnan(x).any() and not info.converged
    assert info.reason.startswith("breakdown") or info.reason == "maxiter reached"
    # x - x0 lies in range(M); the best such x minimises ||b - A x|| over that space
    y, *_ = np.linalg.lstsq(a @ u, b - a @ x0, rcond=None)
    best = np.linalg.norm(b - a @ (x0 + u @ y))
    assert info.residual_norm <= best * (1 + 1e-8)


def test_gmres_singular_matrix_breakdown(backend, xp):
    """SciPy's test_defective_matrix_breakdown: A singular, b not in its range."""
    a = np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 0]])
    b = np.array([1.0, 0, 1])
    with pytest.warns(gk.ConvergenceWarning):
        x, info = gk.linalg.gmres(xp.asarray(a), xp.asarray(b), rtol=1e-8, atol=0)
    x = gk.to_numpy(x)
    assert not np.isnan(x).any() and not info.converged
    np.testing.assert_allclose(a @ (a @ x), a @ b, atol=1e-14)


BICGSTAB_BREAKDOWNS = [
    # (A, b, reason, SciPy's code for the same breakdown)
    # rho = 0 exactly after one iteration (SciPy stops there); restarted from x = [1, .5, 0]
    # with its residual r as the shadow residual, r^H A r = 0: no restart cures that
    ([[1.0, 0, 1], [-1, 1, 1], [0, -1, -1]], [1.0, 0, 0], "rhat^H A p = 0", -10),
    ([[0.0, 1], [1, 0]], [1.0, 0], "rhat^H A p = 0", -11),
    # SciPy stops one step later, on the rho test (-10) that omega = 0 leads to
    ([[1.0, 0, 0], [0, -1, 0], [0, 0, 0]], [2.0, 1, 2], "omega = 0", -10),
]


@pytest.mark.parametrize(("a", "b", "reason", "scipy_code"), BICGSTAB_BREAKDOWNS)
def test_bicgstab_breakdowns_are_reported(backend, xp, a, b, reason, scipy_code):
    a, b = np.array(a), np.array(b)
    assert spla.bicgstab(a, b)[1] == scipy_code  # SciPy breaks down there too
    with pytest.warns(gk.ConvergenceWarning, match="breakdown"):
        x, info = gk.linalg.bicgstab(xp.asarray(a), xp.asarray(b))
    assert not info.converged and reason in info.reason
    assert info == (-10 if reason.startswith("rho") else -11)  # SciPy's code for it
    assert not np.isnan(gk.to_numpy(x)).any()
    assert info.residual_norm == pytest.approx(true_residual(a, b, x))


def test_scipy_symmetric_non_pd_case(backend, xp):
    """SciPy's "sym-nonpd" case: bicgstab breaks down (SciPy: info != 0); gmres and
    minres solve it."""
    a = np.zeros((11, 11))
    a[:5, 5] = [1, 2, 2, 2, 1]
    a[5, :5] = [1, 2, 2, 2, 1]
    a[:5, 6:] = -np.eye(5)
    a[6:, :5] = -np.eye(5)
    a[6:, 6:] = -np.eye(5)
    b = np.eye(11)[5]
    with pytest.warns(gk.ConvergenceWarning):
        _, info = gk.linalg.bicgstab(xp.asarray(a), xp.asarray(b), rtol=1e-8)
    assert not info.converged and info.reason.startswith("breakdown")
    for method in ("gmres", "minres"):
        x, info = SOLVE[method](xp.asarray(a), xp.asarray(b), rtol=1e-8)
        assert info.converged and rel_err(x, np.linalg.solve(a, b)) < 1e-7


@pytest.mark.parametrize("precond", [False, True])
def test_cg_on_indefinite_input_is_a_breakdown(backend, xp, rng, precond):
    n = 20
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = (q * np.r_[np.ones(n // 2), -np.ones(n // 2)]) @ q.T
    M = xp.eye(n) if precond else None
    with pytest.warns(gk.ConvergenceWarning, match="not positive definite"):
        x, info = gk.linalg.cg(xp.asarray(a), xp.asarray(rng.standard_normal(n)), M=M)
    assert not info.converged and "A is not positive definite" in info.reason
    assert np.isfinite(gk.to_numpy(x)).all()


@pytest.mark.parametrize("method", ["cg", "minres"])
def test_indefinite_preconditioner_is_a_breakdown(backend, xp, rng, method):
    a, _ = problem(rng, method, n=10)
    with pytest.warns(gk.ConvergenceWarning, match="M is not positive definite"):
        _, info = SOLVE[method](xp.asarray(a), xp.asarray(rng.standard_normal(10)), M=-xp.eye(10))
    assert not info.converged


@pytest.mark.parametrize("method", METHODS)
def test_zero_rhs_gives_zero_whatever_x0(backend, xp, rng, method):
    """As SciPy: b = 0 is solved exactly by x = 0, also from a nonzero x0."""
    a, _ = problem(rng, method, n=10)
    x, info = SOLVE[method](xp.asarray(a), xp.zeros(10), x0=xp.ones(10))
    assert info.converged and info.iterations == 0 and info.residual_norm == 0
    assert not gk.to_numpy(x).any()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("precond", [False, True])
def test_x0_mb_starts_from_m_b(backend, xp, rng, method, precond):
    a, jacobi = problem(rng, method, n=20)
    b = rng.standard_normal(20)
    M = xp.asarray(jacobi) if precond else None
    with pytest.warns(gk.ConvergenceWarning):
        x, info = SOLVE[method](xp.asarray(a), xp.asarray(b), "Mb", M=M, maxiter=0)
    start = jacobi @ b if precond else b
    np.testing.assert_allclose(gk.to_numpy(x), start, rtol=1e-15)  # maxiter=0: the start
    assert not info.converged and info.iterations == 0
    x, info = SOLVE[method](xp.asarray(a), xp.asarray(b), "Mb", M=M, rtol=1e-11)
    assert info.converged and rel_err(x, np.linalg.solve(a, b)) < 1e-9
    with pytest.raises(ValueError, match="x0 must be an array, None or 'Mb'"):
        SOLVE[method](xp.asarray(a), xp.asarray(b), "bM")


WRONG_OPERATORS = [
    (None, "'A' is None"),
    ("tolist", "'A' is a list whose item 0 is list"),
    (3, "'A' has type int"),
    ([], "'A' is an empty list"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("bad", "match"), WRONG_OPERATORS)
def test_wrong_operator_type_is_a_type_error_naming_it(backend, xp, rng, method, bad, match):
    a, _ = problem(rng, method, n=6)
    A = a.tolist() if bad == "tolist" else bad
    with pytest.raises(TypeError, match=match) as err:
        SOLVE[method](A, xp.asarray(rng.standard_normal(6)))
    assert "row block" not in str(err.value) and str(err.value).startswith(f"gk.linalg.{method}")
    if bad is not None:  # M=None means no preconditioner
        with pytest.raises(TypeError, match=match.replace("'A'", "'M'")):
            SOLVE[method](xp.asarray(a), xp.asarray(rng.standard_normal(6)), M=A)


@pytest.mark.parametrize("method", METHODS)
def test_callable_returning_the_wrong_shape_or_dtype(backend, xp, rng, method):
    a, _ = problem(rng, method, n=6)
    b = xp.asarray(rng.standard_normal(6))
    with pytest.raises(ValueError, match=r"callable 'A' returned shape \(5,\).*expected"):
        SOLVE[method](lambda v: v[:5], b)
    with pytest.raises(TypeError, match=r"callable 'M' returned dtype complex128 in a float64"):
        SOLVE[method](xp.asarray(a), b, M=lambda v: v * 1j)
    x, info = SOLVE[method](lambda v: (xp.asarray(a) @ v)[:, None], b, rtol=1e-10)  # (n, 1)
    assert info.converged and rel_err(x, np.linalg.solve(a, gk.to_numpy(b))) < 1e-8


@pytest.mark.parametrize("method", METHODS)
def test_x0_is_positional_as_in_scipy(backend, xp, rng, method):
    a, _ = problem(rng, method, n=10)
    b = rng.standard_normal(10)
    _, info = SOLVE[method](xp.asarray(a), xp.asarray(b), xp.asarray(np.linalg.solve(a, b)))
    assert info.converged and info.iterations == 0
    with pytest.raises(TypeError):
        SOLVE[method](xp.asarray(a), xp.asarray(b), None, 1e-5)  # rtol stays keyword-only


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
def test_sharded_solve_follows_the_same_rule(rng, method):
    """The sharded vector space runs the same loops: an identity M returning its input and
    a read-only b, on two virtual CPU devices."""
    with gk.use_backend(type(_registry.load("numpy"))(2)):
        a, _ = problem(rng, method, n=24)
        b = rng.standard_normal(24)
        x, info = SOLVE[method](gk.shard(a), readonly(np, b), M=lambda v: v, rtol=1e-11)
        assert info.converged and isinstance(x, gk.ShardedArray)
        assert rel_err(x, np.linalg.solve(a, b)) < 1e-9


def test_bicgstab_underflowing_omega_is_a_breakdown(backend, xp):
    """t^H t underflows to zero while t^H s does not (found by the fuzz test): the scalars
    are Python floats since the BLAS-1 loops, so the division raised ZeroDivisionError."""
    a = np.zeros((5, 5), np.float32)
    a[0, 0], a[1, 4], a[4, 1] = 1.0, 1.0, 4.627701e-37
    b = np.array([1.0, 9.30075809e-140, 0.0, 0.0, 0.0])
    with pytest.warns(gk.ConvergenceWarning, match="omega"):
        _, info = gk.linalg.bicgstab(xp.asarray(a), xp.asarray(b), rtol=0.0)
    assert not info.converged and info.reason.startswith("breakdown: omega")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("magnitude", [1.1754944e-38, 1e-30, 1e25], ids=["tiny", "small", "huge"])
def test_norms_do_not_underflow_into_a_false_convergence(backend, method, magnitude):
    """A float32 b whose squares underflow (or overflow) still has its true norm: a singular
    A then gives an honest failure, never "x = 0, converged" (the fuzz test under the
    simulator: gmres with A = [[0]] and b = [1.2e-38] reported convergence at iteration 0)."""
    b = np.full(3, magnitude, dtype=np.float32)
    want = float(np.linalg.norm(b.astype(np.float64)))
    with pytest.warns(gk.ConvergenceWarning, match="did not converge"):
        x, info = getattr(gk.linalg, method)(
            gk.asarray(np.zeros((3, 3), np.float32)), gk.asarray(b)
        )
    assert not info.converged
    assert info.residual_norm == pytest.approx(want, rel=1e-6)
    assert info.tolerance == pytest.approx(1e-5 * want, rel=1e-6)
    assert not gk.to_numpy(x).any()


@pytest.mark.parametrize("method", METHODS)
def test_a_b_whose_norm_exceeds_float64_is_refused_naming_the_overflow(backend, method):
    """||b|| beyond float64 (two entries of 1.3e308): the rescaled norm is inf, and the
    solve refuses b with the ValueError that says so, not an OverflowError from the
    rescaling (the fuzz test)."""
    b = gk.asarray(np.full(2, 1.27116101e308))
    with pytest.raises(ValueError, match="the norm of argument 'b' overflows float64"):
        getattr(gk.linalg, method)(gk.asarray(np.zeros((2, 2))), b)


def _poisson(dtype, scale=1.0):
    """A well-conditioned SPD matrix (5-point Laplacian of a 6x6 grid, cond ~ 20)."""
    return (gk.to_numpy(gk.sparse.poisson2d(6).toarray()) * scale).astype(dtype)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("dtype", "magnitude"),
    [("float32", m) for m in (1e-38, 1e-30, 1e-20, 1e-12, 1e8, 1e15, 1e20, 1e30, 1e37)]
    + [("float64", m) for m in (1e-300, 1e-200, 1e-90, 1e90, 1e200, 1e300)],
)
def test_badly_scaled_right_hand_sides_converge(backend, rng, method, dtype, magnitude):
    """A float32 b of norm 1e-20 made CG report "A is not positive definite" (its dot
    products flushed to zero), one of 1e20 "NaN or inf from A or M"; the solve now runs on
    b scaled by a power of two, so only A's conditioning decides. Where float32
    subnormals are flushed (CuPy), a tolerance below the smallest normal cannot be met."""
    a = _poisson(dtype)
    b = (rng.standard_normal(a.shape[0]) * magnitude).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-10
    single_flushed = backend.flushes_single_subnormals and dtype == "float32"
    if single_flushed and rtol * np.linalg.norm(b.astype(np.float64)) < np.finfo(dtype).tiny:
        # the tolerance is itself a subnormal, read as 0 (and b's subnormal entries too):
        # the solve must say it did not converge rather than claim it
        with pytest.warns(gk.errors.ConvergenceWarning, match="did not converge"):
            x, info = SOLVE[method](gk.asarray(a), gk.asarray(b), rtol=rtol)
        assert not info.converged and info.residual_norm > info.tolerance
        return
    x, info = SOLVE[method](gk.asarray(a), gk.asarray(b), rtol=rtol)
    assert info.converged, info.reason
    # the float64 references are formed on x and b scaled by the same power of two
    # (exact), as 1e300 would overflow their norms
    unit = 2.0 ** -math.frexp(magnitude)[1]
    x64, b64 = gk.to_numpy(x).astype(np.float64) * unit, b.astype(np.float64) * unit
    assert rel_err(x64, np.linalg.solve(a.astype(np.float64), b64)) < 100 * rtol
    true = np.linalg.norm(b64 - a.astype(np.float64) @ x64) / unit  # the given system's
    assert info.residual_norm <= info.tolerance
    assert info.residual_norm == pytest.approx(true, rel=0.5, abs=1e-3 * info.tolerance)
    assert info.tolerance == pytest.approx(rtol * np.linalg.norm(b64) / unit, rel=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_scaling_b_by_a_power_of_two_scales_the_solution_exactly(backend, rng, method):
    """The rescaling is exact: b * 2**40 (float32, rescaled) gives x * 2**40 bit for bit,
    in the same iterations, and callbacks see the unscaled system's iterates."""
    a = gk.asarray(_poisson("float32"))
    b = rng.standard_normal(a.shape[0]).astype(np.float32)
    seen, seen_big = [], []
    x, info = SOLVE[method](a, gk.asarray(b), callback=lambda xk: seen.append(gk.to_numpy(xk)))
    big, info_big = SOLVE[method](
        a, gk.asarray(b * 2.0**40), callback=lambda xk: seen_big.append(gk.to_numpy(xk))
    )
    assert info.converged and info_big.iterations == info.iterations
    assert np.array_equal(gk.to_numpy(big), gk.to_numpy(x) * np.float32(2.0**40))
    assert info_big.residual_norm == info.residual_norm * 2.0**40
    assert len(seen_big) == len(seen) > 0
    pairs = zip(seen_big, seen, strict=True)
    assert all(np.array_equal(s, t * np.float32(2.0**40)) for s, t in pairs)


def test_minres_does_not_call_a_regular_a_singular_when_b_is_large_against_it(backend, rng):
    """MINRES counted ||b|| into its estimate of ||A||, so with ||b|| / ||A|| > 1/eps every
    rotation looked negligible: A = 1e-10 * Laplacian, ||b|| ~ 1e8, float64, "breakdown: A
    is singular" at iteration 0."""
    a = _poisson("float64", 1e-10)
    b = rng.standard_normal(a.shape[0]) * 1e7
    x, info = gk.linalg.minres(gk.asarray(a), gk.asarray(b), rtol=1e-8)
    assert info.converged, info.reason
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-6


def test_a_huge_x0_against_a_tiny_b_is_solved_unscaled(backend, rng):
    """Scaling x0 up with a tiny b would overflow it: the solve keeps the system as given
    (and says honestly that it cannot reach b's tolerance from there)."""
    a = _poisson("float32")
    b = (rng.standard_normal(a.shape[0]) * 1e-30).astype(np.float32)
    x0 = np.full(a.shape[0], 1e30, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gk.ConvergenceWarning)
        x, info = gk.linalg.cg(gk.asarray(a), gk.asarray(b), x0=gk.asarray(x0), maxiter=5)
    x64 = gk.to_numpy(x).astype(np.float64)
    assert np.isfinite(x64).all()
    true = np.linalg.norm(b.astype(np.float64) - a.astype(np.float64) @ x64)
    assert info.residual_norm == pytest.approx(true, rel=1e-3)
    assert info.converged == (true <= info.tolerance)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("where", ["scaled up with a tiny b", "A @ x0 overflows", "huge"])
def test_a_huge_x0_warns_nothing_but_convergence_and_keeps_x_finite(
    backend, rng, method, dtype, where
):
    """A huge x0 leaked NumPy's "overflow encountered in multiply" (scaling it with a tiny
    b) and "in dot" (A @ x0), and CG's alpha = inf / inf made x NaN. Now the solve warns
    only a ConvergenceWarning, returns a finite x and reports the true residual (inf
    where b - A x0 overflows), or converges for real."""
    a = _poisson(dtype)
    n, big = a.shape[0], float(np.finfo(dtype).max)
    b = rng.standard_normal(n)
    if where == "scaled up with a tiny b":
        b, x0 = b * big**-0.9, np.full(n, big**0.6)
    elif where == "A @ x0 overflows":
        x0 = np.full(n, big / 2)
    else:  # b - A x0 finite, its dot products not
        x0 = rng.standard_normal(n) * big**0.7
    b, x0 = b.astype(dtype), x0.astype(dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x, info = SOLVE[method](gk.asarray(a), gk.asarray(b), x0=gk.asarray(x0))
    leaked = [w for w in caught if not issubclass(w.category, gk.ConvergenceWarning)]
    assert not leaked, [str(w.message) for w in leaked]
    x64, a64, b64 = gk.to_numpy(x).astype(np.float64), a.astype(np.float64), b.astype(np.float64)
    assert np.isfinite(x64).all()
    if where == "A @ x0 overflows":  # in the solve's dtype
        assert info.residual_norm == math.inf and not info.converged
        return
    r = b64 - a64 @ x64
    scale = np.abs(r).max() or 1.0
    true = scale * np.linalg.norm(r / scale)  # its squares may overflow float64
    assert info.residual_norm == pytest.approx(true, rel=1e-3, abs=4 * info.tolerance)
    assert info.converged == (info.residual_norm <= info.tolerance)
    if info.converged:
        assert true <= 2 * info.tolerance
    else:
        assert len(caught) == 1 and info.reason != "converged"


@pytest.mark.parametrize("method", METHODS)
def test_a_residual_beyond_float64_is_inf_not_an_overflowerror(backend, method):
    """The scaled system's residual is scaled back with math.ldexp, which raises
    OverflowError beyond float64 (the fuzz test, bicgstab): A x0 = 1e309 against b = 1e300."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gk.ConvergenceWarning)
        _, info = SOLVE[method](
            gk.asarray(np.array([[1e10]])), gk.asarray(np.array([1e300])),
            x0=gk.asarray(np.array([1e299])), maxiter=0,
        )  # fmt: skip
    assert info.residual_norm == math.inf and not info.converged


@pytest.mark.parametrize("method", METHODS)
def test_a_solution_that_overflows_when_scaled_back_is_no_convergence(backend, method):
    """b = 2.1e242 against A = 1.2e-66: the scaled solve converges, but x = b / A is 1.8e308,
    beyond float64, and scaled back it is inf. It was reported converged with x = inf (the
    fuzz test at 6,000 examples); the returned x is judged as returned."""
    a, b = np.array([[1.16813184e-66]]), np.array([2.09994259e242])
    with pytest.warns(gk.ConvergenceWarning, match="range: the solve of b scaled"):
        x, info = SOLVE[method](gk.asarray(a), gk.asarray(b))
    assert not info.converged and info.reason in REASONS and info.reason.startswith("range")
    assert info.residual_norm == math.inf and np.isinf(gk.to_numpy(x)).all()


@pytest.mark.parametrize("method", METHODS)
def test_a_subnormal_solution_is_judged_as_returned(backend, rng, method):
    """x ~ 1e-310 (b of 1e-300 against A of 1e10): scaled back, x is subnormal and loses
    digits; the reported residual is the returned x's own, within the tolerance or not."""
    a = _poisson("float64", 1e10)
    b = rng.standard_normal(a.shape[0]) * 1e-300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gk.ConvergenceWarning)
        x, info = SOLVE[method](gk.asarray(a), gk.asarray(b))
    x64 = np.ldexp(gk.to_numpy(x).astype(np.float64), 1000)  # exact: back in range
    true = np.linalg.norm(np.ldexp(b, 1000) - a @ x64) / 2.0**1000
    assert info.residual_norm == pytest.approx(true, rel=1e-3, abs=1e-3 * info.tolerance)
    assert info.converged == (info.residual_norm <= info.tolerance)


@pytest.mark.parametrize("method", METHODS)
def test_a_deep_subnormal_b_gets_a_tolerance_it_can_meet(backend, rng, method):
    """b of 1e-320 (float64, about 4 significant bits): rtol * ||b|| underflowed to 0, no
    residual met it, and every method ran to "maxiter reached" (or a breakdown) with a
    message of "0.000e+00 > tolerance 0.000e+00". The tolerance is now formed at the
    solved system's scale: the scaled solve converges, and the subnormal x it returns is
    judged as returned -- here it misses, with the reason "range"."""
    a = _poisson("float64")
    b = rng.standard_normal(a.shape[0]) * 1e-320
    with pytest.warns(gk.ConvergenceWarning, match="range: the solve of b scaled"):
        x, info = SOLVE[method](gk.asarray(a), gk.asarray(b))
    assert not info.converged and info.reason.startswith("range")
    assert info.iterations < a.shape[0]  # the scaled solve converged: no maxiter
    b_up, x_up = np.ldexp(b, 1070), np.ldexp(gk.to_numpy(x), 1070)  # exact: back in range
    assert np.linalg.norm(b_up - a @ x_up) > 1e-5 * np.linalg.norm(b_up)  # the miss is real


@pytest.mark.parametrize("method", METHODS)
def test_a_scaled_solve_reports_atol_as_given(backend, rng, method):
    """b of 1e-300 is solved scaled by 2**996; atol = 1e300 scaled alike overflows, and the
    reported tolerance came back inf. It is atol, met at once by x = 0."""
    a = _poisson("float64")
    b = rng.standard_normal(a.shape[0]) * 1e-300
    x, info = SOLVE[method](gk.asarray(a), gk.asarray(b), atol=1e300)
    assert info.converged and info.tolerance == 1e300 and info.iterations == 0
    assert info.residual_norm == pytest.approx(np.linalg.norm(b), rel=1e-12)
    assert not gk.to_numpy(x).any()
