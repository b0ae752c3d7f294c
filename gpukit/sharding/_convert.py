"""Conversions of a sharded array: ``gk.to_numpy``, ``gk.asarray``, ``gk.shard`` (a reshard),
``gk.namespace``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import asarray, implements
from .._select.selection import get_backend
from ._array import ShardedArray
from ._reshard import reshard

__all__: list[str] = []


@implements("gk.to_numpy", "sharded")
def _to_numpy(x: ShardedArray) -> np.ndarray:
    """Gathered on the host, shard by shard (an explicit transfer)."""
    return x.to_numpy()


@implements("gk.asarray", "sharded")
def _asarray(
    obj: ShardedArray, dtype: Any = None, device: int | None = None, *, pinned: bool = False
) -> Any:
    """Gathered into one native array of the active backend (an explicit transfer)."""
    backend = get_backend()
    if obj.backend is not backend:  # another backend: through the host
        return asarray(obj.to_numpy(), dtype=dtype, device=device, pinned=pinned)
    whole = obj.gather(device)
    if dtype is None:
        return whole
    with backend.use_device(backend.device_of(whole)):
        return whole.astype(dtype, copy=False)


@implements("gk.shard", "sharded")
def _shard(x: ShardedArray, axis: int = 0, devices: Any = None) -> ShardedArray:
    """Sharding a sharded array again is resharding it."""
    return reshard(x, axis=axis, devices=devices)


@implements("gk.namespace", "sharded")
def _namespace(*arrays: Any) -> Any:
    """NumPy's functions are the ones that dispatch on a ShardedArray (NEP 13 and 18)."""
    return np
