"""gpukit's NumPy/SciPy backend: arrays are ``numpy.ndarray`` on the host."""

from __future__ import annotations

from gpukit._host.virtual import cpu_device_count

from .backend import NumpyBackend

__all__ = ["NumpyBackend", "create_backend"]


def create_backend() -> NumpyBackend:
    """The factory gpukit's registry calls; the NumPy backend always runs.

    ``GPUKIT_CPU_DEVICES`` is read here, so a malformed value fails the first use (the
    selection) with a ``ValueError`` that names it, rather than a later call.
    """
    return NumpyBackend(cpu_device_count())
