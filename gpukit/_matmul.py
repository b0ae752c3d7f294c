"""``gk.matmul``: NumPy's matrix product on every backend, cuBLAS through CuPy on GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation, prepare
from ._dispatch.capabilities import checked, declare
from ._dispatch.inputs import keep, plan_for_pair
from ._runtime import plans as _plans
from ._select.selection import active as _active

if TYPE_CHECKING:
    from . import ShardedArray
    from ._typing import Array, NumpyArray

__all__ = ["matmul"]

_PRECISIONS = (None, "highest", "tf32")
_ndarray = np.ndarray
_np_matmul = np.matmul
_NUMERIC = _dtypes.NATIVE_NUMERIC
#: (active backend, the arrays' types, dtypes and shapes, precision) -> the backend whose
#: checks such a call passed, its arrays handed back untouched: a warm call skips them
_PLANS = _plans.table()
# The numpy backend once a checked call has met it (identity is cheaper than reading
# ``.name``); a sentinel until then, so that "no backend selected yet" never matches.
_host: Any = object()


def _shape_problem(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> str | None:
    """Why ``a @ b`` is undefined for these shapes (NumPy's rules), or None when it is fine.

    The message is formatted only for a problem: a warm call on device arrays, which has
    no fast path, would otherwise pay for it every time."""
    if a_shape and b_shape:
        k_b = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
        if a_shape[-1] == k_b:
            if len(a_shape) <= 2 and len(b_shape) <= 2:  # no batch dimensions
                return None
            try:
                np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
                return None
            except ValueError:
                pass
    where = f"gk.matmul: a has shape {a_shape} and b has shape {b_shape}"
    if not a_shape or not b_shape:
        return f"{where}; both need at least one dimension (use * for scalars)"
    if a_shape[-1] != k_b:
        return (
            f"{where}; the contracted dimensions differ: a.shape[-1] = {a_shape[-1]}, "
            f"b.shape[{-2 if len(b_shape) > 1 else -1}] = {k_b}"
        )
    return f"{where}; the batch dimensions {a_shape[:-2]} and {b_shape[:-2]} do not broadcast"


def check_precision(precision: Any) -> None:
    """``precision`` is one gk.matmul knows: a TypeError for a non-string, a ValueError for
    an unknown name."""
    if precision is None:
        return
    if not isinstance(precision, str):
        raise TypeError(
            f"gk.matmul: precision must be None, 'highest' or 'tf32', got "
            f"{type(precision).__name__}"
        )
    if precision not in _PRECISIONS:
        raise ValueError(
            f"gk.matmul: precision must be None, 'highest' or 'tf32', got {precision!r}"
        )


_Precision = Literal["highest", "tf32"] | None


# NumPy operands give the active backend's array, a sharded operand a ShardedArray;
# otherwise (CuPy, Dask) what the inputs are, which checkers may not know.
@overload
def matmul(a: NumpyArray, b: NumpyArray, *, precision: _Precision = None) -> Array: ...
@overload
def matmul(a: ShardedArray, b: Any, *, precision: _Precision = None) -> ShardedArray: ...
@overload
def matmul(a: Any, b: ShardedArray, *, precision: _Precision = None) -> ShardedArray: ...
@overload
def matmul(a: Any, b: Any, *, precision: _Precision = None) -> Any: ...


def matmul(a: Any, b: Any, *, precision: _Precision = None) -> Any:
    """Matrix product ``a @ b`` with NumPy's broadcasting and batching rules.

    Runs where the inputs live (cuBLAS through CuPy for device arrays). Plain NumPy
    inputs on the numpy backend take a fast path straight to ``numpy.matmul``.

    Parameters
    ----------
    a, b : array_like
        Operands with at least one dimension. 1-D operands are promoted to a row
        (``a``) or column (``b``) vector and the added dimension removed afterwards;
        leading (batch) dimensions broadcast.
    precision : {None, "highest", "tf32"}, optional
        Keyword only. ``"highest"`` computes in the inputs' full precision. ``"tf32"`` lets float32
        and complex64 products (batched ones too) use TensorFloat-32 tensor cores
        (about 10 mantissa bits) for this call only, on GPUs that have them; on the CPU
        it is a documented no-op and the result is full float32. ``None``: full
        precision, unless the global ``GPUKIT_TF32=1`` was set (``gpukit info`` shows
        it); CuPy's ``CUPY_TF32`` does not apply.

    Returns
    -------
    array
        The product, of the backend's array type, dtype as ``numpy.matmul`` gives.

    Raises
    ------
    ValueError
        ``a`` or ``b`` is 0-D, the contracted dimensions differ, the batch dimensions
        do not broadcast (the message names both shapes), or ``precision`` is an unknown
        name.
    TypeError
        ``a`` or ``b`` has a non-numeric dtype (string, object, ...) or long double, or is
        a masked array, a ``numpy.matrix`` or None; ``precision`` is not a string or None.
    OutOfMemoryError
        The product could not be allocated, also after one retry.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     c = gk.matmul(np.ones((4, 2, 3)), np.ones((3, 5)))
    >>> c.shape, float(c[0, 0, 0])
    ((4, 2, 5), 3.0)
    """
    # Fast path: the per-call budget on 8x8 is a few hundred nanoseconds, so plain ndarrays
    # with the numpy backend active skip dispatch and the OOM wrapper. The active backend is
    # compared by identity with the numpy backend a checked call recorded, the dtype is
    # checked once, on the result (every dtype NumPy multiplies that gpukit refuses --
    # object, long double -- gives a result of that dtype), and shapes are diagnosed only
    # when NumPy refuses them. Everything else takes the checked path, which also explains
    # an allocation failure (gk.OutOfMemoryError) after one retry.
    if precision is None and type(a) is _ndarray is type(b) and _active() is _host:
        try:
            out = _np_matmul(a, b)
            numeric = out.dtype in _NUMERIC
        except ValueError:
            problem = _shape_problem(a.shape, b.shape)
            if problem is None:
                raise
            if a.dtype in _NUMERIC and b.dtype in _NUMERIC:  # else: the dtype's TypeError
                raise ValueError(problem) from None
        # TypeError: the checked path names the dtype; MemoryError: it retries once and
        # explains; AttributeError: two 1-d object arrays gave a Python scalar, which the
        # checked path refuses (found by the fuzz test)
        except (TypeError, MemoryError, AttributeError):
            pass
        else:
            if numeric:
                return out
    if precision is None:
        # without the keyword: dispatch keys and passes on positional arguments alone
        # (an array kind's implementation takes precision=None by default, as here)
        return _matmul(a, b)
    return _matmul(a, b, precision=precision)


@operation("gk.matmul")
def _matmul(a: Any, b: Any, *, precision: str | None = None) -> Any:
    backend, key = plan_for_pair(_PLANS, "gk.matmul", a, b, precision)
    if backend is not None:
        return backend.matmul(a, b, precision)
    since, given = _plans.generation(), (a, b)
    check_precision(precision)
    a = _dtypes.check("gk.matmul", "a", a)
    b = _dtypes.check("gk.matmul", "b", b)
    backend, (a, b) = prepare(a, b, names=("a", "b"))
    if backend.name == "numpy":
        global _host
        _host = backend  # later calls with plain ndarrays take the fast path in matmul()
    problem = _shape_problem(a.shape, b.shape)  # native arrays now: np.shape dispatches
    if problem is not None:
        raise ValueError(problem)
    keep(_PLANS, key, since, backend, backend, given, (a, b))
    return backend.matmul(a, b, precision)


declare("gk.matmul", checked("gk.matmul", "a"))
