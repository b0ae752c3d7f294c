"""STAND-IN for sim-core's simulated ``cupy`` package (see SIM_CONTRACT.md).

Just enough of CuPy for the kernel side (sim-kernels) to be developed and tested
before sim-core's arrays, devices and streams land: arrays are NumPy arrays
tagged with a device. sim-core's ``cupy/__init__.py`` replaces this file and
imports the four kernel classes from ``cupy._core``.
"""

from __future__ import annotations

import numpy as _np
from cupysim import runtime as _rt
from numpy import (  # noqa: F401
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

from . import cuda
from ._core._kernel import ElementwiseKernel  # noqa: F401
from ._core._reduction import ReductionKernel  # noqa: F401
from ._core.raw import RawKernel, RawModule  # noqa: F401

__version__ = "14.2.0"


class ndarray(_np.ndarray):
    def __array_finalize__(self, obj):
        self._device_id = getattr(obj, "_device_id", _rt.current_device())

    @property
    def device(self):
        return cuda.Device(self._device_id)

    @property
    def data(self):
        return cuda.MemoryPointer(
            cuda.memory.UnownedMemory(self.ctypes.data, self.nbytes, None, self._device_id), 0
        )

    def get(self):
        return _np.array(self.view(_np.ndarray))


def _wrap(a):
    out = _np.asarray(a).view(ndarray)
    out._device_id = _rt.current_device()
    return out


def empty(shape, dtype=float, order="C"):
    return _wrap(_np.empty(shape, dtype, order))


def empty_like(a, dtype=None):
    return _wrap(_np.empty_like(_np.asarray(a), dtype=dtype))


def zeros(shape, dtype=float):
    return _wrap(_np.zeros(shape, dtype))


def full(shape, value, dtype=None):
    return _wrap(_np.full(shape, value, dtype))


def arange(*args, **kwargs):
    return _wrap(_np.arange(*args, **kwargs))


def asarray(a, dtype=None):
    if isinstance(a, ndarray) and (dtype is None or a.dtype == dtype):
        return a
    return _wrap(_np.array(_np.asarray(a), dtype=dtype, copy=True))


array = asarray


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray) and a.flags.c_contiguous and (dtype is None or a.dtype == dtype):
        return a
    dev = a._device_id if isinstance(a, ndarray) else _rt.current_device()
    out = _wrap(_np.ascontiguousarray(_np.asarray(a), dtype=dtype))
    out._device_id = dev
    return out


def asnumpy(a):
    return _np.array(_np.asarray(a))


dtype = _np.dtype


def __getattr__(name):
    fn = getattr(_np, name)
    if not callable(fn):
        return fn

    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        return _wrap(out) if isinstance(out, _np.ndarray) else out

    return wrapped
