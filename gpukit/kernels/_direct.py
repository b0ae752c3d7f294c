"""The kernels of ``gk.kernels`` without the front-end's checks, for validated arrays.

Layers, losses and optimizers (:mod:`gpukit.nn`, :mod:`gpukit.optim`) validate and place
their arrays once (at construction or in the module's ``__call__``), so their hot paths
call the owning backend's kernel through here instead of re-validating through the
public functions. It is the only way ``gpukit.nn`` reaches a backend's kernels.
"""

from __future__ import annotations

from typing import Any

from .. import _dispatch
from .._select import registry as _registry

__all__ = ["bound", "kernel"]

_cache: dict[tuple[type, str], Any] = {}


def kernel(data: Any, name: str) -> Any:
    """The implementation of ``gk.kernels.<name>`` on the backend owning ``data``."""
    key = (type(data), name)
    found = _cache.get(key)
    if found is None:
        owner = _dispatch.owner_of(data) or _registry.load("numpy")
        found = _cache[key] = owner.kernel(name)
    return found


def bound(data: Any, name: str, args: tuple[Any, ...]) -> Any:
    """:func:`kernel` bound to arguments like ``args`` (``data`` first) where the backend's
    kernel binds (:func:`gpukit.kernels._checks.bind`), else the kernel itself: for a
    caller whose arrays keep their types, dtypes and shapes from call to call."""
    found = kernel(data, name)
    binder = getattr(found, "bind", None)
    return found if binder is None else binder(*args)
