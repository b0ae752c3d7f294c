"""FFTs on the host through ``scipy.fft``, on every core.

Every transform is a ``scipy.fft`` call, so a user's ``scipy.fft.set_backend(...)``
(global or as a context manager) decides which library computes it: pocketfft, SciPy's
own, by default, or any library registered as a ``scipy.fft`` backend (pyFFTW, mkl_fft).
"""

from __future__ import annotations

from typing import Any

# The one-axis functions of scipy.fft for the n-d kinds: the same pocketfft call, without
# fftn's argument normalisation, which dominates a small transform.
_ONE_AXIS = {"fftn": "fft", "ifftn": "ifft", "rfftn": "rfft", "irfftn": "irfft"}


class NumpyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with ``scipy.fft`` and its threads."""

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
        import scipy.fft

        if len(axes) == 1 and kind in _ONE_AXIS:
            one = getattr(scipy.fft, _ONE_AXIS[kind])
            return one(x, n=s[0], axis=axes[0], norm=norm, workers=workers)
        return getattr(scipy.fft, kind)(x, s=s, axes=axes, norm=norm, workers=workers)
