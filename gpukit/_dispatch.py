"""Where an operation runs, and getting its inputs there.

Every front-end function calls :func:`prepare` once with its array arguments. The
rule, the same for every operation:

* if any input is a device array, the operation runs on that array's backend and
  device; inputs of another device backend or another device raise
  :class:`~gpukit.errors.DeviceMismatchError` naming both;
* otherwise it runs on the active backend;
* host inputs (NumPy arrays, lists, scalars) reaching a device backend are moved to
  its current device: counted and subject to the transfer guard.

Owners of arrays are found without importing any array library: only backends
already loaded, or whose array module is already in ``sys.modules``, are asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from . import _dtypes, _registry, _transfer
from ._memory import operation
from ._selection import get_backend
from ._virtual import VirtualDeviceArray
from .backend import Backend
from .errors import DeviceMismatchError

__all__ = ["asarray", "namespace", "owner_of", "prepare", "to_numpy"]

_ndarray = np.ndarray
_host_types = (np.ndarray, np.generic, int, float, complex, bool, list, tuple)
# Exact types that are host data for sure; subclasses (a device backend may subclass
# ndarray) are first offered to the device backends.
_exact_host_types = frozenset({np.ndarray, int, float, complex, bool, list, tuple, type(None)})


def owner_of(x: Any) -> Backend | None:
    """The device backend owning ``x``, or None for host data (NumPy, lists, scalars)."""
    if type(x) in _exact_host_types:
        return None
    for backend in _registry.loaded():
        if backend.is_device and backend.owns(x):
            return backend
    return None


def _placement(arrays: Sequence[Any], names: Sequence[str]) -> tuple[Backend | None, int | None]:
    """The (backend, device) of the device arrays among ``arrays``; raise on a mixture."""
    owner = first = None
    device = None
    virtual = virtual_first = None  # virtual CPU devices: host arrays that must not mix
    for x, name in zip(arrays, names, strict=True):
        if x is None or type(x) is _ndarray:
            continue
        if type(x) is VirtualDeviceArray:
            if virtual is None:
                virtual, virtual_first = x.device_id, name
            elif x.device_id != virtual:
                raise DeviceMismatchError(
                    f"argument {name!r} is on numpy:{x.device_id} but argument "
                    f"{virtual_first!r} is on numpy:{virtual}; move one explicitly with "
                    "gk.asarray(x, device=...)"
                )
            continue
        backend = owner_of(x)
        if backend is None:
            continue
        dev = backend.device_of(x)
        if owner is None:
            owner, device, first = backend, dev, name
        elif backend is not owner or dev != device:
            raise DeviceMismatchError(
                f"argument {name!r} is on {backend.name}:{dev} but argument {first!r} is on "
                f"{owner.name}:{device}; move one explicitly, e.g. gk.asarray(x, device=...) "
                "inside gk.use_backend(...)"
            )
    return owner, device


def prepare(*arrays: Any, names: Sequence[str] | None = None) -> tuple[Backend, list[Any]]:
    """Choose the backend for an operation and bring its array inputs there.

    Parameters
    ----------
    *arrays
        The operation's array arguments (``None`` entries pass through).
    names : sequence of str, optional
        The arguments' names, for error messages (default ``x0, x1, ...``).

    Returns
    -------
    backend : Backend
        Where the operation runs.
    arrays : list
        The inputs as that backend's native arrays, on one device.
    """
    if names is None:
        names = [f"x{i}" for i in range(len(arrays))]
    owner, device = _placement(arrays, names)
    backend = owner or get_backend()
    if not backend.is_device:
        return backend, list(arrays)
    if device is None:
        device = backend.current_device()
    out = []
    for x, name in zip(arrays, names, strict=True):
        if x is None or owner_of(x) is backend:
            out.append(x)
            continue
        host = np.asarray(x)
        _transfer.check_implicit(
            name, host.shape, host.dtype, host.nbytes, f"{backend.name}:{device}"
        )
        out.append(backend.asarray(host, device=device))
        _transfer.record("host_to_device", host.nbytes)
    return backend, out


def namespace(*arrays: Any) -> ModuleType:
    """The array namespace the arrays belong to.

    Device arrays give their backend's namespace (``cupy``); host arrays give
    ``numpy``; with no arrays, the active backend's namespace.

    Parameters
    ----------
    *arrays
        Arrays (or scalars, ignored unless they are arrays).

    Returns
    -------
    module
        ``numpy``, ``cupy``, or a plug-in backend's namespace.

    Raises
    ------
    DeviceMismatchError
        Arrays of two device backends, or two devices, were given.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.namespace(np.ones(3)) is np
    True
    """
    if not arrays:
        return get_backend().xp
    owner, _ = _placement(arrays, [f"arrays[{i}]" for i in range(len(arrays))])
    if owner is not None:
        return owner.xp
    if all(isinstance(x, _host_types) for x in arrays):
        return np
    for backend in _registry.loaded():
        if any(backend.owns(x) for x in arrays):
            return backend.xp
    return get_backend().xp


@operation("gk.asarray")
def asarray(obj: Any, dtype: Any = None, device: int | None = None, *, pinned: bool = False) -> Any:
    """Convert ``obj`` to a native array of the active backend (an explicit transfer).

    Parameters
    ----------
    obj : array_like
        Data: a NumPy or CuPy array, nested lists, a scalar.
    dtype : dtype, optional
        Wanted dtype; by default inferred as NumPy would.
    device : int, optional
        Device index for the result; the current device when omitted.
    pinned : bool, default False
        Stage a host-to-device copy through page-locked (pinned) host memory and run it
        asynchronously on the current stream, so the host goes on (preparing the next
        batch) while the device copies; work queued later on that stream waits for it.
        A host array already in pinned memory (:func:`gpukit.empty_pinned`) is copied
        without staging: do not overwrite it until the host has waited for the stream
        (a result read on the host, :func:`gpukit.synchronize`). Ignored on the numpy
        backend and for arrays already on the device. Counted as a transfer like any
        other. See the Memory page.

    Returns
    -------
    array
        A ``numpy.ndarray`` on the numpy backend, a ``cupy.ndarray`` on cupy. No copy is
        made when ``obj`` already is such an array with that dtype and device.

    Raises
    ------
    ValueError
        ``device`` is out of range for the active backend.
    TypeError
        ``obj`` or ``dtype`` is not numeric (strings, objects, datetimes, long double: not
        every backend holds them), or ``obj`` is None, a ``numpy.ma`` masked array (its
        mask would be lost) or a ``numpy.matrix``.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     x = gk.asarray([[1, 2], [3, 4]], dtype="float32")
    >>> x.dtype, x.shape
    (dtype('float32'), (2, 2))
    """
    from ._devices import check_device

    obj = _dtypes.check("gk.asarray", "obj", obj)  # numeric, native order, a real array
    if dtype is not None and np.dtype(dtype).char not in _dtypes.NUMERIC_CHARS:
        raise TypeError(f"gk.asarray: dtype {np.dtype(dtype)} is not {_dtypes.NUMERIC}")
    backend = get_backend()
    if device is not None:
        check_device(backend, device)
    source = owner_of(obj)
    if source is not None and source is not backend:
        obj = to_numpy(obj)  # a device array of another backend goes through the host
        source = None
    if backend.is_device and source is None:
        host = np.asarray(obj, dtype=dtype)
        if pinned:
            out = backend.asarray_pinned(host, device=device)
        else:
            out = backend.asarray(host, device=device)
        _transfer.record("host_to_device", host.nbytes)
        return out
    return backend.asarray(obj, dtype=dtype, device=device)


@operation("gk.to_numpy")
def to_numpy(x: Any) -> np.ndarray:
    """Copy ``x`` to a host ``numpy.ndarray`` (an explicit transfer, always allowed).

    Parameters
    ----------
    x : array_like or ShardedArray
        A native array of any backend, a :class:`gpukit.ShardedArray` (gathered on the
        host), or anything ``numpy.asarray`` accepts.

    Returns
    -------
    numpy.ndarray
        The data on the host; ``x`` itself when it already is a NumPy array.

    Raises
    ------
    TypeError
        ``x`` is None, a ``numpy.ma`` masked array or a ``numpy.matrix``.
    OutOfMemoryError
        The host copy could not be allocated.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.to_numpy(gk.asarray([1, 2, 3])).tolist()
    [1, 2, 3]
    """
    if type(x) is not _ndarray:
        _dtypes.refuse_foreign("gk.to_numpy", "x", x)
    backend = owner_of(x)
    if backend is None:
        from ._sharding import ShardedArray

        return x.to_numpy() if isinstance(x, ShardedArray) else np.asarray(x)
    out = backend.to_numpy(x)
    _transfer.record("device_to_host", out.nbytes)
    return out
