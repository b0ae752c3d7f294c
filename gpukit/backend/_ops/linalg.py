"""Linear-algebra defaults of :class:`gpukit.backend.Backend`, written against ``self.xp``.

The front-end (:mod:`gpukit.linalg`) has validated shapes and turns library errors and
non-finite results into :class:`gpukit.LinAlgError`; these methods only translate.
A backend overrides what its library does faster (Cholesky solves, sparse matrices).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

#: Why a Krylov loop stops, by the codes a device space's fused steps write (1-based in
#: this order; 0 while the loop runs). ``gpukit.linalg._krylov`` maps them to the reasons
#: of ``IterativeInfo``.
KRYLOV_STOPS = (
    "converged",
    "nonfinite",
    "cg_indefinite",
    "m_indefinite",
    "bicgstab_rho",
    "bicgstab_rv",
    "bicgstab_omega",
    "minres_singular",
)


class LinalgOps:
    """Dense solvers and the operator forms the Krylov solvers accept."""

    xp: Any

    # -- dense ----------------------------------------------------------------------------
    def linalg_solve(self, a: Any, b: Any, assume_a: str) -> Any:
        """Solve ``a @ x = b`` (numpy.linalg.solve batching); ``assume_a`` is a hint."""
        if assume_a == "pos":
            return self.linalg_cho_solve(self.linalg_cholesky(a), b)
        return self.xp.linalg.solve(a, b)

    def linalg_solve_rcond(self, a: Any, b: Any, assume_a: str) -> tuple[Any, Any]:
        """``(x, rcond)``: :meth:`linalg_solve` and the reciprocal 1-norm condition number
        of each matrix (shape ``a.shape[:-2]``; a Python float may stand for one host
        matrix's), for SciPy's ill-conditioning warning.

        ``"pos"`` means the Hermitian matrix whose lower triangle ``a`` holds. Here rcond
        is exact, from the inverse (about twice the cost of the solve); a backend with
        LAPACK's estimators (``xGECON``/``xPOCON``, as SciPy) overrides this.
        """
        x = self.linalg_solve(a, b, assume_a)
        xp = self.xp
        if assume_a == "pos":  # the Hermitian matrix itself (LAPACK: real diagonal)
            strict = xp.tril(a, -1)
            d = xp.real(xp.diagonal(a, axis1=-2, axis2=-1))
            eye = xp.eye(a.shape[-1], dtype=a.dtype)
            a = strict + xp.conj(xp.swapaxes(strict, -1, -2)) + eye * d[..., None, :]
        try:
            inverse = self.linalg_inv(a)
        except np.linalg.LinAlgError:  # singular to working precision
            return x, xp.zeros(a.shape[:-2], dtype=np.finfo(a.dtype).dtype)
        return x, 1 / (_norm1(xp, a) * _norm1(xp, inverse))

    def linalg_solve_plan(
        self, assume_a: str, shape: tuple[int, ...], rhs_shape: tuple[int, ...], dtype: Any
    ) -> Callable[[Any, Any], tuple[Any, Any]]:
        """:meth:`linalg_solve_rcond` of a matrix of ``shape`` and right-hand sides of
        ``rhs_shape`` (both non-empty, of ``dtype``), as a function of the two arrays.

        The front-end keeps it in its plan for the next call with the same key, so a
        backend may settle here, once, what depends only on these arguments (which
        library routines to call); the arrays' layout may differ from call to call.
        """
        return lambda a, b: self.linalg_solve_rcond(a, b, assume_a)

    def linalg_solve_plan_screened(
        self, assume_a: str, shape: tuple[int, ...], rhs_shape: tuple[int, ...], dtype: Any
    ) -> Callable[[Any, Any], tuple[Any, Any]]:
        """:meth:`linalg_solve_plan`'s function, which first refuses an ``a`` holding NaN
        or inf with ``numpy.linalg.LinAlgError``, solving nothing.

        That is SciPy's ``check_finite`` of ``a``, which the front-end leaves to this
        function, so that a backend may make it where it reads ``a`` anyway (LAPACK's
        norm for the condition estimate). Here it is :meth:`linalg_all_finite`, then the
        plan's function.
        """
        solve = self.linalg_solve_plan(assume_a, shape, rhs_shape, dtype)

        def screened(a: Any, b: Any) -> tuple[Any, Any]:
            if not self.linalg_all_finite(a):
                raise np.linalg.LinAlgError("matrix holds NaN or inf")
            return solve(a, b)

        return screened

    def linalg_lstsq(self, a: Any, b: Any, rcond: float | None) -> tuple[Any, Any, int, Any]:
        """Least squares as ``numpy.linalg.lstsq``: (x, residuals, rank, singular values)."""
        return self.xp.linalg.lstsq(a, b, rcond=rcond)

    def linalg_inv(self, a: Any) -> Any:
        return self.xp.linalg.inv(a)

    def linalg_det(self, a: Any) -> Any:
        return self.xp.linalg.det(a)

    def linalg_slogdet(self, a: Any) -> tuple[Any, Any]:
        """``(sign, logabsdet)``: the library's pair as it comes (NumPy's named tuple)."""
        return self.xp.linalg.slogdet(a)

    def linalg_cholesky(self, a: Any) -> Any:
        """Lower Cholesky factor of a (batched) Hermitian positive-definite matrix."""
        return self.xp.linalg.cholesky(a)

    def linalg_cho_solve(self, c: Any, b: Any) -> Any:
        """Solve ``(c @ c^H) x = b`` from the lower factor in the lower triangle of ``c``
        (its upper triangle is not read); ``b`` is a vector only if 1-D."""
        xp = self.xp
        c = xp.tril(c)
        ch = xp.conj(xp.swapaxes(c, -1, -2))
        return xp.linalg.solve(ch, xp.linalg.solve(c, b))

    def linalg_qr(self, a: Any, mode: str) -> Any:
        return self.xp.linalg.qr(a, mode=mode)

    def linalg_eigh(self, a: Any, uplo: str) -> tuple[Any, Any]:
        """``(eigenvalues, eigenvectors)``: the library's pair as it comes (NumPy's named
        tuple)."""
        return self.xp.linalg.eigh(a, UPLO=uplo)

    def linalg_svd(self, a: Any, full_matrices: bool, compute_uv: bool) -> Any:
        return self.xp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)

    def linalg_norm(self, x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:
        return self.xp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)

    def linalg_norm_quiet(self, x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:
        """:meth:`linalg_norm` where a power that overflows is not reported (no NumPy
        overflow warning): the front-end recomputes a norm that came out 0 or inf."""
        with np.errstate(over="ignore"):
            return self.linalg_norm(x, ord, axis, keepdims)

    def linalg_all_finite(self, x: Any) -> bool:
        """Whether every entry of ``x`` is finite (a device sync on GPUs)."""
        return bool(self.xp.isfinite(x).all())

    # -- checks a device makes before it reads them, all at once ---------------------------
    def linalg_finite_flag(self, x: Any) -> Any:
        """Whether every entry of ``x`` is finite, as a 0-d boolean array not read yet
        (:meth:`linalg_read`): a device backend computes a call's checks where its data
        is and reads them together."""
        return self.xp.isfinite(x).all()

    def linalg_read(self, flags: list[Any]) -> list[Any]:
        """The 0-d arrays ``flags`` as Python scalars, in order (a device backend brings
        them over in one read)."""
        return [f.item() for f in flags]

    def linalg_screened(self, x: Any, finite: Any) -> Any:
        """``x`` where the unread flag ``finite`` (:meth:`linalg_finite_flag` of ``x``)
        holds, else zeros of its shape: what a library is given before the check is read,
        so that it never sees the NaN or inf ``check_finite`` refuses (the call's result
        is then discarded)."""
        return self.xp.where(finite, x, x.dtype.type(0))

    # -- operators for the Krylov solvers ---------------------------------------------------
    def linalg_is_sparse(self, a: Any) -> bool:
        """Whether ``a`` is this backend's sparse matrix type (SciPy's on host backends)."""
        return not getattr(self, "is_device", False) and _scipy_sparse().issparse(a)

    def linalg_to_sparse(self, a: Any) -> Any:
        """A host ``scipy.sparse`` CSR matrix as this backend's sparse matrix."""
        return a

    def sparse_csr_matrix(self, arg1: Any, shape: Any, dtype: Any, copy: bool) -> Any:
        """``csr_matrix(arg1, shape, dtype, copy)`` of this backend's sparse module."""
        # by position: keywords cost SciPy's constructor more than its work on a small matrix
        return _scipy_sparse().csr_matrix(arg1, shape, dtype, copy)

    def krylov_space(self, dtype: np.dtype) -> Any:
        """The vector space the Krylov loops of ``gk.linalg`` run in for ``dtype`` vectors.

        ``self.xp`` by default. A backend may return an object that behaves as ``self.xp``
        and adds any of ``axpy(alpha, x, y)`` (``y += alpha * x`` in place),
        ``xpay(x, beta, y)`` (``y = x + beta * y`` in place) and ``scalar_dot(a, b)``
        (``vdot`` as a Python scalar): fused in one pass, without temporaries; and
        ``krylov_steps(method)``: a class implementing the steps of the loop ``method``
        (the protocol of ``gpukit.linalg._krylov.HostSteps`` and its subclasses), or None
        for the host's, so that a device keeps the scalars and the tests that end a loop
        on the device and reports a stop as a code of :data:`KRYLOV_STOPS`.
        """
        return self.xp

    def linalg_matvec(self, a: Any) -> Callable[[Any], Any]:
        """``v -> a @ v`` for a dense array, a sparse matrix or a LinearOperator."""
        matvec = getattr(a, "matvec", None)
        if matvec is not None:  # scipy / cupyx LinearOperator
            return matvec
        return a.dot


@functools.cache
def _scipy_sparse() -> Any:
    """``scipy.sparse``, imported on first use (``import gpukit`` does not load it) and
    then without an import statement's look-ups on every call."""
    import scipy.sparse

    return scipy.sparse


def _norm1(xp: Any, a: Any) -> Any:
    """The 1-norm (largest absolute column sum) of each matrix of a stack."""
    return xp.abs(a).sum(axis=-2).max(axis=-1)


def hermitian_norm1(xp: Any, a: Any) -> Any:
    """The 1-norm of the Hermitian matrix whose lower triangle the 2-D ``a`` holds."""
    lower = xp.abs(xp.tril(a))
    return (lower.sum(axis=0) + xp.abs(xp.tril(a, -1)).sum(axis=1)).max()


def norm1_inverse_estimate(solve: Callable[[np.ndarray, bool], np.ndarray], n: int) -> float:
    """An estimate of ``||inv(A)||_1`` from ``solve(v, adjoint)`` (``inv(A) @ v``, or
    ``inv(A)^H @ v`` when ``adjoint``, host vectors in and out), as LAPACK's
    xGECON/xPOCON make one (xLACN2: Hager's method with Higham's refinements, Higham 1988,
    ACM TOMS 14(4)).

    A lower bound, almost always within a factor 3 and usually exact, for a few solves
    with the factors (O(n^2) each) where the exact norm needs the inverse (O(n^3)). The
    vectors between solves are host work: on a GPU each step is two solves and their
    copies, not a dozen small kernels and their launches.
    """
    x = np.full(n, 1.0 / n)
    est, last = 0.0, -1
    for step in range(5):  # xLACN2's ITMAX
        y = solve(x, False)
        norm_y = float(np.abs(y).sum())
        if step > 0 and not norm_y > est:  # no progress: the previous estimate stands
            break
        est = norm_y
        ay = np.abs(y)
        s = np.where(ay == 0, 1, y / np.where(ay == 0, 1, ay))  # sign(y), 1 at zeros
        z = solve(s, True)
        j = int(np.argmax(np.abs(z)))
        if abs(z[j]) <= np.real(np.vdot(z, x)) or j == last:  # a local maximum
            break
        last = j
        x = np.zeros(n)
        x[j] = 1.0
    # Higham's alternative: a vector of alternating signs catches what the steps miss
    i = np.arange(n)
    alt = (-1.0) ** i * (1 + i / max(n - 1, 1))
    return max(est, 2 * float(np.abs(solve(alt, False)).sum()) / (3 * n))
