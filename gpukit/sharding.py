"""Operations on :class:`gpukit.ShardedArray`: reductions, matmul, batched FFTs.

Each runs one task per device on that device's worker thread and stream
(:mod:`gpukit._runtime.workers`). Reductions combine the per-device partial results on the
first device in device order (0, 1, ..., N-1), so a result is the same on every
run with the same devices; they return a native 0-d array there, and the host
waits only when it reads it.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     a = gk.shard(np.arange(6.0).reshape(3, 2))
...     y = gk.sharding.matmul(a, np.eye(2))
...     total = gk.sharding.sum(a)
>>> gk.to_numpy(y).tolist(), float(total)
([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], 15.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import fft as gk_fft
from ._dispatch import implements, operation
from ._matmul import matmul as one_device
from ._runtime import transfer as _transfer
from ._runtime.placement import owner_of
from ._runtime.workers import map_devices
from ._select.selection import get_backend
from ._sharding.array import ShardedArray, _check_devices, check_aligned
from .backend import Backend
from .errors import DeviceMismatchError

__all__ = [
    "Replicated",
    "dot",
    "fft",
    "ifft",
    "irfft",
    "matmul",
    "norm",
    "replicate",
    "rfft",
    "sum",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


def _require_sharded(x: Any, name: str) -> ShardedArray:
    if not isinstance(x, ShardedArray):
        raise TypeError(f"argument {name!r} must be a ShardedArray (gk.shard(...)); got "
                        f"{type(x).__name__}")  # fmt: skip
    return x


def _combine(x: ShardedArray, partials: list[Any]) -> Any:
    """Sum per-device partial results on the first device, in device order."""
    return x.backend.collectives(x.devices).reduce(partials)


@operation("gk.sharding.sum", native=("sharded",))
def sum(x: ShardedArray, axis: int | None = None) -> Any:
    """Sum of the elements of a sharded array, over all axes or one.

    Parameters
    ----------
    x : ShardedArray
        The array.
    axis : int, optional
        Reduce this axis only. Reducing another axis than the split one gives a
        ShardedArray; the split axis or all axes give a native array on
        ``x.devices[0]``, partial sums added in device order.

    Returns
    -------
    array or ShardedArray

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.
    ValueError
        ``axis`` is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.ones((4, 3)))
    ...     rows = gk.sharding.sum(s, axis=1)
    >>> float(gk.sharding.sum(s)), gk.to_numpy(rows).tolist()
    (12.0, [3.0, 3.0, 3.0, 3.0])
    """
    x = _require_sharded(x, "x")
    xp = x.backend.xp
    if axis is not None:
        if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
            raise ValueError(f"axis {axis!r} is out of range for x of shape {x.shape}")
        axis %= x.ndim
        if axis != x.axis:
            parts = map_devices(x.backend, x.devices, lambda s: xp.sum(s, axis=axis), x.shards)
            split = x.axis - (axis < x.axis)
            if parts[0].ndim == 0:  # a 1-d array has no axis left to split
                return _combine(x, parts)
            return ShardedArray(x.backend, parts, split, x.devices)
    parts = map_devices(x.backend, x.devices, lambda s: xp.sum(s, axis=axis), x.shards)
    return _combine(x, parts)


@operation("gk.sharding.dot", native=("sharded",))
def dot(x: ShardedArray, y: ShardedArray) -> Any:
    """Dot product ``sum(x * y)`` of two vectors sharded the same way (no conjugation).

    Parameters
    ----------
    x, y : ShardedArray
        1-d arrays of equal length, sharded over the same devices with the same lengths.

    Returns
    -------
    array
        0-d native array on ``x.devices[0]``; partial dot products added in device order.

    Raises
    ------
    TypeError
        An argument is not a ShardedArray.
    ValueError
        An argument is not 1-d, or the shard lengths differ.
    DeviceMismatchError
        ``x`` and ``y`` are sharded over different devices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     v = gk.shard(np.arange(4.0))
    ...     d = gk.sharding.dot(v, v)
    >>> float(d)
    14.0
    """
    x, y = _require_sharded(x, "x"), _require_sharded(y, "y")
    for v, name in ((x, "x"), (y, "y")):
        if v.ndim != 1:
            raise ValueError(f"argument {name!r} must be 1-d; got shape {v.shape}")
    check_aligned((x, y), ("x", "y"))
    xp = x.backend.xp
    return _combine(x, map_devices(x.backend, x.devices, xp.dot, x.shards, y.shards))


@operation("gk.sharding.norm", native=("sharded",))
def norm(x: ShardedArray) -> Any:
    """Euclidean (Frobenius) norm of a sharded array.

    Parameters
    ----------
    x : ShardedArray
        Any shape; complex allowed.

    Returns
    -------
    array
        Real 0-d native array on ``x.devices[0]``: ``sqrt`` of the per-shard sums of
        ``|x|**2``, added in device order.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     n = gk.sharding.norm(gk.shard(np.array([3.0, 4.0])))
    >>> float(n)
    5.0
    """
    x = _require_sharded(x, "x")
    xp = x.backend.xp
    parts = map_devices(x.backend, x.devices, lambda s: xp.vdot(s, s).real, x.shards)
    return xp.sqrt(_combine(x, parts))


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
    devs = _check_devices(backend, devices)
    if not backend.is_device:  # one memory space: one private, read-only copy
        host = np.array(b, copy=True)
        host.flags.writeable = False
        return Replicated(backend, [backend.to_device(host, d, copy=False) for d in devs], devs)
    if owner is backend:
        backend.synchronize(backend.device_of(b))  # a peer copy does not wait for b's stream
        made = map_devices(backend, devs, lambda d: backend.to_device(b, d), devs)
        return Replicated(backend, made, devs)
    host = np.asarray(b)
    made = map_devices(backend, devs, lambda d: backend.asarray(host, device=d), devs)
    for _ in devs:
        _transfer.record("host_to_device", host.nbytes)
    return Replicated(backend, made, devs)


def _per_call(backend: Backend, b: Any, devices: tuple[int, ...]) -> list[Any]:
    """``b`` on each device as it is now: shared on virtual devices, else copied."""
    if not backend.is_device:
        host = np.asarray(b)
        return [backend.to_device(host, d, copy=False) for d in devices]
    if owner_of(b) is backend:
        home = backend.device_of(b)
        if any(d != home for d in devices):
            backend.synchronize(home)  # a peer copy does not wait for b's stream
        return [b if d == home else backend.to_device(b, d) for d in devices]
    host = np.asarray(b)  # an implicit transfer per device: guarded and counted
    for d in devices:
        target = f"{backend.name}:{d}"
        _transfer.check_implicit("b", host.shape, host.dtype, host.nbytes, target)
    made = map_devices(backend, devices, lambda d: backend.asarray(host, device=d), devices)
    for _ in devices:
        _transfer.record("host_to_device", host.nbytes)
    return made


def _replicas_for(a: ShardedArray, b: Any) -> list[Any]:
    if not isinstance(b, Replicated):
        return _per_call(a.backend, b, a.devices)
    missing = [d for d in a.devices if d not in b.devices]
    if b.backend is not a.backend or missing:
        raise DeviceMismatchError(
            f"argument 'b' is replicated on {b.backend.name}:{b.devices} but argument 'a' is "
            f"sharded over {a.backend.name}:{a.devices}; replicate b on a's devices"
        )
    return [b.on(d) for d in a.devices]


@operation("gk.sharding.matmul", native=("sharded",))
def matmul(a: ShardedArray, b: Any, *, precision: str | None = None) -> ShardedArray:
    """``a @ b`` for ``a`` split along a row (or batch) axis, ``b`` replicated on every device.

    ``gk.matmul(a, b)`` with a ShardedArray ``a`` comes here.

    ``b`` is read as it is at the call: on virtual CPU devices it is shared, never
    copied; on GPUs it is copied to each device for this call. To copy it once and
    reuse the copies, pass ``gk.sharding.replicate(b)``. Each device multiplies its
    own rows: no communication beyond getting ``b`` there.

    Parameters
    ----------
    a : ShardedArray
        At least 2-d, split along any axis but the last (the contracted one).
    b : array_like or Replicated
        1-d or 2-d, ``b.shape[0] == a.shape[-1]``: a native array, host data, or
        :func:`replicate`'s copies (on at least ``a``'s devices).
    precision : {None, "highest", "tf32"}, optional
        As for :func:`gpukit.matmul`, which each device's product goes through.

    Returns
    -------
    ShardedArray
        Split like ``a``.

    Raises
    ------
    TypeError
        ``a`` is not a ShardedArray.
    ValueError
        ``a`` is split along its last axis, or the shapes do not match.
    DeviceMismatchError
        A :class:`Replicated` ``b`` lacks one of ``a``'s devices or backend.
    TransferGuardError
        Host ``b`` on a device backend while the transfer guard is ``"disallow"``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     c = gk.sharding.matmul(gk.shard(np.ones((3, 2))), np.ones((2, 4)))
    >>> c.shape, float(gk.to_numpy(c)[0, 0])
    ((3, 4), 2.0)
    """
    a = _require_sharded(a, "a")
    if a.ndim < 2 or a.axis == a.ndim - 1:
        raise ValueError(
            f"argument 'a' must be at least 2-d and split along a row or batch axis; got "
            f"shape {a.shape} split along axis {a.axis} (the contracted axis)"
        )
    shape_b = tuple(getattr(b, "shape", np.shape(b)))
    if len(shape_b) not in (1, 2) or shape_b[0] != a.shape[-1]:
        raise ValueError(
            f"argument 'b' must be 1-d or 2-d with {a.shape[-1]} rows to multiply 'a' of "
            f"shape {a.shape}; got shape {shape_b}"
        )
    replicas = _replicas_for(a, b)
    parts = map_devices(
        a.backend, a.devices, lambda x, y: one_device(x, y, precision=precision), a.shards, replicas
    )
    return ShardedArray(a.backend, parts, a.axis, a.devices)


def _fft(kind: str, x: ShardedArray, n: int | None, axis: int, norm: str | None) -> ShardedArray:
    x = _require_sharded(x, "x")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis!r} is out of range for x of shape {x.shape}")
    if axis % x.ndim == x.axis:
        raise ValueError(
            f"axis {axis} is the split axis of x (shape {x.shape}, split along {x.axis}): a "
            "sharded FFT runs along any other axis; shard x along another axis, or gather it"
        )
    fn = getattr(gk_fft, kind)
    parts = map_devices(x.backend, x.devices, lambda s: fn(s, n=n, axis=axis, norm=norm), x.shards)
    return ShardedArray(x.backend, parts, x.axis, x.devices)


_FFT_DOC = """{what} of a sharded array along ``axis``, one batch of transforms per device.

    Parameters
    ----------
    x : ShardedArray
        Input; the transform axis must not be its split axis.
    n : int, optional
        Transform length (crop or zero-pad), as in ``numpy.fft.{kind}``.
    axis : int, default -1
        Transform axis.
    norm : {{"backward", "ortho", "forward"}}, optional
        Normalisation, as in NumPy.

    Returns
    -------
    ShardedArray
        Split like ``x``. float32 input gives complex64 (NumPy 2's rule).

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.
    ValueError
        ``axis`` is the split axis or out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.random.default_rng(0).standard_normal((4, 8))
    >>> with gk.use_backend("numpy"):
    ...     y = gk.sharding.{kind}(gk.shard(x, axis=0), axis=1)
    >>> bool(np.allclose(gk.to_numpy(y), np.fft.{kind}(x, axis=1)))
    True
    """


def _make_fft(kind: str, what: str):
    def transform(
        x: ShardedArray, n: int | None = None, axis: int = -1, norm: str | None = None
    ) -> ShardedArray:
        return _fft(kind, x, n, axis, norm)

    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = _FFT_DOC.format(what=what, kind=kind)
    return operation(f"gk.sharding.{kind}", native=("sharded",))(transform)


fft = _make_fft("fft", "Discrete Fourier transform")
ifft = _make_fft("ifft", "Inverse discrete Fourier transform")
rfft = _make_fft("rfft", "Discrete Fourier transform of real input")
irfft = _make_fft("irfft", "Inverse of :func:`rfft`")


# What the public operations do with a ShardedArray argument (gpukit._dispatch.kinds).
@implements("gk.matmul", "sharded")
def _matmul_sharded(a: Any, b: Any, precision: str | None = None) -> ShardedArray:
    return matmul(a, b, precision=precision)


@implements("gk.to_numpy", "sharded")
def _to_numpy_sharded(x: ShardedArray) -> np.ndarray:
    return x.to_numpy()
