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

from gpukit._host import activations, native
from gpukit_numpy import kernels as host

from helpers import TOL, rel_err

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


def _with_tails(rng, shape, dtype):
    """Normal inputs with |x| up to 1e4, subnormals and signed zeros mixed in."""
    x = rng.standard_normal(shape) * 3
    flat = x.reshape(-1)
    idx = rng.permutation(flat.size)[: max(flat.size // 20, 4)]
    q = len(idx) // 4
    flat[idx[:q]] = rng.choice([-1, 1], q) * 10 ** rng.uniform(1, 4, q)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    flat[idx[q : 2 * q]] = rng.choice([-1, 1], q) * tiny * rng.integers(1, 1000, q)
    flat[idx[2 * q : 3 * q]] = rng.choice([-0.0, 0.0], q)
    return x.astype(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("activation", ACTS)
def test_forward_and_backward_match_the_formulas(path, rng, dtype, activation, shape):
    x = _with_tails(rng, shape, dtype)
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
    x = _with_tails(rng, (301, 257), dtype)
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
