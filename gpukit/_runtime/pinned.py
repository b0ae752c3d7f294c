"""Page-locked (pinned) host memory, for fast and asynchronous host-to-device copies.

The device's DMA engine reads pinned memory directly; pageable memory is first copied
by the driver into a pinned bounce buffer, synchronously. Filling batches straight
into :func:`empty_pinned` arrays and moving them with ``gk.asarray(x, pinned=True)``
saves that copy and lets the host run ahead of the transfer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._select.selection import get_backend
from .memory import operation

__all__ = ["empty_pinned"]


@operation("gk.empty_pinned")  # a failed pinned allocation frees the pinned pool and retries
def empty_pinned(shape: int | tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """An uninitialised NumPy array in pinned host memory of the active backend.

    On cupy the memory comes from CuPy's pinned memory pool (returned to it when the
    array is freed, and to the system by :func:`gpukit.empty_cache`); on the numpy
    backend, which has no device to copy to, it is an ordinary ``numpy.empty`` array.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the array.
    dtype : dtype, default float64
        Element type.

    Returns
    -------
    numpy.ndarray
        A host array; pass it to ``gk.asarray(x, pinned=True)`` to copy it without staging.

    Raises
    ------
    OutOfMemoryError
        No page-locked memory could be had, even after the pinned pool released its
        unused blocks.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     batch = gk.empty_pinned((2, 3), "float32")
    >>> batch.shape, batch.dtype
    ((2, 3), dtype('float32'))
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return get_backend().empty_pinned(shape, np.dtype(dtype))
