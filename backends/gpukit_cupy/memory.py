"""CuPy's memory pools behind gpukit's memory API, and its allocation failures.

Arrays come from CuPy's default ``MemoryPool`` (one arena per device); staging
buffers for pinned transfers from its default ``PinnedMemoryPool``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

try:
    import cupy
    import cupyx
except ImportError:  # the backend's probe() reports it; oom_bytes stays importable
    cupy = cupyx = None

T = TypeVar("T")

# Allocation failures that are not cupy.cuda.memory.OutOfMemoryError: the runtime or
# driver out of memory, and the libraries' workspace allocations.
_OOM_MARKERS = ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", "ALLOC_FAILED")
_ALLOCATING = re.compile(r"allocating ([\d,]+) bytes")


def oom_bytes(exc: BaseException) -> int | None:
    """Bytes asked for if ``exc`` is a CuPy/CUDA allocation failure (-1: unknown), else None.

    ``cupy.cuda.memory.OutOfMemoryError`` keeps the size it was built with (its
    pickling arguments: size, total, limit) and prints it ("Out of memory allocating
    1,024 bytes ..."); CUDA and library errors only name their status.
    """
    if cupy is not None and isinstance(exc, cupy.cuda.memory.OutOfMemoryError):
        try:
            return int(exc.__reduce__()[1][0])
        except (TypeError, IndexError, ValueError):
            match = _ALLOCATING.search(str(exc))
            return int(match[1].replace(",", "")) if match else -1
    module = type(exc).__module__ or ""
    if module.startswith(("cupy", "cupyx", "cupy_backends")) and any(
        marker in str(exc) for marker in _OOM_MARKERS
    ):
        return -1
    return None


def _pinned(host: np.ndarray) -> bool:
    """Whether ``host`` can be copied as it is: pinned, C-ordered, native byte order."""
    return (
        host.flags.c_contiguous
        and host.dtype.isnative
        and host.size > 0
        and cupy.cuda.pinned_memory.is_memory_pinned(host.ctypes.data)
    )


def unpooled(make: Callable[[], T]) -> T:
    """``make()``, its arrays allocated on the current device each by its own
    ``cudaMalloc``, outside CuPy's pool (``cupy.cuda.using_allocator(None)``): for
    gpukit's buffers that live as long as the process. The pool serves a small request
    by splitting a cached free block, and ``free_all_blocks`` releases a block only when
    all of it is free (cupy/cuda/memory.pyx, ``_split``/``free_all_blocks``).

    When the device is full, the pool's unused blocks are released and ``make`` tried
    once more, as the pool itself does before it reports being out of memory.
    """
    try:
        with cupy.cuda.using_allocator(None):
            return make()
    except Exception as exc:
        if oom_bytes(exc) is None:
            raise
    cupy.get_default_memory_pool().free_all_blocks()
    with cupy.cuda.using_allocator(None):
        return make()


class CupyMemoryMixin:
    """The memory part of the backend contract on CuPy (needs ``self.device_count()``)."""

    _inflight_lock = threading.Lock()

    def out_of_memory(self, exc: BaseException) -> int | None:
        return oom_bytes(exc)

    def release_unused(self) -> None:
        pool = cupy.get_default_memory_pool()
        for i in range(self.device_count()):
            with cupy.cuda.Device(i):  # the cache and the pool of the current device
                # cuFFT plans hold work areas from the pool; CuPy caches them per thread
                # and device (cupy/fft/_cache.pyx), 16 plans with no memory bound
                cupy.fft.config.get_plan_cache().clear()
                pool.free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

    def persistent(self, host: np.ndarray, device: int) -> Any:
        with cupy.cuda.Device(device):
            return unpooled(lambda: cupy.asarray(host))

    def memory_stats(self, device: int) -> dict[str, int | None]:
        pool = cupy.get_default_memory_pool()
        with cupy.cuda.Device(device):
            free, total = cupy.cuda.runtime.memGetInfo()
            return {
                "free": int(free),
                "total": int(total),
                "in_use": int(pool.used_bytes()),
                "pool_held": int(pool.total_bytes()),
                "limit": int(pool.get_limit()) or None,  # CuPy: 0 means no limit
            }

    def set_memory_limit(self, device: int, nbytes: int | None) -> bool:
        with cupy.cuda.Device(device):
            cupy.get_default_memory_pool().set_limit(size=nbytes or 0)
        return True

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return cupyx.empty_pinned(shape, dtype=dtype)

    def asarray_pinned(self, host: np.ndarray, device: int | None = None) -> Any:
        if host.size == 0:
            return self.asarray(host, device=device)
        # CuPy arrays are little-endian (cupy.asarray byte-swaps host data, _dtype.pxd
        # normalize_dtype): the staging copy does the same, and packs a strided host array
        dtype = host.dtype.newbyteorder("<")
        with cupy.cuda.Device(self.current_device() if device is None else device):
            if _pinned(host):
                staged = host
            else:
                staged = cupyx.empty_pinned(host.shape, dtype=dtype)
                np.copyto(staged, host)
            out = cupy.empty(host.shape, dtype=dtype)
            stream = cupy.cuda.get_current_stream()
            out.set(staged, stream=stream)  # async: the source is page-locked
            self._hold_until(stream.record(), staged)
        return out

    def _hold_until(self, event: Any, staged: np.ndarray) -> None:
        """Keep ``staged`` alive (out of the pinned pool) until ``event`` has completed."""
        with self._inflight_lock:
            inflight = [(e, a) for e, a in getattr(self, "_inflight", []) if not e.done]
            inflight.append((event, staged))
            self._inflight = inflight
