"""FFTs on the GPU: cuFFT through ``cupyx.scipy.fft``.

CuPy caches cuFFT plans per device (``cupy.fft.config.get_plan_cache()``, by default
16 plans and no memory bound), so repeated transforms of one shape skip planning.
``workers`` (CPU threads) has no meaning here and is ignored.
"""

from __future__ import annotations

from typing import Any


class CupyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with cuFFT on the array's device."""

    def fft_engine(self) -> str:
        return "cufft"

    def fft_transform(
        self,
        kind: str,
        x: Any,
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Any:
        import cupyx.scipy.fft

        with x.device:  # plans and launches on the device the data lives on
            return getattr(cupyx.scipy.fft, kind)(x, s=s, axes=axes, norm=norm)

    def fft_shift(self, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
        import cupy

        with x.device:
            return (cupy.fft.ifftshift if inverse else cupy.fft.fftshift)(x, axes)
