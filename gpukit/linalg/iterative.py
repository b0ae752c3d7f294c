"""Krylov solvers: cg, gmres, bicgstab, minres, with one result object on every backend.

The front-end turns ``A`` and ``M`` (dense array, sparse matrix, LinearOperator or plain
callable) into ``matvec`` callables on the right backend, runs the loop from
:mod:`gpukit.linalg._krylov` (written once against ``xp``), recomputes the true
residual and reports non-convergence in :class:`IterativeInfo` and as a
:class:`gpukit.ConvergenceWarning`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch import operation, prepare
from .._dispatch.capabilities import checked, declare
from .._dispatch.kinds import implementation_of
from .._runtime.placement import owner_of
from ..backend import Backend
from ..errors import ConvergenceWarning, warn
from ..sparse import issparse, to_backend
from . import _krylov
from ._checks import solve_dtype

if TYPE_CHECKING:
    from typing_extensions import TypedDict, Unpack

    from .. import ShardedArray
    from .._typing import Array, NumpyArray

    class _Controls(TypedDict, total=False):
        """The keyword arguments every solver takes (gmres adds ``restart``)."""

        rtol: float
        atol: float
        maxiter: int | None
        M: Any
        callback: Callable[[Any], Any] | None
        graph: bool

    class _GmresControls(_Controls, total=False):
        restart: int


__all__ = ["IterativeInfo", "bicgstab", "cg", "gmres", "minres"]


class IterativeInfo(int):
    """How an iterative solve ended; the same type on every backend.

    An ``int`` holding SciPy's ``info`` code, so that code ported from
    ``scipy.sparse.linalg`` keeps working (``x, info = gk.linalg.cg(A, b)`` then
    ``if info == 0:``), with the fields below as attributes. Like SciPy's code, it is
    0 (falsy) when the solve converged, positive (the iterations done, at least 1) when
    it stopped short of the tolerance (``maxiter`` reached, stagnation, range), and
    negative for a breakdown (SciPy's -10 and -11 for BiCGSTAB's rho and omega
    breakdowns, -1 for the others). ``bool(info)`` is therefore True for a *failed* solve,
    as in SciPy: test ``info.converged`` for the plain meaning. Equality and hashing are
    the integer code's; it pickles and copies with its fields, and is immutable.

    Attributes
    ----------
    converged : bool
        Whether the true residual met ``||b - A x|| <= max(rtol * ||b||, atol)``.
    iterations : int
        Iterations done (inner Arnoldi steps for GMRES).
    residual_norm : float
        The true residual ``||b - A @ x||``, recomputed at exit.
    tolerance : float
        The absolute threshold used, ``max(rtol * ||b||, atol)``.
    method : str
        ``"cg"``, ``"gmres"``, ``"bicgstab"`` or ``"minres"``.
    reason : str
        ``"converged"``, ``"maxiter reached"``, ``"stagnation: ..."`` (the recurrence met
        the tolerance, the true residual could not) or ``"breakdown: ..."`` naming what
        broke down; docs/linalg.rst lists every reason.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x, info = gk.linalg.cg(np.eye(3), np.ones(3))
    >>> info == 0, info.converged, info.reason
    (True, True, 'converged')
    >>> import warnings
    >>> with warnings.catch_warnings():  # it warns: gk.ConvergenceWarning
    ...     warnings.simplefilter("ignore", gk.ConvergenceWarning)
    ...     x, info = gk.linalg.cg(np.diag([1.0, 2.0, 3.0]), np.ones(3), maxiter=1)
    >>> int(info), info.converged, info.reason
    (1, False, 'maxiter reached')
    """

    if TYPE_CHECKING:  # the fields, read-only to checkers as at run time (__setattr__)

        @property
        def converged(self) -> bool: ...
        @property
        def iterations(self) -> int: ...
        @property
        def residual_norm(self) -> float: ...
        @property
        def tolerance(self) -> float: ...
        @property
        def method(self) -> str: ...
        @property
        def reason(self) -> str: ...

    def __new__(
        cls,
        converged: bool,
        iterations: int,
        residual_norm: float,
        tolerance: float,
        method: str,
        reason: str,
    ) -> IterativeInfo:
        if converged:
            code = 0
        elif reason.startswith("breakdown"):
            code = _BREAKDOWN_CODES.get(reason, -1)
        else:  # at least 1: a solve stopped by maxiter=0 did not converge either
            code = max(iterations, 1)
        self = super().__new__(cls, code)
        values = (converged, iterations, residual_norm, tolerance, method, reason)
        self.__dict__.update(zip(_INFO_FIELDS, values, strict=True))  # past __setattr__
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"IterativeInfo is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"IterativeInfo is immutable: cannot delete {name!r}")

    def __reduce__(self) -> tuple[type[IterativeInfo], tuple[Any, ...]]:
        return type(self), tuple(getattr(self, name) for name in _INFO_FIELDS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _INFO_FIELDS)
        return f"IterativeInfo({fields})"


_INFO_FIELDS = ("converged", "iterations", "residual_norm", "tolerance", "method", "reason")
# SciPy's own codes for BiCGSTAB's breakdowns (scipy.sparse.linalg.bicgstab), so that
# code ported from SciPy that tests them keeps working; other breakdowns are -1.
_BREAKDOWN_CODES = {
    _krylov.BICGSTAB_RHO: -10,
    _krylov.BICGSTAB_RV: -11,
    _krylov.BICGSTAB_OMEGA: -11,
}


def _is_array(a: Any) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype") and not hasattr(a, "matvec")


_OPERATOR_KINDS = "an array, a sparse matrix, a LinearOperator or a callable v -> A @ v"


def _check_operator_type(op: str, name: str, a: Any) -> None:
    """TypeError naming the argument unless ``a`` is a form an operator may take."""
    if isinstance(a, list | tuple):  # row blocks of a sharded solve, one per device
        bad = next((i for i, blk in enumerate(a) if len(getattr(blk, "shape", ())) != 2), None)
        if bad is None and a:
            return
        what = "an empty list" if not a else f"a list whose item {bad} is {type(a[bad]).__name__}"
        raise TypeError(
            f"{op}: argument {name!r} is {what}; expected {_OPERATOR_KINDS} (convert a nested "
            "list with numpy.asarray)"
        )
    if hasattr(a, "matvec") or (hasattr(a, "shape") and hasattr(a, "dtype")) or callable(a):
        return
    got = "is None" if a is None else f"has type {type(a).__name__}"
    raise TypeError(f"{op}: argument {name!r} {got}; expected {_OPERATOR_KINDS}")


def _placement_proxy(a: Any) -> Any:
    """An array telling ``prepare`` where ``a`` lives: itself, a sparse matrix's data, or None."""
    if a is None or (callable(a) and not hasattr(a, "shape")):
        return None
    if hasattr(a, "matvec"):  # LinearOperator: where it runs is its own business
        return None
    if _is_sparse_like(a):  # only a device sparse matrix decides placement
        return a.data if owner_of(a.data) is not None else None
    return a


def _operator(
    op: str, backend: Backend, a: Any, name: str, n: int, dtype: np.dtype
) -> Callable[[Any], Any]:
    """``a`` as ``v -> a @ v`` on ``backend`` (a host sparse matrix moved there, counted)."""
    if hasattr(a, "shape") and tuple(a.shape) != (n, n):
        raise ValueError(
            f"{op}: {name!r} has shape {tuple(a.shape)} but 'b' has shape ({n},); expected "
            f"({n}, {n})"
        )
    if _is_sparse_like(a):
        a = to_backend(backend, a, name, op=op)
        values = a.data
    elif not hasattr(a, "shape") and callable(a):
        return _checked_callable(op, name, a, n, dtype)
    else:
        values = a if _is_array(a) else None  # a LinearOperator cannot be looked into
    # As for 'b': an operator holding NaN or inf is no system to solve (with b = 0, x = 0
    # would be reported as its exact solution)
    if values is not None and not backend.linalg_all_finite(values):
        raise ValueError(f"{op}: argument {name!r} holds NaN or inf; a solve needs finite entries")
    return backend.linalg_matvec(a)


def _checked_callable(
    op: str, name: str, fn: Callable[[Any], Any], n: int, dtype: np.dtype
) -> Callable[[Any], Any]:
    """A user callable whose results are checked: shape ``(n,)`` (``(n, 1)`` is
    flattened, as SciPy's LinearOperator does) and a dtype the solve can hold."""

    def call(v: Any) -> Any:
        out = fn(v)
        shape = getattr(out, "shape", None)
        if shape != (n,):
            if shape != (n, 1):
                got = f"shape {tuple(shape)}" if shape is not None else type(out).__name__
                raise ValueError(
                    f"{op}: the callable {name!r} returned {got} for a vector of shape ({n},); "
                    f"expected an array of shape ({n},)"
                )
            out = out.reshape(n)
        if out.dtype != dtype and not np.can_cast(out.dtype, dtype, "same_kind"):
            raise TypeError(
                f"{op}: the callable {name!r} returned dtype {out.dtype} in a {dtype} solve; "
                f"give 'b' (or x0) the dtype {np.result_type(out.dtype, dtype)}"
            )
        return out

    return call


def _solve(
    method: str,
    a: Any,
    b: Any,
    x0: Any,
    rtol: float,
    atol: float,
    maxiter: int | None,
    m: Any,
    callback: Callable[[Any], Any] | None,
    *,
    setup: Callable[..., Any] | None = None,
    **extra: Any,
) -> tuple[Any, IterativeInfo]:
    """Validate, place and run one solve; ``setup`` places a sharded one (it is
    :func:`gpukit.sharding._krylov.setup`, passed by the sharded kind's solvers)."""
    op = f"gk.linalg.{method}"
    rtol, atol, maxiter = _check_controls(op, rtol, atol, maxiter, callback)
    _check_operator_type(op, "A", a)
    graph = extra.pop("graph", False)
    if not isinstance(graph, bool):
        raise TypeError(f"{op}: argument 'graph' must be True or False, got {graph!r}")
    plan = _krylov.GraphPlan(op) if graph else None
    if plan is not None and (setup is not None or isinstance(a, list | tuple)):
        plan.fall_back("a sharded solve's vectors are not one device's arrays")
        plan = None
    if setup is None and isinstance(a, list | tuple):  # row blocks, one per device
        sharded = implementation_of(op, "sharded")
        return sharded(
            a, b, x0, rtol=rtol, atol=atol, maxiter=maxiter, M=m, callback=callback, **extra
        )
    if m is not None:
        _check_operator_type(op, "M", m)
    start_mb = isinstance(x0, str)
    if start_mb and x0 != "Mb":
        raise ValueError(f"{op}: x0 must be an array, None or 'Mb', got {x0!r}")
    b = _dtypes.check(op, "b", b)
    x0 = None if x0 is None or start_mb else _dtypes.check(op, "x0", x0)
    for blk, name in _operators(a, m):
        _dtypes.check_operator(op, name, blk)
    if setup is not None:
        s = setup(op, a, b, x0, m)
        xp, matvec, psolve, b, x, dtype = s.space, s.matvec, s.psolve, s.b, s.x, s.dtype
        finite = s.space.all_finite
    else:
        xp, matvec, psolve, b, x, dtype, backend = _local_setup(op, a, b, x0, m)
        finite = backend.linalg_all_finite
        if method == "gmres":  # its small Hessenberg problem is solved on the host
            extra["to_host"] = backend.to_numpy
    if plan is not None:
        extra["graph"] = plan  # the loop's steps capture blocks where they can, or warn
    controls = (rtol, atol, maxiter, callback)
    return run(method, xp, matvec, psolve, b, x, dtype, finite, x0, start_mb, controls, extra)


def run(
    method: str,
    xp: Any,
    matvec: Callable[[Any], Any],
    psolve: Callable[[Any], Any] | None,
    b: Any,
    x: Any,
    dtype: np.dtype,
    finite: Callable[[Any], bool],
    x0: Any,
    start_mb: bool,
    controls: tuple[float, float, int | None, Callable[[Any], Any] | None],
    extra: dict[str, Any],
) -> tuple[Any, IterativeInfo]:
    """Solve with operands already placed in the vector space ``xp``: check ``b`` and
    ``x0``, run the loop under :func:`gpukit.linalg._krylov.run` and report (shared with
    :mod:`gpukit.distributed`, whose space holds Dask vectors).

    ``x`` is the solve's own buffer (zeros, or a copy of ``x0``; ``x0`` is None when not
    given or ``"Mb"``); ``controls`` are the validated ``(rtol, atol, maxiter, callback)``.
    """
    op = f"gk.linalg.{method}"
    rtol, atol, maxiter, callback = controls
    n = b.shape[0]
    bnorm = _krylov._norm(xp, b)
    if not math.isfinite(bnorm):
        _refuse_non_finite(op, "b", b, finite, dtype)
    if x0 is not None and not finite(x):
        raise ValueError(f"{op}: argument 'x0' holds NaN or inf; give a finite starting guess")
    tol = max(rtol * bnorm, atol)
    if maxiter is None:
        maxiter = 10 * n
    if bnorm == 0:  # x = 0 solves it exactly, whatever x0 (as SciPy)
        xp.multiply(x, 0, out=x)
        return x, IterativeInfo(True, 0, 0.0, tol, method, _krylov.CONVERGED)
    e = _krylov.balancing_exponent(bnorm, dtype)
    if e < 0 and x0 is not None and not _scales_finitely(xp, x, -e, dtype):
        e = 0  # x0 huge against b: scaled with it, it would overflow; solve it unscaled
    if e:  # solve A (x 2**-e) = b 2**-e: exact, and the loops' products stay in range
        b = _scaled_copy(xp, b, -e)
        if x0 is not None:
            _krylov.scale_by_power_of_two(xp, x, -e)
        if callback is not None:
            callback = _unscaling(xp, x, e, callback)
    # the tolerance of the system solved, formed at its scale: rtol * ||b|| of a b of
    # 1e-320 underflows to 0 in float64, which no residual meets ("maxiter reached")
    relative = rtol * math.ldexp(bnorm, -e)
    scaled_tol = max(relative, _ldexp_or_inf(atol, -e))
    if e:  # rtol's part reported as the residual is (scaled back, rounded alike), atol as given
        tol = max(_ldexp_or_inf(relative, e), atol)
    if start_mb and psolve is not None:
        xp.copyto(x, psolve(b))
    elif start_mb:
        xp.copyto(x, b)
    loop = getattr(_krylov, method)
    out = _krylov.run(
        loop, xp, matvec, psolve, b, x, x0 is None and not start_mb, scaled_tol,
        maxiter, callback, **extra,
    )  # fmt: skip
    residual, converged, reason = out.residual, out.converged, out.reason
    if e:
        _krylov.scale_by_power_of_two(xp, out.x, e)
        if converged:  # judged again as returned: scaled back, x may overflow (b/A of 1e308)
            # or lose bits to subnormals; the returned x, scaled again, is exact
            back = _scaled_copy(xp, out.x, -e)
            scaled = _krylov._norm(xp, _krylov.residual(xp, matvec, b, back, back))
            converged = scaled <= scaled_tol  # False for NaN or inf
            residual = scaled
            if not converged:
                reason = _krylov.RANGE
    residual = _ldexp_or_inf(residual, e)  # NaN (b - A x of NaN or inf) reported as inf
    info = IterativeInfo(converged, out.iterations, residual, tol, method, reason)
    if not info.converged:
        warn(
            f"{op} did not converge: {reason} after {out.iterations} iterations, "
            f"residual norm {residual:.3e} > tolerance {tol:.3e} (n={n}, dtype {dtype})",
            ConvergenceWarning,
        )
    return out.x, info


def _ldexp_or_inf(v: float, e: int) -> float:
    """``v * 2**e``; inf beyond float64 (math.ldexp raises OverflowError there) or for NaN."""
    if math.isnan(v):
        return math.inf
    try:
        return math.ldexp(v, e)
    except OverflowError:  # a diverged residual beyond float64 (the fuzz test)
        return math.inf


def _scales_finitely(xp: Any, v: Any, e: int, dtype: np.dtype) -> bool:
    """Whether ``v * 2**e`` is finite, judged on ``||v||`` (at least every entry's
    magnitude) so that no overflowing product is formed."""
    return _ldexp_or_inf(_krylov._norm(xp, v), e) <= float(np.finfo(dtype).max)


def _scaled_copy(xp: Any, v: Any, e: int) -> Any:
    """``v * 2**e`` in a new vector of the space (``v`` may be the caller's ``b``)."""
    out = xp.empty_like(v)
    xp.copyto(out, v)
    _krylov.scale_by_power_of_two(xp, out, e)
    return out


def _unscaling(xp: Any, x: Any, e: int, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``callback`` called with the iterate of the unscaled system, ``x 2**e``."""
    shown = xp.empty_like(x)

    def call(xk: Any) -> Any:
        xp.copyto(shown, xk)
        _krylov.scale_by_power_of_two(xp, shown, e)
        return callback(shown)

    return call


def _refuse_non_finite(
    op: str, name: str, v: Any, finite: Callable[[Any], bool], dtype: np.dtype
) -> None:
    """ValueError for a vector whose norm is not finite: NaN/inf in it, or overflow."""
    if not finite(v):
        raise ValueError(f"{op}: argument {name!r} holds NaN or inf; the system has no solution")
    raise ValueError(
        f"{op}: the norm of argument {name!r} overflows {dtype}; scale the system down"
    )


def _check_controls(
    op: str, rtol: Any, atol: Any, maxiter: Any, callback: Any
) -> tuple[float, float, int | None]:
    """Validate the stopping controls: TypeError for a wrong type, ValueError for a value."""
    try:
        rtol, atol = float(rtol), float(atol)
    except (TypeError, ValueError):
        raise TypeError(
            f"{op}: rtol and atol must be real numbers, got {rtol!r}, {atol!r}"
        ) from None
    if not (rtol >= 0 and atol >= 0):  # `not >=` also refuses NaN
        raise ValueError(f"{op}: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if maxiter is not None:
        try:
            maxiter = operator.index(maxiter)
        except TypeError:
            raise TypeError(f"{op}: maxiter must be an integer or None, got {maxiter!r}") from None
        if maxiter < 0:
            raise ValueError(f"{op}: maxiter must be >= 0, got {maxiter}")
    if callback is not None and not callable(callback):
        raise TypeError(f"{op}: callback must be callable or None, got {type(callback).__name__}")
    return rtol, atol, maxiter


def _operators(a: Any, m: Any) -> list[tuple[Any, str]]:
    """The operator arguments to dtype-check, row blocks of a list ``A`` one by one."""
    blocks = list(enumerate(a)) if isinstance(a, list | tuple) else [(None, a)]
    out = [(blk, "A" if i is None else f"A[{i}]") for i, blk in blocks]
    return out if m is None else [*out, (m, "M")]


def _local_setup(op: str, a: Any, b: Any, x0: Any, m: Any) -> tuple[Any, ...]:
    """Place a one-device solve: operators as mat-vecs, ``b`` and ``x`` in the solve's dtype.

    ``x`` is always a fresh buffer (zeros, or a copy of ``x0``): the solve never writes
    into an argument.
    """
    a_arr = a if _is_array(a) and not _is_sparse_like(a) else None
    m_arr = m if _is_array(m) and not _is_sparse_like(m) else None
    backend, (b, x0, a_arr, m_arr, _, _) = prepare(
        b,
        x0,
        a_arr,
        m_arr,
        None if a_arr is not None else _placement_proxy(a),
        None if m_arr is not None else _placement_proxy(m),
        names=("b", "x0", "A", "M", "A", "M"),
    )
    xp = backend.xp
    b = xp.asarray(b)
    if b.ndim != 1:
        raise ValueError(f"{op}: 'b' must be 1-D, got shape {tuple(b.shape)}")
    n = b.shape[0]
    if x0 is not None and tuple(x0.shape) != (n,):
        raise ValueError(f"{op}: 'x0' has shape {tuple(x0.shape)} but 'b' has shape ({n},)")
    a = a_arr if a_arr is not None else a
    m = m_arr if m_arr is not None else m
    # an operator without a dtype (SciPy's IdentityOperator has None) does not promote
    dtypes = [b.dtype] + [d for v in (a, m, x0) if (d := getattr(v, "dtype", None)) is not None]
    dtype = solve_dtype(*dtypes)
    matvec = _operator(op, backend, a, "A", n, dtype)
    psolve = None if m is None else _operator(op, backend, m, "M", n, dtype)
    b = b.astype(dtype, copy=False)
    x = xp.zeros(n, dtype=dtype) if x0 is None else x0.astype(dtype, copy=True)
    if n:  # the backend's fused updates (BLAS refuses empty vectors; xp handles n = 0)
        xp = backend.krylov_space(dtype)
    return xp, matvec, psolve, b, x, dtype, backend


def _is_sparse_like(a: Any) -> bool:
    return issparse(a)


_PARAMS = """
    Parameters
    ----------
    A : array, sparse matrix, LinearOperator or callable
        The ``(n, n)`` operator: a dense array, the backend's sparse matrix
        (``scipy.sparse`` / ``cupyx.scipy.sparse``; a SciPy one is moved to the GPU on
        the cupy backend, counted as a transfer), a SciPy or CuPy ``LinearOperator``, or
        a callable ``v -> A @ v``. Sharded (cg, bicgstab, minres): a row-split
        :class:`~gpukit.ShardedArray`, a list of row blocks (dense or sparse, block *i*
        for device *i*), or any dense/sparse matrix when ``b`` is sharded (split by
        rows like ``b``); a callable then maps a ShardedArray to a ShardedArray.
    b : array or ShardedArray, shape (n,)
        Right-hand side; sharded like ``A``'s rows when ``A`` is (host data is split).
    x0 : array, ShardedArray or "Mb", shape (n,), optional
        Starting guess (zeros by default; ``"Mb"`` starts from ``M @ b``, as in SciPy);
        never modified: the solve iterates on its own copy.
    rtol, atol : float
        Stop when ``||b - A x|| <= max(rtol * ||b||, atol)``.
    maxiter : int, optional
        Most iterations; ``10 * n`` by default.
    M : array, sparse matrix, LinearOperator or callable, optional
        Preconditioner approximating ``A^{-1}``, in the same forms as ``A``.
    callback : callable, optional
        Called as ``callback(x)`` with the current iterate{callback_when}.{extra}
    graph : bool, default False
{graph_block}
        captured at its first use in the solve (docs/gpu_cost.rst, "CUDA graphs"): the
        results are those of the eager iterations, bit for bit. Where capture cannot
        work (the operator calls cuBLAS or cuSPARSE, or synchronises; not the cupy
        backend; a sharded solve), the solve runs as without it and warns once, saying
        why.{graph_callback}

    Returns
    -------
    x : array or ShardedArray, shape (n,)
        The solution, on the backend of the inputs; sharded like ``b`` in a
        sharded solve.
    info : IterativeInfo
        ``converged`` (judged on the true residual), ``iterations``, ``residual_norm``,
        ``reason``, ...


    Raises
    ------
    ValueError
        ``b`` is not 1-D, or ``A``, ``M`` or ``x0`` do not match its length (or, sharded,
        its shard lengths); ``b`` or ``x0`` holds NaN or inf; a callable returned an
        array of the wrong shape.
    TypeError
        ``A`` or ``M`` is not an array, sparse matrix, LinearOperator or callable (the
        message names it); a callable returned a dtype the solve cannot hold; a sharded
        solve with gmres or with a LinearOperator; ``graph`` is not a bool.
    DeviceMismatchError
        Sharded arguments on different devices.

    Warns
    -----
    ConvergenceWarning
        The tolerance was not reached (also ``info.converged`` is False).
    GpukitWarning
        ``graph=True`` where capture cannot work (once per solve).

    Notes
    -----
    The solve computes in the common dtype of its inputs, float16 in float32 and bool
    or integers in float64. It writes only into its own buffers: what ``A`` and ``M``
    return is only read (operators may return their input or a reused buffer), and
    ``b`` and ``x0`` are never modified. On a GPU the host reads the solve's status
    every few iterations (every 10 in steady state; every iteration with a callback):
    the device skips every update after a stop, so ``x`` and ``info`` are those of the
    iteration that stopped, after up to 9 iterations of discarded work.
"""


_GRAPH_BLOCK = """\
        On a GPU (the cupy backend), run each steady-state block of 10 iterations
        (between two reads of the status) as one replay of a CUDA graph,"""
_GRAPH_CALLBACK = " A callback sees every iteration: nothing is replayed then."


def _document(
    fn: Callable[..., Any], when: str = " after each iteration", extra: str = "",
    graph: tuple[str, str] = (_GRAPH_BLOCK, _GRAPH_CALLBACK),
) -> None:  # fmt: skip
    """Put the shared sections into ``fn``'s docstring in numpydoc's order: its summary,
    Parameters to Warns, its See Also, Notes, its Examples."""
    head, _, examples = fn.__doc__.partition("    Examples")
    summary, _, see_also = head.partition("    See Also")
    params = _PARAMS.replace("{callback_when}", when).replace("{extra}", extra)
    params = params.replace("{graph_block}", graph[0]).replace("{graph_callback}", graph[1])
    shared, _, notes = params.partition("    Notes")
    fn.__doc__ = summary.rstrip() + "\n" + shared + "    See Also" + see_also.rstrip()
    fn.__doc__ += "\n\n    Notes" + notes + "\n    Examples" + examples


# The kind of x: NumPy operands give the active backend's array, a sharded b a sharded x;
# otherwise (CuPy, Dask, operators) what the inputs are, which checkers may not know.
@overload
def cg(
    A: NumpyArray, b: NumpyArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Array, IterativeInfo]: ...
@overload
def cg(
    A: Any, b: ShardedArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[ShardedArray, IterativeInfo]: ...
@overload
def cg(
    A: Any, b: Any, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Any, IterativeInfo]: ...


@operation("gk.linalg.cg")
def cg(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    maxiter: int | None = None,
    M: Any = None,
    callback: Callable[[Any], Any] | None = None,
    graph: bool = False,
) -> tuple[Any, IterativeInfo]:
    """Conjugate gradients for Hermitian positive-definite ``A``.

    One mat-vec, two dot products and three in-place vector updates per iteration.

    See Also
    --------
    minres : For a Hermitian ``A`` that may be indefinite.
    bicgstab, gmres : For a general ``A``.
    solve : The direct solver, for dense ``A``.
    scipy.sparse.linalg.cg : SciPy's solver, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> A = gk.sparse.poisson2d(16)
    >>> x, info = gk.linalg.cg(A, np.ones(A.shape[0]), rtol=1e-10)
    >>> info.converged, bool(np.linalg.norm(A @ x - 1) < 1e-8)
    (True, True)
    """
    return _solve("cg", A, b, x0, rtol, atol, maxiter, M, callback, graph=graph)


@overload
def bicgstab(
    A: NumpyArray, b: NumpyArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Array, IterativeInfo]: ...
@overload
def bicgstab(
    A: Any, b: ShardedArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[ShardedArray, IterativeInfo]: ...
@overload
def bicgstab(
    A: Any, b: Any, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Any, IterativeInfo]: ...


@operation("gk.linalg.bicgstab")
def bicgstab(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    maxiter: int | None = None,
    M: Any = None,
    callback: Callable[[Any], Any] | None = None,
    graph: bool = False,
) -> tuple[Any, IterativeInfo]:
    """BiCGSTAB for general non-singular ``A`` (right preconditioning).

    See Also
    --------
    gmres : Restarted GMRES, for a general ``A``.
    cg : For a Hermitian positive-definite ``A``.
    scipy.sparse.linalg.bicgstab : SciPy's solver, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> A = np.array([[4.0, 1.0], [-2.0, 3.0]])
    >>> x, info = gk.linalg.bicgstab(A, np.array([1.0, 2.0]), rtol=1e-12)
    >>> info.converged, x.round(6).tolist()
    (True, [0.071429, 0.714286])
    """
    return _solve("bicgstab", A, b, x0, rtol, atol, maxiter, M, callback, graph=graph)


@overload
def gmres(
    A: NumpyArray, b: NumpyArray, x0: Any = None, **controls: Unpack[_GmresControls]
) -> tuple[Array, IterativeInfo]: ...
@overload
def gmres(
    A: Any, b: Any, x0: Any = None, **controls: Unpack[_GmresControls]
) -> tuple[Any, IterativeInfo]: ...


@operation("gk.linalg.gmres")
def gmres(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    maxiter: int | None = None,
    M: Any = None,
    callback: Callable[[Any], Any] | None = None,
    restart: int = 20,
    graph: bool = False,
) -> tuple[Any, IterativeInfo]:
    """Restarted GMRES for general ``A`` (right preconditioning).

    Unlike SciPy, ``maxiter`` counts inner (Arnoldi) iterations, not restart cycles,
    so it means the same for every solver. ``restart`` is the Krylov subspace size.

    See Also
    --------
    bicgstab : For a general ``A``, without a restart length to choose.
    minres : For a Hermitian ``A``.
    scipy.sparse.linalg.gmres : SciPy's solver, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> A = np.array([[4.0, 1.0], [-2.0, 3.0]])
    >>> x, info = gk.linalg.gmres(A, np.array([1.0, 2.0]), rtol=1e-12)
    >>> info.converged, info.iterations, x.round(6).tolist()
    (True, 2, [0.071429, 0.714286])
    """
    if restart < 1:
        raise ValueError(f"gk.linalg.gmres: restart must be >= 1, got {restart}")
    return _solve("gmres", A, b, x0, rtol, atol, maxiter, M, callback, restart=restart, graph=graph)


@overload
def minres(
    A: NumpyArray, b: NumpyArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Array, IterativeInfo]: ...
@overload
def minres(
    A: Any, b: ShardedArray, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[ShardedArray, IterativeInfo]: ...
@overload
def minres(
    A: Any, b: Any, x0: Any = None, **controls: Unpack[_Controls]
) -> tuple[Any, IterativeInfo]: ...


@operation("gk.linalg.minres")
def minres(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    maxiter: int | None = None,
    M: Any = None,
    callback: Callable[[Any], Any] | None = None,
    graph: bool = False,
) -> tuple[Any, IterativeInfo]:
    """MINRES for Hermitian, possibly indefinite ``A`` (``M`` must be positive definite).

    With a preconditioner the recurrence tracks the residual in the ``M`` norm; the solve
    goes on (restarting with a tighter tolerance) until the true 2-norm residual meets
    the tolerance. A singular ``A`` on the Krylov subspace (``A = 0``, or ``b`` outside
    the range of a singular ``A``) is a breakdown, never "converged".

    See Also
    --------
    cg : For a Hermitian positive-definite ``A``.
    gmres : For a general ``A``.
    scipy.sparse.linalg.minres : SciPy's solver, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> A = np.array([[2.0, 1.0], [1.0, -3.0]])  # symmetric indefinite
    >>> x, info = gk.linalg.minres(A, np.array([3.0, -2.0]), rtol=1e-12)
    >>> info.converged, x.round(6).tolist()
    (True, [1.0, 1.0])
    """
    return _solve("minres", A, b, x0, rtol, atol, maxiter, M, callback, graph=graph)


_document(cg)
_document(bicgstab)
_document(
    gmres,
    " after each restart cycle",
    "\n    restart : int, default 20\n        Krylov subspace size built before each restart.",
    (
        """\
        On a GPU (the cupy backend), run the Arnoldi steps between two reads of a
        cycle's columns in steady state (10, or fewer up to the cycle's end) as one
        replay of a CUDA graph,""",
        """ The end of a cycle runs eagerly (its small
        least-squares problem is solved on the host before ``x`` is updated), and so
        does a cycle that ``maxiter`` cuts short.""",
    ),
)
_document(minres)


# gmres has a sharded implementation only to say why it refuses (gpukit.sharding._krylov)
for _name, _where in (
    ("cg", {}),
    ("bicgstab", {}),
    ("gmres", {"sharded": TypeError}),
    ("minres", {}),
):
    _op = f"gk.linalg.{_name}"
    declare(_op, checked(_op, "b", then=solve_dtype), where=_where)
