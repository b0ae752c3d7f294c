"""FFTs on the host: ``scipy.fft`` on every core, or pyFFTW when asked for.

The engine is chosen per call from ``GPUKIT_FFT_ENGINE``: ``auto`` (default) and
``scipy`` mean ``scipy.fft`` (pocketfft, threads for batches); ``pyfftw`` the FFTW
library through pyFFTW (the GPL ``fftw`` extra, opt-in), see :mod:`gpukit_numpy._fftw`.
``auto`` does not switch to pyFFTW because it is installed: FFTW with its quick
(estimating) planner runs large 2-D transforms several times slower than
``scipy.fft``, and its measuring planner costs seconds per new shape, so an installed
optional engine would make the default slower either way (docs/fft.rst has figures).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

import numpy as np

from gpukit.backend._ops.fft import HERMITIAN, hermitian

ENGINE_VAR = "GPUKIT_FFT_ENGINE"
_ENGINES = ("auto", "scipy", "pyfftw")
# The one-axis functions of scipy.fft for the n-d kinds: the same pocketfft call, without
# fftn's argument normalisation (16 complex points: 3.4 us against 5.3 us a call).
_ONE_AXIS = {"fftn": "fft", "ifftn": "ifft", "rfftn": "rfft", "irfftn": "irfft"}
_parsed: tuple[str | None, str] = (None, "scipy")  # last GPUKIT_FFT_ENGINE text, parsed


@functools.cache
def _have_pyfftw() -> bool:
    return importlib.util.find_spec("pyfftw") is not None


def engine_name() -> str:
    """The engine ``GPUKIT_FFT_ENGINE`` selects now (``scipy`` or ``pyfftw``).

    The variable is read on every call (a program may switch engines between
    transforms); its text is parsed again only when it changed.
    """
    global _parsed
    raw = os.environ.get(ENGINE_VAR)
    if raw == _parsed[0]:
        choice = _parsed[1]
    else:
        choice = (raw or "auto").strip().lower() or "auto"
        if choice not in _ENGINES:
            raise ValueError(f"{ENGINE_VAR}={choice!r} is not one of {', '.join(_ENGINES)}")
        choice = "pyfftw" if choice == "pyfftw" else "scipy"
        _parsed = (raw, choice)  # one tuple: a thread reading it sees both halves or neither
    if choice == "pyfftw" and not _have_pyfftw():
        raise ImportError(
            f"{ENGINE_VAR}=pyfftw but pyFFTW is not installed; "
            'pip install "gpukit[fftw]" (GPL) or set GPUKIT_FFT_ENGINE=scipy'
        )
    return choice


class NumpyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with a multi-threaded engine."""

    def fft_engine(self) -> str:
        return engine_name()

    def fft_transform(
        self,
        kind: str,
        x: Any,
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Any:
        if engine_name() == "pyfftw":
            from . import _fftw

            if kind in HERMITIAN:  # FFTW has no Hermitian plans: the real ones do it
                return hermitian(self.fft_transform, np, kind, x, s, axes, norm, workers)
            return _fftw.transform(kind, x, s, axes, norm, workers)
        import scipy.fft

        if len(axes) == 1 and kind in _ONE_AXIS:
            one = getattr(scipy.fft, _ONE_AXIS[kind])
            return one(x, n=s[0], axis=axes[0], norm=norm, workers=workers)
        return getattr(scipy.fft, kind)(x, s=s, axes=axes, norm=norm, workers=workers)
