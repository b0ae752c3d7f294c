"""``gk.elementwise`` / ``gk.reduction`` kernels on sharded arrays.

Every array argument must be sharded the same way (scalars are passed to every shard).
An elementwise kernel, and a reduction keeping the split axis, run on each device's
shards and need nothing from another device. A reduction over the split axis reduces
each shard without its final expression, combines the partial results on the first
device in device order (bit-for-bit the same on every run, as ``gk.sharding.sum``) and
applies the final expression there, returning a native array on that device.
"""

from __future__ import annotations

from typing import Any

from .._dispatch import implements
from .._runtime.workers import map_devices
from .._user_kernels import reduction_axes
from ._array import ShardedArray, map_shards
from ._layout import check_same_layout

__all__: list[str] = []


def _sharded_positions(kernel: Any, args: tuple[Any, ...]) -> list[int]:
    """Where the sharded arguments are; TypeError for a plain array beside them."""
    for name, a in zip(kernel.params, args, strict=False):
        if not isinstance(a, ShardedArray) and hasattr(a, "shape"):
            raise TypeError(
                f"{kernel.op}: argument {name!r} is a {type(a).__module__}."
                f"{type(a).__qualname__} but another argument is sharded; shard every array "
                "argument the same way (gk.shard) or pass a scalar"
            )
    return [i for i, a in enumerate(args) if isinstance(a, ShardedArray)]


@implements("gk.elementwise", "sharded")
def elementwise(kernel: Any, *args: Any) -> ShardedArray:
    positions = _sharded_positions(kernel, args)

    def on_shards(*shards: Any) -> Any:
        full = list(args)
        for i, s in zip(positions, shards, strict=True):
            full[i] = s
        return kernel(*full)

    return map_shards(on_shards, *(args[i] for i in positions))


_FOLD = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


@implements("gk.reduction", "sharded")
def reduction(kernel: Any, *args: Any, axis: Any = None, keepdims: bool = False) -> Any:
    positions = _sharded_positions(kernel, args)
    sharded = [args[i] for i in positions]
    check_same_layout(kernel.op, sharded, [kernel.params[i] for i in positions])
    first = sharded[0]
    if any(x.shape != first.shape for x in sharded):
        seen = ", ".join(f"{kernel.params[i]} {args[i].shape}" for i in positions)
        raise ValueError(f"{kernel.op}: sharded arguments must have one shape, got {seen}")
    kernel.result_dtype(*(x.shards[0] if isinstance(x, ShardedArray) else x for x in args))
    found = reduction_axes(kernel.op, axis, first.ndim)
    axes = tuple(range(first.ndim)) if found is None else found

    def on_device(fn: Any, keep: bool) -> Any:
        def run(*shards: Any) -> Any:
            full = list(args)
            for i, s in zip(positions, shards, strict=True):
                full[i] = s
            return fn(*full, axis=axis, keepdims=keep)

        return run

    if first.axis not in axes:  # each device reduces its own rows: still sharded
        parts = map_devices(
            first.backend, first.devices, on_device(kernel, keepdims), *(x.shards for x in sharded)
        )
        split = first.axis if keepdims else first.axis - sum(a < first.axis for a in axes)
        return ShardedArray(first.backend, parts, split, first.devices)
    partial, final = kernel.pieces
    # max/min have no identity: a device holding no rows takes no part
    keep = [i for i, n in enumerate(first.sizes) if n or kernel.reducer in ("sum", "prod")]
    if not keep:
        raise ValueError(
            f"{kernel.op}: a {kernel.reducer} over zero elements (shape {first.shape}, axis "
            f"{axis!r}) has no value"
        )
    devices = tuple(first.devices[i] for i in keep)
    parts = map_devices(
        first.backend,
        devices,
        on_device(partial, keepdims),
        *([x.shards[i] for i in keep] for x in sharded),
    )
    backend, root = first.backend, devices[0]
    fold = getattr(backend.xp, _FOLD[kernel.reducer])
    with backend.use_device(root):  # partials combined in device order, on the first device
        total = backend.to_device(parts[0], root, copy=True)
        for p in parts[1:]:
            total = fold(total, backend.to_device(p, root, copy=False), out=total)
        return final(total)
