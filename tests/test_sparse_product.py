"""The host sparse mat-vec of the Krylov loops (gpukit_numpy.sparse_product): banded CSR
matrices move to diagonal storage after a few products, anything else stays as it is.

Products are compared with float64 dense references on fresh random inputs; the move is
checked to happen exactly when documented, and to be refused where diagonal storage
would drop entries, cost more than CSR, or not fit in memory. The structural tests lower
``MIN_NONZEROS`` to use small matrices; the size rule has tests of its own.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg as spla
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukit as gk
from gpukit_numpy import sparse_product as sparse

from helpers import TOL, rel_err

DTYPES = [np.float32, np.float64]


@pytest.fixture(autouse=True)
def numpy_backend():
    """The host backend, whatever the run's default (``--cupy=sim`` makes it cupy)."""
    with gk.use_backend("numpy"):
        yield


@pytest.fixture
def any_size(monkeypatch):
    """Small matrices move too (the size rule is tested on its own)."""
    monkeypatch.setattr(sparse, "MIN_NONZEROS", 1)


def _banded(rng, m, n, offsets, dtype, index_dtype=np.int32):
    """A canonical CSR matrix with random values on ``offsets`` (column - row)."""
    rows, cols = [], []
    for k in offsets:
        i = np.arange(max(0, -k), min(m, n - k))
        rows.append(i)
        cols.append(i + k)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    values = rng.standard_normal(rows.size).astype(dtype)
    a = scipy.sparse.coo_matrix((values, (rows, cols)), shape=(m, n)).tocsr()
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    return a


def _reference(a, v):
    return a.toarray().astype(np.float64) @ v.astype(np.float64)


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
def test_diagonal_product_matches_reference(rng, any_size, dtype, shape, offsets):
    a = _banded(rng, *shape, offsets, dtype)
    product = sparse.diagonal_product(a)
    assert product is not None
    v = rng.standard_normal(shape[1]).astype(dtype)
    y = product(v)
    assert rel_err(y, _reference(a, v)) < TOL[np.dtype(dtype)]
    assert y.dtype == a.dtype
    # the sums are formed in CSR's order: the very same values (why iterations agree)
    np.testing.assert_array_equal(y, a @ v)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    m=st.integers(1, 120),
    n=st.integers(1, 120),
    offsets=st.lists(st.integers(-119, 119), min_size=1, max_size=8, unique=True),
    holes=st.floats(0, 0.5),
    dtype=st.sampled_from([np.float32, np.float64]),
    index_dtype=st.sampled_from([np.int32, np.int64]),
)
def test_any_band_moves_exactly_when_it_should(
    rng, any_size, m, n, offsets, holes, dtype, index_dtype
):
    rows, cols = [], []
    for k in offsets:
        i = np.arange(max(0, -k), min(m, n - k))
        keep = rng.random(i.size) >= holes
        rows.append(i[keep])
        cols.append(i[keep] + k)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    values = rng.standard_normal(rows.size).astype(dtype)
    a = scipy.sparse.coo_matrix((values, (rows, cols)), shape=(m, n)).tocsr()
    a.indices, a.indptr = a.indices.astype(index_dtype), a.indptr.astype(index_dtype)
    product = sparse.diagonal_product(a)
    # the rule, from the entries themselves: the diagonals present, the column window
    present = np.unique(cols - rows).size
    width = cols.max() + 1 - cols.min() if cols.size else 0
    moves = cols.size > 0 and present * width <= sparse.MAX_FILL * cols.size
    assert (product is not None) == moves
    if moves:
        v = rng.standard_normal(n).astype(dtype)
        np.testing.assert_array_equal(product(v), a @ v)
        assert rel_err(product(v), _reference(a, v)) < TOL[np.dtype(dtype)]


def test_diagonals_are_stored_in_csr_order(rng, any_size):
    a = _banded(rng, 300, 300, [17, -1, 0, -17, 1], np.float64)
    banded = sparse.diagonal_product(a).__self__
    assert banded.format == "dia" and list(banded.offsets) == [-17, -1, 0, 1, 17]


def test_a_row_block_stores_its_column_window(rng):
    # rows 4096-12287 of the 128x128-grid Poisson operator use columns 3968-12415 only
    block = gk.sparse.poisson2d(128)[4096:12288]
    assert block.nnz >= sparse.MIN_NONZEROS
    assert (block.indices.min(), block.indices.max()) == (3968, 12415)
    product = sparse.diagonal_product(block)
    assert product is not None
    v = rng.standard_normal(128 * 128)
    assert rel_err(product(v), block @ v) < 1e-15  # the dense reference would be 1 GiB
    np.testing.assert_array_equal(product(v), block @ v)


def test_int64_indices(rng, any_size):
    a = _banded(rng, 500, 500, [-20, -1, 0, 1, 20], np.float64, index_dtype=np.int64)
    product = sparse.diagonal_product(a)
    assert product is not None
    v = rng.standard_normal(500)
    assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_diagonals_outside_the_sampled_rows_are_found(rng, any_size):
    # band -15..14, and row 5, which is not among the rows sampled first, has 15 and 16 too
    assert 5 not in np.linspace(0, 399, num=sparse._SAMPLE_ROWS, dtype=np.intp)
    a = _banded(rng, 400, 400, list(range(-15, 15)), np.float64).tolil()
    a[5, 20], a[5, 21] = 2.5, -1.5
    a = a.tocsr()
    product = sparse.diagonal_product(a)
    assert product is not None
    assert list(product.__self__.offsets) == list(range(-15, 17))
    v = rng.standard_normal(400)
    assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_not_banded_stays_csr(rng, any_size):
    scattered = scipy.sparse.random(300, 300, density=0.05, format="csr", random_state=rng)
    assert sparse.diagonal_product(scattered) is None
    many = _banded(rng, 200, 200, list(range(-40, 41)), np.float64)  # 81 > 64 diagonals
    assert sparse.diagonal_product(many) is None
    # one entry off the band, in a row not sampled first, adds a whole stored diagonal to a
    # tridiagonal matrix: 4n > 1.1 nnz
    corner = _banded(rng, 200, 200, [-1, 0, 1], np.float64).tolil()
    corner[5, 150] = 1.0
    assert sparse.diagonal_product(corner.tocsr()) is None
    empty = scipy.sparse.csr_matrix((50, 50))
    assert sparse.diagonal_product(empty) is None


def test_small_and_complex_matrices_keep_csr(rng):
    small = gk.sparse.poisson2d(64)  # 20 224 entries, below MIN_NONZEROS
    assert small.nnz < sparse.MIN_NONZEROS
    assert sparse.diagonal_product(small) is None
    assert sparse.sparse_product(small) == small.dot
    large = gk.sparse.poisson2d(128)
    assert sparse.diagonal_product(large) is not None
    for dtype in (np.complex64, np.complex128, np.int64):  # SciPy's DIA: no faster, or slower
        other = large.astype(dtype)
        assert sparse.diagonal_product(other) is None
        assert sparse.sparse_product(other) == other.dot


def _with_duplicates(a):
    """``a`` with each row's diagonal entry stored once more, at the row's end."""
    counts = np.diff(a.indptr) + 1
    ends = np.cumsum(counts)
    data, cols = np.empty(ends[-1]), np.empty(ends[-1], np.int32)
    keep = np.ones(ends[-1], bool)
    keep[ends - 1] = False
    data[keep], cols[keep] = a.data, a.indices
    data[~keep], cols[~keep] = 1.0, np.arange(a.shape[0])
    return scipy.sparse.csr_matrix((data, cols, np.r_[0, ends]), shape=a.shape)


def test_duplicates_are_summed_not_dropped(rng, any_size):
    a = _banded(rng, 100, 100, [-1, 0, 1], np.float64)
    dup = _with_duplicates(a)
    assert not dup.has_canonical_format
    assert sparse.diagonal_product(dup) is None
    product = sparse.sparse_product(dup)
    v = rng.standard_normal(100)
    expected = (a.toarray() + np.eye(100)) @ v
    for _ in range(sparse.TRIAL_PRODUCTS + 3):
        assert rel_err(product(v), expected) < 1e-12


def test_a_stale_canonical_flag_is_not_trusted(rng, any_size):
    # SciPy caches has_canonical_format; changing the indices afterwards leaves it True
    a = _banded(rng, 100, 100, [-1, 0, 1], np.float64)
    assert a.has_canonical_format
    a.indices[1] = a.indices[0]  # row 0 now holds column 0 twice
    assert a.has_canonical_format  # stale
    assert sparse.diagonal_product(a) is None
    unsorted = _banded(rng, 100, 100, [-1, 0, 1], np.float64)
    assert unsorted.has_canonical_format
    unsorted.indices[[3, 4]] = unsorted.indices[[4, 3]]  # row 1's columns out of order
    unsorted.data[[3, 4]] = unsorted.data[[4, 3]]
    assert sparse.diagonal_product(unsorted) is None


def test_a_duplicate_in_the_last_row_after_an_empty_first_row(rng, any_size):
    # row 0 empty puts a row start at entry 0; it must not mask the last row's check
    a = _banded(rng, 100, 100, [-1, 0, 1], np.float64).tolil()
    a[0, 0] = a[0, 1] = 0
    a = a.tocsr()
    a.eliminate_zeros()
    assert a.indptr[1] == 0
    # the last row's last entry stored twice
    indptr = a.indptr.copy()
    indptr[-1] += 1
    dup = scipy.sparse.csr_matrix(
        (np.r_[a.data, 1.0], np.r_[a.indices, a.indices[-1]], indptr), shape=a.shape
    )
    assert dup.indptr[1] == 0 and dup.indices[-1] == dup.indices[-2]
    assert sparse.diagonal_product(dup) is None
    v = rng.standard_normal(100)
    expected = a @ v
    expected[-1] += v[dup.indices[-1]]
    product = sparse.sparse_product(dup)
    for _ in range(sparse.TRIAL_PRODUCTS + 2):
        assert rel_err(product(v), expected) < 1e-12


def test_shapes_beyond_int32_keep_csr(monkeypatch):
    # SciPy's DIA product sums row and offset in int32 for such shapes and reads out of
    # bounds (a segfault): refused before anything is looked at. A real CSR matrix of
    # 2**31 rows needs a 16 GiB indptr, so a stand-in carries the attributes read.
    def untouched(*args):
        raise AssertionError("the matrix was looked into")

    monkeypatch.setattr(sparse, "_sampled_offsets", untouched)
    monkeypatch.setattr(sparse, "_build", untouched)
    nnz = sparse.MIN_NONZEROS
    for shape in [(2**31 - 1, 12000), (12000, 2**31 - 1)]:
        stand_in = SimpleNamespace(
            shape=shape,
            dtype=np.dtype(np.float64),
            indptr=np.array([0, nnz], np.int64),
            indices=np.zeros(nnz, np.int64),
            data=np.ones(nnz),
        )
        assert sparse.diagonal_product(stand_in) is None


def test_indptr_not_starting_at_zero_keeps_csr(rng, any_size):
    a = _banded(rng, 300, 300, [-1, 0, 1], np.float64)
    shifted = a.copy()
    shifted.indptr = a.indptr + 1
    shifted.indices = np.r_[0, a.indices].astype(np.int32)
    shifted.data = np.r_[9.0, a.data]
    v = rng.standard_normal(300)
    np.testing.assert_array_equal(shifted @ v, a @ v)  # SciPy reads from indptr[0]
    assert sparse.diagonal_product(shifted) is None


def test_storage_beyond_the_last_row_is_ignored(rng, any_size):
    # SciPy's product reads indptr[-1] entries; data and indices may be longer
    a = _banded(rng, 300, 300, [-17, -1, 0, 1, 17], np.float64)
    spare = a.copy()
    spare.data, spare.indices = np.r_[a.data, 7.0], np.r_[a.indices, 299].astype(np.int32)
    assert spare.data.size == a.nnz + 1
    v = rng.standard_normal(300)
    np.testing.assert_array_equal(spare @ v, a @ v)
    product = sparse.diagonal_product(spare)
    assert product is not None
    assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_no_memory_for_the_copy_keeps_csr(rng, any_size, monkeypatch):
    def exhausted(*args):
        raise MemoryError

    monkeypatch.setattr(sparse, "_build", exhausted)
    a = _banded(rng, 300, 300, [-1, 0, 1], np.float64)
    assert sparse.diagonal_product(a) is None
    product = sparse.sparse_product(a)
    v = rng.standard_normal(300)
    for _ in range(sparse.TRIAL_PRODUCTS + 2):
        assert rel_err(product(v), _reference(a, v)) < 1e-12


def test_product_moves_after_the_trial_products(rng, any_size):
    a = _banded(rng, 400, 400, [-20, -1, 0, 1, 20], np.float64)
    indices, data = a.indices.copy(), a.data.copy()
    product = sparse.sparse_product(a)
    for call in range(1, sparse.TRIAL_PRODUCTS + 3):
        v = rng.standard_normal(400)
        assert rel_err(product(v), _reference(a, v)) < 1e-12
        kind = type(product.dot.__self__)
        assert kind is (type(a) if call <= sparse.TRIAL_PRODUCTS else scipy.sparse.dia_matrix)
    # the matrix itself is unchanged
    assert a.format == "csr"
    np.testing.assert_array_equal(a.indices, indices)
    np.testing.assert_array_equal(a.data, data)


def test_other_formats_keep_their_product(rng, any_size):
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
    n = 96  # 45 696 entries: large enough to move
    a = gk.sparse.poisson2d(n).astype(dtype)
    b = rng.standard_normal(n * n).astype(dtype)
    x, info = gk.linalg.cg(a, b, rtol=1e-5)
    # long enough to move to diagonal storage, once
    assert info.converged and info.iterations > sparse.TRIAL_PRODUCTS
    assert len(moves) == 1 and moves[0] is not None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert rel_err(a64 @ x.astype(np.float64), b64) <= (2e-5 if dtype == np.float32 else 1.0001e-5)
    expected = spla.spsolve(a64.tocsc(), b64)
    assert rel_err(x, expected) < 0.05  # the residual's 1e-5 times cond(A) of about 3800
