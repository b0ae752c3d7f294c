"""FFTs on the host: ``scipy.fft`` on all cores, or pyFFTW with its plan cache.

The engine is chosen per call from ``GPUKIT_FFT_ENGINE``: ``auto`` (default) takes
pyFFTW when it imports (the GPL ``fftw`` extra, opt-in) and ``scipy.fft`` otherwise;
``scipy`` or ``pyfftw`` force one. Both run with ``workers=-1`` (every core).
pyFFTW plans with ``GPUKIT_FFTW_PLANNER`` (default ``FFTW_MEASURE``: slower first call
per shape, faster afterwards) and keeps plans in its interface cache.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from types import ModuleType
from typing import Any

ENGINE_VAR = "GPUKIT_FFT_ENGINE"
PLANNER_VAR = "GPUKIT_FFTW_PLANNER"
_ENGINES = ("auto", "scipy", "pyfftw")
#: Seconds an unused pyFFTW plan stays cached (pyFFTW's default, 0.1 s, drops plans
#: between the calls of a typical loop that does other work in between).
_PLAN_KEEPALIVE = 60.0


@functools.cache
def _have_pyfftw() -> bool:
    return importlib.util.find_spec("pyfftw") is not None


@functools.cache
def _pyfftw() -> ModuleType:
    import pyfftw.interfaces.cache
    import pyfftw.interfaces.scipy_fft

    pyfftw.interfaces.cache.enable()
    pyfftw.interfaces.cache.set_keepalive_time(_PLAN_KEEPALIVE)
    return pyfftw.interfaces.scipy_fft


def engine_name() -> str:
    """The engine ``GPUKIT_FFT_ENGINE`` selects now (``scipy`` or ``pyfftw``)."""
    choice = os.environ.get(ENGINE_VAR, "auto").strip().lower() or "auto"
    if choice not in _ENGINES:
        raise ValueError(f"{ENGINE_VAR}={choice!r} is not one of {', '.join(_ENGINES)}")
    if choice == "auto":
        return "pyfftw" if _have_pyfftw() else "scipy"
    if choice == "pyfftw" and not _have_pyfftw():
        raise ImportError(
            f"{ENGINE_VAR}=pyfftw but pyFFTW is not installed; "
            'pip install "gpukit[fftw]" (GPL) or set GPUKIT_FFT_ENGINE=scipy'
        )
    return choice


def _planner() -> str:
    return os.environ.get(PLANNER_VAR, "FFTW_MEASURE").strip().upper()


class NumpyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with a multi-threaded engine."""

    def fft_engine(self) -> str:
        return engine_name()

    def fft_transform(
        self, kind: str, x: Any, s: tuple[int, ...], axes: tuple[int, ...], norm: str | None
    ) -> Any:
        # pyFFTW's Hermitian transforms are not FFTW plans (they wrap its irfft and refuse
        # length-1 inputs that NumPy accepts), so those stay with scipy.fft.
        if kind not in ("hfftn", "ihfftn") and engine_name() == "pyfftw":
            return getattr(_pyfftw(), kind)(
                x, s=s, axes=axes, norm=norm, workers=-1, planner_effort=_planner()
            )
        import scipy.fft

        return getattr(scipy.fft, kind)(x, s=s, axes=axes, norm=norm, workers=-1)
