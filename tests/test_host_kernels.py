"""The host kernels on both of their paths: gpukit's compiled library and the NumPy ufuncs
that stand in without it (gpukit/_host/native.py), against float64 formulas.

tests/test_kernels.py checks gk.kernels on every backend (on the host: whichever path
this install has); here each path is forced in turn, at the sizes and layouts that
decide how the host splits the work (rows over threads, columns of a short matrix, one
long row without a bias, in place), with the tails in the inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import gpukit as gk
from gpukit._host import activations, native
from gpukit_numpy import kernels as host

from helpers import TOL, oracle, rel_err, with_tails

ACTS = native.ACTIVATIONS
SHAPES = [(389, 347), (3, 50_001), (1, 70_001), (5, 7)]


def _sig(z):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def _gelu_tanh(z):
    """0.5 z (1 + tanh(y)) as z sigmoid(2 y): the same function, without the
    cancellation of 1 + tanh(y) for z << 0"""
    return z * _sig(2 * math.sqrt(2 / np.pi) * (z + 0.044715 * z**3))


def _gelu_tanh_derivative(z):
    k, c = math.sqrt(2 / np.pi), 0.044715
    s = _sig(2 * k * (z + c * z**3))  # 0.5 (1 + t), and 1 - t^2 = 4 s (1 - s)
    return s + 2 * z * s * (1 - s) * k * (1 + 3 * c * z * z)


# act(z), act'(z) in float64, from their definitions
FORMULAS = {
    "identity": (lambda z: z, np.ones_like),
    "relu": (lambda z: np.where(z > 0, z, 0.0), lambda z: (z > 0).astype(float)),
    "leaky_relu": (lambda z: np.where(z > 0, z, 0.2 * z), lambda z: np.where(z > 0, 1.0, 0.2)),
    "gelu": (
        lambda z: z * special.ndtr(z),
        lambda z: special.ndtr(z) + z * np.exp(-z * z / 2) / math.sqrt(2 * np.pi),
    ),
    "gelu_tanh": (_gelu_tanh, _gelu_tanh_derivative),
    "silu": (lambda z: z * _sig(z), lambda z: _sig(z) * (1 + z * (1 - _sig(z)))),
    "sigmoid": (_sig, lambda z: _sig(z) * (1 - _sig(z))),
    "tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2),
}


@pytest.fixture(params=["compiled", "numpy"])
def path(request):
    """Which implementation the host kernels run."""
    if request.param == "numpy":
        with native.disabled():
            yield request.param
        return
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    yield request.param


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request):
    return request.param


def _tol(dtype) -> float:
    return TOL[np.dtype(dtype)] * 10


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("activation", ACTS)
def test_forward_and_backward_match_the_formulas(path, rng, dtype, activation, shape):
    x = with_tails(rng, shape, dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    b[: shape[1] // 4] = 0  # the tails of these columns reach the activation as they are
    gy = rng.standard_normal(shape).astype(dtype)
    f, df = FORMULAS[activation]
    z = x.astype(np.float64) + b
    with np.errstate(over="ignore", invalid="ignore"):
        want_y, want_g = f(z), gy * df(z)
    y = activations.bias_activate(x, b, np.empty_like(x), activation, 0.2)
    g, gb = activations.gradient(gy, x, activation, 0.2, bias=b, want_bias=True)
    assert y.dtype == g.dtype == gb.dtype == dtype
    assert rel_err(y, want_y) < _tol(dtype)
    assert rel_err(g, want_g) < _tol(dtype)
    assert rel_err(gb, want_g.sum(axis=0)) < _tol(dtype)


@pytest.mark.parametrize("activation", ACTS)
def test_without_bias_in_place_and_from_the_output(path, rng, dtype, activation):
    """gk.nn's calls: no bias (the input's signed zeros kept), the output written over
    the input, the gradient over the incoming one, and from the output where the
    derivative is a function of it."""
    x = with_tails(rng, (301, 257), dtype)
    gy = rng.standard_normal(x.shape).astype(dtype)
    f, df = FORMULAS[activation]
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        want_y, want_g = f(x64), gy * df(x64)
    g, none = activations.gradient(gy, x, activation, 0.2, out=gy.copy())
    assert none is None and rel_err(g, want_g) < _tol(dtype)
    y = x.copy()
    assert activations.bias_activate(y, None, y, activation, 0.2) is y
    assert rel_err(y, want_y) < _tol(dtype)
    if activation == "identity":
        assert np.array_equal(np.signbit(y), np.signbit(x))
    if activation in activations.FROM_OUTPUT:
        g2, gb = activations.gradient(gy, y, activation, 0.2, of_output=True, want_bias=True)
        assert rel_err(g2, want_g) < _tol(dtype)
        assert rel_err(gb, want_g.sum(axis=0)) < _tol(dtype)


@pytest.mark.parametrize("activation", ["sigmoid", "silu", "tanh", "gelu_tanh"])
def test_exp_and_tanh_are_accurate_element_by_element(dtype, activation):
    """gpukit's own exp and tanh (the compiled path) to a few ulps of the float64
    value at every point of a dense grid, down to where the results become subnormal
    (the NumPy path's gelu_tanh cancels in 1 + tanh(y) for z << 0, as CUDA's does)."""
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    eps = float(np.finfo(dtype).eps)
    tiny = float(np.finfo(dtype).tiny)
    top = 100.0 if dtype == np.float32 else 740.0
    z = np.concatenate([np.linspace(-top, 30, 200_001), np.linspace(-1, 1, 20_001)])
    z = z.astype(dtype)[None, :]
    z64 = z.astype(np.float64)
    f, _ = FORMULAS[activation]
    with np.errstate(over="ignore"):
        want = f(z64)
    got = activations.bias_activate(z, None, np.empty_like(z), activation, 0.0)
    ok = np.abs(want) > tiny * (1 + np.abs(z64))  # silu's sigmoid factor not subnormal
    rel = np.abs(got.astype(np.float64) - want)[ok] / np.abs(want)[ok]
    # gelu_tanh's own rounding of z + c z^3 is amplified by the exponent in the tail
    bound = 8 * eps * (1 + (np.abs(z64[ok]) ** 3 if activation == "gelu_tanh" else 0))
    assert np.all(rel < bound), z[ok][np.argmax(rel / bound)]


def _xent64(x, labels, eps):
    z = x - x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    n, c = x.shape
    picked = z[np.arange(n), np.clip(labels, 0, c - 1)]
    loss = lse - (1 - eps) * picked - (eps / c) * z.sum(axis=1)
    return loss, np.exp(z - lse[:, None])


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("shape", [(517, 263), (3, 40_000), (4, 5)], ids=str)
def test_softmax_cross_entropy_matches_the_formula(path, rng, dtype, shape, smoothing):
    n, c = shape
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    x[0, : c // 2] = -np.inf  # probability 0 (a loss of +inf under smoothing)
    labels = rng.integers(0, c, n)
    labels[0] = c - 1
    weights = rng.standard_normal(n).astype(dtype)
    loss, probs = host.softmax_cross_entropy(x, labels, smoothing)
    with np.errstate(invalid="ignore"):
        want_loss, want_p = _xent64(x.astype(np.float64), labels, smoothing)
    assert loss.dtype == probs.dtype == dtype
    assert np.array_equal(np.isinf(loss), np.isinf(want_loss))
    finite = np.isfinite(want_loss)
    assert rel_err(loss[finite], want_loss[finite]) < _tol(dtype)
    assert rel_err(probs, want_p) < _tol(dtype)
    assert np.all(probs[0, : c // 2] == 0)
    g = host.softmax_cross_entropy_backward(probs, labels, weights, smoothing)
    onehot = np.zeros(shape)
    onehot[np.arange(n), labels] = 1.0
    want_g = (want_p - smoothing / c - (1 - smoothing) * onehot) * weights[:, None]
    assert g.dtype == dtype and rel_err(g, want_g) < _tol(dtype)


def test_softmax_cross_entropy_marks_a_label_out_of_range_with_nan(path, rng, dtype):
    x = rng.standard_normal((6, 9)).astype(dtype)
    labels = np.array([0, -1, 9, 3, 8, 2**40])
    loss, probs = host.softmax_cross_entropy(x, labels, 0.0)
    assert np.array_equal(np.isnan(loss), [False, True, True, False, False, True])
    g = host.softmax_cross_entropy_backward(probs, labels, np.ones(6, dtype), 0.0)
    assert np.isnan(g[[1, 2, 5]]).all() and np.isfinite(g[[0, 3, 4]]).all()


def test_a_library_built_from_other_sources_is_not_used(monkeypatch):
    """After an edit of the C sources without a rebuild, gpukit warns and computes with
    NumPy rather than run kernels that no longer match their sources."""
    if native._library() is None:
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    from gpukit._host import build_native
    from gpukit.errors import GpukitWarning

    monkeypatch.setattr(build_native, "source_hash", lambda: "edited")
    monkeypatch.setattr(native, "_loaded", False)
    monkeypatch.setattr(native, "_lib", None)
    with pytest.warns(GpukitWarning, match="built from other sources"):
        assert not native.available()
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    y = activations.bias_activate(x, None, np.empty_like(x), "gelu", 0.0)
    assert rel_err(y, x * special.ndtr(x)) < _tol(np.float64)


@pytest.mark.parametrize("shape", [(3, 50_001), (1, 300_001), (700, 301)], ids=str)
def test_element_wise_results_do_not_depend_on_the_split(path, rng, dtype, shape):
    """One thread or several, by rows or by columns, each element is computed the same
    way (the bias gradient's sums may differ in rounding only)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    gy = rng.standard_normal(shape).astype(dtype)

    def run():
        out = []
        for act in ACTS:
            out.append(activations.bias_activate(x, b, np.empty_like(x), act, 0.2))
            out.append(activations.gradient(gy, x, act, 0.2, bias=b, want_bias=True)[0])
        return out

    many = run()
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        one = run()
    for a, b_ in zip(many, one, strict=True):
        assert np.array_equal(a, b_, equal_nan=True)


# -- the optimizer updates (gpukit_numpy.kernels.sgd_update / adam_update) ------------------
UPDATE_SIZES = [5, 1001, 300_001]  # the tail loop alone; vector loop and tail; two threads
K_ULPS = 8  # element-wise bound: ulps of the sum of the magnitudes of a result's terms


def _update_tails(rng, n, dtype):
    """Normal values, a twentieth replaced by large values (up to where the norm of a
    second moment, a sum of squares of squares, stays finite), subnormals and signed
    zeros."""
    x = rng.standard_normal(n)
    idx = rng.permutation(n)[: max(n // 20, 3)]
    q = max(len(idx) // 3, 1)
    top = math.log10(float(np.finfo(dtype).max)) / 4 - 2
    x[idx[:q]] = rng.choice([-1, 1], q) * 10 ** rng.uniform(1, top, q)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    x[idx[q : 2 * q]] = rng.choice([-1, 1], q) * tiny * rng.integers(1, 1000, q)
    x[idx[2 * q :]] = rng.choice([-0.0, 0.0], len(idx) - 2 * q)
    return x.astype(dtype)


def _assert_within(got, want, terms, dtype):
    """``got`` within the numerics contract's relative norm of the float64 ``want``, and
    each element within K_ULPS ulps of its terms' magnitudes (plus as many of the
    smallest normal number, where results and terms underflow)."""
    info = np.finfo(dtype)
    err = np.abs(got.astype(np.float64) - want)
    bound = K_ULPS * (float(info.eps) * terms + float(info.tiny))
    assert np.all(err <= bound), (got[np.argmax(err / bound)], want[np.argmax(err / bound)])
    assert rel_err(got, want) < TOL[np.dtype(dtype)]


def _sgd64(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, first_step):
    """torch.optim.SGD's documented step in float64: ``(p, buf)`` and the magnitudes of
    their terms."""
    p, g = p.astype(np.float64), g.astype(np.float64)
    d, td = g, np.abs(g)
    if weight_decay:
        d, td = g + weight_decay * p, td + weight_decay * np.abs(p)
    if momentum:
        b = buf.astype(np.float64)
        if first_step:
            b, tb = d, td
        else:
            b, tb = momentum * b + (1 - dampening) * d, momentum * np.abs(b) + (1 - dampening) * td
        d, td = (d + momentum * b, td + momentum * tb) if nesterov else (b, tb)
    else:
        b = tb = None
    return p - lr * d, np.abs(p) + lr * td, b, tb


def _adam64(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled):
    """torch.optim.Adam's (AdamW's) documented step in float64: ``(p, m, v)``, each with
    the magnitudes of its terms (for ``p``: with the errors of ``m`` and ``v`` carried
    through ``m / (sqrt(v) / c + eps)``, which a gradient that cancels with its weight
    decay amplifies)."""
    p, g, m, v = (a.astype(np.float64) for a in (p, g, m, v))
    tg = np.abs(g)
    if weight_decay and decoupled:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g, tg = g + weight_decay * p, tg + weight_decay * np.abs(p)
    m, tm = beta1 * m + (1 - beta1) * g, beta1 * np.abs(m) + (1 - beta1) * tg
    v, tv = beta2 * v + (1 - beta2) * g * g, beta2 * v + (1 - beta2) * tg * tg
    step_size, scale = lr / (1 - beta1**step), 1 / math.sqrt(1 - beta2**step)
    root = np.sqrt(v)
    denom = root * scale + eps
    # d(m / denom) = dm / denom - m scale dv / (2 root denom^2)
    carried = np.divide(tv * scale, 2 * root * denom, out=np.zeros_like(v), where=root > 0)
    tp = np.abs(p) + step_size * (tm + np.abs(m) * carried) / denom
    return p - step_size * m / denom, tp, m, tm, v, tv


SGD_CASES = {
    "plain": {"lr": 0.1},  # ufuncs on up to 1K elements, BLAS axpy above
    "wd": {"lr": 0.1, "weight_decay": 0.05},
    "momentum_first": {"lr": 0.1, "momentum": 0.9, "first_step": True},
    "momentum": {"lr": 0.1, "momentum": 0.9},
    "dampening_wd": {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
    "nesterov_wd_first": {
        "lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "first_step": True
    },
    "nesterov": {"lr": 0.05, "momentum": 0.8, "nesterov": True},
}  # fmt: skip


def _sgd_args(case):
    cfg = {"momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
           "first_step": False, **SGD_CASES[case]}  # fmt: skip
    keys = ("lr", "momentum", "dampening", "nesterov", "weight_decay", "first_step")
    return cfg, tuple(cfg[k] for k in keys)  # the backend kernel's argument order


@pytest.mark.parametrize("n", UPDATE_SIZES)
@pytest.mark.parametrize("case", sorted(SGD_CASES))
def test_sgd_update_matches_the_formula(path, rng, dtype, case, n):
    cfg, args = _sgd_args(case)
    p, g = _update_tails(rng, n, dtype), _update_tails(rng, n, dtype)
    buf = _update_tails(rng, n, dtype) if cfg["momentum"] else None
    keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "first_step")
    want_p, terms_p, want_b, terms_b = _sgd64(p, g, buf, *(cfg[k] for k in keys))
    host.sgd_update(p, g, buf, *args)
    _assert_within(p, want_p, terms_p, dtype)
    if buf is not None:
        _assert_within(buf, want_b, terms_b, dtype)


ADAM_CASES = {
    "adam": {"lr": 1e-2},
    "adam_l2": {"lr": 1e-2, "weight_decay": 0.1},
    "adamw": {"lr": 3e-3, "weight_decay": 0.1, "decoupled": True},
    "betas_eps": {"lr": 1e-2, "beta1": 0.5, "beta2": 0.9, "eps": 1e-6},
}


def _adam_args(case, step):
    cfg = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0,
           "decoupled": False, **ADAM_CASES[case]}  # fmt: skip
    keys = ("lr", "beta1", "beta2", "eps", "weight_decay", "decoupled")
    return (step, *(cfg[k] for k in keys))  # the backend kernel's, and _adam64's, order


@pytest.mark.parametrize("n", UPDATE_SIZES)
@pytest.mark.parametrize("step", [1, 10], ids=["step1", "step10"])
@pytest.mark.parametrize("case", sorted(ADAM_CASES))
def test_adam_update_matches_the_formula(path, rng, dtype, case, step, n):
    """At step 1 (zero moments, the largest bias correction) and at step 10 (moments
    with tails of their own; the second moment >= 0)."""
    args = _adam_args(case, step)
    p, g = _update_tails(rng, n, dtype), _update_tails(rng, n, dtype)
    if step == 1:
        m, v = np.zeros(n, dtype), np.zeros(n, dtype)
    else:
        m, v = _update_tails(rng, n, dtype), np.abs(_update_tails(rng, n, dtype))
    want = _adam64(p, g, m, v, *args)
    host.adam_update(p, g, m, v, *args)
    for got, (w, terms) in zip((p, m, v), zip(want[::2], want[1::2], strict=True), strict=True):
        _assert_within(got, w, terms, dtype)


def _nonfinite(rng, n, dtype):
    g = rng.standard_normal(n).astype(dtype)
    g[rng.permutation(n)[:30]] = np.repeat([np.nan, np.inf, -np.inf], 10)
    return g


def _same_nonfinite(got, want):
    """NaN where ``want`` has NaN, the same infinities, finite values elsewhere."""
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))


@pytest.mark.parametrize("n", [1001, 300_001])
def test_non_finite_gradients_reach_the_parameters_as_in_the_formula(path, rng, dtype, n):
    """A NaN or infinite gradient is applied, not skipped (a poisoned batch is caught by
    the status buffer, below): NaN and infinities land where float64 puts them. Infinite
    parameters too: without weight decay, none is multiplied by 0 into a NaN."""
    p0, m0 = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    p0[rng.permutation(n)[:10]] = np.repeat([np.inf, -np.inf], 5)
    v0 = rng.random(n).astype(dtype)
    g = _nonfinite(rng, n, dtype)
    for case in ("plain", "wd", "nesterov", "dampening_wd"):
        cfg, args = _sgd_args(case)
        p, buf = p0.copy(), m0.copy()
        keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "first_step")
        with np.errstate(invalid="ignore"):  # inf - inf in the formula, and the ufuncs
            want_p, _, want_b, _ = _sgd64(p, g, buf, *(cfg[k] for k in keys))
            host.sgd_update(p, g, buf, *args)
        _same_nonfinite(p, want_p)
        if cfg["momentum"]:
            _same_nonfinite(buf, want_b)
    for case in ("adam", "adam_l2", "adamw"):
        args = _adam_args(case, 3)
        p, m, v = p0.copy(), m0.copy(), v0.copy()
        with np.errstate(invalid="ignore"):
            want = _adam64(p, g, m, v, *args)
            host.adam_update(p, g, m, v, *args)
        for got, w in zip((p, m, v), want[::2], strict=True):
            _same_nonfinite(got, w)


def test_an_update_changes_nothing_while_the_status_holds_an_error(path, rng, dtype):
    """The device-status semantics on the host: a flag set, no update is applied."""
    from gpukit._runtime import device_status

    status = device_status.INITIAL.copy()
    status[device_status.FLAGS] = device_status.NONFINITE
    arrays = [rng.standard_normal(300_001).astype(dtype) for _ in range(4)]
    before = [a.copy() for a in arrays]
    p, g, m, v = arrays
    host.sgd_update(p, g, m, *_sgd_args("nesterov")[1], status=status)
    host.sgd_update(p, g, None, *_sgd_args("wd")[1], status=status)
    host.adam_update(p, g, m, v, *_adam_args("adamw", 2), status=status)
    for a, b in zip(arrays, before, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("n", [64, 300_001])
def test_a_planned_sgd_update_runs_the_kernel_or_leaves_the_call_to_the_fallback(rng, dtype, n):
    """native.plan_sgd: the kernel on arrays it takes, with sgd_update's arguments;
    everything, untouched, to the fallback under a status flag, on a strided array
    and with the module disabled."""
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    from gpukit._runtime import device_status

    left = []
    plan = native.plan_sgd(n, np.dtype(dtype), lambda *a: left.append(a))
    for case in sorted(SGD_CASES):
        args = _sgd_args(case)[1]
        lr, momentum, dampening, nesterov, weight_decay, first_step = args
        p, g, buf = (rng.standard_normal(n).astype(dtype) for _ in range(3))
        q, b = p.copy(), buf.copy()
        plan(q, g, b, *args)
        assert left == []
        want_b = buf if momentum else None
        native.sgd(p, g, want_b, lr, momentum, dampening, weight_decay, nesterov, first_step)
        np.testing.assert_array_equal(q, p)
        np.testing.assert_array_equal(b, buf)
    status = device_status.INITIAL.copy()
    status[device_status.FLAGS] = device_status.NONFINITE
    wide = rng.standard_normal(2 * n).astype(dtype)
    p, g, buf = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    before = [a.copy() for a in (p, g, buf, wide)]
    plan(p, g, buf, *args, status)
    plan(wide[::2], g, buf, *args)
    with native.disabled():
        plan(p, g, buf, *args)
    for a, b in zip((p, g, buf, wide), before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert [len(a) for a in left] == [10, 10, 10]
    assert left[0][-1] is status and left[1][0].base is wide and left[2][-1] is None
    assert all(a[1] is g and a[3:9] == args for a in left)


def test_updates_do_not_depend_on_the_split(path, rng, dtype):
    """Each element is computed the same way on one thread or several."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    n = 300_001
    arrays = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
    arrays.append(rng.random(n).astype(dtype))

    def run():
        p, g, m, v = (a.copy() for a in arrays)
        host.adam_update(p, g, m, v, *_adam_args("adam_l2", 4))
        q, buf = arrays[0].copy(), arrays[2].copy()
        host.sgd_update(q, g, buf, *_sgd_args("dampening_wd")[1])
        return p, m, v, q, buf

    many = run()
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        one = run()
    for a, b in zip(many, one, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("shape", [(1,), (7,), (2047,), (2048,), (2049,), (3, 1500)], ids=str)
def test_the_finite_check_finds_each_nan_and_inf(path, rng, kind, shape):
    """The numpy backend's linalg_all_finite on both paths (the compiled kernel's blocks
    of 2,048 entries; NumPy's sum or count) against ``isfinite(x).all()``: one NaN, inf or
    -inf (in either part of a complex entry) at the first, a random and the last entry,
    in C and Fortran order; the largest finite values, subnormals and -0.0 are finite."""
    dtype = np.dtype(kind)
    real = dtype.type(0).real.dtype
    with gk.use_backend("numpy") as backend:
        for order in ("C", "F"):
            x = np.asarray(rng.standard_normal(shape), dtype=dtype, order=order)
            flat = x.reshape(-1, order="A")  # a view: x's entries in memory order
            assert backend.linalg_all_finite(x)
            for at in (0, int(rng.integers(flat.size)), flat.size - 1):
                for bad in (np.nan, np.inf, -np.inf):
                    for value in (bad, complex(1.0, bad)) if dtype.kind == "c" else (bad,):
                        y = x.copy(order="A")
                        y.reshape(-1, order="A")[at] = value
                        assert not np.isfinite(y).all()
                        assert not backend.linalg_all_finite(y), (order, at, value)
            edge = x.copy(order="A")
            edges = [np.finfo(real).max, np.finfo(real).smallest_subnormal, -0.0]
            edge.reshape(-1, order="A")[:3] = edges[: edge.size]
            assert backend.linalg_all_finite(edge)


def test_address_is_the_first_element_s_for_every_kind_of_array(dtype):
    """native.address: the module's, through the buffer protocol (any strides,
    read-only, empty, unaligned), or ``a.ctypes.data`` without it; the same number."""
    base = np.arange(12, dtype=dtype)
    frozen = base.copy()
    frozen.flags.writeable = False
    raw = np.zeros(8 * 13, np.uint8)[1:-7].view(dtype)  # not aligned
    for a in (base, base[3:], base.reshape(3, 4)[1:], base[::2], base.reshape(3, 4).T,
              frozen, frozen[5:], base[:0], raw):  # fmt: skip
        assert native.address(a) == a.ctypes.data


def test_compiled_updates_allocate_nothing(rng, dtype):
    """The compiled updates need no scratch: a step cannot run out of memory half-way."""
    import tracemalloc

    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    n = 1 << 20
    p, g, m = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    v = rng.random(n).astype(dtype)
    host.adam_update(p, g, m, v, *_adam_args("adam_l2", 2))  # the pool's threads started
    tracemalloc.start()
    try:
        host.adam_update(p, g, m, v, *_adam_args("adamw", 3))
        host.sgd_update(p, g, m, *_sgd_args("nesterov")[1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < p.nbytes // 64


def test_optimizers_with_groups_schedules_and_saved_state_match_torch(path, rng):
    """gk.optim on the host path at hand against torch.optim: two parameter groups with
    their own hyper-parameters, a step schedule, and the state saved and loaded into a
    new optimizer half-way."""
    torch = oracle("torch")
    shapes = [(300, 501), (501,), (77, 3)]
    init = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(6)]
    cases = [
        ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
         {"lr": 0.05, "momentum": 0.5, "dampening": 0.2}),
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, {"lr": 0.02, "weight_decay": 0.1}),
        ("Adam", {"lr": 1e-2, "weight_decay": 0.1}, {"lr": 1e-3, "betas": (0.5, 0.9)}),
        ("AdamW", {"lr": 1e-2}, {"lr": 3e-3, "weight_decay": 0.2, "eps": 1e-6}),
    ]  # fmt: skip
    for cls, first, second in cases:
        params = [gk.nn.Parameter(a.copy()) for a in init]
        t_params = [torch.tensor(a, requires_grad=True) for a in init]

        def groups(ps, first=first, second=second):
            return [{"params": ps[:2], **first}, {"params": ps[2:], **second}]

        opt = getattr(gk.optim, cls)(groups(params))
        t_opt = getattr(torch.optim, cls)(groups(t_params))
        sched = gk.optim.StepLR(opt, step_size=2, gamma=0.5)
        t_sched = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
        for k, step_grads in enumerate(grads):
            if k == 3:  # a new optimizer and schedule resume from the saved state
                saved, saved_sched = opt.state_dict(), sched.state_dict()
                opt = getattr(gk.optim, cls)(groups(params))
                opt.load_state_dict(saved)
                sched = gk.optim.StepLR(opt, step_size=2, gamma=0.5)
                sched.load_state_dict(saved_sched)
            for p, tp, g in zip(params, t_params, step_grads, strict=True):
                p.grad, tp.grad = g.copy(), torch.from_numpy(g)
            opt.step()
            t_opt.step()
            sched.step()
            t_sched.step()
        for p, tp in zip(params, t_params, strict=True):
            assert rel_err(p.data, tp.detach().numpy()) < TOL[np.dtype(np.float64)], cls


# -- where the compiled kernels split: native.thresholds() ----------------------------------
def _threshold_shapes(least: int) -> list[tuple[tuple[int, int], bool]]:
    """Shapes just below and at ``least`` elements, split by rows (64 columns) and by
    columns (one row), each with whether it reaches ``least``."""
    cols = 64
    return [
        (((least - 1) // cols, cols), False),
        ((-(-least // cols), cols), True),
        ((1, least - 1), False),
        ((1, least), True),
    ]


@pytest.mark.parametrize("activation", ACTS)
def test_kernels_split_from_their_thresholds_with_the_same_results(
    rng, dtype, activation, monkeypatch
):
    """Each compiled kernel runs on one thread below its threshold and on several from
    it, by rows or by columns; either way its elements match the float64 formula and
    are the same on one thread, and its bias gradient matches the formula."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    from gpukit._host import parallel

    spans = []  # the thread counts the kernels asked for (none: one thread)
    real_plan = parallel.plan

    def counted(*args, **kwargs):
        threads = real_plan(*args, **kwargs)
        spans.append(threads)
        return threads

    monkeypatch.setattr(parallel, "plan", counted)
    f, df = FORMULAS[activation]
    name = np.dtype(dtype).name
    least = native.thresholds()
    for way in ("forward", "backward"):
        for shape, splits in _threshold_shapes(least[activation, way, name]):
            x = with_tails(rng, shape, dtype)
            b = rng.standard_normal(shape[1]).astype(dtype)
            gy = rng.standard_normal(shape).astype(dtype)
            z = x.astype(np.float64) + b

            def compute(x=x, b=b, gy=gy, way=way):
                spans.clear()
                if way == "forward":
                    return activations.bias_activate(x, b, np.empty_like(x), activation, 0.2), None
                return activations.gradient(gy, x, activation, 0.2, bias=b, want_bias=True)

            out, gb = compute()
            threads = max(spans, default=1)
            with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
                one, gb_one = compute()
            assert max(spans, default=1) == 1
            if parallel.n_threads() > 1:
                assert (threads > 1) == splits, (way, shape, threads)
            with np.errstate(over="ignore", invalid="ignore"):
                want = f(z) if way == "forward" else gy * df(z)
            assert rel_err(out, want) < _tol(dtype), (way, shape)
            assert np.array_equal(out, one, equal_nan=True), (way, shape)
            if way == "backward":
                assert rel_err(gb, want.sum(axis=0)) < _tol(dtype), (way, shape)
                assert rel_err(gb_one, want.sum(axis=0)) < _tol(dtype), (way, shape)


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` starting one byte past an aligned address (as an
    unpickled out-of-band buffer may)."""
    raw = np.zeros(a.nbytes + 1, np.uint8)
    out = raw[1:].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def test_cross_entropy_takes_unaligned_labels_and_weights(rng, dtype):
    """Labels and per-row loss weights that are not aligned (a Dask process worker's
    unpickled chunk) are copied aligned, not refused, and give the aligned result."""
    logits = rng.standard_normal((9, 5)).astype(dtype)
    labels = rng.integers(0, 5, 9)
    weights = np.full(9, 1 / 9, dtype)
    with gk.use_backend("numpy"):
        loss, probs = gk.kernels.softmax_cross_entropy(logits, labels)
        odd_loss, odd_probs = gk.kernels.softmax_cross_entropy(logits, _unaligned(labels))
        g = gk.kernels.softmax_cross_entropy_backward(probs, labels, weights)
        odd_g = gk.kernels.softmax_cross_entropy_backward(
            probs, _unaligned(labels), _unaligned(weights)
        )
    assert np.array_equal(odd_loss, loss) and np.array_equal(odd_probs, probs)
    assert np.array_equal(odd_g, g)


#: The threaded kernel each pass of :func:`_planned_and_direct` runs.
_PAR = {"forward": "gk_bias_act_par", "backward": "gk_bias_act_grad_par", "adam": "gk_adam_par",
        "xent": "gk_xent_par"}  # fmt: skip


def _planned_and_direct(kind, rng, dtype):
    """``(call, direct)`` for a pass of ``kind`` above its split threshold: the planned
    kernel (:mod:`gpukit._host.native`'s ``plan_*``) and the unplanned call, each on
    outputs of its own, which it returns."""
    if kind in ("forward", "backward"):
        x, gy = (rng.standard_normal((300, 301)).astype(dtype) for _ in range(2))
        b = rng.standard_normal(301).astype(dtype)
        if kind == "forward":
            plan = native.plan_bias_act(300, 301, x.dtype, "silu")
            out = np.empty_like

            def call():
                y = out(x)
                assert plan(x, b, y, 0.0)
                return [y]

            def direct():
                y = out(x)
                native.bias_act(x, b, y, "silu", 0.0)
                return [y]

            return call, direct
        plan = native.plan_bias_act_grad(300, 301, x.dtype, "silu", False, True)

        def call():
            gx = np.empty_like(x)
            return [gx, plan(gy, x, b, gx, 0.0)]

        def direct():
            gx = np.empty_like(x)
            return [gx, native.bias_act_grad(gy, x, b, gx, "silu", 0.0, False, True)]

        return call, direct
    if kind == "adam":
        n = 300_001
        p, g = (rng.standard_normal(n).astype(dtype) for _ in range(2))
        m, v = rng.standard_normal(n).astype(dtype), rng.random(n).astype(dtype)
        plan = native.plan_elementwise("gk_adam", n, p.dtype)
        args = (1e-3, 1.1, 0.9, 0.999, 1e-8, 0.0, 0.99)

        def call():
            state = [a.copy() for a in (p, g, m, v)]
            assert plan(tuple(state), *native.adam_scalars(*args))
            return state

        def direct():
            state = [a.copy() for a in (p, g, m, v)]
            native.adam(*state, *args)
            return state

        return call, direct
    logits = (rng.standard_normal((700, 301)) * 4).astype(dtype)
    labels = rng.integers(0, 301, 700)
    plan = native.plan_rows("gk_xent", 700, 301, logits.dtype)

    def outputs():
        return np.empty(700, dtype), np.empty_like(logits)

    def call():
        loss, probs = outputs()
        assert plan(logits, labels, loss, probs, 0.1)
        return [loss, probs]

    def direct():
        loss, probs = outputs()
        native.xent(logits, labels, loss, probs, 0.1)
        return [loss, probs]

    return call, direct


@pytest.mark.parametrize("kind", ["forward", "backward", "adam", "xent"])
def test_plans_split_large_passes_as_the_unplanned_calls_under_every_thread_limit(
    rng, dtype, kind, monkeypatch
):
    """A planned kernel above its split threshold runs the threaded kernel as the
    unplanned call does, bit for bit (the bias gradient's sums too), and asks for the
    threads a threadpoolctl limit leaves on every call, not those of its first call."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from gpukit._host import parallel

    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    kernel = _PAR[kind]
    asked = []
    real = native._fn(kernel, np.dtype(dtype))

    def spy(*args):
        asked.append(args[-2] if kernel.startswith("gk_bias") else args[-1])
        return real(*args)

    monkeypatch.setitem(native._fns, (kernel, np.dtype(dtype)), spy)
    call, direct = _planned_and_direct(kind, rng, dtype)
    for limit in (None, 1, None):
        with threadpoolctl.threadpool_limits(limits=limit, user_api="blas"):
            asked.clear()
            planned, unplanned = call(), direct()
            want = parallel.n_threads()
        assert asked == [want, want], (limit, asked)
        for a, b in zip(planned, unplanned, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_a_pass_makes_several_spans_a_thread_and_the_backward_a_row_of_sums_each(rng, dtype):
    """A threaded pass is cut into more spans than threads (a late worker then costs only
    the spans the others take over), never more than its rows and at least one; the
    backward kernel fills one row of partial bias sums per span and refuses a smaller
    buffer before it writes anything."""
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    lib = native._library()
    assert [lib.spans(1, 1000), lib.spans(2, 3), lib.spans(3, 0)] == [1, 3, 1]
    assert lib.spans(2, 1000) > 2 and lib.spans(2, 1000) <= 1000
    with pytest.raises(ValueError, match="threads"):
        lib.spans(0, 10)
    rows, cols, threads = 96, 24, 2
    spans = lib.spans(threads, rows)
    g, v = rng.standard_normal((2, rows, cols)).astype(dtype)
    b = rng.standard_normal(cols).astype(dtype)
    par = native._fn("gk_bias_act_grad_par", np.dtype(dtype))
    code = native.ACTIVATIONS.index("relu")
    short = np.zeros((threads, cols)), np.empty(threads * cols, dtype)
    gx = np.full_like(g, 7.0)
    with pytest.raises(ValueError):
        par(g, v, b, gx, *short, rows, cols, cols, code, 0.0, 0, threads, 0)
    assert np.all(gx == 7.0)
    acc = np.zeros((spans, cols))
    part = np.empty(spans * cols, dtype)
    par(g, v, b, gx, acc, part, rows, cols, cols, code, 0.0, 0, threads, 0)
    want = g.astype(np.float64) * (v.astype(np.float64) + b > 0)
    assert rel_err(gx, want) < _tol(dtype)
    for k in range(spans):  # span k's rows, as csrc/pool.h bounds them
        lo, hi = rows * k // spans, rows * (k + 1) // spans
        assert rel_err(acc[k], want[lo:hi].sum(axis=0)) < _tol(dtype), k


def _all_nan(outputs):
    return all(np.isnan(a).all() for a in outputs)


def _small_planned_and_direct(kind, rng, dtype):
    """``(plan, direct, inputs, outputs, untouched)`` for a one-thread pass of ``kind``:
    the planned call and the unplanned one, each ``f(inputs, outputs)`` writing
    ``outputs``, the arrays it reads, a maker of fresh NaN outputs, and whether outputs
    hold what they held before a call (NaN; Adam's, the state it starts from)."""
    x = rng.standard_normal((4, 8)).astype(dtype)
    if kind in ("forward", "forward without bias"):
        b = rng.standard_normal(8).astype(dtype) if kind == "forward" else None
        plan = native.plan_bias_act(4, 8, np.dtype(dtype), "tanh", b is not None)
        return (
            lambda i, o: plan(i[0], b, o[0], 0.0),
            lambda i, o: native.bias_act(i[0], b, o[0], "tanh", 0.0),
            [x],
            lambda: [np.full_like(x, np.nan)],
            _all_nan,
        )
    if kind == "xent":
        labels = rng.integers(0, 8, 4)
        plan = native.plan_rows("gk_xent", 4, 8, np.dtype(dtype))
        return (
            lambda i, o: plan(i[0], labels, *o, 0.1),
            lambda i, o: native.xent(i[0], labels, *o, 0.1),
            [x],
            lambda: [np.full(4, np.nan, dtype), np.full_like(x, np.nan)],
            _all_nan,
        )
    p, g = (rng.standard_normal(64).astype(dtype) for _ in range(2))
    m, v = rng.standard_normal(64).astype(dtype), rng.random(64).astype(dtype)
    plan = native.plan_elementwise("gk_adam", 64, np.dtype(dtype))
    args = (1e-3, 1.1, 0.9, 0.999, 1e-8, 0.0, 0.99)

    def state(i, o):  # the updated arrays start as copies of p, m, v
        for out, start in zip(o, (p, m, v), strict=True):
            out[...] = start
        return o[0], i[0], o[1], o[2]

    return (
        lambda i, o: plan(state(i, o), *native.adam_scalars(*args)),
        lambda i, o: native.adam(*state(i, o), *args),
        [g],
        lambda: [np.full(64, np.nan, dtype) for _ in range(3)],
        lambda o: all(np.array_equal(a, w) for a, w in zip(o, (p, m, v), strict=True)),
    )


@pytest.mark.parametrize("kind", ["forward", "forward without bias", "xent", "adam"])
def test_one_thread_plans_run_the_kernel_or_refuse_leaving_the_outputs(
    rng, dtype, kind, monkeypatch
):
    """A planned pass below its split threshold calls the one-thread kernel once and
    gives the unplanned call's bits; an input the kernel does not take (unaligned) or
    the compiled kernels switched off make it return False having written nothing, so
    the caller computes the pass with NumPy."""
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    name = {"forward": "gk_bias_act", "xent": "gk_xent", "adam": "gk_adam"}[kind.split()[0]]
    calls = []
    real = native._fn(name, np.dtype(dtype))

    def spy(*args):  # the one-thread kernel (a plan binds it when it is made)
        calls.append(args)
        return real(*args)

    monkeypatch.setitem(native._fns, (name, np.dtype(dtype)), spy)
    plan, direct, inputs, outputs, untouched = _small_planned_and_direct(kind, rng, dtype)
    planned, unplanned = outputs(), outputs()
    assert plan(inputs, planned) is True
    assert len(calls) == 1
    direct(inputs, unplanned)
    for a, b in zip(planned, unplanned, strict=True):
        assert not np.isnan(a).any() and np.array_equal(a, b)
    before = len(calls)
    refused = outputs()
    if kind == "adam":  # the updated arrays are among the kernel's arguments
        refused = [_unaligned(a) for a in refused]
        assert plan(inputs, refused) is False
    else:
        assert plan([_unaligned(inputs[0])], refused) is False
    assert len(calls) == before + 1  # the kernel was called, and refused the array
    with native.disabled():
        off = outputs()
        assert plan(inputs, off) is False
    assert len(calls) == before + 1  # switched off: not called
    assert untouched(refused) and untouched(off)


@pytest.mark.parametrize("slope", [0.0, -0.0])
def test_leaky_relu_zeros_take_the_slopes_sign(path, dtype, slope):
    """A leaky ReLU of slope 0.0 or -0.0: where the input is negative the output and the
    gradient are zeros of the sign ``slope * x`` and ``slope * g`` have (as PyTorch and
    the device kernels compute them), on the compiled path and on NumPy's alike."""
    x = np.array([[-2.0, -0.5, 1.0, 3.0]], dtype)
    g = np.array([[1.0, -1.0, 2.0, 1.0]], dtype)
    with gk.use_backend("numpy"):  # the host kernels, whichever backend auto would pick
        y = gk.kernels.bias_activation(x, np.zeros(4, dtype), "leaky_relu", negative_slope=slope)
        gx, _ = gk.kernels.bias_activation_backward(
            g, x, np.zeros(4, dtype), "leaky_relu", negative_slope=slope
        )
    want_y = np.where(x > 0, x, dtype(slope) * x)
    want_gx = np.where(x > 0, g, dtype(slope) * g)
    for got, want in ((y, want_y), (gx, want_gx)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_disabled_takes_effect_in_a_fresh_process_and_its_context_only():
    """A process's first :func:`native.disabled` switches its context to the NumPy path
    for passes planned before it (their calls skip the context's flag until some context
    has been disabled), and not another context (another thread's)."""
    if not native.available():
        pytest.skip("gpukit's host kernel library is not built (pip install -e .)")
    from subproc import run_python

    code = """
import contextvars
import threading
import numpy as np
from gpukit._host import native
x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
y = np.empty_like(x)
run = native.plan_bias_act(4, 8, x.dtype, "relu", False)
assert run(x, None, y, 0.0) is True
other = []
with native.disabled():
    assert run(x, None, y, 0.0) is False and not native.available()
    # a context of its own (a thread may start in a copy of its parent's: Python 3.14's
    # thread_inherit_context)
    fresh = contextvars.Context()
    t = threading.Thread(target=lambda: other.append(fresh.run(run, x, None, y, 0.0)))
    t.start(); t.join()
assert other == [True], other
assert run(x, None, y, 0.0) is True and native.available()
print("ok")
"""
    done = run_python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
