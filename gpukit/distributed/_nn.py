"""``gk.nn.predict`` on a Dask array: one ``predict`` per row chunk, the model shipped once.

The model goes into the graph as one key every task depends on (``dask.delayed``), so a
cluster sends it to each worker once, not with every task. The output's trailing shape
and dtype come from one forward pass over a single row of zeros, here, before any chunk
is computed; that is how ``meta`` is known.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._dispatch import implements
from ..nn import Module
from ..nn import predict as gk_predict
from ._chunks import OnChunks, chunk_type, meta

__all__: list[str] = []


def _predict_chunk(block: Any, model: Module, *, batch_size: int) -> Any:
    return gk_predict(model, block, batch_size=batch_size)


@implements("gk.nn.predict", "dask")
def predict(model: Module, x: Any, batch_size: int = 1024) -> Any:
    import dask

    op = "gk.nn.predict"
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not isinstance(model, Module):
        raise TypeError(f"{op}: model must be a gk.nn.Module, got {type(model).__name__}")
    if x.ndim < 1 or x.shape[0] == 0:
        raise ValueError("predict got no samples")
    expected = chunk_type(op, {"x": x})
    x = x.rechunk({a: -1 for a in range(1, x.ndim)})  # samples are the unit: whole rows
    probe = gk_predict(model, np.zeros((1, *x.shape[1:]), dtype=x.dtype))
    fn = functools.partial(_predict_chunk, batch_size=batch_size)
    task = OnChunks(op, fn, expected, ("x", "model"), (True, False))
    chunks = (x.chunks[0], *((n,) for n in probe.shape[1:]))
    shipped = dask.delayed(model, pure=True, traverse=False)
    return x.map_blocks(
        task,
        shipped,
        chunks=chunks,
        drop_axis=list(range(1, x.ndim)) if probe.ndim < x.ndim else None,
        new_axis=list(range(x.ndim, probe.ndim)) if probe.ndim > x.ndim else None,
        dtype=probe.dtype,
        meta=meta(x, probe.ndim, probe.dtype),
    )
