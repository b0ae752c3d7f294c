"""``cupyx.scipy.fft`` (simulated): CuPy's cupyx/scipy/fft/_fft.py over cupy.fft's
transforms (cupy/fft/_fft.py, on the simulator's cuFFT plans); the DCTs and DSTs are one
cuFFT call each, valued by SciPy (cupysim/cufft.py)."""

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

for _n in ("dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn"):
    globals()[_n] = _cufft.transform(_n, getattr(_sfft, _n))
next_fast_len = _sfft.next_fast_len


# Ported from CuPy 14.2 (cupyx/scipy/fft/_fft.py, MIT licence).
def _assequence(x):
    if isinstance(x, _numbers.Number):
        return (x,)
    return x


def fft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The one-dimensional FFT (see :func:`scipy.fft.fft`)."""
    from cupy.cuda import cufft

    return _fft(x, (n,), (axis,), norm, cufft.CUFFT_FORWARD, overwrite_x=overwrite_x, plan=plan)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The one-dimensional inverse FFT (see :func:`scipy.fft.ifft`)."""
    from cupy.cuda import cufft

    return _fft(x, (n,), (axis,), norm, cufft.CUFFT_INVERSE, overwrite_x=overwrite_x, plan=plan)


def fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The two-dimensional FFT (see :func:`scipy.fft.fft2`)."""
    return fftn(x, s, axes, norm, overwrite_x, plan=plan)


def ifft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The two-dimensional inverse FFT (see :func:`scipy.fft.ifft2`)."""
    return ifftn(x, s, axes, norm, overwrite_x, plan=plan)


def fftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The N-dimensional FFT (see :func:`scipy.fft.fftn`)."""
    from cupy.cuda import cufft

    s = _assequence(s)
    axes = _assequence(axes)
    func = _default_fft_func(x, s, axes)
    return func(x, s, axes, norm, cufft.CUFFT_FORWARD, overwrite_x=overwrite_x, plan=plan)


def ifftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The N-dimensional inverse FFT (see :func:`scipy.fft.ifftn`)."""
    from cupy.cuda import cufft

    s = _assequence(s)
    axes = _assequence(axes)
    func = _default_fft_func(x, s, axes)
    return func(x, s, axes, norm, cufft.CUFFT_INVERSE, overwrite_x=overwrite_x, plan=plan)


def rfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The one-dimensional FFT of real input (see :func:`scipy.fft.rfft`)."""
    from cupy.cuda import cufft

    return _fft(x, (n,), (axis,), norm, cufft.CUFFT_FORWARD, "R2C", overwrite_x=overwrite_x,
                plan=plan)  # fmt: skip


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`rfft` (see :func:`scipy.fft.irfft`)."""
    from cupy.cuda import cufft

    return _fft(x, (n,), (axis,), norm, cufft.CUFFT_INVERSE, "C2R", overwrite_x=overwrite_x,
                plan=plan)  # fmt: skip


def rfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The two-dimensional FFT of real input (see :func:`scipy.fft.rfft2`)."""
    return rfftn(x, s, axes, norm, overwrite_x, plan=plan)


def irfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`rfft2` (see :func:`scipy.fft.irfft2`)."""
    return irfftn(x, s, axes, norm, overwrite_x, plan=plan)


def rfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The N-dimensional FFT of real input (see :func:`scipy.fft.rfftn`)."""
    from cupy.cuda import cufft

    s = _assequence(s)
    axes = _assequence(axes)
    func = _default_fft_func(x, s, axes, value_type="R2C")
    return func(x, s, axes, norm, cufft.CUFFT_FORWARD, "R2C", overwrite_x=overwrite_x,
                plan=plan)  # fmt: skip


def irfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`rfftn` (see :func:`scipy.fft.irfftn`)."""
    from cupy.cuda import cufft

    s = _assequence(s)
    axes = _assequence(axes)
    func = _default_fft_func(x, s, axes, value_type="C2R")
    return func(x, s, axes, norm, cufft.CUFFT_INVERSE, "C2R", overwrite_x=overwrite_x,
                plan=plan)  # fmt: skip


def _no_plan(name: str, plan) -> None:
    if plan is not None:
        raise NotImplementedError(f"{name} plan is currently not yet supported")


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The FFT of a Hermitian-symmetric signal (see :func:`scipy.fft.hfft`)."""
    _no_plan("hfft", plan)
    return irfft(x.conj(), n, axis, _swap_direction(norm))


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfft` (see :func:`scipy.fft.ihfft`)."""
    _no_plan("ihfft", plan)
    return rfft(x, n, axis, _swap_direction(norm)).conj()


def hfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The two-dimensional :func:`hfft` (see :func:`scipy.fft.hfft2`)."""
    _no_plan("hfft2", plan)
    return irfft2(x.conj(), s, axes, _swap_direction(norm))


def ihfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfft2` (see :func:`scipy.fft.ihfft2`)."""
    _no_plan("ihfft2", plan)
    return rfft2(x, s, axes, _swap_direction(norm)).conj()


def hfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The N-dimensional :func:`hfft` (see :func:`scipy.fft.hfftn`)."""
    _no_plan("hfftn", plan)
    return irfftn(x.conj(), s, axes, _swap_direction(norm))


def ihfftn(x, s=None, axes=None, norm=None, overwrite_x=False, *, plan=None):
    """The inverse of :func:`hfftn` (see :func:`scipy.fft.ihfftn`)."""
    _no_plan("ihfftn", plan)
    return rfftn(x, s, axes, _swap_direction(norm)).conj()
