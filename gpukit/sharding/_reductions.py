"""Reductions: ``gk.sharding.sum``/``dot``/``vdot``/``norm``, and ``gk.linalg.norm`` of a
sharded array (the same function).

The per-device work and the combination in device order are the array's own
(:mod:`gpukit.sharding._reduce`); norms are composed from it: ``|x|``
elementwise, then sums, maxima or minima, so they split exactly as those do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch import implements, operation
from ..linalg import _checks as _linalg_checks
from ..linalg import _norm_range
from . import _reduce as _red
from ._array import ShardedArray
from ._checks import require_sharded
from ._layout import describe

__all__ = ["dot", "norm", "sum", "vdot"]


@operation("gk.sharding.sum", native=("sharded",))
def sum(x: ShardedArray, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Sum of the elements of a sharded array: ``x.sum(...)``, ``numpy.sum(x, ...)``.

    Parameters
    ----------
    x : ShardedArray
        The array.
    axis : int or tuple of int, optional
        Axes to reduce; all when omitted.
    dtype : dtype, optional
        Accumulator and result dtype, as in :func:`numpy.sum`.
    keepdims : bool, default False
        Keep the reduced axes with length one.

    Returns
    -------
    array or ShardedArray
        A ShardedArray when the split axis is kept; otherwise a native array on
        ``x.devices[0]`` (0-d for a full sum), the partial sums added in device order.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray.
    ValueError
        An axis is out of range or repeated.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.ones((4, 3)))
    ...     rows = gk.sharding.sum(s, axis=1)
    >>> float(gk.sharding.sum(s)), gk.to_numpy(rows).tolist()
    (12.0, [3.0, 3.0, 3.0, 3.0])
    """
    return require_sharded(x, "x", "gk.sharding.sum").sum(axis=axis, dtype=dtype, keepdims=keepdims)


@operation("gk.sharding.dot", native=("sharded",))
def dot(x: ShardedArray, y: ShardedArray) -> Any:
    """Dot product ``sum(x * y)`` of two vectors sharded alike (no conjugation): ``numpy.dot``.

    Parameters
    ----------
    x, y : ShardedArray
        1-d arrays of equal length, sharded over the same devices with the same lengths.

    Returns
    -------
    array
        0-d native array on ``x.devices[0]``; partial dot products added in device order.

    Raises
    ------
    TypeError
        An argument is not a ShardedArray.
    ValueError
        An argument is not 1-d, or the shapes or shard lengths differ.
    DeviceMismatchError
        ``x`` and ``y`` are sharded over different devices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     v = gk.shard(np.arange(4.0))
    ...     d = gk.sharding.dot(v, v)
    >>> float(d)
    14.0
    """
    op = "gk.sharding.dot"
    return _red.dot(require_sharded(x, "x", op), require_sharded(y, "y", op))


@operation("gk.sharding.vdot", native=("sharded",))
def vdot(x: ShardedArray, y: ShardedArray) -> Any:
    """``sum(conj(x) * y)`` over all elements of two arrays sharded alike: ``numpy.vdot``.

    Parameters
    ----------
    x, y : ShardedArray
        Arrays of one shape and layout (devices, split axis, shard lengths).

    Returns
    -------
    array
        0-d native array on ``x.devices[0]``; partial products added in device order.

    Raises
    ------
    TypeError
        An argument is not a ShardedArray.
    ValueError
        The shapes or layouts differ.
    DeviceMismatchError
        ``x`` and ``y`` are sharded over different devices.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     v = gk.shard(np.array([1j, 2.0]))
    ...     d = gk.sharding.vdot(v, v)
    >>> complex(d)
    (5+0j)
    """
    op = "gk.sharding.vdot"
    return _red.vdot(require_sharded(x, "x", op), require_sharded(y, "y", op))


@implements("gk.linalg.norm", "sharded")
@operation("gk.sharding.norm", native=("sharded",))
def norm(x: ShardedArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm of a sharded array: ``gk.linalg.norm(x, ...)`` runs this.

    Parameters
    ----------
    x : ShardedArray
        Any shape; complex allowed (integers are computed in float64).
    ord : {None, "fro", inf, -inf, 0, 1, -1, number}, optional
        As :func:`gpukit.linalg.norm`; the matrix norms ``"nuc"``, 2 and -2 need
        singular values and are refused.
    axis : int or 2-tuple of int, optional
        Vector norm over one axis, matrix norm over two; all of ``x`` when None.
    keepdims : bool, default False
        Keep the reduced axes with length one.

    Returns
    -------
    array or ShardedArray
        Real. A ShardedArray when the split axis is not reduced; otherwise a native
        array on ``x.devices[0]`` (0-d for one norm), per-device partial sums, maxima
        or minima combined in device order.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray or has a non-numeric dtype, or ``ord`` is
        ``"nuc"``, 2 or -2 with two axes.
    ValueError
        ``ord`` or ``axis`` is invalid, as for :func:`gpukit.linalg.norm`.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     s = gk.shard(np.array([[3.0, 0.0], [0.0, 4.0]]))
    ...     fro, cols = gk.sharding.norm(s), gk.linalg.norm(s, ord=1, axis=0)
    >>> float(fro), gk.to_numpy(cols).tolist()
    (5.0, [3.0, 4.0])
    """
    op = "gk.linalg.norm"
    x = require_sharded(x, "x", op)
    _dtypes.check(op, "x", x)
    axes = _linalg_checks.norm_arguments(op, x.shape, ord, axis)
    if len(axes) == 2 and ord in ("nuc", 2, -2):
        raise TypeError(
            f"{op}: ord={ord!r} of a {describe(x)} needs its singular values, a dense "
            "factorisation of the whole matrix: gather it first (x.gather())"
        )
    if x.dtype == np.float16:  # summed in float32, returned in NumPy's float16 (as native)
        return _norm(x.astype(np.float32), ord, axes, keepdims).astype(np.float16)
    return _norm(x, ord, axes, keepdims)


def _norm(x: ShardedArray, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """The norm of validated arguments; integers in float64."""
    inexact = x.dtype.kind in "fc"
    if not inexact:
        x = x.astype(np.float64)
    a = np.abs(x)
    if _norm_range.powered(ord, axes):
        if not inexact:
            return _powers(a, ord, axes, keepdims, x)
        with np.errstate(over="ignore"):  # an overflowing square is rescued
            out = _powers(a, ord, axes, keepdims, x)
        # the same rescue as gk.linalg.norm's: NumPy's functions reach the shards; a native
        # result lives on the first shard's device (_root), so its checks run there
        with x.backend.use_device(x.devices[0]):
            return _norm_range.rescue(
                np, lambda y: _powers(y, ord, axes, keepdims, x), x, out, axes, keepdims
            )
    if len(axes) == 1:
        (ax,) = axes
        if ord == np.inf:
            return a.max(axis=ax, keepdims=keepdims)
        if ord == -np.inf:
            return a.min(axis=ax, keepdims=keepdims)
        if ord == 0:
            return (a != 0).sum(axis=ax, keepdims=keepdims, dtype=a.dtype)
        if ord == 1:
            return a.sum(axis=ax, keepdims=keepdims)
        p = float(ord)  # p < 0
        return _root(np.power(a, p).sum(axis=ax, keepdims=keepdims), lambda t: t ** (1 / p), x)
    row, col = axes
    if ord in (np.inf, -np.inf):  # the largest (smallest) row sum instead of column sum
        row, col = col, row
    sums = a.sum(axis=row, keepdims=keepdims)
    reduce = sums.max if ord in (1, np.inf) else sums.min
    return reduce(axis=col if keepdims else col - (row < col), keepdims=keepdims)


def _powers(a: Any, ord: Any, axes: tuple[int, ...], keepdims: bool, x: ShardedArray) -> Any:
    """``sum(a**p) ** (1/p)`` over ``axes`` for the magnitudes ``a`` (2 for None/"fro")."""
    if ord is None or ord == "fro" or ord == 2:
        return _root(np.square(a).sum(axis=axes, keepdims=keepdims), np.sqrt, x)
    p = float(ord)
    return _root(np.power(a, p).sum(axis=axes, keepdims=keepdims), lambda t: t ** (1 / p), x)


def _root(result: Any, fn: Any, x: ShardedArray) -> Any:
    """``fn(result)`` where ``result`` lives (elementwise on a sharded result)."""
    if isinstance(result, ShardedArray):
        return fn(result)
    with x.backend.use_device(x.devices[0]):
        return fn(result)
