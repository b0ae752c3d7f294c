"""gk.elementwise / gk.reduction: the kernel language, dtype rules, errors, array kinds.

Results are compared with float64 NumPy (and SciPy for erf/erfc) references on random
inputs; on ``--cupy=sim`` the generated CUDA source is compiled and run by the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import gpukit as gk
from gpukit._select import registry
from gpukit.errors import KernelSyntaxError

from helpers import TOL, rel_err, same_errors_warm_as_cold, simulated

DTYPES = [np.float32, np.float64]
NumpyBackend = type(registry.load("numpy"))  # with N virtual devices: NumpyBackend(N)


@gk.elementwise(in_dtypes="T", out_dtype="T")
def softplus(x):
    """log(1 + exp(x)) without overflow."""
    return log1p(exp(-abs(x))) + maximum(x, 0.0)  # noqa: F821 (the kernel language's names)


@gk.elementwise
def blend(x, w, s):
    t = w * x + s
    return where(t > 0.0, sqrt(t), -expm1(t)) if x < 1.5 and not w > 2.0 else tanh(t)  # noqa: F821


def _blend_ref(x, w, s):
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    t = wd * xd + s
    with np.errstate(invalid="ignore"):
        inner = np.where(t > 0, np.sqrt(t), -np.expm1(t))
    return np.where((xd < 1.5) & ~(wd > 2), inner, np.tanh(t))


@gk.elementwise
def functions(x, y):
    # x in (0.1, 0.9), y in (1, 2): every function on its domain
    a = exp(x) + exp2(x) + expm1(x) + log(y) + log2(y) + log10(y) + log1p(x) + sqrt(y)  # noqa: F821
    b = cbrt(y) + sin(x) + cos(x) + tan(x) + arcsin(x) + arccos(x) + arctan(y)  # noqa: F821
    c = sinh(x) + cosh(x) + tanh(x) + arcsinh(y) + arccosh(y) + arctanh(x)  # noqa: F821
    d = erf(x) + erfc(y) + abs(-x) + floor(y * 3.0) + ceil(x * 3.0) + trunc(-y)  # noqa: F821
    f = minimum(x, y) + maximum(x, y) + arctan2(x, y) + hypot(x, y) + copysign(y, -x)  # noqa: F821
    return a + b + c + d + f + power(y, x) + y**x + np.pi * e - 1.0 / x  # noqa: F821


def _functions_ref(x, y):
    s = scipy.special
    return (
        np.exp(x) + np.exp2(x) + np.expm1(x) + np.log(y) + np.log2(y) + np.log10(y)
        + np.log1p(x) + np.sqrt(y) + np.cbrt(y) + np.sin(x) + np.cos(x) + np.tan(x)
        + np.arcsin(x) + np.arccos(x) + np.arctan(y) + np.sinh(x) + np.cosh(x) + np.tanh(x)
        + np.arcsinh(y) + np.arccosh(y) + np.arctanh(x) + s.erf(x) + s.erfc(y) + x
        + np.floor(y * 3) + np.ceil(x * 3) - np.trunc(y) + np.minimum(x, y) + np.maximum(x, y)
        + np.arctan2(x, y) + np.hypot(x, y) - y + 2 * y**x + np.pi * np.e - 1 / x
    )  # fmt: skip


@gk.elementwise
def axpy_like(x, y):
    return 2.0 * x + y


@gk.reduction
def weighted_norm(x, w):
    return sqrt(sum(w * x * x))  # noqa: F821


@gk.reduction
def largest_gap(x, y):
    return max(abs(x - y))


@gk.reduction(in_dtypes="float64", out_dtype="float64")
def log_prod(x):
    return log(prod(1.0 + x))  # noqa: F821


@gk.reduction
def smallest(x):
    return min(x)


def _np(x):
    return np.asarray(gk.to_numpy(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_matches_float64_reference(backend, xp, rng, dtype):
    # 37 x 1001 crosses many of the host evaluation's blocks, with a ragged last one
    x = rng.standard_normal((37, 1001)).astype(dtype) * 10
    y = softplus(xp.asarray(x))
    assert y.dtype == dtype and y.shape == x.shape
    assert type(y) is type(xp.asarray(x))
    ref = np.logaddexp(0.0, x.astype(np.float64))
    assert rel_err(_np(y), ref) < TOL[np.dtype(dtype)]


def test_outputs_of_broadcast_strided_and_scalar_arguments(backend, xp, rng):
    """A new array of the arguments' broadcast shape and the kernel's dtype, of the
    backend's type, for a Fortran-ordered array broadcast against a vector (the CuPy
    launch makes it) and for scalars alone (which CuPy cannot size: gpukit makes it)."""
    x = rng.uniform(-1, 3, (6, 5))
    w = rng.uniform(0, 3, 5)
    xf, wd = xp.asarray(np.asfortranarray(x)), xp.asarray(w)
    out = blend(xf, wd, -0.25)
    assert type(out) is type(wd) and out.shape == (6, 5) and out.dtype == np.float64
    if backend.is_device:  # CuPy's launch makes it C-ordered, as cupy.empty did
        assert out.flags.c_contiguous
    assert out is not xf and rel_err(_np(out), _blend_ref(x, w, -0.25)) < TOL[np.dtype("f8")]
    alone = blend(0.5, 1.5, -0.25)
    assert type(alone) is type(wd) and alone.shape == () and alone.dtype == np.float64
    want = _blend_ref(np.array(0.5), np.array(1.5), -0.25)
    assert rel_err(_np(alone), want) < TOL[np.dtype("f8")]


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcasting_scalars_where_and_conditions(backend, xp, rng, dtype):
    x = rng.uniform(-1, 3, (129, 65)).astype(dtype)
    w = rng.uniform(0, 3, 65).astype(dtype)
    out = blend(xp.asarray(x), xp.asarray(w), -0.25)
    assert out.dtype == dtype and out.shape == x.shape
    assert rel_err(_np(out), _blend_ref(x, w, -0.25)) < TOL[np.dtype(dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_function_of_the_language(backend, xp, rng, dtype):
    x = rng.uniform(0.1, 0.9, 301).astype(dtype)
    y = rng.uniform(1.0, 2.0, 301).astype(dtype)
    out = functions(xp.asarray(x), xp.asarray(y))
    ref = _functions_ref(x.astype(np.float64), y.astype(np.float64))
    assert out.dtype == dtype
    assert rel_err(_np(out), ref) < 4 * TOL[np.dtype(dtype)]


def test_minimum_maximum_propagate_nan_as_numpy(backend, xp):
    @gk.elementwise
    def clamp(x, lo):
        return minimum(maximum(x, lo), 1.0)  # noqa: F821

    x = np.array([np.nan, -2.0, 0.5, 3.0, np.inf])
    out = _np(clamp(xp.asarray(x), xp.asarray([0.0, 0.0, np.nan, 0.0, 0.0])))
    np.testing.assert_array_equal(out, [np.nan, 0.0, np.nan, 1.0, 1.0])


def test_dtype_rules(backend, xp):
    @gk.elementwise
    def scale(x, y):
        return 3.0 * x + y

    f32, f64 = xp.ones(3, dtype=np.float32), xp.ones(3, dtype=np.float64)
    assert scale(f32, f32).dtype == np.float32  # a literal does not widen float32
    assert scale(f32, 2.0).dtype == np.float32  # nor does a Python scalar
    assert scale(f32, f64).dtype == np.float64  # mixed precision promotes
    ints = xp.asarray(np.arange(3))
    assert scale(ints, ints).dtype == np.float64  # integers compute in float64
    np.testing.assert_array_equal(_np(scale(ints, 1)), [1.0, 4.0, 7.0])

    @gk.elementwise(in_dtypes=("float32", "T"), out_dtype="float32")
    def fixed(x, y):
        return x * y

    assert fixed(f32, f64).dtype == np.float32
    with pytest.raises(TypeError, match=r"argument 'x' has dtype float64.*float32"):
        fixed(f64, f64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_reductions_match_float64_reference(backend, xp, rng, dtype, axis):
    x = rng.standard_normal((53, 77)).astype(dtype)
    w = rng.uniform(0.5, 2.0, 77).astype(dtype)
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    got = weighted_norm(xp.asarray(x), xp.asarray(w), axis=axis)
    assert got.dtype == dtype
    ref = np.sqrt(np.sum(wd * xd * xd, axis=axis))
    assert rel_err(_np(got), ref) < TOL[np.dtype(dtype)]
    y = rng.standard_normal((53, 77)).astype(dtype)
    gap = largest_gap(xp.asarray(x), xp.asarray(y), axis=axis, keepdims=True)
    np.testing.assert_array_equal(_np(gap), np.max(np.abs(x - y), axis=axis, keepdims=True))
    np.testing.assert_array_equal(_np(smallest(xp.asarray(x), axis=axis)), x.min(axis=axis))
    u = rng.uniform(-0.01, 0.01, (53, 77)).astype(dtype)
    got = log_prod(xp.asarray(u), axis=axis)
    assert got.dtype == np.float64
    assert rel_err(_np(got), np.sum(np.log1p(u.astype(np.float64)), axis=axis)) < 1e-10


def test_kernels_from_many_threads_match_references(backend, xp):
    # the evaluation programs are kept per (backend, kernel, dtype) and shared by threads:
    # every thread's first and later calls, in both dtypes, give its own right answer
    import concurrent.futures

    def work(seed):
        rng = np.random.default_rng(seed)
        dtype = DTYPES[seed % 2]
        errors = []
        for _ in range(20):
            x = rng.uniform(-1, 3, (9, 65)).astype(dtype)
            w = rng.uniform(0, 3, 65).astype(dtype)
            errors.append(
                rel_err(_np(blend(xp.asarray(x), xp.asarray(w), -0.25)), _blend_ref(x, w, -0.25))
            )
            got = weighted_norm(xp.asarray(x), xp.asarray(w), axis=1)
            ref = np.sqrt(np.sum(w.astype(np.float64) * x.astype(np.float64) ** 2, axis=1))
            errors.append(rel_err(_np(got), ref))
        return max(errors) < TOL[np.dtype(dtype)]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(16)))


@pytest.mark.parametrize(
    ("source", "construct"),
    [
        ("for i in range(3):\n        x = x + i\n    return x", "a for loop"),
        ("return x.sum()", "the call of 'x.sum'"),
        ("return x[0]", "indexing"),
        ("return print(x)", "the call of 'print'"),
        ("return 0.0 < x < 1.0", "a chained comparison"),
        ("return x // 2.0", "the operator //"),
        ("return y", "the unknown name 'y'"),
        ("if x > 0:\n        x = -x\n    return x", "an if statement"),
        ("return x + 'a'", "the literal 'a'"),
        ("return (lambda t: t)(x)", "the call of 'lambda t: t'"),
        ("return exp(x, x)", "exp takes 1 arguments"),
        ("return x > 0.0", "a truth value used as a number"),
        ("return where(x, 1.0, 0.0)", "a number used as a truth value"),
        ("x += 1.0\n    return x", "an augmented assignment"),
        ("return sum(x)", "sum(...) here"),
        ("import math\n    return x", "an import"),
    ],
)
def test_constructs_outside_the_language_are_refused_at_definition(tmp_path, source, construct):
    path = tmp_path / "kernel_module.py"
    path.write_text(f"import gpukit as gk\n\n@gk.elementwise\ndef k(x):\n    {source}\n")
    code = compile(path.read_text(), str(path), "exec")
    with pytest.raises(KernelSyntaxError) as info:
        exec(code, {})
    assert construct in str(info.value)
    assert info.value.filename == str(path)
    assert info.value.lineno >= 5  # the offending line in the user's file, not gpukit's
    assert isinstance(info.value, SyntaxError)


def test_reduction_shape_is_checked_at_definition(tmp_path):
    for body, construct in [
        ("return x + sum(x)", "only the reduced value and constants"),
        ("return sum(x) + max(x)", "2 reductions"),
        ("return exp(x)", "0 reductions"),
    ]:
        path = tmp_path / "red.py"
        path.write_text(f"import gpukit as gk\n\n@gk.reduction\ndef r(x):\n    {body}\n")
        with pytest.raises(KernelSyntaxError, match=construct):
            exec(compile(path.read_text(), str(path), "exec"), {})


def test_bad_declarations():
    with pytest.raises(TypeError, match="float16"):
        gk.elementwise(in_dtypes="float16")(softplus.__wrapped__)
    with pytest.raises(ValueError, match="in_dtypes has 2 entries but the function has 1"):
        gk.elementwise(in_dtypes=("T", "T"))(softplus.__wrapped__)
    with pytest.raises(TypeError, match="no parameter is 'T'"):
        gk.elementwise(in_dtypes="float32")(softplus.__wrapped__)


def test_call_errors_are_the_same_on_every_backend(backend, xp):
    x = xp.ones((3, 4), dtype=np.float32)
    with pytest.raises(TypeError, match=r"takes 3 arguments \(x, w, s\), got 2"):
        blend(x, x)
    with pytest.raises(ValueError, match=r"do not broadcast: x \(3, 4\), w \(5,\)"):
        blend(x, xp.ones(5, dtype=np.float32), 1.0)
    with pytest.raises(TypeError, match="argument 'x' has dtype complex128"):
        softplus(xp.ones(3, dtype=np.complex128))
    with pytest.raises(TypeError, match="argument 'x' has dtype float16"):
        softplus(xp.ones(3, dtype=np.float16))
    with pytest.raises(TypeError, match="argument 'x' has dtype <U1"):
        softplus(np.array(["a"]))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        weighted_norm(x, x, axis=2)
    with pytest.raises(ValueError, match="repeats an axis"):
        weighted_norm(x, x, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be an int"):
        weighted_norm(x, x, axis=0.5)
    with pytest.raises(ValueError, match="max over zero elements"):
        largest_gap(xp.ones((0, 3)), 1.0)
    empty = weighted_norm(xp.ones((0, 3)), 1.0, axis=0)
    np.testing.assert_array_equal(_np(empty), np.zeros(3))


@gk.elementwise
def ratio(x, y):
    return x * x / y


@gk.reduction
def sum_of_ratios(x, y):
    return sum(x * x / y)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("state", ["raise", "warn", "ignore"])
def test_overflow_and_invalid_values_are_results_without_warnings(backend, xp, state):
    # inf and nan are results, as on a GPU, on cold and warm calls alike, whatever the
    # caller's NumPy error state, which the call leaves as it was
    x = xp.asarray([1e300, 0.0, 1.0, 2.0])
    y = xp.asarray([1e-300, 0.0, 0.0, 4.0])
    with np.errstate(all=state):
        before = np.geterr()
        for _ in range(3):  # the first call plans, the next ones run on the plan
            np.testing.assert_array_equal(_np(ratio(x, y)), [np.inf, np.nan, np.inf, 1.0])
            assert _np(sum_of_ratios(x[2:], y[2:])) == np.inf
            assert np.isnan(_np(sum_of_ratios(x, y)))
            assert np.geterr() == before


@pytest.mark.filterwarnings("error")
def test_numpys_default_error_state_is_quiet_in_a_kernel_and_restored_after(backend, xp):
    # the common case, no errstate block around the call (the state a fresh context has):
    # no warning from the kernel, cold or warm, NumPy's default warnings right after
    import contextvars

    def calls():
        assert np.geterr() == {"divide": "warn", "over": "warn", "under": "ignore",
                               "invalid": "warn"}  # fmt: skip
        x = xp.asarray([1e300, 0.0, 1.0, 2.0])
        y = xp.asarray([1e-300, 0.0, 0.0, 4.0])
        z = xp.asarray([1e308, -1e308, 1.0])
        for _ in range(3):  # the first call plans, the next ones run on the plan
            np.testing.assert_array_equal(_np(ratio(x, y)), [np.inf, np.nan, np.inf, 1.0])
            np.testing.assert_array_equal(_np(axpy_like(z, z)), [np.inf, -np.inf, 3.0])
            assert np.isnan(_np(sum_of_ratios(x, y)))
            with pytest.raises(RuntimeWarning, match="overflow"):
                np.multiply(np.float64(1e300), 1e300)

    contextvars.Context().run(calls)


@pytest.mark.filterwarnings("error")
def test_a_callers_errcall_and_bufsize_stay_and_the_callback_is_silent(backend, xp):
    # the kernel's errstate sets the error modes alone: the caller's callback stays set
    # (and silent through the kernel's inf and nan), and so does its buffer size
    called = []
    x = xp.asarray([1e300, 0.0, 1.0, 2.0])
    y = xp.asarray([1e-300, 0.0, 0.0, 4.0])
    with np.errstate(all="call", call=lambda kind, flag: called.append(kind)):
        np.setbufsize(4096)  # undone with the errstate block's state
        for _ in range(3):  # cold and warm calls
            np.testing.assert_array_equal(_np(ratio(x, y)), [np.inf, np.nan, np.inf, 1.0])
            assert np.isnan(_np(sum_of_ratios(x, y)))
        assert called == []
        assert np.getbufsize() == 4096
        np.multiply(np.float64(1e300), 1e300)  # the callback is still the caller's
        assert called == ["overflow"]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_warm_kernel_raises_what_a_cold_one_raises(backend, xp):
    # the warm call skips the checks its plan made for these argument types, dtypes and
    # shapes; any other call (another count, dtype, kind, shape, axis) is checked afresh
    @gk.elementwise(in_dtypes=("float32", "T"), out_dtype="float32")
    def fixed(x, y):
        return x * y

    x, w = xp.ones((3, 4), dtype=np.float32), xp.ones(4, dtype=np.float32)
    f64 = xp.ones(3, dtype=np.float64)
    warm = [
        lambda: blend(x, w, 0.5),
        lambda: softplus(x),
        lambda: softplus(f64),
        lambda: fixed(w, w),
        lambda: fixed(w, f64[:1]),
        lambda: weighted_norm(x, w, axis=0),
        lambda: weighted_norm(x, x, axis=0),
        lambda: largest_gap(xp.ones((2, 3)), 1.0, axis=0),
    ]
    failing = [
        lambda: blend(x, w),  # the argument count
        lambda: blend(x, w, 0.5, 0.5),
        lambda: blend(x, xp.ones(5, dtype=np.float32), 0.5),  # shapes do not broadcast
        lambda: softplus(xp.ones(3, dtype=np.complex128)),  # dtypes refused
        lambda: softplus(xp.ones(3, dtype=np.float16)),
        lambda: softplus(np.array(["a"])),
        lambda: fixed(f64, w),  # float64 into a float32 parameter
        lambda: softplus(None),  # foreign array types
        lambda: softplus(np.ma.masked_array([1.0, 2.0], mask=[0, 1])),
        lambda: softplus(np.matrix([[1.0, 2.0]])),
        lambda: weighted_norm(x, w, axis=2),  # reduction axes
        lambda: weighted_norm(x, w, axis=(0, -2)),
        lambda: weighted_norm(x, w, axis=0.5),
        lambda: weighted_norm(x, w, axis=0, keepdims=1),
        lambda: largest_gap(xp.ones((0, 3)), 1.0, axis=0),  # max over nothing
    ]
    same_errors_warm_as_cold(warm, failing)


def test_a_warm_call_finds_its_plan_at_the_first_look_up(xp):
    # the key a warm call builds is plan_for_all's, under which the first call kept it;
    # a kernel first met with an array where a scalar comes later widens its key there
    from gpukit import _user_kernels
    from gpukit._dispatch.inputs import _Device, plan_for_all
    from gpukit._runtime.plans import token

    @gk.elementwise
    def mixed(x, y):
        return x * y

    x, n = xp.ones((2, 3), dtype=np.float32), np.float64(0.5)
    for kernel, args, kwargs in [
        (softplus, (x,), {}),
        (blend, (x, 1, n), {}),
        (weighted_norm, (x, 2.0), {"axis": None, "keepdims": False}),
        (largest_gap, (x, x), {"axis": (0, -1), "keepdims": np.True_}),
        (mixed, (x, x), {}),
        (mixed, (x, 2.0), {}),
        (mixed, (3, x), {}),
        (mixed, (x, x), {}),
    ]:
        first = _np(kernel(*args, **kwargs))  # plans (or finds the plan)
        options = tuple(map(token, kwargs.values()))
        key = kernel._key(kernel, args, *options)
        kept = plan_for_all(_user_kernels._PLANS, kernel, args, *options)[1]
        if type(kept[-1]) is _Device:  # two arrays on one of several devices: named last
            kept = kept[:-1]
        assert key == kept
        np.testing.assert_array_equal(_np(kernel(*args, **kwargs)), first)
    assert mixed._key.loose == (True, True)


def test_a_warm_kernel_still_compares_devices():
    with gk.use_backend(NumpyBackend(2)):
        on0, on1 = (gk.asarray(np.ones(3), device=d) for d in (0, 1))
        same_errors_warm_as_cold(
            [lambda: blend(on0, on0, 1.0), lambda: weighted_norm(on1, on1)],
            [lambda: blend(on0, on1, 1.0), lambda: weighted_norm(on1, on0)],
        )


def test_a_warm_kernel_still_guards_transfers(cupy_backend):
    import cupy

    x = cupy.ones(4)
    blend(x, x, 1.0), weighted_norm(x, x)
    with gk.transfer_guard("disallow"):
        same_errors_warm_as_cold(
            [lambda: blend(x, x, 1.0), lambda: weighted_norm(x, x)],
            [lambda: blend(x, np.ones(4), 1.0), lambda: weighted_norm(np.ones(4), x)],
        )


@pytest.mark.parametrize("devices", [1, 3])
def test_sharded_inputs_run_shard_by_shard(rng, devices):
    x = rng.standard_normal((40, 7))
    w = rng.uniform(0, 3, (40, 7))
    with gk.use_backend(NumpyBackend(devices)):
        sx, sw = gk.shard(x), gk.shard(w)
        out = blend(sx, sw, 0.5)
        assert isinstance(out, gk.ShardedArray)
        ref = _np(blend(x, w, 0.5))
        np.testing.assert_allclose(_np(out), ref, rtol=1e-15)
        for axis in (None, 0, 1, (0, 1)):
            got = weighted_norm(sx, sw, axis=axis, keepdims=True)
            ref = np.sqrt(np.sum(w * x * x, axis=axis, keepdims=True))
            assert rel_err(_np(got), ref) < 1e-14
            assert _np(largest_gap(sx, sw, axis=axis)).tolist() == (
                np.max(np.abs(x - w), axis=axis).tolist()
            )
        with pytest.raises(TypeError, match=r"argument 'w' is a numpy\.ndarray"):
            blend(sx, w, 0.5)


def test_sharded_over_every_device_of_the_backend(backend, rng):
    """On the GPU (two simulated devices by default) each device runs its shards' kernel;
    the partial results of a reduction meet on the first device."""
    x = rng.standard_normal((41, 9)).astype(np.float32)
    w = rng.uniform(0.5, 2, (41, 9)).astype(np.float32)
    sx, sw = gk.shard(x), gk.shard(w)
    out = blend(sx, sw, 0.5)
    assert isinstance(out, gk.ShardedArray) and out.devices == sx.devices
    assert rel_err(_np(out), _blend_ref(x, w, 0.5)) < TOL[np.dtype(np.float32)]
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    full = weighted_norm(sx, sw)
    assert backend.device_of(full) == sx.devices[0]
    assert rel_err(_np(full), np.sqrt(np.sum(wd * xd * xd))) < TOL[np.dtype(np.float32)]


def test_dask_inputs_run_chunk_by_chunk(rng):
    da = pytest.importorskip("dask.array", reason='pip install -e ".[dask]"')
    x = rng.standard_normal((50, 30)).astype(np.float32)
    w = rng.uniform(0, 3, 30).astype(np.float32)
    with gk.use_backend("numpy"):
        dx = da.from_array(x, chunks=(16, 13))  # ragged blocks along both axes
        out = blend(dx, w, 0.5)
        assert isinstance(out, da.Array) and out.dtype == np.float32
        np.testing.assert_array_equal(out.compute(scheduler="sync"), blend(x, w, 0.5))
        for axis in (None, 0, 1, (0, 1)):
            got = weighted_norm(dx, w, axis=axis, keepdims=True)
            assert isinstance(got, da.Array) and got.dtype == np.float32
            xd, wd = x.astype(np.float64), w.astype(np.float64)
            ref = np.sqrt(np.sum(wd * xd * xd, axis=axis, keepdims=True))
            assert rel_err(got.compute(scheduler="sync"), ref) < TOL[np.dtype(np.float32)]
            gap = largest_gap(dx, w, axis=axis).compute(scheduler="sync")
            np.testing.assert_array_equal(gap, np.max(np.abs(x - w), axis=axis))
        with pytest.raises(ValueError, match="max over zero elements"):
            largest_gap(da.zeros((0, 3), chunks=2), 1.0)


def test_one_launch_on_the_simulator(cupy_backend, rng):
    """Each kernel is one launch and nothing else (no copies: scalars go by value); the
    same computations in array operations are one launch per operation."""
    if not simulated():
        pytest.skip("counts launches with the simulator's trace (python -m pytest --cupy=sim)")
    import cupy
    import cupysim

    x = cupy.asarray(rng.standard_normal((64, 100)).astype(np.float32))
    w = cupy.asarray(rng.uniform(0.5, 2, 100).astype(np.float32))
    softplus(x), blend(x, w, 0.5), weighted_norm(x, w)  # compile outside the count
    for run, steps in [
        (lambda: softplus(x), lambda: cupy.log1p(cupy.exp(-cupy.abs(x))) + cupy.maximum(x, 0)),
        (lambda: weighted_norm(x, w), lambda: cupy.sqrt(cupy.sum(w * x * x))),
    ]:
        with cupysim.trace() as fused:
            run()
        with cupysim.trace() as separate:
            steps()
        assert fused.summary().device_ops == fused.summary().kernels == 1, fused.kernel_names()
        assert fused.summary().h2d_copies == fused.summary().syncs == 0
        assert separate.summary().kernels >= 4, separate.kernel_names()
    with cupysim.trace() as t:
        blend(x, w, 0.5)
    assert t.summary().device_ops == 1 and t.summary().h2d_copies == 0


@gk.elementwise
def silu(x):
    return x / (1.0 + exp(-x))  # noqa: F821


@gk.elementwise
def silu_grad(x, g):
    s = 1.0 / (1.0 + exp(-x))  # noqa: F821
    return g * s * (1.0 + x * (1.0 - s))


def test_activation_forward_and_backward(backend, xp, rng):
    x = rng.standard_normal((33, 17)).astype(np.float32)
    g = rng.standard_normal((33, 17)).astype(np.float32)
    act = gk.nn.Activation(silu, silu_grad)
    y = act(xp.asarray(x))
    gx = act.backward(xp.asarray(g))
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    sd = 1 / (1 + np.exp(-xd))
    assert y.dtype == gx.dtype == np.float32
    assert rel_err(_np(y), xd * sd) < TOL[np.dtype(np.float32)]
    assert rel_err(_np(gx), gd * sd * (1 + xd * (1 - sd))) < TOL[np.dtype(np.float32)]
    assert act.backward(xp.asarray(g), need_input_grad=False) is None
    with pytest.raises(TypeError, match=r"backward must be a gk\.elementwise kernel of 2"):
        gk.nn.Activation(silu, silu)
    with pytest.raises(TypeError, match="x must be real"):
        act(xp.ones(3, dtype=np.complex64))


def test_activation_trains_as_the_builtin(backend, rng):
    """A user-written SiLU in an MLP takes the steps gk.nn.SiLU takes (float64)."""
    x = rng.standard_normal((64, 8))
    y = rng.integers(0, 3, 64)

    def train(act):
        model = gk.nn.Sequential(
            gk.nn.Linear(8, 16, dtype="float64", seed=0),
            act,
            gk.nn.Linear(16, 3, dtype="float64", seed=1),
        )
        opt = gk.optim.SGD(model.parameters(), lr=0.1)
        history = gk.nn.fit(
            model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=3, batch_size=16, shuffle=False,
            progress=False,
        )  # fmt: skip
        return history["loss"], [_np(p.data) for p in model.parameters()]

    loss, params = train(gk.nn.Activation(silu, silu_grad))
    ref_loss, ref_params = train(gk.nn.SiLU())
    assert loss[-1] < loss[0]
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    for p, r in zip(params, ref_params, strict=True):
        assert rel_err(p, r) < 1e-12
