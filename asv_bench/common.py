"""What every gpukit benchmark shares: the backend axis, device sync, peers.

Following SciPy's benchmarks: one asv parameter axis over backends; a backend or
peer that cannot run here raises ``NotImplementedError`` in ``setup`` so asv
records a skip, not a failure; device work is synchronised before the clock stops.
"""

from __future__ import annotations

import importlib.util

import numpy as np

import gpukit as gk

#: The backend axis every benchmark is parametrised over.
BACKENDS = ["numpy", "cupy"]


def use(backend: str):
    """Select ``backend`` process-wide for a benchmark; NotImplementedError if it cannot run."""
    status = gk.available_backends().get(backend)
    if status is None or not status.available:
        raise NotImplementedError(f"backend {backend!r} unavailable here")
    return gk.set_backend(backend)


def sync(backend) -> None:
    """Wait for queued device work, so the timer measures it (no-op on the host)."""
    backend.synchronize()


def random(backend, shape, dtype="float32", seed=0):
    """Random data of ``dtype`` placed on ``backend`` (never zeros: zeros flatter hardware)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "c":
        x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        x = rng.standard_normal(shape)
    with gk.use_backend(backend.name):
        return gk.asarray(x.astype(dt))


def have(module: str) -> bool:
    """Whether an optional peer (``torch``) is importable, without importing it."""
    return importlib.util.find_spec(module) is not None
