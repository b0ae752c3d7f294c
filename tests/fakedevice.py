"""A test backend that behaves like a device backend, on the CPU.

Its arrays are ``FakeDeviceArray`` (a NumPy subclass carrying a device index), so
the front-end sees them as foreign device arrays: host inputs are transfers,
two devices do not mix. Used to test dispatch, transfers and guards without a GPU.

It also models a device memory pool, so the out-of-memory policy can be tested on
the CPU: :meth:`FakeDeviceBackend.allocate` counts bytes against a per-device limit,
:meth:`FakeDeviceBackend.fail_allocations` makes the next allocations fail on demand,
and :meth:`FakeDeviceBackend.scale` is a device "kernel" that writes its output in
two halves with an allocation between them (the shape of a half-written ``out``).
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


class FakeOutOfMemory(MemoryError):
    """The fake device's allocation failure (as ``cupy.cuda.memory.OutOfMemoryError``)."""

    def __init__(self, requested: int) -> None:
        super().__init__(f"fake device out of memory allocating {requested} bytes")
        self.requested = requested


class FakeDeviceBackend(Backend):
    """Two fake devices; arrays are ``FakeDeviceArray``."""

    name = "fakedevice"
    is_device = True

    def __init__(self, count: int = 2) -> None:
        self.xp = np
        self._count = count
        self._local = threading.local()
        self.memory_total = 2**30
        self.in_use = [0] * count  # bytes held by live "arrays"
        self.cached = [0] * count  # bytes the pool keeps after frees
        self.limits: list[int | None] = [None] * count
        self.failures = 0  # allocations still to fail on demand
        self.releases = 0  # calls of release_unused

    # -- the memory model ----------------------------------------------------------------
    def fail_allocations(self, n: int) -> None:
        """Make the next ``n`` allocations fail with :class:`FakeOutOfMemory`."""
        self.failures = n

    def allocate(self, nbytes: int) -> None:
        """Take ``nbytes`` on the current device, from the cache first; fail as armed."""
        dev = self.current_device()
        limit = self.limits[dev]
        if self.failures > 0 or (limit is not None and self.in_use[dev] + nbytes > limit):
            self.failures = max(self.failures - 1, 0)
            raise FakeOutOfMemory(nbytes)
        self.in_use[dev] += nbytes
        self.cached[dev] = max(self.cached[dev] - nbytes, 0)

    def scale(self, x: Any, factor: float, out: Any = None) -> Any:
        """``x * factor``, written in two halves with an allocation in between."""
        out = self.asarray(np.empty_like(x)) if out is None else out
        flat, src = out.reshape(-1), np.asarray(x).reshape(-1)
        half = flat.size // 2
        flat[:half] = src[:half] * factor
        self.allocate(int(x.nbytes))  # a workspace for the second half
        flat[half:] = src[half:] * factor
        return out

    def out_of_memory(self, exc: BaseException) -> int | None:
        return exc.requested if isinstance(exc, FakeOutOfMemory) else None

    def release_unused(self) -> None:
        self.releases += 1
        self.cached = [0] * self._count

    def memory_stats(self, device: int) -> dict[str, int | None]:
        held = self.in_use[device] + self.cached[device]
        return {
            "free": self.memory_total - held,
            "total": self.memory_total,
            "in_use": self.in_use[device],
            "pool_held": held,
            "limit": self.limits[device],
        }

    def set_memory_limit(self, device: int, nbytes: int | None) -> bool:
        self.limits[device] = nbytes
        return True

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
        return [
            Device(self.name, i, f"fake device {i}", self.memory_total, None)
            for i in range(self._count)
        ]

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
