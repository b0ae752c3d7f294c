"""Direct access to the fused kernels of ``gk.kernels`` for arrays already validated.

Layers, losses and optimizers validate and place their arrays once (at construction or
in the module's ``__call__``), so their hot paths call the owning backend's kernel
directly instead of re-validating through the public ``gk.kernels`` front-end.
"""

from __future__ import annotations

from typing import Any

from .. import _dispatch, _registry

__all__ = ["kernel"]

_cache: dict[tuple[type, str], Any] = {}


def kernel(data: Any, name: str) -> Any:
    """The implementation of ``gk.kernels.<name>`` on the backend owning ``data``."""
    key = (type(data), name)
    found = _cache.get(key)
    if found is None:
        owner = _dispatch.owner_of(data) or _registry.load("numpy")
        found = _cache[key] = owner.kernel(name)
    return found
