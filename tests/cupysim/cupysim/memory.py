"""Simulated device and pinned memory: host buffers with device addresses.

A *storage* is one driver allocation (``cudaMalloc`` / ``cudaHostAlloc``): host memory
whose address is the device pointer kernels and ``.data.ptr`` see. Every live storage
is registered by address, so a raw pointer (an NCCL buffer, a kernel argument) finds
its allocation, device and access records.

Device memory is counted per device against ``CUPYSIM_MEMORY``; ``cudaMalloc`` beyond it
fails with ``cudaErrorMemoryAllocation`` as the runtime does. Under
``CUPYSIM_SANITIZE=address`` each allocation is its own exact-size libc ``malloc`` so
AddressSanitizer's redzones surround it; otherwise a 512-byte aligned NumPy buffer
(cudaMalloc returns at least 256-byte aligned memory; CuPy rounds to 512,
cupy/cuda/memory.pyx ``ALLOCATION_UNIT_SIZE``).
"""

from __future__ import annotations

import bisect
import ctypes
import threading
import weakref

import numpy as np

from . import devices
from .config import config
from .errors import CUDARuntimeError
from .streams import Region

MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation
ALIGN = 512

_lock = threading.Lock()
_starts: list[int] = []
_by_start: dict[int, weakref.ref] = {}
_used: dict[int, int] = {}

_libc = None


def _c():
    global _libc
    if _libc is None:
        # The process's global symbol scope, not libc's own handle: a preloaded
        # AddressSanitizer's malloc comes first there (dlsym on libc's handle would
        # bypass it, and the allocation would have no redzones).
        _libc = ctypes.CDLL(None)
        _libc.malloc.restype = ctypes.c_void_p
        _libc.malloc.argtypes = [ctypes.c_size_t]
        _libc.free.argtypes = [ctypes.c_void_p]
    return _libc


class Storage:
    """Host bytes standing in for one device (or pinned host) allocation."""

    __slots__ = (
        "__weakref__",
        "_raw",
        "device",
        "host",
        "kind",
        "ptr",
        "records",
        "reserved",
        "size",
    )

    def __init__(self, nbytes: int, device: int, kind: str) -> None:
        self.size = nbytes
        self.reserved = nbytes  # device bytes counted against CUPYSIM_MEMORY
        self.device = device  # -1 for pinned host memory
        self.kind = kind  # "device" | "pinned"
        self.records: list = []
        if config.sanitize == "address":
            raw = _c().malloc(max(nbytes, 1))
            if not raw:
                raise MemoryError(f"malloc({nbytes}) failed")
            self._raw = raw
            self.ptr = raw
            buf = (ctypes.c_uint8 * nbytes).from_address(raw)
            self.host = np.frombuffer(buf, np.uint8) if nbytes else np.empty(0, np.uint8)
        else:
            raw = np.empty(nbytes + ALIGN, np.uint8)
            start = (-raw.ctypes.data) % ALIGN
            self._raw = None
            self.host = raw[start : start + nbytes]
            self.ptr = raw.ctypes.data + start

    def __del__(self) -> None:
        # Freed when nothing references the allocation any more. (Not from a finalizer of
        # Memory: the garbage collector may run that while a pooled chunk of the same block
        # is being resurrected into an arena; a Storage is never part of a cycle.)
        if _unregister is None:  # interpreter shutdown
            return
        _unregister(self)
        if self.kind == "device" and self.reserved:
            with _lock:
                _used[self.device] = _used.get(self.device, 0) - self.reserved
        if self._raw is not None:
            _c().free(self._raw)
            self._raw = None

    def region(self, ptr: int, nbytes: int, describe) -> Region:
        return Region(self.records, ptr, ptr + nbytes, describe)


def allocate(nbytes: int, device: int) -> Storage:
    """Host memory for a ``nbytes`` allocation on ``device`` (the runtime interface)."""
    s = Storage(nbytes, device, "device")
    s.reserved = 0  # not counted against the device's memory
    return s


def _register(s: Storage) -> None:
    if s.size == 0:
        return
    with _lock:
        bisect.insort(_starts, s.ptr)
        _by_start[s.ptr] = weakref.ref(s)


def _unregister(s: Storage) -> None:
    if s.size == 0:
        return
    with _lock:
        ref = _by_start.get(s.ptr)
        if ref is None or ref() not in (s, None):
            return  # the address was reused by a newer allocation already
        i = bisect.bisect_left(_starts, s.ptr)
        if i < len(_starts) and _starts[i] == s.ptr:
            del _starts[i]
        del _by_start[s.ptr]


def find(ptr: int) -> tuple[Storage, int] | None:
    """The live allocation holding address ``ptr`` and the offset into it, or None."""
    with _lock:
        i = bisect.bisect_right(_starts, ptr) - 1
        if i < 0:
            return None
        s = _by_start[_starts[i]]()
    if s is not None and ptr < s.ptr + s.size:
        return s, ptr - s.ptr
    return None


def used(device: int) -> int:
    return _used.get(device, 0)


def device_malloc(nbytes: int, device: int, storage: bool = True) -> Storage:
    """``cudaMalloc`` on ``device``: fails with cudaErrorMemoryAllocation past CUPYSIM_MEMORY.

    ``storage=False`` reserves the bytes only (the pool's blocks under the address
    sanitizer, whose arrays each get their own exact-size storage).
    """
    devices.check(device)
    from . import capture

    if capture.captures:  # a potentially unsafe call under the global/thread-local modes
        capture.on_malloc()
    with _lock:
        if _used.get(device, 0) + nbytes > config.memory:
            raise CUDARuntimeError(MEMORY_ALLOCATION)
        _used[device] = _used.get(device, 0) + nbytes
    try:
        s = Storage(nbytes if storage else 0, device, "device")
    except BaseException:
        with _lock:
            _used[device] -= nbytes
        raise
    s.reserved = nbytes
    _register(s)
    return s


def exact(nbytes: int, device: int) -> Storage:
    """An array's own exact-size storage (address sanitizer mode), not counted twice."""
    s = Storage(nbytes, device, "device")
    s.reserved = 0  # the pool's block already counts these bytes
    _register(s)
    return s


def foreign(ptr: int, nbytes: int, device) -> Storage:
    """Memory the simulator did not allocate, at ``ptr`` (not registered, not freed)."""
    s = Storage.__new__(Storage)
    s.size, s.reserved, s.device, s.kind, s.records, s._raw = nbytes, 0, device, "foreign", [], None
    s.ptr = ptr
    buf = (ctypes.c_uint8 * nbytes).from_address(ptr) if nbytes else None
    s.host = np.frombuffer(buf, np.uint8) if nbytes else np.empty(0, np.uint8)
    return s


def host_alloc(nbytes: int) -> Storage:
    """``cudaHostAlloc``: page-locked host memory (registered so is_memory_pinned sees it)."""
    devices.check_driver()
    s = Storage(nbytes, -1, "pinned")
    _register(s)
    return s


def is_pinned(ptr: int) -> bool:
    found = find(ptr)
    return found is not None and found[0].kind == "pinned"
