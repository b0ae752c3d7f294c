"""Sparse matrices on the active backend: ``scipy.sparse`` on CPU, ``cupyx.scipy.sparse`` on GPU.

Examples
--------
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     A = gk.sparse.poisson2d(3)
>>> A.shape, A.nnz
((9, 9), 33)
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation, prepare
from ._dispatch.capabilities import checked, declare
from ._dispatch.inputs import keep_placed, placed
from ._runtime import plans as _plans
from ._runtime import transfer as _transfer
from ._runtime.placement import owner_of
from ._select.selection import get_backend
from .backend import Backend

__all__ = ["csr_matrix", "issparse", "poisson2d"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


#: Entry dtypes of a sparse matrix on every backend (cuSPARSE's set, which CuPy enforces).
ENTRY_DTYPES = tuple(np.dtype(c) for c in "?fdFD")
_ENTRY_WORDS = _dtypes.words(ENTRY_DTYPES)


def issparse(a: Any) -> bool:
    """Whether ``a`` is a SciPy or CuPy sparse matrix/array (without importing either).

    Parameters
    ----------
    a : object
        Anything.

    Returns
    -------
    bool
        True for a ``scipy.sparse`` or ``cupyx.scipy.sparse`` matrix or array.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.sparse.issparse(gk.sparse.csr_matrix(np.eye(2))), gk.sparse.issparse(np.eye(2))
    (True, False)
    """
    for name in ("scipy.sparse", "cupyx.scipy.sparse"):
        module = sys.modules.get(name)
        if module is not None and module.issparse(a):
            return True
    return False


def to_backend(backend: Backend, a: Any, name: str, *, op: str = "gk.sparse") -> Any:
    """A sparse matrix as ``backend``'s own, moving a host one to a device (counted, guarded).

    ``op`` (the public operation) prefixes the error message.
    """
    if backend.linalg_is_sparse(a):
        return a
    if owner_of(a.data) is not None:
        raise ValueError(
            f"{op}: argument {name!r} is a sparse matrix of another device backend "
            f"({type(a).__module__}) than {backend.name!r}, where the operation runs; "
            "move it explicitly"
        )
    csr = a.tocsr()
    nbytes = csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
    if backend.is_device:
        device = f"{backend.name}:{backend.current_device()}"
        _transfer.check_implicit(name, csr.shape, csr.dtype, nbytes, device)
    out = backend.linalg_to_sparse(csr)
    if backend.is_device:
        _transfer.record("host_to_device", nbytes)
    return out


@operation("gk.sparse.csr_matrix")
def csr_matrix(
    arg1: Any, shape: tuple[int, int] | None = None, dtype: Any = None, copy: bool = False
) -> Any:
    """A CSR matrix on the active backend, from any of ``scipy.sparse.csr_matrix``'s forms.

    Parameters
    ----------
    arg1 : array_like, sparse matrix or tuple
        A dense 2-D array; a SciPy/CuPy sparse matrix; ``(M, N)`` for an empty matrix;
        ``(data, (row, col))`` (COO triplets, duplicates summed); or
        ``(data, indices, indptr)`` (CSR arrays).
    shape : tuple of int, optional
        ``(M, N)``; inferred when omitted.
    dtype : dtype, optional
        Data type of the entries: bool, float32, float64, complex64 or complex128 (the
        types cuSPARSE stores, accepted on every backend); the input's when omitted, which
        must then be one of those (pass ``dtype=`` to convert integer data).
    copy : bool
        Copy the input arrays even when they could be shared.

    Returns
    -------
    scipy.sparse.csr_matrix or cupyx.scipy.sparse.csr_matrix
        On the backend of the inputs (device arrays), else the active backend.

    Raises
    ------
    ValueError
        The arguments do not describe a matrix (SciPy's/CuPy's message), or a sparse
        matrix of another device backend was given.
    TypeError
        ``dtype``, or the entries' dtype when ``dtype`` is omitted, is not one of the
        five above (integer entries need ``dtype=``; strings and objects are refused).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> A = gk.sparse.csr_matrix((np.array([1.0, 2.0]), (np.array([0, 1]), np.array([1, 0]))))
    >>> A.toarray().tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """
    op = "gk.sparse.csr_matrix"
    if dtype is not None and np.dtype(dtype) not in ENTRY_DTYPES:
        raise TypeError(f"{op}: dtype={dtype!r} is not supported; expected {_ENTRY_WORDS}")
    native = type(arg1) is np.ndarray  # the common case: neither sparse nor a tuple
    if not native and issparse(arg1):
        _entries(arg1, "arg1", dtype)
        backend = owner_of(arg1.data) or get_backend()
        a = to_backend(backend, arg1, "arg1", op=op)
        return backend.sparse_csr_matrix(a, shape, dtype, copy)
    parts = not native and isinstance(arg1, tuple)
    if parts and len(arg1) == 2 and isinstance(arg1[1], tuple):
        data, (row, col) = arg1
        data = _entries(data, "data", dtype)
        backend, (data, row, col) = prepare(data, row, col, names=("data", "row", "col"))
        data, row, col = (backend.xp.asarray(v) for v in (data, row, col))
        arg1 = (data, (row, col))
    elif parts and len(arg1) == 3:
        data = _entries(arg1[0], "data", dtype)
        backend, arrays = prepare(data, *arg1[1:], names=("data", "indices", "indptr"))
        arg1 = tuple(backend.xp.asarray(v) for v in arrays)
    elif parts and len(arg1) == 2 and all(isinstance(v, int) for v in arg1):
        backend = get_backend()
    else:
        # a dense array of a type and dtype placed unchanged before needs no checks
        backend, key = placed(op, (arg1,)) if dtype is None else (None, None)
        if backend is None:
            since = _plans.generation()
            given = arg1
            arg1 = _entries(arg1, "arg1", dtype)
            backend, (arg1,) = prepare(arg1, names=("arg1",))
            arg1 = backend.xp.asarray(arg1)
            keep_placed(key, since, backend, (given,), (arg1,))
    return backend.sparse_csr_matrix(arg1, shape, dtype, copy)


# a dense array's entries, without dtype= (which converts any numeric dtype)
declare("gk.sparse.csr_matrix", checked("gk.sparse.csr_matrix", "arg1", ENTRY_DTYPES))


def _entries(data: Any, name: str, dtype: np.dtype | None) -> Any:
    """Check the entries' dtype: any numeric one when ``dtype`` converts them, else one
    that every backend stores (:data:`ENTRY_DTYPES`); TypeError otherwise."""
    op = "gk.sparse.csr_matrix"
    if dtype is not None:
        return _dtypes.check(op, name, data)
    return _dtypes.check(op, name, data, ENTRY_DTYPES)


def poisson2d(n: int, dtype: Any = np.float64) -> Any:
    """The 5-point Laplacian of an ``n x n`` grid (Dirichlet boundary), as CSR.

    ``A = kron(I, T) + kron(T, I)`` with ``T = tridiag(-1, 2, -1)``: symmetric positive
    definite, shape ``(n*n, n*n)``, unknowns ordered row by row, grid spacing 1 (divide
    by ``h**2`` for spacing ``h``). Built on the host, then placed on the active backend.

    Parameters
    ----------
    n : int
        Grid points per side (>= 1).
    dtype : dtype
        Entry type (default float64).

    Returns
    -------
    CSR matrix of the active backend

    Raises
    ------
    ValueError
        ``n`` < 1.
    TypeError
        ``n`` is not an integer, or ``dtype`` is not one a sparse matrix stores.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.sparse.poisson2d(2).toarray().tolist()
    [[4.0, -1.0, -1.0, 0.0], [-1.0, 4.0, 0.0, -1.0], [-1.0, 0.0, 4.0, -1.0], [0.0, -1.0, -1.0, 4.0]]
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"gk.sparse.poisson2d: n must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"gk.sparse.poisson2d: n must be >= 1, got {n}")
    if np.dtype(dtype) not in ENTRY_DTYPES:
        raise TypeError(
            f"gk.sparse.poisson2d: dtype={dtype!r} is not supported; expected {_ENTRY_WORDS}"
        )
    import scipy.sparse as sp

    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(n, n), dtype=dtype)
    eye = sp.eye_array(n, dtype=dtype)
    host = sp.csr_matrix(sp.kron(eye, t) + sp.kron(t, eye))
    host.eliminate_zeros()
    host.sort_indices()
    return csr_matrix(host)
