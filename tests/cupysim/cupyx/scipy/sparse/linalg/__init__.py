"""``cupyx.scipy.sparse.linalg`` (simulated): LinearOperator and the Krylov solvers."""

from __future__ import annotations

import cupy as _cupy
import numpy as _numpy


class LinearOperator:
    """A matrix-free operator: ``matvec`` applied to device vectors."""

    def __init__(self, shape, matvec, rmatvec=None, matmat=None, dtype=None, rmatmat=None):
        self.shape = tuple(shape)
        self.dtype = None if dtype is None else _numpy.dtype(dtype)
        self._matvec, self._rmatvec, self._matmat = matvec, rmatvec, matmat
        self.ndim = 2

    def matvec(self, x):
        y = self._matvec(x)
        return y.reshape(self.shape[0]) if x.ndim == 1 else y.reshape(self.shape[0], 1)

    def dot(self, x):
        if isinstance(x, LinearOperator):
            raise NotImplementedError
        if x.ndim == 1 or (x.ndim == 2 and x.shape[1] == 1):
            return self.matvec(x)
        if self._matmat is not None:
            return self._matmat(x)
        return _cupy.stack([self.matvec(c) for c in x.T], axis=1)

    def __matmul__(self, x):
        return self.dot(x)

    def __call__(self, x):
        return self.dot(x)


def aslinearoperator(A):
    if isinstance(A, LinearOperator):
        return A
    return LinearOperator(A.shape, matvec=lambda v: A @ v, dtype=A.dtype)


def cg(A, b, x0=None, *, rtol=1e-5, atol=None, maxiter=None, M=None, callback=None):
    """Conjugate gradient (the iteration cupyx/scipy/sparse/linalg/_iterative.py runs)."""
    A = aslinearoperator(A)
    n = A.shape[0]
    maxiter = 10 * n if maxiter is None else maxiter
    Mop = None if M is None else aslinearoperator(M)
    x = _cupy.zeros(n, dtype=b.dtype) if x0 is None else x0.astype(b.dtype, copy=True)
    bnrm = float(_cupy.linalg.norm(b))
    if bnrm == 0:
        return b, 0
    target = max(rtol * bnrm, 0.0 if atol is None else atol)
    r = b - A.matvec(x)
    z = r if Mop is None else Mop.matvec(r)
    p = z.copy()
    rho = _cupy.dot(r.conj(), z)
    for _ in range(maxiter):
        q = A.matvec(p)
        alpha = rho / _cupy.dot(p.conj(), q)
        x = x + alpha * p
        r = r - alpha * q
        if callback is not None:
            callback(x)
        if float(_cupy.linalg.norm(r)) <= target:
            return x, 0
        z = r if Mop is None else Mop.matvec(r)
        rho_new = _cupy.dot(r.conj(), z)
        p = z + (rho_new / rho) * p
        rho = rho_new
    return x, maxiter
