"""NumPy's own LAPACK (gpukit_numpy.lapack), which the host dense solvers call past a size.

Matrices here are past ``linalg._ONE_THREAD`` entries, so gk.linalg.solve, cholesky and
cho_solve hand their LAPACK calls to NumPy's library; SciPy's wrappers are made to fail
where a test means NumPy's to be used, so a silent fallback shows. Results are compared
with float64/complex128 references; the binding is checked to be refused when wrong or
LP64, to fall back to SciPy when nothing resolves, to serve many threads at once and to
work in forked children. Where NumPy's library has no LAPACK under a known name (not on
NumPy's own wheels, where the first test requires it), the tests of NumPy's routines skip
and those of the fallback still run.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import types
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.linalg as sl

import gpukit as gk
from gpukit._runtime import plans
from gpukit.testing import random_array
from gpukit_numpy import lapack, linalg

from helpers import TOL, rel_err

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
N = 80  # 6400 entries: past linalg._ONE_THREAD


@pytest.fixture(autouse=True)
def numpy_backend():
    """The host backend, whatever the run's default (``--cupy=sim`` makes it cupy)."""
    with gk.use_backend("numpy") as backend:
        yield backend


@pytest.fixture
def fresh_binding(monkeypatch):
    """An empty cache of bound routines, restored afterwards."""
    monkeypatch.setattr(lapack._bound, "found", {})


@pytest.fixture
def numpy_only(monkeypatch):
    """SciPy's LAPACK wrappers and BLAS ``symv`` raise: the call must use NumPy's library."""
    if lapack.routines(np.float64) is None:
        pytest.skip("NumPy's library has no LAPACK under a known name")

    def refused(name, dtype):
        raise AssertionError(f"SciPy's {name} called for a {N}x{N} problem")

    monkeypatch.setattr(linalg, "_lapack", refused)
    monkeypatch.setattr(linalg, "_blas", refused)


def _hpd(rng, dtype, n=N, batch=()):
    z = random_array((*batch, n, n), dtype, rng=rng) / np.sqrt(n)
    return (z @ np.conj(np.swapaxes(z, -1, -2)) + np.eye(n)).astype(dtype)


def _layout(a, layout):
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":  # every other row and column of a larger matrix
        big = np.zeros((2 * a.shape[0], 2 * a.shape[1]), a.dtype)
        big[::2, ::2] = a
        return big[::2, ::2]
    return np.ascontiguousarray(a)


def test_numpy_lapack_resolves_on_numpys_wheels():
    """NumPy's wheels link scipy-openblas64, whose ILP64 LAPACK binds for every dtype."""
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    if blas.get("name") != "scipy-openblas":
        pytest.skip(f"NumPy built with {blas.get('name')}, not its wheels' scipy-openblas")
    for dtype in DTYPES:
        assert isinstance(lapack.routines(dtype), lapack.Lapack), np.dtype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("bshape", [(N,), (N, 3)])
def test_solve_on_numpys_lapack(numpy_only, rng, dtype, layout, assume_a, bshape):
    """LU (getrf, lange, gecon, getrs) and Cholesky (lansy/lanhe, potrf, pocon, potrs)
    against complex128 solutions; the inputs are left as they were."""
    h = _hpd(rng, dtype)
    a = _layout(h if assume_a == "pos" else h + random_array((N, N), dtype, rng=rng), layout)
    b = random_array(bshape, dtype, rng=rng)
    a0, b0 = a.copy(), b.copy()
    x = gk.linalg.solve(a, b, assume_a=assume_a)
    want = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    assert x.dtype == dtype and x.shape == bshape
    assert rel_err(x, want) < 10 * TOL[np.dtype(dtype)]
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F"])
def test_cholesky_and_cho_solve_on_numpys_lapack(numpy_only, rng, dtype, layout):
    """One matrix and a stack; the factor C-ordered and lower, its upper triangle zero."""
    tol = 10 * TOL[np.dtype(dtype)]
    for batch in [(), (2,)]:
        h = _hpd(rng, dtype, batch=batch)
        h = h if batch else _layout(h, layout)
        h0 = h.copy()
        c = gk.linalg.cholesky(h)
        assert c.flags.c_contiguous and np.array_equal(h, h0)
        assert not np.triu(c, 1).any()
        assert rel_err(c, np.linalg.cholesky(h.astype(np.complex128))) < tol
        b = random_array((*batch, N, 2), dtype, rng=rng)
        c0, b0 = c.copy(), b.copy()
        x = gk.linalg.cho_solve((c, True), b)
        assert rel_err(x, np.linalg.solve(h.astype(np.complex128), b)) < tol
        assert np.array_equal(c, c0) and np.array_equal(b, b0)
    x = gk.linalg.cho_solve((c[0], True), b[0, :, 0])  # a vector
    assert rel_err(x, np.linalg.solve(h[0].astype(np.complex128), b[0, :, 0])) < tol


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_the_condition_estimate_is_scipys(numpy_only, numpy_backend, rng, dtype, assume_a):
    """gecon/pocon on NumPy's library estimate what SciPy's estimate on the same factors
    (the LinAlgWarning's rcond)."""
    h = _hpd(rng, dtype)
    a = h if assume_a == "pos" else h + random_array((N, N), dtype, rng=rng)
    b = random_array((N, 1), dtype, rng=rng)
    _, rcond = numpy_backend.linalg_solve_rcond(a, b, assume_a)
    if assume_a == "gen":
        lu, _ = sl.lu_factor(a)
        want, _ = sl.get_lapack_funcs("gecon", (a,))(lu, np.abs(a).sum(0).max())
    else:
        c = sl.cholesky(a, lower=True)
        want, _ = sl.get_lapack_funcs("pocon", (a,))(c, np.abs(a).sum(0).max(), uplo="L")
    assert abs(rcond - want) <= 1e3 * np.finfo(dtype).eps * want


def test_an_ill_conditioned_matrix_warns(numpy_only, rng):
    """Singular values from 1 down to 1e-18: rcond below float64's eps."""
    q, _ = np.linalg.qr(random_array((N, N), rng=rng))
    a = (q * np.logspace(0, -18, N)) @ q.T
    with pytest.warns(sl.LinAlgWarning, match="ill-conditioned"):
        gk.linalg.solve(a, np.ones(N), assume_a="gen")


def _message(monkeypatch, own, call):
    """The error ``call`` raises, through NumPy's library or SciPy's wrappers."""
    with monkeypatch.context() as m:
        m.setattr(linalg, "_ONE_THREAD", linalg._ONE_THREAD if own else 1 << 62)
        with pytest.raises(gk.LinAlgError) as info:
            call()
    return str(info.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_failures_raise_as_through_scipy(numpy_only, monkeypatch, rng, dtype):
    """info > 0: a singular matrix (a zero column) and one not positive definite (a
    negative diagonal entry at row 40) raise the errors SciPy's path raises."""
    singular = random_array((N, N), dtype, rng=rng)
    singular[:, 40] = 0
    indefinite = _hpd(rng, dtype)
    indefinite[40, 40] = -1
    b = random_array(N, dtype, rng=rng)
    monkeypatch.undo()  # SciPy's wrappers back for the comparison
    for call in (
        lambda: gk.linalg.solve(singular, b),
        lambda: gk.linalg.solve(indefinite, b, assume_a="pos"),
        lambda: gk.linalg.cholesky(indefinite),
    ):
        own = _message(monkeypatch, True, call)
        assert own == _message(monkeypatch, False, call)
        assert "singular" in own or "positive definite" in own


def test_a_nan_in_b_is_named(numpy_only, rng):
    """check_finite's b is checked through x: NumPy's getrs carries the NaN there too."""
    b = np.ones(N)
    b[7] = np.nan
    with pytest.raises(ValueError, match="'b'"):
        gk.linalg.solve(random_array((N, N), rng=rng) + N * np.eye(N), b)


def test_small_problems_stay_on_scipys_wrappers(monkeypatch, rng):
    """Up to linalg._ONE_THREAD entries f2py's wrappers are cheaper per call, and OpenBLAS
    makes the call on the calling thread: NumPy's routines are not asked for."""
    monkeypatch.setattr(linalg, "numpy_lapack", lambda dtype: pytest.fail("NumPy's asked"))
    monkeypatch.setattr(linalg, "_own", lambda name, dtype: pytest.fail("NumPy's asked"))
    h = _hpd(rng, np.float64, n=64)
    b = random_array(64, rng=rng)
    for assume_a in ("gen", "pos"):
        assert rel_err(gk.linalg.solve(h, b, assume_a=assume_a), np.linalg.solve(h, b)) < 1e-12


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_scipy_does_the_work_where_nothing_resolves(fresh_binding, monkeypatch, rng, assume_a):
    monkeypatch.setattr(lapack, "_NAMES", ("gk_no_such_{}",))
    assert lapack.routines(np.float64) is None
    h = _hpd(rng, np.float64)
    b = random_array(N, rng=rng)
    x = gk.linalg.solve(h, b, assume_a=assume_a)
    assert rel_err(x, np.linalg.solve(h, b)) < 1e-12
    assert rel_err(gk.linalg.cholesky(h), np.linalg.cholesky(h)) < 1e-12


def test_a_wrong_binding_is_refused(fresh_binding, monkeypatch):
    """The check on small problems with known answers: xLANGE read as returning a float
    where it returns a double (a wrong ABI guess) gives a wrong norm, and nothing binds."""
    monkeypatch.setitem(lapack._REAL, "d", lapack.ctypes.c_float)
    assert lapack.routines(np.float64) is None


def test_an_lp64_library_is_refused(fresh_binding, monkeypatch):
    """Plain names (``dgetrf_``) may be LP64, which reads and writes 32-bit integers
    where 64-bit ones are passed: a library exporting only those gets no routines."""
    names = {"d" + name + "_": object() for name in lapack._SIGNATURES}
    monkeypatch.setattr(lapack, "library", lambda: types.SimpleNamespace(**names))
    assert lapack.routines(np.float64) is None


def test_other_dtypes_have_no_routines():
    swapped = np.dtype(np.float64).newbyteorder("S")  # LAPACK reads native numbers only
    for dtype in (np.float16, np.longdouble, np.int64, swapped):
        assert lapack.routines(dtype) is None


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_threads_binding_and_solving_at_once(fresh_binding, rng, dtype):
    """The first calls race to bind; every thread gets the one set and right answers."""
    if lapack.routines(dtype) is None:
        pytest.skip("NumPy's library has no LAPACK under a known name")
    lapack._bound.found.clear()
    threads = 8
    data = [(_hpd(rng, dtype), random_array((N, 2), dtype, rng=rng)) for _ in range(threads)]
    start = threading.Barrier(threads)

    def work(i):
        start.wait()
        found = lapack.routines(dtype)
        h, b = data[i]
        xs = [gk.linalg.solve(h, b, assume_a=kind) for kind in ("gen", "pos") * 3]
        return found, xs

    with ThreadPoolExecutor(threads) as pool:  # a worker's exception re-raises here
        results = list(pool.map(work, range(threads)))
    assert len({id(found) for found, _ in results}) == 1
    for (h, b), (_, xs) in zip(data, results, strict=True):
        want = np.linalg.solve(h.astype(np.complex128), b)
        assert max(rel_err(x, want) for x in xs) < 10 * TOL[np.dtype(dtype)]


def _child_solve(seed):
    rng = np.random.default_rng(seed)
    h = _hpd(rng, np.float64, n=300)
    b = rng.standard_normal(300)
    with gk.use_backend("numpy"):
        x = gk.linalg.solve(h, b, assume_a="pos")
        y = gk.linalg.solve(h, b)
    want = np.linalg.solve(h, b)
    return max(rel_err(x, want), rel_err(y, want))


def test_solves_in_forked_children(rng):
    """Bound and run on NumPy's threads in the parent, then in forked children."""
    if lapack.routines(np.float64) is None:
        pytest.skip("NumPy's library has no LAPACK under a known name")
    assert _child_solve(1) < 1e-12  # the parent's pool awake, the routines bound
    with multiprocessing.get_context("fork").Pool(2) as pool:
        errors = pool.map_async(_child_solve, [2, 3]).get(timeout=120)
    assert max(errors) < 1e-12


@pytest.fixture
def factor_calls(monkeypatch):
    """The LU factorisations the host solver makes (``gesv``, ``getrf``), recorded by
    name; the plans are emptied so that a solver is made with the recording routines."""
    calls = []

    def recording(lookup):
        def find(name, dtype):
            routine = lookup(name, dtype)
            if name not in ("gesv", "getrf"):
                return routine

            def factor(*args, **kwargs):
                calls.append(name)
                return routine(*args, **kwargs)

            return factor

        return find

    monkeypatch.setattr(linalg, "_lapack", recording(linalg._lapack))
    monkeypatch.setattr(linalg, "_own", recording(linalg._own))
    plans.forget()
    yield calls
    plans.forget()  # no plan keeps the recording routines


@pytest.mark.parametrize("n", [4, N])
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_warm_solve_refuses_nan_or_inf_in_a_before_factoring(factor_calls, rng, n, layout, dtype):
    """check_finite of a is the solver's screen on the warm path (the norm its condition
    estimate takes): a NaN or inf anywhere in a gives the check's ValueError, raised by
    nothing else, and a is never factored; with check_finite=False a still is."""
    a = _layout(random_array((n, n), dtype, rng=rng) + n * np.eye(n, dtype=dtype), layout)
    b = random_array(n, dtype, rng=rng)
    for _ in range(3):
        got = gk.linalg.solve(a, b)
    assert rel_err(got, np.linalg.solve(a.astype(np.complex128), b)) < 10 * TOL[np.dtype(dtype)]
    values = [np.nan, np.inf, -np.inf]
    if np.dtype(dtype).kind == "c":
        values += [complex(0, np.nan), complex(1, np.inf)]
    for value in values:
        bad = a.copy(order="A")
        bad[tuple(rng.integers(0, n, 2))] = value
        factor_calls.clear()
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf") as info:
            gk.linalg.solve(bad, b)
        assert factor_calls == []
        assert info.value.__cause__ is None and info.value.__context__ is None
        with warnings.catch_warnings():  # an inf a may give a finite x, ill-conditioned
            warnings.simplefilter("ignore", sl.LinAlgWarning)
            with contextlib.suppress(ValueError):  # x's check naming a, where x is not finite
                gk.linalg.solve(bad, b, check_finite=False)
        assert factor_calls != []


@pytest.mark.parametrize("n", [4, N])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_finite_a_whose_norm_overflows_is_solved(factor_calls, rng, n, dtype):
    """A finite a can overflow the norm that screens it: it is then looked at entry by
    entry, found finite and solved (the infinite norm gives rcond 0: a warning, as SciPy)."""
    big = 0.75 * float(np.finfo(dtype).max)
    a = np.eye(n, dtype=dtype) * big
    a[0, 1] = big  # row 0 sums to 1.5 times the largest float
    b = random_array(n, dtype, rng=rng)
    for _ in range(3):
        with pytest.warns(sl.LinAlgWarning, match="ill-conditioned"):
            got = gk.linalg.solve(a, b)
    assert factor_calls != []
    assert rel_err(got, sl.solve_triangular(a.astype(np.complex128), b)) < 10 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("shape", [(4, 4), (7, 4), (4, 7), (1, 5), (5, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_small_qr_is_numpys(rng, dtype, shape, mode):
    """One small matrix is factored by geqrf and orgqr/ungqr here: the shapes, dtypes,
    layout and triangle of numpy.linalg.qr's results, which agree with them up to signs."""
    a = random_array(shape, dtype, rng=rng)
    got, want = gk.linalg.qr(a, mode), np.linalg.qr(a, mode)
    if mode != "r":
        assert type(got) is type(want)
        assert rel_err(got.Q @ got.R, a.astype(np.complex128)) < 10 * TOL[np.dtype(dtype)]
    pairs = [(got, want)] if mode == "r" else list(zip(got, want, strict=True))
    for x, y in pairs:
        assert (x.shape, x.dtype, x.flags.c_contiguous) == (y.shape, y.dtype, y.flags.c_contiguous)
    r = got if mode == "r" else got.R
    assert not np.tril(r, -1).any()
    assert rel_err(abs(r), abs(want if mode == "r" else want.R)) < 10 * TOL[np.dtype(dtype)]
