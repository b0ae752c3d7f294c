"""FFTs on the host through ``scipy.fft``, on every core.

Every transform is a ``scipy.fft`` call, so a user's ``scipy.fft.set_backend(...)``
(global or as a context manager) decides which library computes it: pocketfft, SciPy's
own, by default, or any library registered as a ``scipy.fft`` backend (pyFFTW, mkl_fft).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

# The one-axis functions of scipy.fft for the n-d kinds: the same pocketfft call, without
# fftn's argument normalisation, which dominates a small transform.
_ONE_AXIS = {
    "fftn": "fft",
    "ifftn": "ifft",
    "rfftn": "rfft",
    "irfftn": "irfft",
    "hfftn": "hfft",
    "ihfftn": "ihfft",
}
# Kinds whose output length defaults to the input's own (the others: 2 * (m - 1)).
_SAME_LENGTH = frozenset({"fftn", "ifftn", "rfftn", "ihfftn"})

_scipy_fft: ModuleType | None = None  # imported by the first transform, not with gpukit


def _library() -> ModuleType:
    global _scipy_fft
    import scipy.fft

    _scipy_fft = scipy.fft
    return scipy.fft


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
        lib = _scipy_fft or _library()
        # Lengths that need no crop or pad are passed as None (the default): scipy.fft
        # checks given ones at a cost comparable to a small transform's.
        same = kind in _SAME_LENGTH
        if len(axes) == 1 and kind in _ONE_AXIS:
            n, axis = s[0], axes[0]
            m = x.shape[axis]
            if n == (m if same else 2 * (m - 1)):
                n = None
            return getattr(lib, _ONE_AXIS[kind])(x, n=n, axis=axis, norm=norm, workers=workers)
        default = [x.shape[a] for a in axes]
        if not same:
            default[-1] = 2 * (default[-1] - 1)
        lengths = None if list(s) == default else s
        return getattr(lib, kind)(x, s=lengths, axes=axes, norm=norm, workers=workers)
