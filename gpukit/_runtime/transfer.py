"""Host/device transfers: counted per direction and governed by the transfer guard.

An *implicit* transfer is a host array given to an operation that runs on a device
backend, or a sharded array of a device backend converted by NumPy
(``numpy.asarray(x)``); the guard (``GPUKIT_TRANSFER_GUARD`` or :func:`transfer_guard`)
decides whether it is allowed silently (``allow``, the default), logged (``log``) or
refused (``disallow``). *Explicit* transfers (:func:`gpukit.asarray`,
:func:`gpukit.to_numpy`) are what a user asked for: always allowed, always counted.
Copies between devices (``gk.reshard``, the distributed FFT) are counted as
``device_to_device``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from .._select.configure import GUARD_MODES
from .._select.configure import guard_mode as _mode_from_settings
from ..errors import TransferGuardError

__all__ = ["TransferStats", "reset_transfer_stats", "transfer_guard", "transfer_stats"]

logger = logging.getLogger("gpukit")

_guard: ContextVar[str | None] = ContextVar("gpukit_transfer_guard", default=None)
_lock = threading.Lock()
_counts = {"host_to_device": [0, 0], "device_to_host": [0, 0], "device_to_device": [0, 0]}


@dataclass(frozen=True)
class DirectionStats:
    """Transfers in one direction: how many calls moved how many bytes."""

    calls: int
    bytes: int


@dataclass(frozen=True)
class TransferStats:
    """Process-wide transfer counters, as returned by :func:`transfer_stats`.

    Attributes
    ----------
    host_to_device, device_to_host : DirectionStats
        ``calls`` and ``bytes`` moved in each direction since the last reset.
    device_to_device : DirectionStats
        Copies between two devices of one backend (one call per block an exchange
        such as :func:`gpukit.reshard` moves; virtual CPU devices count theirs too).
    """

    host_to_device: DirectionStats
    device_to_host: DirectionStats
    device_to_device: DirectionStats


def current_mode() -> str:
    """The guard mode in force in this context."""
    mode = _guard.get()
    return _mode_from_settings() if mode is None else mode


@contextlib.contextmanager
def transfer_guard(mode: str) -> Iterator[None]:
    """Govern implicit transfers inside a ``with`` block.

    Implicit transfers are host inputs of an operation running on a device backend,
    and NumPy's conversion of a sharded array of a device backend
    (``numpy.asarray(x)``, or a NumPy function without a sharded implementation).

    Parameters
    ----------
    mode : {"allow", "log", "disallow"}
        ``allow`` moves data silently; ``log`` moves it and logs each transfer on the
        ``gpukit`` logger (WARNING); ``disallow`` raises :class:`gpukit.TransferGuardError`.
        Explicit transfers (``gk.asarray``, ``gk.to_numpy``) are always allowed.

    Yields
    ------
    None
        The previous mode comes back when the block exits, also on error.

    Raises
    ------
    ValueError
        ``mode`` is not one of the three.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.transfer_guard("disallow"):
    ...     x = gk.asarray([1.0, 2.0])  # explicit transfers are always allowed
    """
    if mode not in GUARD_MODES:
        raise ValueError(
            f"transfer_guard mode must be one of {', '.join(GUARD_MODES)}; got {mode!r}"
        )
    token = _guard.set(mode)
    try:
        yield
    finally:
        _guard.reset(token)


def record(direction: str, nbytes: int) -> None:
    """Count one transfer of ``nbytes`` in ``direction``."""
    with _lock:
        counts = _counts[direction]
        counts[0] += 1
        counts[1] += int(nbytes)


def guarded() -> bool:
    """Whether the guard in force logs or refuses implicit transfers (any mode but
    ``allow``): only then does a transfer need describing (:func:`check_implicit`)."""
    return current_mode() != "allow"


def check_implicit(argument: str, shape: tuple, dtype: object, nbytes: int, target: str) -> None:
    """Apply the guard to an implicit host-to-device transfer of one argument."""
    mode = current_mode()
    if mode != "allow":  # the description only where it is logged or raised
        _guard_transfer(
            mode,
            f"implicit host-to-device transfer of argument {argument!r} "
            f"(shape {shape}, dtype {dtype}, {nbytes} bytes) to {target}",
            "Move it explicitly with gk.asarray(x) first",
        )


def check_implicit_to_host(
    what: str, shape: tuple, dtype: object, nbytes: int, source: str
) -> None:
    """Apply the guard to an implicit device-to-host transfer (NumPy converting ``what``)."""
    mode = current_mode()
    if mode != "allow":
        _guard_transfer(
            mode,
            f"implicit device-to-host transfer of {what} (shape {shape}, dtype {dtype}, "
            f"{nbytes} bytes) from {source}",
            "Copy it explicitly with gk.to_numpy(x)",
        )


def _guard_transfer(mode: str, what: str, explicit: str) -> None:
    if mode == "disallow":
        raise TransferGuardError(
            f"{what} refused: the transfer guard is 'disallow'. {explicit}, or allow it "
            "with gk.transfer_guard('allow')"
        )
    logger.warning(what)


def transfer_stats() -> TransferStats:
    """Counters of host/device transfers made by gpukit since the last reset.

    Returns
    -------
    TransferStats
        ``host_to_device``, ``device_to_host`` and ``device_to_device``, each with
        ``calls`` and ``bytes``.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.reset_transfer_stats()
    >>> gk.transfer_stats().host_to_device.calls
    0
    """
    with _lock:
        return TransferStats(*(DirectionStats(*_counts[d]) for d in _counts))


def reset_transfer_stats() -> None:
    """Set every transfer counter back to zero.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.reset_transfer_stats()
    """
    with _lock:
        for counts in _counts.values():
            counts[0] = counts[1] = 0
