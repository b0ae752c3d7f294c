"""``cupyx.scipy.fft`` (simulated): cuFFT on the current device (cupysim/cufft.py)."""

from __future__ import annotations

import scipy.fft as _sfft
from cupysim import cufft as _cufft
from cupysim import wrap as _wrap

for _n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn"):  # fmt: skip
    globals()[_n] = _cufft.transform(_n, getattr(_sfft, _n))
for _n in ("fftfreq", "rfftfreq", "fftshift", "ifftshift"):
    globals()[_n] = _wrap.function(_n, getattr(_sfft, _n))
next_fast_len = _sfft.next_fast_len
