"""gpukit's NumPy/SciPy backend: arrays are ``numpy.ndarray`` on the host."""

from __future__ import annotations

from .backend import NumpyBackend

__all__ = ["NumpyBackend", "create_backend"]


def create_backend() -> NumpyBackend:
    """The factory gpukit's registry calls; the NumPy backend always runs."""
    return NumpyBackend()
