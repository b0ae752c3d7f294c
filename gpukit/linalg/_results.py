"""The named result tuples of ``numpy.linalg``, for every backend.

NumPy 2 returns ``SlogdetResult(sign, logabsdet)``, ``EighResult(eigenvalues,
eigenvectors)``, ``SVDResult(U, S, Vh)`` and ``QRResult(Q, R)``; gpukit returns the same
classes (imported from NumPy, so ``isinstance`` checks against NumPy's hold), and CuPy's
plain tuples are wrapped in them by the front-end. Before NumPy 2 these classes did not
exist: equivalent NamedTuples with the same fields stand in.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["EighResult", "QRResult", "SVDResult", "SlogdetResult"]

try:
    from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult
except ImportError:  # NumPy < 2

    class SlogdetResult(NamedTuple):  # type: ignore[no-redef]
        sign: Any
        logabsdet: Any

    class EighResult(NamedTuple):  # type: ignore[no-redef]
        eigenvalues: Any
        eigenvectors: Any

    class SVDResult(NamedTuple):  # type: ignore[no-redef]
        U: Any
        S: Any
        Vh: Any

    class QRResult(NamedTuple):  # type: ignore[no-redef]
        Q: Any
        R: Any
