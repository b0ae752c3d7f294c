"""Compiling the ``.cu`` sources lazily, once per device (RawModule kernels)."""

from __future__ import annotations

import threading
from functools import cache

import cupy
import numpy as np

from gpukit.backend.kernels import cuda_sources

from ..cuda_sources import source

BLOCK = 256
#: cudaGetDevice, bound once: the launchers ask it on every call (three module look-ups less)
current_device = cupy.cuda.runtime.getDevice

_modules: dict[tuple[str, int], cupy.RawModule] = {}
#: (file, name expression, device) -> the kernel: ``RawModule.get_function`` makes a new
#: ``RawKernel`` on every call (and looks its function up again), a launch's worth of
#: host time for a launcher that asks per call
_functions: dict[tuple[str, str, int], cupy.RawKernel] = {}
_lock = threading.Lock()


def function(filename: str, name_expression: str) -> cupy.RawKernel:
    """The kernel ``name_expression`` of ``filename``, compiled for the current device."""
    key = (filename, name_expression, current_device())
    found = _functions.get(key)
    if found is None:
        with _lock:
            found = _functions.get(key)
            if found is None:
                found = _functions[key] = _module(filename, key[2]).get_function(name_expression)
    return found


def _module(filename: str, device: int) -> cupy.RawModule:
    """``filename``'s module for ``device`` (current), compiled once; the caller holds
    ``_lock``."""
    module = _modules.get((filename, device))
    if module is None:
        module = _modules[(filename, device)] = cupy.RawModule(
            code=source(filename),
            options=("--std=c++17",),
            name_expressions=list(cuda_sources()[filename]),
        )
    return module


@cache
def _sm_count(device: int) -> int:
    return int(cupy.cuda.Device(device).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device."""
    return _sm_count(current_device())


def ctype(dtype: np.dtype) -> str:
    return "float" if dtype == np.float32 else "double"


def scalar(dtype: np.dtype, value: float):
    """``value`` as the kernel's ``T`` argument (RawKernel passes NumPy scalars by type)."""
    return dtype.type(value)


def index(value: int) -> np.int64:
    """A ``gk_index`` (long long) argument."""
    return np.int64(value)
