"""NumPy's own BLAS ``axpy``: ``y += alpha * x`` in one pass, on NumPy's BLAS thread pool.

NumPy calls BLAS for its products but exposes no level-1 routine, and two ufuncs
(``multiply`` into a scratch block, then ``subtract``) read and write the data twice, on
one core. SciPy exposes ``?axpy`` (:mod:`scipy.linalg.blas`), but SciPy's wheels bundle an
OpenBLAS of their own whose thread pool, woken right after a NumPy product, fights NumPy's
still-spinning pool for the cores: an SGD step of a small MLP took 10.5 ms instead of
0.26 ms on a 2-core machine. NumPy's own routine runs on the pool that is already awake.

NumPy's extension module links its BLAS, and ``dlsym`` on that module's handle searches
the libraries it depends on, so the routine is found by name without knowing where the
library lies. The names tried are those of the BLAS builds NumPy's wheels and common
builds use: scipy-openblas64 (NumPy 2 wheels), OpenBLAS with a ``64_`` suffix (NumPy 1
wheels), MKL's ILP64 ``_64`` names, and plain ``cblas_?axpy``. Integer arguments are passed
as 64-bit and every call covers fewer than ``2**31`` elements, which reads the same to an
LP64 and an ILP64 routine on 64-bit platforms (32-bit ones get no routine). Before first
use a routine is checked on a small problem with an exact answer; where no name resolves
(Windows, where symbols are not searched through a library's dependencies; a BLAS whose
names differ) or the check fails, :func:`axpy` returns None and callers keep their
ufuncs. OpenBLAS skips the update when ``alpha`` is 0, so a NaN in ``x`` then leaves
``y`` as it was, where ``y + 0 * x`` would be NaN: callers pass a nonzero ``alpha``.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from gpukit._host.native import address

__all__ = ["axpy"]

Axpy = Callable[[float, np.ndarray, np.ndarray], None]

_NAMES = ("scipy_cblas_{}axpy64_", "cblas_{}axpy64_", "cblas_{}axpy_64", "cblas_{}axpy")
_LETTER = {
    np.dtype(np.float32): ("s", ctypes.c_float),
    np.dtype(np.float64): ("d", ctypes.c_double),
}
_CHUNK = 1 << 30  # elements per call: below 2**31, whatever the routine's integer width
_found: dict[np.dtype, Axpy | None] = {}
_lock = threading.Lock()
if hasattr(os, "register_at_fork"):  # not on Windows
    # held across fork, so that a child never inherits it taken by a thread it does not have
    os.register_at_fork(
        before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_lock.release
    )


def _library() -> ctypes.CDLL | None:
    try:
        from numpy._core import _multiarray_umath as module
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as module
    try:
        return ctypes.CDLL(module.__file__)
    except OSError:
        return None


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
    lib = _library() if ctypes.sizeof(ctypes.c_void_p) == 8 else None
    if lib is None:
        return None
    for pattern in _NAMES:
        routine = getattr(lib, pattern.format(letter), None)
        if routine is None:
            continue
        routine.argtypes = [ctypes.c_int64, scalar, ctypes.c_void_p, ctypes.c_int64]
        routine.argtypes += [ctypes.c_void_p, ctypes.c_int64]
        routine.restype = None
        call = _caller(routine)
        y = np.ones(5, dtype=dtype)
        call(0.5, np.arange(5, dtype=dtype), y)  # exact in binary: a wrong binding shows
        if np.array_equal(y, np.arange(2, 7, dtype=dtype) * 0.5):
            return call
    return None


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
    try:
        return _found[dtype]
    except KeyError:
        pass
    if dtype not in _LETTER:
        return None
    with _lock:  # bound once per process, whichever thread asks first
        if dtype not in _found:
            _found[dtype] = _bind(dtype)
        return _found[dtype]
