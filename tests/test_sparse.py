"""gk.sparse: CSR construction on the active backend and the Poisson builder."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import gpukit as gk

from helpers import rel_err


def _native_sparse(backend, a) -> bool:
    return backend.linalg_is_sparse(a) and a.format == "csr"


def test_forms_match_scipy(backend, rng):
    dense = rng.standard_normal((5, 7)) * (rng.random((5, 7)) < 0.4)
    ref = sp.csr_matrix(dense)
    coo = ref.tocoo()
    forms = [
        gk.sparse.csr_matrix(dense),
        gk.sparse.csr_matrix(ref),
        gk.sparse.csr_matrix(sp.coo_matrix(dense)),
        gk.sparse.csr_matrix((coo.data, (coo.row, coo.col)), shape=(5, 7)),
        gk.sparse.csr_matrix((ref.data, ref.indices, ref.indptr), shape=(5, 7)),
    ]
    for a in forms:
        assert _native_sparse(backend, a)
        assert a.shape == (5, 7)
        assert rel_err(a.toarray(), dense) == 0.0


def test_empty_dtype_and_duplicates(backend):
    empty = gk.sparse.csr_matrix((3, 4), dtype=np.float32)
    assert empty.shape == (3, 4) and empty.nnz == 0 and empty.dtype == np.float32
    dup = gk.sparse.csr_matrix((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))))
    assert float(dup.toarray()[0, 1]) == 3.0


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_poisson2d_matches_kron_reference(backend, n):
    t = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    ref = np.kron(np.eye(n), t) + np.kron(t, np.eye(n))
    a = gk.sparse.poisson2d(n)
    assert _native_sparse(backend, a)
    assert a.nnz == np.count_nonzero(ref)
    assert rel_err(a.toarray(), ref) == 0.0


def test_poisson2d_dtype_and_errors(backend):
    assert gk.sparse.poisson2d(3, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match=r"^gk\.sparse\.poisson2d: n must be >= 1"):
        gk.sparse.poisson2d(0)
    with pytest.raises(TypeError, match=r"^gk\.sparse\.poisson2d: n must be an integer"):
        gk.sparse.poisson2d(4.0)
    with pytest.raises(TypeError, match=r"^gk\.sparse\.poisson2d: dtype="):
        gk.sparse.poisson2d(3, dtype=np.int64)


def test_issparse():
    assert gk.sparse.issparse(sp.eye(2, format="csr"))
    assert not gk.sparse.issparse(np.eye(2))


def test_host_sparse_to_device_is_a_counted_transfer(fake_device):
    a = sp.eye(4, format="csr")
    b = gk.asarray(np.ones(4))
    with gk.transfer_guard("disallow"), pytest.raises(gk.TransferGuardError, match="'A'"):
        gk.linalg.cg(a, b)
    gk.reset_transfer_stats()
    x, info = gk.linalg.cg(a, b)
    assert info.converged and rel_err(x, np.ones(4)) < 1e-12
    nbytes = a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
    assert gk.transfer_stats().host_to_device.bytes == nbytes


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_warm_dense_csr_matrix_still_checks_its_entries(backend, rng):
    """A dense array of a type and dtype seen before skips the checks; any other is
    checked again: integer entries without dtype=, objects and numpy.matrix are refused
    on a warm call too, and dtype= still converts."""
    dense = rng.standard_normal((4, 4)) * (rng.random((4, 4)) < 0.5)
    for _ in range(3):
        a = gk.sparse.csr_matrix(dense)
        assert _native_sparse(backend, a) and a.dtype == np.float64
        assert rel_err(a.toarray(), dense) == 0
    with pytest.raises(TypeError, match=r"gk\.sparse\.csr_matrix: argument 'arg1' has dtype"):
        gk.sparse.csr_matrix(dense.astype(np.int64))
    with pytest.raises(TypeError, match="argument 'arg1'"):
        gk.sparse.csr_matrix(dense.astype(object))
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        gk.sparse.csr_matrix(np.asmatrix(dense))
    converted = gk.sparse.csr_matrix(dense.astype(np.int64), dtype=np.float32)
    assert converted.dtype == np.float32
    assert rel_err(converted.toarray(), dense.astype(np.int64)) == 0
