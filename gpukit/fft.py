"""``gk.fft``: NumPy's FFT API on every backend, single precision kept single.

Loaded on first access of ``gk.fft``. Each function validates ``n``/``s``,
``axis``/``axes`` and ``norm`` here, casts the input to its working dtype, then calls
one backend method: ``scipy.fft`` on all cores (or pyFFTW when installed) on the numpy
backend, cuFFT through ``cupyx.scipy.fft`` on cupy.

Dtype rules (the same on every backend, as NumPy 2): float16, float32 and complex64
inputs are transformed in single precision (complex64 spectra, float32 real outputs);
integers, bools, float64 and complex128 in double precision. Other dtypes (strings,
objects, long double, ...) raise ``TypeError`` (:mod:`gpukit._dispatch.dtypes`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation
from ._dispatch.inputs import prepare
from ._select.selection import get_backend

__all__ = [
    "engine",
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


_NORMS = (None, "backward", "ortho", "forward")
_SINGLE = frozenset(np.dtype(t) for t in ("float16", "float32", "complex64"))
_REAL_IN = frozenset({"rfftn", "ihfftn"})  # real input, complex output
_REAL_OUT = frozenset({"irfftn", "hfftn"})  # complex (Hermitian) input, real output

Axes = Sequence[int] | None
Shape = Sequence[int] | None


def _index(name: str, label: str, value: Any) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {label} must be an integer, got {value!r}") from None


def _axes(name: str, label: str, axes: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``axes`` as non-negative, unique indices into ``shape``; ValueError otherwise."""
    ndim = len(shape)
    items = (axes,) if isinstance(axes, int | np.integer) else tuple(axes)
    out = []
    for a in items:
        a = _index(name, label, a)
        if not -ndim <= a < ndim:
            raise ValueError(
                f"{name}: {label}={axes!r} is out of range for x with {ndim} dimension(s) "
                f"(shape {shape})"
            )
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: {label}={axes!r} repeats an axis; each axis may appear once")
    return tuple(out)


def _plan(
    name: str, kind: str, shape: tuple[int, ...], s: Any, axes: Any, one_d: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Resolve NumPy's ``s``/``axes`` (or ``n``/``axis``) rules to explicit tuples."""
    s_label, ax_label = ("n", "axis") if one_d else ("s", "axes")
    if not shape:
        raise ValueError(f"{name}: x must have at least one dimension, got a 0-d array")
    if s is not None:
        s = tuple(_index(name, s_label, v) for v in ((s,) if one_d else s))
    if axes is None:
        count = len(shape) if s is None else len(s)
        if count > len(shape):
            raise ValueError(f"{name}: s={s} has more entries than x has dimensions ({shape})")
        axes = tuple(range(len(shape) - count, len(shape)))
    else:
        axes = _axes(name, ax_label, axes, shape)
    if not axes:
        raise ValueError(f"{name}: {ax_label} must name at least one axis")
    if s is None:
        s = tuple(shape[a] for a in axes)
        if kind in _REAL_OUT:  # the default output length of a Hermitian input
            s = (*s[:-1], 2 * (s[-1] - 1))
    elif len(s) != len(axes):
        raise ValueError(f"{name}: s={s} and axes={axes} must have the same length")
    for length, a in zip(s, axes, strict=True):
        if length < 1:
            hint = f" (pass {s_label} explicitly)" if kind in _REAL_OUT else ""
            raise ValueError(
                f"{name}: the transform length along axis {a} is {length}, it must be at "
                f"least 1; x has shape {shape}{hint}"
            )
    return s, axes


def _work_dtype(name: str, kind: str, dtype: np.dtype) -> tuple[np.dtype, np.dtype]:
    """(dtype the input is cast to, dtype of the result) for ``kind``."""
    single = dtype in _SINGLE
    if kind in _REAL_IN:
        if dtype.kind == "c":
            raise TypeError(f"{name}: x must be real, got {dtype}; use the complex transform")
        work = np.dtype(np.float32 if single else np.float64)
        return work, np.dtype(np.complex64 if single else np.complex128)
    work = np.dtype(np.complex64 if single else np.complex128)
    return work, (np.dtype(np.float32 if single else np.float64) if kind in _REAL_OUT else work)


def _transform(name: str, kind: str, x: Any, s: Any, axes: Any, norm: Any, one_d: bool) -> Any:
    if norm not in _NORMS:
        raise ValueError(
            f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}"
        )
    x = _dtypes.check(name, "x", x)
    backend, (x,) = prepare(x, names=("x",))
    if not backend.owns(x):  # lists and scalars on a host backend
        x = backend.asarray(x)
    s, axes = _plan(name, kind, tuple(x.shape), s, axes, one_d)
    work, result = _work_dtype(name, kind, np.dtype(x.dtype))
    out = backend.fft_transform(kind, x.astype(work, copy=False), s, axes, norm)
    return out.astype(result, copy=False)  # a no-op unless a plug-in's library upcasts


_ONE_D_DOC = """{summary}

Parameters
----------
x : array_like
    Input{input_note}.
n : int, optional
    Length of the transform{n_note}; ``x`` is cropped or zero-padded along ``axis``.
axis : int, optional
    Axis to transform (default the last).
norm : {{None, "backward", "ortho", "forward"}}, optional
    Which direction is scaled by ``1/n`` (NumPy's meaning; None is "backward").

Returns
-------
array
    {returns}

Raises
------
ValueError
    ``n`` is below 1, ``axis`` is out of range, or ``norm`` is unknown.
TypeError
    ``n`` or ``axis`` is not an integer, or ``x`` has a non-numeric dtype{type_note}.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     y = gk.fft.{fn}({example})
>>> {check}
{expected}
"""


def _one_d(fn_name: str, kind: str, **doc: str):
    name = f"gk.fft.{fn_name}"

    @operation(name)
    def transform(x: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
        return _transform(name, kind, x, n, (axis,), norm, one_d=True)

    transform.__name__ = transform.__qualname__ = fn_name
    transform.__module__ = __name__
    transform.__doc__ = _ONE_D_DOC.format(fn=fn_name, **doc)
    return transform


_N_DIM_DOC = """{summary}

Parameters
----------
x : array_like
    Input{input_note}.
s : sequence of int, optional
    Transform lengths along ``axes``{s_note}; ``x`` is cropped or zero-padded.
axes : sequence of int, optional
    Axes to transform, each at most once (default {axes_default}).
norm : {{None, "backward", "ortho", "forward"}}, optional
    Which direction is scaled by ``1/prod(s)`` (NumPy's meaning; None is "backward").

Returns
-------
array
    {returns}

Raises
------
ValueError
    An axis is out of range or repeated, ``s`` and ``axes`` differ in length, a length
    is below 1, or ``norm`` is unknown.
TypeError
    An entry of ``s`` or ``axes`` is not an integer, or ``x`` has a non-numeric
    dtype{type_note}.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     y = gk.fft.{fn}({example})
>>> {check}
{expected}
"""


def _n_dim(fn_name: str, kind: str, default_axes: tuple[int, ...] | None, **doc: str):
    name = f"gk.fft.{fn_name}"

    @operation(name)
    def transform(
        x: Any, s: Shape = None, axes: Axes = default_axes, norm: str | None = None
    ) -> Any:
        return _transform(name, kind, x, s, axes, norm, one_d=False)

    transform.__name__ = transform.__qualname__ = fn_name
    transform.__module__ = __name__
    axes_default = "every axis, or the last ``len(s)``" if default_axes is None else "(-2, -1)"
    transform.__doc__ = _N_DIM_DOC.format(fn=fn_name, axes_default=axes_default, **doc)
    return transform


_C = dict(input_note=" (real input is promoted to complex)", type_note="")
_R = dict(input_note="; must be real", type_note=", or ``x`` is complex")
_H = dict(input_note=", the non-negative frequency half of a Hermitian spectrum", type_note="")
_CPLX = "Complex spectrum: complex64 for single-precision input, complex128 otherwise."
_REAL = "Real signal: float32 for single-precision input, float64 otherwise."
_HALF = "Complex half spectrum (``n // 2 + 1`` along the last transformed axis)."
_ONES = "np.ones((2, 4), np.float32)"
_N_EVEN = "; default ``2 * (m - 1)`` for an input of length ``m`` along the last axis"

fft = _one_d(
    "fft", "fftn", summary="One-dimensional discrete Fourier transform.", n_note="",
    returns=_CPLX, example="np.ones(4, np.complex64)", check="y.dtype, y.tolist()",
    expected="(dtype('complex64'), [(4+0j), 0j, 0j, 0j])", **_C,
)  # fmt: skip
ifft = _one_d(
    "ifft", "ifftn", summary="One-dimensional inverse discrete Fourier transform.",
    n_note="", returns=_CPLX, example="np.array([4.0, 0, 0, 0])", check="y.tolist()",
    expected="[(1+0j), (1+0j), (1+0j), (1+0j)]", **_C,
)  # fmt: skip
rfft = _one_d(
    "rfft", "rfftn", summary="One-dimensional transform of a real signal (half spectrum).",
    n_note="", returns=_HALF, example="np.ones(4, np.float32)", check="y.dtype, y.shape",
    expected="(dtype('complex64'), (3,))", **_R,
)  # fmt: skip
irfft = _one_d(
    "irfft", "irfftn", summary="Inverse of :func:`rfft`: a real signal from a half spectrum.",
    n_note=_N_EVEN, returns=_REAL, example="np.array([4.0, 0, 0])",
    check="y.tolist()", expected="[1.0, 1.0, 1.0, 1.0]", **_H,
)  # fmt: skip
hfft = _one_d(
    "hfft", "hfftn", summary="Transform of a Hermitian-symmetric signal (a real spectrum).",
    n_note=_N_EVEN, returns=_REAL, example="np.array([1.0, 0, 0])",
    check="y.tolist()", expected="[1.0, 1.0, 1.0, 1.0]", **_H,
)  # fmt: skip
ihfft = _one_d(
    "ihfft", "ihfftn", summary="Inverse of :func:`hfft`: a Hermitian half signal.",
    n_note="", returns=_HALF, example="np.ones(4)", check="y.real.tolist()",
    expected="[1.0, 0.0, 0.0]", **_R,
)  # fmt: skip
fft2 = _n_dim(
    "fft2", "fftn", (-2, -1), summary="Two-dimensional discrete Fourier transform.",
    s_note="", returns=_CPLX, example=_ONES, check="y.dtype, float(y[0, 0].real)",
    expected="(dtype('complex64'), 8.0)", **_C,
)  # fmt: skip
ifft2 = _n_dim(
    "ifft2", "ifftn", (-2, -1), summary="Two-dimensional inverse discrete Fourier transform.",
    s_note="", returns=_CPLX, example=_ONES, check="float(y[0, 0].real)",
    expected="1.0", **_C,
)  # fmt: skip
rfft2 = _n_dim(
    "rfft2", "rfftn", (-2, -1), summary="Two-dimensional transform of a real signal.",
    s_note="", returns=_HALF, example=_ONES, check="y.dtype, y.shape",
    expected="(dtype('complex64'), (2, 3))", **_R,
)  # fmt: skip
irfft2 = _n_dim(
    "irfft2", "irfftn", (-2, -1), summary="Inverse of :func:`rfft2`.",
    s_note=_N_EVEN, returns=_REAL, example="np.ones((2, 3), np.complex64)",
    check="y.dtype, y.shape", expected="(dtype('float32'), (2, 4))", **_H,
)  # fmt: skip
fftn = _n_dim(
    "fftn", "fftn", None, summary="N-dimensional discrete Fourier transform.",
    s_note="", returns=_CPLX, example="np.ones((2, 2, 2))", check="float(y[0, 0, 0].real)",
    expected="8.0", **_C,
)  # fmt: skip
ifftn = _n_dim(
    "ifftn", "ifftn", None, summary="N-dimensional inverse discrete Fourier transform.",
    s_note="", returns=_CPLX, example="np.ones((2, 2, 2))", check="float(y[0, 0, 0].real)",
    expected="1.0", **_C,
)  # fmt: skip
rfftn = _n_dim(
    "rfftn", "rfftn", None, summary="N-dimensional transform of a real signal.",
    s_note="", returns=_HALF, example="np.ones((2, 2, 4))", check="y.shape",
    expected="(2, 2, 3)", **_R,
)  # fmt: skip
irfftn = _n_dim(
    "irfftn", "irfftn", None, summary="Inverse of :func:`rfftn`.",
    s_note=_N_EVEN, returns=_REAL, example="np.ones((2, 2, 3))", check="y.shape",
    expected="(2, 2, 4)", **_H,
)  # fmt: skip


def _freq(name: str, n: Any, d: Any, real: bool) -> Any:
    n = _index(name, "n", n)
    if n < 1:
        raise ValueError(f"{name}: n must be at least 1, got {n}")
    if not isinstance(d, int | float | np.integer | np.floating) or isinstance(d, bool):
        raise TypeError(f"{name}: d must be a real number, got {d!r}")
    if not d:
        raise ValueError(f"{name}: d must be non-zero, got {d!r}")
    return get_backend().fft_freq(n, d, real)


@operation("gk.fft.fftfreq")
def fftfreq(n: int, d: float = 1.0) -> Any:
    """Sample frequencies of :func:`fft` for ``n`` points spaced ``d`` apart.

    Created on the active backend's current device, in float64.

    Parameters
    ----------
    n : int
        Window length, at least 1.
    d : float, optional
        Sample spacing (default 1.0), non-zero.

    Returns
    -------
    array
        ``[0, 1, ..., n//2 - 1 (or n//2), -(n//2), ..., -1] / (d * n)``.

    Raises
    ------
    ValueError
        ``n`` is below 1 or ``d`` is zero.
    TypeError
        ``n`` is not an integer or ``d`` is not a real number.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.fftfreq(4, d=0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    return _freq("gk.fft.fftfreq", n, d, real=False)


@operation("gk.fft.rfftfreq")
def rfftfreq(n: int, d: float = 1.0) -> Any:
    """Sample frequencies of :func:`rfft` for ``n`` points spaced ``d`` apart.

    Parameters
    ----------
    n : int
        Window length, at least 1.
    d : float, optional
        Sample spacing (default 1.0), non-zero.

    Returns
    -------
    array
        ``[0, 1, ..., n//2] / (d * n)``, float64, on the active backend.

    Raises
    ------
    ValueError
        ``n`` is below 1 or ``d`` is zero.
    TypeError
        ``n`` is not an integer or ``d`` is not a real number.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _freq("gk.fft.rfftfreq", n, d, real=True)


def _shift(name: str, x: Any, axes: Any, inverse: bool) -> Any:
    x = _dtypes.check(name, "x", x)
    backend, (x,) = prepare(x, names=("x",))
    if not backend.owns(x):
        x = backend.asarray(x)
    shape = tuple(x.shape)
    axes = tuple(range(len(shape))) if axes is None else _axes(name, "axes", axes, shape)
    return backend.fft_shift(x, axes, inverse)


@operation("gk.fft.fftshift")
def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Move the zero-frequency term to the centre of the spectrum.

    Parameters
    ----------
    x : array_like
        Spectrum, on any backend.
    axes : int or sequence of int, optional
        Axes to shift, each at most once (default all).

    Returns
    -------
    array
        ``x`` rolled by ``n // 2`` along each axis.

    Raises
    ------
    ValueError
        An axis is out of range or repeated.
    TypeError
        ``x`` has a non-numeric dtype, or an axis is not an integer.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.fftshift(gk.fft.fftfreq(5)).tolist()
    [-0.4, -0.2, 0.0, 0.2, 0.4]
    """
    return _shift("gk.fft.fftshift", x, axes, inverse=False)


@operation("gk.fft.ifftshift")
def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Inverse of :func:`fftshift` (they differ for odd lengths).

    Parameters
    ----------
    x : array_like
        Centred spectrum, on any backend.
    axes : int or sequence of int, optional
        Axes to shift, each at most once (default all).

    Returns
    -------
    array
        ``x`` rolled by ``-(n // 2)`` along each axis.

    Raises
    ------
    ValueError
        An axis is out of range or repeated.
    TypeError
        ``x`` has a non-numeric dtype, or an axis is not an integer.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.ifftshift([-0.4, -0.2, 0.0, 0.2, 0.4]).tolist()
    [0.0, 0.2, 0.4, -0.4, -0.2]
    """
    return _shift("gk.fft.ifftshift", x, axes, inverse=True)


def engine() -> str:
    """Name of the library computing transforms on the active backend.

    ``"scipy"`` (``scipy.fft`` on all cores) or ``"pyfftw"`` (when installed, or
    chosen with ``GPUKIT_FFT_ENGINE``) on the numpy backend, ``"cufft"`` on cupy.

    Returns
    -------
    str
        The engine's name.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.engine() in ("scipy", "pyfftw")
    True
    """
    return get_backend().fft_engine()
