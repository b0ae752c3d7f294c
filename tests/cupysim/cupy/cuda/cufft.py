"""``cupy.cuda.cufft`` (simulated): the cuFFT module, loaded on first access.

cupy/cuda/__init__.py resolves ``cupy.cuda.cufft`` lazily (``__getattr__``), and importing
cupy/cuda/cufft.pyx loads libcufft through cuda-pathfinder: a missing library is an
ImportError at import (cupysim.libs, ``CUPYSIM_FAIL=libs``).
"""

from __future__ import annotations

from cupysim import libs

libs.require("cufft")

#: cufftGetVersion() of the cuFFT shipped with CUDA 13.0 (CUFFT_VERSION 12000).
_VERSION = 12000


def getVersion() -> int:
    """cufft.pyx ``getVersion``: the cuFFT library version."""
    return _VERSION
