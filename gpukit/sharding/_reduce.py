"""Reductions of sharded arrays: ``sum``, ``mean``, ``max``, ``min``, ``vdot``, ``dot``.

Each device reduces its own shard. Reducing axes other than the split axis leaves a
sharded array (no communication); reducing the split axis combines the per-device
partial results on the first device in device order (0, 1, ..., N-1) through the
backend's collectives, so a result is bit-for-bit the same on every run with the same
devices, and returns a native array there (0-d for a full reduction). The host waits
only when it reads it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._runtime.workers import map_devices
from ._layout import check_same_layout, describe

__all__ = ["ReductionMixin", "dot", "vdot"]


def _axes(x: Any, axis: Any, op: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"{op}: axis {a} is out of range for an array of shape {x.shape}")
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis={axis!r} repeats an axis")
    return tuple(sorted(out))


def _refuse(op: str, x: Any, out: Any, extra: dict[str, Any]) -> None:
    unsupported = [k for k in extra] + (["out"] if out is not None else [])
    if unsupported:
        raise TypeError(
            f"{op} of a {describe(x)} does not take {', '.join(map(repr, unsupported))}; "
            "reduce without them, or gather it first (x.gather())"
        )


class ReductionMixin:
    """``sum``, ``mean``, ``max`` and ``min`` for :class:`~gpukit.ShardedArray`."""

    __slots__ = ()

    def sum(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
        **unsupported: Any,
    ) -> Any:  # fmt: skip
        """Sum over ``axis`` (all axes by default), as :meth:`numpy.ndarray.sum`.

        Returns a ShardedArray when the split axis is kept, else a native array on
        ``devices[0]`` (partial sums added in device order).
        """
        _refuse("ShardedArray.sum", self, out, unsupported)
        return _reduce(self, "sum", _axes(self, axis, "sum"), keepdims, dtype)

    def mean(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
        **unsupported: Any,
    ) -> Any:  # fmt: skip
        """Arithmetic mean over ``axis``, as :meth:`numpy.ndarray.mean` (integers give float64)."""
        _refuse("ShardedArray.mean", self, out, unsupported)
        axes = _axes(self, axis, "mean")
        result = np.dtype(dtype) if dtype is not None else _mean_dtype(self.dtype)
        work = result if result.itemsize >= 4 or result.kind not in "fc" else np.dtype("float32")
        total = _reduce(self, "sum", axes, keepdims, work)
        count = math.prod(self.shape[a] for a in axes)
        return _finish(total, lambda t: (t / count).astype(result, copy=False), self)

    def max(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, **unsupported: Any
    ) -> Any:
        """Maximum over ``axis``, as :meth:`numpy.ndarray.max` (NaN propagates)."""
        _refuse("ShardedArray.max", self, out, unsupported)
        return _reduce(self, "max", _axes(self, axis, "max"), keepdims, None)

    def min(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, **unsupported: Any
    ) -> Any:
        """Minimum over ``axis``, as :meth:`numpy.ndarray.min` (NaN propagates)."""
        _refuse("ShardedArray.min", self, out, unsupported)
        return _reduce(self, "min", _axes(self, axis, "min"), keepdims, None)


def _mean_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _finish(result: Any, fn: Any, x: Any) -> Any:
    """``fn`` applied where ``result`` lives: per shard, or on the first device."""
    if isinstance(result, ReductionMixin):
        return result._map(fn)
    with x.backend.use_device(x.devices[0]):  # a native array there, as the sum was
        return x.backend.asarray(fn(result), device=x.devices[0])


def _reduce(x: Any, op: str, axes: tuple[int, ...], keepdims: bool, dtype: Any) -> Any:
    xp = x.backend.xp
    fn = getattr(xp, op)
    kw: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
    if dtype is not None:
        kw["dtype"] = dtype
    if x.axis not in axes:
        parts = map_devices(x.backend, x.devices, lambda s: fn(s, **kw), x.shards)
        split = x.axis if keepdims else x.axis - sum(a < x.axis for a in axes)
        return type(x)(x.backend, parts, split, x.devices)
    # max/min have no identity: a device holding no rows takes no part
    keep = [i for i, n in enumerate(x.sizes) if n or op == "sum"]
    if not keep:
        name = {"max": "maximum", "min": "minimum"}[op]
        raise ValueError(
            f"zero-size array to reduction operation {name} which has no identity (a {describe(x)})"
        )
    devices = tuple(x.devices[i] for i in keep)
    parts = map_devices(x.backend, devices, lambda s: fn(s, **kw), [x.shards[i] for i in keep])
    return x.backend.collectives(devices).reduce(parts, op=op)


def vdot(x: Any, y: Any) -> Any:
    """``sum(conj(x) * y)`` over every element of two arrays laid out alike.

    A native 0-d array on ``x.devices[0]``, partial products added in device order.
    """
    _same_shape("vdot", (x, y))
    xp = x.backend.xp
    parts = map_devices(x.backend, x.devices, xp.vdot, x.shards, y.shards)
    return x.backend.collectives(x.devices).reduce(parts)


def dot(x: Any, y: Any) -> Any:
    """``sum(x * y)`` of two 1-d arrays laid out alike (no conjugation)."""
    for v, name in ((x, "x"), (y, "y")):
        if v.ndim != 1:
            raise ValueError(f"dot: argument {name!r} must be 1-d; got shape {v.shape}")
    _same_shape("dot", (x, y))
    xp = x.backend.xp
    parts = map_devices(x.backend, x.devices, xp.dot, x.shards, y.shards)
    return x.backend.collectives(x.devices).reduce(parts)


def _same_shape(op: str, arrays: Sequence[Any]) -> None:
    x, y = arrays
    if x.shape != y.shape:
        raise ValueError(
            f"{op}: arguments 'x' and 'y' must have the same shape; got {x.shape} and {y.shape}"
        )
    check_same_layout(op, arrays, ("x", "y"))
