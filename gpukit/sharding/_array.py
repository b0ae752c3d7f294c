"""Arrays split along one axis over several devices: ``gk.shard``, ``gk.map_shards``.

A :class:`ShardedArray` holds one native array (a *shard*) per device, split along
one axis, unevenly where the length does not divide (``numpy.array_split``'s
rule: the first ``length % n`` shards get one more; with fewer rows than devices
the last shards are empty). Work on shards runs on each device's worker thread
(:mod:`gpukit._runtime.workers`); the host waits only in :meth:`ShardedArray.gather`,
:func:`gpukit.to_numpy` and where a reduction's result is read.

It behaves as an array: operators and NumPy ufuncs (:mod:`._elementwise`), reductions
(:mod:`._reduce`) and NumPy's functions and conversion (:mod:`._interop`) work on
it shard by shard, and every public gpukit operation given one runs its sharded
implementation (the operation modules of :mod:`gpukit.sharding`) or raises a
``TypeError`` with the way on, through the ``"sharded"`` array kind registered here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._dispatch import operation, register_kind
from .._dispatch.capabilities import declare, same
from .._runtime import transfer as _transfer
from .._runtime.devices import check_device
from .._runtime.placement import owner_of
from .._runtime.workers import map_devices
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import DeviceMismatchError
from ._elementwise import ElementwiseMixin
from ._interop import InteropMixin
from ._layout import check_devices, cut, describe, split_sizes
from ._reduce import ReductionMixin

__all__ = ["ShardedArray", "map_shards", "shard"]


class ShardedArray(ElementwiseMixin, ReductionMixin, InteropMixin):
    """An array split along :attr:`axis` into one shard per device.

    Made by :func:`gpukit.shard`, :func:`gpukit.reshard` or :func:`gpukit.map_shards`,
    and by operations on sharded arrays, not directly. Shards may share memory with
    the array they were cut from (the piece already on its device is a view; virtual
    CPU devices share host memory): do not write into the source while the sharded
    array is in use.

    Operators (``+``, ``*``, ``@``, comparisons, in-place ``+=``), NumPy ufuncs,
    ``sum``/``mean``/``max``/``min`` and ``numpy.asarray`` work on it (see the
    Several devices page); so does every public gpukit function, through its sharded
    implementation or a ``TypeError`` naming the way on.

    Attributes
    ----------
    shape : tuple of int
        Shape of the whole array.
    dtype : numpy.dtype
        Element type (every shard has it).
    axis : int
        The split axis.
    devices : tuple of int
        Device of each shard, in order.
    shards : tuple of arrays
        The backend's native arrays, ``shards[i]`` on ``devices[i]``.
    backend : gpukit.backend.Backend
        The backend owning the shards.
    """

    __slots__ = ("axis", "backend", "devices", "dtype", "shape", "shards")

    def __init__(
        self, backend: Backend, shards: Sequence[Any], axis: int, devices: Sequence[int]
    ) -> None:
        first = shards[0]

        def others(shape: tuple[int, ...]) -> tuple[int, ...]:
            return shape[:axis] + shape[axis + 1 :]

        for i, s in enumerate(shards):
            if others(s.shape) != others(first.shape) or s.dtype != first.dtype:
                raise ValueError(
                    f"shard {i} has shape {s.shape} and dtype {s.dtype}, shard 0 has "
                    f"{first.shape} and {first.dtype}: shards must agree on every axis but "
                    f"the split axis {axis}, and on dtype"
                )
        self.backend = backend
        self.shards = tuple(shards)
        self.axis = axis
        self.devices = tuple(devices)
        self.dtype = first.dtype
        length = sum(s.shape[axis] for s in shards)
        self.shape = (*first.shape[:axis], length, *first.shape[axis + 1 :])

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Length of each shard along the split axis."""
        return tuple(s.shape[self.axis] for s in self.shards)

    def gather(self, device: int | None = None) -> Any:
        """The whole array as one native array (the host waits for every shard).

        Parameters
        ----------
        device : int, optional
            Device of the result; the current device when omitted (on the numpy
            backend: a plain, device-less ndarray).

        Returns
        -------
        array
            ``concatenate(shards, axis)``.

        Examples
        --------
        >>> import numpy as np
        >>> import gpukit as gk
        >>> with gk.use_backend("numpy"):
        ...     s = gk.shard(np.arange(5.0))
        >>> s.gather().tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0]
        """
        backend = self.backend
        if device is not None:
            device = check_device(backend, device)
        if not backend.is_device:
            whole = self.to_numpy()
            return whole if device is None else backend.asarray(whole, device=device)
        target = backend.current_device() if device is None else device
        parts = [backend.to_device(s, target, copy=False) for s in self.shards]
        with backend.use_device(target):
            return backend.xp.concatenate(parts, axis=self.axis)

    def copy(self) -> ShardedArray:
        """A sharded copy, each shard copied on its own device.

        Returns
        -------
        ShardedArray
            Same split, devices and values; no memory shared with ``self``.

        Examples
        --------
        >>> import numpy as np
        >>> import gpukit as gk
        >>> with gk.use_backend("numpy"):
        ...     s = gk.shard(np.arange(3.0))
        ...     t = s.copy()
        >>> t.shards[0] is s.shards[0], gk.to_numpy(t).tolist()
        (False, [0.0, 1.0, 2.0])
        """
        parts = map_devices(self.backend, self.devices, lambda s: s.copy(), self.shards)
        return ShardedArray(self.backend, parts, self.axis, self.devices)

    def to_numpy(self) -> np.ndarray:
        """The whole array on the host, copied shard by shard (no peer copies)."""
        backend = self.backend
        if not backend.is_device:
            return np.concatenate([np.asarray(s) for s in self.shards], axis=self.axis)
        parts = [backend.to_numpy(s) for s in self.shards]
        for p in parts:
            _transfer.record("device_to_host", p.nbytes)
        return np.concatenate(parts, axis=self.axis)

    def __repr__(self) -> str:
        return (
            f"ShardedArray(shape={self.shape}, dtype={self.dtype}, axis={self.axis}, "
            f"devices={self.backend.name}:{self.devices}, sizes={self.sizes})"
        )


def _advice(operation: str) -> str:
    if operation.startswith("gk.linalg."):  # the dense solvers and factorisations
        return (
            "a dense factorisation needs the whole matrix on one device: gather it first "
            "(x.gather(), or gk.to_numpy(x) for the host); for a system too large for one "
            "device, use gpukit's Dask support (gk.distributed)"
        )
    if operation.startswith("gk.nn."):
        return (
            "gather it to one device first (x.gather()), or train on several devices with "
            "gk.nn.DataParallel(model), which takes a batch sharded along its rows"
        )
    return (
        "gather it to one device first (x.gather()); gk.reshard(x, axis=...) moves the "
        "split to another axis, gk.map_shards(fn, x) runs fn on each shard"
    )


# The modules of gpukit.sharding holding the operations' sharded implementations.
_OPERATIONS = [
    f"gpukit.sharding.{m}" for m in ("_convert", "_fft", "_krylov", "_matmul", "_reductions")
]

register_kind(
    "sharded",
    lambda t: issubclass(t, ShardedArray),
    modules=[
        f"gpukit.sharding.{m}"
        for m in ("_convert", "_fft", "_krylov", "_matmul", "_reductions", "_user_kernels")
    ],
    describe=describe,
    advice=_advice,
)


@operation("gk.shard")
def shard(x: Any, axis: int = 0, devices: Sequence[int] | None = None) -> ShardedArray:
    """Split ``x`` along ``axis`` and place one piece on each device.

    Parameters
    ----------
    x : array_like
        A native array of any backend, or host data (an explicit transfer on a
        device backend: counted, always allowed).
    axis : int, default 0
        The split axis (negative counts from the end).
    devices : sequence of int, optional
        Device indices, in shard order; every device of the backend when omitted.

    Returns
    -------
    ShardedArray
        ``len(devices)`` shards; uneven lengths allowed (the first ``length % n``
        shards are one longer, shards past the length are empty).

    Raises
    ------
    ValueError
        ``x`` is 0-d, ``axis`` is out of range, or ``devices`` is empty, repeats a
        device or names one out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.ones((5, 3)), axis=0)
    >>> s.shape, s.axis, len(s.shards)
    ((5, 3), 0, 1)
    """
    owner = owner_of(x)
    backend = owner or get_backend()
    if owner is None:
        x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension to be sharded; got a 0-d array")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis!r} is out of range for x of shape {x.shape}")
    axis %= x.ndim
    devs = check_devices(backend, devices)
    return split(backend, x, axis, devs, split_sizes(x.shape[axis], len(devs)))


declare("gk.shard", same)


def split(
    backend: Backend, x: Any, axis: int, devices: Sequence[int], sizes: Sequence[int]
) -> ShardedArray:
    """``x`` (native to ``backend`` or host data) cut into ``sizes`` along ``axis``, placed."""
    owner = owner_of(x)
    if owner is None:
        x = np.asarray(x)
    pieces = cut(x, axis, sizes)
    devs = tuple(devices)
    if owner is not None:  # copies between devices are queued from this thread, in order
        shards = [backend.to_device(p, d, copy=False) for p, d in zip(pieces, devs, strict=True)]
        return ShardedArray(backend, shards, axis, devs)

    def place(piece: Any, device: int) -> Any:
        out = backend.asarray(piece, device=device)
        if backend.is_device:
            _transfer.record("host_to_device", piece.nbytes)
        return out

    shards = map_devices(backend, devs, place, pieces, devs)
    return ShardedArray(backend, shards, axis, devs)


def check_aligned(arrays: Sequence[ShardedArray], names: Sequence[str]) -> None:
    """Same backend, devices and split lengths for every sharded argument."""
    first, name0 = arrays[0], names[0]
    for x, name in zip(arrays[1:], names[1:], strict=True):
        if x.backend is not first.backend or x.devices != first.devices:
            raise DeviceMismatchError(
                f"argument {name!r} is sharded over {x.backend.name}:{x.devices} but "
                f"argument {name0!r} over {first.backend.name}:{first.devices}; shard both "
                "over the same devices"
            )
        if x.sizes != first.sizes:
            raise ValueError(
                f"argument {name!r} has shard lengths {x.sizes} along axis {x.axis} but "
                f"argument {name0!r} has {first.sizes} along axis {first.axis}; shard both "
                "arrays of the same length the same way"
            )


@operation("gk.map_shards", native=("sharded",))
def map_shards(fn: Callable[..., Any], *sharded: ShardedArray) -> ShardedArray:
    """Apply ``fn`` to matching shards, each call on that shard's device and worker thread.

    Parameters
    ----------
    fn : callable
        Called as ``fn(shard_of_arg0, shard_of_arg1, ...)`` with native arrays; it
        must return an array keeping the split axis (its length may change).
    *sharded : ShardedArray
        One or more arrays sharded over the same devices with the same lengths.

    Returns
    -------
    ShardedArray
        The results, split along the first argument's axis.

    Raises
    ------
    TypeError
        An argument is not a ShardedArray, or ``fn`` returned no array keeping the split axis.
    DeviceMismatchError
        The arguments are sharded over different devices.
    ValueError
        The arguments' shard lengths differ.
    Exception
        Whatever ``fn`` raised on any shard (the other shards' calls finish first).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.arange(4.0))
    ...     t = gk.map_shards(lambda a: 2 * a + 1, s)
    >>> gk.to_numpy(t).tolist()
    [1.0, 3.0, 5.0, 7.0]
    """
    if not sharded:
        raise TypeError("map_shards needs at least one ShardedArray argument")
    names = [f"sharded[{i}]" for i in range(len(sharded))]
    for x, name in zip(sharded, names, strict=True):
        if not isinstance(x, ShardedArray):
            raise TypeError(f"argument {name!r} must be a ShardedArray; got {type(x).__name__}")
    check_aligned(sharded, names)
    first = sharded[0]
    results = map_devices(first.backend, first.devices, fn, *(x.shards for x in sharded))
    for r in results:
        if getattr(r, "ndim", 0) <= first.axis or not first.backend.owns(r):
            raise TypeError(
                f"fn must return a {first.backend.name} array with a split axis {first.axis}; "
                f"got {type(r).__name__} of shape {getattr(r, 'shape', ())}"
            )
    return ShardedArray(first.backend, results, first.axis, first.devices)
