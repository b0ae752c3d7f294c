"""gpukit beyond one machine, on Dask (``gk.distributed``).

Public gpukit operations accept ``dask.array.Array`` arguments and return lazy Dask
arrays: each chunk runs through gpukit on the worker that holds it, on that chunk's
backend and device (:mod:`gpukit.distributed._chunks`). This package holds those
implementations (imported on the first call that meets a Dask array, registered with
:func:`gpukit._dispatch.implements`), :func:`client` and the conversions between
:class:`gpukit.ShardedArray` and Dask arrays. Needs ``pip install "gpukit[dask]"``.
"""

from __future__ import annotations

from . import _fft, _matmul  # noqa: F401 (register the Dask implementations)

__all__: list[str] = []


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
