"""Layouts of sharded arrays: split sizes, device lists, layout checks, operand placement.

A *layout* is where a sharded array's pieces live: the backend, the split axis, the
devices in shard order and the length of each shard along the split axis
(``numpy.array_split``'s rule for arrays gpukit splits itself). Operations combining
several arrays check here that the layouts agree, with one message naming both.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._runtime import transfer as _transfer
from .._runtime.devices import check_device
from .._runtime.placement import owner_of
from .._runtime.workers import map_devices
from ..backend import Backend
from ..errors import DeviceMismatchError

__all__ = [
    "check_devices",
    "check_same_layout",
    "cut",
    "describe",
    "distribute",
    "offsets",
    "split_sizes",
]


def split_sizes(length: int, n: int) -> list[int]:
    """``numpy.array_split``'s lengths: the first ``length % n`` pieces one longer."""
    base, extra = divmod(length, n)
    return [base + (i < extra) for i in range(n)]


def offsets(sizes: Sequence[int]) -> list[int]:
    """Start of each piece and the total: ``[0, s0, s0 + s1, ...]``."""
    return [0, *itertools.accumulate(sizes)]


def check_devices(backend: Backend, devices: Sequence[int] | None) -> tuple[int, ...]:
    """``devices`` validated (every device of ``backend`` when None)."""
    if devices is None:
        return tuple(range(backend.device_count()))
    if isinstance(devices, int | np.integer):  # devices=2 meant two devices, or device 2?
        raise TypeError(
            f"devices must be a sequence of device indices or None, got the integer "
            f"{devices!r}; pass devices=range({devices}) for the first {devices} devices"
        )
    try:
        devs = tuple(devices)
    except TypeError:
        raise TypeError(
            f"devices must be a sequence of device indices or None, got {devices!r}"
        ) from None
    if not devs:
        raise ValueError("devices must name at least one device; got an empty sequence")
    devs = tuple(check_device(backend, d, "each of devices") for d in devs)
    if len(set(devs)) != len(devs):
        raise ValueError(f"devices must not repeat a device; got {devs}")
    return devs


def describe(x: Any) -> str:
    """A sharded array's layout in words, for error messages."""
    return (
        f"ShardedArray (shape {x.shape}, {x.dtype}, split along axis {x.axis} over "
        f"{x.backend.name}:{x.devices}, shard lengths {x.sizes})"
    )


def check_same_layout(op: str, arrays: Sequence[Any], names: Sequence[str]) -> None:
    """Same backend, devices, split axis (counted from the end) and shard lengths."""
    first, name0 = arrays[0], names[0]
    for x, name in zip(arrays[1:], names[1:], strict=True):
        if x.backend is not first.backend or x.devices != first.devices:
            raise DeviceMismatchError(
                f"{op}: argument {name!r} is a {describe(x)} but argument {name0!r} is a "
                f"{describe(first)}; reshard one like the other with gk.reshard(x, axis=..., "
                "devices=...)"
            )
        if x.axis - x.ndim != first.axis - first.ndim or x.sizes != first.sizes:
            raise ValueError(
                f"{op}: argument {name!r} is a {describe(x)} but argument {name0!r} is a "
                f"{describe(first)}; the layouts must match: reshard one like the other with "
                "gk.reshard(x, axis=..., devices=...)"
            )


def cut(x: Any, axis: int, sizes: Sequence[int]) -> list[Any]:
    """Views of ``x`` of lengths ``sizes`` along ``axis``."""
    index = [slice(None)] * x.ndim
    pieces = []
    for lo, hi in itertools.pairwise(offsets(sizes)):
        index[axis] = slice(lo, hi)
        pieces.append(x[tuple(index)])
    return pieces


def distribute(
    backend: Backend,
    value: Any,
    devices: Sequence[int],
    name: str,
    *,
    axis: int | None = None,
    sizes: Sequence[int] | None = None,
) -> list[Any]:
    """An operand of a sharded operation on each device: whole, or cut along ``axis``.

    A native array of ``backend`` is peer-copied (counted as ``device_to_device``);
    host data reaching a device backend is an implicit transfer per device, guarded
    and counted; on a host backend pieces are placed as views.

    Raises
    ------
    DeviceMismatchError
        ``value`` is an array of another device backend.
    TransferGuardError
        Host data for a device backend while the guard is ``"disallow"``.
    """
    owner = owner_of(value)
    if owner is not None and owner is not backend:
        raise DeviceMismatchError(
            f"argument {name!r} is a {owner.name} array but the sharded arguments live on "
            f"{backend.name}:{tuple(devices)}; move it with gk.asarray(...) inside "
            f"gk.use_backend({backend.name!r})"
        )
    if owner is None:
        value = np.asarray(value)
    pieces = [value] * len(devices) if axis is None else cut(value, axis, sizes)
    if not backend.is_device:
        return [backend.to_device(p, d, copy=False) for p, d in zip(pieces, devices, strict=True)]
    if owner is backend:
        home = backend.device_of(value)
        out = []
        for p, d in zip(pieces, devices, strict=True):
            if d == home:
                out.append(p)
            else:
                out.append(backend.to_device(p, d))
                _transfer.record("device_to_device", p.nbytes)
        return out
    for p, d in zip(pieces, devices, strict=True):
        _transfer.check_implicit(name, p.shape, p.dtype, p.nbytes, f"{backend.name}:{d}")
    made = map_devices(backend, devices, lambda p, d: backend.asarray(p, device=d), pieces, devices)
    for p in pieces:
        _transfer.record("host_to_device", p.nbytes)
    return made
