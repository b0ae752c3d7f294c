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


def powered(ord: Any, axes: tuple[int, ...]) -> bool:
    """Whether a norm over ``axes`` sums powers of the entries (2-norms, Frobenius,
    vector p-norms with ``p > 0`` other than 1): the norms that can under- or overflow
    while their value is representable. ``p < 0`` is left as NumPy defines it."""
    if ord is None or ord == "fro":
        return True
    if len(axes) != 1 or isinstance(ord, str):  # matrix norms other than Frobenius
        return False
    p = float(ord.real) if isinstance(ord, complex) else float(ord)
    return math.isfinite(p) and p > 0 and p != 1


def rescue(xp: Any, norm: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """``out`` (``norm(x)`` over ``axes``), recomputed when any value is 0 or inf.

    The recomputation takes the norm of ``|x|`` with each slice divided by a power of two
    near its largest magnitude, in ``x``'s precision, then scales back: exact for every
    slice, so the whole result is replaced (a slice of zeros stays 0, one holding inf or NaN stays
    inf or NaN, one whose norm exceeds the dtype becomes inf). ``xp`` is the array module
    (NumPy's functions also serve sharded arrays, through their ufunc protocol). On a GPU,
    deciding whether any value needs it is one read (of a single norm), or one small
    reduction and a read.
    """
    if out.ndim == 0:  # one norm: its value decides, without array operations
        if 0.0 < float(out) < math.inf:
            return out
    elif not bool(xp.any((out == 0) | xp.isinf(out))):
        return out
    mag = xp.abs(x)
    top = mag.max(axis=axes, keepdims=True)
    shift = xp.frexp(top)[1]  # max(|slice|) < 2**shift
    with np.errstate(over="ignore"):  # a factor beyond the dtype is detected below
        factor = xp.ldexp(xp.ones_like(top, dtype=np.float64), -shift).astype(mag.dtype)
    if bool(xp.all((factor != 0) & xp.isfinite(factor))):
        again = norm(mag * factor)  # a power of two of the dtype: one exact multiply
    else:  # subnormal data (float64 2e-311 needs 2**1033): ldexp, exact but 4x slower
        again = norm(xp.ldexp(mag, -shift))
    # without keepdims, the shifts of the result's shape (max over the length-1 axes)
    back = shift if keepdims else xp.frexp(top.max(axis=axes))[1]
    fixed = xp.ldexp(again.astype(np.float64), back).astype(out.dtype)
    return fixed[()] if isinstance(out, np.generic) else fixed  # NumPy's scalar stays one
