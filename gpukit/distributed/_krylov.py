"""Krylov solvers (cg, bicgstab, minres) on Dask vectors, with gpukit's own loops.

The loops of :mod:`gpukit.linalg._krylov` are written against a *vector space* ``xp``
with in-place updates. :class:`DaskSpace` is that space for Dask vectors: a vector is a
:class:`Vector` cell holding a persisted Dask array, and an "in-place" update replaces
the cell's array by the persisted result, so the loops' aliasing (``z = r``, rotating
buffers) means what it means for NumPy arrays.

The cost of one iteration: every vector update and mat-vec is *persisted* (on a
distributed client: submitted without waiting, the chunks stay on the workers, and the
graph never grows), and every reduction (``vdot``, ``norm``) is one small blocking
``compute`` that brings one scalar to the client: two per CG iteration, like the two
synchronisations of the GPU path. The operator is persisted once before the loop, so
it is never recomputed. GMRES has no Dask implementation: its Arnoldi basis is a dense
``(restart + 1, n)`` block the loop updates row by row.
"""

from __future__ import annotations

import math
import sys
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch import implements
from .._matmul import matmul as gk_matmul
from ..linalg._checks import solve_dtype
from ..linalg.iterative import _check_controls, run
from ..sparse import issparse
from ._chunks import OnChunks, chunk_type, is_dask
from ._client import computing

__all__ = ["DaskSpace", "Vector"]


class Vector:
    """A mutable cell around an immutable Dask vector."""

    __slots__ = ("__weakref__", "value")

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    def copy(self) -> Vector:
        return Vector(self.value)  # the array is immutable: sharing it is a copy


class _Scalar:
    """A reduction, computed when the loop asks for its value."""

    def __init__(self, space: DaskSpace, partials: Any) -> None:
        self.space, self.partials = space, partials

    def item(self) -> Any:
        return self.space.settle(self.partials)


def _lincomb(x: Any, alpha: Any, y: Any, beta: Any) -> Any:
    """``alpha * x + beta * y`` on one chunk (``y`` may be None)."""
    out = x * alpha
    if y is not None:
        out += y * beta
    return out


def _chunk_vdot(a: Any, b: Any) -> Any:
    """One chunk's share of ``vdot(a, b)``, as a length-1 array of the chunk type."""
    return (a.conj() * b).sum(keepdims=True)


def _chunk_non_finite(a: Any) -> Any:
    """How many entries of one chunk are NaN or inf, as a length-1 array."""
    return (a != a).sum(keepdims=True) + (abs(a) == float("inf")).sum(keepdims=True)


def _chunk_copy(a: Any) -> Any:
    return a.copy()


class DaskSpace:
    """The vector operations of the Krylov loops for :class:`Vector` cells.

    Updates are recorded lazily, each one task per chunk under a fresh name (building it
    costs no hashing of its inputs); the next reduction persists every cell updated since
    the last one together with the per-chunk partial products (:meth:`settle`), then
    fetches only those partials and adds them on the client in chunk order, so a solve
    is the same on every run.
    """

    def __init__(self, op: str) -> None:
        self.op = op
        self._pending: weakref.WeakSet[Vector] = weakref.WeakSet()

    def _build(self, fn: Any, *args: Any, dtype: Any, **kwargs: Any) -> Any:
        import dask.array as da

        arrays = [(a, "i") if is_dask(a) else (a, None) for a in args]
        first = next(a for a in args if is_dask(a))
        # through OnChunks as every gpukit task: on a device, the chunks come from other
        # threads' streams (Dask's communication thread, the previous update's worker),
        # which nothing orders with this thread's under the per-thread default stream
        names = tuple(f"vector {i}" if is_dask(a) else f"scalar {i}" for i, a in enumerate(args))
        task = OnChunks(self.op, fn, type(first._meta), names, tuple(map(is_dask, args)))
        return da.blockwise(
            task,
            "i",
            *(v for pair in arrays for v in pair),
            name=f"gpukit-{fn.__name__.strip('_')}-{uuid.uuid4().hex}",
            dtype=dtype,
            meta=first._meta,
            **kwargs,
        )

    def put(self, out: Vector, value: Any) -> Vector:
        out.value = value
        self._pending.add(out)
        return out

    def settle(self, partials: Any) -> Any:
        """Persist the pending cells and the partial sums; return the summed scalar."""
        import dask

        cells = list(self._pending)
        self._pending.clear()
        with computing(self.op, like=partials):
            *values, partials = dask.persist(
                *(c.value for c in cells), partials, optimize_graph=False
            )
            for cell, value in zip(cells, values, strict=True):
                cell.value = value
            return sum(p.item() for p in _fetch(partials))

    def _partials(self, fn: Any, *vectors: Vector, dtype: Any) -> _Scalar:
        parts = self._build(fn, *(v.value for v in vectors), dtype=dtype, adjust_chunks={"i": 1})
        return _Scalar(self, parts)

    def vdot(self, a: Vector, b: Vector) -> _Scalar:
        return self._partials(_chunk_vdot, a, b, dtype=np.result_type(a.dtype, b.dtype))

    def all_finite(self, x: Vector) -> bool:
        return self._partials(_chunk_non_finite, x, dtype=np.intp).item() == 0

    def copyto(self, dst: Vector, src: Vector) -> None:
        # A copy of each chunk: src may be an operator's result that the loop reads only
        # until the operator's next call, while dst lives on.
        self.put(dst, self._build(_chunk_copy, src.value, dtype=dst.dtype))

    def _lincomb(self, out: Vector, x: Vector, alpha: Any, y: Vector | None, beta: Any) -> Vector:
        value = self._build(_lincomb, x.value, alpha, None if y is None else y.value, beta,
                            dtype=out.dtype)  # fmt: skip
        return self.put(out, value)

    def multiply(self, x: Vector, alpha: Any, out: Vector) -> Vector:
        return self._lincomb(out, x, alpha, None, 0)

    def add(self, x: Vector, y: Vector, out: Vector) -> Vector:
        return self._lincomb(out, x, 1, y, 1)

    def subtract(self, x: Vector, y: Vector, out: Vector) -> Vector:
        return self._lincomb(out, x, 1, y, -1)

    def axpy(self, alpha: Any, x: Vector, y: Vector) -> None:
        self._lincomb(y, y, 1, x, alpha)

    def xpay(self, x: Vector, beta: Any, y: Vector) -> None:
        self._lincomb(y, x, 1, y, beta)

    def empty_like(self, x: Vector) -> Vector:
        return self.zeros_like(x)

    def zeros_like(self, x: Vector) -> Vector:
        import dask.array as da

        return Vector(da.zeros_like(x.value))

    def new(self, value: Any) -> Vector:
        """A cell holding ``value``, persisted at the next reduction."""
        return self.put(Vector(value), value)

    def norm(self, x: Vector) -> float:
        return math.sqrt(abs(self.vdot(x, x).item()))

    def max_abs(self, x: Vector) -> float:
        """The largest magnitude of any entry (the rescaled norm's rare path)."""
        import dask.array as da

        with computing(self.op, like=x.value):
            return float(da.absolute(x.value).max().compute())


def _fetch(partials: Any) -> list[Any]:
    """The chunks of a persisted 1-d array, in order: gathered from a distributed
    cluster's memory, or taken from the graph a local scheduler persisted into."""
    from dask.core import flatten

    keys = list(flatten(partials.__dask_keys__()))
    futures = _futures_of(partials)
    if futures:
        by_key = {f.key: f for f in futures}
        return futures[0].client.gather([by_key[k] for k in keys])
    return list(partials.compute(optimize_graph=False))


def _futures_of(x: Any) -> list[Any]:
    distributed = sys.modules.get("distributed")
    return [] if distributed is None else distributed.futures_of(x)


def _operator(
    space: DaskSpace, a: Any, name: str, n: int, rows: tuple[int, ...]
) -> Callable[[Vector], Vector]:
    """``a`` (a Dask matrix or a callable on Dask vectors) as a mat-vec on cells."""
    op = space.op
    if is_dask(a):
        if a.shape != (n, n):
            raise ValueError(f"{op}: {name!r} has shape {a.shape}; expected ({n}, {n}) to match b")
        with computing(op, like=a):
            matrix = a.rechunk({0: rows}).persist()  # computed once, kept on the workers

        def product(v: Any) -> Any:
            return gk_matmul(matrix, v)

    elif callable(a) and not hasattr(a, "shape") and not hasattr(a, "matvec"):
        product = a
    else:
        kind = "a sparse matrix" if issparse(a) else type(a).__name__
        raise TypeError(
            f"{op}: with Dask vectors, {name!r} must be a Dask array or a callable mapping a "
            f"Dask vector to a Dask vector; got {kind}. Wrap it: "
            "da.from_array(A, chunks=...), or lambda v: v.map_blocks(...)"
        )

    def matvec(v: Vector) -> Vector:
        out = product(v.value)
        if not is_dask(out) or out.shape != (n,):
            raise TypeError(
                f"{op}: {name!r} must map a Dask vector of shape ({n},) to one of the same "
                f"shape; it returned {type(out).__name__} of shape {getattr(out, 'shape', None)}"
            )
        return space.new(out.rechunk({0: rows}))

    return matvec


def _vector(op: str, v: Any, name: str, n: int, rows: tuple[int, ...], dtype: np.dtype) -> Any:
    import dask.array as da

    if not is_dask(v):
        v = da.from_array(np.asarray(v), chunks=(rows,), name=False)
    if v.shape != (n,):
        raise ValueError(f"{op}: {name!r} has shape {v.shape}; expected ({n},)")
    with computing(op, like=v):
        return v.astype(dtype).rechunk({0: rows}).persist()


def _solve(
    method: str, a: Any, b: Any, x0: Any, rtol: Any, atol: Any, maxiter: Any, m: Any, callback: Any
) -> tuple[Any, Any]:
    op = f"gk.linalg.{method}"
    rtol, atol, maxiter = _check_controls(op, rtol, atol, maxiter, callback)
    start_mb = isinstance(x0, str)
    if start_mb and x0 != "Mb":
        raise ValueError(f"{op}: x0 must be an array, None or 'Mb', got {x0!r}")
    if start_mb:
        x0 = None
    for v, name in ((b, "b"), (x0, "x0")):
        if v is not None:
            _dtypes.check(op, name, v)
    for v, name in ((a, "A"), (m, "M")):
        _dtypes.check_operator(op, name, v)
    chunk_type(op, {n: v for n, v in (("A", a), ("b", b), ("x0", x0), ("M", m)) if is_dask(v)})
    if np.ndim(b) != 1 and not (is_dask(b) and b.ndim == 1):
        raise ValueError(f"{op}: 'b' must be 1-D, got shape {np.shape(b)}")
    n = b.shape[0]
    rows = next((v.chunks[0] for v in (b, x0, a) if is_dask(v)), None)
    if rows is None or sum(rows) != n:
        rows = (n,)
    dtype = solve_dtype(*(np.dtype(v.dtype) for v in (b, a, m) if hasattr(v, "dtype")))
    space = DaskSpace(op)
    matvec = _operator(space, a, "A", n, rows)
    psolve = None if m is None else _operator(space, m, "M", n, rows)
    b = Vector(_vector(op, b, "b", n, rows, dtype))
    x = space.zeros_like(b) if x0 is None else Vector(_vector(op, x0, "x0", n, rows, dtype))
    step = None if callback is None else (lambda v: callback(v.value))
    controls = (rtol, atol, maxiter, step)
    x, info = run(
        method, space, matvec, psolve, b, x, dtype, space.all_finite, x0, start_mb, controls, {}
    )
    return x.value, info


def _register(method: str) -> None:
    @implements(f"gk.linalg.{method}", "dask")
    def solve(
        A: Any,
        b: Any,
        x0: Any = None,
        *,
        rtol: float = 1e-5,
        atol: float = 0.0,
        maxiter: int | None = None,
        M: Any = None,
        callback: Callable[[Any], Any] | None = None,
    ) -> tuple[Any, Any]:
        return _solve(method, A, b, x0, rtol, atol, maxiter, M, callback)

    solve.__name__ = solve.__qualname__ = f"{method}_dask"


for _method in ("cg", "bicgstab", "minres"):
    _register(_method)
