"""Captured device work (CUDA graphs): what a backend offers and how it says no.

:meth:`gpukit.backend.Backend.capture_graph` records a block of device work once, to be
replayed in one launch (``backends/gpukit_cupy/graphs.py`` on CuPy); a backend without
graphs, or work that cannot be captured, raises :class:`CaptureFailed` with the reason,
and the caller runs the work as before (saying why once).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["CaptureFailed", "Captured"]


class CaptureFailed(Exception):
    """The work cannot be captured; ``str()`` says why (a host synchronisation inside, a
    library call the array library refuses during capture, no graphs on this backend)."""


class Captured(Protocol):
    """Captured device work."""

    def launch(self) -> None:
        """Replay the work on the current stream, in one launch."""
