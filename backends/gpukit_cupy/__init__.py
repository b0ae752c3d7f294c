"""gpukit's CuPy backend: arrays are ``cupy.ndarray`` on NVIDIA GPUs.

Importing this package does not import CuPy; :func:`create_backend` does, and
checks that a CUDA device is usable before the backend is handed out.
"""

from __future__ import annotations

__all__ = ["create_backend"]


def create_backend():
    """The factory gpukit's registry calls.

    Raises
    ------
    gpukit.BackendUnavailableError
        CuPy is not installed, the CUDA driver is missing or too old, or no device is visible.
    """
    from .backend import CupyBackend, probe

    probe()
    return CupyBackend()
