"""The interface kernel execution (sim-kernels) builds on: devices, operands, launches.

Stable: see SIM_CONTRACT.md. Everything here works on simulated ``cupy.ndarray``s.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import devices, memory, profile, streams
from .config import config
from .errors import DRIVER_STATUS, CUDADriverError

__all__ = [
    "Operand",
    "allocate",
    "check_peer_access",
    "config",
    "current_device",
    "current_stream",
    "device_profile",
    "launch",
    "operand",
    "raise_cuda_driver_error",
]


def current_device() -> int:
    """The calling thread's current device (``cudaGetDevice``)."""
    return devices.current()


def device_profile(device: int) -> dict[str, int]:
    """Device attributes (``Device(device).attributes``): the H100 profile."""
    devices.check(device)
    return profile.attributes(device)


def current_stream() -> streams.SimStream:
    """The stream a launch on the current device is enqueued on (for messages and tests)."""
    return streams.current(devices.current())


@dataclass(frozen=True)
class Operand:
    """What a kernel needs of an array: where its element [0, ...] is and how it is laid out."""

    ptr: int
    nbytes: int
    device: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    buffer: Any  # the allocation (identity for hazards and sanitizers)


def operand(x: Any) -> Operand:
    """The :class:`Operand` of a simulated ``cupy.ndarray``."""
    from cupy._core.core import _ndarray_base

    if not isinstance(x, _ndarray_base):
        raise TypeError(f"operand() takes a cupy.ndarray, not {type(x).__name__}")
    v = x._np
    return Operand(
        ptr=x.data.ptr,
        nbytes=v.nbytes,
        device=x._dev,
        shape=v.shape,
        strides=v.strides,
        dtype=v.dtype,
        buffer=x._storage(),
    )


def check_peer_access(x: Any, device: int) -> None:
    """CuPy's placement rule for elementwise and reduction kernels.

    Copied from cupy/_core/_kernel.pyx ``_check_peer_access``: an operand on another
    device is refused with ValueError unless peer access between the two devices is
    possible, in which case CuPy enables it and warns with ``PerformanceWarning``.
    """
    from cupy._util import PerformanceWarning

    dev = x._dev
    if dev == device:
        return
    msg = (
        f"The device where the array resides ({dev}) is different from the current "
        f"device ({device})."
    )
    if not devices.enable_peer_access(device, dev):
        raise ValueError(f"{msg} Peer access is unavailable between these devices.")
    warnings.warn(
        f"{msg} Peer access has been activated automatically.", PerformanceWarning, stacklevel=3
    )


def _raw_access(x: Any, device: int, name: str) -> None:
    # cupy/cuda/function.pyx passes an ndarray's pointer as is, with no device check: on a
    # GPU another device's memory is reachable only where peer access was enabled, and an
    # access without it is an illegal address (reported by the driver).
    if x._dev != device and not devices.peer_enabled(device, x._dev):
        raise_cuda_driver_error(
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            f"kernel {name!r} on device {device} read or wrote an array on device {x._dev} "
            f"without peer access enabled between them",
        )


@contextlib.contextmanager
def launch(
    name: str, reads: Sequence[Any], writes: Sequence[Any], *, kind: str = "elementwise"
) -> Iterator[streams.SimStream]:
    """Enter around every kernel launch on the current device and stream.

    ``kind`` is ``"elementwise"`` or ``"reduction"`` (CuPy's peer-access rule applies, as
    ``_kernel.pyx`` / ``_reduction.pyx`` check it) or ``"raw"`` (RawKernel: no check by
    CuPy; an operand on a device without enabled peer access is an illegal address).
    On entry the happens-before checker runs (raises ``cupysim.StreamHazard``); the body
    runs the kernel synchronously; on a normal exit the accesses are recorded.
    Yields the stream the launch is enqueued on.
    """
    if kind not in ("elementwise", "reduction", "raw"):
        raise ValueError(f"kind must be 'elementwise', 'reduction' or 'raw', not {kind!r}")
    dev = devices.current()
    for x in (*reads, *writes):
        if kind == "raw":
            _raw_access(x, dev, name)
        else:
            check_peer_access(x, dev)
    stream = streams.current(dev)
    r = [x._region() for x in reads]
    w = [x._region() for x in writes]
    tick = streams.check(stream, r, w, name)
    yield stream
    streams.commit(stream, r, w, name, tick)


def raise_cuda_driver_error(status_name: str, message: str = "") -> None:
    """Raise what a failed ``cuLaunchKernel`` raises in CuPy: ``CUDADriverError``.

    ``status_name`` is a CUresult name (``CUDA_ERROR_INVALID_VALUE``); the exception's
    message is CuPy's (``"CUDA_ERROR_INVALID_VALUE: invalid argument"``). ``message``, the
    simulator's explanation, is attached as the exception's ``__notes__``.
    """
    if status_name not in DRIVER_STATUS:
        raise ValueError(f"unknown CUresult name {status_name!r}")
    exc = CUDADriverError(DRIVER_STATUS[status_name])
    if message:
        exc.add_note(f"cupysim: {message}")
    raise exc


def allocate(nbytes: int, device: int) -> memory.Storage:
    """Host memory for an allocation of ``nbytes`` on ``device`` (``.ptr``, ``.host``)."""
    return memory.allocate(nbytes, device)
