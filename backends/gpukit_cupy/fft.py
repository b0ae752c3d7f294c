"""FFTs on the GPU: cuFFT through ``cupyx.scipy.fft``.

CuPy caches cuFFT plans per device (``cupy.fft.config.get_plan_cache()``, by default
16 plans and no memory bound), so repeated transforms of one shape skip planning; the
front-end's plan keeps only which ``cupyx.scipy.fft`` function to call with which
arguments, valid on every device. ``workers`` (CPU threads) has no meaning here and is
ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpukit.backend._ops.fft import library_call


class CupyFFT:
    """Overrides :class:`gpukit.backend._ops.fft.FFTOps` with cuFFT.

    Called with the array's device current (every public operation runs on its input's
    device), so plans and launches are made there.
    """

    #: cuFFT transforms single precision in single and double in double (cupyx.scipy.fft
    #: picks the plan's type from the input's dtype), the front-end's result dtypes.
    fft_keeps_dtype = True

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
        """The ``cupyx.scipy.fft`` function given only the arguments that differ from its
        defaults (a cuFFT plan is CuPy's to keep: it belongs to one device)."""
        import cupyx.scipy.fft

        return library_call(cupyx.scipy.fft, kind, shape, s, axes, norm)

    def fft_shift(self, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
        import cupy

        return (cupy.fft.ifftshift if inverse else cupy.fft.fftshift)(x, axes)
