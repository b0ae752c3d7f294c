"""``cupy.cuda.Device`` on simulated devices (modelled on cupy/cuda/device.pyx)."""

from __future__ import annotations

import itertools
import threading

from cupysim import devices as _devices
from cupysim import profile as _profile
from cupysim import streams as _streams

from . import runtime as _runtime

_thread_local = threading.local()
_handle_ids = itertools.count(0x1000)  # next() on a count is atomic under the GIL


def _stack() -> list[int]:
    stack = getattr(_thread_local, "devices", None)
    if stack is None:
        stack = _thread_local.devices = []
    return stack


def get_device_id() -> int:
    return _runtime.getDevice()


def get_compute_capability() -> str:
    return Device().compute_capability


def get_cublas_handle() -> int:
    return Device().cublas_handle


def get_cusolver_handle() -> int:
    return Device().cusolver_handle


def get_cusparse_handle() -> int:
    return Device().cusparse_handle


class Device:
    """Object that represents a CUDA device.

    ``with Device(i):`` makes device ``i`` current for the block (per thread) and restores
    the previous one after; ``use()`` switches for good.
    """

    __hash__ = None  # device.pyx defines __richcmp__ only: Devices are unhashable

    def __init__(self, device=None) -> None:
        self.id = _runtime.getDevice() if device is None else int(device)

    def __int__(self) -> int:
        return self.id

    def __enter__(self) -> Device:
        current = _runtime.getDevice()
        _stack().append(current)
        if self.id != current:
            _runtime.setDevice(self.id)
        return self

    def __exit__(self, *args) -> None:
        _runtime.setDevice(_stack().pop())

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"

    def use(self) -> Device:
        _runtime.setDevice(self.id)
        return self

    def synchronize(self) -> None:
        """Wait for all work on this device (cudaDeviceSynchronize)."""
        _devices.check(self.id)
        _streams.synchronize_device(self.id)

    @property
    def compute_capability(self) -> str:
        _devices.check(self.id)
        return f"{_profile.MAJOR}{_profile.MINOR}"

    @property
    def attributes(self) -> dict[str, int]:
        return _profile.attributes(_devices.check(self.id))

    @property
    def mem_info(self) -> tuple[int, int]:
        prev = _runtime.getDevice()
        try:
            _runtime.setDevice(self.id)
            return _runtime.memGetInfo()
        finally:
            _runtime.setDevice(prev)

    @property
    def pci_bus_id(self) -> str:
        return f"0000:{_profile.attributes(_devices.check(self.id))['PciBusId']:02x}:00.0"

    def _handle(self, library: str) -> int:
        # device.pyx _get_handle: one handle per library, device *and thread* (kept in a
        # threading.local, created on the thread's first use), never shared between threads
        from cupysim import libs

        libs.require(library)
        _devices.check(self.id)
        handles = getattr(_thread_local, "handles", None)
        if handles is None:
            handles = _thread_local.handles = {}
        key = (library, self.id)
        if key not in handles:
            handles[key] = next(_handle_ids)
        return handles[key]

    @property
    def cublas_handle(self) -> int:
        return self._handle("cublas")

    @property
    def cusolver_handle(self) -> int:
        return self._handle("cusolver")

    @property
    def cusparse_handle(self) -> int:
        return self._handle("cusparse")

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and self.id == other.id

    def __ne__(self, other) -> bool:
        return not self == other

    def __lt__(self, other):
        return self.id < other.id if isinstance(other, Device) else NotImplemented

    def __le__(self, other):
        return self.id <= other.id if isinstance(other, Device) else NotImplemented

    def __gt__(self, other):
        return self.id > other.id if isinstance(other, Device) else NotImplemented

    def __ge__(self, other):
        return self.id >= other.id if isinstance(other, Device) else NotImplemented


Device.__module__ = "cupy.cuda.device"
