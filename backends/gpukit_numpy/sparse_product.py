"""The host sparse mat-vec of the Krylov loops: CSR, moved to diagonal storage when banded.

A Krylov solve spends most of its time in ``A @ v``. SciPy's CSR product gathers ``v``
through the column indices, one row at a time. Stencil operators (finite differences,
the 5- and 7-point Poisson operators) keep all their entries on a few diagonals, and
SciPy's DIA product streams each diagonal through ``v`` without indices: it took half
the CSR product's time on a 256x256-grid Poisson operator (108-110 us against 141-225 us
here). Each row's sum is formed in the same order as CSR's (diagonals by increasing
offset, which is a canonical CSR row's column order), so both products give the same
sums on finite vectors (up to the sign of a zero).

Finding the diagonals and copying the values costs about four CSR products, so the
product starts on CSR and moves only once it has served :data:`TRIAL_PRODUCTS` calls
(the rent-or-buy rule: a solve of a few iterations never pays for the move). The matrix
is read when the move happens; as on a device, where the matrix is copied once, it must
not change during a solve.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse

__all__ = ["TRIAL_PRODUCTS", "diagonal_product", "sparse_product"]

# CSR products served before the move to DIA is tried (the move costs about four).
TRIAL_PRODUCTS = 8
# DIA stores a whole column range per diagonal; past this many stored entries per
# nonzero (a diagonal with few entries), its product stops being the faster one.
MAX_FILL = 1.25
# The lookup from offset to diagonal holds int8.
MAX_DIAGONALS = 64
# Rows whose diagonals are taken before any entry is looked up.
_SAMPLE_ROWS = 32


def diagonal_product(a: Any) -> Callable[[Any], Any] | None:
    """``v -> a @ v`` through diagonal storage, ``a`` being a canonical host CSR matrix,
    or None when ``a`` is not banded: more than :data:`MAX_DIAGONALS` diagonals, or more
    than :data:`MAX_FILL` stored entries per nonzero. ``a`` is only read.

    Only the columns ``a`` uses are stored: a row block of a banded matrix (a shard of a
    sharded operator) is a band within its column window.
    """
    m, n = a.shape
    if a.nnz == 0 or m + n > np.iinfo(a.indices.dtype).max:
        return None
    if not a.has_canonical_format:  # duplicates would be dropped, not summed
        return None
    indptr, indices = a.indptr, a.indices
    first, stop = int(indices.min()), int(indices.max()) + 1
    width = stop - first
    rows = np.repeat(np.arange(m, dtype=indices.dtype), np.diff(indptr))
    columns = indices - first if first else indices
    shifted = columns - rows  # column - row in the window, in [-(m - 1), width - 1] ...
    shifted += m  # ... moved to [1, m + width) to index a lookup table
    # Diagonals seen in a few rows first (a scattered matrix is refused there, for
    # microseconds), then every entry is looked up; the first entries found on no known
    # diagonal add theirs, until all are known or too many are.
    sample = np.linspace(0, m - 1, num=min(m, _SAMPLE_ROWS), dtype=np.intp)
    offsets = np.unique(np.concatenate([shifted[indptr[i] : indptr[i + 1]] for i in sample]))
    while True:
        if len(offsets) > MAX_DIAGONALS or len(offsets) * width > MAX_FILL * a.nnz:
            return None
        lookup = np.full(m + width, -1, np.int8)
        lookup[offsets] = np.arange(len(offsets))
        diagonal = lookup[shifted]
        missing = np.flatnonzero(diagonal < 0)
        if missing.size == 0:
            break
        offsets = np.union1d(offsets, shifted[missing[: MAX_DIAGONALS * _SAMPLE_ROWS]])
    flat = diagonal.astype(np.intp)
    flat *= width
    flat += columns
    data = np.zeros(len(offsets) * width, a.dtype)
    data[flat] = a.data
    banded = scipy.sparse.dia_matrix(
        (data.reshape(len(offsets), width), offsets.astype(np.int64) - m), shape=(m, width)
    )
    if width == n:
        return banded.dot
    return lambda v: banded.dot(v[first:stop])


class _Product:
    """``v -> a @ v``: CSR for the first :data:`TRIAL_PRODUCTS` calls, then DIA if banded."""

    def __init__(self, a: Any) -> None:
        self._a = a
        self._calls = 0
        self.dot = a.dot

    def __call__(self, v: Any) -> Any:
        self._calls += 1
        if self._calls == TRIAL_PRODUCTS + 1:
            banded = diagonal_product(self._a)
            if banded is not None:
                self.dot = banded
        return self.dot(v)


def sparse_product(a: Any) -> Callable[[Any], Any]:
    """``v -> a @ v`` for one solve with the host sparse matrix ``a``."""
    if a.format != "csr":
        return a.dot
    return _Product(a)
