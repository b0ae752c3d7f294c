"""``cupyx.scipy.linalg`` (simulated): values from SciPy on the current device.

cupyx/scipy/linalg/_solve_triangular.py imports cuBLAS at module level, so without cuBLAS
the import fails, as in CuPy.
"""

from __future__ import annotations

import warnings as _warnings

import numpy as _np
import scipy.linalg as _sl
from cupysim import devices as _devices
from cupysim import libs as _libs
from cupysim import solver as _solver
from cupysim import streams as _streams
from cupysim import wrap as _wrap

_libs.require("cublas")

solve_triangular = _solver.routine("solve_triangular", _sl.solve_triangular, None)


def _getrf(a, overwrite_a=False, check_finite=True):
    """cupyx/scipy/linalg/_decomp_lu.py ``_lu_factor``'s rules: four dtypes, ``check_finite``
    for real input only, and a zero pivot a RuntimeWarning, never an error (getrf's devInfo
    is read back whatever ``cupyx.errstate`` says)."""
    if a.dtype.char not in "fdFD":
        raise NotImplementedError("Only float32, float64, complex64 and complex128 are supported.")
    if check_finite and a.dtype.kind == "f" and not _np.isfinite(a).all():
        raise ValueError("array must not contain infs or NaNs")
    _solver.refuse_undefined(_solver._prefix(a.dtype) + "getrf", a)
    (getrf,) = _sl.get_lapack_funcs(("getrf",), (a,))
    lu, piv, info = getrf(a)
    if info > 0:
        _warnings.warn(
            f"Diagonal number {info} is exactly zero. Singular matrix.",
            RuntimeWarning,
            stacklevel=4,
        )
    return lu, piv


_lu_factor = _solver.routine("lu_factor", _getrf, None)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """CuPy's ``lu_factor``: getrf, then ``dev_info[0] < 0`` and ``dev_info[0] > 0``, two
    reads of device memory, each a synchronisation (_decomp_lu.py)."""
    out = _lu_factor(a, overwrite_a=overwrite_a, check_finite=check_finite)
    for _ in range(2):
        _streams.synchronize(_streams.current(_devices.current()))
    return out


lu_solve = _solver.routine("lu_solve", _sl.lu_solve, None)
lu = _solver.routine("lu", _sl.lu, "{t}getrf")
expm = _solver.routine("expm", _sl.expm, None)
for _n in ("block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "khatri_rao",
           "leslie", "toeplitz", "bandwidth"):  # fmt: skip
    globals()[_n] = _wrap.function(_n, getattr(_sl, _n))
