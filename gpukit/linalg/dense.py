"""Dense linear algebra: solvers, factorisations, determinants and norms.

Each function validates its inputs (finiteness too: SciPy's ``check_finite``), picks the
backend once (:func:`gpukit._dispatch.prepare`) and calls one backend method; singular or
non-positive-definite matrices raise :class:`gpukit.LinAlgError` on every backend (see
:func:`gpukit.linalg._checks.guarded`). Batching follows ``numpy.linalg``: leading
dimensions are stacks of matrices; results are ``numpy.linalg``'s named tuples.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .._dispatch import operation, reject
from .._dispatch.capabilities import checked, declare
from .._dispatch.inputs import keep, plan_for, plan_for_pair
from .._runtime import plans as _plans
from .._runtime.plans import token
from . import _checks, _docs, _norm_range, _structure
from ._results import EighResult, QRResult, SlogdetResult, SVDResult

if TYPE_CHECKING:
    from .._typing import Array, NumpyArray

__all__ = [
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "inv",
    "lstsq",
    "norm",
    "qr",
    "slogdet",
    "solve",
    "svd",
]

_PROBLEM = {
    "gen": "matrix 'a' is singular",
    "diagonal": "matrix 'a' is singular",
    "pos": "matrix 'a' is not positive definite",
}


# NumPy operands give the active backend's array; others (CuPy, Dask) what the inputs are,
# which checkers may not know.
@overload
def solve(
    a: NumpyArray,
    b: NumpyArray,
    *,
    assume_a: str | None = None,
    lower: bool = False,
    transposed: bool = False,
    check_finite: bool = True,
) -> Array: ...
@overload
def solve(
    a: Any,
    b: Any,
    *,
    assume_a: str | None = None,
    lower: bool = False,
    transposed: bool = False,
    check_finite: bool = True,
) -> Any: ...


# (operation, selected backend, a's and b's types, dtypes and shapes, assume_a) -> (backend,
# structure, method, solver: None when either is empty, the solver screening a: None where
# the solver reads less of a than check_finite checks or on a device, eps of the dtype,
# whether the backend is a device's) where a and b pass the checks unchanged
_SOLVE = _plans.table()


def _solver(backend: Any, method: str, a: Any, b: Any, screen: bool = False) -> Any:
    """``solve(matrix, b) -> (x, rcond)`` for ``method`` on arrays like ``a`` and ``b``:
    the backend's (:meth:`~gpukit.backend.Backend.linalg_solve_plan`; with ``screen``,
    :meth:`~gpukit.backend.Backend.linalg_solve_plan_screened`'s, refusing a matrix
    holding NaN or inf), or a diagonal's."""
    if method == "diagonal":
        return functools.partial(_structure.solve_diagonal, backend.xp)
    if screen:
        return backend.linalg_solve_plan_screened(method, a.shape, b.shape, a.dtype)
    return backend.linalg_solve_plan(method, a.shape, b.shape, a.dtype)


@operation("gk.linalg.solve")
@_docs.shared
def solve(
    a: Any,
    b: Any,
    *,
    assume_a: str | None = None,
    lower: bool = False,
    transposed: bool = False,
    check_finite: bool = True,
) -> Any:
    """Solve ``a @ x = b`` for ``x``, batched like :func:`numpy.linalg.solve`, with the
    options of :func:`scipy.linalg.solve`.

    Parameters
    ----------
    a : array_like, shape (..., M, M)
        Coefficient matrices.
    b : array_like, shape (M,) or (..., M, K)
        Right-hand sides; a vector only when 1-D (NumPy 2 rule). Batch dimensions
        broadcast against ``a``'s.
    assume_a : str, optional
        The structure of ``a``, with SciPy's names; only the part of ``a`` the structure
        names is read. ``None`` (default), ``"gen"``/``"general"``, ``"banded"``: LU.
        ``"sym"``/``"symmetric"``, ``"her"``/``"hermitian"``: the symmetric (Hermitian)
        matrix one triangle defines, by LU. ``"pos"``/``"positive definite"``: Hermitian
        positive definite, by Cholesky (about twice as fast as LU). ``"diagonal"``,
        ``"tridiagonal"``, ``"upper triangular"``, ``"lower triangular"``: the diagonal,
        the three central diagonals, or the triangle. ``None`` does not scan ``a`` for
        structure as SciPy's does: LU is right for every structure.
    lower : bool, default False
        For ``"sym"``, ``"her"`` and ``"pos"``: read the lower triangle (else the upper).
    transposed : bool, default False
        Solve ``a.T @ x = b`` (the transpose, not the conjugate transpose; also for
        complex ``a``, where SciPy raises NotImplementedError).
    {check_finite}

    Returns
    -------
    array, shape of the broadcast ``b``
        The solution, in the common floating dtype of ``a`` and ``b`` (bool and integers
        in float64, float16 in float32).

    Raises
    ------
    {non_numeric}
    LinAlgError
        ``a`` is singular (or, with ``"pos"``, not positive definite), on every backend.
    ValueError
        ``a`` is not square, ``b`` does not match it (the message names both shapes),
        ``assume_a`` is unknown, or (``check_finite``) an input holds NaN or inf.

    Warns
    -----
    scipy.linalg.LinAlgWarning
        ``a`` is ill-conditioned: its reciprocal condition number (1-norm) is below the
        machine epsilon of the dtype, as SciPy warns. The estimate is LAPACK's
        (``xGECON``/``xPOCON``) for one matrix on the CPU, the exact value otherwise.

    See Also
    --------
    lstsq : Least squares, for a rectangular or rank-deficient ``a``.
    cho_solve : Solve with a Cholesky factor already computed.
    cg, gmres : Iterative solvers, for large sparse ``a``.
    scipy.linalg.solve : SciPy's solver, whose options this takes.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> gk.linalg.solve(a, np.array([1.0, 2.0]), assume_a="pos").round(4).tolist()
    [0.0909, 0.6364]
    >>> gk.linalg.solve(np.array([[2.0, 0.0], [9.0, 4.0]]), np.array([2.0, 4.0]),
    ...                 assume_a="upper triangular").tolist()  # the 9 is not read
    [1.0, 1.0]
    """
    op = "gk.linalg.solve"
    plan, key = plan_for_pair(_SOLVE, op, a, b, assume_a)
    if plan is None:
        since = _plans.generation()
        given = (a, b)
        kind = _structure.kind(op, assume_a)
        backend, (a, b) = _checks.place(op, (a, b), ("a", "b"))
        _checks.square(op, "a", a)
        a, b, squeeze = _checks.rhs(op, backend.xp, a, b)
        a, b = _checks.as_inexact(backend.xp, a, b)
        method = _structure.method(kind)
        solver = screened = None
        if a.size and b.size:
            solver = _solver(backend, method, a, b)
            if kind == "gen" and not backend.is_device:  # it reads all of a: as checked
                screened = _solver(backend, method, a, b, screen=True)
        plan = (backend, kind, method, solver, screened, _structure.eps(a.dtype))
        plan += (backend.is_device,)
        keep(_SOLVE, key, since, plan, backend, given, (a, b))
    else:  # a and b as they came: no broadcast, no cast
        squeeze = False
    backend, kind, method, solver, screened, eps, device = plan
    if solver is None:  # nothing to solve (LAPACK refuses n = 0), as SciPy
        if check_finite:
            _checks.finite(op, backend, "a", a)
        x = backend.xp.zeros(b.shape, dtype=b.dtype)
        return x[..., 0] if squeeze else x
    # LU reads a general matrix as it is; any other, what its structure names of it
    m = (
        a
        if kind == "gen" and not transposed
        else _structure.effective(backend.xp, a, kind, lower, transposed)[0]
    )
    # b is checked through x: every entry of b (after the row permutation) reaches one
    # entry of x as (b_k - finite terms) / nonzero pivot in the triangular solves, and
    # nothing turns NaN or inf back into a finite number (0 * inf is NaN), so a
    # non-finite b gives a non-finite x, and failure names b in finite's ValueError
    # after a call that ends on any input (lstsq's gelsd may not: it checks b first).
    # One pass over b less, and one device synchronisation less on a GPU.
    if device:
        x = _solve_on_device(op, backend, method, solver, eps, a, b, m, check_finite)
        return x[..., 0] if squeeze else x
    screen = False
    if check_finite:  # _checks.finite of a, inline, or the solver's screen where m is a
        if m is a and screened is not None:
            screen, solver = True, screened
        elif not backend.linalg_all_finite(a):
            raise ValueError(_checks.non_finite(op, "a", a))
    # _checks.guarded's steps, inline: the library's error or a non-finite x is a failure
    failed = None
    try:
        x, rcond = solver(m, b)
    except np.linalg.LinAlgError as exc:
        failed = exc
    if failed is not None:
        if screen and not backend.linalg_all_finite(a):  # the screen's refusal: the
            raise ValueError(_checks.non_finite(op, "a", a))  # check's error, uncaused
        raise _checks.failure(op, backend, _PROBLEM[method], ("a", "b"), (a, b)) from failed
    if not backend.linalg_all_finite(x):
        raise _checks.failure(op, backend, _PROBLEM[method], ("a", "b"), (a, b))
    if type(rcond) is not float or not rcond >= eps:  # one host matrix above eps: no warning
        _structure.warn_ill_conditioned(op, backend, rcond, a.dtype)
    return x[..., 0] if squeeze else x


def _solve_on_device(
    op: str,
    backend: Any,
    method: str,
    solver: Any,
    eps: float,
    a: Any,
    b: Any,
    m: Any,
    check_finite: bool,
) -> Any:
    """``solve``'s last steps on a device: ``x`` of ``solver(m, b)``, with the checks of
    the host's steps (``a`` finite, before the solver's failure; ``x`` finite; rcond at
    least ``eps``) made on the device and read once, after the solve. ``m`` (``a``, or
    what its structure names of it) is screened (``Backend.linalg_screened``) so the
    solver never sees the NaN or inf the unread check refuses."""
    flags = []
    if check_finite:
        flags.append(backend.linalg_finite_flag(a))
        m = backend.linalg_screened(m, flags[0])
    failed = None
    try:
        x, rcond = solver(m, b)
    except np.linalg.LinAlgError as exc:  # a solver that reads its own verdict (devInfo)
        failed = exc
    else:
        conditioned = rcond >= eps  # a stack's is reduced to one flag
        conditioned = conditioned.all() if conditioned.ndim else conditioned
        flags += [backend.linalg_finite_flag(x), conditioned]
    verdicts = backend.linalg_read(flags) if flags else []
    if check_finite and not verdicts[0]:
        raise ValueError(_checks.non_finite(op, "a", a))
    if failed is not None or not verdicts[-2]:
        raise _checks.failure(op, backend, _PROBLEM[method], ("a", "b"), (a, b)) from failed
    if not verdicts[-1]:  # NaN is not above eps
        _structure.warn_ill_conditioned(op, backend, rcond, a.dtype)
    return x


@operation("gk.linalg.lstsq")
@_docs.shared
def lstsq(
    a: Any, b: Any, *, rcond: float | None = None, check_finite: bool = True
) -> tuple[Any, Any, int, Any]:
    """Least-squares solution of ``a @ x = b``, as :func:`numpy.linalg.lstsq`.

    Parameters
    ----------
    a : array_like, shape (M, N)
        Coefficient matrix (any rank: rank-deficient problems get the minimum-norm
        solution).
    b : array_like, shape (M,) or (M, K)
        Right-hand sides.
    rcond : float, optional
        Singular values below ``rcond * max(sv)`` count as zero; default machine
        precision times ``max(M, N)``.
    {check_finite}

    Returns
    -------
    x : array, shape (N,) or (N, K)
    residuals : array
        Squared residual norms per column (empty when rank < N or M <= N).
    rank : int
        Effective rank of ``a``.
    s : array, shape (min(M, N),)
        Singular values of ``a``. The four come as a plain tuple, as NumPy's.

    Raises
    ------
    {non_numeric}
    ValueError
        ``a`` is not 2-D or ``b`` does not have M rows (the message names both shapes),
        or (``check_finite``) an input holds NaN or inf: LAPACK's ``gelsd`` may never
        return on it.
    LinAlgError
        The SVD did not converge.

    See Also
    --------
    solve : For a square, non-singular ``a``.
    qr, svd : The factorisations behind least squares.
    numpy.linalg.lstsq : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> x, res, rank, s = gk.linalg.lstsq(a, np.array([1.0, 2.0, 3.0]))
    >>> x.round(6).tolist(), int(rank)
    ([1.0, 1.0], 2)
    """
    op = "gk.linalg.lstsq"
    plan, key = plan_for_pair(_LSTSQ, op, a, b, None)
    if plan is None:
        since = _plans.generation()
        given = (a, b)
        backend, (a, b) = _checks.place(op, (a, b), ("a", "b"))
        if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
            raise ValueError(
                f"{op}: 'a' has shape {tuple(a.shape)} and 'b' has shape "
                f"{tuple(b.shape)}; expected a of shape (M, N) and b of shape (M,) or (M, K)"
            )
        a, b = _checks.as_inexact(backend.xp, a, b)
        plan = (backend, _checks.guard(backend))
        keep(_LSTSQ, key, since, plan, backend, given, (a, b))
    backend, guarded = plan
    x, res, rank, s = guarded(
        op,
        backend,
        "the SVD of 'a' did not converge",
        ("a", "b"),
        (a, b),
        2 if check_finite else 0,
        None,
        backend.linalg_lstsq,
        a,
        b,
        rcond,
    )
    return x, res, int(rank), s


# (operation, selected backend, a's and b's types, dtypes and shapes) -> (the backend such
# arrays stay on, in an inexact dtype and of shapes lstsq takes; its _checks.guard)
_LSTSQ = _plans.table()


@overload
def inv(a: NumpyArray, *, check_finite: bool = True) -> Array: ...
@overload
def inv(a: Any, *, check_finite: bool = True) -> Any: ...


@operation("gk.linalg.inv")
@_docs.shared
def inv(a: Any, *, check_finite: bool = True) -> Any:
    """Inverse of a (stack of) square matrices.

    Prefer :func:`solve` for solving systems: it is faster and more accurate.

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    {check_finite}

    Returns
    -------
    array, shape (..., M, M)

    Raises
    ------
    {non_numeric}
    LinAlgError
        ``a`` is singular.
    {not_square}

    See Also
    --------
    solve : Solve ``a @ x = b`` without forming the inverse (faster and more accurate).
    det : The determinant.
    numpy.linalg.inv : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    op = "gk.linalg.inv"
    backend, guarded, a = _matrix_input(op, a, False)
    return guarded(
        op,
        backend,
        "matrix 'a' is singular",
        ("a",),
        (a,),
        check_finite,
        _checks.itself,
        backend.linalg_inv,
        a,
    )


# (operation, selected backend, a's type, dtype and shape) -> (the backend a matrix of an
# inexact dtype and the shape the operation takes stays on, its _checks.guard)
_MATRIX = _plans.table()


def _matrix_input(
    op: str, a: Any, check_finite: bool, shape_check: Any = _checks.square
) -> tuple[Any, Any, Any]:
    """``(backend, guarded, a)``: ``a`` placed, its shape checked (a stack of square
    matrices unless ``shape_check`` says otherwise), in an inexact dtype and, if
    ``check_finite``, finite (a read of its own on a device: operations with more to
    check pass False and have ``guarded``, the backend's :func:`_checks.guard`, check
    ``a`` with the result); planned per key."""
    plan, key = plan_for(_MATRIX, op, a)
    if plan is None:
        since = _plans.generation()
        given = a
        backend, (a,) = _checks.place(op, (a,), ("a",))
        shape_check(op, "a", a)
        (a,) = _checks.as_inexact(backend.xp, a)
        plan = (backend, _checks.guard(backend))
        keep(_MATRIX, key, since, plan, backend, (given,), (a,))
    backend, guarded = plan
    if check_finite and not backend.linalg_all_finite(a):  # _checks.finite, inline
        raise ValueError(_checks.non_finite(op, "a", a))
    return backend, guarded, a


@operation("gk.linalg.det")
@_docs.shared
def det(a: Any, *, check_finite: bool = True) -> Any:
    """Determinant of a (stack of) square matrices; 0 for a singular one.

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    {check_finite}

    Returns
    -------
    array, shape (...)

    Raises
    ------
    {non_numeric}
    ValueError
        ``a`` is not a stack of square matrices, or (``check_finite``) holds NaN or inf
        (NumPy returns NaN there; SciPy raises, as here).

    See Also
    --------
    slogdet : The sign and log of the determinant, which do not overflow.
    inv : The inverse.
    numpy.linalg.det : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]])).round(12))
    -2.0
    """
    backend, _, a = _matrix_input("gk.linalg.det", a, check_finite)
    return backend.linalg_det(a)


@operation("gk.linalg.slogdet")
@_docs.shared
def slogdet(a: Any, *, check_finite: bool = True) -> SlogdetResult:
    """Sign and natural log of the absolute determinant, safe from overflow.

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    {check_finite}

    Returns
    -------
    SlogdetResult
        NumPy's named tuple ``(sign, logabsdet)``:

        sign : array, shape (...)
            +1, -1 (complex of modulus 1 for complex input), or 0 for a singular matrix.
        logabsdet : array, shape (...)
            ``log|det a|``; ``-inf`` for a singular matrix.

    Raises
    ------
    {non_numeric}
    {not_square}

    See Also
    --------
    det : The determinant itself.
    numpy.linalg.slogdet : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> result = gk.linalg.slogdet(np.diag([1e200, -1e200]))
    >>> float(result.sign), round(float(result.logabsdet), 3)
    (-1.0, 921.034)
    """
    backend, _, a = _matrix_input("gk.linalg.slogdet", a, check_finite)
    out = backend.linalg_slogdet(a)
    return out if type(out) is SlogdetResult else SlogdetResult(*out)


@operation("gk.linalg.cholesky")
@_docs.shared
def cholesky(a: Any, *, check_finite: bool = True) -> Any:
    """Lower Cholesky factor ``L`` with ``a = L @ L^H`` (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, M)
        Hermitian positive-definite matrices; only the lower triangle is read.
    {check_finite}

    Returns
    -------
    array, shape (..., M, M)
        Lower-triangular factors (upper triangle zero).

    Raises
    ------
    {non_numeric}
    LinAlgError
        ``a`` is not positive definite, on every backend.
    {not_square}

    See Also
    --------
    cho_solve : Solve with the factor.
    eigh : Eigenvalues, for a Hermitian ``a`` that may not be positive definite.
    numpy.linalg.cholesky : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    op = "gk.linalg.cholesky"
    backend, guarded, a = _matrix_input(op, a, False)
    return guarded(
        op,
        backend,
        "matrix 'a' is not positive definite",
        ("a",),
        (a,),
        check_finite,
        _checks.itself,
        backend.linalg_cholesky,
        a,
    )


@operation("gk.linalg.cho_solve")
@_docs.shared
def cho_solve(c: Any, b: Any, *, check_finite: bool = True) -> Any:
    """Solve ``a @ x = b`` given the Cholesky factor of ``a``.

    Factor once with :func:`cholesky`, then solve for many right-hand sides.

    Parameters
    ----------
    c : array_like, shape (..., M, M), or a tuple ``(c, lower)``
        The lower factor from :func:`cholesky`, or SciPy's ``(c, lower)`` from
        :func:`scipy.linalg.cho_factor`: only the triangle ``lower`` names is read.
    b : array_like, shape (M,) or (..., M, K)
        Right-hand sides, with :func:`solve`'s rules.
    {check_finite}

    Returns
    -------
    array, shape of the broadcast ``b``

    Raises
    ------
    {non_numeric}
    LinAlgError
        ``c`` has a zero on its diagonal (the result is not finite).
    ValueError
        ``c`` is not square or ``b`` does not match it (the message names both shapes),
        or (``check_finite``) an input holds NaN or inf.

    See Also
    --------
    cholesky : The factor this takes.
    solve : Solve without a factor (``assume_a="pos"`` for a positive-definite ``a``).
    scipy.linalg.cho_solve : SciPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> gk.linalg.cho_solve(gk.linalg.cholesky(a), np.array([6.0, 7.0])).tolist()
    [1.0, 1.0]
    """
    op = "gk.linalg.cho_solve"
    lower = True
    if isinstance(c, tuple):
        if len(c) != 2:
            raise ValueError(f"{op}: a tuple 'c' must be (c, lower), got {len(c)} items")
        c, lower = c
        reject(op, c=c)  # a sharded or Dask factor, as refused outside the tuple
    plan, key = plan_for_pair(_CHO_SOLVE, op, c, b, None)
    if plan is None:
        since = _plans.generation()
        given = (c, b)
        backend, (c, b) = _checks.place(op, (c, b), ("c", "b"))
        _checks.square(op, "c", c)
        c, b, squeeze = _checks.rhs(op, backend.xp, c, b)
        c, b = _checks.as_inexact(backend.xp, c, b)
        empty = c.size == 0 or b.size == 0
        guarded = _checks.guard(backend)
        keep(_CHO_SOLVE, key, since, (backend, empty, guarded), backend, given, (c, b))
    else:  # c and b as they came: no broadcast, no cast
        (backend, empty, guarded), squeeze = plan, False
    xp = backend.xp
    if empty:  # nothing to solve (LAPACK refuses n = 0)
        if check_finite:
            _checks.finite(op, backend, "c", c)
        x = xp.zeros(b.shape, dtype=b.dtype)
        return x[..., 0] if squeeze else x
    # the backends read the lower triangle of a lower factor: an upper one U gives
    # L = U^H, whose lower triangle is U's upper (the other triangle, which cho_factor
    # leaves unspecified, is never read)
    lower_factor = c if lower else xp.conj(xp.swapaxes(c, -1, -2))
    x = guarded(
        op,
        backend,
        "factor 'c' is singular",
        ("c", "b"),
        (c, b),
        check_finite,  # c; b is checked through x, as in solve
        _checks.itself,
        backend.linalg_cho_solve,
        lower_factor,
        b,
    )
    return x[..., 0] if squeeze else x


# (operation, selected backend, c's and b's types, dtypes and shapes) -> (backend, whether
# either is empty, the backend's _checks.guard) where c and b pass the checks unchanged
_CHO_SOLVE = _plans.table()


@overload
def qr(
    a: Any, mode: Literal["reduced", "complete"] = "reduced", *, check_finite: bool = True
) -> QRResult: ...
@overload
def qr(a: Any, mode: str, *, check_finite: bool = True) -> Any: ...  # "r": R alone


@operation("gk.linalg.qr")
@_docs.shared
def qr(a: Any, mode: str = "reduced", *, check_finite: bool = True) -> Any:
    """QR factorisation ``a = Q @ R`` (batched), as :func:`numpy.linalg.qr`.

    Parameters
    ----------
    a : array_like, shape (..., M, N)
    mode : {"reduced", "complete", "r"}
        ``"reduced"``: Q (..., M, K), R (..., K, N) with K = min(M, N); ``"complete"``:
        Q (..., M, M); ``"r"``: R only.
    {check_finite}

    Returns
    -------
    QRResult or array
        NumPy's named tuple ``(Q, R)``; ``R`` alone for ``mode="r"``.

    Raises
    ------
    {non_numeric}
    ValueError
        ``a`` has fewer than 2 dimensions, ``mode`` is unknown, or (``check_finite``)
        ``a`` holds NaN or inf.

    See Also
    --------
    svd : The singular value decomposition.
    lstsq : Least squares.
    numpy.linalg.qr : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> Q, R = gk.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> bool(np.allclose(Q @ R, [[3.0, 1.0], [4.0, 2.0]]))
    True
    """
    op = "gk.linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"{op}: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    backend, _, a = _matrix_input(op, a, check_finite, _checks.matrix)
    out = backend.linalg_qr(a, mode)
    return out if mode == "r" or type(out) is QRResult else QRResult(*out)


@operation("gk.linalg.eigh")
@_docs.shared
def eigh(a: Any, UPLO: str = "L", *, check_finite: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    UPLO : {"L", "U"}
        Which triangle of ``a`` is read.
    {check_finite}

    Returns
    -------
    EighResult
        NumPy's named tuple ``(eigenvalues, eigenvectors)``:

        eigenvalues : array, shape (..., M)
            Real eigenvalues in ascending order.
        eigenvectors : array, shape (..., M, M)
            Orthonormal eigenvectors in the columns: ``a @ v = v * w``.

    Raises
    ------
    {non_numeric}
    LinAlgError
        The eigensolver did not converge.
    ValueError
        ``a`` is not a stack of square matrices, ``UPLO`` is not "L" or "U", or
        (``check_finite``) ``a`` holds NaN or inf.

    See Also
    --------
    svd : The singular value decomposition, for any matrix.
    cholesky : The factor of a positive-definite matrix.
    numpy.linalg.eigh : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.eigh(np.array([[2.0, 1.0], [1.0, 2.0]])).eigenvalues.round(12).tolist()
    [1.0, 3.0]
    """
    op = "gk.linalg.eigh"
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    backend, guarded, a = _matrix_input(op, a, False)
    out = guarded(
        op,
        backend,
        "the eigensolver did not converge for 'a'",
        ("a",),
        (a,),
        check_finite,
        _checks.each,
        backend.linalg_eigh,
        a,
        UPLO,
    )
    return out if type(out) is EighResult else EighResult(*out)


@overload
def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: Literal[True] = True,
    *,
    check_finite: bool = True,
) -> SVDResult: ...
@overload
def svd(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, *, check_finite: bool = True
) -> Any: ...  # compute_uv False: S alone


@operation("gk.linalg.svd")
@_docs.shared
def svd(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, *, check_finite: bool = True
) -> Any:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, N)
    full_matrices : bool
        ``U`` (..., M, M) and ``Vh`` (..., N, N) when True, else reduced to
        K = min(M, N).
    compute_uv : bool
        When False, only ``S`` is computed and returned.
    {check_finite}

    Returns
    -------
    SVDResult or array
        NumPy's named tuple ``(U, S, Vh)``, ``S`` (..., K) in descending order; ``S``
        alone when ``compute_uv`` is False.

    Raises
    ------
    {non_numeric}
    LinAlgError
        The SVD did not converge.
    ValueError
        ``a`` has fewer than 2 dimensions, or (``check_finite``) holds NaN or inf.

    See Also
    --------
    eigh : Eigenvalues and eigenvectors of a Hermitian matrix.
    qr : The QR factorisation.
    norm : Norms, the 2-norm being the largest singular value.
    numpy.linalg.svd : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
    [4.0, 3.0]
    >>> gk.linalg.svd(np.eye(2)).S.tolist()
    [1.0, 1.0]
    """
    op = "gk.linalg.svd"
    backend, guarded, a = _matrix_input(op, a, False, _checks.matrix)
    out = guarded(
        op,
        backend,
        "the SVD of 'a' did not converge",
        ("a",),
        (a,),
        check_finite,
        _checks.each if compute_uv else _checks.itself,
        backend.linalg_svd,
        a,
        full_matrices,
        compute_uv,
    )
    return out if not compute_uv or type(out) is SVDResult else SVDResult(*out)


@operation("gk.linalg.norm")
@_docs.shared
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, with :func:`numpy.linalg.norm`'s ``ord``/``axis`` rules.

    Parameters
    ----------
    x : array_like
    ord : {None, "fro", "nuc", inf, -inf, int}
        Which norm (2-norm / Frobenius by default).
    axis : int or 2-tuple of int, optional
        Vector norm over one axis, matrix norm over two; all of ``x`` when None.
    keepdims : bool
        Keep the reduced axes with length one.

    Returns
    -------
    array or scalar

    Raises
    ------
    {non_numeric}
    ValueError
        ``ord`` is invalid for the number of axes, ``axis`` is out of range or repeated,
        or ``x`` has more than 2 dimensions with ``ord`` given and ``axis`` None.

    See Also
    --------
    svd : The singular values behind the 2-norm and the nuclear norm.
    numpy.linalg.norm : NumPy's function, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.linalg.norm(np.array([3.0, 4.0])))
    5.0
    >>> float(gk.linalg.norm(np.array([[1.0, -2.0], [3.0, 4.0]]), ord=1))
    6.0
    """
    plan, key = plan_for(
        _NORM_PLANS,
        "gk.linalg.norm",
        x,
        ord if ord is None else token(ord),  # None is no token: the common call keys as it is
        axis if axis is None else token(axis),
    )
    if plan is None:
        plan, x = _norm_plan(key, x, ord, axis)
    backend, half, rescued, axes = plan
    if half:
        x = x.astype(np.float32)
    if not rescued:
        out = backend.linalg_norm(x, ord, axis, keepdims)
    else:  # an overflowing power is rescued, not an overflow to report
        out = backend.linalg_norm_quiet(x, ord, axis, keepdims)
        # one norm between 0 and inf needs none: rescue's first test, without its call
        if out.ndim or not 0.0 < float(out) < math.inf:
            out = _norm_range.rescue(
                backend.xp, lambda y: backend.linalg_norm(y, ord, axis, keepdims), x, out,
                axes, keepdims,
            )  # fmt: skip
    return out.astype(np.float16) if half else out


# (operation, selected backend, x's type, dtype and shape, ord, axis) -> (backend, whether x
# is float16, whether an under- or overflow is to be rescued, the axes reduced)
_NORM_PLANS = _plans.table()


def _norm_plan(key: Any, x: Any, ord: Any, axis: Any) -> tuple[tuple[Any, ...], Any]:
    """Check ``norm``'s arguments and make its plan; keep it under ``key`` (None: not kept)
    when ``x`` passes through unchanged. Returns ``(plan, x)``, ``x`` on the backend."""
    since = _plans.generation()
    given = x
    backend, (x,) = _checks.place("gk.linalg.norm", (x,), ("x",))
    axes = _checks.norm_arguments("gk.linalg.norm", tuple(x.shape), ord, axis)
    # float16 is summed in float32 (no float16 square under- or overflows) and returned as
    # NumPy's float16: correctly rounded where float16 sums were ulps off
    half = x.dtype == np.float16
    work = np.float32 if half else x.dtype
    rescued = np.dtype(work).kind in "fc" and x.size > 0 and _norm_range.powered(ord, axes)
    plan = (backend, half, rescued, axes)
    keep(_NORM_PLANS, key, since, plan, backend, (given,), (x,))
    return plan, x


def _real(dtype: np.dtype) -> np.dtype:
    """The real dtype of the same precision (eigenvalues, norms, ``slogdet``'s logarithm)."""
    return np.finfo(dtype).dtype


# What each function computes in (first array of the result): the common dtype of
# linear algebra (_checks.solve_dtype); eigenvalues and norms are real, and a float16
# norm is returned in float16 (computed in float32).
for _name, _arg in (
    ("solve", "a"),
    ("inv", "a"),
    ("det", "a"),
    ("slogdet", "a"),
    ("cholesky", "a"),
    ("cho_solve", "c"),
    ("svd", "a"),
    ("qr", "a"),
    ("lstsq", "a"),
):
    declare(f"gk.linalg.{_name}", checked(f"gk.linalg.{_name}", _arg, then=_checks.solve_dtype))
declare(
    "gk.linalg.eigh", checked("gk.linalg.eigh", "a", then=lambda d: _real(_checks.solve_dtype(d)))
)
declare(
    "gk.linalg.norm",
    checked(
        "gk.linalg.norm", then=lambda d: d if d == np.float16 else _real(_checks.solve_dtype(d))
    ),
    notes={"float16": "computed in float32"},
)
