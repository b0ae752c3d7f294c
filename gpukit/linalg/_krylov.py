"""Krylov solvers written once against an array namespace ``xp`` (NumPy or CuPy).

:func:`run` is the driver: it owns the residual, judges convergence on the true residual
``||b - A x||`` and restarts a loop whose recurrence claimed convergence the true residual
does not confirm, or which broke down in a way a fresh start cures (BiCGSTAB's rho = 0,
on every backend and vector space alike). The loops (:func:`cg`, :func:`bicgstab`,
:func:`minres`, :func:`gmres`) take ``matvec`` and ``psolve`` (``v -> M @ v``, or None) as
callables and work on their own preallocated buffers with in-place updates.

Ownership rule: a loop writes only into buffers it allocated (and ``x``, the driver's copy
of ``x0``). An array returned by ``matvec`` or ``psolve`` is only read, and only until the
next call of the same operator: user operators may return their input (the identity), a
buffer they reuse on every call (``numpy.dot(A, v, out=buf)``), or ``b`` itself.

``cg``, ``bicgstab`` and ``minres`` touch their vectors only through ``xp.vdot``,
``xp.multiply``/``xp.add``/``xp.subtract`` (with ``out=``), ``xp.copyto``,
``xp.empty_like``, ``xp.zeros_like`` and ``v.copy()``: ``xp`` is the *vector space*, an
array module for native arrays or a :class:`gpukit.sharding._krylov.ShardedSpace` for
row-sharded vectors, so each loop is written once for both. A space may also provide fused
``axpy``/``xpay`` (one pass per device instead of two) and ``scalar_dot``: the backend's
``krylov_space`` gives them (BLAS-1 in place on the host, one ElementwiseKernel each on
CuPy), and the sharded space runs the backend's on every shard.
Scalars come to the host once each (``.item()``): on a GPU that is one small
synchronisation per reduction, as in ``cupyx.scipy.sparse.linalg``. Every scalar is
checked for NaN/inf, so a non-finite operator ends the solve with a reason rather than
iterating on NaN. Stopping rule everywhere: ``||r|| <= tol`` with
``tol = max(rtol * ||b||, atol)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Op = Callable[[Any], Any]

# The reasons an iteration ends (IterativeInfo.reason); docs/linalg.rst lists them.
CONVERGED = "converged"
MAXITER = "maxiter reached"
NONFINITE = "breakdown: NaN or inf (from A or M, or the iteration's products overflowed)"
CG_INDEFINITE = "breakdown: A is not positive definite (p^H A p <= 0)"
M_INDEFINITE = "breakdown: M is not positive definite (r^H M r <= 0)"
# How often a loop is restarted after a breakdown a fresh start cures (BiCGSTAB's rho = 0).
BREAKDOWN_RESTARTS = 10
BICGSTAB_RHO = (
    "breakdown: rho = 0 (the shadow residual is orthogonal to the residual, also after "
    f"{BREAKDOWN_RESTARTS} restarts with the residual as a fresh one)"
)
BICGSTAB_RV = "breakdown: rhat^H A p = 0"
BICGSTAB_OMEGA = "breakdown: omega = 0 (A s is orthogonal to s; the iteration stagnates)"
MINRES_SINGULAR = "breakdown: A is singular on the Krylov subspace (b may not be in its range)"
GMRES_STAGNATION = (
    "breakdown: the Krylov subspace is invariant and the residual did not decrease "
    "(A or M singular on it)"
)
STAGNATION = (
    "stagnation: the recurrence met the tolerance but the true residual did not, and "
    "restarting did not reduce it (rounding limits the attainable accuracy)"
)
RANGE = (
    "range: the solve of b scaled by a power of two converged, but its solution scaled back "
    "over- or underflows the dtype, and the solution as returned misses the tolerance"
)


@dataclass
class Outcome:
    """What a loop hands back to the driver.

    ``converged`` says the loop's own residual estimate met the tolerance (``estimate``
    is that estimate, when it did); ``residual`` is the true residual norm of ``x`` when
    the loop computed it (GMRES does at every restart), else None. ``restartable`` marks
    a breakdown of the loop's recurrence, not of the problem: started afresh from ``x``,
    the loop can go on.
    """

    x: Any
    iterations: int
    converged: bool
    reason: str
    residual: float | None = None
    estimate: float = 0.0
    restartable: bool = False


@dataclass
class Result:
    """The driver's verdict: ``converged`` is judged on ``residual``, the true one."""

    x: Any
    iterations: int
    converged: bool
    reason: str
    residual: float


def _dot(xp: Any, a: Any, b: Any) -> Any:
    dot = getattr(xp, "scalar_dot", None)  # a space may return the Python scalar itself
    return xp.vdot(a, b).item() if dot is None else dot(a, b)


def _norm(xp: Any, a: Any) -> float:
    """``||a||_2``. ``sqrt(a^H a)`` first; when that is 0 or inf, which the squares'
    underflow or overflow can cause (a float32 ``b = [1.2e-38]`` has ``b^H b = 0``, and
    the solve once reported ``x = 0`` as converged), the norm of ``a`` rescaled by its
    largest magnitude."""
    n = math.sqrt(abs(_dot(xp, a, a)))
    if 0.0 < n < math.inf or math.isnan(n) or a.shape[0] == 0:
        return n
    max_abs = getattr(xp, "max_abs", None)  # a space of distributed vectors provides it
    m = float(xp.abs(a).max()) if max_abs is None else max_abs(a)
    if m == 0.0 or not math.isfinite(m):
        return m
    e = math.frexp(m)[1]  # a * 2**-e has entries of at most 1
    t = xp.empty_like(a)
    xp.copyto(t, a)
    scale_by_power_of_two(xp, t, -e)
    try:
        return math.ldexp(math.sqrt(abs(_dot(xp, t, t))), e)
    except OverflowError:  # beyond float64 itself (two entries of 1.3e308)
        return math.inf


def scale_by_power_of_two(xp: Any, v: Any, e: int) -> None:
    """``v *= 2**e`` in place: exact (no rounding) while no entry under- or overflows,
    applied in factors of at most ``2**60`` so that each is representable in float32.
    An entry that overflows becomes inf without a NumPy warning: the callers judge the
    result (a solution scaled back to beyond the dtype is reported as such)."""
    with np.errstate(over="ignore"):
        while e:
            step = max(-60, min(60, e))
            xp.multiply(v, 2.0**step, out=v)
            e -= step


def balancing_exponent(bnorm: float, dtype: np.dtype) -> int:
    """The power of two ``e`` to solve ``A (x 2**-e) = b 2**-e`` with, so that ``||b||`` is
    about 1 in the loops; 0 when ``bnorm`` is already within ``2**±(k/4)`` of 1, ``k`` the
    dtype's exponent range (2**±32 for float32, 2**±256 for float64).

    Every quantity the loops form is a product of ``b``'s scale and ``A``'s: a float32
    ``b`` of norm 1e-20 has dot products of 1e-40 that flush to zero (CG then reported
    "A is not positive definite"), one of 1e20 overflowing ones ("NaN or inf"). Scaling by
    a power of two is exact, so a solve that needs no scaling gives the same bits scaled.
    """
    e = math.frexp(bnorm)[1]
    return e if abs(e) > np.finfo(dtype).maxexp // 4 else 0


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


def residual(xp: Any, matvec: Op, b: Any, x: Any, out: Any) -> Any:
    """``out = b - A x`` (``out`` is the caller's buffer; A's result is only read)."""
    xp.subtract(b, matvec(x), out=out)
    return out


def _finite(*values: Any) -> bool:
    return all(math.isfinite(abs(v)) for v in values)


def run(
    loop: Callable[..., Outcome],
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    x_is_zero: bool,
    tol: float,
    maxiter: int,
    callback: Callable[[Any], Any] | None,
    **extra: Any,
) -> Result:
    """Run ``loop`` from ``x`` until the *true* residual meets ``tol`` or it cannot.

    A loop's own residual (a recurrence, or the ``M`` norm in preconditioned MINRES) can
    meet the tolerance while ``b - A x`` does not. The loop is then restarted from ``x``
    with the true residual and its tolerance scaled by the ratio of its estimate to the
    true residual, halved (SciPy's GMRES adapts its inner tolerance the same way), for as
    long as the true residual decreases and iterations remain. A loop that breaks down
    in a way a fresh start cures (``Outcome.restartable``: BiCGSTAB's shadow residual
    orthogonal to its residual) is restarted from ``x`` too, at most
    ``BREAKDOWN_RESTARTS`` times. ``x`` is updated in place; ``x_is_zero`` skips the
    first mat-vec.
    """
    r = xp.empty_like(x)
    if x_is_zero:
        xp.copyto(r, b)
    else:  # A x0 may overflow (a huge x0): that is reported below, not warned about
        with np.errstate(over="ignore", invalid="ignore"):
            residual(xp, matvec, b, x, r)
    rnorm = _norm(xp, r)
    done = restarts = 0
    inner_tol = tol
    while True:
        if rnorm <= tol:
            return Result(x, done, True, CONVERGED, rnorm)
        if not math.isfinite(rnorm):
            return Result(x, done, False, NONFINITE, rnorm)
        if done >= maxiter:
            return Result(x, done, False, MAXITER, rnorm)
        out = loop(xp, matvec, psolve, b, x, r, rnorm, inner_tol, maxiter - done, callback, **extra)
        done += out.iterations
        if out.residual is None:
            previous, rnorm = rnorm, _norm(xp, residual(xp, matvec, b, x, r))
        else:
            previous, rnorm = math.inf, out.residual
        if rnorm <= tol:
            return Result(x, done, True, CONVERGED, rnorm)
        if out.restartable and restarts < BREAKDOWN_RESTARTS:
            restarts += 1
            continue
        if not out.converged:
            return Result(x, done, False, out.reason, rnorm)
        if not rnorm < previous:
            return Result(x, done, False, STAGNATION, rnorm)
        inner_tol = 0.5 * tol * out.estimate / rnorm


def cg(
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    r: Any,
    rnorm: float,
    tol: float,
    maxiter: int,
    callback: Callable[[Any], Any] | None,
) -> Outcome:
    """Preconditioned conjugate gradients (A and M Hermitian positive definite).

    ``r`` holds ``b - A x`` on entry (``rnorm`` its norm) and is updated in place.
    """
    # Products beyond the dtype (r of 1e200 from a huge x0) end the loop before they make
    # alpha NaN and x with it.
    if psolve is None:
        z, rho = r, rnorm * rnorm
        if not math.isfinite(rho):
            return Outcome(x, 0, False, NONFINITE)
    else:
        z = psolve(r)
        rho = _dot(xp, r, z).real
        if not 0 < rho < math.inf:
            return Outcome(x, 0, False, M_INDEFINITE if math.isfinite(rho) else NONFINITE)
    p = xp.empty_like(x)
    xp.copyto(p, z)
    tmp = xp.empty_like(x)
    for k in range(1, maxiter + 1):
        q = matvec(p)
        pq = _dot(xp, p, q).real
        if not 0 < pq < math.inf:
            return Outcome(x, k - 1, False, CG_INDEFINITE if math.isfinite(pq) else NONFINITE)
        alpha = rho / pq
        _axpy(xp, alpha, p, x, tmp)
        _axpy(xp, -alpha, q, r, tmp)
        rr = _dot(xp, r, r).real
        if callback is not None:
            callback(x)
        if math.sqrt(rr) <= tol:
            return Outcome(x, k, True, CONVERGED, estimate=math.sqrt(rr))
        if not math.isfinite(rr):
            return Outcome(x, k, False, NONFINITE)
        if psolve is None:
            rho_new = rr
        else:
            z = psolve(r)
            rho_new = _dot(xp, r, z).real
            if not 0 < rho_new < math.inf:
                reason = M_INDEFINITE if math.isfinite(rho_new) else NONFINITE
                return Outcome(x, k, False, reason)
        _xpay(xp, z, rho_new / rho, p)
        rho = rho_new
    return Outcome(x, maxiter, False, MAXITER)


def bicgstab(
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    r: Any,
    rnorm: float,
    tol: float,
    maxiter: int,
    callback: Callable[[Any], Any] | None,
) -> Outcome:
    """Right-preconditioned BiCGSTAB (general non-singular A).

    ``rho = rhat^H r`` counts as zero when it collapses to rounding level in one step:
    ``|rho| / (||rhat|| ||r||)`` at most ``2**10 eps`` and below ``sqrt(eps)`` times its
    previous value, or ``rho`` exactly 0. That is how a true breakdown looks in floating
    point (0 in exact arithmetic, computed as noise that lies above or below ``eps``
    depending on the BLAS kernels), while over a long solve the ratio also decays
    gradually, as ``r`` turns away from ``rhat``, and the iteration goes on converging
    (a float32 convection-diffusion solve restarted there fails where SciPy converges).
    ``rhat`` is the residual the loop starts from, so the breakdown is restartable: the
    driver starts the loop again from ``x``, whose true residual is the fresh ``rhat``
    (as in Eigen's BiCGSTAB). ``t^H s`` counts as zero when ``t`` and ``s`` are
    orthogonal to working precision.
    """
    eps = float(np.finfo(x.dtype).eps)
    rhat = r.copy()
    rhat_norm = rnorm
    p = r.copy()
    v = xp.zeros_like(r)
    tmp = xp.empty_like(r)
    rho_prev = alpha = omega = 1.0
    cos_prev = 1.0
    for k in range(1, maxiter + 1):
        rho = _dot(xp, rhat, r)
        if not _finite(rho):
            return Outcome(x, k - 1, False, NONFINITE)
        scale = rhat_norm * rnorm  # 0 only if it underflows: then only rho = 0 is judged
        cos = abs(rho) / scale if scale else 1.0
        if rho == 0 or (cos <= 2**10 * eps and cos <= math.sqrt(eps) * cos_prev):
            return Outcome(x, k - 1, False, BICGSTAB_RHO, restartable=True)
        cos_prev = cos
        if k > 1:
            beta = (rho / rho_prev) * (alpha / omega)
            _axpy(xp, -omega, v, p, tmp)  # p = r + beta * (p - omega v)
            _xpay(xp, r, beta, p)
        phat = p if psolve is None else psolve(p)
        xp.copyto(v, matvec(phat))  # v is needed after A's next call
        rv = _dot(xp, rhat, v)
        if not _finite(rv):
            return Outcome(x, k - 1, False, NONFINITE)
        if rv == 0:
            return Outcome(x, k - 1, False, BICGSTAB_RV)
        alpha = rho / rv
        _axpy(xp, alpha, phat, x, tmp)  # before M's next call may overwrite phat
        _axpy(xp, -alpha, v, r, tmp)  # r now holds s
        snorm = _norm(xp, r)
        if snorm <= tol or not math.isfinite(snorm):
            if callback is not None:
                callback(x)
            reason = CONVERGED if snorm <= tol else NONFINITE
            return Outcome(x, k, reason == CONVERGED, reason, estimate=snorm)
        shat = r if psolve is None else psolve(r)
        t = matvec(shat)
        tt = _dot(xp, t, t).real
        ts = _dot(xp, t, r)
        if not _finite(tt, ts):
            return Outcome(x, k, False, NONFINITE)
        # t^H s = 0 to working precision, or t^H t or omega underflowing to zero (the
        # scalars are Python floats: a zero divisor raises instead of giving inf)
        omega = ts / tt if tt else 0.0
        if omega == 0 or abs(ts) <= eps * math.sqrt(tt) * snorm:
            if callback is not None:
                callback(x)
            return Outcome(x, k, False, BICGSTAB_OMEGA)
        _axpy(xp, omega, shat, x, tmp)  # before r (which shat may be) changes
        _axpy(xp, -omega, t, r, tmp)
        rnorm = _norm(xp, r)
        if callback is not None:
            callback(x)
        if rnorm <= tol:
            return Outcome(x, k, True, CONVERGED, estimate=rnorm)
        if not math.isfinite(rnorm):
            return Outcome(x, k, False, NONFINITE)
        rho_prev = rho
    return Outcome(x, maxiter, False, MAXITER)


def minres(
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    r: Any,
    rnorm: float,
    tol: float,
    maxiter: int,
    callback: Callable[[Any], Any] | None,
) -> Outcome:
    """Preconditioned MINRES (Paige-Saunders) for Hermitian, possibly indefinite A.

    The recurrence's residual is ``||r||_2`` without a preconditioner and ``||r||`` in
    the ``M`` norm with one; the driver checks the true 2-norm residual at exit.
    A singular tridiagonal (``gamma = 0``: the Krylov subspace is invariant and A is
    singular on it) is a breakdown, never a "converged" with the clamped rotation.
    """
    if psolve is None:
        y, beta1 = r, rnorm
    else:
        y = psolve(r)
        beta1 = _dot(xp, r, y).real
        if not beta1 > 0:
            return Outcome(x, 0, False, M_INDEFINITE if math.isfinite(beta1) else NONFINITE)
        beta1 = math.sqrt(beta1)
    r1 = xp.empty_like(x)  # the Lanczos vectors: r1, r2 and the next one, rotated
    r2 = r
    nxt = xp.empty_like(x)
    w = xp.zeros_like(x)
    w1 = xp.zeros_like(x)
    w2 = xp.zeros_like(x)
    v = xp.empty_like(x)
    tmp = xp.empty_like(x)
    oldb, beta, dbar, epsln, phibar, tnorm2 = 0.0, beta1, 0.0, 0.0, beta1, 0.0
    cs, sn = -1.0, 0.0
    eps = float(np.finfo(x.dtype).eps)
    for k in range(1, maxiter + 1):
        xp.multiply(y, 1.0 / beta, out=v)
        av = matvec(v)
        if k >= 2:
            xp.multiply(r1, -beta / oldb, out=nxt)
            xp.add(nxt, av, out=nxt)
        else:
            xp.copyto(nxt, av)
        alfa = _dot(xp, v, nxt).real
        _axpy(xp, -alfa / beta, r2, nxt, tmp)
        r1, r2, nxt = r2, nxt, r1
        y = r2 if psolve is None else psolve(r2)
        oldb = beta
        beta2 = _dot(xp, r2, y).real
        if not _finite(alfa, beta2):
            return Outcome(x, k - 1, False, NONFINITE)
        if beta2 < 0:
            return Outcome(x, k - 1, False, M_INDEFINITE)
        beta = math.sqrt(beta2)
        # ||T||_F^2 of the Lanczos tridiagonal: the first oldb is ||b|| (in M's norm), not
        # an entry of T; counted, a b large against A (||b|| / ||A|| > 1/eps) made every
        # gamma look negligible, and the solve called a well-conditioned A singular
        tnorm2 += alfa * alfa + beta2 + (oldb * oldb if k >= 2 else 0.0)
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        gamma = math.hypot(gbar, beta)
        if gamma <= eps * math.sqrt(tnorm2):
            return Outcome(x, k - 1, False, MINRES_SINGULAR)
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
        if phibar <= tol or beta == 0:  # beta = 0: the Krylov subspace is exhausted
            return Outcome(x, k, True, CONVERGED, estimate=phibar)
    return Outcome(x, maxiter, False, MAXITER)


def gmres(
    xp: Any,
    matvec: Op,
    psolve: Op | None,
    b: Any,
    x: Any,
    r: Any,
    rnorm: float,
    tol: float,
    maxiter: int,
    callback: Callable[[Any], Any] | None,
    restart: int,
    to_host: Callable[[Any], np.ndarray],
) -> Outcome:
    """Restarted, right-preconditioned GMRES; ``maxiter`` counts inner iterations.

    Arnoldi uses classical Gram-Schmidt applied twice (two matrix-vector products with
    the basis, GPU friendly); the small Hessenberg problem is reduced on the host with
    Givens rotations. As in SciPy, a new basis vector whose norm falls below ``eps``
    times its norm before orthogonalisation ends the cycle (an invariant subspace:
    breakdown); the small least-squares problem is then solved by SVD with a relative
    cut-off, so a tiny pivot (a rank-deficient ``A M`` on the subspace) is dropped
    rather than amplified. The true residual is recomputed at every restart.
    """
    n = b.shape[0]
    m = max(1, min(restart, n))
    V = xp.empty((m + 1, n), dtype=x.dtype)
    hdtype = np.complex128 if x.dtype.kind == "c" else np.float64
    eps = float(np.finfo(x.dtype).eps)
    it = 0
    while True:
        beta = rnorm  # r holds the true residual b - A x, beta > tol
        xp.multiply(r, 1.0 / beta, out=V[0])
        R = np.zeros((m, m), dtype=hdtype)
        cs = np.zeros(m, dtype=hdtype)
        sn = np.zeros(m, dtype=hdtype)
        g = np.zeros(m + 1, dtype=hdtype)
        g[0] = beta
        breakdown = False
        j = 0
        for j in range(m):
            z = V[j] if psolve is None else psolve(V[j])
            w = V[j + 1]
            xp.copyto(w, matvec(z))
            h0 = _norm(xp, w)
            basis = V[: j + 1]
            h = basis.conj() @ w
            w -= basis.T @ h
            h2 = basis.conj() @ w  # second pass: re-orthogonalise
            w -= basis.T @ h2
            col = to_host(h + h2).astype(hdtype)
            hn = _norm(xp, w)
            if not _finite(h0, hn, *col):
                return Outcome(x, it, False, NONFINITE)
            if hn <= eps * h0:  # w lies in the basis' span: an invariant subspace
                breakdown, hn = True, 0.0
            else:
                xp.multiply(w, 1.0 / hn, out=w)
            for i in range(j):  # previous rotations
                col[i], col[i + 1] = (
                    cs[i] * col[i] + sn[i] * col[i + 1],
                    -np.conj(sn[i]) * col[i] + cs[i] * col[i + 1],
                )
            denom = math.hypot(abs(col[j]), hn)
            cs[j] = abs(col[j]) / denom if denom else 1.0
            sn[j] = (col[j] / abs(col[j]) * hn / denom if col[j] != 0 else 1.0) if denom else 0
            R[: j + 1, j] = col[: j + 1]
            R[j, j] = cs[j] * col[j] + sn[j] * hn
            g[j + 1] = -np.conj(sn[j]) * g[j]
            g[j] = cs[j] * g[j]
            it += 1
            if abs(g[j + 1]) <= tol or it >= maxiter or breakdown:
                break
        k = j + 1
        y = _least_squares(R[:k, :k], g[:k], eps)
        update = V[:k].T @ xp.asarray(y.astype(x.dtype, copy=False))
        xp.add(x, update if psolve is None else psolve(update), out=x)
        if callback is not None:
            callback(x)
        rnorm = _norm(xp, residual(xp, matvec, b, x, r))
        if rnorm <= tol:
            return Outcome(x, it, True, CONVERGED, rnorm)
        if not math.isfinite(rnorm):
            return Outcome(x, it, False, NONFINITE, rnorm)
        if it >= maxiter:
            return Outcome(x, it, False, MAXITER, rnorm)
        if breakdown and not rnorm < beta:
            return Outcome(x, it, False, GMRES_STAGNATION, rnorm)


def _least_squares(R: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """``argmin ||R y - g||`` for the small triangular R, singular values below
    ``k * eps * max`` treated as zero (minimum-norm solution when R is singular)."""
    return np.linalg.lstsq(R, g, rcond=len(g) * eps)[0]
