"""What gpukit holds on each device, and giving unused pool memory back.

On CuPy, arrays come from CuPy's default memory pool: freeing an array returns its
block to the pool, not to the device, so the pool can hold much more than live arrays
use. :func:`memory_stats` shows both; :func:`empty_cache` returns the unused part.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._select import registry as _registry
from .._select.selection import get_backend
from ..backend import Backend
from .devices import check_device

__all__ = ["MemoryStats", "empty_cache", "format_bytes", "memory_stats", "stats_for"]


def format_bytes(n: int | None, *, exact: bool = False) -> str:
    """``n`` bytes in the largest binary unit it fills (``"1.50 GiB"``), for messages.

    ``exact`` appends the byte count (``"1.50 GiB (1,610,612,736 bytes)"``), as error
    messages do; ``None`` (a figure the backend cannot know) reads ``"unknown"``.
    """
    if n is None:
        return "unknown"
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            text = f"{n / scale:.2f} {unit}"
            return f"{text} ({n:,} bytes)" if exact else text
    return f"{n:,} bytes"


@dataclass(frozen=True)
class MemoryStats:
    """Memory figures of one device, in bytes, as returned by :func:`memory_stats`.

    A figure a backend cannot know is ``None``, never a guess: the numpy backend has
    no pool and NumPy does not count the bytes its arrays hold, so there ``in_use``,
    ``pool_held``, ``pool_unused`` and ``limit`` are ``None`` and ``free``/``total``
    are the host's, as the operating system reports them.

    Attributes
    ----------
    backend : str
        The backend owning the device.
    device : int
        The device's index.
    in_use : int or None
        Bytes in pool blocks held by live arrays (CuPy: ``MemoryPool.used_bytes()``).
    pool_held : int or None
        Bytes the pool holds from the device, in use or cached (``total_bytes()``).
    pool_unused : int or None
        ``pool_held - in_use``: what :func:`empty_cache` would give back.
    limit : int or None
        The pool's cap (``GPUKIT_MEMORY_LIMIT``, :func:`set_memory_limit` or
        ``CUPY_GPU_MEMORY_LIMIT``); ``None`` when uncapped or without a pool.
    free : int or None
        Free memory on the device, counting every process using it.
    total : int or None
        The device's memory size.
    """

    backend: str
    device: int
    in_use: int | None
    pool_held: int | None
    pool_unused: int | None
    limit: int | None
    free: int | None
    total: int | None


def stats_for(backend: Backend, device: int) -> MemoryStats:
    """:class:`MemoryStats` of a (validated) device of ``backend``."""
    raw = backend.memory_stats(device)
    in_use, held = raw.get("in_use"), raw.get("pool_held")
    return MemoryStats(
        backend=backend.name,
        device=device,
        in_use=in_use,
        pool_held=held,
        pool_unused=None if in_use is None or held is None else held - in_use,
        limit=raw.get("limit"),
        free=raw.get("free"),
        total=raw.get("total"),
    )


def memory_stats(device: int | None = None) -> MemoryStats:
    """Memory figures of one device of the active backend.

    Parameters
    ----------
    device : int, optional
        Device index; the current device when omitted.

    Returns
    -------
    MemoryStats
        Bytes in use by live arrays, held by the pool, the pool's limit, and the
        device's free and total memory; ``None`` for what the backend cannot know.

    Raises
    ------
    ValueError
        ``device`` is out of range for the active backend.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.memory_stats()
    >>> s.backend, s.pool_held, s.total > 0
    ('numpy', None, True)
    """
    backend = get_backend()
    index = backend.current_device() if device is None else check_device(backend, device)
    return stats_for(backend, index)


def empty_cache() -> None:
    """Return the memory pools' unused blocks to the devices.

    Frees the cached, unused blocks of CuPy's default memory pool on every device and
    of its pinned host-memory pool, for every backend in use; live arrays are not
    touched. Other processes (and libraries not allocating through the pool) can then
    use that memory. gpukit does this by itself before retrying an operation that ran
    out of memory. A no-op on the numpy backend, which has no pool.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.empty_cache()
    """
    backends = {id(b): b for b in (get_backend(), *_registry.loaded())}
    for backend in backends.values():
        backend.release_unused()
