"""Compiling the ``.cu`` sources lazily, once per device (RawModule kernels)."""

from __future__ import annotations

import threading
from functools import cache

import cupy
import numpy as np

from gpukit.backend.kernels import cuda_sources

from ..cuda_sources import source

BLOCK = 256

_modules: dict[tuple[str, int], cupy.RawModule] = {}
_lock = threading.Lock()


def function(filename: str, name_expression: str) -> cupy.RawKernel:
    """The kernel ``name_expression`` of ``filename``, compiled for the current device."""
    key = (filename, cupy.cuda.Device().id)
    module = _modules.get(key)
    if module is None:
        with _lock:
            module = _modules.get(key)
            if module is None:
                module = cupy.RawModule(
                    code=source(filename),
                    options=("--std=c++17",),
                    name_expressions=list(cuda_sources()[filename]),
                )
                _modules[key] = module
    return module.get_function(name_expression)


@cache
def _sm_count(device: int) -> int:
    return int(cupy.cuda.Device(device).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device."""
    return _sm_count(cupy.cuda.Device().id)


def ctype(dtype: np.dtype) -> str:
    return "float" if dtype == np.float32 else "double"


def scalar(dtype: np.dtype, value: float):
    """``value`` as the kernel's ``T`` argument (RawKernel passes NumPy scalars by type)."""
    return dtype.type(value)


def index(value: int) -> np.int64:
    """A ``gk_index`` (long long) argument."""
    return np.int64(value)
