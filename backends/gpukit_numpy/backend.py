"""The NumPy backend: host arrays, SciPy for the numerical library calls.

With ``GPUKIT_CPU_DEVICES=N`` (read at first use) it exposes N virtual devices
(see :mod:`gpukit._host.virtual`): arrays placed on one are zero-copy
``VirtualDeviceArray`` views, plain ndarrays stay device-less host data.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import numpy as np

from gpukit._host.virtual import VirtualDeviceArray, cpu_device_count, place
from gpukit.backend import Backend, Device

from .collectives import InMemoryCollectives
from .fft import NumpyFFT
from .linalg import NumpyLinalg
from .memory import NumpyMemoryMixin, host_total

_kernels: ModuleType | None = None  # the NumPy references (import scipy.special): on first use


def _load_kernels() -> ModuleType:
    global _kernels
    from . import kernels

    _kernels = kernels
    return kernels


class NumpyBackend(NumpyFFT, NumpyLinalg, NumpyMemoryMixin, Backend):
    """Arrays are ``numpy.ndarray`` on the host; ``cpu_devices`` virtual devices.

    Parameters
    ----------
    cpu_devices : int, optional
        Number of virtual devices; ``GPUKIT_CPU_DEVICES`` (default 1) when omitted,
        read on first use.
    """

    name = "numpy"
    is_device = False

    def __init__(self, cpu_devices: int | None = None) -> None:
        self.xp = np
        self._count = cpu_devices
        # None: no device chosen, new arrays are plain (unplaced) host arrays.
        self._current: ContextVar[int | None] = ContextVar(f"gpukit_cpu_{id(self)}", default=None)

    def owns(self, x: Any) -> bool:
        return isinstance(x, np.ndarray | np.generic)

    def asarray(self, obj: Any, dtype: Any = None, device: int | None = None) -> np.ndarray:
        if device is None:
            if isinstance(obj, VirtualDeviceArray):  # stays where it is, as on CuPy
                return obj if dtype is None else obj.astype(dtype, copy=False)
            device = self._current.get()
        out = np.asarray(obj, dtype)  # by position: no keywords to parse
        if device is None or self.device_count() == 1:
            return out
        return place(out, device)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def device_of(self, x: Any) -> int:
        return getattr(x, "device_id", 0)

    def device_count(self) -> int:
        if self._count is None:
            self._count = cpu_device_count()
        return self._count

    def devices(self) -> list[Device]:
        name = platform.processor() or platform.machine() or "cpu"
        n = self.device_count()
        label = f"cpu ({name}, {os.cpu_count()} cores)"
        if n > 1:
            return [Device(self.name, i, f"virtual {label}", host_total()) for i in range(n)]
        return [Device(self.name, 0, label, host_total())]

    def kernel(self, name: str) -> Any:
        return getattr(_kernels or _load_kernels(), name)

    def current_device(self) -> int:
        return self._current.get() or 0

    @contextlib.contextmanager
    def use_device(self, index: int) -> Iterator[None]:
        token = self._current.set(index)
        try:
            yield
        finally:
            self._current.reset(token)

    def to_device(self, x: Any, device: int, copy: bool = True) -> np.ndarray:
        # One memory space: a "peer copy" is a memcpy, a placement without copy a view.
        data = np.array(x, copy=True) if copy else x
        return place(data, device) if self.device_count() > 1 else np.asarray(data)

    def collectives(self, devices: tuple[int, ...]) -> Any:
        return InMemoryCollectives(self, devices)

    def versions(self) -> dict[str, str]:
        import scipy

        return {"numpy": np.__version__, "scipy": scipy.__version__}
