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

Importing this module registers the implementations; gpukit imports it on the first
call that needs one.

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

from . import _convert  # noqa: F401  (registers gk.asarray, gk.to_numpy, gk.shard, gk.namespace)
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
    "Replicated",
    "dot",
    "fft",
    "fft2",
    "fftn",
    "fftshift",
    "hfft",
    "hfft2",
    "hfftn",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "ihfft2",
    "ihfftn",
    "irfft",
    "irfft2",
    "irfftn",
    "matmul",
    "norm",
    "replicate",
    "rfft",
    "rfft2",
    "rfftn",
    "sum",
    "vdot",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
