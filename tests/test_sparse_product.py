"""The host sparse mat-vec of the Krylov loops (gpukit_numpy.sparse_product): banded CSR
matrices move to diagonal storage after a few products, anything else stays as it is.

Products are compared with float64 (complex128) dense references on fresh random inputs;
the move is checked to happen exactly when documented, and to be refused where diagonal
storage would drop entries or cost more than CSR.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

import gpukit as gk
from gpukit_numpy import sparse_product as sparse

from helpers import TOL, rel_err

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _random(rng, shape, dtype):
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def _banded(rng, m, n, offsets, dtype, index_dtype=np.int32):
    """A canonical CSR matrix with random values on ``offsets`` (column - row)."""
    rows, cols = [], []
    for k in offsets:
        i = np.arange(max(0, -k), min(m, n - k))
        rows.append(i)
        cols.append(i + k)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    a = scipy.sparse.coo_matrix((_random(rng, rows.size, dtype), (rows, cols)), shape=(m, n))
    a = a.tocsr()
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    return a


def _reference(a, v):
    return a.toarray().astype(np.complex128) @ v.astype(np.complex128)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, offsets",
    [
        ((300, 300), [-17, -1, 0, 1, 17]),  # a 2-d Poisson stencil's pattern
        ((200, 200), [-1, 0, 1]),
        ((120, 300), [-3, 0, 5, 9]),  # wider than tall: only columns 0-128 are stored
        ((300, 120), [-40, -2, 0, 7]),
        ((400, 400), list(range(-30, 31))),  # 61 diagonals, within the lookup's range
    ],
)
def test_diagonal_form_matches_reference(rng, dtype, shape, offsets):
    a = _banded(rng, *shape, offsets, dtype)
    product = sparse.diagonal_product(a)
    assert product is not None
    v = _random(rng, shape[1], dtype)
    y = product(v)
    assert rel_err(y, _reference(a, v)) < TOL[np.dtype(dtype)]
    assert y.dtype == a.dtype
    # the sums are formed in CSR's order: the very same values (why iterations agree)
    np.testing.assert_array_equal(y, a @ v)


def test_diagonals_are_stored_in_csr_order(rng):
    a = _banded(rng, 300, 300, [17, -1, 0, -17, 1], np.float64)
    banded = sparse.diagonal_product(a).__self__
    assert banded.format == "dia" and list(banded.offsets) == [-17, -1, 0, 1, 17]


def test_a_row_block_stores_its_column_window(rng):
    # rows 1024-2047 of the 64x64-grid Poisson operator use columns 960-2111 only
    block = gk.sparse.poisson2d(64)[1024:2048]
    assert (block.indices.min(), block.indices.max()) == (960, 2111)
    product = sparse.diagonal_product(block)
    assert product is not None
    v = rng.standard_normal(4096)
    assert rel_err(product(v), _reference(block, v)) < 1e-12
    np.testing.assert_array_equal(product(v), block @ v)


def test_int64_indices(rng):
    a = _banded(rng, 500, 500, [-20, -1, 0, 1, 20], np.float64, index_dtype=np.int64)
    product = sparse.diagonal_product(a)
    assert product is not None
    v = rng.standard_normal(500)
    assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_diagonals_outside_the_sampled_rows_are_found(rng):
    # band -5..6, and row 5, which is not among the rows sampled first, has 7 and 8 too
    assert 5 not in np.linspace(0, 199, num=sparse._SAMPLE_ROWS, dtype=np.intp)
    a = _banded(rng, 200, 200, list(range(-5, 7)), np.float64).tolil()
    a[5, 12], a[5, 13] = 2.5, -1.5
    a = a.tocsr()
    product = sparse.diagonal_product(a)
    assert product is not None
    assert list(product.__self__.offsets) == list(range(-5, 9))
    v = rng.standard_normal(200)
    assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_not_banded_stays_csr(rng):
    scattered = scipy.sparse.random(300, 300, density=0.05, format="csr", random_state=rng)
    assert sparse.diagonal_product(scattered) is None
    many = _banded(rng, 200, 200, list(range(-40, 41)), np.float64)  # 81 > 64 diagonals
    assert sparse.diagonal_product(many) is None
    # one entry off the band, in a row not sampled first, adds a whole stored diagonal to a
    # tridiagonal matrix: 4n > 1.25 nnz
    corner = _banded(rng, 200, 200, [-1, 0, 1], np.float64).tolil()
    corner[5, 150] = 1.0
    assert sparse.diagonal_product(corner.tocsr()) is None
    empty = scipy.sparse.csr_matrix((50, 50))
    assert sparse.diagonal_product(empty) is None


def test_duplicates_are_summed_not_dropped(rng):
    a = _banded(rng, 100, 100, [-1, 0, 1], np.float64)
    dense = a.toarray()
    # each row followed by its diagonal entry again: a CSR matrix with duplicates
    counts = np.diff(a.indptr) + 1
    ends = np.cumsum(counts)
    data, cols = np.empty(ends[-1]), np.empty(ends[-1], np.int32)
    keep = np.ones(ends[-1], bool)
    keep[ends - 1] = False
    data[keep], cols[keep] = a.data, a.indices
    data[~keep], cols[~keep] = 1.0, np.arange(100)
    dup = scipy.sparse.csr_matrix((data, cols, np.r_[0, ends]), shape=(100, 100))
    assert not dup.has_canonical_format
    assert sparse.diagonal_product(dup) is None
    product = sparse.sparse_product(dup)
    v = rng.standard_normal(100)
    expected = (dense + np.eye(100)) @ v
    for _ in range(sparse.TRIAL_PRODUCTS + 3):
        assert rel_err(product(v), expected) < 1e-12


def test_product_moves_after_the_trial_products(rng):
    a = _banded(rng, 400, 400, [-20, -1, 0, 1, 20], np.float64)
    product = sparse.sparse_product(a)
    for call in range(1, sparse.TRIAL_PRODUCTS + 3):
        v = rng.standard_normal(400)
        assert rel_err(product(v), _reference(a, v)) < 1e-12
        kind = type(product.dot.__self__)
        assert kind is (type(a) if call <= sparse.TRIAL_PRODUCTS else scipy.sparse.dia_matrix)
    assert a.format == "csr" and a.has_canonical_format  # the matrix itself is unchanged


def test_other_formats_keep_their_product(rng):
    a = _banded(rng, 100, 100, [-1, 0, 1], np.float64).tocsc()
    product = sparse.sparse_product(a)
    assert product == a.dot


@pytest.mark.parametrize("dtype", DTYPES)
def test_cg_on_a_banded_operator(rng, monkeypatch, dtype):
    moves = []

    def spy(a):
        moves.append(found := real_product(a))
        return found

    real_product = sparse.diagonal_product
    monkeypatch.setattr(sparse, "diagonal_product", spy)
    n = 24
    a = gk.sparse.poisson2d(n).astype(dtype)
    b = _random(rng, n * n, dtype)
    x, info = gk.linalg.cg(a, b, rtol=1e-5)
    # long enough to move to diagonal storage, once
    assert info.converged and info.iterations > sparse.TRIAL_PRODUCTS
    assert len(moves) == 1 and moves[0] is not None
    single = np.finfo(dtype).bits == 32
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    assert rel_err(a64 @ x.astype(np.complex128), b64) <= (2e-5 if single else 1.0001e-5)
    expected = np.linalg.solve(a64.toarray(), b64)
    assert rel_err(x, expected) < 1e-2  # the residual's 1e-5 times cond(A) of about 250
