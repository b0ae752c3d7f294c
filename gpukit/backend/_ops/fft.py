"""FFT defaults of :class:`gpukit.backend.Backend`, written against ``self.xp.fft``.

The front-end (:mod:`gpukit.fft`) has validated ``norm`` and ``workers``, resolved
``s``/``axes`` to explicit tuples and cast the input to its working dtype (a real input
of that precision stays real for a backend with :attr:`FFTOps.fft_takes_real`); these
methods only translate. Backends override :meth:`FFTOps.fft_transform` with a faster
engine (``scipy.fft`` with all cores, cuFFT).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: The one-axis functions of a ``scipy.fft``-like module for the n-d kinds: the same
#: library call, without the n-d functions' argument normalisation, which dominates a small
#: transform.
_ONE_AXIS = {
    "fftn": "fft",
    "ifftn": "ifft",
    "rfftn": "rfft",
    "irfftn": "irfft",
    "hfftn": "hfft",
    "ihfftn": "ihfft",
}
#: Kinds whose output length defaults to the input's own (the others: ``2 * (m - 1)``).
_SAME_LENGTH = frozenset({"fftn", "ifftn", "rfftn", "ihfftn"})


def library_call(
    lib: Any,
    kind: str,
    shape: tuple[int, ...],
    s: tuple[int, ...],
    axes: tuple[int, ...],
    norm: str | None,
    **options: Any,
) -> Callable[[Any], Any]:
    """``lib``'s transform ``kind`` of arrays of ``shape`` as a function of the array alone,
    for a module with ``scipy.fft``'s signatures (``scipy.fft``, ``cupyx.scipy.fft``).

    Only the arguments that differ from the library's defaults are passed (``options``,
    such as ``workers``, always): such a library checks given lengths and axes at a cost
    comparable to a small transform's, and a transform along one axis takes the one-axis
    function.
    """
    same = kind in _SAME_LENGTH
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


#: The Hermitian transforms and the real transform each is computed with.
HERMITIAN = {"hfftn": "irfftn", "ihfftn": "rfftn"}
#: ``norm`` of the real transform computing a Hermitian one: the other direction.
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def hermitian(
    transform: Callable[..., Any],
    xp: Any,
    kind: str,
    x: Any,
    s: tuple[int, ...],
    axes: tuple[int, ...],
    norm: str | None,
    workers: int,
) -> Any:
    """``hfftn``/``ihfftn`` with the real transforms, as NumPy and SciPy define them.

    ``hfftn(x) = irfftn(conj(x))`` and ``ihfftn(x) = conj(rfftn(x))``, each with the
    scaling on the other direction; ``transform(kind, x, s, axes, norm, workers)``
    computes the real transform.
    """
    if kind == "hfftn":
        return transform("irfftn", xp.conjugate(x), s, axes, _SWAPPED[norm], workers)
    y = transform("rfftn", x, s, axes, _SWAPPED[norm], workers)
    return xp.conjugate(y, out=y)


class FFTOps:
    """Transforms, frequencies and shifts through the array namespace's ``fft`` module."""

    xp: Any
    #: Whether :meth:`fft_transform`'s complex-to-complex kinds (``fftn``, ``ifftn``) take
    #: a real input of the working precision (float32 for complex64, float64 for
    #: complex128) as it is, promoting it themselves; otherwise the front-end casts first.
    fft_takes_real: bool = False
    #: Whether every transform of :meth:`fft_plan` returns the front-end's result dtype
    #: for an input of the working dtype (complex64 or float32 from single precision,
    #: complex128 or float64 from double), so that the front-end need not check, and cast,
    #: each result. A library that may compute in another precision (a ``scipy.fft``
    #: backend a user registers) leaves it False.
    fft_keeps_dtype: bool = False

    def fft_engine(self) -> str:
        """Name of the library computing transforms (shown by ``gk.fft.engine()``)."""
        return f"{self.xp.__name__}.fft"

    def fft_transform(
        self,
        kind: str,
        x: Any,
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Any:
        """Apply ``kind`` (a ``scipy.fft`` N-D name: ``fftn``, ``irfftn``, ``hfftn``, ...).

        ``workers`` is a positive thread count for engines that use threads; the
        array namespace's own ``fft`` module takes none.
        """
        if kind in HERMITIAN:
            return hermitian(self.fft_transform, self.xp, kind, x, s, axes, norm, workers)
        return getattr(self.xp.fft, kind)(x, s=s, axes=axes, norm=norm)

    def fft_plan(
        self,
        kind: str,
        shape: tuple[int, ...],
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str | None,
        workers: int,
    ) -> Callable[[Any], Any]:
        """:meth:`fft_transform` of arrays of ``shape`` with these arguments, as a function
        of the array alone.

        The front-end keeps it in its plan for the next call with the same key, so a
        backend may settle here, once, what depends only on these arguments.
        """
        return lambda x: self.fft_transform(kind, x, s, axes, norm, workers)

    def fft_freq(self, n: int, d: float, real: bool) -> Any:
        """Sample frequencies (``rfftfreq`` when ``real``) on the current device."""
        return (self.xp.fft.rfftfreq if real else self.xp.fft.fftfreq)(n, d)

    def fft_shift(self, x: Any, axes: tuple[int, ...], inverse: bool) -> Any:
        """Move the zero frequency to the centre (back again when ``inverse``)."""
        return (self.xp.fft.ifftshift if inverse else self.xp.fft.fftshift)(x, axes)
