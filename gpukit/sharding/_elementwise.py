"""NumPy ufuncs and operators on sharded arrays, computed shard by shard on each device.

``x + y``, ``numpy.sin(x)``, ``x *= 2``, ``numpy.add(x, y, out=z)``: the ufunc runs on
each device's worker with that device's pieces of the operands (NEP 13's
``__array_ufunc__``). Operands may be

* sharded arrays laid out alike (same devices, split axis counted from the end,
  shard lengths); two layouts that differ raise, naming both;
* scalars, passed to every device;
* plain arrays broadcasting against the result: one that spans the split axis is cut
  like the sharded operands, one that does not is used whole on every device (host
  data on a device backend is an implicit transfer: guarded and counted).

``x @ b`` runs the sharded ``gk.matmul``. The other ufunc methods (``reduce``,
``accumulate``, ``outer``, ...) raise a ``TypeError`` naming the way on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .._dispatch.kinds import implementation, kind_of
from .._runtime.placement import owner_of
from .._runtime.workers import map_devices
from ..errors import DeviceMismatchError
from ._layout import describe, distribute

__all__ = ["ElementwiseMixin"]

_SCALARS = (int, float, complex, bool, np.generic)


class ElementwiseMixin(NDArrayOperatorsMixin):
    """Arithmetic operators and NumPy ufuncs for :class:`~gpukit.ShardedArray`."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = f"numpy.{ufunc.__name__}"
        if ufunc is np.matmul and method == "__call__" and not kwargs:
            return implementation("gk.matmul", kind_of(self), self)(*inputs)
        if method != "__call__" or ufunc.signature is not None:
            what = name if method == "__call__" else f"{name}.{method}"
            raise TypeError(
                f"{what} does not accept a {describe(self)}: only elementwise ufunc calls run "
                "on sharded arrays; reduce with x.sum()/x.mean()/x.max()/x.min(), or gather it "
                "first (x.gather())"
            )
        out = kwargs.pop("out", None)
        out = out if isinstance(out, tuple) else (() if out is None else (out,))
        where = kwargs.pop("where", True)
        operands = [*inputs] + ([] if where is True else [where])
        if any(_foreign(v, self) for v in (*operands, *out)):
            return NotImplemented
        names = [f"x{i + 1}" for i in range(len(inputs))] + ([] if where is True else ["where"])
        shape = np.broadcast_shapes(*(np.shape(v) for v in operands))
        ref = next(v for v in (*operands, *out) if isinstance(v, ElementwiseMixin))
        axis = ref.axis + len(shape) - ref.ndim
        pieces = [
            _pieces(name, v, n, ref, shape, axis) for v, n in zip(operands, names, strict=True)
        ]
        for i, o in enumerate(out):
            if not isinstance(o, ElementwiseMixin) or o.shape != shape:
                raise TypeError(
                    f"{name}: out[{i}] must be a ShardedArray of the result's shape {shape}, "
                    f"laid out like the operands; got {type(o).__name__} of shape {np.shape(o)}"
                )
            _pieces(name, o, f"out[{i}]", ref, shape, axis)  # checks the layout
        n_in = len(inputs)

        def one(*args: Any) -> Any:
            call_kw = dict(kwargs)
            if where is not True:
                call_kw["where"] = args[n_in]
            if out:
                call_kw["out"] = args[len(operands) :]
            return ufunc(*args[:n_in], **call_kw)

        results = map_devices(ref.backend, ref.devices, one, *pieces, *(o.shards for o in out))
        if out:
            return out[0] if len(out) == 1 else out
        wrap = type(ref)
        if ufunc.nout == 1:
            return wrap(ref.backend, results, axis, ref.devices)
        return tuple(
            wrap(ref.backend, [r[k] for r in results], axis, ref.devices) for k in range(ufunc.nout)
        )

    # -- per-shard views and casts ----------------------------------------------------------
    def _map(self, fn: Any) -> Any:
        parts = map_devices(self.backend, self.devices, fn, self.shards)
        return type(self)(self.backend, parts, self.axis, self.devices)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """The array cast to ``dtype`` shard by shard (``self`` when ``copy=False`` and
        the dtype is already ``dtype``)."""
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return self._map(lambda s: s.astype(dtype, copy=copy))

    def conj(self) -> Any:
        """The complex conjugate (``numpy.conjugate``), shard by shard."""
        return np.conjugate(self)

    @property
    def real(self) -> Any:
        """The real part, shard by shard."""
        return self._map(lambda s: s.real)

    @property
    def imag(self) -> Any:
        """The imaginary part, shard by shard (zeros for a real array, as NumPy)."""
        return self._map(lambda s: s.imag)


def _foreign(value: Any, ref: Any) -> bool:
    """Another array type with its own ``__array_ufunc__`` (Dask, xarray): let it try."""
    if value is None or isinstance(value, (ElementwiseMixin, np.ndarray, *_SCALARS)):
        return False
    if not hasattr(type(value), "__array_ufunc__"):
        return False
    return not (ref.backend.owns(value) or owner_of(value) is not None)


def _pieces(op: str, value: Any, name: str, ref: Any, shape: tuple, axis: int) -> Sequence[Any]:
    """``value``'s piece for each of ``ref``'s devices."""
    devices = ref.devices
    if isinstance(value, ElementwiseMixin):
        if value.backend is not ref.backend or value.devices != ref.devices:
            raise DeviceMismatchError(_mismatch(op, name, value, ref))
        if value.axis + len(shape) - value.ndim != axis or value.sizes != ref.sizes:
            raise ValueError(_mismatch(op, name, value, ref))
        if value.shape[value.axis] != shape[axis]:
            raise ValueError(
                f"{op}: argument {name!r} is a {describe(value)} and would be broadcast along "
                f"its split axis to length {shape[axis]}; a split axis does not broadcast: "
                "gather it, or shard the result's full length"
            )
        return value.shards
    if isinstance(value, _SCALARS) or (type(value) is np.ndarray and value.ndim == 0):
        scalar = value[()] if isinstance(value, np.ndarray) else value
        return [scalar] * len(devices)
    vshape = np.shape(value)
    lead = len(shape) - len(vshape)
    if axis < lead or vshape[axis - lead] == 1:  # does not span the split axis
        return distribute(ref.backend, value, devices, name)
    return distribute(ref.backend, value, devices, name, axis=axis - lead, sizes=ref.sizes)


def _mismatch(op: str, name: str, value: Any, ref: Any) -> str:
    return (
        f"{op}: argument {name!r} is a {describe(value)} but the other sharded operand is a "
        f"{describe(ref)}; elementwise operations need one layout: reshard one like the "
        "other with gk.reshard(x, axis=..., devices=...)"
    )
