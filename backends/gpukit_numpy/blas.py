"""NumPy's own BLAS ``axpy``: ``y += alpha * x`` in one pass, on NumPy's BLAS thread pool.

NumPy calls BLAS for its products but exposes no level-1 routine, and two ufuncs
(``multiply`` into a scratch block, then ``subtract``) read and write the data twice, on
one core. SciPy exposes ``?axpy`` (:mod:`scipy.linalg.blas`), but SciPy's wheels bundle an
OpenBLAS of their own whose thread pool, woken right after a NumPy product, fights NumPy's
still-spinning pool for the cores: an SGD step of a small MLP took 10.5 ms instead of
0.26 ms on a 2-core machine. NumPy's own routine runs on the pool that is already awake.

The routine is found by name in NumPy's own library (:mod:`._library`). The names
tried are those of the BLAS builds NumPy's wheels and common builds use: scipy-openblas64
(NumPy 2 wheels), OpenBLAS with a ``64_`` suffix (NumPy 1 wheels), MKL's ILP64 ``_64``
names, and plain ``cblas_?axpy``. Integer arguments are passed as 64-bit and every call
covers fewer than ``2**31`` elements, which reads the same to an LP64 and an ILP64
routine on 64-bit platforms (32-bit ones get no routine). Before first use a routine is
checked on a small problem with an exact answer; where no name resolves (Windows; a BLAS
whose names differ) or the check fails, :func:`axpy` returns None and callers keep their
ufuncs. OpenBLAS skips the update when ``alpha`` is 0, so a NaN in ``x`` then leaves
``y`` as it was, where ``y + 0 * x`` would be NaN: callers pass a nonzero ``alpha``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from gpukit._host.native import address

from ._library import PerDtype, library, routine

__all__ = ["axpy"]

Axpy = Callable[[float, np.ndarray, np.ndarray], None]

_NAMES = ("scipy_cblas_{}axpy64_", "cblas_{}axpy64_", "cblas_{}axpy_64", "cblas_{}axpy")
_LETTER = {
    np.dtype(np.float32): ("s", ctypes.c_float),
    np.dtype(np.float64): ("d", ctypes.c_double),
}
_CHUNK = 1 << 30  # elements per call: below 2**31, whatever the routine's integer width


def _caller(routine: Any) -> Axpy:
    """``f(alpha, x, y)`` calling ``routine`` on chunks of fewer than ``2**31`` elements."""

    def call(alpha: float, x: np.ndarray, y: np.ndarray) -> None:
        n, px, py, size = x.size, address(x), address(y), x.itemsize
        for lo in range(0, n, _CHUNK):
            routine(min(_CHUNK, n - lo), alpha, px + lo * size, 1, py + lo * size, 1)

    return call


def _bind(dtype: np.dtype) -> Axpy | None:
    """The checked routine for ``dtype``, or None."""
    letter, scalar = _LETTER[dtype]
    # 64-bit integer arguments read right by an LP64 routine only where they travel in
    # 64-bit registers: not on 32-bit platforms
    lib = library() if ctypes.sizeof(ctypes.c_void_p) == 8 else None
    if lib is None:
        return None
    for pattern in _NAMES:
        found = routine(lib, [pattern.format(letter)])
        if found is None:
            continue
        found.argtypes = [ctypes.c_int64, scalar, ctypes.c_void_p, ctypes.c_int64]
        found.argtypes += [ctypes.c_void_p, ctypes.c_int64]
        found.restype = None
        call = _caller(found)
        y = np.ones(5, dtype=dtype)
        call(0.5, np.arange(5, dtype=dtype), y)  # exact in binary: a wrong binding shows
        if np.array_equal(y, np.arange(2, 7, dtype=dtype) * 0.5):
            return call
    return None


_bound = PerDtype(_bind)


def axpy(dtype: np.dtype) -> Axpy | None:
    """NumPy's BLAS ``axpy`` for ``dtype`` (float32, float64), or None where unavailable.

    The routine, ``f(alpha, x, y)``, computes ``y += alpha * x`` in place for 1-d
    C-contiguous, aligned, non-overlapping ``x`` and writeable ``y`` of ``dtype`` and one
    size, and a nonzero ``alpha``; the caller checks that (BLAS does not). ``alpha`` is
    rounded to ``dtype``, as a Python float scalar is in NumPy's arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> from gpukit_numpy.blas import axpy
    >>> y = np.ones(3)
    >>> f = axpy(y.dtype)
    >>> if f is not None:
    ...     f(2.0, np.arange(3.0), y)
    ... else:
    ...     y += 2.0 * np.arange(3.0)
    >>> y.tolist()
    [1.0, 3.0, 5.0]
    """
    dtype = np.dtype(dtype)
    return _bound(dtype) if dtype in _LETTER else None
