"""Helpers for numerical assertions: float64 references, relative norms."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gpukit as gk

#: Relative-norm tolerance per dtype, the numerics contract's (docs/numerics.rst).
TOL = {
    np.dtype(np.float32): 1e-5,
    np.dtype(np.complex64): 1e-5,
    np.dtype(np.float64): 1e-12,
    np.dtype(np.complex128): 1e-12,
}


def rel_err(actual, expected) -> float:
    """Relative error ``||actual - expected|| / ||expected||`` in float64 on the host."""
    a = np.asarray(gk.to_numpy(actual)).astype(np.complex128)
    e = np.asarray(expected).astype(np.complex128)
    denom = np.linalg.norm(e)
    return float(np.linalg.norm(a - e) / (denom if denom else 1.0))


def terms_err(actual, expected, terms) -> float:
    """Error against the magnitudes of the terms a result sums, ``||actual - expected|| /
    ||terms||``, ``terms`` being the sum of the terms' absolute values (``|a| @ |b|`` for a
    product). A sum is as accurate as its terms are large: when they cancel, its relative
    error legitimately grows (11 float32 terms of ~1 summing to -0.0037 were 2e-5 off)."""
    a = np.asarray(gk.to_numpy(actual)).astype(np.complex128)
    e = np.asarray(expected).astype(np.complex128)
    denom = np.linalg.norm(np.asarray(terms, dtype=np.float64))
    return float(np.linalg.norm(a - e) / (denom if denom else 1.0))


def simulated() -> bool:
    """Whether this run's CuPy is the simulator (``--cupy=sim``, which exports its path)."""
    return bool(os.environ.get("CUPYSIM_PATH"))


def oracle(module: str):
    """Import ``module`` from the ``oracles`` extra, or skip saying how to install it."""
    return pytest.importorskip(module, reason=f'needs {module}: pip install -e ".[oracles]"')
