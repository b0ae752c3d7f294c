"""gk.linalg's dense functions with SciPy's options and NumPy's results (issue 16 items
4, 6, 7, 14): ``solve(assume_a, lower, transposed, check_finite)`` against
``scipy.linalg.solve`` and independent float64 references, the ill-conditioning
``LinAlgWarning``, ``check_finite`` on every routine, and NumPy's named result tuples.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import gpukit as gk
from gpukit.testing import random_array

from helpers import TOL, rel_err

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def eye_like(shape):
    return np.broadcast_to(np.eye(shape[-1]), shape)


def matrix_for(rng, kind, shape, dtype):
    """A well-conditioned matrix of structure ``kind`` (diagonal dominance), *garbage*
    outside the part the structure names: a solver that reads it gets a wrong answer."""
    n = shape[-1]
    a = random_array(shape, dtype, rng=rng) / np.sqrt(n) + 3 * eye_like(shape)
    if kind == "pos":  # Hermitian positive definite in the triangle that is read
        z = random_array(shape, dtype, rng=rng) / np.sqrt(n)
        h = z @ np.conj(np.swapaxes(z, -1, -2)) + eye_like(shape)
        a = np.tril(h) + np.triu(random_array(shape, dtype, rng=rng) * 5, 1)  # garbage upper part
    return a.astype(dtype)


def reference(a, kind, lower, transposed):
    """The matrix SciPy's solver reads for ``kind`` (an independent construction)."""
    a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    t = np.tril(a) if lower else np.triu(a)
    d = np.diagonal(a, axis1=-2, axis2=-1)
    eye = np.eye(a.shape[-1])
    if kind in ("sym", "her", "pos"):
        mirrored = np.swapaxes(t, -1, -2)
        if kind != "sym":  # Hermitian: conjugate mirror, real diagonal
            mirrored, d = np.conj(mirrored), d.real
        m = t + mirrored - eye * d[..., None, :]
    elif kind == "diagonal":
        m = eye * d[..., None, :]
    elif kind == "tridiagonal":
        m = np.triu(np.tril(a, 1), -1)
    elif kind in ("upper triangular", "lower triangular"):
        m = np.triu(a) if kind.startswith("upper") else np.tril(a)
    else:
        m = a
    return np.swapaxes(m, -1, -2) if transposed else m


KINDS = [
    None, "gen", "general", "banded", "sym", "symmetric", "her", "hermitian", "pos",
    "positive definite", "diagonal", "tridiagonal", "upper triangular", "lower triangular",
]  # fmt: skip
CANONICAL = {"general": "gen", "banded": "gen", None: "gen", "symmetric": "sym",
             "hermitian": "her", "positive definite": "pos"}  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", KINDS)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(("ashape", "bshape"), [((6, 6), (6,)), ((3, 6, 6), (3, 6, 2))])
def test_solve_structures_against_references(
    backend, xp, rng, dtype, assume_a, lower, transposed, ashape, bshape
):
    kind = CANONICAL.get(assume_a, assume_a)
    if kind == "pos":  # the triangle read is the one holding the positive definite part
        a = matrix_for(rng, "pos", ashape, dtype)
        if not lower:
            a = np.conj(np.swapaxes(a, -1, -2))
    else:
        a = matrix_for(rng, kind, ashape, dtype)
    b = random_array(bshape, dtype, rng=rng)
    x = gk.linalg.solve(
        xp.asarray(a), xp.asarray(b), assume_a=assume_a, lower=lower, transposed=transposed
    )
    m = reference(a, kind, lower, transposed)
    expected = np.linalg.solve(m, b if b.ndim > 1 else b[:, None])
    expected = expected if b.ndim > 1 else expected[:, 0]
    assert x.dtype == dtype and x.shape == expected.shape
    assert rel_err(x, expected) < 50 * TOL[np.dtype(dtype)]
    if a.ndim == 2 and not (transposed and np.iscomplexobj(a)):  # SciPy agrees
        got = sl.solve(a, b, assume_a=assume_a, lower=lower, transposed=transposed)
        assert rel_err(x, got) < 50 * TOL[np.dtype(dtype)]


def test_solve_assume_a_errors(backend, xp):
    with pytest.raises(ValueError, match=r"assume_a must be one of .*'positive definite'"):
        gk.linalg.solve(xp.eye(2), xp.ones(2), assume_a="tri")
    with pytest.raises(TypeError, match="assume_a must be a string or None, got int"):
        gk.linalg.solve(xp.eye(2), xp.ones(2), assume_a=3)


@pytest.mark.parametrize("assume_a", ["diagonal", "upper triangular", "pos"])
def test_structured_singular_matrix(backend, xp, assume_a):
    a = np.diag([1.0, 0.0, 2.0])
    if assume_a == "pos":
        a[1, 1] = -1.0  # not positive definite
    with pytest.raises(gk.LinAlgError, match=r"gk\.linalg\.solve: matrix 'a' is"):
        gk.linalg.solve(xp.asarray(a), xp.ones(3), assume_a=assume_a)


def conditioned(rng, n, kappa, hermitian=False):
    """A matrix with 2-norm condition number ``kappa`` (random singular vectors)."""
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v = u if hermitian else np.linalg.qr(rng.standard_normal((n, n)))[0]
    s = np.logspace(0, -np.log10(kappa), n)
    return (u * s) @ v.T


def outcome(solve, a, b, assume_a):
    """``"ok"``, ``"warn"`` (a LinAlgWarning) or ``"singular"`` (a LinAlgError)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            solve(a, b, assume_a=assume_a)
        except np.linalg.LinAlgError:
            return "singular", seen
    warned = [w for w in seen if issubclass(w.category, sl.LinAlgWarning)]
    return ("warn" if warned else "ok"), warned


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("kappa", [1e3, 1e12, 1e18, 1e22])
def test_ill_conditioned_warns_as_scipy(backend, xp, rng, assume_a, kappa):
    """SciPy's LinAlgWarning, same threshold (rcond < eps): gk warns where SciPy does, on
    matrices far from the threshold on either side (where SciPy finds a matrix singular
    to working precision, gk may too)."""
    n = 12
    a = conditioned(rng, n, kappa, hermitian=assume_a == "pos")
    b = rng.standard_normal(n)
    expected, _ = outcome(sl.solve, a, b, assume_a)
    got, warned = outcome(gk.linalg.solve, xp.asarray(a), xp.asarray(b), assume_a)
    assert (expected == "ok") == (kappa < 1e16)  # the cases are unambiguous
    assert (got == "ok") == (expected == "ok")
    if got == "warn":
        assert "gk.linalg.solve: matrix 'a' is ill-conditioned" in str(warned[0].message)
        assert warned[0].filename == __file__  # attributed to the caller


@pytest.mark.parametrize(
    ("dtype", "kind"),
    [(d, k) for d in (np.float64, np.complex128, np.float32) for k in ("random", "graded")]
    + [(np.float64, "hilbert")],  # cond 1e10: float32's factors would be noise
)
def test_the_condition_estimate_bounds_the_exact_norm_as_lapack_does(rng, dtype, kind):
    """The GPU's estimate of ||inv(A)||_1 (xLACN2's method, backends without xGECON): a lower
    bound of the exact norm, within the factor 3 Higham reports (usually exact)."""
    from gpukit.backend._ops.linalg import norm1_inverse_estimate

    n = 40
    if kind == "random":
        a = random_array((n, n), dtype, rng=rng)
    elif kind == "graded":
        a = conditioned(rng, n, 1e6) * np.logspace(0, 3, n)
    else:
        a = hilbert(rng, 8)
        n = 8
    a = a.astype(dtype)
    lu = sl.lu_factor(a)

    def solve(v, adjoint):
        trans = (2 if a.dtype.kind == "c" else 1) if adjoint else 0
        return sl.lu_solve(lu, v.astype(a.dtype), trans=trans)

    exact = np.abs(np.linalg.inv(a.astype(np.complex128))).sum(axis=0).max()
    est = norm1_inverse_estimate(solve, n)
    slack = 1e-3 if dtype == np.float32 or kind == "hilbert" else 1e-10  # rounding in the solves
    assert exact / 3 <= est <= exact * (1 + slack)


@pytest.mark.gpu
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "estimated"])
@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_cupy_rcond_is_lapacks_estimate(cupy_backend, rng, monkeypatch, assume_a, exact):
    """The CuPy backend's rcond (LinAlgWarning's) agrees with SciPy's xGECON/xPOCON within
    the estimators' factor: exact from the inverse up to EXACT_RCOND_MAX, above it the
    estimate, without forming the inverse."""
    import cupy

    import gpukit_cupy.linalg

    if not exact:
        monkeypatch.setattr(gpukit_cupy.linalg, "EXACT_RCOND_MAX", 29)

    a = conditioned(rng, 30, 1e8, hermitian=assume_a == "pos")
    if assume_a == "pos":
        a = a @ a.T + 1e-6 * np.eye(30)  # positive definite
    lapack = sl.get_lapack_funcs("gecon" if assume_a == "gen" else "pocon", (a,))
    anorm = np.abs(a).sum(axis=0).max()
    if assume_a == "gen":
        want, _ = lapack(sl.lu_factor(a)[0], anorm)
    else:
        want, _ = lapack(sl.cholesky(a, lower=True), anorm, uplo="L")
    x, rcond = cupy_backend.linalg_solve_rcond(cupy.asarray(a), cupy.ones((30, 1)), assume_a)
    assert rel_err(x, np.linalg.solve(a, np.ones((30, 1)))) < 1e-12 / float(rcond)
    assert want / 3 <= float(rcond) <= want * 3
    truth = 1 / (anorm * np.abs(np.linalg.inv(a)).sum(axis=0).max())
    if exact:
        assert abs(float(rcond) / truth - 1) < 1e-6
    else:  # the estimate of ||inv(A)|| is a lower bound: rcond at or above the truth
        assert float(rcond) >= truth * (1 - 1e-6)


def hilbert(rng, n):
    """The Hilbert matrix, symmetrically permuted at random: cond_1 about 1e17 for n = 12,
    1e7 for n = 6 (ill-conditioned, yet LU never meets an exactly zero pivot)."""
    p = rng.permutation(n)
    return sl.hilbert(n)[np.ix_(p, p)]


def test_ill_conditioned_member_of_a_stack_is_named(backend, xp, rng):
    a = np.stack([conditioned(rng, 12, 10.0), hilbert(rng, 12), np.eye(12)])
    assert scipy_warns_each(a) == [False, True, False]
    with pytest.warns(sl.LinAlgWarning, match=r"ill-conditioned \(at \(1,\) of the stack\)"):
        gk.linalg.solve(xp.asarray(a), xp.ones((3, 12, 1)))


def scipy_warns_each(stack):
    return [outcome(sl.solve, m, np.ones(len(m), m.dtype), "gen")[0] == "warn" for m in stack]


def test_float32_threshold_is_float32_eps(backend, xp, rng):
    a = hilbert(rng, 6)  # fine in float64, not in float32
    assert scipy_warns_each([a.astype(np.float32)]) == [True]
    assert scipy_warns_each([a]) == [False]
    with pytest.warns(sl.LinAlgWarning, match="eps 1.19e-07 of float32"):
        gk.linalg.solve(xp.asarray(a.astype(np.float32)), xp.ones(6, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gk.linalg.solve(xp.asarray(a), xp.ones(6))


def test_well_conditioned_is_silent(backend, xp, rng):
    a = conditioned(rng, 10, 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gk.linalg.solve(xp.asarray(a), xp.ones(10))
        gk.linalg.solve(xp.asarray(np.stack([a, a])), xp.ones((2, 10, 1)))


def _calls(xp):
    """Every dense routine with a check_finite, as (name, call(a, b, check_finite), args)."""
    return [
        ("solve", lambda a, b, cf: gk.linalg.solve(a, b, check_finite=cf), ("a", "b")),
        ("lstsq", lambda a, b, cf: gk.linalg.lstsq(a, b, check_finite=cf), ("a", "b")),
        ("cho_solve", lambda a, b, cf: gk.linalg.cho_solve(a, b, check_finite=cf), ("c", "b")),
        ("inv", lambda a, b, cf: gk.linalg.inv(a, check_finite=cf), ("a",)),
        ("det", lambda a, b, cf: gk.linalg.det(a, check_finite=cf), ("a",)),
        ("slogdet", lambda a, b, cf: gk.linalg.slogdet(a, check_finite=cf), ("a",)),
        ("cholesky", lambda a, b, cf: gk.linalg.cholesky(a, check_finite=cf), ("a",)),
        ("qr", lambda a, b, cf: gk.linalg.qr(a, check_finite=cf), ("a",)),
        ("eigh", lambda a, b, cf: gk.linalg.eigh(a, check_finite=cf), ("a",)),
        ("svd", lambda a, b, cf: gk.linalg.svd(a, check_finite=cf), ("a",)),
    ]


ROUTINES = ["solve", "lstsq", "cho_solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh",
            "svd"]  # fmt: skip


@pytest.mark.parametrize("routine", ROUTINES)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("where", [0, 1])
def test_check_finite_names_the_argument(backend, xp, rng, routine, value, dtype, where):
    """Before LAPACK sees it (``lstsq`` on NaN hung in OpenBLAS's gelsd): a ValueError
    naming the argument, for every routine, dtype and argument."""
    name, call, args = next(c for c in _calls(xp) if c[0] == routine)
    if where >= len(args):
        pytest.skip(f"{routine} has one array argument")
    a = np.eye(5, dtype=dtype) * 2
    b = np.ones((5, 2), dtype=dtype)
    target = a if where == 0 else b
    target[rng.integers(target.shape[0]), rng.integers(target.shape[1])] = value
    with pytest.raises(ValueError, match=rf"gk.linalg.{name}: argument '{args[where]}' holds NaN"):
        call(xp.asarray(a), xp.asarray(b), True)


@pytest.mark.parametrize("routine", ["det", "slogdet", "qr"])
def test_check_finite_false_skips_the_check(backend, xp, routine):
    """With check_finite=False NaN goes through, as NumPy's functions let it."""
    name, call, _ = next(c for c in _calls(xp) if c[0] == routine)
    a = np.array([[np.nan, 1.0], [1.0, 2.0]])
    with np.errstate(invalid="ignore"):
        out = call(xp.asarray(a), None, False)
        expected = getattr(np.linalg, name)(a)
    assert np.isnan(gk.to_numpy(out[-1] if isinstance(out, tuple) else out)).any()
    assert np.isnan(np.asarray(expected[-1] if isinstance(expected, tuple) else expected)).any()


@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_named_results_are_numpys(backend, xp, rng, shape, dtype):
    """slogdet, eigh, svd and qr return NumPy's own named tuples, on every backend."""
    a = random_array(shape, dtype, rng=rng) + 3 * eye_like(shape)
    h = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    ref = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    tol = TOL[np.dtype(dtype)]

    got = gk.linalg.slogdet(xp.asarray(a))
    want = np.linalg.slogdet(ref)
    assert type(got) is type(want) and got._fields == ("sign", "logabsdet")
    assert rel_err(got.sign, want.sign) < tol and rel_err(got.logabsdet, want.logabsdet) < tol

    got = gk.linalg.eigh(xp.asarray(h))
    want = np.linalg.eigh(h.astype(ref.dtype))
    assert type(got) is type(want) and got._fields == ("eigenvalues", "eigenvectors")
    assert rel_err(got.eigenvalues, want.eigenvalues) < tol
    v = gk.to_numpy(got.eigenvectors).astype(ref.dtype)
    assert rel_err(h @ v, v * want.eigenvalues[..., None, :]) < 10 * tol

    got = gk.linalg.svd(xp.asarray(a), full_matrices=False)
    want = np.linalg.svd(ref, full_matrices=False)
    assert type(got) is type(want) and got._fields == ("U", "S", "Vh")
    assert rel_err(got.S, want.S) < tol
    u, s, vh = (gk.to_numpy(t).astype(ref.dtype) for t in got)
    assert rel_err(u * s[..., None, :] @ vh, ref) < 10 * tol

    got = gk.linalg.qr(xp.asarray(a))
    want = np.linalg.qr(ref)
    assert type(got) is type(want) and got._fields == ("Q", "R")
    q, r = (gk.to_numpy(t).astype(ref.dtype) for t in got)
    assert rel_err(q @ r, ref) < 10 * tol
    assert not isinstance(gk.linalg.qr(xp.asarray(a), mode="r"), tuple)  # R alone, as NumPy

    m = a[(0,) * (a.ndim - 2)]  # lstsq takes one matrix, as NumPy's
    got = gk.linalg.lstsq(xp.asarray(m), xp.ones(shape[-1], dtype=dtype))
    want = np.linalg.lstsq(m.astype(ref.dtype), np.ones(shape[-1]))
    assert type(got) is type(want) is tuple and len(got) == 4  # NumPy's is a plain tuple
    assert rel_err(got[0], want[0]) < 10 * tol and got[2] == want[2]


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cho_solve_takes_scipys_cho_factor(backend, xp, rng, lower, dtype):
    """``(c, lower)`` from scipy.linalg.cho_factor: the other triangle holds garbage and
    is not read."""
    n = 7
    z = random_array((n, n), dtype, rng=rng) / np.sqrt(n)
    a = (z @ z.conj().T + np.eye(n)).astype(dtype)
    c, low = sl.cho_factor(a, lower=lower)
    c = c + (np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)) * 9
    b = random_array((n, 2), dtype, rng=rng)
    x = gk.linalg.cho_solve((xp.asarray(c), low), xp.asarray(b))
    ref = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    assert rel_err(x, ref) < 50 * TOL[np.dtype(dtype)]
    with pytest.raises(ValueError, match="a tuple 'c' must be"):
        gk.linalg.cho_solve((xp.asarray(c),), xp.asarray(b))


@pytest.mark.parametrize(
    ("ashape", "bshape"),
    [((0, 0), (0,)), ((0, 0), (0, 3)), ((3, 0, 0), (3, 0, 1)), ((0, 2, 2), (0, 2, 1)),
     ((0, 2, 2), (2,)), ((2, 2), (2, 0))],
)  # fmt: skip
@pytest.mark.parametrize("assume_a", [None, "pos", "diagonal", "sym"])
def test_zero_size_systems(backend, xp, ashape, bshape, assume_a):
    """Empty systems give empty answers of NumPy's shape (LAPACK refuses n = 0)."""
    a = np.broadcast_to(np.eye(ashape[-1]), ashape)
    b = np.zeros(bshape)
    expected = np.linalg.solve(a, b)
    x = gk.linalg.solve(xp.asarray(a), xp.asarray(b), assume_a=assume_a)
    assert x.shape == expected.shape and x.dtype == expected.dtype
    if assume_a == "pos":
        x = gk.linalg.cho_solve(xp.asarray(a), xp.asarray(b))
        assert x.shape == expected.shape
