"""``cupy.fft`` (simulated): cuFFT on the current device (cupysim/cufft.py)."""

from __future__ import annotations

import numpy as _numpy
import scipy.fft as _sfft
from cupysim import cufft as _cufft
from cupysim import wrap as _wrap

from cupy.fft._config import config

# cupy/fft/__init__.py: ``config`` is importable as a module too (``import cupy.fft.config``)
__import__("sys").modules[__name__ + ".config"] = config

for _n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft"):  # fmt: skip
    globals()[_n] = _cufft.transform(_n, getattr(_sfft, _n))
for _n in ("fftfreq", "rfftfreq", "fftshift", "ifftshift"):
    globals()[_n] = _wrap.function(_n, getattr(_numpy.fft, _n))
