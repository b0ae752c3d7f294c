"""FFTs on the host through ``scipy.fft``, on every core.

Every transform is a ``scipy.fft`` call, so a user's ``scipy.fft.set_backend(...)``
(global or as a context manager) decides which library computes it: pocketfft, SciPy's
own, by default, or any library registered as a ``scipy.fft`` backend (pyFFTW, mkl_fft).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
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
        """The ``scipy.fft`` function given only the arguments that differ from its
        defaults: scipy.fft checks given lengths and axes at a cost comparable to a
        small transform's, so lengths that need no crop or pad are left out."""
        lib = _scipy_fft or _library()
        same = kind in _SAME_LENGTH
        options: dict[str, Any] = {"workers": workers}
        if norm is not None:
            options["norm"] = norm
        if len(axes) == 1 and kind in _ONE_AXIS:
            (n,), (axis,) = s, axes
            m = shape[axis]
            if n != (m if same else 2 * (m - 1)):
                options["n"] = n
            if axis != len(shape) - 1:
                options["axis"] = axis
            fn = getattr(lib, _ONE_AXIS[kind])
        else:
            default = [shape[a] for a in axes]
            if not same:
                default[-1] = 2 * (default[-1] - 1)
            if list(s) != default:
                options["s"] = s
            if axes != tuple(range(len(shape))):  # every axis is the default
                options["axes"] = axes
            fn = getattr(lib, kind)
        return functools.partial(fn, **options)
