"""Devices of the active backend: list them, select one, wait for them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from .._select.selection import get_backend
from ..backend import Backend, Device
from . import device_status

__all__ = ["check_device", "device", "device_count", "devices", "synchronize"]


def check_device(backend: Backend, index: object, what: str = "device") -> int:
    """Validate a device index for ``backend``; return it as an int.

    A non-integer (``"cpu"``, ``1.0``, ``True``) is a TypeError, an integer out of range a
    ValueError; NumPy integers are indices like ints (``cupy.cuda.Device`` takes them).
    """
    count = backend.device_count()
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(
            f"{what} must be a device index of the {backend.name} backend (an int in "
            f"0..{count - 1}), got {type(index).__name__} {index!r}"
        )
    index = int(index)
    if not 0 <= index < count:
        raise ValueError(
            f"device {index!r} is out of range: backend {backend.name!r} has {count} "
            f"device(s), indices 0..{count - 1}"
        )
    return index


def device_count() -> int:
    """Number of devices of the active backend.

    Returns
    -------
    int
        1 on the numpy backend; the number of GPUs CUDA makes visible on cupy.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.device_count() >= 1
    True
    """
    return get_backend().device_count()


def devices() -> list[Device]:
    """Describe the active backend's devices.

    Returns
    -------
    list of gpukit.backend.Device
        One entry per device: backend, index, name, total memory, compute capability.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     print(gk.devices()[0])
    numpy:0
    """
    return get_backend().devices()


@contextlib.contextmanager
def device(index: int) -> Iterator[Device]:
    """Make device ``index`` of the active backend current inside a ``with`` block.

    On cupy this is a ``cupy.cuda.Device(index)`` context: new arrays and kernels go
    to that GPU. Operations on existing arrays still run where those arrays live.

    Parameters
    ----------
    index : int
        Device ordinal, ``0 <= index < gk.device_count()``.

    Yields
    ------
    gpukit.backend.Device
        The device made current.

    Raises
    ------
    TypeError
        ``index`` is not an integer (NumPy integers are accepted).
    ValueError
        ``index`` is out of range; the message gives the valid range.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"), gk.device(0) as d:
    ...     print(d.index)
    0
    """
    backend = get_backend()
    index = check_device(backend, index)
    with backend.use_device(index):
        yield backend.devices()[index]


def synchronize(device: int | None = None) -> None:
    """Wait until work queued on the active backend's devices has finished.

    A no-op on the numpy backend. Time GPU work only after this returns.

    Parameters
    ----------
    device : int, optional
        Only this device; every device when omitted.

    Raises
    ------
    TypeError
        ``device`` is not an integer.
    ValueError
        ``device`` is out of range for the active backend; or, as every error a device
        recorded since the host last looked (a label out of range in
        ``gk.nn.CrossEntropyLoss``), the error that check raises (see
        :doc:`/nn`, "Errors found on the device").

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.synchronize()
    """
    backend = get_backend()
    if device is not None:
        device = check_device(backend, device)
    backend.synchronize(device)
    device_status.raise_pending(backend, device)
