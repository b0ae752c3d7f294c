"""FFTs on the host through ``scipy.fft``, on every core.

Every transform is a ``scipy.fft`` call, so a user's ``scipy.fft.set_backend(...)``
(global or as a context manager) decides which library computes it: pocketfft, SciPy's
own, by default, or any library registered as a ``scipy.fft`` backend (pyFFTW, mkl_fft).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from gpukit.backend._ops.fft import library_call

_scipy_fft: ModuleType | None = None  # imported by the first transform, not with gpukit


def _library() -> ModuleType:
    global _scipy_fft
    import scipy.fft

    _scipy_fft = scipy.fft
    return scipy.fft


class NumpyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with ``scipy.fft`` and its threads."""

    #: scipy.fft transforms a real input without a complex copy (pocketfft's real path).
    fft_takes_real = True

    def fft_engine(self) -> str:
        return "scipy"

    def fft_transform(
        self,
        kind: str,
        x: Any,
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Any:
        return self.fft_plan(kind, x.shape, s, axes, norm, workers)(x)

    def fft_plan(
        self,
        kind: str,
        shape: tuple[int, ...],
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Callable[[Any], Any]:
        lib = _scipy_fft or _library()
        return library_call(lib, kind, shape, s, axes, norm, workers=workers)
