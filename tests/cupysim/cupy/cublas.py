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


def _routine(name, operands, fn, out=None, nargs=None):
    """``fn`` on the first ``nargs`` operands (all by default); every operand is read."""
    _placement.require_current("cuBLAS", name, [*operands, out])
    res = fn(*(x._np for x in operands[:nargs]))
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
    alpha, beta = _scalar(alpha, a.dtype), _scalar(beta, a.dtype)
    scalars = [v for v in (alpha, beta) if isinstance(v, _core.ndarray)]

    def fn(x, y, *c):
        r = _value(alpha) * (_op(transa, x) @ _op(transb, y))
        # cuBLAS does not read C when beta is 0 (NaN there stays out of the result)
        return r + _value(beta) * c[0] if c and _value(beta) != 0 else r

    with_out = [out] if out is not None and (scalars or beta) else []
    return _routine("gemm", [a, b, *with_out, *scalars], fn, out, len(with_out) + 2)


def gemv(transa, alpha, a, x, beta, y):
    """``y = alpha * op(a) @ x + beta * y`` in place."""
    _placement.require_current("cuBLAS", "gemv", [a, x, y])
    alpha, beta = _scalar(alpha, a.dtype), _scalar(beta, a.dtype)
    scalars = [v for v in (alpha, beta) if isinstance(v, _core.ndarray)]

    def body():
        y._np[...] = _value(alpha) * (_op(transa, a._np) @ x._np) + _value(beta) * y._np

    _core._run("gemv", [a, x, y, *scalars], [y], body, kind="library")


def _scalar(a, dtype):
    """cublas.py ``_get_scalar_ptr``: a cupy 0-d array is passed by device pointer (read by
    the routine on the stream), anything else as a host value of the vectors' dtype."""
    if isinstance(a, _core.ndarray):
        return a if a.dtype == dtype else a.astype(dtype)
    return _numpy.array(a, dtype=dtype)


def _value(a):
    return a._np if isinstance(a, _core.ndarray) else a


def axpy(a, x, y):
    """``y += a * x`` in place."""
    _placement.require_current("cuBLAS", "axpy", [x, y])
    a = _scalar(a, x.dtype)
    reads = [x, y, a] if isinstance(a, _core.ndarray) else [x, y]
    _core._run("axpy", reads, [y], lambda: y._np.__iadd__(_value(a) * x._np), kind="library")


def dot(x, y, out=None):
    # cublas.py dot: real types only (sdot/ddot); complex needs dotu or dotc
    if x.dtype.char in "FD":
        raise TypeError("Use dotu() or dotc() for complex dtype")
    if x.dtype.char not in "fd":
        raise TypeError("invalid dtype")
    return _routine("dot", [x, y], lambda u, v: _numpy.dot(u, v), out)


def nrm2(x, out=None):
    """cublas.py ``nrm2``: a 1-D array of the four BLAS dtypes; the norm in the real dtype.

    cuBLAS scales as it sums (on an H200, 1,024 entries of 1e30 in float32 gave 3.2e31, not
    inf), so the values are SciPy's BLAS ``nrm2``'s; but there it returned 2.2e-44 for
    1,024 float32 entries of 1e-40 (3.2e-39 exactly) and 3.3e-315 for float64 entries of
    1e-310 (docs/benchmarks/2026-11-26-h200.md): a subnormal entry is refused rather than
    given a value that cannot be predicted (cupysim.UndefinedResult).
    """
    if x.ndim != 1:
        raise ValueError(f"x must be a 1D array (actual: {x.ndim})")
    if x.dtype.char not in "fdFD":
        raise TypeError("invalid dtype")
    from cupysim.errors import UndefinedResult
    from scipy.linalg import blas

    def norm(u):
        tiny = _numpy.finfo(u.dtype).tiny
        mag = _numpy.abs(u)
        if ((mag != 0) & (mag < tiny)).any():
            raise UndefinedResult(
                "cuBLAS nrm2 given subnormal entries: on an H200 the norm came out orders of "
                "magnitude too small; the simulator cannot know the value"
            )
        if not u.size:
            return _numpy.zeros((), u.real.dtype)
        fn = {"f": blas.snrm2, "d": blas.dnrm2, "F": blas.scnrm2, "D": blas.dznrm2}
        return _numpy.asarray(fn[u.dtype.char](u), dtype=u.real.dtype)

    return _routine("nrm2", [x], norm, out)


def scal(a, x):
    """``x *= a`` in place."""
    _placement.require_current("cuBLAS", "scal", [x])
    a = _scalar(a, x.dtype)
    reads = [x, a] if isinstance(a, _core.ndarray) else [x]
    _core._run("scal", reads, [x], lambda: x._np.__imul__(_value(a)), kind="library")


def batched_gesv(a, b):
    """Solve stacked systems (getrfBatched/getrsBatched)."""
    # cublas.py batched_gesv: b is (..., M) (one right-hand side per system) or (..., M, K)
    if not ((a.ndim == b.ndim or a.ndim == b.ndim + 1) and a.shape[:-1] == b.shape[: a.ndim - 1]):
        raise ValueError("a must have (..., M, M) shape and b must have (..., M) or (..., M, K)")

    def solve(m, v):
        if m.ndim == v.ndim:
            return _numpy.linalg.solve(m, v)
        return _numpy.linalg.solve(m, v[..., None])[..., 0]

    return _routine("batched_gesv", [a, b], solve)
