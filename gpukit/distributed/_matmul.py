"""``gk.matmul`` (and ``gk.kernels.matmul_tiled``) on Dask arrays: Dask's blocked product.

The structure is :func:`dask.array.matmul`'s: one task per block triple ``(i, k, j)``
computes ``a[i, k] @ b[k, j]`` through gpukit, keeping the contracted block index as an
axis of length one, and a tree reduction sums the partial products over ``k``. No task
ever holds a whole row panel of ``a`` or column panel of ``b``, so any chunking works;
chunks of ``a``'s last axis that differ from those of ``b``'s contracted axis are
rechunked to match (Dask's ``unify_chunks``). Batch dimensions broadcast as NumPy's.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch import implements
from .._matmul import _shape_problem, check_precision
from .._matmul import matmul as gk_matmul
from ..kernels import matmul_tiled as gk_matmul_tiled
from ._chunks import OnChunks, carries_chunks, chunk_type, dask_arrays, meta

__all__ = ["blocked_matmul"]


def _partial_product(a: Any, b: Any, *, fn: Any) -> Any:
    """One block product with the contracted block index kept as a length-1 axis."""
    return fn(a, b)[..., None, :]


def blocked_matmul(op: str, a: Any, b: Any, fn: Any, dtype: np.dtype) -> Any:
    """``fn(a_block, b_block)`` summed over the contracted blocks, as a lazy Dask array.

    ``a`` and ``b`` are Dask arrays or host data (made one-chunk Dask arrays); ``fn`` is
    the gpukit product of two blocks.
    """
    import dask.array as da

    expected = chunk_type(op, {"a": a, "b": b})
    checked = (carries_chunks(a), carries_chunks(b))
    arrays = dask_arrays(op, {"a": a, "b": b})
    a, b = arrays["a"], arrays["b"]
    a_1d, b_1d = a.ndim == 1, b.ndim == 1
    if a_1d:
        a = a[None, :]
    if b_1d:
        b = b[:, None]
    ndim = max(a.ndim, b.ndim)
    a = a[(None,) * (ndim - a.ndim)]
    b = b[(None,) * (ndim - b.ndim)]
    lhs = tuple(range(ndim))
    rhs = (*range(ndim - 2), ndim - 1, ndim)
    task = OnChunks(op, functools.partial(_partial_product, fn=fn), expected, ("a", "b"), checked)
    like = a if checked[0] else b
    out = da.blockwise(
        task,
        tuple(range(ndim + 1)),
        a,
        lhs,
        b,
        rhs,
        adjust_chunks={ndim - 1: 1},
        dtype=dtype,
        concatenate=False,
        meta=meta(like, ndim + 1, dtype),
    )
    out = out[..., 0, :] if out.numblocks[-2] == 1 else out.sum(axis=-2, dtype=dtype)
    if a_1d:
        out = out[..., 0, :]
    if b_1d:
        out = out[..., 0]
    return out


@implements("gk.matmul", "dask")
def matmul(a: Any, b: Any, *, precision: str | None = None) -> Any:
    """``gk.matmul`` with a Dask operand: a lazy Dask array of the product."""
    check_precision(precision)
    a = _dtypes.check("gk.matmul", "a", a)
    b = _dtypes.check("gk.matmul", "b", b)
    problem = _shape_problem(tuple(a.shape), tuple(b.shape))
    if problem is not None:
        raise ValueError(problem)
    fn = functools.partial(gk_matmul, precision=precision)
    return blocked_matmul("gk.matmul", a, b, fn, np.result_type(a.dtype, b.dtype))


@implements("gk.kernels.matmul_tiled", "dask")
def matmul_tiled(a: Any, b: Any) -> Any:
    """``gk.kernels.matmul_tiled`` with a Dask operand: the same blocked product, each
    block product by the tiled kernel (float32, 2-D, as the kernel requires)."""
    op = "gk.kernels.matmul_tiled"
    f32 = (np.dtype(np.float32),)
    a, b = _dtypes.check(op, "a", a, f32), _dtypes.check(op, "b", b, f32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"{op}: a has shape {tuple(a.shape)} and b has shape {tuple(b.shape)}; expected "
            "(m, k) and (k, n)"
        )
    return blocked_matmul(op, a, b, gk_matmul_tiled, np.dtype(np.float32))
