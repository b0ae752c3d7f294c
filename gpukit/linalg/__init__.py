"""Linear algebra on the active backend: dense solvers and Krylov iterations.

Dense functions follow ``numpy.linalg`` (batched over leading dimensions); singular or
non-positive-definite matrices raise :class:`gpukit.LinAlgError` on every backend.
Iterative solvers accept dense, sparse, LinearOperator or callable operators and return
``(x, info)`` with an :class:`IterativeInfo`.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> gk.linalg.solve(np.eye(2) * 2, np.ones(2)).tolist()
[0.5, 0.5]
"""

from __future__ import annotations

from .dense import cho_solve, cholesky, det, eigh, inv, lstsq, norm, qr, slogdet, solve, svd
from .iterative import IterativeInfo, bicgstab, cg, gmres, minres

__all__ = [
    "IterativeInfo",
    "bicgstab",
    "cg",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "gmres",
    "inv",
    "lstsq",
    "minres",
    "norm",
    "qr",
    "slogdet",
    "solve",
    "svd",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
