"""FFT defaults of :class:`gpukit.backend.Backend`, written against ``self.xp.fft``.

The front-end (:mod:`gpukit.fft`) has validated ``norm``, resolved ``s``/``axes`` to
explicit tuples and cast the input to its working dtype; these methods only translate.
Backends override :meth:`FFTOps.fft_transform` with a faster engine (``scipy.fft`` with
all cores, pyFFTW, cuFFT).
"""

from __future__ import annotations

from typing import Any


class FFTOps:
    """Transforms, frequencies and shifts through the array namespace's ``fft`` module."""

    xp: Any

    def fft_engine(self) -> str:
        """Name of the library computing transforms (shown by ``gk.fft.engine()``)."""
        return f"{self.xp.__name__}.fft"

    def fft_transform(
        self, kind: str, x: Any, s: tuple[int, ...], axes: tuple[int, ...], norm: str | None
    ) -> Any:
        """Apply ``kind`` (a ``scipy.fft`` N-D name: ``fftn``, ``irfftn``, ``hfftn``, ...).

        Hermitian kinds always come with one axis (NumPy has only 1-D ones).
        """
        module = self.xp.fft
        if kind in ("hfftn", "ihfftn"):
            return getattr(module, kind[:-1])(x, n=s[0], axis=axes[0], norm=norm)
        return getattr(module, kind)(x, s=s, axes=axes, norm=norm)

    def fft_freq(self, n: int, d: float, real: bool) -> Any:
        """Sample frequencies (``rfftfreq`` when ``real``) on the current device."""
        return (self.xp.fft.rfftfreq if real else self.xp.fft.fftfreq)(n, d)

    def fft_shift(self, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
        """Move the zero frequency to the centre (back again when ``inverse``)."""
        return (self.xp.fft.ifftshift if inverse else self.xp.fft.fftshift)(x, axes)
