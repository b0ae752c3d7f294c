"""CuPy linear algebra: cuSOLVER through cupy.linalg and cupyx.lapack.

CuPy ignores cuSOLVER's ``devInfo`` by default (a singular or indefinite matrix gives
NaN or garbage silently). Every call here runs under ``cupyx.errstate(linalg="raise")``
so the failure surfaces as ``numpy.linalg.LinAlgError``, which the front-end turns into
``gk.LinAlgError`` with the same message as on the CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpukit.backend._ops.linalg import LinalgOps, hermitian_norm1, norm1_inverse_estimate

#: Up to this order rcond is exact, from the inverse the factors give in one solve with
#: n right-hand sides: on a GPU that solve is parallel work, where the estimate's dozen
#: single-vector solves are each a chain of dependent steps and a host round trip.
#: Measured on an H200 (docs/benchmarks/2026-11-26-h200.md).
EXACT_RCOND_MAX = 2048


@contextlib.contextmanager
def _raising() -> Iterator[None]:
    import cupyx

    with cupyx.errstate(linalg="raise"):
        yield


class CupyLinalg(LinalgOps):
    """cupy.linalg with cuSOLVER errors raised; batched Cholesky solves via cupyx.lapack."""

    def krylov_space(self, dtype: Any) -> Any:
        from .krylov import DeviceSpace

        return DeviceSpace(self.xp, dtype)

    def linalg_solve(self, a: Any, b: Any, assume_a: str) -> Any:
        with _raising():
            if assume_a == "pos":
                import cupyx.lapack

                if a.ndim > 2:
                    # The batched posv copies a in C order and asks cuSOLVER (column
                    # major) for the LOWER triangle: it reads a's *upper* triangle
                    # (cupyx/lapack.py, _batched_posv), the 2-D one a's lower. The
                    # contract is the lower one: hand it conj(a.T), whose upper it is.
                    a = a.swapaxes(-1, -2).conj()
                return cupyx.lapack.posv(a, b)
            return super().linalg_solve(a, b, assume_a)

    def linalg_solve_rcond(self, a: Any, b: Any, assume_a: str) -> tuple[Any, Any]:
        """cuSOLVER has no xGECON: rcond comes from the factors already made for the
        solve, exact from the inverse up to :data:`EXACT_RCOND_MAX`, estimated as LAPACK
        does above it (a stack keeps the exact rcond from the inverse)."""
        if a.ndim != 2:
            return super().linalg_solve_rcond(a, b, assume_a)
        import cupyx.scipy.linalg

        xp = self.xp
        with _raising():
            if assume_a == "pos":
                anorm = hermitian_norm1(xp, a)
                c = self.linalg_cholesky(a)  # reads a's lower triangle, as posv

                def solve(v: Any, adjoint: bool) -> Any:
                    return self.linalg_cho_solve(c, v)  # inv(A) is Hermitian

            else:
                anorm = xp.abs(a).sum(axis=0).max()
                lu = cupyx.scipy.linalg.lu_factor(a, check_finite=False)
                adjoint_op = 2 if a.dtype.kind == "c" else 1

                def solve(v: Any, adjoint: bool) -> Any:
                    trans = adjoint_op if adjoint else 0
                    return cupyx.scipy.linalg.lu_solve(lu, v, trans=trans, check_finite=False)

            # at an exactly zero pivot lu_factor warns (CuPy's RuntimeWarning) and x holds
            # inf or NaN, which the front-end reports as LinAlgError
            x = solve(b, False)
            n = a.shape[0]
            if n <= EXACT_RCOND_MAX:  # rcond stays on the device: one read, the caller's
                inverse = solve(xp.eye(n, dtype=a.dtype), False)
                return x, 1 / (anorm * xp.abs(inverse).sum(axis=0).max())

            def host_solve(v: np.ndarray, adjoint: bool) -> np.ndarray:
                return xp.asnumpy(solve(xp.asarray(v.astype(a.dtype)), adjoint))

            inverse = norm1_inverse_estimate(host_solve, n)
        return x, 1 / (anorm * inverse)

    def linalg_inv(self, a: Any) -> Any:
        with _raising():
            return super().linalg_inv(a)

    def linalg_cholesky(self, a: Any) -> Any:
        with _raising():
            return super().linalg_cholesky(a)

    def linalg_cho_solve(self, c: Any, b: Any) -> Any:
        import cupy
        import cupyx.lapack

        # potrs solves in b's memory when b already has its layout (a vector, an
        # F-ordered matrix, a C-ordered batch): copy so the caller's b is never written.
        b = cupy.array(b, order="F" if c.ndim == 2 else "C")
        with _raising():
            return cupyx.lapack.potrs(c, b, lower=True)

    def linalg_lstsq(self, a: Any, b: Any, rcond: float | None) -> tuple[Any, Any, int, Any]:
        with _raising():
            return super().linalg_lstsq(a, b, rcond)

    def linalg_eigh(self, a: Any, uplo: str) -> tuple[Any, Any]:
        with _raising():
            return super().linalg_eigh(a, uplo)

    def linalg_svd(self, a: Any, full_matrices: bool, compute_uv: bool) -> Any:
        with _raising():
            return super().linalg_svd(a, full_matrices, compute_uv)

    def linalg_is_sparse(self, a: Any) -> bool:
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse.issparse(a)

    def linalg_to_sparse(self, a: Any) -> Any:
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse.csr_matrix(a)

    def sparse_csr_matrix(self, arg1: Any, shape: Any, dtype: Any, copy: bool) -> Any:
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse.csr_matrix(arg1, shape=shape, dtype=dtype, copy=copy)
