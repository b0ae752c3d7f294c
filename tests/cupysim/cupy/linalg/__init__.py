"""``cupy.linalg`` (simulated): cuSOLVER routines on the current device, values by NumPy.

See cupysim/solver.py for the placement and error rules (copied from cupy/linalg/*.py).
"""

from __future__ import annotations

import numpy as _numpy
from cupysim import solver as _solver
from cupysim import wrap as _wrap

LinAlgError = _numpy.linalg.LinAlgError

_np = _numpy.linalg
solve = _solver.routine("solve", _np.solve, "{t}getrf", "{t}getrfBatched", cublas_batched=True)
inv = _solver.routine("inv", _np.inv, "{t}getrf", "{t}getrfBatched", cublas_batched=True)
cholesky = _solver.routine("cholesky", _np.cholesky, "{t}potrf", "{t}potrfBatched")
qr = _solver.routine("qr", _np.qr, "{t}geqrf")
svd = _solver.routine("svd", _np.svd, "{t}gesvd")


def _half_in_single(fn):
    """cupy/linalg/_eigenvalue.py ``_syevd``: ``linalg_common_type(a,
    reject_float16=False)`` takes float16 (cuSOLVER computes it in float32) and the
    results are cast back to float16; NumPy refuses float16."""

    def f(a, *args, **kwargs):
        if getattr(a, "dtype", None) != _numpy.float16:
            return fn(a, *args, **kwargs)
        res = fn(a.astype(_numpy.float32), *args, **kwargs)
        if isinstance(res, tuple):
            return type(res)(*(r.astype(_numpy.float16) for r in res))
        return res.astype(_numpy.float16)

    return f


eigh = _solver.routine("eigh", _half_in_single(_np.eigh), "{t}syevd")
eigvalsh = _solver.routine("eigvalsh", _half_in_single(_np.eigvalsh), "{t}syevd")
eig = _solver.routine("eig", _np.eig, "xgeev")
eigvals = _solver.routine("eigvals", _np.eigvals, "xgeev")
det = _solver.routine("det", _np.det, None)
slogdet = _solver.routine("slogdet", _np.slogdet, None)
lstsq = _solver.routine("lstsq", _np.lstsq, "{t}gesvd")
pinv = _solver.routine("pinv", _np.pinv, "{t}gesvd")
matrix_rank = _solver.routine("matrix_rank", _np.matrix_rank, "{t}gesvd")
cond = _solver.routine("cond", _np.cond, "{t}gesvd")
tensorinv = _solver.routine("tensorinv", _np.tensorinv, "{t}getrf")
tensorsolve = _solver.routine("tensorsolve", _np.tensorsolve, "{t}getrf")
norm = _wrap.function("norm", _np.norm)
cross = _wrap.function("cross", _np.cross)
matrix_transpose = _wrap.function("matrix_transpose", _np.matrix_transpose)
matrix_power = _wrap.blas("matrix_power", _np.matrix_power, takes_out=False)
matmul = _wrap.blas("matmul", _np.matmul)
