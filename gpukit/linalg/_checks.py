"""Validation shared by the linear-algebra front-ends, and the one place errors are raised.

:func:`finite` is SciPy's ``check_finite``. :func:`guarded` is where every backend's
failure becomes the same :class:`gpukit.LinAlgError`: a library's own
``numpy.linalg.LinAlgError`` (NumPy/LAPACK ``info``, CuPy under
``cupyx.errstate(linalg="raise")``) and non-finite results (what cuSOLVER leaves behind
when it does not report) give one message on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch.inputs import keep_placed, placed, prepare
from .._runtime import plans as _plans
from ..backend import Backend
from ..errors import LinAlgError


def place(op: str, arrays: tuple[Any, ...], names: tuple[str, ...]) -> tuple[Backend, list[Any]]:
    """Check the dtypes (TypeError, :mod:`gpukit._dispatch.dtypes`), ``prepare`` once, and return
    native arrays of the chosen backend.

    Planned (:func:`gpukit._dispatch.inputs.placed`): arrays of types and dtypes that
    passed through unchanged before are handed back at once.
    """
    backend, key = placed(op, arrays)
    if backend is not None:
        return backend, list(arrays)
    since = _plans.generation()
    given = arrays
    arrays = tuple(_dtypes.check(op, n, x) for x, n in zip(arrays, names, strict=True))
    backend, out = prepare(*arrays, names=names)
    out = [backend.xp.asarray(x) for x in out]
    keep_placed(key, since, backend, given, out)
    return backend, out


def describe(x: Any) -> str:
    return f"shape {tuple(x.shape)}, dtype {x.dtype}"


def square(op: str, name: str, a: Any) -> None:
    """Require a ``(..., M, M)`` stack of square matrices."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{op}: {name!r} must be a (..., M, M) stack of square matrices, got shape "
            f"{tuple(a.shape)}"
        )


def matrix(op: str, name: str, a: Any) -> None:
    """Require at least two dimensions."""
    if a.ndim < 2:
        raise ValueError(f"{op}: {name!r} must have at least 2 dimensions, got shape {a.shape}")


_INF = float("inf")
_INEXACT = frozenset(np.dtype(c) for c in "fdFD")
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, _INF, -_INF)


def norm_arguments(op: str, shape: tuple[int, ...], ord: Any, axis: Any) -> tuple[int, ...]:
    """``numpy.linalg.norm``'s rules for ``ord`` and ``axis``, checked once for every
    backend (NumPy and CuPy word their errors differently); the axes the norm reduces,
    non-negative (every axis when ``axis`` is None)."""
    ndim = len(shape)
    if axis is None:
        if ord is not None and ndim not in (1, 2):
            raise ValueError(
                f"{op}: ord={ord!r} needs a 1-D or 2-D x or an explicit axis; x has shape {shape}"
            )
        axes = tuple(range(ndim))
    else:
        axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
        if len(axes) not in (1, 2) or any(not -ndim <= a < ndim for a in axes):
            raise ValueError(
                f"{op}: axis={axis!r} must name one axis (a vector norm) or two (a matrix "
                f"norm) of x, which has shape {shape}"
            )
        if len(axes) == 2 and axes[0] % ndim == axes[1] % ndim:
            raise ValueError(f"{op}: axis={axis!r} repeats an axis of x (shape {shape})")
    axes = tuple(int(a) % ndim for a in axes)
    if ord is None:
        return axes
    if len(axes) == 2:
        if ord not in _MATRIX_ORDS:
            raise ValueError(
                f"{op}: ord={ord!r} is not a matrix norm; expected None, 'fro', 'nuc', 1, -1, "
                "2, -2, inf or -inf"
            )
    elif isinstance(ord, str) or not np.isscalar(ord) or isinstance(ord, complex):
        raise ValueError(
            f"{op}: ord={ord!r} is not a vector norm; expected None, inf, -inf or a number"
        )
    return axes


def solve_dtype(*dtypes: Any) -> np.dtype:
    """The dtype linear algebra computes in: the common type, with bool and integers in
    float64 and float16 in float32 (LAPACK, cuSOLVER and a tolerance of 1e-5 need at
    least single precision)."""
    dtype = np.result_type(*dtypes)
    if dtype.kind not in "fc":
        return np.dtype(np.float64)
    if dtype.itemsize < 4:
        return np.dtype(np.float32)
    return dtype


def as_inexact(xp: Any, *arrays: Any) -> list[Any]:
    """Cast to one floating/complex dtype (:func:`solve_dtype`)."""
    first = arrays[0].dtype
    if first in _INEXACT:  # the common case, without NumPy's promotion machinery
        for x in arrays:
            if x.dtype is not first:
                break
        else:
            return list(arrays)
    dtype = solve_dtype(*(x.dtype for x in arrays))
    return [x.astype(dtype, copy=False) for x in arrays]


def rhs(op: str, xp: Any, a: Any, b: Any) -> tuple[Any, Any, bool]:
    """Check ``b`` against ``a`` as numpy.linalg.solve does, and broadcast the batch.

    ``b`` is a vector only when 1-D, otherwise a ``(..., M, K)`` stack. Returns
    ``(a, b, squeeze)`` with equal batch shapes, ``b`` 2-D-or-more unless both are
    unbatched, and whether to drop a trailing unit axis from the result.
    """
    m = a.shape[-1]
    ok = b.shape[-1] == m if b.ndim == 1 else b.ndim >= 2 and b.shape[-2] == m
    batch: tuple[int, ...] = ()
    if ok and b.ndim > 1:
        batch = a.shape[:-2]
        if b.shape[:-2] != batch:  # equal batches (the common case) need no broadcasting
            try:
                batch = np.broadcast_shapes(batch, b.shape[:-2])
            except ValueError:
                ok = False
    if not ok:
        raise ValueError(
            f"{op}: 'a' has shape {tuple(a.shape)} and 'b' has shape {tuple(b.shape)}; "
            f"expected b of shape ({m},) or (..., {m}, K) with batch dimensions "
            "broadcastable against a's"
        )
    squeeze = False
    if b.ndim == 1:
        if a.ndim == 2:
            return a, b, False
        b, squeeze, batch = b[:, None], True, a.shape[:-2]
    if a.shape[:-2] != batch:
        a = xp.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = xp.broadcast_to(b, batch + b.shape[-2:])
    return a, b, squeeze


def finite(op: str, backend: Backend, name: str, x: Any) -> None:
    """SciPy's ``check_finite``: ValueError if argument ``name``, ``x`` (in an inexact
    dtype: :func:`as_inexact`), holds NaN or inf.

    LAPACK given NaN/inf may loop forever (``gelsd`` in OpenBLAS), or return garbage that
    looks like an answer, so the check comes before the call (one pass over the input; a
    device synchronisation on GPUs). Callers skip it when ``check_finite`` is False, and
    check their arguments in order, so that the first one holding NaN/inf is named.
    """
    if not backend.linalg_all_finite(x):
        raise ValueError(non_finite(op, name, x))


def non_finite(op: str, name: str, x: Any) -> str:
    """The message of :func:`finite`'s ValueError."""
    return (
        f"{op}: argument {name!r} holds NaN or inf ({describe(x)}); expected finite values "
        "(check_finite=False skips this check, and the result is then undefined)"
    )


def guarded(
    op: str,
    backend: Backend,
    problem: str,
    names: tuple[str, ...],
    inputs: tuple[Any, ...],
    finite: int,
    check: Callable[[Any], tuple[Any, ...]] | None,
    call: Callable[..., Any],
    *args: Any,
) -> Any:
    """``call(*args)``; raise :class:`LinAlgError` on a library error or non-finite result.

    ``inputs`` (called ``names``) are the arguments; the first one is the matrix
    ``problem`` is about. The first ``finite`` (0, 1 or 2; a bool counts as 0 or 1) of
    them are checked as :func:`finite` does (SciPy's ``check_finite``), in order, before
    the library's failure is reported. On failure, an input holding NaN/inf (possible with
    ``check_finite=False``) is named in a ValueError instead: a NaN is not a singular
    matrix. Messages are built only on failure (formatting a dtype costs microseconds
    on every call). ``check`` picks the outputs to test for NaN/inf (none when None:
    :func:`itself`, :func:`each`, :func:`first`).

    This is the host's: each check is answered at once. A device's is
    :func:`guarded_on_device`; :func:`guard` picks one, once per plan.
    """
    if finite:
        if not backend.linalg_all_finite(inputs[0]):
            raise ValueError(non_finite(op, names[0], inputs[0]))
        if finite > 1 and not backend.linalg_all_finite(inputs[1]):
            raise ValueError(non_finite(op, names[1], inputs[1]))
    try:
        out = call(*args)
    except np.linalg.LinAlgError as exc:
        raise failure(op, backend, problem, names, inputs) from exc
    if check is not None:
        for x in check(out):  # a loop, not all() over a generator: less to set up per call
            if not backend.linalg_all_finite(x):
                raise failure(op, backend, problem, names, inputs)
    return out


def guarded_on_device(
    op: str,
    backend: Backend,
    problem: str,
    names: tuple[str, ...],
    inputs: tuple[Any, ...],
    finite: int,
    check: Callable[[Any], tuple[Any, ...]] | None,
    call: Callable[..., Any],
    *args: Any,
) -> Any:
    """:func:`guarded` with its checks made on the device and read once, after the call.

    The first ``finite`` of ``args`` are those inputs (or arrays made from them): the
    library gets them screened (:meth:`~gpukit.backend.Backend.linalg_screened`), so it
    never sees the NaN or inf the unread check refuses, and the verdicts are raised in
    :func:`guarded`'s order.
    """
    flags = [backend.linalg_finite_flag(x) for x in inputs[:finite]]
    if flags:
        screened = [backend.linalg_screened(x, ok) for x, ok in zip(args, flags, strict=False)]
        args = (*screened, *args[finite:])
    failed = None
    try:
        out = call(*args)
    except np.linalg.LinAlgError as exc:  # a library that reads its own verdict (devInfo)
        failed = exc
    else:
        if check is not None:
            flags += [backend.linalg_finite_flag(x) for x in check(out)]
    verdicts = backend.linalg_read(flags) if flags else []
    for name, x, ok in zip(names, inputs, verdicts[:finite], strict=False):
        if not ok:
            raise ValueError(non_finite(op, name, x))
    if failed is not None or not all(verdicts[finite:]):
        raise failure(op, backend, problem, names, inputs) from failed
    return out


def guard(backend: Backend) -> Callable[..., Any]:
    """:func:`guarded` for a host backend, :func:`guarded_on_device` for a device's."""
    return guarded_on_device if backend.is_device else guarded


def itself(out: Any) -> tuple[Any, ...]:
    """The result of an operation that returns one array, for :func:`guarded`."""
    return (out,)


def each(out: tuple[Any, ...]) -> tuple[Any, ...]:
    """Every array of a result tuple, for :func:`guarded`."""
    return out


def first(out: tuple[Any, ...]) -> tuple[Any, ...]:
    """The first array of a result tuple, for :func:`guarded`."""
    return out[:1]


def failure(
    op: str, backend: Backend, problem: str, names: tuple[str, ...], inputs: tuple[Any, ...]
) -> Exception:
    """The error of a failed call (:func:`guarded`): a ValueError naming the first input
    holding NaN or inf, else a :class:`LinAlgError` saying ``problem``."""
    for name, x in zip(names, inputs, strict=True):
        if x.dtype.kind in "fc" and not backend.linalg_all_finite(x):
            return ValueError(non_finite(op, name, x))
    return LinAlgError(f"{op}: {problem} ({describe(inputs[0])})")
