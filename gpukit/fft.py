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

import functools
import operator
import os
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation, prepare
from ._dispatch.capabilities import checked, declare
from ._dispatch.inputs import keep, plan_for
from ._docstrings import paragraphs
from ._runtime import plans as _plans
from ._runtime.devices import check_device
from ._runtime.plans import token
from ._select.selection import active, get_backend

if TYPE_CHECKING:
    from ._typing import Array, NumpyArray
    from .sharding._array import ShardedArray

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
#: (complex-to-complex kind, work dtype) -> the real input a backend may take as it is
#: (``fft_takes_real``)
_REAL_OF = {
    (kind, np.dtype(c)): np.dtype(r)
    for kind in ("fftn", "ifftn")
    for c, r in (("complex64", "float32"), ("complex128", "float64"))
}
#: What ``workers=-1`` means (SciPy counts from ``os.cpu_count()`` too).
_CPU_COUNT = os.cpu_count() or 1

#: ``norm`` of every transform: which direction is scaled (None is "backward").
Norm = Literal["backward", "ortho", "forward"] | None


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


# (operation, selected backend, x's type, dtype and shape, s, axes, norm, workers) -> the
# transform's plan: (backend, the backend's transform of such arrays, work dtype, result
# dtype; None when the backend's transforms keep it: FFTOps.fft_keeps_dtype)
_PLANS = _plans.table()


def _planned(
    key: Any,
    name: str,
    kind: str,
    x: Any,
    s: Any,
    axes: Any,
    norm: Any,
    dest: Any,
    workers: Any,
    one_d: bool,
) -> tuple[tuple[Any, ...], Any, Any]:
    """Check every argument and make the transform's plan; keep it under ``key`` (None:
    not kept), or under the key of ``x`` as converted or moved to the device by the checks
    (which rerun on every such call), where that ``x`` passes through unchanged. Returns
    ``(plan, x, dest)``, ``x`` on the backend."""
    since = _plans.generation()
    given = x
    if norm not in _NORMS:
        raise ValueError(
            f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}"
        )
    threads = _workers(name, workers)
    x = _dtypes.check(name, "x", x)
    backend, x, dest = _placed(name, x, dest)
    if x is not given and key is not None:
        # converted, or moved to the device (guarded and counted on every call): from here
        # on this is a call on x itself, whose plan an earlier call may have kept
        key = (name, key[1], type(x), x.dtype, x.shape, *key[5:])
        plan = _PLANS.get(key)
        if plan is not None:
            return plan, x, dest
        given = x
    shape = tuple(x.shape)
    s_, axes_ = _plan(name, kind, shape, s, axes, one_d)
    work, result = _work_dtype(name, kind, np.dtype(x.dtype))
    if backend.fft_takes_real and x.dtype.kind in "biuf":
        # real input stays real, cast only to the real dtype of the work (an integer to
        # float64): the backend's library promotes it, and every real dtype takes one path
        work = _REAL_OF.get((kind, work), work)
    if dest is not None:
        _check_out(name, dest, _result_shape(kind, shape, s_, axes_), result)
    transform = backend.fft_plan(kind, shape, s_, axes_, norm, threads)
    # the result dtype to enforce, None where the backend's library keeps it itself
    plan = (backend, transform, work, None if backend.fft_keeps_dtype else result)
    keep(_PLANS, key, since, plan, backend, (given,), (x,))
    return plan, x, dest


def _runner(name: str, kind: str, one_d: bool) -> Callable[..., Any]:
    """The operation behind a public transform (it owns ``out``, not the OOM wrapper)."""

    @operation(name)
    def run(x: Any, s: Any, axes: Any, norm: Any, dest: Any, workers: Any) -> Any:
        """Validate, transform, and write the result into ``dest`` (``out``) when given.

        A call without ``out`` on an array that needs no conversion nor transfer is
        planned: its checks and normalised arguments are kept for the next call with the
        same key (:func:`gpukit._dispatch.inputs.plan_for`'s, built here without its
        call). A host array reaching a device backend is checked and moved on every call,
        then takes the plan of the device array it became. ``dest`` is written only after
        the whole transform succeeded, so the out-of-memory retry of
        :func:`gpukit._runtime.memory.operation` may run this twice.
        """
        key = plan = None
        if dest is None:  # (a tuple of workers is never valid: its elements' types do not matter)
            # the common s (None) and axes (None, or the public function's (axis,) of an
            # int) as they are: no token is either
            lengths = s if s is None else token(s)
            if one_d:
                along = axes if type(axes[0]) is int else token(axes)
            else:
                along = axes if axes is None else token(axes)
            try:
                dtype = x.dtype  # read once: a device array's attributes are not free
                key = (
                    name,
                    active(),
                    type(x),
                    dtype,
                    x.shape,
                    lengths,
                    along,
                    norm,
                    workers,
                    type(workers),
                )
                plan = _PLANS[key]
            except KeyError:
                pass
            except (AttributeError, TypeError):  # no dtype (a list), an unhashable argument
                key = None
        if plan is None:
            plan, x, dest = _planned(key, name, kind, x, s, axes, norm, dest, workers, one_d)
            dtype = x.dtype
        backend, transform, work, result = plan
        if dtype is not work:  # an identity test first: equal built-in dtypes are one object
            x = x.astype(work, copy=False)
        y = transform(x)
        if result is not None and y.dtype is not result:  # a plug-in's library upcast
            y = y.astype(result, copy=False)
        if dest is None:
            return y
        backend.xp.copyto(dest, y, casting="same_kind")
        return dest

    declare(name, checked(name, then=lambda dtype: _work_dtype(name, kind, dtype)[1]))
    return run


def _raises(value_errors: str, type_errors: str, real_in: bool) -> str:
    """A transform's Raises section: its own argument errors, then what every one checks."""
    complex_x = " or is complex" if real_in else ""
    value = (
        f"{value_errors}, ``norm`` is unknown, ``workers`` is zero or below minus the core "
        "count, or ``out`` has the wrong shape or is read-only."
    )
    type_ = (
        f"{type_errors}, ``x`` has a non-numeric dtype{complex_x}, ``out`` is not an array "
        "on the backend and device of ``x``, or the result cannot be cast to ``out``'s dtype."
    )
    wrap = functools.partial(textwrap.fill, width=84, initial_indent="    ", break_on_hyphens=False)
    return f"ValueError\n{wrap(value, subsequent_indent='    ')}\nTypeError\n" + wrap(
        type_, subsequent_indent="    "
    )


_ONE_D_VALUE = "``n`` is below 1, ``axis`` is out of range"
_ONE_D_TYPE = "``n``, ``axis`` or ``workers`` is not an integer"
_N_DIM_VALUE = (
    "An axis is out of range or repeated, ``s`` and ``axes`` differ in length, a length is "
    "below 1 (other than -1)"
)
_N_DIM_TYPE = "An entry of ``s`` or ``axes``, or ``workers``, is not an integer"
_OUT_WORKERS = """\
out : array, optional
    Where to put the result, as NumPy's ``out``: an array of the backend and device
    ``x`` is on, of the result's shape, whose dtype the result casts to under
    ``"same_kind"`` rules. It is written once the transform has succeeded (it may be
    ``x`` itself) and returned.
workers : int, optional
    Threads of the CPU engine, SciPy's meaning (negative values count back from the
    number of cores: -1 is all of them); default every core. Ignored on the GPU,
    validated all the same."""
_S = """\
s : int or sequence of int, optional
    Transform lengths along ``axes``; ``x`` is cropped or zero-padded. An entry ``-1``
    keeps ``x``'s own length along that axis, NumPy 2's rule."""
_HERMITIAN_LENGTH = """\
    Default ``2 * (m - 1)`` along the last axis, for an input of length ``m`` there;
    ``-1`` there means ``m``."""

# The paragraphs the transforms share (gpukit._docstrings.paragraphs fills them in).
_transform_doc = paragraphs(
    {
        "n": """\
n : int, optional
    Length of the transform; ``x`` is cropped or zero-padded along ``axis``.""",
        "n_hermitian": """\
n : int, optional
    Length of the real output; ``x`` is cropped or zero-padded along ``axis`` to
    ``n // 2 + 1`` points. Default ``2 * (m - 1)`` for an input of length ``m``.""",
        "axis": """\
axis : int, optional
    Axis to transform (default the last).""",
        "s": _S,
        "s_hermitian": _S + "\n" + _HERMITIAN_LENGTH,
        "axes_2d": """\
axes : int or sequence of int, optional
    Axes to transform, each at most once (default the last two).""",
        "axes_nd": """\
axes : int or sequence of int, optional
    Axes to transform, each at most once (default every axis, or the last ``len(s)``).""",
        "norm_1d": """\
norm : {None, "backward", "ortho", "forward"}, optional
    Which direction is scaled by ``1/n`` (NumPy's meaning; None is "backward").""",
        "norm_nd": """\
norm : {None, "backward", "ortho", "forward"}, optional
    Which direction is scaled by ``1/prod(s)`` (NumPy's meaning; None is "backward").""",
        "out_workers": _OUT_WORKERS,
        "raises_1d": _raises(_ONE_D_VALUE, _ONE_D_TYPE, real_in=False),
        "raises_1d_real": _raises(_ONE_D_VALUE, _ONE_D_TYPE, real_in=True),
        "raises_nd": _raises(_N_DIM_VALUE, _N_DIM_TYPE, real_in=False),
        "raises_nd_real": _raises(_N_DIM_VALUE, _N_DIM_TYPE, real_in=True),
    }
)

_fft = _runner("gk.fft.fft", "fftn", one_d=True)
_ifft = _runner("gk.fft.ifft", "ifftn", one_d=True)
_rfft = _runner("gk.fft.rfft", "rfftn", one_d=True)
_irfft = _runner("gk.fft.irfft", "irfftn", one_d=True)
_hfft = _runner("gk.fft.hfft", "hfftn", one_d=True)
_ihfft = _runner("gk.fft.ihfft", "ihfftn", one_d=True)
_fft2 = _runner("gk.fft.fft2", "fftn", one_d=False)
_ifft2 = _runner("gk.fft.ifft2", "ifftn", one_d=False)
_rfft2 = _runner("gk.fft.rfft2", "rfftn", one_d=False)
_irfft2 = _runner("gk.fft.irfft2", "irfftn", one_d=False)
_hfft2 = _runner("gk.fft.hfft2", "hfftn", one_d=False)
_ihfft2 = _runner("gk.fft.ihfft2", "ihfftn", one_d=False)
_fftn = _runner("gk.fft.fftn", "fftn", one_d=False)
_ifftn = _runner("gk.fft.ifftn", "ifftn", one_d=False)
_rfftn = _runner("gk.fft.rfftn", "rfftn", one_d=False)
_irfftn = _runner("gk.fft.irfftn", "irfftn", one_d=False)
_hfftn = _runner("gk.fft.hfftn", "hfftn", one_d=False)
_ihfftn = _runner("gk.fft.ihfftn", "ihfftn", one_d=False)


# Each transform and shift: NumPy input gives the active backend's array, a sharded one a
# ShardedArray; other input (CuPy, Dask, lists) what it is, which checkers may not know.
@overload
def fft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def fft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def fft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def fft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """One-dimensional discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Input; real input is promoted to complex.
    {n}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The complex spectrum, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_1d}

    See Also
    --------
    ifft : The inverse transform.
    rfft : The transform of a real input, without the redundant negative frequencies.
    fft2, fftn : The transform over two or more axes.
    fftfreq : The frequency of each entry of the result.
    scipy.fft.fft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.fft(np.ones(4, np.complex64))
    >>> y.dtype, y.tolist()
    (dtype('complex64'), [(4+0j), 0j, 0j, 0j])
    >>> out = np.empty_like(y)
    >>> with gk.use_backend("numpy"):
    ...     z = gk.fft.fft(np.ones(4, np.complex64), out=out, workers=1)
    >>> z is out and bool((out == y).all())
    True
    """
    return _fft(x, n, (axis,), norm, out, workers)


@overload
def ifft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ifft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ifft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ifft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """One-dimensional inverse discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Spectrum; real input is promoted to complex.
    {n}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The complex signal, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_1d}

    See Also
    --------
    fft : The forward transform.
    irfft : The inverse transform to a real signal.
    ifft2, ifftn : The inverse transform over two or more axes.
    scipy.fft.ifft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.ifft(np.array([4 + 0j, 0, 0, 0])).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
    """
    return _ifft(x, n, (axis,), norm, out, workers)


@overload
def rfft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def rfft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def rfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def rfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """One-dimensional discrete Fourier transform of a real signal.

    Parameters
    ----------
    x : array_like
        Real input.
    {n}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The non-negative frequency half of the spectrum, ``n // 2 + 1`` entries along
        ``axis``: complex64 for float16/float32 input, complex128 otherwise; ``out``
        when given.

    Raises
    ------
    {raises_1d_real}

    See Also
    --------
    irfft : The inverse transform.
    fft : The transform of a complex input, the whole spectrum.
    rfft2, rfftn : The transform of a real input over two or more axes.
    rfftfreq : The frequency of each entry of the result.
    scipy.fft.rfft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.rfft(np.ones(4, np.float32))
    >>> y.dtype, y.tolist()
    (dtype('complex64'), [(4+0j), 0j, 0j])
    """
    return _rfft(x, n, (axis,), norm, out, workers)


@overload
def irfft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def irfft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def irfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def irfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`rfft`: the real signal of a half spectrum.

    Parameters
    ----------
    x : array_like
        The non-negative frequency half of the spectrum of a real signal.
    {n_hermitian}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The real signal, ``n`` entries along ``axis``: float32 for
        float16/float32/complex64 input, float64 otherwise; ``out`` when given.

    Raises
    ------
    {raises_1d}

    See Also
    --------
    rfft : The forward transform.
    ifft : The inverse transform to a complex signal.
    irfft2, irfftn : The inverse transform over two or more axes.
    scipy.fft.irfft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> with gk.use_backend("numpy"):
    ...     back = gk.fft.irfft(gk.fft.rfft(x), n=5)  # n: 5 is odd, the default 4
    >>> np.allclose(back, x)
    True
    """
    return _irfft(x, n, (axis,), norm, out, workers)


@overload
def hfft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def hfft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def hfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def hfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Discrete Fourier transform of a Hermitian-symmetric signal: a real spectrum.

    Parameters
    ----------
    x : array_like
        The first half of a Hermitian-symmetric signal (the rest is its conjugate).
    {n_hermitian}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The real spectrum, ``n`` entries along ``axis``: float32 for
        float16/float32/complex64 input, float64 otherwise; ``out`` when given.

    Raises
    ------
    {raises_1d}

    See Also
    --------
    ihfft : The inverse transform.
    irfft : The same transform in the inverse direction.
    hfft2, hfftn : The transform over two or more axes.
    scipy.fft.hfft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.hfft(np.array([1.0, 0, 0])).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    return _hfft(x, n, (axis,), norm, out, workers)


@overload
def ihfft(
    x: NumpyArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ihfft(
    x: ShardedArray,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ihfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ihfft(
    x: Any,
    n: int | None = None,
    axis: int = -1,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`hfft`: the Hermitian half signal of a real spectrum.

    Parameters
    ----------
    x : array_like
        Real spectrum.
    {n}
    {axis}
    {norm_1d}
    {out_workers}

    Returns
    -------
    array
        The first ``n // 2 + 1`` entries of the Hermitian signal along ``axis``:
        complex64 for float16/float32 input, complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_1d_real}

    See Also
    --------
    hfft : The forward transform.
    rfft : The same transform in the forward direction, conjugated.
    ihfft2, ihfftn : The transform over two or more axes.
    scipy.fft.ihfft : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.ihfft(np.ones(4))
    >>> y.dtype, y.real.tolist()
    (dtype('complex128'), [1.0, 0.0, 0.0])
    """
    return _ihfft(x, n, (axis,), norm, out, workers)


@overload
def fft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def fft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def fft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def fft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Two-dimensional discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Input, at least 2-D unless ``axes`` names fewer axes; real input is promoted to
        complex.
    {s}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The complex spectrum, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    ifft2 : The inverse transform.
    fft, fftn : The transform over one axis, or any number.
    rfft2 : The transform of a real input, without the redundant negative frequencies.
    scipy.fft.fft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.fft2(np.ones((2, 4), np.float32))
    >>> y.dtype, float(y[0, 0].real), float(abs(y).sum())
    (dtype('complex64'), 8.0, 8.0)
    """
    return _fft2(x, s, axes, norm, out, workers)


@overload
def ifft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ifft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ifft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ifft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Two-dimensional inverse discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Spectrum, at least 2-D unless ``axes`` names fewer axes; real input is promoted
        to complex.
    {s}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The complex signal, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    fft2 : The forward transform.
    ifft, ifftn : The inverse transform over one axis, or any number.
    irfft2 : The inverse transform to a real signal.
    scipy.fft.ifft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> with gk.use_backend("numpy"):
    ...     back = gk.fft.ifft2(gk.fft.fft2(x))
    >>> np.allclose(back, x)
    True
    """
    return _ifft2(x, s, axes, norm, out, workers)


@overload
def rfft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def rfft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def rfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def rfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Two-dimensional discrete Fourier transform of a real signal.

    Parameters
    ----------
    x : array_like
        Real input, at least 2-D unless ``axes`` names fewer axes.
    {s}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The spectrum with only the non-negative frequencies of the last axis transformed
        (``s[-1] // 2 + 1`` entries there): complex64 for float16/float32 input,
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd_real}

    See Also
    --------
    irfft2 : The inverse transform.
    rfft, rfftn : The transform of a real input over one axis, or any number.
    fft2 : The transform of a complex input, the whole spectrum.
    scipy.fft.rfft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.rfft2(np.ones((2, 4), np.float32))
    >>> y.dtype, y.shape
    (dtype('complex64'), (2, 3))
    """
    return _rfft2(x, s, axes, norm, out, workers)


@overload
def irfft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def irfft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def irfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def irfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`rfft2`: the real signal of a half spectrum.

    Parameters
    ----------
    x : array_like
        Spectrum of a real signal, the non-negative frequencies along the last axis of
        ``axes``.
    {s_hermitian}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The real signal: float32 for float16/float32/complex64 input, float64
        otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    rfft2 : The forward transform.
    irfft, irfftn : The inverse transform over one axis, or any number.
    ifft2 : The inverse transform to a complex signal.
    scipy.fft.irfft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.arange(12.0).reshape(3, 4)
    >>> with gk.use_backend("numpy"):
    ...     back = gk.fft.irfft2(gk.fft.rfft2(x))
    >>> back.shape, np.allclose(back, x)
    ((3, 4), True)
    """
    return _irfft2(x, s, axes, norm, out, workers)


@overload
def hfft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def hfft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def hfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def hfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Two-dimensional transform of a Hermitian-symmetric signal: a real spectrum.

    SciPy's; NumPy has only the 1-D one.

    Parameters
    ----------
    x : array_like
        The non-negative half, along the last axis of ``axes``, of a
        Hermitian-symmetric signal.
    {s_hermitian}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The real spectrum: float32 for float16/float32/complex64 input, float64
        otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    ihfft2 : The inverse transform.
    hfft, hfftn : The transform over one axis, or any number.
    scipy.fft.hfft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.hfft2(np.ones((2, 3), np.complex64))
    >>> y.dtype, y.shape
    (dtype('float32'), (2, 4))
    """
    return _hfft2(x, s, axes, norm, out, workers)


@overload
def ihfft2(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ihfft2(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ihfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ihfft2(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = (-2, -1),
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`hfft2`: the Hermitian half signal of a real spectrum.

    SciPy's; NumPy has only the 1-D one.

    Parameters
    ----------
    x : array_like
        Real spectrum, at least 2-D unless ``axes`` names fewer axes.
    {s}
    {axes_2d}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The Hermitian signal's non-negative half along the last axis (``s[-1] // 2 + 1``
        entries there): complex64 for float16/float32 input, complex128 otherwise;
        ``out`` when given.

    Raises
    ------
    {raises_nd_real}

    See Also
    --------
    hfft2 : The forward transform.
    ihfft, ihfftn : The transform over one axis, or any number.
    scipy.fft.ihfft2 : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> with gk.use_backend("numpy"):
    ...     back = gk.fft.hfft2(gk.fft.ihfft2(x), s=x.shape)
    >>> np.allclose(back, x)
    True
    """
    return _ihfft2(x, s, axes, norm, out, workers)


@overload
def fftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def fftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def fftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def fftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """N-dimensional discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Input; real input is promoted to complex.
    {s}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The complex spectrum, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    ifftn : The inverse transform.
    fft, fft2 : The transform over one or two axes.
    rfftn : The transform of a real input, without the redundant negative frequencies.
    scipy.fft.fftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.fftn(np.ones((2, 2, 2)))
    >>> y.dtype, float(y[0, 0, 0].real), float(abs(y).sum())
    (dtype('complex128'), 8.0, 8.0)
    """
    return _fftn(x, s, axes, norm, out, workers)


@overload
def ifftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ifftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ifftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ifftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """N-dimensional inverse discrete Fourier transform.

    Parameters
    ----------
    x : array_like
        Spectrum; real input is promoted to complex.
    {s}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The complex signal, complex64 for float16/float32/complex64 input and
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    fftn : The forward transform.
    ifft, ifft2 : The inverse transform over one or two axes.
    irfftn : The inverse transform to a real signal.
    scipy.fft.ifftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.fft.ifftn(np.ones((2, 2, 2)))
    >>> float(y[0, 0, 0].real), float(abs(y).sum())
    (1.0, 1.0)
    """
    return _ifftn(x, s, axes, norm, out, workers)


@overload
def rfftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def rfftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def rfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def rfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """N-dimensional discrete Fourier transform of a real signal.

    Parameters
    ----------
    x : array_like
        Real input.
    {s}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The spectrum with only the non-negative frequencies of the last axis transformed
        (``s[-1] // 2 + 1`` entries there): complex64 for float16/float32 input,
        complex128 otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd_real}

    See Also
    --------
    irfftn : The inverse transform.
    rfft, rfft2 : The transform of a real input over one or two axes.
    fftn : The transform of a complex input, the whole spectrum.
    scipy.fft.rfftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.rfftn(np.ones((2, 2, 4))).shape
    (2, 2, 3)
    """
    return _rfftn(x, s, axes, norm, out, workers)


@overload
def irfftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def irfftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def irfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def irfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`rfftn`: the real signal of a half spectrum.

    Parameters
    ----------
    x : array_like
        Spectrum of a real signal, the non-negative frequencies along the last axis of
        ``axes``.
    {s_hermitian}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The real signal: float32 for float16/float32/complex64 input, float64
        otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    rfftn : The forward transform.
    irfft, irfft2 : The inverse transform over one or two axes.
    ifftn : The inverse transform to a complex signal.
    scipy.fft.irfftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.arange(24.0).reshape(2, 3, 4)
    >>> with gk.use_backend("numpy"):
    ...     half = gk.fft.rfftn(x, axes=(1, 2))  # the last two axes of each matrix
    ...     back = gk.fft.irfftn(half, s=(3, 4), axes=(1, 2))
    >>> back.shape, np.allclose(back, x)
    ((2, 3, 4), True)
    """
    return _irfftn(x, s, axes, norm, out, workers)


@overload
def hfftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def hfftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def hfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def hfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """N-dimensional transform of a Hermitian-symmetric signal: a real spectrum.

    SciPy's; NumPy has only the 1-D one.

    Parameters
    ----------
    x : array_like
        The non-negative half, along the last axis of ``axes``, of a
        Hermitian-symmetric signal.
    {s_hermitian}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The real spectrum: float32 for float16/float32/complex64 input, float64
        otherwise; ``out`` when given.

    Raises
    ------
    {raises_nd}

    See Also
    --------
    ihfftn : The inverse transform.
    hfft, hfft2 : The transform over one or two axes.
    scipy.fft.hfftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.hfftn(np.ones((2, 2, 3))).shape
    (2, 2, 4)
    """
    return _hfftn(x, s, axes, norm, out, workers)


@overload
def ihfftn(
    x: NumpyArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Array: ...
@overload
def ihfftn(
    x: ShardedArray,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> ShardedArray: ...
@overload
def ihfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any: ...


@_transform_doc
def ihfftn(
    x: Any,
    s: int | Sequence[int] | None = None,
    axes: int | Sequence[int] | None = None,
    norm: Norm = None,
    out: Array | None = None,
    *,
    workers: int | None = None,
) -> Any:
    """Inverse of :func:`hfftn`: the Hermitian half signal of a real spectrum.

    SciPy's; NumPy has only the 1-D one.

    Parameters
    ----------
    x : array_like
        Real spectrum.
    {s}
    {axes_nd}
    {norm_nd}
    {out_workers}

    Returns
    -------
    array
        The Hermitian signal's non-negative half along the last axis (``s[-1] // 2 + 1``
        entries there): complex64 for float16/float32 input, complex128 otherwise;
        ``out`` when given.

    Raises
    ------
    {raises_nd_real}

    See Also
    --------
    hfftn : The forward transform.
    ihfft, ihfft2 : The transform over one or two axes.
    scipy.fft.ihfftn : SciPy's transform, which this follows.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.ihfftn(np.ones((2, 2, 4))).shape
    (2, 2, 3)
    """
    return _ihfftn(x, s, axes, norm, out, workers)


def _freq(name: str, n: Any, d: Any, device: Any, real: bool) -> Any:
    if type(n) is not int:  # the common int needs no conversion (a bool is refused there)
        n = _index(name, "n", n)
    if n < 1:
        raise ValueError(f"{name}: n must be at least 1, got {n}")
    if type(d) is not float and (  # the common float first: isinstance of a union is slow
        not isinstance(d, int | float | np.integer | np.floating) or isinstance(d, bool)
    ):
        raise TypeError(f"{name}: d must be a real number, got {d!r}")
    if not d:
        raise ValueError(f"{name}: d must be non-zero, got {d!r}")
    backend = get_backend()
    if device is None:
        return _freq_here(backend, n, d, real)
    with backend.use_device(check_device(backend, device, f"{name}: device")):
        return _freq_here(backend, n, d, real)


def _freq_here(backend: Any, n: int, d: Any, real: bool) -> Any:
    """The frequencies on the current device, as creation functions make them: an array
    a device backend made there (``fft_freq``) as it is, any other (the host backend's,
    for the current virtual device) through ``asarray``."""
    out = backend.fft_freq(n, d, real)
    return out if backend.is_device and backend.owns(out) else backend.asarray(out)


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
def fftfreq(n: int, d: float = 1.0, device: int | None = None) -> Array:
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

    See Also
    --------
    rfftfreq : The frequencies of :func:`rfft`'s half spectrum.
    fftshift : The frequencies in increasing order.
    fft : The transform whose entries these are the frequencies of.
    scipy.fft.fftfreq : SciPy's function, which this follows.

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
def rfftfreq(n: int, d: float = 1.0, device: int | None = None) -> Array:
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

    See Also
    --------
    fftfreq : The frequencies of :func:`fft`'s whole spectrum.
    rfft : The transform whose entries these are the frequencies of.
    scipy.fft.rfftfreq : SciPy's function, which this follows.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _freq("gk.fft.rfftfreq", n, d, device, real=True)


# (operation, selected backend, x's type, dtype and shape, axes) -> (backend, the axes as
# non-negative indices)
_SHIFTS = _plans.table()


def _shift(name: str, x: Any, axes: Any, inverse: bool) -> Any:
    plan, key = plan_for(_SHIFTS, name, x, axes if axes is None else token(axes))
    if plan is None:
        since = _plans.generation()
        given = x
        x = _dtypes.check(name, "x", x)
        backend, (x,) = prepare(x, names=("x",))
        if not backend.owns(x):
            x = backend.asarray(x)
        shape = tuple(x.shape)
        axes = tuple(range(len(shape))) if axes is None else _axes(name, "axes", axes, shape)
        plan = (backend, axes)
        keep(_SHIFTS, key, since, plan, backend, (given,), (x,))
    backend, axes = plan
    return backend.fft_shift(x, axes, inverse)


@overload
def fftshift(x: NumpyArray, axes: int | Sequence[int] | None = None) -> Array: ...
@overload
def fftshift(x: ShardedArray, axes: int | Sequence[int] | None = None) -> ShardedArray: ...
@overload
def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any: ...


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

    See Also
    --------
    ifftshift : The inverse shift.
    fftfreq : Frequencies in the order :func:`fft` returns them.
    scipy.fft.fftshift : SciPy's function, which this follows.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.fftshift(gk.fft.fftfreq(5)).tolist()
    [-0.4, -0.2, 0.0, 0.2, 0.4]
    """
    return _shift("gk.fft.fftshift", x, axes, inverse=False)


declare("gk.fft.fftshift", checked("gk.fft.fftshift"))


@overload
def ifftshift(x: NumpyArray, axes: int | Sequence[int] | None = None) -> Array: ...
@overload
def ifftshift(x: ShardedArray, axes: int | Sequence[int] | None = None) -> ShardedArray: ...
@overload
def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any: ...


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

    See Also
    --------
    fftshift : The shift this undoes.
    scipy.fft.ifftshift : SciPy's function, which this follows.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.ifftshift([-0.4, -0.2, 0.0, 0.2, 0.4]).tolist()
    [0.0, 0.2, 0.4, -0.4, -0.2]
    """
    return _shift("gk.fft.ifftshift", x, axes, inverse=True)


declare("gk.fft.ifftshift", checked("gk.fft.ifftshift"))


def engine() -> str:
    """Name of the library computing transforms on the active backend.

    ``"scipy"`` on the numpy backend (``scipy.fft``, which hands each transform to the
    library chosen with ``scipy.fft.set_backend``, its own by default), ``"cufft"`` on
    cupy.

    Returns
    -------
    str
        The engine's name.

    See Also
    --------
    scipy.fft.set_backend : Picks the library behind ``scipy.fft`` on the numpy backend.
    gpukit.get_backend : The active backend.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.fft.engine()
    'scipy'
    """
    return get_backend().fft_engine()
