"""Products: ``gk.sharding.matmul`` (``gk.matmul`` and ``@`` with a sharded operand run it),
``gk.sharding.replicate``.

Each device multiplies its own rows (or batch entries, or columns) by the whole other
operand, which is on every device: copied for the call, replicated once by
:func:`replicate`, or all-gathered when it is sharded too. No other communication.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import implements, operation
from .._matmul import matmul as one_device
from .._runtime import transfer as _transfer
from .._runtime.placement import owner_of
from .._runtime.workers import map_devices
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import DeviceMismatchError
from ._array import ShardedArray
from ._checks import require_sharded
from ._layout import check_devices, describe, distribute

__all__ = ["Replicated", "matmul", "replicate"]


class Replicated:
    """One private copy of an array on each of :attr:`devices`, made by :func:`replicate`.

    A snapshot: writing into the source afterwards does not change it (replicate
    again to pick the new values up). Pass it as ``b`` of :func:`matmul` to reuse the
    copies across calls.

    Attributes
    ----------
    backend : gpukit.backend.Backend
        The backend owning the copies.
    devices : tuple of int
        The devices holding a copy.
    replicas : tuple of arrays
        ``replicas[i]`` on ``devices[i]`` (read-only on the host: never write into them).
    shape : tuple of int
        Shape of the array.
    dtype : numpy.dtype
        Element type.
    """

    __slots__ = ("backend", "devices", "dtype", "replicas", "shape")

    def __init__(self, backend: Backend, replicas: list[Any], devices: tuple[int, ...]) -> None:
        self.backend, self.replicas, self.devices = backend, tuple(replicas), devices
        self.shape, self.dtype = tuple(replicas[0].shape), replicas[0].dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def on(self, device: int) -> Any:
        """The copy on ``device``."""
        return self.replicas[self.devices.index(device)]

    def __repr__(self) -> str:
        return (
            f"Replicated(shape={self.shape}, dtype={self.dtype}, "
            f"devices={self.backend.name}:{self.devices})"
        )


@operation("gk.sharding.replicate", native=("sharded",))
def replicate(b: Any, devices: Sequence[int] | None = None) -> Replicated:
    """Copy ``b`` once to every device, for reuse by :func:`matmul` across calls.

    ``gk.sharding.matmul(a, b)`` with a plain array ``b`` reads ``b`` as it is at each
    call (on GPUs: copies it to the devices at each call, as an unsharded
    ``gk.matmul`` moves a host operand each call). When ``b`` is reused unchanged,
    replicate it once: the copies are made here and kept in the returned object,
    never refreshed behind your back.

    Parameters
    ----------
    b : array_like
        A native array of the backend (peer copies, after its device finished
        writing it) or host data (an explicit transfer: counted, always allowed).
    devices : sequence of int, optional
        Where to copy it; every device of the backend (``b``'s, else the active one)
        when omitted.

    Returns
    -------
    Replicated
        A private snapshot of ``b`` on each device (on virtual CPU devices one
        read-only host copy they all share).

    Raises
    ------
    ValueError
        ``devices`` is empty, repeats a device or names one out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> b = np.eye(2)
    >>> with gk.use_backend("numpy"):
    ...     rb = gk.sharding.replicate(b)
    ...     c = gk.sharding.matmul(gk.shard(np.ones((3, 2))), rb)
    >>> b[0, 0] = 5.0  # rb is a snapshot: unchanged
    >>> gk.to_numpy(c)[0].tolist(), rb.shape
    ([1.0, 1.0], (2, 2))
    """
    owner = owner_of(b)
    backend = owner or get_backend()
    devs = check_devices(backend, devices)
    if not backend.is_device:  # one memory space: one private, read-only copy
        host = np.array(b, copy=True)
        host.flags.writeable = False
        return Replicated(backend, [backend.to_device(host, d, copy=False) for d in devs], devs)
    if owner is backend:
        return Replicated(backend, [backend.to_device(b, d) for d in devs], devs)
    host = np.asarray(b)
    made = map_devices(backend, devs, lambda d: backend.asarray(host, device=d), devs)
    for _ in devs:
        _transfer.record("host_to_device", host.nbytes)
    return Replicated(backend, made, devs)


def _replicas_for(a: ShardedArray, b: Any) -> list[Any]:
    """``b`` on each of ``a``'s devices as it is now: shared on virtual devices, else
    copied (a host ``b`` on a device backend: an implicit transfer per device)."""
    if isinstance(b, ShardedArray):
        return _all_gathered(a, b, "b")
    if not isinstance(b, Replicated):
        return distribute(a.backend, b, a.devices, "b")
    missing = [d for d in a.devices if d not in b.devices]
    if b.backend is not a.backend or missing:
        raise DeviceMismatchError(
            f"argument 'b' is replicated on {b.backend.name}:{b.devices} but argument 'a' is "
            f"sharded over {a.backend.name}:{a.devices}; replicate b on a's devices"
        )
    return [b.on(d) for d in a.devices]


def _all_gathered(a: ShardedArray, b: ShardedArray, name: str) -> list[Any]:
    """The whole of ``b`` on each of ``a``'s devices (one all-gather)."""
    if b.backend is not a.backend or b.devices != a.devices:
        raise DeviceMismatchError(
            f"gk.matmul: argument {name!r} is a {describe(b)} but the other operand is a "
            f"{describe(a)}; shard both over the same devices (gk.reshard(x, devices=...))"
        )
    if len(b.devices) == 1:
        return list(b.shards)
    total = sum(s.nbytes for s in b.shards)
    for s in b.shards:
        _transfer.record("device_to_device", total - s.nbytes)
    return b.backend.collectives(b.devices).all_gather(list(b.shards), axis=b.axis)


@operation("gk.sharding.matmul", native=("sharded",))
def matmul(a: Any, b: Any, *, precision: str | None = None) -> ShardedArray:
    """``a @ b`` with a sharded operand, each device multiplying its own part.

    ``gk.matmul(a, b)`` and ``a @ b`` with a ShardedArray operand run this.

    * ``a`` sharded along a row or batch axis (any but its last, the contracted one):
      each device multiplies its rows by the whole ``b``. A plain ``b`` is read as it
      is at the call: shared on virtual CPU devices, copied to each device on GPUs (a
      host ``b``: an implicit transfer per device); pass ``gk.sharding.replicate(b)``
      to copy it once and reuse the copies; a sharded ``b`` is all-gathered.
    * ``a`` plain (1-d or 2-d), ``b`` sharded along its columns (last axis) or a batch
      axis: each device multiplies the whole ``a`` by its columns.

    Parameters
    ----------
    a : ShardedArray or array_like
        The left operand.
    b : array_like, Replicated or ShardedArray
        The right operand; 1-d or 2-d when ``a`` is sharded.
    precision : {None, "highest", "tf32"}, optional
        As for :func:`gpukit.matmul`, which each device's product goes through.

    Returns
    -------
    ShardedArray
        Split like the sharded operand: along ``a``'s split axis, or along the result's
        columns (batch axis) for ``b``'s columns (batch axis).

    Raises
    ------
    TypeError
        Neither operand is a ShardedArray.
    ValueError
        The sharded operand is split along the contracted axis, or the shapes do not
        match.
    DeviceMismatchError
        A :class:`Replicated` or sharded ``b`` is not on ``a``'s devices.
    TransferGuardError
        Host ``b`` on a device backend while the transfer guard is ``"disallow"``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     c = gk.sharding.matmul(gk.shard(np.ones((3, 2))), np.ones((2, 4)))
    ...     d = np.ones((5, 3)) @ gk.shard(np.ones((3, 4)), axis=1)
    >>> c.shape, float(gk.to_numpy(c)[0, 0]), d.shape, d.axis
    ((3, 4), 2.0, (5, 4), 1)
    """
    if not isinstance(a, ShardedArray):
        return _left_plain(a, require_sharded(b, "b", "gk.sharding.matmul"), precision)
    if a.ndim < 2 or a.axis == a.ndim - 1:
        raise ValueError(
            f"gk.matmul: argument 'a' must be at least 2-d and split along a row or batch "
            f"axis to be multiplied shard by shard; got a {describe(a)} (split along the "
            "contracted axis): reshard it, gk.reshard(a, axis=0)"
        )
    shape_b = tuple(getattr(b, "shape", np.shape(b)))
    if len(shape_b) not in (1, 2) or shape_b[0] != a.shape[-1]:
        raise ValueError(
            f"gk.matmul: argument 'b' must be 1-d or 2-d with {a.shape[-1]} rows to multiply "
            f"'a' of shape {a.shape}; got shape {shape_b}"
        )
    replicas = _replicas_for(a, b)
    parts = map_devices(
        a.backend, a.devices, lambda x, y: one_device(x, y, precision=precision), a.shards, replicas
    )
    return ShardedArray(a.backend, parts, a.axis, a.devices)


def _left_plain(a: Any, b: ShardedArray, precision: str | None) -> ShardedArray:
    shape_a = tuple(getattr(a, "shape", np.shape(a)))
    if b.ndim < 2 or b.axis == b.ndim - 2:
        raise ValueError(
            f"gk.matmul: argument 'b' must be at least 2-d and split along its columns or a "
            f"batch axis to be multiplied shard by shard; got a {describe(b)} (split along "
            "the contracted axis): reshard it, gk.reshard(b, axis=-1)"
        )
    if len(shape_a) not in (1, 2) or shape_a[-1] != b.shape[-2]:
        raise ValueError(
            f"gk.matmul: argument 'a' must be 1-d or 2-d with {b.shape[-2]} columns to "
            f"multiply 'b' of shape {b.shape}; got shape {shape_a}"
        )
    replicas = distribute(b.backend, a, b.devices, "a")
    parts = map_devices(
        b.backend, b.devices, lambda x, y: one_device(x, y, precision=precision), replicas, b.shards
    )
    ndim = b.ndim - (len(shape_a) == 1)
    axis = b.axis if b.axis < b.ndim - 2 else ndim - 1
    return ShardedArray(b.backend, parts, axis, b.devices)


@implements("gk.matmul", "sharded")
def _gk_matmul(a: Any, b: Any, *, precision: str | None = None) -> ShardedArray:
    """``gk.matmul`` (and ``@``) with a ShardedArray operand (its dispatched signature)."""
    return matmul(a, b, precision=precision)
