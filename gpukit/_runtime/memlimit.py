"""``gk.set_memory_limit``: cap the memory pool of the active backend's devices.

The limit's forms and ``GPUKIT_MEMORY_LIMIT`` (applied when a backend is created) are
in :mod:`gpukit._select.configure`.
"""

from __future__ import annotations

import warnings

from .._select.configure import parse_limit, resolve_limit
from .._select.selection import get_backend
from ..errors import GpukitWarning
from .devices import check_device

__all__ = ["set_memory_limit"]


def set_memory_limit(limit: int | str | None, device: int | None = None) -> None:
    """Cap the memory pool of the active backend's devices.

    An allocation that would take the pool above the cap fails; inside a gpukit
    operation it becomes :class:`gpukit.OutOfMemoryError`. Arrays already allocated
    are not touched. This overrides ``GPUKIT_MEMORY_LIMIT`` and ``CUPY_GPU_MEMORY_LIMIT``
    for the devices it names.

    Parameters
    ----------
    limit : int, str or None
        Bytes (``4_000_000_000``), a size with a unit (``"4GiB"``, ``"512MB"``; kB, MB,
        GB, TB are powers of 1000, KiB, MiB, GiB, TiB of 1024), a percentage of the
        device's total memory (``"80%"``), or ``None`` to remove the cap.
    device : int, optional
        Only this device; every device of the active backend when omitted.

    Raises
    ------
    ValueError
        ``limit`` is not one of the forms above, or ``device`` is out of range.

    Warns
    -----
    GpukitWarning
        The active backend has no memory pool to cap (numpy): the limit is checked but
        not enforced; bound host memory with the operating system (``ulimit``, cgroups).

    Examples
    --------
    >>> import warnings
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"), warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     gk.set_memory_limit("80%")
    >>> "not enforced" in str(w[0].message)
    True
    """
    parsed = parse_limit(limit, "set_memory_limit limit")
    backend = get_backend()
    indices = range(backend.device_count()) if device is None else [check_device(backend, device)]
    applied = [
        backend.set_memory_limit(i, resolve_limit(parsed, backend, i, "set_memory_limit limit"))
        for i in indices
    ]
    if not all(applied):
        warnings.warn(
            f"gpukit: backend {backend.name!r} has no memory pool to cap; the limit "
            f"{limit!r} is not enforced (bound host memory with ulimit or cgroups)",
            GpukitWarning,
            stacklevel=2,
        )
