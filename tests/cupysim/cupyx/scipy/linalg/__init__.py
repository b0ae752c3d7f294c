"""``cupyx.scipy.linalg`` (simulated): values from SciPy on the current device.

cupyx/scipy/linalg/_solve_triangular.py imports cuBLAS at module level, so without cuBLAS
the import fails, as in CuPy.
"""

from __future__ import annotations

import scipy.linalg as _sl
from cupysim import libs as _libs
from cupysim import solver as _solver
from cupysim import wrap as _wrap

_libs.require("cublas")

solve_triangular = _solver.routine("solve_triangular", _sl.solve_triangular, None)
lu_factor = _solver.routine("lu_factor", _sl.lu_factor, "{t}getrf")
lu_solve = _solver.routine("lu_solve", _sl.lu_solve, None)
lu = _solver.routine("lu", _sl.lu, "{t}getrf")
expm = _solver.routine("expm", _sl.expm, None)
for _n in ("block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "khatri_rao",
           "leslie", "toeplitz", "bandwidth"):  # fmt: skip
    globals()[_n] = _wrap.function(_n, getattr(_sl, _n))
