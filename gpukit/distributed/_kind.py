"""The "dask" array kind: ``dask.array.Array`` arguments go to :mod:`gpukit.distributed`.

Registered when gpukit is imported, without importing Dask: a type is a Dask array only
if ``dask.array`` is already in ``sys.modules`` (a Dask array cannot exist before), the
test array-api-compat's ``is_dask_array`` makes. The implementations live in the
operation modules of :mod:`gpukit.distributed`, imported on the first call that meets a
Dask array.
"""

from __future__ import annotations

import sys
from typing import Any

from .._dispatch import register_kind

__all__ = ["describe", "is_dask_array_type"]


def is_dask_array_type(t: type) -> bool:
    """Whether ``t`` is ``dask.array.Array`` or a subclass (never imports Dask)."""
    da = sys.modules.get("dask.array")
    array = getattr(da, "Array", None)
    return array is not None and issubclass(t, array)


def describe(x: Any) -> str:
    """The Dask array in words: shape, dtype, chunk sizes and the type of its chunks."""
    meta = type(getattr(x, "_meta", None))
    return (
        f"Dask array (shape {x.shape}, {x.dtype}, chunks of {x.chunksize}, "
        f"{meta.__module__}.{meta.__qualname__} chunks)"
    )


# The modules of gpukit.distributed holding the operations' Dask implementations.
_OPERATIONS = [
    f"gpukit.distributed.{m}"
    for m in (
        "_convert",
        "_fft",
        "_kernels",
        "_krylov",
        "_linalg",
        "_matmul",
        "_nn",
        "_user_kernels",
    )
]

register_kind(
    "dask",
    is_dask_array_type,
    modules=_OPERATIONS,
    describe=describe,
    advice=(
        "compute it first when it is small (x.compute()), apply the function chunk by chunk "
        "(x.map_blocks(fn, meta=...)), or rechunk it (x.rechunk(...)); docs/distributed.rst "
        "lists what gpukit runs on Dask arrays"
    ),
)
