"""The host dense solvers hand LAPACK Fortran-ordered views (gpukit_numpy.linalg).

f2py gives LAPACK a Fortran-ordered array: anything else it copies, transposing, on top
of the copy a factorisation makes so as not to overwrite its input. A real C-ordered
matrix is its transpose in Fortran order, so the backend can always pass a view. These
tests record what each LAPACK routine receives, for every memory layout, structure and
option, and assert that it is a Fortran-ordered view of the caller's matrix (of the
factor, for the routines that read one), and that a solve holds one matrix of memory
besides its input, without timing anything; the solutions are compared with float64
references. Each runs through SciPy's wrappers (the small matrices here) and through
NumPy's own LAPACK (gpukit_numpy.lapack, which takes every size when the threshold is 0),
which wraps its routines to be called the same way.
"""

from __future__ import annotations

import tracemalloc
from collections import defaultdict

import numpy as np
import pytest
import scipy.linalg as sl

import gpukit as gk
from gpukit._runtime import plans
from gpukit.testing import random_array, random_spd
from gpukit_numpy import linalg

from helpers import TOL, rel_err

REAL = [np.float32, np.float64]
DTYPES = [*REAL, np.complex64, np.complex128]
N = 9


@pytest.fixture(autouse=True)
def numpy_backend():
    """The host backend, whatever the run's default (``--cupy=sim`` makes it cupy)."""
    with gk.use_backend("numpy"):
        yield


@pytest.fixture(params=["scipy", "numpy"])
def lapack(request, monkeypatch):
    """name -> ``(args, result)`` of each call of a LAPACK routine by gpukit_numpy.linalg,
    through SciPy's wrappers or, for ``numpy``, NumPy's library, where a call that went to
    SciPy's instead is recorded as ``"scipy <name>"`` and fails the test."""
    calls = defaultdict(list)
    own = request.param == "numpy"
    if own:
        if linalg.numpy_lapack(np.dtype(np.float64)) is None:
            pytest.skip("NumPy's library has no LAPACK under a known name")
        monkeypatch.setattr(linalg, "_ONE_THREAD", 0)

    def recorder(lookup, prefix):
        def recording(name, dtype):
            routine = lookup(name, dtype)

            def call(*args, **kwargs):
                result = routine(*args, **kwargs)
                calls[prefix + name].append((args, result))
                return result

            return call

        return recording

    monkeypatch.setattr(linalg, "_lapack", recorder(linalg._lapack, "scipy " if own else ""))
    monkeypatch.setattr(linalg, "_own", recorder(linalg._own, ""))
    plans.forget()  # warm solves keep the routines they looked up (linalg_solve_plan)
    yield calls
    plans.forget()
    assert not [name for name in calls if name.startswith("scipy ")]


def _in_order(x, order):
    return np.asfortranarray(x) if order == "F" else np.ascontiguousarray(x)


def _assert_view(m, of):
    """``m`` is a Fortran-ordered view of ``of``: f2py hands it to LAPACK as it is."""
    assert m.flags.f_contiguous, f"LAPACK got a {m.strides} strided array: f2py copies it"
    assert np.shares_memory(m, of), "LAPACK got a copy of the matrix"


def _only(calls, name):
    assert len(calls[name]) == 1, f"{name} called {len(calls[name])} times"
    return calls[name][0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("bshape", [(N,), (N, 2)])
def test_lu_solve_reads_the_callers_matrix(request, lapack, rng, dtype, order, transposed, bshape):
    a = _in_order(random_array((N, N), dtype, rng=rng) / np.sqrt(N) + 3 * np.eye(N), order)
    a = a.astype(dtype, copy=False)
    b = random_array(bshape, dtype, rng=rng)
    x = gk.linalg.solve(a, b, transposed=transposed)
    m = a.astype(np.complex128)
    expected = np.linalg.solve(m.T if transposed else m, b.astype(np.complex128))
    assert rel_err(x, expected) < TOL[np.dtype(dtype)]
    if request.node.callspec.params["lapack"] == "scipy":
        # one call factors and solves, on the one copy f2py makes (in Fortran order)
        (matrix, _), (lu, _, _, _) = _only(lapack, "gesv")
        assert np.shares_memory(matrix, a)
        assert "getrf" not in lapack and "getrs" not in lapack
    else:
        (matrix,), (lu, _, _) = _only(lapack, "getrf")
        _assert_view(matrix, a)
        assert _only(lapack, "getrs")[0][0] is lu
    _assert_view(_only(lapack, "lange")[0][1], a)
    assert _only(lapack, "gecon")[0][0] is lu


def _positive_definite(rng, dtype, lower):
    """A Hermitian positive-definite matrix in the triangle ``lower``, garbage in the
    other one (a solver reading it answers wrong), and the matrix itself."""
    z = random_array((N, N), dtype, rng=rng) / np.sqrt(N)
    h = z @ np.conj(z.T) + np.eye(N)
    garbage = 5 * random_array((N, N), dtype, rng=rng)
    a = np.tril(h) + np.triu(garbage, 1) if lower else np.triu(h) + np.tril(garbage, -1)
    return a.astype(dtype), h


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
def test_cholesky_solve_reads_the_callers_matrix(lapack, rng, dtype, order, lower, transposed):
    a, h = _positive_definite(rng, dtype, lower)
    a = _in_order(a, order)
    b = random_array((N,), dtype, rng=rng)
    x = gk.linalg.solve(a, b, assume_a="pos", lower=lower, transposed=transposed)
    expected = np.linalg.solve(h.T if transposed else h, b.astype(np.complex128))
    assert rel_err(x, expected) < TOL[np.dtype(dtype)]
    _, (factor, _) = _only(lapack, "potrf")
    _assert_view(_only(lapack, "potrs")[0][0], factor)
    _assert_view(_only(lapack, "pocon")[0][0], factor)
    if np.dtype(dtype).kind == "f":  # a complex matrix's upper triangle is conjugated first
        _assert_view(_only(lapack, "potrf")[0][0], a)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("order", ["C", "F"])
def test_cholesky_reads_the_callers_matrix(lapack, rng, dtype, order):
    a, h = _positive_definite(rng, dtype, lower=True)
    a = _in_order(a, order)
    c = gk.linalg.cholesky(a)
    assert c.flags.c_contiguous  # as numpy.linalg.cholesky's, whatever a's order
    assert rel_err(c, np.linalg.cholesky(h)) < TOL[np.dtype(dtype)]
    _assert_view(_only(lapack, "potrf")[0][0], a)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_hands_potrs_a_view(lapack, rng, dtype, lower):
    _, h = _positive_definite(rng, dtype, lower=True)
    c, _ = sl.cho_factor(h, lower=lower)
    b = random_array((N, 3), dtype, rng=rng)
    x = gk.linalg.cho_solve((c.astype(dtype), lower), b)
    assert rel_err(x, np.linalg.solve(h, b.astype(np.float64))) < TOL[np.dtype(dtype)]
    (matrix, *_), _ = _only(lapack, "potrs")  # (c, b, lower)
    assert matrix.flags.f_contiguous


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_solve_holds_one_matrix_at_a_time(rng, assume_a, order):
    """LAPACK's copy for the factor is the one matrix a solve allocates at a time (the
    Hermitian norm's temporary ``|a|`` is freed before the factor is made)."""
    a = _in_order(random_spd(300, rng=rng), order)
    b = random_array((300,), rng=rng)
    gk.linalg.solve(a, b, assume_a=assume_a)  # LAPACK's lookups, imports
    tracemalloc.start()
    try:
        x = gk.linalg.solve(a, b, assume_a=assume_a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rel_err(x, np.linalg.solve(a, b)) < TOL[np.dtype(np.float64)]
    assert peak < 1.25 * a.nbytes, f"a solve held {peak / a.nbytes:.2f} matrices at once"
