"""Argument checks shared by the sharded implementations."""

from __future__ import annotations

from typing import Any

from ._array import ShardedArray

__all__ = ["require_sharded"]


def require_sharded(x: Any, name: str, op: str) -> ShardedArray:
    """``x`` if it is a ShardedArray, else a TypeError naming ``op`` and the argument."""
    if not isinstance(x, ShardedArray):
        raise TypeError(
            f"{op}: argument {name!r} must be a ShardedArray (gk.shard(...)); got "
            f"{type(x).__name__}"
        )
    return x
