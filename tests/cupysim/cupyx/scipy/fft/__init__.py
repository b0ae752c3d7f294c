"""``cupyx.scipy.fft`` (simulated): SciPy's FFT signatures over the simulator's
``cupy.fft`` plans (cupy/fft/_fft.py here); the DCTs and DSTs are one cuFFT call each,
valued by SciPy (cupysim/cufft.py).

The behaviour followed is cupyx/scipy/fft/_fft.py's: ``n``/``s`` may be a single integer,
``overwrite_x`` lets a complex-to-complex transform write into its input, the 2-D/N-D
transforms take one N-D plan where CuPy would, and ``hfft2``/``hfftn`` and their inverses
are the real transforms of the conjugate with the norm swapped.
"""

from __future__ import annotations

import numbers as _numbers

import scipy.fft as _sfft
from cupy.fft._fft import (  # noqa: F401
    _default_fft_func,
    _fft,
    _swap_direction,
    fftfreq,
    fftshift,
    ifftshift,
    rfftfreq,
)
from cupysim import cufft as _cufft
from cupysim.cufft import CUFFT_FORWARD as _FORWARD
from cupysim.cufft import CUFFT_INVERSE as _INVERSE

for _n in ("dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn"):
    globals()[_n] = _cufft.transform(_n, getattr(_sfft, _n))
next_fast_len = _sfft.next_fast_len


def _seq(v):
    """SciPy takes a single length where a tuple of lengths is meant."""
    return (v,) if isinstance(v, _numbers.Number) else v


def _one_axis(direction, value_type):
    def transform(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
        return _fft(x, (n,), (axis,), norm, direction, value_type, overwrite_x, plan)

    return transform


def _many_axes(direction, value_type, default_axes):
    def transform(x, s=None, axes=default_axes, norm=None, overwrite_x=False, *, plan=None):
        s, axes = _seq(s), _seq(axes)
        func = _default_fft_func(x, s, axes, plan, value_type=value_type)
        return func(x, s, axes, norm, direction, value_type, overwrite_x=overwrite_x, plan=plan)

    return transform


fft = _one_axis(_FORWARD, "C2C")
ifft = _one_axis(_INVERSE, "C2C")
rfft = _one_axis(_FORWARD, "R2C")
irfft = _one_axis(_INVERSE, "C2R")
fft2 = _many_axes(_FORWARD, "C2C", (-2, -1))
ifft2 = _many_axes(_INVERSE, "C2C", (-2, -1))
fftn = _many_axes(_FORWARD, "C2C", None)
ifftn = _many_axes(_INVERSE, "C2C", None)
rfft2 = _many_axes(_FORWARD, "R2C", (-2, -1))
irfft2 = _many_axes(_INVERSE, "C2R", (-2, -1))
rfftn = _many_axes(_FORWARD, "R2C", None)
irfftn = _many_axes(_INVERSE, "C2R", None)
for _f, _name, _like in [
    (fft, "fft", "the 1-D transform"), (ifft, "ifft", "the 1-D inverse transform"),
    (rfft, "rfft", "the 1-D transform of real input"), (irfft, "irfft", "the inverse of rfft"),
    (fft2, "fft2", "the 2-D transform"), (ifft2, "ifft2", "the 2-D inverse transform"),
    (fftn, "fftn", "the N-D transform"), (ifftn, "ifftn", "the N-D inverse transform"),
    (rfft2, "rfft2", "the 2-D real transform"), (irfft2, "irfft2", "the inverse of rfft2"),
    (rfftn, "rfftn", "the N-D real transform"), (irfftn, "irfftn", "the inverse of rfftn"),
]:  # fmt: skip
    _f.__name__ = _f.__qualname__ = _name
    _f.__doc__ = f"{_like.capitalize()} (:func:`scipy.fft.{_name}`) on cuFFT."


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The transform of a Hermitian-symmetric signal (:func:`scipy.fft.hfft`)."""
    return irfft(x.conj(), n, axis, _swap_direction(norm), overwrite_x, plan=plan)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfft` (:func:`scipy.fft.ihfft`)."""
    return rfft(x, n, axis, _swap_direction(norm), overwrite_x, plan=plan).conj()


def hfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The N-D transform of a Hermitian-symmetric signal (:func:`scipy.fft.hfftn`)."""
    return irfftn(x.conj(), s, axes, _swap_direction(norm), overwrite_x, plan=plan)


def ihfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfftn` (:func:`scipy.fft.ihfftn`)."""
    return rfftn(x, s, axes, _swap_direction(norm), overwrite_x, plan=plan).conj()


def hfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The 2-D transform of a Hermitian-symmetric signal (:func:`scipy.fft.hfft2`)."""
    return hfftn(x, s, axes, norm, overwrite_x, plan=plan)


def ihfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfft2` (:func:`scipy.fft.ihfft2`)."""
    return ihfftn(x, s, axes, norm, overwrite_x, plan=plan)
