"""The NumPy backend: host arrays, SciPy for the numerical library calls."""

from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np

from gpukit.backend import Backend, Device

from .fft import NumpyFFT
from .linalg import NumpyLinalg


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None


class NumpyBackend(NumpyFFT, NumpyLinalg, Backend):
    """Arrays are ``numpy.ndarray``; one device, the host."""

    name = "numpy"
    is_device = False

    def __init__(self) -> None:
        self.xp = np

    def owns(self, x: Any) -> bool:
        return isinstance(x, np.ndarray | np.generic)

    def asarray(self, obj: Any, dtype: Any = None, device: int | None = None) -> np.ndarray:
        return np.asarray(obj, dtype=dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def devices(self) -> list[Device]:
        name = platform.processor() or platform.machine() or "cpu"
        return [Device(self.name, 0, f"cpu ({name}, {os.cpu_count()} cores)", _host_memory())]

    def kernel(self, name: str) -> Any:
        from . import kernels  # the NumPy references (imports scipy.special): load on use

        return getattr(kernels, name)

    def versions(self) -> dict[str, str]:
        import scipy

        return {"numpy": np.__version__, "scipy": scipy.__version__}
