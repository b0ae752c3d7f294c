"""gpukit beyond one machine, on Dask (``gk.distributed``).

Public gpukit operations accept ``dask.array.Array`` arguments and return lazy Dask
arrays: each chunk runs through gpukit on the worker that holds it, on that chunk's
backend and device. This package holds those implementations (``_fft``, ``_kernels``,
``_krylov``, ``_linalg``, ``_matmul``, ``_nn``, over ``_chunks``), :func:`client`, and
the conversions between :class:`gpukit.ShardedArray` and Dask arrays (``_convert``).
Only the "dask" array kind (``_kind``) loads with gpukit; the rest loads on first access
or on the first call that meets a Dask array. It needs ``pip install "gpukit[dask]"``;
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

import importlib
from typing import TYPE_CHECKING, Any

from . import _kind  # noqa: F401 (registers the "dask" array kind; gpukit imports it)

if TYPE_CHECKING:
    from ._client import client, close
    from ._convert import from_dask, to_dask

__all__ = ["client", "close", "from_dask", "to_dask"]
# The module defining each public name, imported on first access (``import gpukit`` imports
# this package for its kind alone).
_HOMES = {"client": "_client", "close": "_client", "from_dask": "_convert", "to_dask": "_convert"}


def __getattr__(name: str) -> Any:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
