"""gpukit: one backend-agnostic API for scientific computing on NumPy/SciPy and CuPy.

The backend is chosen late (``GPUKIT_BACKEND``, read at first use) and scoped per
context (:func:`use_backend`). Arrays are the backends' own: ``numpy.ndarray`` or
``cupy.ndarray``, never wrapped. ``import gpukit`` imports neither CuPy nor heavy
SciPy submodules; the numerical namespaces load on first attribute access.

Examples
--------
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     x = gk.asarray([3.0, 4.0])
>>> float(gk.xp.linalg.norm(x))
5.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from ._dispatch import asarray, namespace, to_numpy
from ._dispatch.capabilities import Capability
from ._matmul import matmul
from ._runtime.devices import device, device_count, devices, synchronize
from ._runtime.memlimit import set_memory_limit
from ._runtime.memstats import MemoryStats, empty_cache, memory_stats
from ._runtime.pinned import empty_pinned
from ._runtime.transfer import reset_transfer_stats, transfer_guard, transfer_stats
from ._select.registry import (
    BackendStatus,
    available_backends,
    register_backend,
    unregister_backend,
)
from ._select.selection import get_backend, selection_reason, set_backend, use_backend
from ._user_kernels import elementwise, reduction
from ._version import __version__
from .backend import Backend, Device
from .distributed import _kind as _dask_kind  # noqa: F401 (registers the "dask" array kind)
from .errors import (
    BackendUnavailableError,
    ConvergenceWarning,
    DeviceMismatchError,
    GpukitError,
    GpukitWarning,
    LinAlgError,
    NonFiniteError,
    OutOfMemoryError,
    TransferGuardError,
    UnknownBackendError,
)
from .sharding._array import ShardedArray, map_shards, shard
from .sharding._reshard import reshard

__all__ = [
    "Backend",
    "BackendStatus",
    "BackendUnavailableError",
    "Capability",
    "ConvergenceWarning",
    "Device",
    "DeviceMismatchError",
    "GpukitError",
    "GpukitWarning",
    "LinAlgError",
    "MemoryStats",
    "NonFiniteError",
    "OutOfMemoryError",
    "ShardedArray",
    "TransferGuardError",
    "UnknownBackendError",
    "__version__",
    "asarray",
    "available_backends",
    "capabilities",
    "device",
    "device_count",
    "devices",
    "elementwise",
    "empty_cache",
    "empty_pinned",
    "errors",
    "get_backend",
    "map_shards",
    "matmul",
    "memory_stats",
    "namespace",
    "reduction",
    "register_backend",
    "reset_transfer_stats",
    "reshard",
    "selection_reason",
    "set_backend",
    "set_memory_limit",
    "shard",
    "synchronize",
    "to_numpy",
    "transfer_guard",
    "transfer_stats",
    "unregister_backend",
    "use_backend",
    "xp",
]

# Submodules imported on first access, so `import gpukit` stays cheap.
_LAZY_SUBMODULES: frozenset[str] = frozenset(
    {"distributed", "fft", "kernels", "linalg", "nn", "optim", "sharding", "sparse"}
)
# Functions whose module imports every area, found on first access for the same reason.
_LAZY_FUNCTIONS: dict[str, str] = {"capabilities": "._capabilities"}


if TYPE_CHECKING:
    # What the module __getattr__ below provides, spelled out for type checkers (which would
    # otherwise take every gk.<name>, typos included, as Any).
    from . import distributed as distributed
    from . import fft as fft
    from . import kernels as kernels
    from . import linalg as linalg
    from . import nn as nn
    from . import optim as optim
    from . import sharding as sharding
    from . import sparse as sparse
    from ._capabilities import capabilities as capabilities

    xp: Any  # numpy or cupy, whichever backend is active at the access
else:

    def __getattr__(name: str) -> Any:
        if name == "xp":  # the active backend's namespace: resolved on every access
            return get_backend().xp
        if name in _LAZY_SUBMODULES:
            module = importlib.import_module(f"{__name__}.{name}")
            globals()[name] = module
            return module
        if name in _LAZY_FUNCTIONS:
            value = getattr(importlib.import_module(_LAZY_FUNCTIONS[name], __name__), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module 'gpukit' has no attribute {name!r}")


def __dir__() -> list[str]:  # the public API and public submodules, not the imports
    return sorted({*__all__, *_LAZY_SUBMODULES, "backend"})
