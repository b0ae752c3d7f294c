"""CuPy linear algebra: cuSOLVER through cupy.linalg and cupyx.lapack.

CuPy ignores cuSOLVER's ``devInfo`` by default (a singular or indefinite matrix gives
NaN or garbage silently). Where only ``devInfo`` tells a failure (Cholesky, the eigen and
singular value iterations) the call runs under ``cupyx.errstate(linalg="raise")``, so the
failure surfaces as ``numpy.linalg.LinAlgError``, which the front-end turns into
``gk.LinAlgError`` with the same message as on the CPU; CuPy reads ``devInfo`` back for it
(a device synchronisation). The LU solves and inverses do without: an exactly zero pivot
makes their result non-finite (a division by it), which the front-end's check of the
result reports, in the one read it makes of all its checks (:meth:`CupyLinalg.linalg_read`).
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

    def linalg_read(self, flags: list[Any]) -> list[Any]:
        if len(flags) == 1:
            return [flags[0].item()]
        return self.xp.stack(flags).get().tolist()  # one kernel and one read for all

    def linalg_solve(self, a: Any, b: Any, assume_a: str) -> Any:
        if assume_a != "pos":  # LU: a zero pivot shows in x
            return super().linalg_solve(a, b, assume_a)
        import cupyx.lapack

        if a.ndim > 2:
            # The batched posv copies a in C order and asks cuSOLVER (column
            # major) for the LOWER triangle: it reads a's *upper* triangle
            # (cupyx/lapack.py, _batched_posv), the 2-D one a's lower. The
            # contract is the lower one: hand it conj(a.T), whose upper it is.
            a = a.swapaxes(-1, -2).conj()
        with _raising():
            return cupyx.lapack.posv(a, b)

    def linalg_solve_rcond(self, a: Any, b: Any, assume_a: str) -> tuple[Any, Any]:
        """cuSOLVER has no xGECON: rcond comes from the factors already made for the
        solve, exact from the inverse up to :data:`EXACT_RCOND_MAX`, estimated as LAPACK
        does above it (a stack keeps the exact rcond from the inverse)."""
        if a.ndim != 2:
            return super().linalg_solve_rcond(a, b, assume_a)
        import cupyx.scipy.linalg

        xp = self.xp
        n = a.shape[0]
        pos = assume_a == "pos"
        anorm = hermitian_norm1(xp, a) if pos else xp.abs(a).sum(axis=0).max()
        if n <= EXACT_RCOND_MAX:  # rcond stays on the device: one read, the caller's
            # x and the inverse from one solve of [I | b]: one factorisation and no
            # devInfo read of the LU (a zero pivot leaves inf or NaN in x)
            rhs = xp.concatenate((xp.eye(n, dtype=a.dtype), b.reshape(n, -1)), axis=1)
            if pos:  # a's lower triangle, as posv
                both = self.linalg_cho_solve(self.linalg_cholesky(a), rhs)
            else:
                both = xp.linalg.solve(a, rhs)
            x = both[:, n:].reshape(b.shape)
            return x, 1 / (anorm * xp.abs(both[:, :n]).sum(axis=0).max())
        with _raising():
            if pos:
                c = self.linalg_cholesky(a)  # reads a's lower triangle, as posv

                def solve(v: Any, adjoint: bool) -> Any:
                    return self.linalg_cho_solve(c, v)  # inv(A) is Hermitian

            else:
                lu = cupyx.scipy.linalg.lu_factor(a, check_finite=False)
                adjoint_op = 2 if a.dtype.kind == "c" else 1

                def solve(v: Any, adjoint: bool) -> Any:
                    trans = adjoint_op if adjoint else 0
                    return cupyx.scipy.linalg.lu_solve(lu, v, trans=trans, check_finite=False)

            # at an exactly zero pivot lu_factor warns (CuPy's RuntimeWarning) and x holds
            # inf or NaN, which the front-end reports as LinAlgError
            x = solve(b, False)

            def host_solve(v: np.ndarray, adjoint: bool) -> np.ndarray:
                return xp.asnumpy(solve(xp.asarray(v.astype(a.dtype)), adjoint))

            inverse = norm1_inverse_estimate(host_solve, n)
        return x, 1 / (anorm * inverse)

    def linalg_cholesky(self, a: Any) -> Any:
        with _raising():
            return super().linalg_cholesky(a)

    def linalg_cho_solve(self, c: Any, b: Any) -> Any:
        import cupy
        import cupyx.lapack

        # potrs solves in b's memory when b already has its layout (a vector, an
        # F-ordered matrix, a C-ordered batch): copy so the caller's b is never written.
        b = cupy.array(b, order="F" if c.ndim == 2 else "C")
        # potrs's devInfo reports only invalid arguments: a zero on the factor's diagonal
        # shows in x, as the LU's zero pivot
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
