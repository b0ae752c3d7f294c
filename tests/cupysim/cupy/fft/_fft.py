"""``cupy.fft``'s transforms for the simulator, run on the simulated cuFFT plans.

The behaviour followed is cupy/fft/_fft.py's (CuPy 14.2): inputs convert to the transform's
precision (float16/float32/complex64 to single, everything else to double), ``s`` crops or
zero-pads, and each transform is either a chain of 1-D plans (one axis at a time, that
axis moved last and the input made contiguous) or, when N-D planning is on and up to three
adjacent axes including the first or last are transformed, one N-D plan whose output keeps
the input's order. Plans are cached per thread and device (cupysim/cufft.py); scaling is a
separate elementwise division, as CuPy's is.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from cupysim import cufft as _plans
from cupysim.cufft import CUFFT_FORWARD, CUFFT_INVERSE

import cupy
from cupy.fft._config import config

_SINGLE_INPUTS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.complex64))

_FFT_TYPES = {
    ("C2C", np.dtype(np.complex64)): _plans.CUFFT_C2C,
    ("C2C", np.dtype(np.complex128)): _plans.CUFFT_Z2Z,
    ("R2C", np.dtype(np.float32)): _plans.CUFFT_R2C,
    ("R2C", np.dtype(np.float64)): _plans.CUFFT_D2Z,
    ("C2R", np.dtype(np.complex64)): _plans.CUFFT_C2R,
    ("C2R", np.dtype(np.complex128)): _plans.CUFFT_Z2D,
}


def _load_cufft() -> None:
    """cuFFT loads on a transform's first use: ImportError here when it is missing."""
    import cupy.cuda.cufft  # noqa: F401


def _convert_fft_type(dtype, value_type: str) -> int:
    """The cuFFT type (``CUFFT_C2C``...) of a ``value_type`` transform of ``dtype`` data."""
    try:
        return _FFT_TYPES[(value_type, np.dtype(dtype))]
    except KeyError:
        raise ValueError from None


def _input_dtype(dtype, value_type: str) -> np.dtype:
    """What the data converts to before cuFFT sees it: real for R2C, complex otherwise."""
    single = np.dtype(dtype) in _SINGLE_INPUTS
    if value_type == "R2C":
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


def _checked_norm(norm) -> str:
    if norm is None:
        return "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}, should be "backward", "ortho", or "forward".')
    return norm


def _scale(out, norm: str, direction: int, n: int):
    """cuFFT does not normalise: the norm's factor is one more elementwise launch."""
    if norm == "ortho":
        out /= math.sqrt(n)
    elif (norm == "backward") == (direction == CUFFT_INVERSE):
        out /= n
    return out


def _resized(a, s, axes, value_type: str, order: str = "C"):
    """``a`` cropped or zero-padded to the lengths ``s`` along ``axes`` (for C2R the last
    length is that of the real output, so the complex input needs ``s[-1] // 2 + 1``)."""
    if s is None:
        return a
    lengths = list(s)
    if value_type == "C2R" and lengths[-1] is not None:
        lengths[-1] = lengths[-1] // 2 + 1
    for n, ax in zip(lengths, axes, strict=False):
        if n is None or n == a.shape[ax]:
            continue
        region = [slice(None)] * a.ndim
        if n < a.shape[ax]:
            region[ax] = slice(0, n)
            a = a[tuple(region)]
        else:
            region[ax] = slice(0, a.shape[ax])
            shape = list(a.shape)
            shape[ax] = n
            padded = cupy.zeros(shape, a.dtype, order=order)
            padded[tuple(region)] = a
            a = padded
    return a


def _real_output_length(in_len: int, s) -> int:
    """A C2R transform's output length along its last axis: ``s[-1]``, else ``2*(m-1)``."""
    return 2 * (in_len - 1) if s is None or s[-1] is None else s[-1]


def _cached(key, make):
    if config._use_multi_gpus.get():
        # fails loudly rather than quietly computing on one device
        raise NotImplementedError("cupysim: multi-GPU cuFFT transforms are not simulated")
    cache = _plans.plan_cache()
    plan = cache.get(key)
    if plan is None:
        plan = make()
        cache[key] = plan
    return plan


def _run_1d(a, axis: int, value_type: str, direction: int, norm: str, out_len=None,
            overwrite_x: bool = False):  # fmt: skip
    """One 1-D cuFFT plan along ``axis``: the axis is moved last (a swapped view comes back),
    the data made C-contiguous in a buffer of its own when it is a view or strided."""
    fft_type = _convert_fft_type(a.dtype, value_type)
    moved = axis % a.ndim != a.ndim - 1
    x = a.swapaxes(axis, -1) if moved else a
    # C2R plans overwrite their input, so they always get a copy
    if value_type == "C2R" or x.base is not None or not x.flags.c_contiguous:
        x = x.copy()
    n = x.shape[-1]
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    points = out_len if value_type == "C2R" else n
    batch = x.size // n
    plan = _cached(
        (points, fft_type, batch, config.devices),
        lambda: _plans.Plan1d(points, fft_type, batch),
    )
    if value_type == "C2C" and overwrite_x:
        out = x
    else:
        shape = list(x.shape)
        if value_type == "R2C":
            shape[-1] = n // 2 + 1
        elif value_type == "C2R":
            shape[-1] = points
        real = value_type == "C2R"
        single = x.dtype in _SINGLE_INPUTS
        dtype = (np.float32 if single else np.float64) if real else (
            np.complex64 if single else np.complex128)  # fmt: skip
        out = cupy.empty(shape, dtype)
    if batch:
        plan.fft(x, out, direction)
    _scale(out, norm, direction, n if value_type == "R2C" else out.shape[-1])
    return out.swapaxes(axis, -1) if moved else out


def _fft(a, s, axes, norm, direction, value_type="C2C", overwrite_x=False, plan=None):
    """The transform as a chain of 1-D plans: R2C does its real axis first, C2R last."""
    _load_cufft()
    if not isinstance(a, cupy.ndarray):
        raise TypeError("The input array a must be a cupy.ndarray")
    if plan is not None:
        raise ValueError("expected plan to have type cufft.Plan1d")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if axes is None:
        axes = tuple(range(-(a.ndim if s is None else len(s)), 0))
    axes = tuple(axes)
    if not axes:
        if value_type == "C2C":
            return a
        raise IndexError("list index out of range")
    norm = _checked_norm(norm)
    if a.dtype != _input_dtype(a.dtype, value_type):
        a = a.astype(_input_dtype(a.dtype, value_type))
    a = _resized(a, s, axes, value_type)
    complex_axes = axes if value_type == "C2C" else axes[:-1]
    if value_type == "R2C":
        a = _run_1d(a, axes[-1], "R2C", direction, norm)
    for ax in complex_axes:
        a = _run_1d(a, ax, "C2C", direction, norm, overwrite_x=overwrite_x)
    if value_type == "C2R":
        n_out = _real_output_length(a.shape[axes[-1]], s)
        a = _run_1d(a, axes[-1], "C2R", direction, norm, out_len=n_out)
    return a


def _fftn_axes(ndim: int, s, axes, value_type: str):
    """(the axes as given, for cropping; the axes in the N-D plan's order: ascending, but a
    real transform's last axis stays last)."""
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if axes is None:
        given = tuple(range(ndim - (ndim if s is None else len(s)), ndim))
        return given, given
    given = tuple(axes)
    if not given:
        return (), ()
    if min(given) < -ndim or max(given) > ndim - 1:
        raise ValueError("The specified axes exceed the array dimensions.")
    if value_type == "C2C":
        return given, tuple(sorted(ax % ndim for ax in given))
    return given, (*sorted(ax % ndim for ax in given[:-1]), given[-1] % ndim)


def _one_nd_plan_fits(plan_axes, ndim: int) -> bool:
    """cuFFT's N-D plans batch 1 to 3 adjacent axes that include the first or the last."""
    adjacent = all(b - a == 1 for a, b in itertools.pairwise(plan_axes))
    ends = 0 in plan_axes or ndim - 1 in plan_axes
    return 0 < len(plan_axes) <= 3 and adjacent and ends


def _fftn(a, s, axes, norm, direction, value_type="C2C", order="A", plan=None,
          overwrite_x=False, out=None):  # fmt: skip
    """The transform as one N-D plan; the output has the input's order (C or F)."""
    _load_cufft()
    if not isinstance(a, cupy.ndarray):
        raise TypeError("The input array a must be a cupy.ndarray")
    if plan is not None or out is not None:
        raise ValueError("expected plan to have type cufft.PlanNd")
    norm = _checked_norm(norm)
    given, plan_axes = _fftn_axes(a.ndim, s, axes, value_type)
    if not plan_axes:
        if value_type == "C2C":
            return a
        raise IndexError("list index out of range")
    if not _one_nd_plan_fits(plan_axes, a.ndim):
        raise ValueError(f"An n-dimensional cuFFT plan could not be created for axes {axes}")
    if a.dtype != _input_dtype(a.dtype, value_type):
        a = a.astype(_input_dtype(a.dtype, value_type))
    if order == "A":
        order = "F" if a.flags.f_contiguous else "C"
    elif order not in ("C", "F"):
        raise ValueError(f"Unsupported order: {order}")
    a = _resized(a, s, given, value_type, order=order)
    for n in a.shape:
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    a = cupy.asfortranarray(a) if order == "F" else cupy.ascontiguousarray(a)
    fft_type = _convert_fft_type(a.dtype, value_type)
    last = plan_axes[-1]
    if value_type == "C2R":
        last_size = _real_output_length(a.shape[last], s)
        a = a.copy(order=order)  # a C2R plan overwrites its input
    elif value_type == "R2C":
        last_size = a.shape[last] // 2 + 1
    else:
        last_size = None
    key = (a.shape, a.strides, fft_type, plan_axes, order, last_size, config.devices)
    nd_plan = _cached(
        key, lambda: _plans.PlanNd(a.shape, fft_type, plan_axes, order, last, last_size)
    )
    if value_type == "C2C" and overwrite_x:
        res = a
    else:
        shape = list(a.shape)
        if last_size is not None:
            shape[last] = last_size
        single = a.dtype in _SINGLE_INPUTS
        if value_type == "C2R":
            dtype = np.float32 if single else np.float64
        else:
            dtype = np.complex64 if single else np.complex128
        res = cupy.empty(shape, dtype, order=order)
    if res.size:
        nd_plan.fft(a, res, direction)
    points = (a if value_type == "R2C" else res).shape
    return _scale(res, norm, direction, math.prod(points[ax] for ax in plan_axes))


def _default_fft_func(a, s=None, axes=None, plan=None, value_type="C2C"):
    """``_fftn`` where one N-D plan does the whole transform and N-D planning is on, else
    ``_fft``. Real transforms of F-ordered data take 1-D plans (cuFFT's N-D real
    transforms would not agree with NumPy there)."""
    _load_cufft()
    if a.ndim == 1 or not config._enable_nd_planning.get():
        return _fft
    if value_type != "C2C" and a.flags.f_contiguous:
        return _fft
    _, plan_axes = _fftn_axes(a.ndim, s, axes, value_type)
    if len(plan_axes) > 1 and _one_nd_plan_fits(plan_axes, a.ndim):
        return _fftn
    return _fft


def _size_last_transform_axis(shape, s, axes):
    """The length an irfftn's last transformed axis is taken to have on input."""
    if s is not None:
        return s[-1] if s[-1] is not None else shape[-1]
    return shape[-1] if axes is None else shape[axes[-1]]


def _real_caster(a, axes):
    """NumPy's irfft with a single axis returns the input's real precision (float16 stays
    float16, integers become float64); more axes keep cuFFT's output type."""
    if axes is not None and len(axes) == 1:
        real = np.result_type(a.real.dtype, 1.0)
        return lambda r: r.astype(real, copy=False)
    return lambda r: r


def _swap_direction(norm):
    """The norm of the opposite transform (hfft is an irfft of the conjugate)."""
    norm = _checked_norm(norm)
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


# -- the public transforms --------------------------------------------------------------------
def fft(a, n=None, axis=-1, norm=None):
    """The 1-D discrete Fourier transform (:func:`numpy.fft.fft`)."""
    return _fft(a, (n,), (axis,), norm, CUFFT_FORWARD)


def ifft(a, n=None, axis=-1, norm=None):
    """The 1-D inverse transform (:func:`numpy.fft.ifft`)."""
    return _fft(a, (n,), (axis,), norm, CUFFT_INVERSE)


def _nd(direction, value_type="C2C"):
    def transform(a, s=None, axes=None, norm=None):
        func = _default_fft_func(a, s, axes, value_type=value_type)
        return func(a, s, axes, norm, direction, value_type)

    return transform


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D transform (:func:`numpy.fft.fft2`)."""
    return _nd(CUFFT_FORWARD)(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D inverse transform (:func:`numpy.fft.ifft2`)."""
    return _nd(CUFFT_INVERSE)(a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The N-D transform (:func:`numpy.fft.fftn`)."""
    return _nd(CUFFT_FORWARD)(a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The N-D inverse transform (:func:`numpy.fft.ifftn`)."""
    return _nd(CUFFT_INVERSE)(a, s, axes, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The 1-D transform of real input (:func:`numpy.fft.rfft`)."""
    return _fft(a, (n,), (axis,), norm, CUFFT_FORWARD, "R2C")


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of :func:`rfft` (:func:`numpy.fft.irfft`)."""
    cast = _real_caster(a, (axis,))
    return cast(_fft(a, (n,), (axis,), norm, CUFFT_INVERSE, "C2R"))


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D transform of real input (:func:`numpy.fft.rfft2`)."""
    return _nd(CUFFT_FORWARD, "R2C")(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of :func:`rfft2` (:func:`numpy.fft.irfft2`)."""
    return _real_caster(a, axes)(_nd(CUFFT_INVERSE, "C2R")(a, s, axes, norm))


def rfftn(a, s=None, axes=None, norm=None):
    """The N-D transform of real input (:func:`numpy.fft.rfftn`)."""
    return _nd(CUFFT_FORWARD, "R2C")(a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of :func:`rfftn` (:func:`numpy.fft.irfftn`)."""
    return _real_caster(a, axes)(_nd(CUFFT_INVERSE, "C2R")(a, s, axes, norm))


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a Hermitian-symmetric signal (:func:`numpy.fft.hfft`)."""
    return irfft(a.conj(), n, axis, _swap_direction(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of :func:`hfft` (:func:`numpy.fft.ihfft`)."""
    return rfft(a, n, axis, _swap_direction(norm)).conj()


def fftfreq(n, d=1.0):
    """The sample frequencies of an ``n``-point transform (:func:`numpy.fft.fftfreq`)."""
    k = cupy.arange(n, dtype=np.float64)
    return cupy.where(k <= (n - 1) // 2, k, k - n) / (n * d)


def rfftfreq(n, d=1.0):
    """The non-negative sample frequencies (:func:`numpy.fft.rfftfreq`)."""
    return cupy.arange(n // 2 + 1, dtype=np.float64) / (n * d)


def _shift(x, axes, sign: int):
    x = cupy.asarray(x)
    axes = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
    axes = list(axes)
    return cupy.roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)


def fftshift(x, axes=None):
    """The zero frequency moved to the centre (:func:`numpy.fft.fftshift`)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of :func:`fftshift` (:func:`numpy.fft.ifftshift`)."""
    return _shift(x, axes, -1)
