"""Where arrays live: the owning backend and device of each input.

:func:`placement` is the rule every operation follows: if any input is a device array,
the operation runs on that array's backend and device; inputs of another device backend
or another device raise :class:`~gpukit.errors.DeviceMismatchError` naming both. Virtual
CPU devices (:mod:`gpukit._host.virtual`) follow the same rule.

Owners of arrays are found without importing any array library: only backends already
loaded, or whose array module is already in ``sys.modules``, are asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from .._host.virtual import VirtualDeviceArray
from .._select import registry as _registry
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import DeviceMismatchError

__all__ = ["first_device", "namespace", "owner_of", "placement"]

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


def first_device(values: Iterable[Any]) -> tuple[Backend, int] | None:
    """The (backend, device) of the first device array among ``values``, else None.

    No mixture check: :func:`placement` refuses mixtures with the arguments' names.
    """
    for x in values:
        if type(x) in _exact_host_types:
            continue
        backend = owner_of(x)
        if backend is not None:
            return backend, backend.device_of(x)
    return None


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
    owner, _ = placement(arrays, [f"arrays[{i}]" for i in range(len(arrays))])
    if owner is not None:
        return owner.xp
    if all(isinstance(x, _host_types) for x in arrays):
        return np
    for backend in _registry.loaded():
        if any(backend.owns(x) for x in arrays):
            return backend.xp
    return get_backend().xp
