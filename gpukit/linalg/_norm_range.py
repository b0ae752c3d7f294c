"""Norms whose powers under- or overflow, recomputed on the scaled input.

``numpy.linalg.norm`` (and CuPy's, PyTorch's, JAX's) forms ``sum(|x|**p)``: a float32
vector of 1e-30 entries has squares that flush to zero and norm 0, one of 1e20 entries
squares that overflow and norm inf, both representable norms. SciPy's BLAS ``nrm2``
scales as it goes; here the backend's norm stays the fast path and only a result of 0 or
inf is recomputed, from the input divided by a power of two near its largest magnitude.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def powered(ord: Any, axis: Any, ndim: int) -> bool:
    """Whether ``norm(x, ord, axis)`` sums powers of the entries (2-norms, Frobenius,
    vector p-norms with ``p > 0`` other than 1): the norms that can under- or overflow
    while their value is representable. ``p < 0`` is left as NumPy defines it."""
    if ord is None or ord == "fro":
        return True
    vector = (ndim == 1 and axis is None) or (
        axis is not None and (isinstance(axis, int | np.integer) or len(tuple(axis)) == 1)
    )
    if not vector or isinstance(ord, str):
        return False
    p = float(ord.real) if isinstance(ord, complex) else float(ord)
    return math.isfinite(p) and p > 0 and p != 1


def rescue(xp: Any, norm: Any, x: Any, out: Any, axis: Any, keepdims: bool) -> Any:
    """``out`` (``norm(x)``) with each 0 or inf that ``x``'s magnitudes do not explain
    replaced by the norm of ``x`` scaled to entries of at most 1.

    On a GPU, deciding whether any value needs it is one small reduction and a
    synchronisation; the recomputation runs only when one does.
    """
    if isinstance(out, np.generic) and 0.0 < float(out) < math.inf:
        return out  # the common host case, without array operations
    bad = (out == 0) | xp.isinf(out)
    if not bool(bad.any()):
        return out
    axes = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim)
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    m = xp.abs(x).max(axis=axes, keepdims=True).astype(np.float64)
    m = xp.where((m > 0) & xp.isfinite(m), m, 1.0)
    # 2**-e with e from m: exact scaling, factors formed in float64 (2**149 is not float32)
    scale = xp.ldexp(xp.ones_like(m), xp.frexp(m)[1])
    again = norm(x.astype(wide) / scale) * (scale if keepdims else scale.squeeze(axes))
    fixed = xp.where(bad, again.astype(out.dtype), out)
    return fixed[()] if isinstance(out, np.generic) else fixed  # NumPy's scalar stays one


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    return tuple(int(a) % ndim for a in axes)
