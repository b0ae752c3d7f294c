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

Each loop is written once, as the operator calls around a few *steps* (:class:`HostSteps`
and its subclasses): the dot products, the recurrence's scalars, the vector updates and
the tests that end the loop. The host steps touch vectors only through ``xp.vdot``,
``xp.multiply``/``xp.add``/``xp.subtract`` (with ``out=``), ``xp.copyto``,
``xp.empty_like``, ``xp.zeros_like`` and ``v.copy()``: ``xp`` is the *vector space*, an
array module for native arrays, a :class:`gpukit.sharding._krylov.ShardedSpace` for
row-sharded vectors or a Dask space. A space may also provide fused ``axpy``/``xpay`` (one
pass per device instead of two) and ``scalar_dot``: the backend's ``krylov_space`` gives
them (BLAS-1 in place on the host, one ElementwiseKernel each on CuPy), and the sharded
space runs the backend's on every shard. The host steps bring each scalar to the host
(``.item()``; on a device, one small synchronisation per reduction, as in
``cupyx.scipy.sparse.linalg``) and check it for NaN/inf, so a non-finite operator ends the
solve with a reason rather than iterating on NaN.

A space may give its own steps instead (``krylov_steps``; CuPy's, in
``gpukit_cupy/krylov.py``): the scalars and the same tests then stay on the device, fused
into the vector kernels, the device skips every update after a stop, and the host reads
the stop only every few iterations (:meth:`HostSteps.poll`), so that the iterate returned,
its iteration count and its residual estimate are still those of the iteration that
stopped. Stopping rule everywhere: ``||r|| <= tol`` with ``tol = max(rtol * ||b||, atol)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backend._ops.linalg import KRYLOV_STOPS
from ..errors import GpukitWarning

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
    the loop can go on. ``pipelined`` says the loop ran its pipelined form, whose extra
    recurrences drift further from the true residual than the classic form's.
    """

    x: Any
    iterations: int
    converged: bool
    reason: str
    residual: float | None = None
    estimate: float = 0.0
    restartable: bool = False
    pipelined: bool = False


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
    for v in values:  # a loop, not all() over a generator: no generator frame per value
        if not math.isfinite(abs(v)):
            return False
    return True


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
    ``BREAKDOWN_RESTARTS`` times. A pipelined loop (``Outcome.pipelined``) whose claim
    the true residual does not confirm is restarted from ``x`` in its classic form
    (``pipelined=False``) with the full tolerance: its recurrences, not the problem, may
    be what failed. ``x`` is updated in place; ``x_is_zero`` skips the first mat-vec.
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
        if out.pipelined and (out.converged or out.restartable):
            extra = {**extra, "pipelined": False}
            continue
        if out.restartable and restarts < BREAKDOWN_RESTARTS:
            restarts += 1
            continue
        if not out.converged:
            return Result(x, done, False, out.reason, rnorm)
        if not rnorm < previous:
            return Result(x, done, False, STAGNATION, rnorm)
        inner_tol = 0.5 * tol * out.estimate / rnorm


# -- the loops' steps ----------------------------------------------------------------------
# Each loop below is written once, as the operator calls around a few *steps*: the methods
# of a steps object that form the dot products, the scalars of the recurrence, the vector
# updates and the tests that end the loop. The host steps here hold the scalars as Python
# numbers and know of a stop at once. A device space may give its own (``krylov_steps``):
# scalars kept on the device inside fused kernels, an iterate frozen there once a stop is
# reached, and the stop read by the host only every few iterations (:meth:`HostSteps.poll`).

#: The reason of each stop code a steps object reports (``KRYLOV_STOPS``, the codes a
#: device space's kernels write: 1-based, 0 while the loop runs).
STOP_REASONS = dict(
    zip(
        KRYLOV_STOPS,
        (
            CONVERGED,
            NONFINITE,
            CG_INDEFINITE,
            M_INDEFINITE,
            BICGSTAB_RHO,
            BICGSTAB_RV,
            BICGSTAB_OMEGA,
            MINRES_SINGULAR,
        ),
        strict=True,
    )
)
_STOP_CODES = {reason: code for code, reason in enumerate(STOP_REASONS.values(), 1)}
_REASONS = tuple(STOP_REASONS.values())

Stop = tuple[int, int, float]  # (code, iterations of the iterate kept, residual estimate)


class HostSteps:
    """What the host steps of every loop share: the stop, known when it happens.

    ``poll(k, every)`` ends iteration ``k``: it returns the stop (the code of its reason,
    the iterations done by the iterate the loop keeps, the loop's residual estimate) or
    None while the loop goes on. A step after a stop changes nothing. ``stopped`` says
    whether a stop is known now (a device space knows it only when it reads).
    """

    def __init__(self, xp: Any, x: Any, tol: float, maxiter: int) -> None:
        self.xp, self.tol = xp, tol
        self.eps = float(np.finfo(x.dtype).eps)
        self.tmp = xp.empty_like(x)
        self.stop: Stop | None = None

    @property
    def stopped(self) -> bool:
        return self.stop is not None

    def poll(self, k: int, every: bool) -> Stop | None:
        return self.stop

    def final(self) -> Stop | None:
        return self.stop

    def halt(self, reason: str, iterations: int, estimate: float = 0.0) -> None:
        self.stop = (_STOP_CODES[reason], iterations, estimate)

    def applies(self, k: int) -> bool:
        """Whether iteration ``k``'s updates still apply (no stop before it)."""
        return self.stop is None or self.stop[1] >= k

    def replay_block(
        self, k: int, iterate: Callable[[int], None], every: bool, carried: list
    ) -> int:
        """Run iterations from ``k`` at once (a device space's CUDA graph replay) and
        return how many: none here, where each iteration's scalars come to the host.
        ``iterate(j)`` runs iteration ``j``; ``every``: the host must see each one;
        ``carried``: the buffers the loop rotates between iterations, which a replay
        leaves as the iterations would."""
        return 0


class GraphPlan:
    """A solve's ``graph=True``: the loop's steps capture a block of iterations as a CUDA
    graph where they can; where they cannot, the solve goes on one launch at a time and
    says why, once."""

    def __init__(self, op: str) -> None:
        self.op, self.enabled = op, True

    def fall_back(self, reason: str) -> None:
        if self.enabled:
            self.enabled = False
            warnings.warn(
                f"{self.op}(graph=True): iterations are launched one by one, not replayed "
                f"as a CUDA graph: {reason}",
                GpukitWarning,
                stacklevel=2,
            )


def _steps(
    xp: Any, method: str, x: Any, tol: float, maxiter: int, graph: GraphPlan | None = None,
    **extra: Any,
) -> Any:  # fmt: skip
    """The steps of ``method`` for the space ``xp``: its own, or the host's."""
    find = getattr(xp, "krylov_steps", None)
    cls = None if find is None else find(method)
    s = (HOST_STEPS[method] if cls is None else cls)(xp, x, tol, maxiter, **extra)
    if graph is not None and graph.enabled:
        if type(s).replay_block is HostSteps.replay_block:
            graph.fall_back(
                "the vectors are not one device's CuPy arrays (only CuPy's device steps "
                "are captured)"
            )
        else:
            s.graph = graph
    return s


def _iteration_done(s: Any, k: int, x: Any, callback: Callable[[Any], Any] | None) -> bool:
    """End iteration ``k``: the callback sees ``x`` when the iteration changed it (with a
    callback, a device space reads its stop at every iteration); True when the loop ends."""
    stop = s.poll(k, callback is not None)
    if callback is not None and (stop is None or stop[1] == k):
        callback(x)
    return stop is not None


def _iterations(
    s: Any, iterate: Callable[[int], None], maxiter: int, x: Any,
    callback: Callable[[Any], Any] | None, carried: list | None = None,
    between: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    """Run iterations 1 to ``maxiter`` of a loop until it stops: ``iterate(k)`` runs
    iteration ``k``, or the steps replay a block of them at once (``graph=True``; the
    loop's ``carried`` buffers, those it rotates, are then left as the block's end).
    ``between(k)``, after iteration ``k`` when the loop goes on, runs outside any block."""
    k, carried = 1, [] if carried is None else carried
    while k <= maxiter and not s.stopped:
        ran = s.replay_block(k, iterate, callback is not None, carried)
        if not ran:
            iterate(k)
        k += ran or 1
        if _iteration_done(s, k - 1, x, callback):
            break
        if between is not None:
            between(k - 1)


def _outcome(s: Any, x: Any, maxiter: int) -> Outcome:
    stop = s.final()
    if stop is None:
        return Outcome(x, maxiter, False, MAXITER)
    code, iterations, estimate = stop
    reason = _REASONS[code - 1]
    return Outcome(
        x, iterations, reason == CONVERGED, reason, estimate=estimate,
        restartable=reason == BICGSTAB_RHO,
    )  # fmt: skip


class CGSteps(HostSteps):
    """Conjugate gradients' scalars: ``rho = r^H z``, ``alpha``, ``beta``."""

    def start(self, r: Any, z: Any, rnorm: float) -> None:
        """``rho`` of the first iteration (``z is r`` without a preconditioner)."""
        # Products beyond the dtype (r of 1e200 from a huge x0) end the loop before they
        # make alpha NaN and x with it.
        if z is r:
            self.rho = rnorm * rnorm
            if not math.isfinite(self.rho):
                self.halt(NONFINITE, 0)
            return
        self.rho = _dot(self.xp, r, z).real
        if not 0 < self.rho < math.inf:
            self.halt(M_INDEFINITE if math.isfinite(self.rho) else NONFINITE, 0)

    def step(self, k: int, p: Any, q: Any, x: Any, r: Any) -> None:
        """``alpha = rho / p^H q`` (``q = A p``), then ``x += alpha p``, ``r -= alpha q``."""
        xp = self.xp
        pq = _dot(xp, p, q).real
        if not 0 < pq < math.inf:
            return self.halt(CG_INDEFINITE if math.isfinite(pq) else NONFINITE, k - 1)
        alpha = self.rho / pq
        _axpy(xp, alpha, p, x, self.tmp)
        _axpy(xp, -alpha, q, r, self.tmp)
        rr = _dot(xp, r, r).real
        if math.sqrt(rr) <= self.tol:
            return self.halt(CONVERGED, k, math.sqrt(rr))
        if not math.isfinite(rr):
            return self.halt(NONFINITE, k)
        self.rr = rr

    def direction(self, k: int, r: Any, z: Any, p: Any) -> None:
        """``p = z + beta p`` with ``beta = r^H z / rho`` (``z = M r``)."""
        if self.stop is not None:
            return
        if z is r:
            rho = self.rr
        else:
            rho = _dot(self.xp, r, z).real
            if not 0 < rho < math.inf:
                return self.halt(M_INDEFINITE if math.isfinite(rho) else NONFINITE, k)
        _xpay(self.xp, z, rho / self.rho, p)
        self.rho = rho


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
    graph: GraphPlan | None = None,
) -> Outcome:
    """Preconditioned conjugate gradients (A and M Hermitian positive definite).

    ``r`` holds ``b - A x`` on entry (``rnorm`` its norm) and is updated in place. With
    ``graph``, steady-state blocks of iterations may run as one replay (``HostSteps.replay_block``),
    here and in the other loops.
    """
    s = _steps(xp, "cg", x, tol, maxiter, graph)
    z = r if psolve is None else psolve(r)
    s.start(r, z, rnorm)
    p = xp.empty_like(x)
    xp.copyto(p, z)

    def iterate(k: int) -> None:
        nonlocal z
        s.step(k, p, matvec(p), x, r)
        if psolve is not None and not s.stopped:
            z = psolve(r)
        s.direction(k, r, z, p)

    _iterations(s, iterate, maxiter, x, callback)
    return _outcome(s, x, maxiter)


class BicgstabSteps(HostSteps):
    """BiCGSTAB's scalars and its two vectors besides the iterate's: ``rhat`` and ``v``."""

    def start(self, r: Any, rnorm: float) -> None:
        """``rhat`` is the residual the loop starts from (``rnorm`` its norm)."""
        self.rhat = r.copy()
        self.v = self.xp.zeros_like(r)
        self.rhat_norm = self.rnorm = rnorm
        self.rho = self.rho_prev = self.alpha = self.omega = self.cos_prev = 1.0

    def direction(self, k: int, r: Any, p: Any) -> None:
        """``rho = rhat^H r``, judged; then ``p = r + beta (p - omega v)`` after the first."""
        xp = self.xp
        rho = _dot(xp, self.rhat, r)
        if not _finite(rho):
            return self.halt(NONFINITE, k - 1)
        scale = self.rhat_norm * self.rnorm  # 0 only if it underflows: only rho = 0 is judged
        cos = abs(rho) / scale if scale else 1.0
        if rho == 0 or (cos <= 2**10 * self.eps and cos <= math.sqrt(self.eps) * self.cos_prev):
            return self.halt(BICGSTAB_RHO, k - 1)
        self.cos_prev = cos
        if k > 1:
            beta = (rho / self.rho_prev) * (self.alpha / self.omega)
            _axpy(xp, -self.omega, self.v, p, self.tmp)  # p = r + beta * (p - omega v)
            _xpay(xp, r, beta, p)
        self.rho = rho

    def project(self, k: int, phat: Any, av: Any, x: Any, r: Any) -> None:
        """``v = A phat``, ``alpha = rho / rhat^H v``; ``x += alpha phat``, ``r -= alpha v``
        (``r`` then holds ``s``), whose norm may end the loop."""
        if self.stop is not None:
            return
        xp = self.xp
        xp.copyto(self.v, av)  # v is needed after A's next call
        rv = _dot(xp, self.rhat, self.v)
        if not _finite(rv):
            return self.halt(NONFINITE, k - 1)
        if rv == 0:
            return self.halt(BICGSTAB_RV, k - 1)
        self.alpha = self.rho / rv
        _axpy(xp, self.alpha, phat, x, self.tmp)  # before M's next call may overwrite phat
        _axpy(xp, -self.alpha, self.v, r, self.tmp)
        self.snorm = _norm(xp, r)
        if self.snorm <= self.tol:
            self.halt(CONVERGED, k, self.snorm)
        elif not math.isfinite(self.snorm):
            self.halt(NONFINITE, k, self.snorm)

    def stabilise(self, k: int, shat: Any, t: Any, x: Any, r: Any) -> None:
        """``omega = t^H s / t^H t`` (``t = A shat``); ``x += omega shat``, ``r -= omega t``."""
        if self.stop is not None:
            return
        xp = self.xp
        tt = _dot(xp, t, t).real
        ts = _dot(xp, t, r)
        if not _finite(tt, ts):
            return self.halt(NONFINITE, k)
        # t^H s = 0 to working precision, or t^H t or omega underflowing to zero (the
        # scalars are Python floats: a zero divisor raises instead of giving inf)
        omega = ts / tt if tt else 0.0
        if omega == 0 or abs(ts) <= self.eps * math.sqrt(tt) * self.snorm:
            return self.halt(BICGSTAB_OMEGA, k)
        self.omega = omega
        _axpy(xp, omega, shat, x, self.tmp)  # before r (which shat may be) changes
        _axpy(xp, -omega, t, r, self.tmp)
        self.rnorm = _norm(xp, r)
        if self.rnorm <= self.tol:
            return self.halt(CONVERGED, k, self.rnorm)
        if not math.isfinite(self.rnorm):
            return self.halt(NONFINITE, k)
        self.rho_prev = self.rho


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
    graph: GraphPlan | None = None,
    pipelined: bool = True,
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
    orthogonal to working precision. Without a preconditioner, on steps that provide it
    (CuPy's device steps), the loop is the pipelined one (:func:`_pipelined_bicgstab`)
    unless ``pipelined`` is False (the driver's retry of a claim it did not confirm).
    """
    s = _steps(xp, "bicgstab", x, tol, maxiter, graph)
    if pipelined and psolve is None and getattr(s, "pipelined", False):
        _pipelined_bicgstab(s, xp, matvec, b, x, r, rnorm, maxiter, callback)
        out = _outcome(s, x, maxiter)
        out.pipelined = True
        return out
    s.start(r, rnorm)
    p = r.copy()

    def iterate(k: int) -> None:
        s.direction(k, r, p)
        if s.stopped:  # a breakdown of rho keeps iteration k - 1: nothing more to run
            return
        phat = p if psolve is None else psolve(p)
        s.project(k, phat, matvec(phat), x, r)
        if not s.stopped:
            shat = r if psolve is None else psolve(r)
            s.stabilise(k, shat, matvec(shat), x, r)

    _iterations(s, iterate, maxiter, x, callback)
    return _outcome(s, x, maxiter)


def _pipelined_bicgstab(
    s: Any, xp: Any, matvec: Op, b: Any, x: Any, r: Any, rnorm: float, maxiter: int,
    callback: Callable[[Any], Any] | None,
) -> None:  # fmt: skip
    """BiCGSTAB without a preconditioner, pipelined (Cools & Vanroose 2017), on steps
    that provide it (``pipelined``: the CuPy device steps). The same iterates in exact
    arithmetic, but besides ``r`` and ``p`` the loop carries ``w = A r``, ``s = A p`` and
    ``z = A s`` by recurrences, so that no step needs a dot product of a vector it is
    forming: an iteration is ``A w``, a step (the directions, the half step ``q``, omega),
    ``A z`` and a step (``x``, ``r``, ``w``, the next rho, beta and alpha). One product
    more than the classic loop (``A r`` at the start).

    The recurrences drift from the products they stand for; the steps bound the drift
    and, when the bound first exceeds ``sqrt(eps)`` of ``||r||`` or ``||A r||`` (van der
    Vorst & Ye's residual replacement criterion), have ``r``, ``w``, ``s`` and ``z``
    recomputed from their definitions at the next of their checkpoints
    (``replace_due(k)``, iterations 1, 2, 4, 8, 16, then every 10: the steady-state
    reads of the status): four operator products, not an iteration."""
    s.pipeline_start(r, matvec(r), x, rnorm)

    def iterate(k: int) -> None:
        s.pipeline_omega(k, matvec(s.w), r)
        s.pipeline_update(k, matvec(s.z), x, r)

    def replace(k: int) -> None:
        if k < maxiter and s.replace_due(k):
            residual(xp, matvec, b, x, r)
            s.pipeline_replace(k, matvec, x, r)

    _iterations(s, iterate, maxiter, x, callback, between=replace)


class MinresSteps(HostSteps):
    """MINRES's Lanczos and rotation scalars, and the basis vector ``v``."""

    def start(self, r: Any, y: Any, rnorm: float) -> None:
        """``beta1``: ``||r||``, or ``r`` in the ``M`` norm (``y = M r``); ``v = y / beta1``."""
        if y is r:
            beta1 = rnorm
        else:
            beta1 = _dot(self.xp, r, y).real
            if not beta1 > 0:
                return self.halt(M_INDEFINITE if math.isfinite(beta1) else NONFINITE, 0)
            beta1 = math.sqrt(beta1)
        self.oldb, self.beta, self.dbar, self.epsln, self.phibar = 0.0, beta1, 0.0, 0.0, beta1
        self.tnorm2, self.cs, self.sn = 0.0, -1.0, 0.0
        self.v = self.xp.empty_like(r)
        self.xp.multiply(y, 1.0 / beta1, out=self.v)

    def lanczos(self, k: int, av: Any, r1: Any, r2: Any, nxt: Any) -> None:
        """``nxt = A v - (beta / oldb) r1 - (alfa / beta) r2`` with ``alfa = v^H (A v - ...)``."""
        xp = self.xp
        if k >= 2:
            xp.multiply(r1, -self.beta / self.oldb, out=nxt)
            xp.add(nxt, av, out=nxt)
        else:
            xp.copyto(nxt, av)
        self.alfa = _dot(xp, self.v, nxt).real
        _axpy(xp, -self.alfa / self.beta, r2, nxt, self.tmp)

    def rotate(self, k: int, r1: Any, r2: Any, y: Any) -> None:
        """The next ``beta = sqrt(r2^H y)`` and the Givens rotation of the tridiagonal
        (``r1`` is the previous ``r2``, which the host no longer needs)."""
        beta2 = _dot(self.xp, r2, y).real
        alfa, oldb = self.alfa, self.beta
        if not _finite(alfa, beta2):
            return self.halt(NONFINITE, k - 1)
        if beta2 < 0:
            return self.halt(M_INDEFINITE, k - 1)
        beta = math.sqrt(beta2)
        # ||T||_F^2 of the Lanczos tridiagonal: the first oldb is ||b|| (in M's norm), not
        # an entry of T; counted, a b large against A (||b|| / ||A|| > 1/eps) made every
        # gamma look negligible, and the solve called a well-conditioned A singular
        self.tnorm2 += alfa * alfa + beta2 + (oldb * oldb if k >= 2 else 0.0)
        cs, sn, dbar = self.cs, self.sn, self.dbar
        self.oldeps = self.epsln
        self.delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        self.epsln = sn * beta
        self.dbar = -cs * beta
        gamma = math.hypot(gbar, beta)
        if gamma <= self.eps * math.sqrt(self.tnorm2):
            return self.halt(MINRES_SINGULAR, k - 1)
        self.cs, self.sn, self.gamma = gbar / gamma, beta / gamma, gamma
        self.phi = self.cs * self.phibar
        self.phibar = self.sn * self.phibar
        self.oldb, self.beta = oldb, beta
        if self.phibar <= self.tol or beta == 0:  # beta = 0: the Krylov subspace is exhausted
            self.halt(CONVERGED, k, self.phibar)

    def update(self, k: int, w: Any, w1: Any, w2: Any, x: Any, y: Any) -> None:
        """``w = (v - oldeps w1 - delta w2) / gamma``, ``x += phi w``; the next ``v``."""
        if not self.applies(k):
            return
        xp = self.xp
        xp.multiply(w1, -self.oldeps, out=w)
        _axpy(xp, -self.delta, w2, w, self.tmp)
        xp.add(w, self.v, out=w)
        xp.multiply(w, 1.0 / self.gamma, out=w)
        _axpy(xp, self.phi, w, x, self.tmp)
        if self.stop is None:
            xp.multiply(y, 1.0 / self.beta, out=self.v)


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
    graph: GraphPlan | None = None,
) -> Outcome:
    """Preconditioned MINRES (Paige-Saunders) for Hermitian, possibly indefinite A.

    The recurrence's residual is ``||r||_2`` without a preconditioner and ``||r||`` in
    the ``M`` norm with one; the driver checks the true 2-norm residual at exit.
    A singular tridiagonal (``gamma = 0``: the Krylov subspace is invariant and A is
    singular on it) is a breakdown, never a "converged" with the clamped rotation.
    """
    s = _steps(xp, "minres", x, tol, maxiter, graph)
    y = r if psolve is None else psolve(r)
    s.start(r, y, rnorm)
    # the Lanczos vectors r1, r2 and the next one, then w, w1, w2: rotated every iteration
    carried = [xp.empty_like(x), r, xp.empty_like(x)] + [xp.zeros_like(x) for _ in range(3)]

    def iterate(k: int) -> None:
        r1, r2, nxt, w, w1, w2 = carried
        s.lanczos(k, matvec(s.v), r1, r2, nxt)
        r1, r2, nxt = r2, nxt, r1
        y = r2 if psolve is None else psolve(r2)
        s.rotate(k, r1, r2, y)
        w1, w2, w = w2, w, w1  # w = (v - oldeps * w1 - delta * w2) / gamma, rotating
        s.update(k, w, w1, w2, x, y)
        carried[:] = r1, r2, nxt, w, w1, w2

    _iterations(s, iterate, maxiter, x, callback, carried)
    return _outcome(s, x, maxiter)


class Hessenberg:
    """A GMRES cycle's small least-squares problem ``min ||beta e1 - H y||``, reduced on
    the host by Givens rotations one column at a time, as the columns arrive."""

    def __init__(self, m: int, dtype: np.dtype, tol: float) -> None:
        self.dtype = np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
        self.eps = float(np.finfo(dtype).eps)
        self.tol, self.m = tol, m

    def reset(self) -> None:
        m = self.m
        self.R = np.zeros((m, m), dtype=self.dtype)
        self.cs = np.zeros(m, dtype=self.dtype)
        self.sn = np.zeros(m, dtype=self.dtype)
        self.g = np.zeros(m + 1, dtype=self.dtype)
        self.k = 0  # columns taken

    def take(self, col: np.ndarray, h0: float, hn: float) -> str | None:
        """Take the next column (``col``: its entries above the subdiagonal; ``h0``, ``hn``:
        the new basis vector's norm before and after orthogonalisation); the reason the
        cycle ends with it, if it does: NONFINITE (the column is not taken),
        GMRES_STAGNATION (an invariant subspace: the new vector lies in the basis' span;
        the restart then judges whether the residual still decreased) or CONVERGED (the
        recurrence's residual ``|g[j+1]|`` meets the tolerance)."""
        j = self.k
        if not _finite(h0, hn, *col):
            return NONFINITE
        col = np.asarray(col, dtype=self.dtype)  # rotated in place: a fresh array
        breakdown = hn <= self.eps * h0  # w lies in the basis' span: an invariant subspace
        if breakdown:
            hn = 0.0
        cs, sn = self.cs, self.sn
        for i in range(j):  # previous rotations
            col[i], col[i + 1] = (
                cs[i] * col[i] + sn[i] * col[i + 1],
                -np.conj(sn[i]) * col[i] + cs[i] * col[i + 1],
            )
        denom = math.hypot(abs(col[j]), hn)
        cs[j] = abs(col[j]) / denom if denom else 1.0
        sn[j] = (col[j] / abs(col[j]) * hn / denom if col[j] != 0 else 1.0) if denom else 0
        self.R[: j + 1, j] = col[: j + 1]
        self.R[j, j] = cs[j] * col[j] + sn[j] * hn
        self.g[j + 1] = -np.conj(sn[j]) * self.g[j]
        self.g[j] = cs[j] * self.g[j]
        self.k = j + 1
        if breakdown:
            return GMRES_STAGNATION
        return CONVERGED if abs(self.g[j + 1]) <= self.tol else None

    def solve(self) -> np.ndarray:
        """``y`` of the columns taken: singular values below ``k * eps * max`` treated as
        zero (the minimum-norm solution when R is singular)."""
        k = self.k
        return np.linalg.lstsq(self.R[:k, :k], self.g[:k], rcond=k * self.eps)[0]


class GmresSteps:
    """Arnoldi on the host's terms: each step's Hessenberg column is brought to the host
    as it is formed (one small copy), and the true residual at a restart at once.

    The protocol a device space's GMRES steps follow: ``read(force)`` hands over what
    the host has not seen yet -- the residual norm the cycle started from (None when the
    host knows it) and the new columns ``(col, h0, hn)`` -- or None when it does not read
    now; ``restart(...)`` recomputes ``r = b - A x`` and returns its norm, or None when
    it is read later with the next columns; ``reported(rnorm)`` is the residual the
    loop's outcome carries.
    """

    def __init__(
        self, xp: Any, x: Any, tol: float, maxiter: int, m: int, to_host: Callable
    ) -> None:
        self.xp, self.to_host, self.m = xp, to_host, m
        self.V = xp.empty((m + 1, x.shape[0]), dtype=x.dtype)
        self.eps = float(np.finfo(x.dtype).eps)
        self.hdtype = np.complex128 if x.dtype.kind == "c" else np.float64
        self.columns: list[tuple[np.ndarray, float, float]] = []

    replay_block = HostSteps.replay_block  # each column comes to the host as it is formed

    def begin(self, r: Any, rnorm: float | None) -> None:
        """The cycle's first basis vector, ``r / ||r||``."""
        self.xp.multiply(r, 1.0 / rnorm, out=self.V[0])

    def basis(self, j: int) -> Any:
        return self.V[j]

    def arnoldi(self, j: int, av: Any) -> None:
        """``V[j + 1]``: ``A V[j]`` (``av``) orthogonalised against ``V[: j + 1]`` by
        classical Gram-Schmidt applied twice, then normalised."""
        xp, V = self.xp, self.V
        w = V[j + 1]
        xp.copyto(w, av)
        h0 = _norm(xp, w)
        basis = V[: j + 1]
        h = basis.conj() @ w
        w -= basis.T @ h
        h2 = basis.conj() @ w  # second pass: re-orthogonalise
        w -= basis.T @ h2
        col = self.to_host(h + h2).astype(self.hdtype)
        hn = _norm(xp, w)
        if _finite(h0, hn, *col) and hn > self.eps * h0:
            xp.multiply(w, 1.0 / hn, out=w)
        self.columns.append((col, h0, hn))

    def read(self, force: bool) -> tuple[float | None, list] | None:
        columns, self.columns = self.columns, []
        return None, columns

    def advance(self, x: Any, y: np.ndarray, psolve: Op | None) -> None:
        """``x += V[:k]^T y`` (``M V[:k]^T y`` with a preconditioner), ``k = len(y)``
        the columns taken."""
        V = self.V[: len(y)]
        update = V.T @ self.xp.asarray(y.astype(V.dtype, copy=False))
        self.xp.add(x, update if psolve is None else psolve(update), out=x)

    def restart(self, matvec: Op, b: Any, x: Any, r: Any, now: bool) -> float | None:
        return _norm(self.xp, residual(self.xp, matvec, b, x, r))

    def reported(self, rnorm: float) -> float | None:
        """The true residual the loop reports (None: the driver recomputes it, as for
        the other loops, when the steps' own norm is not the driver's)."""
        return rnorm


def _restart_verdict(
    rnorm: float, tol: float, it: int, maxiter: int, before: float, stagnant: bool
) -> str | None:
    """Why the solve ends at a restart whose true residual is ``rnorm``, if it does
    (``before``: the residual the last cycle started from; ``stagnant``: it broke down)."""
    if rnorm <= tol:
        return CONVERGED
    if not math.isfinite(rnorm):
        return NONFINITE
    if it >= maxiter:
        return MAXITER
    if stagnant and not rnorm < before:
        return GMRES_STAGNATION
    return None


def _verdict(s: Any, x: Any, it: int, verdict: str, rnorm: float) -> Outcome:
    return Outcome(x, it, verdict == CONVERGED, verdict, s.reported(rnorm), estimate=rnorm)


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
    graph: GraphPlan | None = None,
) -> Outcome:
    """Restarted, right-preconditioned GMRES; ``maxiter`` counts inner iterations.

    Arnoldi uses classical Gram-Schmidt applied twice (two matrix-vector products with
    the basis, GPU friendly; CuPy's steps delay the second pass by one step, so that a
    step waits for one reduction); the small Hessenberg problem is reduced on the host with
    Givens rotations (:class:`Hessenberg`). As in SciPy, a new basis vector whose norm
    falls below ``eps`` times its norm before orthogonalisation ends the cycle (an
    invariant subspace: breakdown); the small least-squares problem is then solved by
    SVD with a relative cut-off, so a tiny pivot (a rank-deficient ``A M`` on the
    subspace) is dropped rather than amplified. The true residual is recomputed at every
    restart. A cycle ends at the first column that meets the tolerance, breaks down or is
    not finite, whenever the host learns of it: ``x`` is updated from the columns up to
    that one, and only those count as iterations. With ``graph``, the Arnoldi steps
    between two reads may run as one replay (a cycle's end needs the host: the
    Hessenberg problem is solved there before ``x`` is updated).
    """
    n = b.shape[0]
    m = max(1, min(restart, n))
    s = _steps(xp, "gmres", x, tol, maxiter, graph, m=m, to_host=to_host)
    hess = Hessenberg(m, x.dtype, tol)
    it, beta, before, stagnant = 0, rnorm, math.inf, False

    def step(j: int) -> None:
        z = s.basis(j) if psolve is None else psolve(s.basis(j))
        s.arnoldi(j, matvec(z))

    s.begin(r, rnorm)
    while True:
        hess.reset()
        hess.g[0] = 0.0 if beta is None else beta
        end = None
        j = 0
        while j < m:
            ran = s.replay_block(j, step, it + m > maxiter, [])
            if not ran:
                step(j)
            j += ran or 1
            last = it + j >= maxiter
            got = s.read(j == m or last)
            if got is None:
                continue
            start, columns = got
            if start is not None:  # the restart's residual, read only now
                beta = start
                verdict = _restart_verdict(beta, tol, it, maxiter, before, stagnant)
                if verdict is not None:
                    return _verdict(s, x, it, verdict, beta)
                hess.g[0] = beta
            for col in columns:
                end = hess.take(*col)
                if end is not None:
                    break
            if end is not None or last:
                break
        if end == NONFINITE:
            return Outcome(x, it + hess.k, False, NONFINITE)
        it += hess.k
        s.advance(x, hess.solve(), psolve)
        if callback is not None:
            callback(x)
        before, stagnant = beta, end == GMRES_STAGNATION
        beta = s.restart(matvec, b, x, r, now=end is not None or it >= maxiter)
        if beta is not None:
            verdict = _restart_verdict(beta, tol, it, maxiter, before, stagnant)
            if verdict is not None:
                return _verdict(s, x, it, verdict, beta)
        s.begin(r, beta)


HOST_STEPS = {"cg": CGSteps, "bicgstab": BicgstabSteps, "minres": MinresSteps, "gmres": GmresSteps}
