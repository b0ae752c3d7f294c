"""``cupy.cublas`` (cupy/cublas.py): BLAS routines on the current device, values by NumPy.

Like CuPy, this module needs cuBLAS at import (``from cupy_backends.cuda.libs import
cublas``): it fails to import under ``CUPYSIM_FAIL=libs``. Operands must be on the current
device (the routines get raw pointers, cupysim.placement).
"""

from __future__ import annotations

import numpy as _numpy
from cupysim import libs as _libs
from cupysim import placement as _placement

from cupy._core import core as _core

_libs.require("cublas")

_batched_gesv_limit = 256


def get_batched_gesv_limit():
    return _batched_gesv_limit


def set_batched_gesv_limit(limit):
    global _batched_gesv_limit
    _batched_gesv_limit = limit


def _routine(name, operands, fn, out=None):
    _placement.require_current("cuBLAS", name, [*operands, out])
    res = fn(*(x._np for x in operands))
    if out is None:
        return _core._wrap(name, _numpy.asarray(res), list(operands), library=True)
    _core._run(name, list(operands), [out], lambda: out._np.__setitem__(..., res), kind="library")
    return out


def _op(trans, a):
    t = trans if isinstance(trans, str) else {0: "N", 1: "T", 2: "H"}[trans]
    t = t.upper()
    if t == "N":
        return a
    if t == "T":
        return a.T
    return a.conj().T


def gemm(transa, transb, a, b, out=None, alpha=1.0, beta=0.0):
    """``out = alpha * op(a) @ op(b) + beta * out``."""

    def fn(x, y, *c):
        r = alpha * (_op(transa, x) @ _op(transb, y))
        return r + beta * c[0] if c and beta else r

    return _routine("gemm", [a, b] + ([out] if out is not None and beta else []), fn, out)


def gemv(transa, alpha, a, x, beta, y):
    """``y = alpha * op(a) @ x + beta * y`` in place."""
    _placement.require_current("cuBLAS", "gemv", [a, x, y])

    def body():
        y._np[...] = alpha * (_op(transa, a._np) @ x._np) + beta * y._np

    _core._run("gemv", [a, x, y], [y], body, kind="library")


def axpy(a, x, y):
    """``y += a * x`` in place."""
    _placement.require_current("cuBLAS", "axpy", [x, y])
    _core._run("axpy", [x, y], [y], lambda: y._np.__iadd__(a * x._np), kind="library")


def dot(x, y, out=None):
    return _routine("dot", [x, y], lambda u, v: _numpy.dot(u, v), out)


def nrm2(x, out=None):
    return _routine("nrm2", [x], lambda u: _numpy.linalg.norm(u), out)


def scal(a, x):
    """``x *= a`` in place."""
    _placement.require_current("cuBLAS", "scal", [x])
    _core._run("scal", [x], [x], lambda: x._np.__imul__(a), kind="library")


def batched_gesv(a, b):
    """Solve stacked systems (getrfBatched/getrsBatched)."""
    return _routine("batched_gesv", [a, b], lambda m, v: _numpy.linalg.solve(m, v))
