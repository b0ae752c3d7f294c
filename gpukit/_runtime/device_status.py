"""Errors found on a device and reported by the host later: one status buffer per device.

A check whose answer is on a device (a label out of range inside the loss kernel, a
non-finite loss in ``fit``) would cost a host synchronisation per call if the host
waited for the answer. Instead the kernel that finds the problem records it in its
device's status buffer (a few int64 slots, written on the device); every optimizer
kernel on that device reads the flags and skips its update while any is set, so a
poisoned step is never applied; and the host reads the buffer when it synchronises
anyway -- ``gk.synchronize()``, ``gk.to_numpy()``, ``fit`` every few steps and at the
end of each epoch, ``Optimizer.state_dict()``, ``gk.nn.save`` -- or when asked
(:func:`raise_pending`). A read that finds a flag clears the buffer and raises the error
the check would have raised at once.

PyTorch's device-side assertions are the precedent: a kernel that fails an assertion is
reported at the next synchronising call, not where it was launched (``TORCH_USE_CUDA_DSA``,
c10/cuda/CUDADeviceAssertionHost.h). Unlike a CUDA assertion, this leaves the device
usable: work queued after the problem still runs, and only updates are skipped.

Slots (``int64``): :data:`FLAGS` (a bit per kind of problem, :data:`LABEL`,
:data:`NONFINITE`), then per kind the details its message needs. A ``serial`` numbers
the checked calls on a device (:meth:`Status.next_serial`), so a reader such as ``fit``
can name the batch where the problem first appeared.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..backend import Backend

__all__ = [
    "FLAGS",
    "LABEL",
    "NONFINITE",
    "Status",
    "raise_pending",
    "read",
    "register",
    "status",
]

#: Slot indices of a status buffer.
FLAGS, LABEL_SERIAL, LABEL_LO, LABEL_HI, LABEL_CLASSES, NONFINITE_SERIAL, NONFINITE_KIND = range(7)
SLOTS = 8
#: Flag bits: a label outside [0, classes) reached a loss kernel; a loss was NaN or inf.
LABEL, NONFINITE = 1, 2
_MAX, _MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
#: What a clear buffer holds: minima start at the largest int64, maxima at the smallest.
INITIAL = np.array([0, _MAX, _MAX, _MIN, 0, _MAX, 0, 0], dtype=np.int64)
#: NONFINITE_KIND: which value the loss had.
NONFINITE_VALUES = (float("nan"), float("inf"), float("-inf"))


class Status:
    """The status buffer of one device and the host's bookkeeping of it.

    Attributes
    ----------
    buffer : array
        ``int64[SLOTS]`` on the device (a host array on the numpy backend).
    serial : int
        The number of the last checked call (:meth:`next_serial`).
    armed : bool
        Whether a kernel that may write the buffer ran since it was last read: a read
        of a buffer nothing could have written is skipped (it would be a copy for nothing).
    lock : threading.RLock
        Held while a checked call is numbered and its kernel launched, and while the
        buffer is read: threads share a device's buffer, and a read between another
        thread's numbering and its launch, or a clear after another thread's kernel
        flagged, would lose that flag. Reentrant: a launch may read (an out-of-memory
        retry synchronises).
    """

    __slots__ = (
        "armed", "backend", "buffer", "checked", "device", "failures", "lock", "serial",
    )  # fmt: skip

    def __init__(self, backend: Backend, device: int) -> None:
        self.backend, self.device = backend, device
        self.buffer = backend.persistent(INITIAL, device)
        self.lock = threading.RLock()
        self.serial = 0
        self.armed = False
        #: the serial of the last read: work numbered up to it is known good or reported
        self.checked = 0
        #: the first bad serial of each error read: later updates were skipped (optimizers
        #: take back their step counts)
        self.failures: list[int] = []

    def next_serial(self) -> int:
        """Number a checked call (its kernel writes this number with what it finds);
        hold :attr:`lock` from here until the kernel is launched."""
        self.serial += 1
        self.armed = True
        return self.serial

    def read(self) -> np.ndarray | None:
        """The slots if a flag is set (then the buffer is cleared), else None.

        One device-to-host copy of ``SLOTS`` int64 when :attr:`armed`, after the device's
        queued work (every stream's: other threads' checked kernels run on their own);
        nothing otherwise.
        """
        with self.lock:  # every numbered call's kernel is queued: none is half-made
            if not self.armed:
                return None
            self.armed = False
            checked = self.serial
            device = self.backend.is_device
            if device:
                self.backend.synchronize(self.device)
            values = self.backend.to_numpy(self.buffer)
            self.checked = checked
            if not values[FLAGS]:
                return None
            self.failures.append(int(min(values[LABEL_SERIAL], values[NONFINITE_SERIAL])))
            with self.backend.use_device(self.device):
                self.buffer[...] = self.backend.asarray(INITIAL, device=self.device)
            if device:  # cleared before the next checked kernel, on any stream, can flag
                self.backend.synchronize(self.device)
            return values


_statuses: dict[tuple[int, int], Status] = {}
_lock = threading.Lock()
_reasons: dict[int, Callable[[np.ndarray], BaseException]] = {}


def status(backend: Backend, device: int) -> Status:
    """The status of ``backend``'s ``device``, made (one small copy) on first use."""
    key = (id(backend), device)
    found = _statuses.get(key)
    if found is None:
        with _lock:
            found = _statuses.get(key)
            if found is None:
                found = _statuses[key] = Status(backend, device)
    return found


def register(flag: int, build: Callable[[np.ndarray], BaseException]) -> None:
    """``build(slots)`` makes the exception reported for ``flag`` (one bit)."""
    _reasons[flag] = build


def error(values: np.ndarray) -> BaseException:
    """The exception for the slots read: the lowest flag's (labels before non-finite)."""
    flags = int(values[FLAGS])
    for flag in sorted(_reasons):
        if flags & flag:
            return _reasons[flag](values)
    return RuntimeError(f"gpukit: a device reported an unknown problem (flags {flags:#x})")


def read(backend: Backend, device: int | None = None) -> list[np.ndarray]:
    """Read (and clear) the status of ``device`` (every device of ``backend`` when None):
    the slots of each that had a flag set."""
    found = []
    for (owner, dev), s in list(_statuses.items()):
        if owner == id(backend) and (device is None or dev == device):
            values = s.read()
            if values is not None:
                found.append(values)
    return found


def raise_pending(backend: Backend, device: int | None = None) -> None:
    """Raise the error a device recorded since its status was last read, if any.

    The host waits for the device's queued work (the read is a copy); nothing is read,
    and nothing waited for, when no checked kernel ran since the last read.
    """
    if not _statuses or not backend.is_device:
        return
    if device is not None:
        # one device's status, looked up: with no checked kernel since its last read,
        # neither every device's status is listed nor its lock taken (a kernel being
        # numbered has set ``armed`` first, under the lock that read() then waits for)
        one = _statuses.get((id(backend), device))
        if one is None or not one.armed:
            return
    found = read(backend, device)
    if found:
        raise error(found[0])
