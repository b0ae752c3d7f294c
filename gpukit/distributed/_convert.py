"""Dask arrays to and from sharded arrays (one chunk per shard) and to NumPy.

Built from :class:`gpukit.ShardedArray`'s public attributes only (``shards``, ``axis``,
``devices``, ``backend``). :func:`to_dask` puts the shards themselves in the graph as its
chunks; :func:`from_dask` computes the chunks and keeps each on its device (a chunk
already on the device it is assigned to is not copied).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import implements
from .._dispatch import to_numpy as gk_to_numpy
from .._runtime.devices import check_device
from .._runtime.placement import owner_of
from .._select.selection import get_backend
from ..sharding._array import ShardedArray
from ..sharding._layout import split_sizes
from ._chunks import is_dask, meta, type_name
from ._client import computing

__all__ = ["from_dask", "to_dask"]


def to_dask(x: ShardedArray) -> Any:
    """A Dask array whose chunks are the shards of ``x``, one chunk per shard.

    The chunks are the shard arrays themselves, not copies (virtual CPU devices' shards
    become plain NumPy views): computed in this process, chunk ``i`` stays on device
    ``devices[i]``; a multi-process cluster copies them to its workers as it copies any
    data. Do not write into the shards while the Dask array is in use.

    Parameters
    ----------
    x : ShardedArray
        Made by :func:`gpukit.shard` or :func:`gpukit.map_shards`.

    Returns
    -------
    dask.array.Array
        Of ``x``'s shape and dtype, chunked along ``x.axis`` by ``x.sizes`` (one chunk
        on every other axis), its ``meta`` of the shards' type.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.arange(6.0).reshape(3, 2), axis=0)
    >>> d = gk.distributed.to_dask(s)
    >>> d.chunks, d.sum().compute()
    (((3,), (2,)), np.float64(15.0))
    """
    import dask.array as da

    if not isinstance(x, ShardedArray):
        raise TypeError(f"gk.distributed.to_dask: x must be a ShardedArray, got {type(x).__name__}")
    shards = [s if x.backend.is_device else np.asarray(s).view(np.ndarray) for s in x.shards]
    name = f"gpukit-shards-{uuid.uuid4().hex}"
    graph = {}
    for i, s in enumerate(shards):
        index = [0] * x.ndim
        index[x.axis] = i
        graph[(name, *index)] = s
    chunks = tuple((n,) for n in x.shape)
    chunks = (*chunks[: x.axis], x.sizes, *chunks[x.axis + 1 :])
    return da.Array(graph, name, chunks, meta=meta(shards[0], x.ndim, x.dtype))


@implements("gk.shard", "dask")
def shard(x: Any, axis: int = 0, devices: Sequence[int] | None = None) -> ShardedArray:
    """``gk.shard`` of a Dask array: rechunked to ``numpy.array_split``'s pieces along
    ``axis`` (one per device), then :func:`from_dask`."""
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension to be sharded; got a 0-d array")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis!r} is out of range for x of shape {x.shape}")
    axis %= x.ndim
    owner = owner_of(x._meta)
    backend = owner or get_backend()
    if devices is None:
        devices = range(backend.device_count())
    devices = tuple(devices)
    sizes = tuple(split_sizes(x.shape[axis], len(devices))) if devices else ()
    chunks = {a: (sizes if a == axis else -1) for a in range(x.ndim)}
    return from_dask(x.rechunk(chunks), devices)


def from_dask(x: Any, devices: Sequence[int] | None = None) -> ShardedArray:
    """A ShardedArray with one shard per chunk of ``x`` (computed here).

    ``x`` must be chunked along one axis at most; that axis becomes the split axis.
    Device chunks (CuPy) become the shards on the devices that hold them (no copy);
    host chunks go to the active backend's devices, as :func:`gpukit.shard` places
    host data.

    Parameters
    ----------
    x : dask.array.Array
        At least 1-D, chunked along at most one axis.
    devices : sequence of int, optional
        The device of each shard, one per chunk: by default the devices the chunks
        are on (device chunks) or ``0, 1, ...`` (host chunks). A chunk on another
        device is copied there.

    Returns
    -------
    ShardedArray
        ``x``'s values, split as ``x`` is chunked.

    Raises
    ------
    TypeError
        ``x`` is not a Dask array, or its chunks are of mixed types.
    ValueError
        ``x`` is 0-d or chunked along several axes, two chunks would share a device,
        ``devices`` does not give one device per chunk, or names one out of range.
    WorkerLostError
        A Dask worker died while computing the chunks.

    Examples
    --------
    >>> import dask.array as da
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.distributed.from_dask(da.arange(6.0, chunks=6))
    >>> s.axis, s.sizes
    (0, (6,))
    """
    import dask

    op = "gk.distributed.from_dask"
    if not is_dask(x):
        raise TypeError(f"{op}: x must be a Dask array, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least one dimension to be sharded; got 0-d")
    split = [a for a in range(x.ndim) if len(x.chunks[a]) > 1]
    if len(split) > 1:
        raise ValueError(
            f"{op}: x (shape {x.shape}) is chunked along axes {split} (chunks {x.chunks}); a "
            f"ShardedArray is split along one axis: rechunk the others to one chunk, e.g. "
            f"x.rechunk({{{split[1]}: -1}})"
        )
    axis = split[0] if split else 0
    with computing(op, like=x):
        blocks = list(dask.compute(*x.to_delayed().ravel()))
    types = {type(b) for b in blocks}
    if len(types) > 1:
        raise TypeError(
            f"{op}: x's chunks are of mixed types ({', '.join(sorted(map(type_name, types)))}); "
            "make every chunk one type first"
        )
    owner = owner_of(blocks[0])
    backend = owner or get_backend()
    if devices is None:
        devices = [owner.device_of(b) for b in blocks] if owner else list(range(len(blocks)))
    devices = tuple(devices)
    if len(devices) != len(blocks):
        raise ValueError(
            f"{op}: x has {len(blocks)} chunks along axis {axis} but devices names "
            f"{len(devices)}; give one device per chunk (or rechunk x)"
        )
    if len(set(devices)) != len(devices):
        raise ValueError(
            f"{op}: the chunks would share devices {devices} ({backend.name}); a ShardedArray "
            "holds one shard per device: rechunk x to one chunk per device, or pass devices="
        )
    for d in devices:
        try:
            check_device(backend, d)
        except ValueError as exc:
            raise ValueError(
                f"{op}: x has {len(blocks)} chunks along axis {axis}, one shard per device, "
                f"but {exc}; rechunk x, or pass devices="
            ) from None

    def place(block: Any, device: int) -> Any:
        if owner is not None:
            return backend.to_device(block, device, copy=False)
        return backend.asarray(block, device=device)

    shards = [place(b, d) for b, d in zip(blocks, devices, strict=True)]
    return ShardedArray(backend, shards, axis, devices)


def _chunk_to_host(block: Any) -> np.ndarray:
    owner = owner_of(block)
    if owner is not None:  # the task that wrote it may have run on another thread's stream
        owner.synchronize(owner.device_of(block))
    return gk_to_numpy(block)


@implements("gk.to_numpy", "dask")
def to_numpy(x: Any) -> np.ndarray:
    """``gk.to_numpy`` of a Dask array: each chunk copied to the host like any array of its
    type, then joined there (on the default scheduler). Joining device chunks on a device
    would read chunks of other GPUs from the first one's, which needs peer access."""
    if isinstance(x._meta, np.ndarray):
        with computing("gk.to_numpy", like=x):
            return np.asarray(x.compute())
    host = x.map_blocks(_chunk_to_host, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))
    with computing("gk.to_numpy", like=x):
        return host.compute()
