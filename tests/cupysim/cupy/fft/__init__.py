"""``cupy.fft`` (simulated): the transforms of cupy/fft/_fft.py on the simulated cuFFT
plans (cupysim/cufft.py)."""

from __future__ import annotations

from cupy.fft._config import config
from cupy.fft._fft import (  # noqa: F401
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

# cupy/fft/__init__.py: ``config`` is importable as a module too (``import cupy.fft.config``)
__import__("sys").modules[__name__ + ".config"] = config
