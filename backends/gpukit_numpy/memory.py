"""Host memory figures and allocation failures for the NumPy backend.

NumPy has no pool and does not count what its arrays hold, so only the host's free
and total memory are reported; the other figures are ``None``.
"""

from __future__ import annotations

import os

import numpy as np


def host_total() -> int | None:
    """Physical memory of the host in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None


def host_available() -> int | None:
    """Memory the host can give without swapping: Linux's MemAvailable, else free pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def requested_bytes(exc: BaseException) -> int | None:
    """Bytes a host ``MemoryError`` asked for: NumPy's carries shape and dtype (-1: unknown)."""
    if not isinstance(exc, MemoryError):
        return None
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is None or dtype is None:
        return -1
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class NumpyMemoryMixin:
    """The memory part of the backend contract, on the host."""

    def out_of_memory(self, exc: BaseException) -> int | None:
        return requested_bytes(exc)

    def memory_stats(self, device: int) -> dict[str, int | None]:
        return {
            "free": host_available(),
            "total": host_total(),
            "in_use": None,
            "pool_held": None,
            "limit": None,
        }
