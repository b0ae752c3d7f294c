"""A test backend that behaves like a device backend, on the CPU.

Its arrays are ``FakeDeviceArray`` (a NumPy subclass carrying a device index), so
the front-end sees them as foreign device arrays: host inputs are transfers,
two devices do not mix. Used to test dispatch, transfers and guards without a GPU.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

from gpukit.backend import Backend, Device


class FakeDeviceArray(np.ndarray):
    """A NumPy array pretending to live on device ``device_id``."""

    device_id: int = 0

    def __array_finalize__(self, obj: Any) -> None:
        self.device_id = getattr(obj, "device_id", 0)


class FakeDeviceBackend(Backend):
    """Two fake devices; arrays are ``FakeDeviceArray``."""

    name = "fakedevice"
    is_device = True

    def __init__(self, count: int = 2) -> None:
        self.xp = np
        self._count = count
        self._local = threading.local()

    def owns(self, x: Any) -> bool:
        return isinstance(x, FakeDeviceArray)

    def asarray(self, obj: Any, dtype: Any = None, device: int | None = None) -> Any:
        out = np.array(obj, dtype=dtype, copy=True).view(FakeDeviceArray)
        out.device_id = self.current_device() if device is None else device
        return out

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.array(x.view(np.ndarray), copy=True)

    def device_of(self, x: Any) -> int:
        return x.device_id

    def device_count(self) -> int:
        return self._count

    def devices(self) -> list[Device]:
        return [Device(self.name, i, f"fake device {i}", 2**30, None) for i in range(self._count)]

    def current_device(self) -> int:
        return getattr(self._local, "device", 0)

    @contextlib.contextmanager
    def use_device(self, index: int):
        previous = self.current_device()
        self._local.device = index
        try:
            yield
        finally:
            self._local.device = previous
