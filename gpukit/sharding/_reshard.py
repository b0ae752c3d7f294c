"""``gk.reshard``: a sharded array moved to another split axis or device set in one exchange.

Every source device cuts its shard into one block per destination device (the part
of its shard that lands in that destination's shard) and sends it; every destination
concatenates what it received. That is one all-to-all
(:meth:`~gpukit.backend.collectives.Collectives.all_to_all`: in-memory on virtual
devices, peer copies or one NCCL group of send/receive pairs on GPUs), MPI's
``Alltoallv``, and the transpose step of every slab-decomposed distributed FFT
(FFTW-MPI, cuFFTMp). Each block crossing devices is counted as ``device_to_device``
in :func:`gpukit.transfer_stats`.

:func:`exchange` is the general form the distributed FFT uses: besides the axis and
devices it sets the destination lengths, crops or zero-pads the split axis, rolls it
cyclically (``fftshift`` along the split axis), or stores the destination shards with
one axis fastest in memory (the local transpose of FFTW-MPI's transposed layout, so the
next transform runs along contiguous memory), all in the same single exchange.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._dispatch import operation
from .._runtime import transfer as _transfer
from .._runtime.workers import map_devices
from ._array import ShardedArray
from ._layout import check_devices, offsets, split_sizes

__all__ = ["exchange", "reshard"]


@operation("gk.reshard", native=("sharded",))
def reshard(
    x: ShardedArray, axis: int | None = None, devices: Sequence[int] | None = None
) -> ShardedArray:
    """Move ``x`` to another split axis or device set, in one all-to-all exchange.

    Parameters
    ----------
    x : ShardedArray
        The array.
    axis : int, optional
        The new split axis (negative counts from the end); ``x.axis`` when omitted.
    devices : sequence of int, optional
        The new devices, in shard order, of ``x``'s backend; ``x.devices`` when omitted.

    Returns
    -------
    ShardedArray
        The same values split along ``axis`` over ``devices`` with ``numpy.array_split``'s
        lengths; ``x`` itself when that is already its layout. Never shares memory with
        ``x`` otherwise.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.
    ValueError
        ``axis`` is out of range, or ``devices`` is empty, repeats a device or names one
        out of range.

    Notes
    -----
    Each device sends every other device the part of its shard that lands there:
    about ``(N - 1) / N`` of its shard's bytes (between two device sets, all of it),
    counted per block as ``device_to_device`` in :func:`gpukit.transfer_stats`. The
    Several devices page has the cost model.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     rows = gk.shard(np.arange(12.0).reshape(3, 4), axis=0)
    ...     cols = gk.reshard(rows, axis=1)
    >>> cols.axis, cols.shape, gk.to_numpy(cols)[2].tolist()
    (1, (3, 4), [8.0, 9.0, 10.0, 11.0])
    """
    if not isinstance(x, ShardedArray):
        raise TypeError(
            f"gk.reshard: argument 'x' must be a ShardedArray; got {type(x).__name__} (shard "
            "a plain array with gk.shard(x, axis=..., devices=...))"
        )
    if axis is None:
        axis = x.axis
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"gk.reshard: axis {axis!r} is out of range for x of shape {x.shape}")
    axis %= x.ndim
    devs = x.devices if devices is None else check_devices(x.backend, devices)
    return exchange(x, axis, devs, split_sizes(x.shape[axis], len(devs)))


def exchange(
    x: ShardedArray,
    axis: int,
    devices: Sequence[int],
    sizes: Sequence[int],
    *,
    length: int | None = None,
    shift: int = 0,
    fast_axis: int | None = None,
) -> ShardedArray:
    """``x`` split along ``axis`` into ``sizes`` over ``devices``, in one exchange.

    With ``axis == x.axis``, ``length`` crops or zero-pads the split axis to that
    length (keeping its start), and ``shift`` rolls it cyclically (``numpy.roll``'s
    sign; with ``length`` unset). ``sizes`` must add up to the new length. With
    ``fast_axis``, each new shard is a view of memory in which that axis is the
    fastest-varying one (contiguous along it).
    """
    backend, src_devs, dst_devs = x.backend, x.devices, tuple(devices)
    same = axis == x.axis
    n = x.shape[x.axis]
    new_len = (n if length is None else length) if same else x.shape[axis]
    if (length is not None or shift) and not same:
        raise ValueError("exchange: length and shift apply along the split axis only")
    if sum(sizes) != new_len or len(sizes) != len(dst_devs):
        raise ValueError(f"exchange: sizes {tuple(sizes)} do not split length {new_len}")
    if len(set(src_devs)) != len(src_devs):
        raise ValueError(f"exchange: x has two shards on one device ({src_devs})")
    unchanged = src_devs == dst_devs and tuple(sizes) == x.sizes
    if same and new_len == n and not shift and unchanged and fast_axis is None:
        return x
    union = tuple(dict.fromkeys(src_devs + dst_devs))
    where = {d: k for k, d in enumerate(union)}
    src_off, dst_off = offsets(x.sizes), offsets(sizes)
    pieces: dict[tuple[int, int], list[tuple[int, Any]]] = {}  # (src, dst) -> [(start, view)]
    pads: list[list[tuple[int, int]]] = [[] for _ in dst_devs]  # dst -> [(start, length)]
    for j in range(len(dst_devs)):
        lo, hi = dst_off[j], dst_off[j + 1]
        if not same:
            for i, s in enumerate(x.shards):
                if hi > lo and x.sizes[i]:
                    pieces[i, j] = [(src_off[i], _take(s, axis, lo, hi))]
            continue
        for g0, g1, s0 in _segments(lo, hi, n, shift):
            if s0 is None:
                pads[j].append((g0, g1 - g0))
                continue
            for i, s in enumerate(x.shards):
                a, b = max(s0, src_off[i]), min(s0 + g1 - g0, src_off[i + 1])
                if a < b:
                    view = _take(s, axis, a - src_off[i], b - src_off[i])
                    pieces.setdefault((i, j), []).append((g0 + a - s0, view))
    blocks: list[list[Any]] = [[None] * len(union) for _ in union]
    starts: dict[tuple[int, int], int] = {}
    for (i, j), got in pieces.items():
        block = got[0][1] if len(got) == 1 else _joined(x, src_devs[i], got)
        blocks[where[src_devs[i]]][where[dst_devs[j]]] = block
        starts[i, j] = got[0][0]
        if src_devs[i] != dst_devs[j]:
            _transfer.record("device_to_device", block.nbytes)
    received = backend.collectives(union).all_to_all(blocks)
    xp = backend.xp

    def assemble(j: int, d: int) -> Any:
        shape = list(x.shape)
        shape[axis] = sizes[j]
        parts = [(starts[i, j], received[where[d]][where[src_devs[i]]])
                 for i in range(len(src_devs)) if (i, j) in starts]  # fmt: skip
        for start, count in pads[j]:
            pad_shape = list(shape)
            pad_shape[x.axis] = count
            parts.append((start, xp.zeros(pad_shape, x.dtype)))
        if not parts:
            return backend.to_device(xp.empty(shape, x.dtype), d, copy=False)
        parts.sort(key=lambda p: p[0])
        blocks = [p for _, p in parts]
        if fast_axis is None:
            whole = xp.concatenate(blocks, axis=x.axis)  # a fresh copy
        else:  # the same copy, written with fast_axis last in memory
            moved = [xp.moveaxis(b, fast_axis, -1) for b in blocks]
            at = -1 if x.axis == fast_axis else x.axis - (x.axis > fast_axis)
            layout = [*shape[:fast_axis], *shape[fast_axis + 1 :], shape[fast_axis]]
            out = xp.empty(layout, x.dtype)  # C order: fast_axis contiguous
            whole = xp.moveaxis(xp.concatenate(moved, axis=at, out=out), -1, fast_axis)
        return backend.to_device(whole, d, copy=False)

    shards = map_devices(backend, dst_devs, assemble, range(len(dst_devs)), dst_devs)
    return ShardedArray(backend, shards, x.axis if same else axis, dst_devs)


def _take(a: Any, axis: int, lo: int, hi: int) -> Any:
    index = [slice(None)] * a.ndim
    index[axis] = slice(lo, hi)
    return a[tuple(index)]


def _joined(x: ShardedArray, device: int, got: list[tuple[int, Any]]) -> Any:
    """Pieces of one shard bound for one destination, in destination order, as one block
    (only when a roll wraps inside the one shard that holds the data)."""
    got.sort(key=lambda p: p[0])
    with x.backend.use_device(device):
        return x.backend.xp.concatenate([p for _, p in got], axis=x.axis)


def _segments(lo: int, hi: int, n: int, shift: int) -> list[tuple[int, int, int | None]]:
    """Destination range ``[lo, hi)`` as runs ``(g0, g1, source start)`` (None: zeros)."""
    if shift:
        runs, g = [], lo
        while g < hi:
            s = (g - shift) % n
            run = min(hi - g, n - s)
            runs.append((g, g + run, s))
            g += run
        return runs
    runs: list[tuple[int, int, int | None]] = []
    if lo < min(hi, n):
        runs.append((lo, min(hi, n), lo))
    if max(lo, n) < hi:
        runs.append((max(lo, n), hi, None))
    return runs
