"""Test helpers for code built on gpukit: closeness to a float64 reference, random inputs.

:func:`assert_close` checks a result the way gpukit's own suite does: its array type, device,
dtype and shape, then its error against a reference in the Frobenius norm with a default
tolerance per dtype (the numerics contract, :doc:`/numerics`). :func:`random_array` and
:func:`random_spd` make seeded inputs on the host or on a backend.

Importing this module is as cheap as ``import gpukit``: it never imports CuPy (a CuPy array
is recognised only when CuPy is already loaded) nor SciPy.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> from gpukit.testing import assert_close, random_array
>>> a = random_array((4, 4), "float32", rng=0)
>>> with gk.use_backend("numpy"):
...     c = gk.matmul(a, a)
>>> a64 = a.astype(np.float64)
>>> assert_close(c, a64 @ a64, dtype="float32")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._dispatch import asarray, to_numpy
from ._host.virtual import VirtualDeviceArray
from ._runtime.placement import owner_of
from ._select.selection import use_backend
from .sharding._array import ShardedArray

__all__ = ["assert_close", "default_rtol", "random_array", "random_spd", "relative_error"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


# The numerics contract's tolerances (docs/numerics.rst), by the precision of the result.
# float16 has 11 significant bits (eps ~1e-3): 1e-2 leaves the same few roundings of margin.
_RTOL = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 1e-5,
    np.dtype(np.complex64): 1e-5,
    np.dtype(np.float64): 1e-12,
    np.dtype(np.complex128): 1e-12,
}


def default_rtol(dtype: Any) -> float:
    """The relative tolerance gpukit promises for results of ``dtype``.

    Parameters
    ----------
    dtype : dtype
        The result's dtype.

    Returns
    -------
    float
        ``1e-2`` for float16, ``1e-5`` for float32 and complex64, ``1e-12`` for float64,
        complex128 and wider floats; ``0.0`` (exact) for bool and integers.

    Raises
    ------
    TypeError
        ``dtype`` is not a numeric dtype.

    See Also
    --------
    assert_close : Uses it when no ``rtol`` is given.
    relative_error : The error it bounds.

    Examples
    --------
    >>> from gpukit.testing import default_rtol
    >>> default_rtol("float32"), default_rtol("complex128"), default_rtol("int64")
    (1e-05, 1e-12, 0.0)
    """
    dt = np.dtype(dtype).newbyteorder("=")
    if dt in _RTOL:
        return _RTOL[dt]
    if dt.kind in "biu":
        return 0.0
    if dt.kind in "fc":
        return 1e-12  # wider than float64: the float64 reference limits the check
    raise TypeError(f"default_rtol: no tolerance for dtype {dt}, expected a numeric dtype")


def relative_error(actual: Any, desired: Any) -> float:
    """``||actual - desired|| / ||desired||`` in the Frobenius norm, computed in complex128.

    Parameters
    ----------
    actual, desired : array_like or ShardedArray
        Arrays of any backend and device, copied to the host; their shapes must broadcast.

    Returns
    -------
    float
        The relative error; the absolute error ``||actual - desired||`` when ``desired`` is
        all zeros (or empty); infinite or NaN when either holds an infinity or a NaN.

    See Also
    --------
    assert_close : Checks the error against a tolerance, and type, device, dtype, shape.

    Examples
    --------
    >>> from gpukit.testing import relative_error
    >>> relative_error([3.0, 4.0 + 1e-6], [3.0, 4.0])  # doctest: +ELLIPSIS
    2.0000...e-07
    """
    a = _host128(actual)
    d = _host128(desired)
    denom = np.linalg.norm(d)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, the documented answer
        return float(np.linalg.norm(a - d) / (denom if denom else 1.0))


def assert_close(
    actual: Any,
    desired: Any,
    *,
    rtol: float | None = None,
    atol: float = 0.0,
    dtype: Any = None,
    like: Any = None,
    check_dtype: bool = True,
    check_device: bool = True,
    err_msg: str = "",
) -> None:
    """Assert that ``actual`` is ``desired`` within the tolerance of its dtype.

    The checks, in order, each with its own message: the array type and device (``actual``
    must be of the same kind as ``like``, NumPy, CuPy or :class:`gpukit.ShardedArray`, and on
    the same device), the dtype, the shape, the non-finite entries (NaN where ``desired`` has
    NaN, the same infinities), and the error of the finite entries::

        ||actual - desired||  <=  atol + rtol * ||desired||

    in the Frobenius norm over the whole array, computed in complex128 on the host. A norm,
    not an element-wise test: rounding of a product or an FFT is relative to the result's
    large entries, not to each entry (docs/numerics.rst).

    Parameters
    ----------
    actual : array or ShardedArray
        The result under test.
    desired : array_like or ShardedArray
        The expected values, usually a float64 reference computed on the host.
    rtol : float, optional
        Relative tolerance; by default :func:`default_rtol` of ``actual``'s dtype.
    atol : float, default 0.0
        Absolute tolerance on ``||actual - desired||``: the scale of the error where the
        result cancels (the norm of the magnitudes of the terms a result sums).
    dtype : dtype, optional
        The dtype ``actual`` must have; by default ``desired``'s (when it is an array).
    like : array or ShardedArray, optional
        An array whose type and device ``actual`` must share, such as the input on the
        device; by default ``desired`` (when it is an array).
    check_dtype : bool, default True
        Check the dtype (``dtype``, or ``desired``'s).
    check_device : bool, default True
        Check the array type and device (``like``'s, or ``desired``'s).
    err_msg : str, optional
        Appended to the message of a failure.

    Raises
    ------
    AssertionError
        A check failed; the message says which, with both sides' values.

    See Also
    --------
    relative_error : The error this function bounds.
    default_rtol : The default tolerances.
    numpy.testing.assert_allclose : An element-wise comparison on the host.

    Examples
    --------
    A float32 result on the active backend against a float64 host reference: the dtype to
    expect is given, and the input ``a`` says where the result must live.

    >>> import numpy as np
    >>> import gpukit as gk
    >>> from gpukit.testing import assert_close, random_array
    >>> a = random_array((8, 8), "float32", rng=1)
    >>> with gk.use_backend("numpy"):
    ...     x = gk.asarray(a)
    ...     y = gk.fft.fft(x)
    >>> assert_close(y, np.fft.fft(a.astype(np.float64)), dtype="complex64", like=x)

    A failure says what differed:

    >>> assert_close(np.float32([1.0, 2.0]), np.float64([1.0, 2.0]))
    Traceback (most recent call last):
    ...
    AssertionError: dtype: actual is float32, expected float64 (desired's)
    """
    suffix = f"\n{err_msg}" if err_msg else ""
    if check_device:
        ref, whose = (desired, "desired's") if like is None else (like, "like's")
        want = _placement(ref)
        got = _placement(actual)
        if want is not None and got != want:
            raise AssertionError(
                f"array type or device: actual is {_describe(got)}, expected "
                f"{_describe(want)} ({whose}){suffix}"
            )
    got_dtype = np.dtype(actual.dtype) if hasattr(actual, "dtype") else None
    if check_dtype:
        want_dtype, whose = (
            (np.dtype(dtype), "given") if dtype is not None else (_dtype_of(desired), "desired's")
        )
        if want_dtype is not None and got_dtype != want_dtype:
            raise AssertionError(
                f"dtype: actual is {got_dtype}, expected {want_dtype} ({whose}){suffix}"
            )
    a = _host128(actual)
    d = _host128(desired)
    if a.shape != d.shape:
        raise AssertionError(f"shape: actual is {a.shape}, desired is {d.shape}{suffix}")
    _check_nonfinite(a, d, suffix)
    finite = np.isfinite(d)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        diff = np.where(finite, a - d, 0)
    err = float(np.linalg.norm(diff))
    scale = float(np.linalg.norm(np.where(finite, d, 0)))
    if rtol is None:
        rtol = default_rtol(got_dtype if got_dtype is not None else d.dtype)
    if not err <= atol + rtol * scale:
        worst = np.unravel_index(np.argmax(np.abs(diff)), diff.shape) if diff.size else ()
        where = tuple(int(i) for i in worst)
        raise AssertionError(
            f"not close: ||actual - desired|| = {err:.3g}, ||desired|| = {scale:.3g}, "
            f"relative error {err / scale if scale else float('inf'):.3g} > rtol {rtol:.3g}"
            f"{f' (with atol {atol:.3g})' if atol else ''}; largest difference at index "
            f"{where}: actual {_scalar(a[worst])}, desired {_scalar(d[worst])}{suffix}"
        )


def random_array(
    shape: int | tuple[int, ...],
    dtype: Any = "float64",
    *,
    rng: int | np.random.Generator | None = None,
    backend: str | None = None,
    device: int | None = None,
) -> Any:
    """Standard normal entries of ``dtype`` (real and imaginary parts each, for complex).

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the result.
    dtype : dtype, default "float64"
        A floating or complex dtype.
    rng : int or numpy.random.Generator, optional
        The generator, or a seed for one; None seeds from the operating system (a test
        should always pass one, so a failure replays).
    backend : str, optional
        Name of the backend whose array to return (``"cupy"``); by default a NumPy array
        on the host. The values are drawn on the host either way, so a seed gives the same
        values on every backend.
    device : int, optional
        Device of the result on ``backend``; its current device by default.

    Returns
    -------
    array
        A ``numpy.ndarray``, or the backend's native array.

    Raises
    ------
    TypeError
        ``dtype`` is not a floating or complex dtype.
    ValueError
        ``device`` is given without ``backend``.

    See Also
    --------
    random_spd : Symmetric (Hermitian) positive definite matrices.
    numpy.random.Generator.standard_normal : The draw.

    Examples
    --------
    >>> from gpukit.testing import random_array
    >>> x = random_array((2, 3), "complex64", rng=42)
    >>> x.shape, x.dtype
    ((2, 3), dtype('complex64'))
    >>> bool((random_array(3, rng=7) == random_array(3, rng=7)).all())
    True
    """
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise TypeError(f"random_array: dtype must be floating or complex, got {dt}")
    gen = np.random.default_rng(rng)
    x = gen.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * gen.standard_normal(shape)
    return _on(x.astype(dt), backend, device)


def random_spd(
    shape: int | tuple[int, ...],
    dtype: Any = "float64",
    *,
    rng: int | np.random.Generator | None = None,
    backend: str | None = None,
    device: int | None = None,
) -> Any:
    """Well-conditioned symmetric (Hermitian, for complex) positive definite matrices.

    ``Q @ Q^H / (n var) + I`` with ``Q`` from :func:`random_array` (``var`` the variance of
    its entries): the eigenvalues lie in about ``[1, 5]``, so the condition number stays
    below about 5 at every size and the default tolerances of :func:`assert_close` apply to
    solves with them.

    Parameters
    ----------
    shape : int or tuple of int
        ``n`` for one ``(n, n)`` matrix, or ``(..., n, n)`` for a stack.
    dtype : dtype, default "float64"
        A floating or complex dtype.
    rng : int or numpy.random.Generator, optional
        The generator, or a seed for one (see :func:`random_array`).
    backend : str, optional
        Name of the backend whose array to return; by default a NumPy array.
    device : int, optional
        Device of the result on ``backend``.

    Returns
    -------
    array
        The matrices, of ``dtype``.

    Raises
    ------
    TypeError
        ``dtype`` is not a floating or complex dtype.
    ValueError
        ``shape``'s last two lengths differ, or ``device`` is given without ``backend``.

    See Also
    --------
    random_array : The random entries.

    Examples
    --------
    >>> import numpy as np
    >>> from gpukit.testing import random_spd
    >>> a = random_spd(5, rng=3)
    >>> bool(np.allclose(a, a.T)), bool(np.linalg.eigvalsh(a).min() >= 1.0)
    (True, True)
    """
    shape = (shape, shape) if isinstance(shape, int | np.integer) else tuple(shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"random_spd: shape must be n or (..., n, n), got {shape}")
    n = shape[-1]
    dt = np.dtype(dtype)
    if dt.kind not in "fc":  # the entries are drawn in float64: an integer cast would truncate
        raise TypeError(f"random_spd: dtype must be floating or complex, got {dt}")
    q = random_array(shape, np.complex128 if dt.kind == "c" else np.float64, rng=rng)
    variance = 2 if dt.kind == "c" else 1  # of an entry of q (real and imaginary parts)
    a = q @ np.conj(np.swapaxes(q, -1, -2)) / max(variance * n, 1)
    # exactly Hermitian: a BLAS product may round its two triangles differently
    a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2 + np.eye(n)
    return _on(a.astype(dt), backend, device)


# -- helpers ---------------------------------------------------------------------------------
def _on(x: np.ndarray, backend: str | None, device: int | None) -> Any:
    if backend is None:
        if device is not None:
            raise ValueError("device is given without a backend: name the backend too")
        return x
    with use_backend(backend):
        return asarray(x, device=device)


def _host128(x: Any) -> np.ndarray:
    """``x`` on the host in complex128, or float64 when real (NaN stays NaN)."""
    h = np.asarray(to_numpy(x))
    return h.astype(np.complex128 if h.dtype.kind == "c" else np.float64)


def _dtype_of(x: Any) -> np.dtype | None:
    """The dtype of an array; None for a list or a Python scalar (which set no dtype)."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") and hasattr(x, "shape") else None


def _placement(x: Any) -> tuple[str, str] | None:
    """(array kind, device) of an array; None for a list or a Python scalar."""
    if isinstance(x, ShardedArray):
        return "ShardedArray", f"{x.backend.name} devices {list(x.devices)} (axis {x.axis})"
    backend = owner_of(x)
    if backend is not None:
        return f"{backend.name} array", f"{backend.name}:{backend.device_of(x)}"
    if isinstance(x, VirtualDeviceArray):
        return "numpy array", f"numpy:{x.device_id}"
    if isinstance(x, np.ndarray | np.generic):
        return "numpy array", "host"
    return None


def _describe(placement: tuple[str, str] | None) -> str:
    return "not an array" if placement is None else f"a {placement[0]} on {placement[1]}"


def _check_nonfinite(a: np.ndarray, d: np.ndarray, suffix: str) -> None:
    for name, mask in (("NaN", np.isnan), ("infinite", np.isinf)):
        got, want = mask(a), mask(d)
        if not np.array_equal(got, want):
            bad = tuple(int(i) for i in np.argwhere(got != want)[0])
            raise AssertionError(
                f"{name} entries differ: {int(got.sum())} in actual, {int(want.sum())} in "
                f"desired; first at index {bad}: actual {_scalar(a[bad])}, desired "
                f"{_scalar(d[bad])}{suffix}"
            )
    inf = np.isinf(d)
    if not np.array_equal(a[inf], d[inf]):
        bad = tuple(int(i) for i in np.argwhere(inf & (a != d))[0])
        raise AssertionError(
            f"infinite entries differ in sign: first at index {bad}: actual "
            f"{_scalar(a[bad])}, desired {_scalar(d[bad])}{suffix}"
        )


def _scalar(v: Any) -> str:
    v = complex(v)
    return repr(v.real) if v.imag == 0 else repr(v)
