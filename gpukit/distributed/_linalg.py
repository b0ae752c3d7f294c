"""``gk.linalg.solve`` and ``gk.linalg.lstsq`` on Dask arrays.

``solve`` of one matrix in host chunks delegates to :func:`dask.array.linalg.solve`
(blocked LU, or Cholesky for ``assume_a="pos"``). Dask's blocked factorisations call
SciPy on each block, so a matrix in device (CuPy) chunks, and a stack of matrices, runs
``gk.linalg.solve`` per chunk instead: each matrix whole in one chunk (one task per
batch chunk; a single device matrix is one task on one GPU). A singular matrix raises
when the result is computed: :class:`numpy.linalg.LinAlgError` from Dask's triangular
solve, or :class:`gpukit.LinAlgError` (a subclass) from gpukit or for a non-finite
solution.

``lstsq`` reduces the problem to a small one with :func:`dask.array.linalg.qr`'s
tall-and-skinny QR: a tall ``a = QR`` gives ``min ||Rx - Q^H b||``; a wide ``a^H = QR``
gives ``x = Q y`` with ``y`` the minimum-norm solution of ``R^H y = b``. The small
problem is ``gk.linalg.lstsq`` in one task, so rank deficiency, ``rcond`` and the
singular values are NumPy's (an SVD of ``R``, the same singular values as ``a``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import linalg as gk_linalg
from .._dispatch import implements, namespace
from .._matmul import matmul as gk_matmul
from .._runtime.placement import owner_of
from ..errors import LinAlgError
from ..linalg import _checks, _structure
from ..linalg.dense import _PROBLEM
from ._chunks import OnChunks, carries_chunks, chunk_type, dask_arrays, meta

__all__: list[str] = []


def _finite_or_raise(block: Any, *, error: type, message: str) -> Any:
    """The block itself, or ``error(message)`` when it holds inf/NaN (checked where it is)."""
    if not bool(abs(block).sum() < np.inf):
        raise error(message)
    return block


def _checked_finite(x: Any, error: type, message: str) -> Any:
    """``x`` with a check of each chunk when it is computed (one pass over it)."""
    check = functools.partial(_finite_or_raise, error=error, message=message)
    return x.map_blocks(check, dtype=x.dtype, meta=x._meta)


def _square_block(m: int, largest: int) -> int:
    """A block size dividing ``m`` (Dask's blocked LU wants every block square): the
    largest one up to ``largest``, or ``m`` itself when that is below half of it."""
    size = next(d for d in range(min(largest, m), 0, -1) if m % d == 0)
    return size if 2 * size >= min(largest, m) else m


def _inputs(
    op: str, a: Any, b: Any, check_finite: bool
) -> tuple[type, tuple[bool, bool], Any, Any]:
    """Dtype-checked Dask ``a`` and ``b``, their chunk type, which carry it; with
    ``check_finite``, each chunk is refused when computed if it holds NaN or inf (SciPy's
    ``check_finite`` can only run lazily here)."""
    from .._dispatch import dtypes as _dtypes

    a, b = _dtypes.check(op, "a", a), _dtypes.check(op, "b", b)
    expected = chunk_type(op, {"a": a, "b": b})
    checked = (carries_chunks(a), carries_chunks(b))
    arrays = dask_arrays(op, {"a": a, "b": b})
    if check_finite:
        for name in arrays:
            message = f"{op}: argument {name!r} holds NaN or inf (check_finite=True)"
            arrays[name] = _checked_finite(arrays[name], ValueError, message)
    return expected, checked, arrays["a"], arrays["b"]


@implements("gk.linalg.solve", "dask")
def solve(
    a: Any,
    b: Any,
    *,
    assume_a: str | None = None,
    lower: bool = False,
    transposed: bool = False,
    check_finite: bool = True,
) -> Any:
    import dask.array as da

    op = "gk.linalg.solve"
    kind = _structure.kind(op, assume_a)
    expected, checked, a, b = _inputs(op, a, b, check_finite)
    _checks.square(op, "a", a)
    a, b, squeeze = _checks.rhs(op, da, a, b)
    a, b = _checks.as_inexact(da, a, b)
    m, method = _structure.effective(da, a, kind, lower, transposed)
    problem = f"{op}: {_PROBLEM[method]} (shape {a.shape}, dtype {a.dtype}), or it holds NaN/inf"
    if method == "diagonal":  # elementwise; a zero on the diagonal gives inf, refused
        d = da.diagonal(m, axis1=-2, axis2=-1)
        x = b / (d[..., :, None] if b.ndim == a.ndim else d)
        return _checked_finite(x[..., 0] if squeeze else x, LinAlgError, problem)
    if a.ndim == 2 and owner_of(a._meta) is None:  # Dask's LU runs SciPy: host chunks only
        if method == "pos":  # Dask's Cholesky reads the whole matrix: mirror the lower half
            m = _structure._mirror(da, m, lower=True, hermitian=m.dtype.kind == "c")
        size = _square_block(a.shape[0], max(a.chunksize))
        x = da.linalg.solve(m.rechunk(size), b.rechunk({0: size}), assume_a=method)
        return _checked_finite(x, LinAlgError, problem)
    if b.ndim == 1:  # one device matrix, a vector right-hand side
        b, squeeze = b[:, None], True
    a = a.rechunk({-2: -1, -1: -1})
    b = b.rechunk({-2: -1})
    batch = tuple(range(a.ndim - 2))
    n, r, k = a.ndim - 2, a.ndim - 1, a.ndim
    fn = functools.partial(
        gk_linalg.solve, assume_a=assume_a, lower=lower, transposed=transposed, check_finite=False
    )
    task = OnChunks(op, fn, expected, ("a", "b"), checked)
    x = da.blockwise(
        task,
        (*batch, n, k),
        a,
        (*batch, n, r),
        b,
        (*batch, r, k),
        dtype=a.dtype,
        concatenate=True,
        meta=meta(a if checked[0] else b, a.ndim, a.dtype),
    )
    return x[..., 0] if squeeze else x


def _small_lstsq(r: Any, c: Any, *, rcond: float, wide: bool) -> tuple[Any, Any, Any]:
    """The reduced problem in one task: (solution, singular values, rank as a 0-d array)."""
    y, _, rank, s = gk_linalg.lstsq(r.T.conj() if wide else r, c, rcond=rcond, check_finite=False)
    return y, s, namespace(y).asarray(rank)


@implements("gk.linalg.lstsq", "dask")
def lstsq(
    a: Any, b: Any, *, rcond: float | None = None, check_finite: bool = True
) -> tuple[Any, Any, Any, Any]:
    import dask
    import dask.array as da

    op = "gk.linalg.lstsq"
    expected, checked, a, b = _inputs(op, a, b, check_finite)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(
            f"{op}: 'a' has shape {tuple(a.shape)} and 'b' has shape "
            f"{tuple(b.shape)}; expected a of shape (M, N) and b of shape (M,) or (M, K)"
        )
    a, b = _checks.as_inexact(da, a, b)
    m, n = a.shape
    if rcond is None:  # NumPy's default, from a's shape, not the reduced problem's
        rcond = float(np.finfo(a.dtype).eps) * max(m, n)
    wide = m < n
    if wide:  # a^H = Q R, so a = R^H Q^H and x = Q y with R^H y = b
        q, r = da.linalg.qr(a.T.conj().rechunk({1: -1}))
        c = b
    else:  # a = Q R: min ||R x - Q^H b||
        q, r = da.linalg.qr(a.rechunk({1: -1}))
        c = gk_matmul(q.T.conj(), b)
    like = a if checked[0] else b
    fn = functools.partial(_small_lstsq, rcond=rcond, wide=wide)
    task = OnChunks(op, fn, expected, ("R", "Q^H b"), (True, True))
    parts = dask.delayed(task, nout=3, pure=True)(
        r.rechunk(-1).to_delayed().item(), c.rechunk(-1).to_delayed().item()
    )
    real = np.finfo(a.dtype).dtype
    y = da.from_delayed(
        parts[0], (min(m, n), *b.shape[1:]), a.dtype, meta=meta(like, b.ndim, a.dtype)
    )
    s = da.from_delayed(parts[1], (min(m, n),), real, meta=meta(like, 1, real))
    rank = da.from_delayed(parts[2], (), np.intp, meta=meta(like, 0, np.intp))
    x = gk_matmul(q, y) if wide else y
    if m > n:
        residual = b - gk_matmul(a, x)
        residuals = (abs(residual) ** 2).sum(axis=0, keepdims=b.ndim == 1)
    else:  # NumPy's empty residuals when M <= N
        residuals = da.from_array(meta(like, 1, real), chunks=(0,))
    return x, residuals, rank, s
