"""Dispatch: how a public operation gets from its arguments to one backend call.

Owns the decorator every public operation wears (:func:`operation`: array kinds such as
sharded or Dask arrays go to their own implementations, everything else runs under the
memory policy), the front-end input checks shared by every operation
(:mod:`~gpukit._dispatch.dtypes`), and :func:`prepare`, which picks the backend and
device and moves host inputs there (``gk.asarray``, ``gk.to_numpy`` too).

May use: :mod:`gpukit._runtime` (placement, transfers, memory), :mod:`gpukit._select`,
the backend contract :mod:`gpukit.backend` and :mod:`gpukit.errors`. Never imports a
backend package nor an API module.
"""

from .._runtime.placement import namespace as _namespace
from .._runtime.placement import owner_of
from .decorator import operation
from .inputs import asarray, checked_device, prepare, remember_checked, to_numpy
from .kinds import implements, register_kind, reject

# gk.namespace of a sharded (or other kind of) array is its kind's answer
namespace = operation("gk.namespace")(_namespace)

__all__ = [
    "asarray",
    "checked_device",
    "implements",
    "namespace",
    "operation",
    "owner_of",
    "prepare",
    "register_kind",
    "reject",
    "remember_checked",
    "to_numpy",
]
