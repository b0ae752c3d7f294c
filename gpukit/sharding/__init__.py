"""Operations on :class:`gpukit.ShardedArray`: the explicit spelling of the sharded API.

Every public gpukit function given a sharded array runs its sharded implementation,
and the ones here are those implementations: ``gk.fft.fft2(x)`` *is*
``gk.sharding.fft2(x)``, ``gk.linalg.norm(x)`` is ``gk.sharding.norm(x)``,
``gk.matmul(a, b)`` and ``a @ b`` are ``gk.sharding.matmul(a, b)``. The FFTs here also
take ``transposed_out`` (see :func:`fft2`). Operators, NumPy ufuncs and reductions work
on sharded arrays directly (``x + y``, ``numpy.sin(x)``, ``x.sum()``).

Each operation runs one task per device on that device's worker thread and stream
(:mod:`gpukit._runtime.workers`). Reductions combine the per-device partial results on
the first device in device order (0, 1, ..., N-1), so a result is the same on every
run with the same devices; they return a native array there, and the host waits only
when it reads it. Communication between devices goes through the backend's
collectives: all-gathers for products with a sharded right operand, one all-to-all
per transpose of the distributed FFT (:func:`gpukit.reshard`).

The array type and its machinery load with gpukit, which exports them:
:class:`gpukit.ShardedArray`, ``gk.shard``, ``gk.map_shards`` and ``gk.reshard``
(``_array``, ``_layout``, ``_reshard``, and the array's operators, reductions and NumPy
interoperability in ``_elementwise``, ``_reduce`` and ``_interop``). The operations,
which build on ``gk.fft``, ``gk.linalg`` and ``gk.matmul`` (``_fft``, ``_matmul``,
``_reductions``, ``_krylov`` for the Krylov solvers, ``_convert`` for the conversions),
load on first access or on the first call that meets a sharded array, so ``import
gpukit`` stays cheap.

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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._fft import (
        fft,
        fft2,
        fftn,
        fftshift,
        hfft,
        hfft2,
        hfftn,
        ifft,
        ifft2,
        ifftn,
        ifftshift,
        ihfft,
        ihfft2,
        ihfftn,
        irfft,
        irfft2,
        irfftn,
        rfft,
        rfft2,
        rfftn,
    )
    from ._matmul import Replicated, matmul, replicate
    from ._reductions import dot, norm, sum, vdot

__all__ = [
    "Replicated", "dot", "fft", "fft2", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
    "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn",
    "matmul", "norm", "replicate", "rfft", "rfft2", "rfftn", "sum", "vdot",
]  # fmt: skip
# The module defining each operation (every other one: _fft), imported on first access.
_HOMES = {
    "_matmul": ("Replicated", "matmul", "replicate"),
    "_reductions": ("dot", "norm", "sum", "vdot"),
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = next((m for m, names in _HOMES.items() if name in names), "_fft")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
