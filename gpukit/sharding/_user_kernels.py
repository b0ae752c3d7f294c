"""``gk.elementwise`` kernels on sharded arrays: the kernel on each device's shards.

Every array argument must be sharded the same way (scalars are passed to every shard):
an elementwise kernel then needs nothing from another device. Reductions
(``gk.reduction``) have no sharded implementation: their final expression applies to the
combined value, which one pass over each shard does not give.
"""

from __future__ import annotations

from typing import Any

from .._dispatch import implements
from ._array import ShardedArray, map_shards

__all__: list[str] = []


@implements("gk.elementwise", "sharded")
def elementwise(kernel: Any, *args: Any) -> ShardedArray:
    positions = [i for i, a in enumerate(args) if isinstance(a, ShardedArray)]
    for name, a in zip(kernel.params, args, strict=False):
        if not isinstance(a, ShardedArray) and hasattr(a, "shape"):
            raise TypeError(
                f"{kernel.op}: argument {name!r} is a {type(a).__module__}."
                f"{type(a).__qualname__} but another argument is sharded; shard every array "
                "argument the same way (gk.shard) or pass a scalar"
            )

    def on_shards(*shards: Any) -> Any:
        full = list(args)
        for i, s in zip(positions, shards, strict=True):
            full[i] = s
        return kernel(*full)

    return map_shards(on_shards, *(args[i] for i in positions))
