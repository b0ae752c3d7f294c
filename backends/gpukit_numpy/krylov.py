"""The host vector space of the Krylov loops: NumPy, with BLAS-1 for the hot updates.

The loops of :mod:`gpukit.linalg._krylov` take their vector operations from a *space*
(``Backend.krylov_space``). On the host, ``numpy.multiply`` + ``numpy.add`` make two passes
and a temporary for ``y += a x``, and ``numpy.vdot(...).item()`` a NumPy scalar per
reduction; BLAS ``axpy``/``scal``/``dot`` (through :mod:`scipy.linalg.blas`) update in place
in one pass and return Python scalars. Everything else is NumPy's. SciPy's wheels bundle an
OpenBLAS of their own, with its own thread pool (NumPy's products run on NumPy's copy). In
the Krylov loops the two pools take turns (a product, then the updates); an optimizer step
interleaves them so tightly that they fight for the cores, which is why
:mod:`gpukit_numpy.kernels` updates with NumPy's ufuncs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import blas

__all__ = ["HostSpace", "host_space"]

# dtype -> (axpy, scal, dot with conjugated first argument), as numpy.vdot computes
_ROUTINES = {
    np.dtype(np.float32): (blas.saxpy, blas.sscal, blas.sdot),
    np.dtype(np.float64): (blas.daxpy, blas.dscal, blas.ddot),
    np.dtype(np.complex64): (blas.caxpy, blas.cscal, blas.cdotc),
    np.dtype(np.complex128): (blas.zaxpy, blas.zscal, blas.zdotc),
}


class HostSpace:
    """``numpy`` with in-place BLAS ``axpy``, ``xpay`` and ``dot`` for ``dtype`` vectors.

    The Krylov buffers are 1-d, contiguous and of ``dtype`` (the loop allocates them with
    ``empty_like``); should BLAS hand back a copy all the same (f2py copies an argument it
    cannot update in place), the result is copied into the target, so the update is
    never lost.
    """

    def __init__(self, dtype: np.dtype) -> None:
        self._axpy, self._scal, self._dot = _ROUTINES[np.dtype(dtype)]

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def axpy(self, alpha: Any, x: Any, y: Any) -> None:
        """``y += alpha * x`` in one pass."""
        out = self._axpy(x, y, a=alpha)
        if out is not y:
            np.copyto(y, out)

    def xpay(self, x: Any, beta: Any, y: Any) -> None:
        """``y = x + beta * y`` in place."""
        out = self._scal(beta, y)
        if out is not y:
            np.copyto(y, out)
        self.axpy(1, x, y)

    def scalar_dot(self, a: Any, b: Any) -> Any:
        """``numpy.vdot(a, b)`` as a Python scalar."""
        if a.dtype != b.dtype:  # a user operator's result of another dtype: NumPy's rules
            return np.vdot(a, b).item()
        return self._dot(a, b)


def host_space(dtype: np.dtype) -> Any:
    """A :class:`HostSpace` for ``dtype``, or ``numpy`` itself for dtypes BLAS lacks."""
    return HostSpace(dtype) if np.dtype(dtype) in _ROUTINES else np
