"""``gk.elementwise`` kernels on Dask arrays: the kernel on each block (``map_blocks``).

Dask aligns and broadcasts the blocks of the arguments; each block runs through the
kernel on the backend holding it (one launch per block on the GPU). Reductions
(``gk.reduction``) have no Dask implementation: their final expression applies to the
combined value, which a per-block pass does not give.
"""

from __future__ import annotations

from typing import Any

from .._dispatch import implements
from ._chunks import chunk_type, dask_arrays, is_dask, meta

__all__: list[str] = []


@implements("gk.elementwise", "dask")
def elementwise(kernel: Any, *args: Any) -> Any:
    import dask.array as da

    arrays = {n: a for n, a in zip(kernel.params, args, strict=False) if hasattr(a, "shape")}
    chunk_type(kernel.op, arrays)  # one chunk type, or a TypeError
    converted = dask_arrays(kernel.op, arrays)
    full = [converted.get(n, a) for n, a in zip(kernel.params, args, strict=False)]
    dtype = kernel.result_dtype(*args)
    ndim = max(a.ndim for a in converted.values())
    return da.map_blocks(
        kernel, *full, dtype=dtype, meta=meta(next(filter(is_dask, args)), ndim, dtype)
    )
