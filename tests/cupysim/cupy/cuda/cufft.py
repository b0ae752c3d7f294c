"""``cupy.cuda.cufft`` (simulated): the cuFFT module, loaded on first access.

cupy/cuda/__init__.py resolves ``cupy.cuda.cufft`` lazily (``__getattr__``), and importing
cupy/cuda/cufft.pyx loads libcufft through cuda-pathfinder: a missing library is an
ImportError at import (cupysim.libs, ``CUPYSIM_FAIL=libs``).
"""

from __future__ import annotations

from cupysim import libs
from cupysim.cufft import (  # noqa: F401  (cupy/cuda/cufft.pxd: types and directions)
    CUFFT_C2C,
    CUFFT_C2R,
    CUFFT_D2Z,
    CUFFT_FORWARD,
    CUFFT_INVERSE,
    CUFFT_R2C,
    CUFFT_Z2D,
    CUFFT_Z2Z,
)

libs.require("cufft")

#: cufftGetVersion() of the cuFFT shipped with CUDA 13.0 (CUFFT_VERSION 12000).
_VERSION = 12000


def getVersion() -> int:
    """cufft.pyx ``getVersion``: the cuFFT library version."""
    return _VERSION
