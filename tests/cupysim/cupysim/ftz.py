"""Single-precision flush-to-zero, as CuPy compiles every kernel.

CuPy adds ``-ftz=true`` to the options of every kernel it compiles
(``cupy/cuda/compiler.py``, ``_compile_with_cache_cuda``: ``options += ('-ftz=true',)``),
so its ufuncs, reductions, ``ElementwiseKernel``, ``ReductionKernel`` and ``RawKernel``
alike flush single-precision subnormals to a zero of the same sign: as operands of
arithmetic, comparisons and conversions, and as results (the PTX ISA's ``.ftz`` modifier
on the ``.f32`` forms of ``add``, ``mul``, ``fma``, ``div``, ``sqrt``, ``setp``, ``min``,
``max`` and ``cvt``). Double precision is never flushed, and copies that do no arithmetic
keep the bits. An H200 run of gpukit's tests showed it: float32 norms of 1e-42 entries
came back 0, a ReLU's gradient at a positive subnormal 0 (docs/benchmarks).

The simulator runs such a kernel on the host with the x86 MXCSR's FTZ and DAZ bits set,
the same rule for SSE/AVX single precision, whenever one of its array operands is float32
or complex64: here for the operations it computes with NumPy (:func:`flushing` around
them), in ``runtime/scheduler.cpp`` for compiled kernels (each worker thread of a launch
sets and restores its own MXCSR). MXCSR also governs double precision, so a double result
below 2.2e-308 inside such a kernel is flushed too: stricter than the GPU, never more
lenient. cuBLAS, cuFFT and cuSOLVER are not compiled by CuPy and are not flushed here.
On a host other than x86-64 Linux with glibc the NumPy-computed operations are not
flushed (:data:`MODELLED` is False).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import Any

import numpy as np

_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))
_FTZ_DAZ = 0x8040  # MXCSR bit 15 flush-to-zero, bit 6 denormals-are-zero


class _Fenv(ctypes.Structure):
    """glibc's x86-64 ``fenv_t``: the x87 environment (28 bytes), then ``__mxcsr``."""

    _fields_ = [("x87", ctypes.c_ubyte * 28), ("mxcsr", ctypes.c_uint32)]


def _libm():
    if platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("m") or "libm.so.6"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


_LIBM = _libm()
#: Whether this host can model the flush (x86-64 Linux with glibc's fenv).
MODELLED = _LIBM is not None and ctypes.sizeof(_Fenv) == 32


def single_precision(operands: Iterable[Any]) -> bool:
    """Whether any of ``operands`` (arrays, or dtypes) is float32 or complex64."""
    return any(getattr(a, "dtype", a) in _SINGLE for a in operands)


@contextmanager
def flushing(on: bool = True):
    """Single-precision subnormals flushed to zero in this thread while inside (if ``on``)."""
    if not (on and MODELLED):
        yield
        return
    env = _Fenv()
    _LIBM.fegetenv(ctypes.byref(env))
    saved = env.mxcsr
    env.mxcsr = saved | _FTZ_DAZ
    _LIBM.fesetenv(ctypes.byref(env))
    try:
        yield
    finally:
        _LIBM.fegetenv(ctypes.byref(env))
        env.mxcsr = saved
        _LIBM.fesetenv(ctypes.byref(env))


def wrap(body: Callable[[], Any], arrays: Iterable[Any]) -> Callable[[], Any]:
    """``body`` run under :func:`flushing` when one of ``arrays`` is single precision
    (for launches that may run later, on a deferred stream)."""
    if not (MODELLED and single_precision(arrays)):
        return body

    def flushed():
        with flushing():
            return body()

    return flushed
