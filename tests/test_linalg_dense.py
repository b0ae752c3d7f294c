"""gk.linalg dense functions against float64 NumPy/SciPy references, on every backend."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import gpukit as gk
from gpukit.testing import random_array, random_spd

from helpers import TOL, flushed, rel_err, same_errors_warm_as_cold

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def well_conditioned(rng, shape, dtype):
    """Diagonally dominant matrices: condition number O(1), so the tolerances apply."""
    n = shape[-1]
    return (random_array(shape, dtype, rng=rng) / np.sqrt(n) + 3 * np.eye(n)).astype(dtype)


def tol(dtype):
    """The issue's bound (1e-5 single, 1e-12 double); the inputs are well conditioned."""
    return TOL[np.dtype(dtype)]


def ref(x):
    """A float64/complex128 copy for references."""
    return np.asarray(x).astype(np.complex128 if np.iscomplexobj(x) else np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", ["gen", "sym", "pos"])
@pytest.mark.parametrize(
    ("ashape", "bshape"),
    [
        ((7, 7), (7,)),
        ((7, 7), (7, 3)),
        ((4, 7, 7), (7,)),
        ((4, 7, 7), (4, 7, 2)),
        ((2, 1, 5, 5), (3, 5, 1)),
    ],
)
def test_solve(backend, xp, rng, dtype, assume_a, ashape, bshape):
    a = well_conditioned(rng, ashape, dtype)
    if assume_a == "sym":  # symmetric (a.T == a, also when complex), as SciPy's "sym"
        a = (a + np.swapaxes(a, -1, -2)) / 2
    elif assume_a == "pos":
        a = random_spd(ashape, dtype, rng=rng)
    b = random_array(bshape, dtype, rng=rng)
    x = gk.linalg.solve(xp.asarray(a), xp.asarray(b), assume_a=assume_a)
    expected = np.linalg.solve(ref(a), ref(b))
    assert x.dtype == dtype
    assert x.shape == expected.shape
    assert rel_err(x, expected) < tol(dtype)


def test_solve_integer_input_gives_float64(backend, xp):
    x = gk.linalg.solve(xp.asarray([[2, 0], [0, 4]]), xp.asarray([2, 2]))
    assert x.dtype == np.float64
    assert rel_err(x, [1.0, 0.5]) < 1e-15


@pytest.mark.parametrize("assume_a", ["gen", "sym", "pos"])
def test_solve_singular_raises(backend, xp, assume_a):
    a = xp.asarray(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(gk.LinAlgError, match=r"gk\.linalg\.solve: matrix 'a' is"):
        gk.linalg.solve(a, xp.asarray([1.0, 1.0]), assume_a=assume_a)


@pytest.mark.parametrize("batched", [False, True])
def test_indefinite_raises(backend, xp, rng, batched):
    a = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3, -1
    if batched:
        a = np.stack([random_spd((2, 2), np.float64, rng=rng), a])
    with pytest.raises(gk.LinAlgError, match="not positive definite"):
        gk.linalg.cholesky(xp.asarray(a))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        gk.linalg.solve(xp.asarray(a), xp.ones(a.shape[:-1]), assume_a="pos")


def test_inv_singular_raises(backend, xp):
    with pytest.raises(gk.LinAlgError, match="singular"):
        gk.linalg.inv(xp.zeros((3, 3)))


@pytest.mark.parametrize(
    ("ashape", "bshape"),
    [((3, 3), (4,)), ((3, 3), (4, 1)), ((2, 3, 3), (5, 3, 1)), ((3, 3), (3, 4, 3))],
)
def test_solve_shape_mismatch_names_both(backend, xp, ashape, bshape):
    pattern = re.escape(str(ashape)) + ".*" + re.escape(str(bshape))
    with pytest.raises(ValueError, match=pattern):
        gk.linalg.solve(xp.ones(ashape), xp.ones(bshape))


def test_non_square_and_bad_options(backend, xp):
    with pytest.raises(ValueError, match=r"square.*\(3, 4\)"):
        gk.linalg.inv(xp.ones((3, 4)))
    with pytest.raises(ValueError, match="assume_a"):
        gk.linalg.solve(xp.eye(2), xp.ones(2), assume_a="tri")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 6), (3, 5, 5)])
def test_inv_det_slogdet(backend, xp, rng, dtype, shape):
    a = well_conditioned(rng, shape, dtype)
    assert rel_err(gk.linalg.inv(xp.asarray(a)), np.linalg.inv(ref(a))) < tol(dtype)
    assert rel_err(gk.linalg.det(xp.asarray(a)), np.linalg.det(ref(a))) < tol(dtype)
    sign, logdet = gk.linalg.slogdet(xp.asarray(a))
    rs, rl = np.linalg.slogdet(ref(a))
    assert rel_err(sign, rs) < tol(dtype)
    assert rel_err(logdet, rl) < tol(dtype)


def test_det_singular_is_zero(backend, xp):
    assert float(gk.linalg.det(xp.asarray([[1.0, 2.0], [2.0, 4.0]]))) == 0.0
    sign, logdet = gk.linalg.slogdet(xp.asarray([[1.0, 2.0], [2.0, 4.0]]))
    assert float(sign) == 0.0 and float(logdet) == -np.inf


def test_det_overflow_warns_on_the_host_as_numpy():
    """A determinant past float64's range is inf with numpy.linalg's RuntimeWarning,
    also for a small matrix, whose determinant is otherwise formed from its LU pivots."""
    a = np.diag([1e200, -1e200, 1.0, 1.0])
    with gk.use_backend("numpy"), pytest.warns(RuntimeWarning, match="overflow encountered in det"):
        assert float(gk.linalg.det(a)) == -np.inf


@pytest.mark.parametrize(
    ("a", "det"),
    [
        ([[0.0, 2.0], [3.0, 0.0]], -6.0),  # one row exchange
        ([[-2.0, 0.0], [0.0, -3.0]], 6.0),  # two negative pivots
        ([[0.0, 0.0, 5.0], [0.0, -2.0, 0.0], [4.0, 0.0, 0.0]], 40.0),  # an even permutation
    ],
)
def test_det_signs(backend, xp, a, det):
    assert rel_err(gk.linalg.det(xp.asarray(a)), det) < 1e-15
    sign, logdet = gk.linalg.slogdet(xp.asarray(a))
    assert float(sign) == np.sign(det)
    assert rel_err(logdet, np.log(abs(det))) < 1e-15


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(9, 9), (2, 3, 6, 6)])
def test_cholesky_and_cho_solve(backend, xp, rng, dtype, shape):
    a = random_spd(shape, dtype, rng=rng)
    c = gk.linalg.cholesky(xp.asarray(a))
    assert c.dtype == dtype
    assert rel_err(c, np.linalg.cholesky(ref(a))) < tol(dtype)
    b = random_array(shape[:-1], dtype, rng=rng)[..., None]
    x = gk.linalg.cho_solve(c, xp.asarray(b))
    assert rel_err(x, np.linalg.solve(ref(a), ref(b))) < tol(dtype)


def test_cho_solve_vector_matches_scipy(backend, xp, rng):
    import scipy.linalg

    a = random_spd((8, 8), np.float64, rng=rng)
    b = rng.standard_normal(8)
    x = gk.linalg.cho_solve(gk.linalg.cholesky(xp.asarray(a)), xp.asarray(b))
    assert rel_err(x, scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), b)) < 1e-12


@pytest.mark.parametrize("b_shape", [(8,), (8, 3), (2, 8, 1)])
def test_cho_solve_leaves_b_untouched(backend, xp, rng, b_shape):
    # cuSOLVER's potrs solves in place; the caller's right-hand side must survive.
    a = random_spd((*b_shape[:-2], 8, 8), np.float64, rng=rng)
    b_host = rng.standard_normal(b_shape)
    b = xp.asarray(b_host)
    if b.ndim == 2:
        b = xp.asfortranarray(b)  # the layout potrs would write into
    gk.linalg.cho_solve(gk.linalg.cholesky(xp.asarray(a)), b)
    assert rel_err(b, b_host) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "bshape"), [((9, 4), (9,)), ((9, 4), (9, 2)), ((4, 4), (4, 3))])
def test_lstsq(backend, xp, rng, dtype, shape, bshape):
    a = random_array(shape, dtype, rng=rng)
    b = random_array(bshape, dtype, rng=rng)
    x, _res, rank, s = gk.linalg.lstsq(xp.asarray(a), xp.asarray(b))
    ex, _eres, erank, es = np.linalg.lstsq(ref(a), ref(b), rcond=None)
    assert rel_err(x, ex) < tol(dtype)
    assert rank == erank
    assert rel_err(s, es) < tol(dtype)


def test_lstsq_rank_deficient_and_shape_error(backend, xp, rng):
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    b = rng.standard_normal(6)
    x, _, rank, _ = gk.linalg.lstsq(xp.asarray(a), xp.asarray(b))
    assert rank == 2
    assert rel_err(x, np.linalg.lstsq(a, b, rcond=None)[0]) < 1e-10
    with pytest.raises(ValueError, match=r"\(6, 4\).*\(5,\)"):
        gk.linalg.lstsq(xp.asarray(a), xp.ones(5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (3, 5, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(backend, xp, rng, dtype, shape, mode):
    a = random_array(shape, dtype, rng=rng)
    out = gk.linalg.qr(xp.asarray(a), mode=mode)
    if mode == "r":
        r_ref = np.linalg.qr(ref(a), mode="r")
        assert rel_err(abs(gk.to_numpy(out)), abs(r_ref)) < tol(dtype)  # signs may differ
        return
    q, r = out
    assert q.dtype == dtype
    assert rel_err(q @ r, ref(a)) < tol(dtype)
    k = q.shape[-1]
    qh = np.conj(np.swapaxes(gk.to_numpy(q), -1, -2))
    assert rel_err(qh @ gk.to_numpy(q), np.broadcast_to(np.eye(k), (*qh.shape[:-2], k, k))) < tol(
        dtype
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 8), (3, 5, 5)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(backend, xp, rng, dtype, shape, uplo):
    a = random_spd(shape, dtype, rng=rng)
    w, v = gk.linalg.eigh(xp.asarray(a), UPLO=uplo)
    assert rel_err(w, np.linalg.eigvalsh(ref(a))) < tol(dtype)
    v = gk.to_numpy(v)
    assert rel_err(ref(a) @ v, v * gk.to_numpy(w)[..., None, :]) < tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (2, 5, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(backend, xp, rng, dtype, shape, full):
    a = random_array(shape, dtype, rng=rng)
    u, s, vh = gk.linalg.svd(xp.asarray(a), full_matrices=full)
    assert rel_err(s, np.linalg.svd(ref(a), compute_uv=False)) < tol(dtype)
    k = s.shape[-1]
    recon = (gk.to_numpy(u)[..., :, :k] * gk.to_numpy(s)[..., None, :]) @ gk.to_numpy(vh)[
        ..., :k, :
    ]
    assert rel_err(recon, ref(a)) < tol(dtype)
    s_only = gk.linalg.svd(xp.asarray(a), compute_uv=False)
    assert rel_err(s_only, np.linalg.svd(ref(a), compute_uv=False)) < tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "ord", "axis"),
    [
        ((11,), None, None),
        ((11,), 1, None),
        ((11,), np.inf, None),
        ((11,), -np.inf, None),
        ((11,), 3, None),
        ((4, 6), None, None),
        ((4, 6), "fro", None),
        ((4, 6), "nuc", None),
        ((4, 6), 1, None),
        ((4, 6), -1, None),
        ((4, 6), 2, None),
        ((4, 6), -2, None),
        ((4, 6), np.inf, None),
        ((3, 4, 6), None, 0),
        ((3, 4, 6), 2, (0, 2)),
        ((3, 4, 6), "fro", (2, 1)),
    ],
)
def test_norm(backend, xp, rng, dtype, shape, ord, axis):
    x = random_array(shape, dtype, rng=rng)
    got = gk.linalg.norm(xp.asarray(x), ord=ord, axis=axis)
    assert rel_err(got, np.linalg.norm(ref(x), ord=ord, axis=axis)) < tol(dtype)
    kept = gk.linalg.norm(xp.asarray(x), ord=ord, axis=axis, keepdims=True)
    assert kept.shape == np.linalg.norm(ref(x), ord=ord, axis=axis, keepdims=True).shape


@pytest.mark.parametrize(
    ("shape", "ord", "axis", "keepdims"),
    [
        ((7,), None, None, False),
        ((7,), 2, None, False),
        ((7,), 3, None, False),
        ((7,), 0.5, None, False),
        ((4, 6), None, None, False),
        ((4, 6), "fro", None, True),
        ((4, 6), None, 1, False),
        ((4, 6), 3, 0, True),
        ((3, 4, 6), "fro", (2, 1), False),
        ((3, 4, 6), None, None, False),
    ],
)
@pytest.mark.parametrize(
    ("dtype", "magnitude"),
    [
        ("float32", 1e-30),
        ("float32", 1e-42),  # subnormal entries
        ("float32", 1e25),
        ("complex64", 1e-28),
        ("complex64", 1e30),
        ("float64", 1e-200),
        ("float64", 1e-310),  # subnormal entries: a scale of 2**1030 (was inf)
        ("float64", 1e250),
    ],
)
def test_norms_whose_powers_underflow_or_overflow_keep_their_value(
    backend, xp, rng, shape, ord, axis, keepdims, dtype, magnitude
):
    """NumPy's norm of a float32 vector of 1e-30 entries is 0 (the squares flush to zero)
    and of 1e25 entries inf, with a RuntimeWarning, though both norms are representable;
    gk.linalg.norm recomputes such results on the input scaled by a power of two. (A
    backend that flushes float32 subnormals reads 1e-42 entries as zeros.)"""
    x = (random_array(shape, np.result_type(dtype, np.float64), rng=rng) * magnitude).astype(dtype)
    x.flat[0] = magnitude  # one entry of the magnitude at least (a subnormal draw may be 0)
    # compared in units of 2**-k, the reference's norms in range (ldexp: exact, and 2**1030
    # for float64 subnormals is no float)
    k = -math.frexp(magnitude)[1]
    scaled = np.ldexp(np.abs(ref(flushed(x, backend))), k)  # as the backend reads x
    want = np.linalg.norm(scaled, ord=ord, axis=axis, keepdims=keepdims)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning for a representable result
        got = gk.linalg.norm(xp.asarray(x), ord=ord, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want) and got.dtype == np.finfo(dtype).dtype
    err = np.abs(np.ldexp(np.asarray(gk.to_numpy(got), np.float64), k) - want).max()
    # subnormal entries carry fewer digits: their rounding is absolute, one spacing each
    spacing = np.ldexp(float(np.finfo(dtype).smallest_subnormal), k)
    assert err <= tol(dtype) * np.abs(want).max() + x.size * spacing


@pytest.mark.parametrize("axis", [None, 1])
def test_float16_norms_are_summed_in_float32(backend, xp, axis):
    """As the other functions here: a float16 norm is computed in float32 and returned in
    float16, correctly rounded (float16 sums gave 203.375 for 83 * sqrt(6) = 203.31, whose
    float16 is 203.25: the fuzz test under the simulator), and squares of 1e-4 or 300 do
    not under- or overflow float16."""
    for scale in (1.0, 1e-4, 300.0):
        a = (np.array([[0.0, 83.0, 83.0, 83.0, 83.0, 83.0, 83.0]]) * scale).astype(np.float16)
        got = gk.linalg.norm(xp.asarray(a), axis=axis)
        want = np.linalg.norm(a.astype(np.float64), axis=axis).astype(np.float16)
        assert got.dtype == np.float16 and got.shape == np.shape(want)
        assert np.array_equal(np.asarray(gk.to_numpy(got)), want), scale


def test_a_norm_beyond_the_dtype_is_inf(backend, xp):
    """Rescued norms stay honest: two float32 entries of 3e38 have a norm beyond float32."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warning, kept
        got = gk.linalg.norm(xp.asarray(np.array([3e38, 3e38], np.float32)))
    assert np.isinf(float(got)) and got.dtype == np.float32
    assert float(gk.linalg.norm(xp.asarray(np.array([np.inf, 1.0])))) == np.inf
    assert float(gk.linalg.norm(xp.zeros(3, np.float32))) == 0.0
    assert np.isnan(float(gk.linalg.norm(xp.asarray(np.array([np.nan, 1e-30], np.float32)))))


def test_linalg_error_is_numpy_linalg_error(backend, xp):
    with pytest.raises(np.linalg.LinAlgError):
        gk.linalg.cholesky(-xp.eye(2))


def test_nan_is_named_not_called_singular(backend, xp):
    """A NaN is not a singular matrix: with or without check_finite, the argument holding
    it is named in a ValueError (issue 16 item 14). Without check_finite, a NaN in ``a``
    can be named only where the LU factorisation spreads it (not cuSOLVER's)."""
    with pytest.raises(gk.LinAlgError, match=r"matrix 'a' is singular \(shape \(2, 2\)"):
        gk.linalg.solve(xp.zeros((2, 2)), xp.ones(2))
    for check_finite in (True, False):
        with pytest.raises(ValueError, match="argument 'b' holds NaN or inf") as info:
            gk.linalg.solve(xp.eye(2), xp.asarray([1.0, np.nan]), check_finite=check_finite)
        assert "singular" not in str(info.value)
        if not (check_finite or backend.lu_spreads_nan):
            continue
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf"):
            gk.linalg.solve(
                xp.asarray([[np.nan, 0.0], [0.0, 1.0]]), xp.ones(2), check_finite=check_finite
            )


@pytest.mark.parametrize(
    ("shape", "ord", "axis", "match"),
    [
        ((3, 4), "foo", None, "ord='foo' is not a matrix norm"),
        ((3, 4), 3, (0, 1), "ord=3 is not a matrix norm"),
        ((3, 4), "fro", 0, "ord='fro' is not a vector norm"),
        ((3, 4), None, 5, r"axis=5 must name one axis .* shape \(3, 4\)"),
        ((3, 4), None, (0, 1, 0), "axis=.* must name one axis"),
        ((3, 4), None, (1, -1), "repeats an axis"),
        ((2, 3, 4), 2, None, r"ord=2 needs a 1-D or 2-D x .* shape \(2, 3, 4\)"),
    ],
)
def test_norm_argument_errors_are_the_same_everywhere(backend, xp, shape, ord, axis, match):
    with pytest.raises(ValueError, match=match) as info:
        gk.linalg.norm(xp.ones(shape), ord=ord, axis=axis)
    assert str(info.value).startswith("gk.linalg.norm: ")


def test_cho_solve_refuses_a_sharded_factor_inside_the_tuple(rng):
    """``(c, lower)`` with a sharded ``c`` is refused as a sharded ``c`` alone is (it was
    gathered to the host silently; found by the capability test)."""
    c = np.linalg.cholesky(random_spd(4, np.float64, rng=rng))
    with pytest.raises(TypeError, match=r"gk\.linalg\.cho_solve does not accept a ShardedArray"):
        gk.linalg.cho_solve((gk.shard(c), True), np.ones(4))
    with pytest.raises(TypeError, match=r"gk\.linalg\.cho_solve does not accept a ShardedArray"):
        gk.linalg.cho_solve(gk.shard(c), np.ones(4))


# -- warm calls: the checks that depend on values run on every call ------------------------


def _warm(call, times=3):
    """Run ``call`` until its plans are made (the second call onwards is warm)."""
    for _ in range(times):
        call()


def _with_nan(x, index):
    bad = np.array(x, copy=True)
    bad[index] = np.nan if index == (0,) * bad.ndim else np.inf
    return bad


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize(
    ("name", "position"),
    [
        ("solve", 0),
        ("solve", 1),
        ("lstsq", 0),
        ("lstsq", 1),
        ("cho_solve", 0),
        ("cho_solve", 1),
        ("inv", 0),
        ("det", 0),
        ("slogdet", 0),
        ("cholesky", 0),
        ("qr", 0),
        ("eigh", 0),
        ("svd", 0),
    ],
)
def test_a_warm_call_still_refuses_nan_or_inf(backend, xp, rng, dtype, name, position):
    """The finite check names the argument holding NaN or inf on a warm call too, at
    any position of the matrix (the last entry, the first one: NaN and inf)."""
    a = random_spd(5, dtype, rng=rng)
    args = [a, random_array(5, dtype, rng=rng)]
    names = {"lstsq": ("a", "b"), "solve": ("a", "b"), "cho_solve": ("c", "b")}.get(name, ("a",))
    if name == "cho_solve":
        args[0] = np.linalg.cholesky(a)
    args = args[: len(names)]
    fn = getattr(gk.linalg, name)
    _warm(lambda: fn(*map(xp.asarray, args)))
    for index in ((0,) * args[position].ndim, (-1,) * args[position].ndim):
        bad = list(args)
        bad[position] = _with_nan(args[position], index)
        with pytest.raises(ValueError, match=f"argument '{names[position]}' holds NaN or inf"):
            fn(*map(xp.asarray, bad))
    fn(*map(xp.asarray, args))  # and the good arguments pass again


def test_warm_calls_still_raise_linalg_errors(backend, xp, rng):
    """Singular and indefinite matrices, a singular factor and a result beyond the dtype
    raise LinAlgError on a warm call; a NaN that check_finite=False let through is named
    in a ValueError, not called singular (by ``inv`` where the LU spreads it: Cholesky
    factorisations spread a NaN on every backend)."""
    a, b = random_spd(4, np.float64, rng=rng), random_array(4, np.float64, rng=rng)
    c = np.linalg.cholesky(a)
    singular = np.ones((4, 4))
    tiny = np.diag([1.0, 1.0, 1.0, 1e-310])  # a subnormal pivot: an inverse beyond float64
    cases = [
        (gk.linalg.solve, (a, b), (singular, b), "matrix 'a' is singular"),
        (gk.linalg.inv, (a,), (singular,), "matrix 'a' is singular"),
        (gk.linalg.inv, (a,), (tiny,), "matrix 'a' is singular"),
        (gk.linalg.cholesky, (a,), (-a,), "matrix 'a' is not positive definite"),
        (gk.linalg.cho_solve, (c, b), (np.zeros((4, 4)), b), "factor 'c' is singular"),
    ]
    for fn, good, bad, match in cases:
        _warm(lambda fn=fn, good=good: fn(*map(xp.asarray, good)))
        with pytest.raises(gk.LinAlgError, match=match):
            fn(*map(xp.asarray, bad))
    nan = _with_nan(a, (0, 0))
    for fn in [gk.linalg.cholesky] + ([gk.linalg.inv] if backend.lu_spreads_nan else []):
        _warm(lambda fn=fn: fn(xp.asarray(a), check_finite=False))
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf"):
            fn(xp.asarray(nan), check_finite=False)


def test_dense_errors_are_the_same_warm_as_cold(backend, xp, rng):
    """Each refusal -- NaN or inf in an input, a singular or indefinite matrix, a NaN that
    check_finite=False let through, an input's NaN before the library's failure -- is the
    same error on a warm call as on a cold one (on a device, where a call's checks are
    read together after it, too)."""
    la = gk.linalg
    a, b = random_spd(4, np.float64, rng=rng), random_array(4, np.float64, rng=rng)
    tall = random_array((6, 4), np.float64, rng=rng)
    nan, singular = _with_nan(a, (0, 0)), np.ones((4, 4))
    c = np.linalg.cholesky(a)
    A, B, T, C = (xp.asarray(x) for x in (a, b, tall, c))
    N, S = xp.asarray(nan), xp.asarray(singular)
    warm = [
        lambda: la.solve(A, B),
        lambda: la.inv(A),
        lambda: la.det(A),
        lambda: la.qr(A),
        lambda: la.cholesky(A),
        lambda: la.cho_solve(C, B),
        lambda: la.eigh(A),
        lambda: la.svd(A),
        lambda: la.lstsq(T, T[:, 0]),
    ]
    failing = [
        lambda: la.solve(N, B),
        lambda: la.solve(A, xp.asarray(_with_nan(b, (0,)))),
        lambda: la.solve(S, B),
        lambda: la.inv(N),
        lambda: la.inv(S),
        lambda: la.det(N),
        lambda: la.qr(N),
        lambda: la.cholesky(-A),
        lambda: la.cholesky(N),  # the NaN, not an indefinite matrix
        lambda: la.cholesky(N, check_finite=False),
        lambda: la.cho_solve(xp.asarray(_with_nan(c, (0, 0))), B),
        lambda: la.cho_solve(xp.zeros((4, 4)), B),
        lambda: la.eigh(N),
        lambda: la.svd(N),
        lambda: la.lstsq(xp.asarray(_with_nan(tall, (0, 0))), T[:, 0]),
        lambda: la.lstsq(T, xp.asarray(_with_nan(tall[:, 0], (0,)))),
    ]
    same_errors_warm_as_cold(warm, failing)


@pytest.mark.parametrize("assume_a", ["gen", "pos", "diagonal"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 4, 4)])
def test_a_warm_solve_still_warns_when_ill_conditioned(backend, xp, rng, assume_a, shape):
    """SciPy's LinAlgWarning on a warm call (one matrix: LAPACK's estimate, a stack: the
    exact value), and none for a well-conditioned matrix."""
    import scipy.linalg

    good = random_spd(shape, np.float64, rng=rng)
    near = np.broadcast_to(np.diag([1.0, 1.0, 1.0, 1e-20]), shape).copy()
    b = random_array(shape[:-1], np.float64, rng=rng)[..., None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warm(lambda: gk.linalg.solve(xp.asarray(good), xp.asarray(b), assume_a=assume_a))
    with pytest.warns(scipy.linalg.LinAlgWarning, match="ill-conditioned"):
        x = gk.linalg.solve(xp.asarray(near), xp.asarray(b), assume_a=assume_a)
    assert rel_err(x, np.linalg.solve(near, b)) < 1e-12


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("axis", [None, 0])
def test_a_warm_norm_still_rescues_an_overflowing_square(backend, xp, dtype, axis):
    """Squares beyond the dtype give the representable norm on every call, silently."""
    big = float(np.finfo(dtype).max) / 4
    x = np.full(3, big, dtype=dtype)
    want = np.sqrt(3.0) * big
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            got = gk.linalg.norm(xp.asarray(x), axis=axis)
            assert got.dtype == np.finfo(dtype).dtype
            assert abs(float(got) - want) <= tol(dtype) * want


@pytest.mark.parametrize("lower", [True, False])
def test_a_warm_cho_solve_reads_only_the_factor_triangle(backend, xp, rng, lower):
    """cho_solve reads the triangle ``lower`` names: what the other holds (cho_factor
    leaves it unspecified) never changes the solution, cold or warm."""
    a = random_spd(5, np.float64, rng=rng)
    b = random_array((5, 2), np.float64, rng=rng)
    factor = np.linalg.cholesky(a) if lower else np.linalg.cholesky(a).T.copy()
    other = np.triu_indices(5, 1) if lower else np.tril_indices(5, -1)
    for fill in (0.0, 7.0, -3.0):
        c = factor.copy()
        c[other] = fill
        x = gk.linalg.cho_solve((xp.asarray(c), lower), xp.asarray(b))
        assert rel_err(x, np.linalg.solve(a, b)) < 1e-12
