"""``gk.elementwise`` / ``gk.reduction`` kernels on Dask arrays, block by block.

Dask aligns and broadcasts the blocks of the arguments; each block runs through the
kernel on the backend holding it (one launch per block on the GPU). A reduction reduces
each block without its final expression (keeping the reduced axes, one element long),
Dask's own reduction of the same kind combines those partial results, and the final
expression runs on the combined blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import implements
from .._user_kernels import reduction_axes
from ._chunks import chunk_type, dask_arrays, is_dask, meta

__all__: list[str] = []


def _blocks(kernel: Any, args: tuple[Any, ...]) -> tuple[list[Any], Any, np.dtype]:
    """The arguments with every array a Dask array, broadcast against each other; the
    first Dask argument (for the chunk type); the result dtype."""
    import dask.array as da

    arrays = {n: a for n, a in zip(kernel.params, args, strict=False) if hasattr(a, "shape")}
    chunk_type(kernel.op, arrays)  # one chunk type, or a TypeError
    dtype = kernel.result_dtype(*args)
    converted = dask_arrays(kernel.op, arrays)
    broadcast = dict(zip(converted, da.broadcast_arrays(*converted.values()), strict=True))
    values = [broadcast.get(n, a) for n, a in zip(kernel.params, args, strict=False)]
    return values, next(filter(is_dask, args)), dtype


@implements("gk.reduction", "dask")
def reduction(kernel: Any, *args: Any, axis: Any = None, keepdims: bool = False) -> Any:
    import dask.array as da

    values, first, dtype = _blocks(kernel, args)
    shape = next(v for v in values if is_dask(v)).shape
    found = reduction_axes(kernel.op, axis, len(shape))
    axes = tuple(range(len(shape))) if found is None else found
    if kernel.reducer in ("max", "min") and 0 in [shape[a] for a in axes]:
        raise ValueError(
            f"{kernel.op}: a {kernel.reducer} over zero elements (shape {shape}, axis "
            f"{axis!r}) has no value"
        )
    partial, final = kernel.pieces
    chunks = next(v for v in values if is_dask(v)).chunks
    parts = da.map_blocks(
        lambda *blocks: partial(*blocks, axis=axes, keepdims=True),
        *values,
        dtype=dtype,
        chunks=tuple((1,) * len(c) if i in axes else c for i, c in enumerate(chunks)),
        meta=meta(first, len(shape), dtype),
    )
    combined = getattr(da, kernel.reducer)(parts, axis=axes, keepdims=bool(keepdims))
    return da.map_blocks(final, combined, dtype=dtype, meta=meta(first, combined.ndim, dtype))


@implements("gk.elementwise", "dask")
def elementwise(kernel: Any, *args: Any) -> Any:
    import dask.array as da

    values, first, dtype = _blocks(kernel, args)
    ndim = max(v.ndim for v in values if is_dask(v))
    return da.map_blocks(kernel, *values, dtype=dtype, meta=meta(first, ndim, dtype))
