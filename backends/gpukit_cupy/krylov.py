"""The Krylov loops' vector space on the GPU: CuPy with one-kernel ``axpy`` and ``xpay``.

``y += alpha * x`` written with CuPy's ufuncs is two kernels and two passes over memory
through a scratch vector (``multiply`` into it, then ``add``); here it is one
``cupy.ElementwiseKernel`` that reads ``x`` and ``y`` and writes ``y`` once, and so is
``y = x + beta * y``. Everything else is CuPy's. The scalars are passed as the vectors'
dtype, so one compiled kernel serves every call of a solve.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["DeviceSpace"]


@functools.cache
def _kernels(xp: Any) -> tuple[Any, Any]:
    axpy = xp.ElementwiseKernel("T x, T alpha", "T y", "y = y + alpha * x", "gk_krylov_axpy")
    xpay = xp.ElementwiseKernel("T x, T beta", "T y", "y = x + beta * y", "gk_krylov_xpay")
    return axpy, xpay


class DeviceSpace:
    """``cupy`` with fused in-place ``axpy`` and ``xpay`` for ``dtype`` vectors.

    A vector of another dtype (a user operator's result) takes CuPy's ufuncs under NumPy's
    casting rules, as the loops' unfused updates would.
    """

    def __init__(self, xp: Any, dtype: Any) -> None:
        self._xp, self._type = xp, np.dtype(dtype).type
        self._axpy, self._xpay = _kernels(xp)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._xp, name)

    def axpy(self, alpha: Any, x: Any, y: Any) -> None:
        """``y += alpha * x`` in one pass."""
        if x.dtype == y.dtype and y.dtype.type is self._type:
            self._axpy(x, self._type(alpha), y)
        else:
            self._xp.add(y, self._xp.multiply(x, alpha), out=y)

    def xpay(self, x: Any, beta: Any, y: Any) -> None:
        """``y = x + beta * y`` in one pass."""
        if x.dtype == y.dtype and y.dtype.type is self._type:
            self._xpay(x, self._type(beta), y)
        else:
            self._xp.add(self._xp.multiply(y, beta, out=y), x, out=y)
