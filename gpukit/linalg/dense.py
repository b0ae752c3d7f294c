"""Dense linear algebra: solvers, factorisations, determinants and norms.

Each function validates its inputs, picks the backend once (:func:`gpukit._dispatch.prepare`)
and calls one backend method; singular or non-positive-definite matrices raise
:class:`gpukit.LinAlgError` on every backend (see :func:`gpukit.linalg._checks.guarded`).
Batching follows ``numpy.linalg``: leading dimensions are stacks of matrices.
"""

from __future__ import annotations

from typing import Any

from .._dispatch import operation
from . import _checks

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

_ASSUME = ("gen", "sym", "pos")
_PROBLEM = {
    "gen": "matrix 'a' is singular",
    "sym": "matrix 'a' is singular",
    "pos": "matrix 'a' is not positive definite",
}


def _finite(out: Any) -> list[Any]:
    return [out]


@operation("gk.linalg.solve")
def solve(a: Any, b: Any, *, assume_a: str = "gen") -> Any:
    """Solve ``a @ x = b`` for ``x``, batched like :func:`numpy.linalg.solve`.

    Parameters
    ----------
    a : array_like, shape (..., M, M)
        Coefficient matrices.
    b : array_like, shape (M,) or (..., M, K)
        Right-hand sides; a vector only when 1-D (NumPy 2 rule). Batch dimensions
        broadcast against ``a``'s.
    assume_a : {"gen", "sym", "pos"}
        ``"gen"``: general (LU). ``"sym"``: symmetric; solved by LU too, which is the
        fastest here (LAPACK ``sysv`` is slower in OpenBLAS and cuSOLVER has no batched
        one). ``"pos"``: Hermitian positive definite, by Cholesky (``potrf``/``potrs``),
        about twice as fast as LU; only the lower triangle of ``a`` is read.

    Returns
    -------
    array, shape of the broadcast ``b``
        The solution, in the common floating dtype of ``a`` and ``b``.

    Raises
    ------
    TypeError
        ``a`` or ``b`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        ``a`` is singular (or, with ``"pos"``, not positive definite), on every backend.
    ValueError
        ``a`` is not square, ``b`` does not match it (the message names both shapes), or
        ``assume_a`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> gk.linalg.solve(a, np.array([1.0, 2.0]), assume_a="pos").round(4).tolist()
    [0.0909, 0.6364]
    """
    if assume_a not in _ASSUME:
        raise ValueError(f"gk.linalg.solve: assume_a must be one of {_ASSUME}, got {assume_a!r}")
    backend, (a, b) = _checks.place("gk.linalg.solve", (a, b), ("a", "b"))
    xp = backend.xp
    _checks.square("gk.linalg.solve", "a", a)
    a, b, squeeze = _checks.rhs("gk.linalg.solve", xp, a, b)
    a, b = _checks.as_inexact(xp, a, b)
    x = _checks.guarded(
        "gk.linalg.solve",
        backend,
        _PROBLEM[assume_a],
        a,
        lambda: backend.linalg_solve(a, b, assume_a),
        check=_finite,
    )
    return x[..., 0] if squeeze else x


@operation("gk.linalg.lstsq")
def lstsq(a: Any, b: Any, *, rcond: float | None = None) -> tuple[Any, Any, int, Any]:
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

    Returns
    -------
    x : array, shape (N,) or (N, K)
    residuals : array
        Squared residual norms per column (empty when rank < N or M <= N).
    rank : int
        Effective rank of ``a``.
    s : array, shape (min(M, N),)
        Singular values of ``a``.

    Raises
    ------
    TypeError
        ``a`` or ``b`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    ValueError
        ``a`` is not 2-D or ``b`` does not have M rows (the message names both shapes).
    LinAlgError
        The SVD did not converge.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> x, res, rank, s = gk.linalg.lstsq(a, np.array([1.0, 2.0, 3.0]))
    >>> x.round(6).tolist(), int(rank)
    ([1.0, 1.0], 2)
    """
    backend, (a, b) = _checks.place("gk.linalg.lstsq", (a, b), ("a", "b"))
    xp = backend.xp
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(
            f"gk.linalg.lstsq: 'a' has shape {tuple(a.shape)} and 'b' has shape "
            f"{tuple(b.shape)}; expected a of shape (M, N) and b of shape (M,) or (M, K)"
        )
    a, b = _checks.as_inexact(xp, a, b)
    x, res, rank, s = _checks.guarded(
        "gk.linalg.lstsq",
        backend,
        "the SVD of 'a' did not converge",
        a,
        lambda: backend.linalg_lstsq(a, b, rcond),
    )
    return x, res, int(rank), s


@operation("gk.linalg.inv")
def inv(a: Any) -> Any:
    """Inverse of a (stack of) square matrices.

    Prefer :func:`solve` for solving systems: it is faster and more accurate.

    Parameters
    ----------
    a : array_like, shape (..., M, M)

    Returns
    -------
    array, shape (..., M, M)

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        ``a`` is singular.
    ValueError
        ``a`` is not a stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    backend, a = _square_input("gk.linalg.inv", a)
    return _checks.guarded(
        "gk.linalg.inv",
        backend,
        "matrix 'a' is singular",
        a,
        lambda: backend.linalg_inv(a),
        check=_finite,
    )


def _square_input(op: str, a: Any) -> tuple[Any, Any]:
    backend, (a,) = _checks.place(op, (a,), ("a",))
    xp = backend.xp
    _checks.square(op, "a", a)
    (a,) = _checks.as_inexact(xp, a)
    return backend, a


@operation("gk.linalg.det")
def det(a: Any) -> Any:
    """Determinant of a (stack of) square matrices; 0 for a singular one.

    Parameters
    ----------
    a : array_like, shape (..., M, M)

    Returns
    -------
    array, shape (...)

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    ValueError
        ``a`` is not a stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]])).round(12))
    -2.0
    """
    backend, a = _square_input("gk.linalg.det", a)
    return backend.linalg_det(a)


@operation("gk.linalg.slogdet")
def slogdet(a: Any) -> tuple[Any, Any]:
    """Sign and natural log of the absolute determinant, safe from overflow.

    Parameters
    ----------
    a : array_like, shape (..., M, M)

    Returns
    -------
    sign : array, shape (...)
        +1, -1 (complex of modulus 1 for complex input), or 0 for a singular matrix.
    logabsdet : array, shape (...)
        ``log|det a|``; ``-inf`` for a singular matrix.

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    ValueError
        ``a`` is not a stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> sign, logdet = gk.linalg.slogdet(np.diag([1e200, -1e200]))
    >>> float(sign), round(float(logdet), 3)
    (-1.0, 921.034)
    """
    backend, a = _square_input("gk.linalg.slogdet", a)
    return backend.linalg_slogdet(a)


@operation("gk.linalg.cholesky")
def cholesky(a: Any) -> Any:
    """Lower Cholesky factor ``L`` with ``a = L @ L^H`` (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, M)
        Hermitian positive-definite matrices; only the lower triangle is read.

    Returns
    -------
    array, shape (..., M, M)
        Lower-triangular factors (upper triangle zero).

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        ``a`` is not positive definite, on every backend.
    ValueError
        ``a`` is not a stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    backend, a = _square_input("gk.linalg.cholesky", a)
    return _checks.guarded(
        "gk.linalg.cholesky",
        backend,
        "matrix 'a' is not positive definite",
        a,
        lambda: backend.linalg_cholesky(a),
        check=_finite,
    )


@operation("gk.linalg.cho_solve")
def cho_solve(c: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` given the lower Cholesky factor ``c`` of ``a``.

    Factor once with :func:`cholesky`, then solve for many right-hand sides.

    Parameters
    ----------
    c : array_like, shape (..., M, M)
        Lower factor from :func:`cholesky`.
    b : array_like, shape (M,) or (..., M, K)
        Right-hand sides, with :func:`solve`'s rules.

    Returns
    -------
    array, shape of the broadcast ``b``

    Raises
    ------
    TypeError
        ``c`` or ``b`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        ``c`` has a zero on its diagonal (the result is not finite).
    ValueError
        ``c`` is not square or ``b`` does not match it (the message names both shapes).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> gk.linalg.cho_solve(gk.linalg.cholesky(a), np.array([6.0, 7.0])).tolist()
    [1.0, 1.0]
    """
    backend, (c, b) = _checks.place("gk.linalg.cho_solve", (c, b), ("c", "b"))
    xp = backend.xp
    _checks.square("gk.linalg.cho_solve", "c", c)
    c, b, squeeze = _checks.rhs("gk.linalg.cho_solve", xp, c, b)
    c, b = _checks.as_inexact(xp, c, b)
    x = _checks.guarded(
        "gk.linalg.cho_solve",
        backend,
        "factor 'c' is singular",
        c,
        lambda: backend.linalg_cho_solve(c, b),
        check=_finite,
    )
    return x[..., 0] if squeeze else x


@operation("gk.linalg.qr")
def qr(a: Any, mode: str = "reduced") -> Any:
    """QR factorisation ``a = q @ r`` (batched), as :func:`numpy.linalg.qr`.

    Parameters
    ----------
    a : array_like, shape (..., M, N)
    mode : {"reduced", "complete", "r"}
        ``"reduced"``: q (..., M, K), r (..., K, N) with K = min(M, N); ``"complete"``:
        q (..., M, M); ``"r"``: r only.

    Returns
    -------
    q, r : arrays
        Or ``r`` alone for ``mode="r"``.

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    ValueError
        ``a`` has fewer than 2 dimensions or ``mode`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> q, r = gk.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> bool(np.allclose(q @ r, [[3.0, 1.0], [4.0, 2.0]]))
    True
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"gk.linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    backend, (a,) = _checks.place("gk.linalg.qr", (a,), ("a",))
    xp = backend.xp
    _checks.matrix("gk.linalg.qr", "a", a)
    (a,) = _checks.as_inexact(xp, a)
    return backend.linalg_qr(a, mode)


@operation("gk.linalg.eigh")
def eigh(a: Any, UPLO: str = "L") -> tuple[Any, Any]:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, M)
    UPLO : {"L", "U"}
        Which triangle of ``a`` is read.

    Returns
    -------
    w : array, shape (..., M)
        Real eigenvalues in ascending order.
    v : array, shape (..., M, M)
        Orthonormal eigenvectors in the columns: ``a @ v = v * w``.

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        The eigensolver did not converge.
    ValueError
        ``a`` is not a stack of square matrices, or ``UPLO`` is not "L" or "U".

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> w, v = gk.linalg.eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w.round(12).tolist()
    [1.0, 3.0]
    """
    if UPLO not in ("L", "U"):
        raise ValueError(f"gk.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    backend, a = _square_input("gk.linalg.eigh", a)
    return _checks.guarded(
        "gk.linalg.eigh",
        backend,
        "the eigensolver did not converge for 'a'",
        a,
        lambda: backend.linalg_eigh(a, UPLO),
        check=list,
    )


@operation("gk.linalg.svd")
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition ``a = u @ diag(s) @ vh`` (batched).

    Parameters
    ----------
    a : array_like, shape (..., M, N)
    full_matrices : bool
        ``u`` (..., M, M) and ``vh`` (..., N, N) when True, else reduced to K = min(M, N).
    compute_uv : bool
        When False, only ``s`` is computed and returned.

    Returns
    -------
    u, s, vh : arrays
        ``s`` (..., K) in descending order; ``s`` alone when ``compute_uv`` is False.

    Raises
    ------
    TypeError
        ``a`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    LinAlgError
        The SVD did not converge.
    ValueError
        ``a`` has fewer than 2 dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
    [4.0, 3.0]
    """
    backend, (a,) = _checks.place("gk.linalg.svd", (a,), ("a",))
    xp = backend.xp
    _checks.matrix("gk.linalg.svd", "a", a)
    (a,) = _checks.as_inexact(xp, a)
    return _checks.guarded(
        "gk.linalg.svd",
        backend,
        "the SVD of 'a' did not converge",
        a,
        lambda: backend.linalg_svd(a, full_matrices, compute_uv),
        check=(lambda out: list(out) if compute_uv else [out]),
    )


@operation("gk.linalg.norm")
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
    TypeError
        ``x`` has a non-numeric dtype (string, object, ...) or is long
        double; the message names the argument, the dtype and what is accepted.
    ValueError
        ``ord`` is invalid for the number of axes, ``axis`` is out of range or repeated,
        or ``x`` has more than 2 dimensions with ``ord`` given and ``axis`` None.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.linalg.norm(np.array([3.0, 4.0])))
    5.0
    >>> float(gk.linalg.norm(np.array([[1.0, -2.0], [3.0, 4.0]]), ord=1))
    6.0
    """
    backend, (x,) = _checks.place("gk.linalg.norm", (x,), ("x",))
    _checks.norm_arguments("gk.linalg.norm", tuple(x.shape), ord, axis)
    return backend.linalg_norm(x, ord, axis, keepdims)
