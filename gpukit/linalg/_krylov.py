"""Krylov loops written once against an array namespace ``xp`` (NumPy or CuPy).

Each loop takes ``matvec`` and ``psolve`` (``v -> M @ v``, or None) as callables,
works on preallocated buffers with in-place updates, and returns a :class:`Outcome`.
``cg``, ``bicgstab`` and ``minres`` touch their vectors only through ``xp.vdot``,
``xp.multiply``/``xp.add``/``xp.subtract`` (with ``out=``), ``xp.empty_like``,
``xp.zeros_like`` and ``v.copy()``: ``xp`` is the *vector space*, an array module for
native arrays or a :class:`gpukit.linalg._sharded.ShardedSpace` for row-sharded
vectors, so each loop is written once for both. A space may also provide fused
``axpy``/``xpay`` (one pass per device instead of two).
Scalars come to the host once each (``.item()``): on a GPU that is one small
synchronisation per reduction, as in ``cupyx.scipy.sparse.linalg``. Stopping rule
everywhere: ``||r|| <= tol`` with ``tol = max(rtol * ||b||, atol)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Op = Callable[[Any], Any]


@dataclass
class Outcome:
    """What a loop hands back to the front-end."""

    x: Any
    iterations: int
    converged: bool
    reason: str


def _dot(xp: Any, a: Any, b: Any) -> Any:
    return xp.vdot(a, b).item()


def _norm(xp: Any, a: Any) -> float:
    return math.sqrt(abs(xp.vdot(a, a).item()))


def _axpy(xp: Any, alpha: Any, x: Any, y: Any, tmp: Any) -> None:
    """y += alpha * x without allocating (tmp is scratch of y's shape)."""
    fused = getattr(xp, "axpy", None)  # a vector space may do it in one pass
    if fused is not None:
        fused(alpha, x, y)
        return
    xp.multiply(x, alpha, out=tmp)
    xp.add(y, tmp, out=y)


def _xpay(xp: Any, x: Any, beta: Any, y: Any) -> None:
    """y = x + beta * y in place."""
    fused = getattr(xp, "xpay", None)
    if fused is not None:
        fused(x, beta, y)
        return
    xp.multiply(y, beta, out=y)
    xp.add(y, x, out=y)


def _residual(xp: Any, matvec: Op, b: Any, x: Any) -> Any:
    r = matvec(x)
    xp.subtract(b, r, out=r)
    return r


def cg(
    xp: Any, matvec: Op, psolve: Op | None, b: Any, x: Any, tol: float, maxiter: int, callback
) -> Outcome:
    """Preconditioned conjugate gradients (A Hermitian positive definite)."""
    r = _residual(xp, matvec, b, x)
    rr = _norm(xp, r) ** 2
    if math.sqrt(rr) <= tol:
        return Outcome(x, 0, True, "converged")
    z = r if psolve is None else psolve(r)
    rho = rr if psolve is None else _dot(xp, r, z).real
    p = z.copy()
    tmp = xp.empty_like(x)
    for k in range(1, maxiter + 1):
        q = matvec(p)
        pq = _dot(xp, p, q).real
        if not pq > 0:
            return Outcome(x, k - 1, False, "breakdown: A is not positive definite (p^H A p <= 0)")
        alpha = rho / pq
        _axpy(xp, alpha, p, x, tmp)
        _axpy(xp, -alpha, q, r, tmp)
        rr = _dot(xp, r, r).real
        if callback is not None:
            callback(x)
        if math.sqrt(rr) <= tol:
            return Outcome(x, k, True, "converged")
        if not math.isfinite(rr):
            return Outcome(x, k, False, "breakdown: non-finite residual")
        if psolve is None:
            rho_new = rr
        else:
            z = psolve(r)
            rho_new = _dot(xp, r, z).real
        _xpay(xp, z, rho_new / rho, p)
        rho = rho_new
    return Outcome(x, maxiter, False, "maxiter reached")


def bicgstab(
    xp: Any, matvec: Op, psolve: Op | None, b: Any, x: Any, tol: float, maxiter: int, callback
) -> Outcome:
    """Right-preconditioned BiCGSTAB (general non-singular A)."""
    ident = psolve or (lambda v: v)
    r = _residual(xp, matvec, b, x)
    if _norm(xp, r) <= tol:
        return Outcome(x, 0, True, "converged")
    rhat = r.copy()
    p = r.copy()
    v = xp.zeros_like(r)
    tmp = xp.empty_like(r)
    rho = alpha = omega = 1.0
    for k in range(1, maxiter + 1):
        rho_new = _dot(xp, rhat, r)
        if rho_new == 0:
            return Outcome(x, k - 1, False, "breakdown: rho = 0")
        if k > 1:
            beta = (rho_new / rho) * (alpha / omega)
            _axpy(xp, -omega, v, p, tmp)  # p = r + beta * (p - omega v)
            _xpay(xp, r, beta, p)
        rho = rho_new
        phat = ident(p)
        v = matvec(phat)
        rv = _dot(xp, rhat, v)
        if rv == 0:
            return Outcome(x, k - 1, False, "breakdown: rhat^H A p = 0")
        alpha = rho / rv
        _axpy(xp, -alpha, v, r, tmp)  # r now holds s
        if _norm(xp, r) <= tol:
            _axpy(xp, alpha, phat, x, tmp)
            if callback is not None:
                callback(x)
            return Outcome(x, k, True, "converged")
        shat = ident(r)
        t = matvec(shat)
        tt = _dot(xp, t, t).real
        omega = _dot(xp, t, r) / tt if tt > 0 else 0.0
        _axpy(xp, alpha, phat, x, tmp)
        _axpy(xp, omega, shat, x, tmp)
        _axpy(xp, -omega, t, r, tmp)
        rn = _norm(xp, r)
        if callback is not None:
            callback(x)
        if rn <= tol:
            return Outcome(x, k, True, "converged")
        if omega == 0 or not math.isfinite(rn):
            return Outcome(x, k, False, "breakdown: omega = 0 or non-finite residual")
    return Outcome(x, maxiter, False, "maxiter reached")


def gmres(
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    tol: float,
    maxiter: int,
    callback,
    restart: int,
    to_host: Callable[[Any], np.ndarray],
) -> Outcome:
    """Restarted, right-preconditioned GMRES; ``maxiter`` counts inner iterations.

    Arnoldi uses classical Gram-Schmidt applied twice (two matrix-vector products
    with the basis, GPU friendly); the small Hessenberg least-squares problem is
    solved on the host with Givens rotations.
    """
    ident = psolve or (lambda v: v)
    n = b.shape[0]
    m = max(1, min(restart, n))
    V = xp.empty((m + 1, n), dtype=x.dtype)
    hdtype = np.complex128 if x.dtype.kind == "c" else np.float64
    it = 0
    while True:
        r = _residual(xp, matvec, b, x)
        beta = _norm(xp, r)
        if beta <= tol:
            return Outcome(x, it, True, "converged")
        if it >= maxiter:
            return Outcome(x, it, False, "maxiter reached")
        xp.multiply(r, 1.0 / beta, out=V[0])
        H = np.zeros((m + 1, m), dtype=hdtype)
        cs = np.zeros(m, dtype=H.dtype)
        sn = np.zeros(m, dtype=H.dtype)
        g = np.zeros(m + 1, dtype=H.dtype)
        g[0] = beta
        j = 0
        for j in range(m):
            w = matvec(ident(V[j]))
            basis = V[: j + 1]
            h = basis.conj() @ w
            w -= basis.T @ h
            h2 = basis.conj() @ w  # second pass: re-orthogonalise
            w -= basis.T @ h2
            col = to_host(h + h2).astype(H.dtype)
            hn = _norm(xp, w)
            for i in range(j):  # previous rotations
                col[i], col[i + 1] = (
                    cs[i] * col[i] + sn[i] * col[i + 1],
                    -np.conj(sn[i]) * col[i] + cs[i] * col[i + 1],
                )
            denom = math.hypot(abs(col[j]), hn)
            cs[j] = abs(col[j]) / denom if denom else 1.0
            sn[j] = (col[j] / abs(col[j]) * hn / denom if col[j] != 0 else 1.0) if denom else 0
            col_j = cs[j] * col[j] + sn[j] * hn
            H[: j + 1, j] = col[: j + 1]
            H[j, j] = col_j
            g[j + 1] = -np.conj(sn[j]) * g[j]
            g[j] = cs[j] * g[j]
            it += 1
            if hn > 0:
                xp.multiply(w, 1.0 / hn, out=V[j + 1])
            if abs(g[j + 1]) <= tol or it >= maxiter or hn == 0:
                break
        k = j + 1
        y = _upper_solve(H[:k, :k], g[:k])
        update = V[:k].T @ xp.asarray(y.astype(x.dtype, copy=False))
        x += ident(update)
        if callback is not None:
            callback(x)


def _upper_solve(R: np.ndarray, g: np.ndarray) -> np.ndarray:
    y = np.zeros_like(g)
    for i in range(len(g) - 1, -1, -1):
        y[i] = (g[i] - R[i, i + 1 :] @ y[i + 1 :]) / R[i, i] if R[i, i] != 0 else 0
    return y


def minres(
    xp: Any, matvec: Op, psolve: Op | None, b: Any, x: Any, tol: float, maxiter: int, callback
) -> Outcome:
    """Preconditioned MINRES (Paige-Saunders) for Hermitian, possibly indefinite A.

    The stopping test uses the recurrence's residual norm, which is ``||r||_2``
    without a preconditioner and ``||r||`` in the ``M`` norm with one.
    """
    ident = psolve or (lambda v: v)
    r1 = _residual(xp, matvec, b, x)
    y = ident(r1)
    beta1 = _dot(xp, r1, y).real
    if beta1 < 0:
        return Outcome(x, 0, False, "breakdown: M is not positive definite")
    beta1 = math.sqrt(beta1)
    if beta1 <= tol:
        return Outcome(x, 0, True, "converged")
    r2 = r1.copy()
    w = xp.zeros_like(x)
    w1 = xp.zeros_like(x)
    w2 = xp.zeros_like(x)
    v = xp.empty_like(x)
    tmp = xp.empty_like(x)
    oldb, beta, dbar, epsln, phibar = 0.0, beta1, 0.0, 0.0, beta1
    cs, sn = -1.0, 0.0
    eps = float(np.finfo(x.dtype).eps)
    for k in range(1, maxiter + 1):
        xp.multiply(y, 1.0 / beta, out=v)
        y = matvec(v)
        if k >= 2:
            _axpy(xp, -beta / oldb, r1, y, tmp)
        alfa = _dot(xp, v, y).real
        _axpy(xp, -alfa / beta, r2, y, tmp)
        r1, r2 = r2, y
        y = ident(r2)
        oldb = beta
        beta2 = _dot(xp, r2, y).real
        if beta2 < 0:
            return Outcome(x, k, False, "breakdown: M is not positive definite")
        beta = math.sqrt(beta2)
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        gamma = max(math.hypot(gbar, beta), eps)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        # w = (v - oldeps * w1 - delta * w2) / gamma, rotating the three buffers
        w1, w2, w = w2, w, w1
        xp.multiply(w1, -oldeps, out=w)
        _axpy(xp, -delta, w2, w, tmp)
        xp.add(w, v, out=w)
        xp.multiply(w, 1.0 / gamma, out=w)
        _axpy(xp, phi, w, x, tmp)
        if callback is not None:
            callback(x)
        if phibar <= tol:
            return Outcome(x, k, True, "converged")
        if not math.isfinite(phibar):
            return Outcome(x, k, False, "breakdown: non-finite residual")
    return Outcome(x, maxiter, False, "maxiter reached")
