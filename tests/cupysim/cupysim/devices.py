"""Simulated devices: how many, the per-thread current device, peer access.

The current device is per host thread, as ``cudaSetDevice`` is (CUDA programming guide,
"Device Selection"); every thread starts on device 0.
"""

from __future__ import annotations

import threading

from .config import config
from .errors import CUDARuntimeError

INSUFFICIENT_DRIVER = 35  # cudaErrorInsufficientDriver
NO_DEVICE = 100  # cudaErrorNoDevice
INVALID_DEVICE = 101  # cudaErrorInvalidDevice
INVALID_VALUE = 1  # cudaErrorInvalidValue


class _Thread(threading.local):
    """The calling thread's state: its current device, 0 until it sets one."""

    device = 0


_tls = _Thread()
#: Whether every runtime call fails (no driver, or none of the devices): the settings
#: are read once, at import, so this is too
_UNUSABLE = config.fail == "driver" or config.devices == 0


def check_driver() -> None:
    """Without a usable driver every runtime call fails as the installed CuPy's does here.

    (Measured on this machine's real CuPy 14.2, no NVIDIA driver: getDevice, setDevice,
    memGetInfo, Stream(), Event(), alloc_pinned_memory ... raise
    ``cudaErrorInsufficientDriver``; driverGetVersion returns 0.)
    """
    if config.fail == "driver":
        raise CUDARuntimeError(INSUFFICIENT_DRIVER)


def count() -> int:
    """``cudaGetDeviceCount``: a driver that sees no device fails with cudaErrorNoDevice."""
    check_driver()
    if config.devices == 0:
        raise CUDARuntimeError(NO_DEVICE)
    return config.devices


def check(device: int) -> int:
    """``device`` as a valid ordinal, else cudaErrorInvalidDevice."""
    n = count()
    if not isinstance(device, int) or not 0 <= device < n:
        raise CUDARuntimeError(INVALID_DEVICE)
    return device


def current() -> int:
    """``cudaGetDevice`` for the calling thread; it fails as :func:`count` does (asked
    only then: CuPy asks for the current device on every launch)."""
    if _UNUSABLE:
        count()
    return _tls.device


def set_current(device: int) -> None:
    """``cudaSetDevice`` for the calling thread."""
    _tls.device = check(device)


def can_access_peer(device: int, peer: int) -> int:
    """``cudaDeviceCanAccessPeer``: 1 between distinct devices when CUPYSIM_PEER_ACCESS=1."""
    check(device)
    check(peer)
    return int(config.peer_access and device != peer)


_peers_lock = threading.Lock()
_enabled: set[tuple[int, int]] = set()


def enable_peer_access(device: int, peer: int) -> bool:
    """cupy/cuda/device.pyx ``_enable_peer_access``: enable ``device`` -> ``peer`` if possible."""
    if device == peer:
        return True
    if not can_access_peer(device, peer):
        return False
    with _peers_lock:
        _enabled.add((device, peer))
    return True


def deviceEnablePeerAccess(device: int, peer: int) -> None:
    """``cudaDeviceEnablePeerAccess(peer)`` from ``device``: 217 / 704 as the runtime fails."""
    if not can_access_peer(device, peer):
        raise CUDARuntimeError(217)  # cudaErrorPeerAccessUnsupported
    with _peers_lock:
        if (device, peer) in _enabled:
            raise CUDARuntimeError(704)  # cudaErrorPeerAccessAlreadyEnabled
        _enabled.add((device, peer))


def deviceDisablePeerAccess(device: int, peer: int) -> None:
    with _peers_lock:
        if (device, peer) not in _enabled:
            raise CUDARuntimeError(705)  # cudaErrorPeerAccessNotEnabled
        _enabled.discard((device, peer))


def peer_enabled(device: int, peer: int) -> bool:
    return device == peer or (device, peer) in _enabled
