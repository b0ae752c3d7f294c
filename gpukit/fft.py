"""``gk.fft``: NumPy's FFT API on every backend, single precision kept single.

Loaded on first access of ``gk.fft``. Each function validates ``n``/``s``,
``axis``/``axes``, ``norm``, ``workers`` and ``out`` here, casts the input to its
working dtype, then calls one backend method: ``scipy.fft`` on the numpy backend (so a
``scipy.fft.set_backend`` in effect picks the library), cuFFT through
``cupyx.scipy.fft`` on cupy.

Dtype rules (the same on every backend, as NumPy 2): float16, float32 and complex64
inputs are transformed in single precision (complex64 spectra, float32 real outputs);
integers, bools, float64 and complex128 in double precision. Other dtypes (strings,
objects, long double, ...) raise ``TypeError`` (:mod:`gpukit._dispatch.dtypes`).
"""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation, prepare
from ._docstrings import paragraphs
from ._runtime.devices import check_device
from ._select.selection import get_backend

__all__ = [
    "engine",
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "hfft2",
    "hfftn",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "ihfft2",
    "ihfftn",
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
_REAL_IN = frozenset({"rfftn", "ihfftn"})  # real input, complex half-spectrum output
_REAL_OUT = frozenset({"irfftn", "hfftn"})  # complex (Hermitian) input, real output
#: What ``workers=-1`` means (SciPy counts from ``os.cpu_count()`` too).
_CPU_COUNT = os.cpu_count() or 1

Axes = Sequence[int] | None
Shape = Sequence[int] | None


def _index(name: str, label: str, value: Any) -> int:
    if isinstance(value, bool):  # operator.index(True) is 1: never what was meant
        raise TypeError(f"{name}: {label} must be an integer, got {value!r}")
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


def _lengths(name: str, s: Any, one_d: bool) -> tuple[int, ...]:
    if one_d or isinstance(s, int | np.integer):
        return (_index(name, "n" if one_d else "s", s),)
    try:
        items = tuple(s)
    except TypeError:
        raise TypeError(f"{name}: s must be a sequence of integers, got {s!r}") from None
    if None in items:
        raise TypeError(
            f"{name}: s={s!r} contains None; use -1 for x's own length along that axis "
            "(NumPy 2 deprecated None there)"
        )
    return tuple(_index(name, "s", v) for v in items)


def _plan(
    name: str, kind: str, shape: tuple[int, ...], s: Any, axes: Any, one_d: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Resolve NumPy's ``s``/``axes`` (or ``n``/``axis``) rules to explicit tuples.

    ``s[i] == -1`` is the input's length along ``axes[i]`` (NumPy 2, SciPy). Without
    ``s``, a Hermitian input of length ``m`` on the last axis gives ``2 * (m - 1)``.
    """
    ax_label = "axis" if one_d else "axes"
    given = s
    if not shape:
        raise ValueError(f"{name}: x must have at least one dimension, got a 0-d array")
    if s is not None:
        s = _lengths(name, s, one_d)
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
    elif not one_d:
        s = tuple(shape[a] if n == -1 else n for n, a in zip(s, axes, strict=True))
    for length, a in zip(s, axes, strict=True):
        if length < 1:
            if given is None and kind in _REAL_OUT:  # 2 * (m - 1) of a length-1 input
                hint = f" (pass {'n' if one_d else 's'} explicitly)"
            else:
                hint = "" if one_d else ", or -1 for x's own length"
            raise ValueError(
                f"{name}: the transform length along axis {a} is {length}, it must be at "
                f"least 1{hint}; x has shape {shape}"
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


def _workers(name: str, workers: Any) -> int:
    """SciPy's ``workers`` rule as a thread count; gpukit's default is every core."""
    if workers is None:
        return _CPU_COUNT
    count = _index(name, "workers", workers)
    if count == 0:
        raise ValueError(f"{name}: workers must not be zero (-1 is every core)")
    if count < -_CPU_COUNT:
        raise ValueError(
            f"{name}: workers={count} is out of range; negative values count back from the "
            f"{_CPU_COUNT} cores, so it must not be less than {-_CPU_COUNT}"
        )
    return count + 1 + _CPU_COUNT if count < 0 else count


def _result_shape(kind: str, shape: tuple[int, ...], s: tuple[int, ...], axes: tuple[int, ...]):
    out = list(shape)
    for n, a in zip(s, axes, strict=True):
        out[a] = n
    if kind in _REAL_IN:
        out[axes[-1]] = s[-1] // 2 + 1
    return tuple(out)


def _check_out(name: str, out: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """NumPy's ``out`` rules, checked before any work: shape, cast, writeable."""
    if tuple(out.shape) != shape:
        raise ValueError(
            f"{name}: out has wrong shape {tuple(out.shape)}; the result has shape {shape}"
        )
    if not np.can_cast(dtype, out.dtype, casting="same_kind"):
        raise TypeError(
            f"{name}: out has dtype {out.dtype}, but the {dtype} result cannot be cast to it "
            "under 'same_kind' casting (NumPy's rule for out)"
        )
    if not getattr(getattr(out, "flags", None), "writeable", True):
        raise ValueError(f"{name}: out is read-only")


def _placed(name: str, x: Any, out: Any) -> tuple[Any, Any, Any]:
    """(backend, x, out) with x on the backend; ``out`` must already be an array there."""
    if out is not None and (
        isinstance(out, np.generic) or not (hasattr(out, "shape") and hasattr(out, "dtype"))
    ):
        raise TypeError(f"{name}: out must be an array, got {type(out).__name__}")
    backend, (x, dest) = prepare(x, out, names=("x", "out"))
    if out is not None and (dest is not out or not backend.owns(out)):
        raise TypeError(
            f"{name}: out must be an array of the {backend.name} backend on the device x is "
            f"on, got {type(out).__module__}.{type(out).__name__}; the result cannot be "
            "written into a copy"
        )
    if not backend.owns(x):  # lists and scalars on a host backend
        x = backend.asarray(x)
    return backend, x, out


def _transform(
    name: str, kind: str, x: Any, s: Any, axes: Any, norm: Any, dest: Any, workers: Any, one_d: bool
) -> Any:
    """Validate, transform, and write the result into ``dest`` (``out``) when given.

    ``dest`` is written only after the whole transform succeeded, so the out-of-memory
    retry of :func:`gpukit._runtime.memory.operation` may run this twice.
    """
    if norm not in _NORMS:
        raise ValueError(
            f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}"
        )
    threads = _workers(name, workers)
    x = _dtypes.check(name, "x", x)
    backend, x, dest = _placed(name, x, dest)
    s, axes = _plan(name, kind, tuple(x.shape), s, axes, one_d)
    work, result = _work_dtype(name, kind, np.dtype(x.dtype))
    if dest is not None:
        _check_out(name, dest, _result_shape(kind, tuple(x.shape), s, axes), result)
    y = backend.fft_transform(kind, x.astype(work, copy=False), s, axes, norm, threads)
    y = y.astype(result, copy=False)  # a no-op unless a plug-in's library upcasts
    if dest is None:
        return y
    backend.xp.copyto(dest, y, casting="same_kind")
    return dest


def _runner(name: str, kind: str, one_d: bool) -> Callable[..., Any]:
    """The operation behind a public transform (it owns ``out``, not the OOM wrapper)."""

    @operation(name)
    def run(x: Any, s: Any, axes: Any, norm: Any, dest: Any, workers: Any) -> Any:
        return _transform(name, kind, x, s, axes, norm, dest, workers, one_d)

    return run


_COMMON_PARAMS = """norm : {{None, "backward", "ortho", "forward"}}, optional
    Which direction is scaled by ``1/{count}`` (NumPy's meaning; None is "backward").
out : array, optional
    Where to put the result, as NumPy's ``out``: an array of the backend and device
    ``x`` is on, of the result's shape, whose dtype the result casts to under
    ``"same_kind"`` rules. It is written once the transform has succeeded (it may be
    ``x`` itself) and returned.
workers : int, optional
    Threads of the CPU engines, SciPy's meaning (negative values count back from the
    number of cores: -1 is all of them); default every core. Ignored on the GPU,
    validated all the same."""

_COMMON_RAISES = """ValueError
    {value_errors}, ``norm`` is unknown, ``workers`` is zero or below minus the core
    count, or ``out`` has the wrong shape or is read-only.
TypeError
    {type_errors}, ``x`` has a non-numeric dtype{type_note}, ``out`` is not an array
    on the backend and device of ``x``, or the result cannot be cast to ``out``'s
    dtype."""

_EXAMPLES = """>>> import numpy as np
>>> import gpukit as gk
>>> with gk.use_backend("numpy"):
...     y = gk.fft.{fn}({example})
>>> {check}
{expected}
>>> out = np.empty_like(y)
>>> with gk.use_backend("numpy"):
...     z = gk.fft.{fn}({example}, out=out, workers=1)
>>> z is out and bool((out == y).all())
True"""


def _template(params: str) -> str:
    """A transform's docstring template: its own parameters, then what every transform shares."""
    return (
        "{summary}\n\nParameters\n----------\nx : array_like\n    Input{input_note}.\n"
        + params
        + _COMMON_PARAMS
        + "\n\nReturns\n-------\narray\n    {returns} ``out`` when given.\n\nRaises\n------\n"
        + _COMMON_RAISES
        + "\n\nExamples\n--------\n"
        + _EXAMPLES
    )


_ONE_D_DOC = _template(
    """n : int, optional
    Length of the transform{n_note}; ``x`` is cropped or zero-padded along ``axis``.
axis : int, optional
    Axis to transform (default the last).
"""
)
_ONE_D_ERRORS = dict(
    count="n",
    value_errors="``n`` is below 1, ``axis`` is out of range",
    type_errors="``n``, ``axis`` or ``workers`` is not an integer",
)


def _one_d(fn_name: str, kind: str, **doc: str):
    name = f"gk.fft.{fn_name}"
    run = _runner(name, kind, one_d=True)

    def transform(
        x: Any,
        n: int | None = None,
        axis: int = -1,
        norm: str | None = None,
        out: Any = None,
        *,
        workers: int | None = None,
    ) -> Any:
        return run(x, n, (axis,), norm, out, workers)

    transform.__name__ = transform.__qualname__ = fn_name
    transform.__module__ = __name__
    transform.__doc__ = _ONE_D_DOC.format(fn=fn_name, **_ONE_D_ERRORS, **doc)
    return transform


_N_DIM_DOC = _template(
    """s : sequence of int, optional
    Transform lengths along ``axes``{s_note}; ``x`` is cropped or zero-padded. An entry
    ``-1`` keeps ``x``'s own length along that axis, NumPy 2's rule (on the last axis of
    a Hermitian input that length is ``m``, not the default ``2 * (m - 1)``).
axes : sequence of int, optional
    Axes to transform, each at most once (default {axes_default}).
"""
)
_N_DIM_ERRORS = dict(
    count="prod(s)",
    value_errors=(
        "An axis is out of range or repeated, ``s`` and ``axes`` differ in length, a "
        "length is below 1 (other than -1)"
    ),
    type_errors="An entry of ``s`` or ``axes``, or ``workers``, is not an integer",
)


def _n_dim(fn_name: str, kind: str, default_axes: tuple[int, ...] | None, **doc: str):
    name = f"gk.fft.{fn_name}"
    run = _runner(name, kind, one_d=False)

    def transform(
        x: Any,
        s: Shape = None,
        axes: Axes = default_axes,
        norm: str | None = None,
        out: Any = None,
        *,
        workers: int | None = None,
    ) -> Any:
        return run(x, s, axes, norm, out, workers)

    transform.__name__ = transform.__qualname__ = fn_name
    transform.__module__ = __name__
    axes_default = "every axis, or the last ``len(s)``" if default_axes is None else "(-2, -1)"
    transform.__doc__ = _N_DIM_DOC.format(
        fn=fn_name, axes_default=axes_default, **_N_DIM_ERRORS, **doc
    )
    return transform


_C = dict(input_note=" (real input is promoted to complex)", type_note="")
_R = dict(input_note="; must be real", type_note=", or ``x`` is complex")
_H = dict(input_note=", the non-negative frequency half of a Hermitian spectrum", type_note="")
_CPLX = "Complex spectrum: complex64 for single-precision input, complex128 otherwise;"
_REAL = "Real signal: float32 for single-precision input, float64 otherwise;"
_HALF = "Complex half spectrum (``n // 2 + 1`` along the last transformed axis);"
_ONES = "np.ones((2, 4), np.float32)"
_N_EVEN = "; default ``2 * (m - 1)`` for an input of length ``m`` along the last axis"
_SCIPY = " (SciPy's; NumPy has only the 1-D one)"

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
hfft2 = _n_dim(
    "hfft2", "hfftn", (-2, -1),
    summary=f"Two-dimensional transform of a Hermitian-symmetric signal{_SCIPY}.",
    s_note=_N_EVEN, returns=_REAL, example="np.ones((2, 3), np.complex64)",
    check="y.dtype, y.shape", expected="(dtype('float32'), (2, 4))", **_H,
)  # fmt: skip
ihfft2 = _n_dim(
    "ihfft2", "ihfftn", (-2, -1), summary=f"Inverse of :func:`hfft2`{_SCIPY}.",
    s_note="", returns=_HALF, example=_ONES, check="y.dtype, y.shape",
    expected="(dtype('complex64'), (2, 3))", **_R,
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
hfftn = _n_dim(
    "hfftn", "hfftn", None,
    summary=f"N-dimensional transform of a Hermitian-symmetric signal{_SCIPY}.",
    s_note=_N_EVEN, returns=_REAL, example="np.ones((2, 2, 3))", check="y.shape",
    expected="(2, 2, 4)", **_H,
)  # fmt: skip
ihfftn = _n_dim(
    "ihfftn", "ihfftn", None, summary=f"Inverse of :func:`hfftn`{_SCIPY}.",
    s_note="", returns=_HALF, example="np.ones((2, 2, 4))", check="y.shape",
    expected="(2, 2, 3)", **_R,
)  # fmt: skip


def _freq(name: str, n: Any, d: Any, device: Any, real: bool) -> Any:
    n = _index(name, "n", n)
    if n < 1:
        raise ValueError(f"{name}: n must be at least 1, got {n}")
    if not isinstance(d, int | float | np.integer | np.floating) or isinstance(d, bool):
        raise TypeError(f"{name}: d must be a real number, got {d!r}")
    if not d:
        raise ValueError(f"{name}: d must be non-zero, got {d!r}")
    backend = get_backend()
    if device is not None:
        device = check_device(backend, device, f"{name}: device")
    with contextlib.nullcontext() if device is None else backend.use_device(device):
        # asarray places it on the current (virtual) device, as creation functions do
        return backend.asarray(backend.fft_freq(n, d, real))


_freq_doc = paragraphs(
    {
        "freq_params": """\
n : int
    Window length, at least 1.
d : float, optional
    Sample spacing (default 1.0), non-zero.
device : int, optional
    Index of the active backend's device to create the result on (default the
    current device). NumPy 2 takes only ``"cpu"`` here.""",
        "freq_raises": """\
ValueError
    ``n`` is below 1, ``d`` is zero or ``device`` is out of range.
TypeError
    ``n`` or ``device`` is not an integer, or ``d`` is not a real number.""",
    }
)


@operation("gk.fft.fftfreq")
@_freq_doc
def fftfreq(n: int, d: float = 1.0, device: int | None = None) -> Any:
    """Sample frequencies of :func:`fft` for ``n`` points spaced ``d`` apart.

    Created on the active backend's current device, in float64.

    Parameters
    ----------
    {freq_params}

    Returns
    -------
    array
        ``[0, 1, ..., n//2 - 1 (or n//2), -(n//2), ..., -1] / (d * n)``.

    Raises
    ------
    {freq_raises}

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.fftfreq(4, d=0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    return _freq("gk.fft.fftfreq", n, d, device, real=False)


@operation("gk.fft.rfftfreq")
@_freq_doc
def rfftfreq(n: int, d: float = 1.0, device: int | None = None) -> Any:
    """Sample frequencies of :func:`rfft` for ``n`` points spaced ``d`` apart.

    Parameters
    ----------
    {freq_params}

    Returns
    -------
    array
        ``[0, 1, ..., n//2] / (d * n)``, float64, on the active backend.

    Raises
    ------
    {freq_raises}

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _freq("gk.fft.rfftfreq", n, d, device, real=True)


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

    ``"scipy"`` on the numpy backend (``scipy.fft``, which hands each transform to the
    library chosen with ``scipy.fft.set_backend``, its own by default), ``"cufft"`` on
    cupy.

    Returns
    -------
    str
        The engine's name.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.engine()
    'scipy'
    """
    return get_backend().fft_engine()
