"""Where arrays live: the owning backend and device of each input.

:func:`placement` is the rule every operation follows: if any input is a device array,
the operation runs on that array's backend and device; inputs of another device backend
or another device raise :class:`~gpukit.errors.DeviceMismatchError` naming both. Virtual
CPU devices (:mod:`gpukit._host.virtual`) follow the same rule.

Owners of arrays are found without importing any array library: only backends already
loaded, or whose array module is already in ``sys.modules``, are asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from .._host.virtual import VirtualDeviceArray
from .._select import registry as _registry
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import DeviceMismatchError
from . import plans as _plans

__all__ = ["namespace", "owner_of", "placement", "settled"]

_ndarray = np.ndarray
_host_types = (np.ndarray, np.generic, int, float, complex, bool, list, tuple)
# Exact types that are host data for sure; subclasses (a device backend may subclass
# ndarray) are first offered to the device backends.
_exact_host_types = frozenset({np.ndarray, int, float, complex, bool, list, tuple, type(None)})


# type -> its device backend or None: ``Backend.owns`` answers by type (the contract)
_owners = _plans.table()


def owner_of(x: Any) -> Backend | None:
    """The device backend owning ``x``, or None for host data (NumPy, lists, scalars)."""
    t = type(x)
    if t in _exact_host_types:
        return None
    try:
        return _owners[t]
    except KeyError:
        pass
    since = _plans.generation()
    owner = None
    for backend in _registry.loaded():
        if backend.is_device and backend.owns(x):
            owner = backend
            break
    return _plans.remember(_owners, t, owner, since)


def placement(arrays: Sequence[Any], names: Sequence[str]) -> tuple[Backend | None, int | None]:
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


def settled(selected: Backend | None, arrays: Sequence[Any]) -> Backend | None:
    """Where an operation on ``arrays`` runs while ``selected`` is active (None: no backend
    resolved yet), when that follows from their types alone and nothing is left to do per
    call; else None.

    Nothing is left to do when no argument needs moving (host data on a host backend,
    arrays of a device backend on that backend) and no device needs comparing (that
    backend has one device, or there is one array: the operation runs on its device,
    made current by :func:`gpukit._dispatch.operation`; no virtual CPU device arrays).
    Otherwise, and for a mixture of device backends, :func:`placement` decides, and
    raises, call by call. Device arrays never consult the selection, so they settle
    before one is resolved (a script that hands gpukit only CuPy arrays never resolves
    one); host data waits for it.
    """
    owners = set()
    count = 0
    for x in arrays:
        if x is None:
            continue
        if type(x) is VirtualDeviceArray:
            return None
        owners.add(owner_of(x))
        count += 1
    if not owners or owners == {None}:
        return None if selected is None or selected.is_device else selected
    if len(owners) > 1:
        return None
    (backend,) = owners
    return backend if count == 1 or backend.device_count() == 1 else None


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
    for x in arrays:
        if type(x) is not _ndarray:
            break
    else:  # NumPy arrays alone: host data, no device to compare
        return np
    if len(arrays) == 1 and (owner := owner_of(arrays[0])) is not None:
        return owner.xp  # one device array: no device to compare either
    owner, _ = placement(arrays, [f"arrays[{i}]" for i in range(len(arrays))])
    if owner is not None:
        return owner.xp
    if all(isinstance(x, _host_types) for x in arrays):
        return np
    for backend in _registry.loaded():
        if any(backend.owns(x) for x in arrays):
            return backend.xp
    return get_backend().xp
