"""gpukit beyond one machine, on Dask (``gk.distributed``).

Public gpukit operations accept ``dask.array.Array`` arguments and return lazy Dask
arrays: each chunk runs through gpukit on the worker that holds it, on that chunk's
backend and device. This package holds those implementations (imported on the first
call that meets a Dask array), :func:`client`, and the conversions between
:class:`gpukit.ShardedArray` and Dask arrays. It needs ``pip install "gpukit[dask]"``;
docs/distributed.rst describes the model and the set-ups.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> import gpukit as gk
>>> x = da.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
>>> y = gk.fft.rfft(x)  # lazy: one batch of transforms per chunk
>>> y.chunks, bool(np.allclose(y.compute(), np.fft.rfft(x.compute())))
(((2, 2), (2,)), True)
"""

from __future__ import annotations

from . import _fft, _kernels, _krylov, _linalg, _matmul, _nn  # noqa: F401 (register the Dask implementations)
from ._client import client, close
from ._convert import from_dask, to_dask

__all__ = ["client", "close", "from_dask", "to_dask"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
