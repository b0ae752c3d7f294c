"""Helpers for numerical assertions: float64 references, relative norms (gpukit.testing's)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gpukit as gk
from gpukit.testing import default_rtol
from gpukit.testing import relative_error as rel_err

__all__ = [
    "TOL",
    "flushed",
    "oracle",
    "rel_err",
    "same_errors_warm_as_cold",
    "simulated",
    "terms_err",
    "with_tails",
]

#: Relative-norm tolerance per dtype, the numerics contract's (docs/numerics.rst), as
#: gpukit.testing states it; ``rel_err`` is gpukit.testing.relative_error.
TOL = {
    np.dtype(d): default_rtol(d)
    for d in (np.float16, np.float32, np.complex64, np.float64, np.complex128)
}


def terms_err(actual, expected, terms) -> float:
    """Error against the magnitudes of the terms a result sums, ``||actual - expected|| /
    ||terms||``, ``terms`` being the sum of the terms' absolute values (``|a| @ |b|`` for a
    product). A sum is as accurate as its terms are large: when they cancel, its relative
    error legitimately grows (11 float32 terms of ~1 summing to -0.0037 were 2e-5 off)."""
    a = np.asarray(gk.to_numpy(actual)).astype(np.complex128)
    e = np.asarray(expected).astype(np.complex128)
    denom = np.linalg.norm(np.asarray(terms, dtype=np.float64))
    return float(np.linalg.norm(a - e) / (denom if denom else 1.0))


def flushed(x, backend) -> np.ndarray:
    """Host ``x`` as ``backend``'s kernels read it: single-precision subnormals become zeros
    of the same sign where the backend flushes them (CuPy; docs/numerics.rst), else ``x``."""
    x = np.asarray(x)
    if not backend.flushes_single_subnormals or x.dtype not in (np.float32, np.complex64):
        return x
    out = x.copy()
    parts = out.view(np.float32)  # complex64: the real and imaginary parts interleaved
    parts[np.abs(parts) < np.finfo(np.float32).tiny] *= 0  # keeps the sign
    return out


def with_tails(rng, shape, dtype) -> np.ndarray:
    """Random inputs with the tails mixed in (a twentieth of the entries, at least 4):
    |x| up to 1e4 (erf, exp and log1p far out), subnormals, and signed zeros."""
    x = rng.standard_normal(shape) * 3
    flat = x.reshape(-1)
    idx = rng.permutation(flat.size)[: max(flat.size // 20, 4)]
    q = len(idx) // 4
    flat[idx[:q]] = rng.choice([-1, 1], q) * 10 ** rng.uniform(1, 4, q)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    flat[idx[q : 2 * q]] = rng.choice([-1, 1], q) * tiny * rng.integers(1, 1000, q)
    flat[idx[2 * q : 3 * q]] = rng.choice([-0.0, 0.0], q)
    return x.astype(dtype)


def simulated() -> bool:
    """Whether this run's CuPy is the simulator (``--cupy=sim``, which exports its path)."""
    return bool(os.environ.get("CUPYSIM_PATH"))


def oracle(module: str):
    """Import ``module`` from the ``oracles`` extra, or skip saying how to install it."""
    return pytest.importorskip(module, reason=f'needs {module}: pip install -e ".[oracles]"')


def _raised(call) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def same_errors_warm_as_cold(warm, failing) -> None:
    """Each failing call raises the same exception type and message with no plan kept
    (cold) as after the valid calls ``warm`` kept theirs for the same operations."""
    from gpukit._runtime import plans

    plans.forget()
    cold = [_raised(call) for call in failing]
    for call in warm:
        call(), call()  # the second call runs on the kept plan
    assert [_raised(call) for call in failing] == cold


@gk.elementwise
def _softsign(x):
    return x / (1.0 + abs(x))


@gk.elementwise
def _softsign_grad(x, g):
    return g / ((1.0 + abs(x)) * (1.0 + abs(x)))


def softsign_layer() -> gk.nn.Activation:
    """A ``gk.nn.Activation`` of user kernels: softsign and its gradient."""
    return gk.nn.Activation(_softsign, _softsign_grad)
