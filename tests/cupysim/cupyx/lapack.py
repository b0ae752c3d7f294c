"""``cupyx.lapack`` (simulated): gesv, gels, posv, potrs as CuPy 14.2 defines them.

Ported from cupyx/lapack.py: the same validation, dtype promotion, copies (``astype`` on
the current device: the peer-access rule) and in-place behaviour (``gesv`` overwrites
``a`` and ``b``; ``potrs`` solves in ``b``'s memory when ``b`` already has the layout it
needs). The cuSOLVER call itself runs on the current device with its operands there
(cupysim.placement) and its values come from SciPy's LAPACK. ``devInfo`` is checked only
under ``cupyx.errstate(linalg='raise')``, as cupy/linalg/_util.py does.
"""

from __future__ import annotations

import cupy as _cupy
import numpy as _numpy
import scipy.linalg as _sla
from cupysim import libs as _libs

_libs.require("cublas")  # cupyx/lapack.py imports cuBLAS at module level

from cupysim import lapack as _lapack  # noqa: E402


def gesv(a, b):
    """Solve ``a x = b`` with getrf/getrs; ``a`` and ``b`` are overwritten."""
    _libs.require("cusolver")
    if a.ndim != 2:
        raise ValueError(f"a.ndim must be 2 (actual: {a.ndim})")
    if b.ndim not in (1, 2):
        raise ValueError(f"b.ndim must be 1 or 2 (actual: {b.ndim})")
    if a.shape[0] != a.shape[1]:
        raise ValueError("a must be a square matrix.")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"shape mismatch (a: {a.shape}, b: {b.shape}).")
    if a.dtype != b.dtype:
        raise TypeError(f"dtype mismatch (a: {a.dtype}, b: {b.dtype})")
    if a.dtype.char not in "fdFD":
        raise TypeError(f"unsupported dtype (actual:{a.dtype})")
    if not (a.flags.f_contiguous or a.flags.c_contiguous):
        raise ValueError("a must be F-contiguous or C-contiguous.")
    if not b.flags.f_contiguous:
        raise ValueError("b must be F-contiguous.")
    _lapack.getrf_getrs(a, b)


def gels(a, b):
    """Least-squares solution of ``a x = b`` by QR (geqrf/ormqr/trsm)."""
    _libs.require("cusolver")
    if a.ndim != 2:
        raise ValueError(f"a.ndim must be 2 (actual: {a.ndim})")
    if b.ndim not in (1, 2):
        raise ValueError(f"b.ndim must be 1 or 2 (actual: {b.ndim})")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"shape mismatch (a: {a.shape}, b: {b.shape}).")
    if a.dtype != b.dtype:
        raise ValueError(f"dtype mismatch (a: {a.dtype}, b: {b.dtype}).")
    if a.dtype.char not in "fdFD":
        raise ValueError(f"unsupported dtype (actual: {a.dtype})")
    a = a.copy(order="F")
    b = b.copy(order="F")
    return _lapack.compute("gels", [a, b], lambda x, y: _sla.lstsq(x, y)[0])


def posv(a, b):
    """Solve ``a x = b`` for Hermitian positive-definite ``a`` (potrf + potrs)."""
    _libs.require("cusolver")
    _util = _cupy.linalg
    _lapack.assert_cupy_array(a, b)
    _lapack.assert_stacked_2d(a)
    _lapack.assert_stacked_square(a)
    dtype = _numpy.promote_types(_numpy.promote_types(a.dtype, b.dtype), "f")
    if dtype.char not in "fdFD":
        raise ValueError(
            f"dtype must be float32, float64, complex64 or complex128 (actual: {a.dtype})"
        )
    del _util
    if a.ndim > 2:
        a = a.astype(dtype, order="C", copy=True)
        b_shape = b.shape
        n = a.shape[-1]
        batch = int(_numpy.prod(a.shape[:-2]))
        b = b.reshape(batch, n, -1).astype(dtype, order="C", copy=True)
        x = _lapack.potrf_potrs(a, b, batched=True)
        return x.reshape(b_shape)
    a = a.astype(dtype, order="F", copy=True)
    b_shape = b.shape
    n = a.shape[0]
    b = b.reshape(n, -1).astype(dtype, order="F", copy=True)
    _lapack.potrf_potrs(a, b, batched=False)
    return _cupy.ascontiguousarray(b.reshape(b_shape))


def potrs(L, b, lower):
    """Solve ``A x = b`` from the Cholesky factor ``L``; may solve in ``b``'s memory."""
    _libs.require("cusolver")
    _lapack.assert_cupy_array(L, b)
    _lapack.assert_stacked_2d(L)
    _lapack.assert_stacked_square(L)
    if L.ndim > 2:
        return _lapack.batched_potrs(L, b, lower)
    n = L.shape[-1]
    b_shape = b.shape
    if b.ndim == 1:
        b = b[:, None]
    assert b.ndim == 2, "b is not a vector or a matrix"
    assert b.shape[0] == n, "length of arrays in b does not match size of L"
    dtype = _numpy.promote_types(_numpy.promote_types(L.dtype, b.dtype), "f")
    L, b = L.astype(dtype, copy=False), b.astype(dtype, copy=False)
    if (not L.flags.f_contiguous) and (not L.flags.c_contiguous):
        L = _cupy.asfortranarray(L)
    if (b.dtype != dtype) or (not b.flags.f_contiguous):
        b = _cupy.asfortranarray(b)
    if dtype.char not in "fdFD":
        raise ValueError(
            f"dtype must be float32, float64, complex64 or complex128 (actual: {L.dtype})"
        )
    _lapack.potrs_inplace(L, b, lower)
    return b.reshape(b_shape)
