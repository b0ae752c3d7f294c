"""The host sparse mat-vec of the Krylov loops: CSR, moved to diagonal storage when banded.

A Krylov solve spends most of its time in ``A @ v``. SciPy's CSR product gathers ``v``
through the column indices, one row at a time. Stencil operators (finite differences,
the 5- and 7-point Poisson operators) keep all their entries on a few diagonals, and
SciPy's DIA product streams each diagonal through ``v`` without indices: on a
256x256-grid Poisson operator it took 0.25 (float32) and 0.52 (float64) of the CSR
product's time. Each row's sum is formed in the same order as CSR's (diagonals by
increasing offset, which is a sorted CSR row's column order), so on finite vectors both
products give the same values, up to the sign of a zero. (DIA multiplies its zero padding
too: an inf or NaN in ``v`` reaches rows whose CSR sum skips it; a Krylov solve reaching
such a ``v`` has already failed.)

Only float32 and float64 matrices of at least :data:`MIN_NONZEROS` entries move: below,
the products cost about the same; SciPy's complex DIA product was slower than CSR on wide
bands (2.3x with 64 diagonals, complex128). Finding the diagonals and copying the values
costs about ten CSR products, so the product starts on CSR and moves only once it has
served :data:`TRIAL_PRODUCTS` calls: shorter solves never pay for the move; a solve that
moves is slower until about 130-160 products in all (1.2x at 65), then faster.
The matrix is read when the move happens; as on a device, where the matrix is copied
once, it must not change during a solve.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse

__all__ = ["MIN_NONZEROS", "TRIAL_PRODUCTS", "diagonal_product", "sparse_product"]

# CSR products served before the move to DIA is tried. The move costs about ten CSR
# products (8-10 measured on memory new to the process), which the cheaper products repay
# by about 130-160 products in all (docs/benchmarks/2026-11-23-cpu-small-dia.md). Short
# solves repeated on one matrix (time steps from the last solution, a few tens of
# iterations each) never move, and never pay.
TRIAL_PRODUCTS = 64
# Smaller matrices keep CSR: their DIA product was no faster (0.7-1.4x, noisy).
MIN_NONZEROS = 2**15
# DIA stores a whole column range per diagonal; past this many stored entries per
# nonzero (a diagonal with few entries), its product gains little or loses.
MAX_FILL = 1.1
# The lookup from offset to diagonal holds int8.
MAX_DIAGONALS = 64
# Rows whose diagonals are looked at before any full pass over the entries.
_SAMPLE_ROWS = 32
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INT32_MAX = np.iinfo(np.int32).max


def _sampled_offsets(indptr: np.ndarray, indices: np.ndarray, m: int) -> np.ndarray:
    """The distinct ``column - row`` of :data:`_SAMPLE_ROWS` rows spread over ``m``."""
    sample = np.linspace(0, m - 1, num=min(m, _SAMPLE_ROWS), dtype=np.intp)
    return np.unique(np.concatenate([indices[indptr[i] : indptr[i + 1]] - i for i in sample]))


def _rows_increase(indptr: np.ndarray, diagonal: np.ndarray) -> bool:
    """Whether each row's diagonals, hence its columns, strictly increase: sorted, no
    duplicates (which DIA would overwrite where CSR sums them). Computed, not read from
    SciPy's cached ``has_canonical_format``, which a change to ``indices`` leaves stale."""
    steps = np.diff(diagonal)  # within (-64, 64): int8 holds it
    starts = indptr[1:-1]
    steps[starts[(starts > 0) & (starts < diagonal.size)] - 1] = 1  # a row's first entry
    return bool(steps.min(initial=1) > 0)


def _may_move(a: Any) -> bool:
    """Whether DIA could pay and work for ``a``: float32 or float64, at least
    :data:`MIN_NONZEROS` entries, rows plus columns within int32."""
    m, n = a.shape
    return a.dtype in _DTYPES and int(a.indptr[-1]) >= MIN_NONZEROS and m + n <= _INT32_MAX


def diagonal_product(a: Any) -> Callable[[Any], Any] | None:
    """``v -> a @ v`` through diagonal storage, ``a`` being a host CSR matrix, or None
    when the move does not pay or cannot be made: a dtype other than float32 or float64,
    fewer than :data:`MIN_NONZEROS` entries, rows plus columns beyond int32 (SciPy's DIA
    product sums row and offset in its index dtype, which is int32 for such shapes: past
    it, it reads out of bounds), more than :data:`MAX_DIAGONALS` diagonals, more than
    :data:`MAX_FILL` stored entries per nonzero, rows not strictly sorted, an ``indptr``
    not starting at 0, or no memory for the copy. ``a`` is only read.

    Only the columns ``a`` uses are stored: a row block of a banded matrix (a shard of a
    sharded operator) is a band within its column window.
    """
    m = a.shape[0]
    indptr = a.indptr
    nnz = int(indptr[-1])  # data and indices may be longer: SciPy reads this many
    if not _may_move(a) or indptr[0] != 0:
        return None
    indices, values = a.indices[:nnz], a.data[:nnz]
    # A scattered matrix shows its many diagonals in a few rows, before any full pass.
    offsets = _sampled_offsets(indptr, indices, m)
    if len(offsets) > MAX_DIAGONALS:
        return None
    first = int(indices.min())
    width = int(indices.max()) + 1 - first
    try:
        return _build(a, indptr, indices, values, offsets, first, width)
    except MemoryError:  # the copy is an optimisation: CSR needs nothing more
        return None


def _build(
    a: Any,
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    offsets: np.ndarray,
    first: int,
    width: int,
) -> Callable[[Any], Any] | None:
    m, n = a.shape
    # (column - first) - row + m, in [1, m + width), indexes a lookup table; minus m it is
    # the DIA offset within the column window
    shift = m - first
    # One index-sized intp buffer serves every step: NumPy converts any other index
    # dtype to intp (a copy) for each gather and scatter.
    work = np.repeat(np.arange(m, dtype=np.intp), np.diff(indptr))
    np.subtract(indices, work, out=work)
    work += shift
    offsets = offsets + shift
    # The sampled diagonals; if entries lie off them, all diagonals, found from those
    # entries, which the second round then places.
    for _ in range(2):
        if len(offsets) > MAX_DIAGONALS or len(offsets) * width > MAX_FILL * indices.size:
            return None
        lookup = np.full(m + width, -1, np.int8)
        lookup[offsets] = np.arange(len(offsets))
        diagonal = lookup[work]
        if diagonal.min() >= 0:
            break
        offsets = np.union1d(offsets, work[diagonal < 0])
    if not _rows_increase(indptr, diagonal):
        return None
    size = len(offsets) * width
    flat = np.multiply(diagonal, np.intp(width), out=work)  # the place in DIA's data
    flat += indices
    flat -= first
    data = np.zeros(size, a.dtype)
    data[flat] = values
    banded = scipy.sparse.dia_matrix(
        (data.reshape(len(offsets), width), offsets.astype(np.int64) - m), shape=(m, width)
    )
    if width == n:
        return banded.dot
    stop = first + width
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
    if a.format != "csr" or not _may_move(a):
        return a.dot
    return _Product(a)
