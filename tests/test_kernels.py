"""gk.kernels against straightforward float64 formulas and PyTorch, on every backend."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time

import numpy as np
import pytest
from scipy import special

import gpukit as gk

from helpers import TOL, flushed, oracle, rel_err, same_errors_warm_as_cold, with_tails

FLOATS = [np.float32, np.float64]
SQ2 = math.sqrt(2.0)


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


# act(z) and act'(z) in float64, written out from their definitions.
FORMULAS = {
    "identity": (lambda z: z, lambda z: np.ones_like(z)),
    "relu": (lambda z: np.where(z > 0, z, 0.0), lambda z: (z > 0).astype(float)),
    "leaky_relu": (
        lambda z: np.where(z > 0, z, 0.2 * z),
        lambda z: np.where(z > 0, 1.0, 0.2),
    ),
    "gelu": (  # Phi = ndtr, accurate in the tail (1 + erf(z / sqrt2) cancels for z << 0)
        lambda z: z * special.ndtr(z),
        lambda z: special.ndtr(z) + z * np.exp(-z * z / 2) / math.sqrt(2 * np.pi),
    ),
    "gelu_tanh": (
        lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / np.pi) * (z + 0.044715 * z**3))),
        None,  # checked against PyTorch's autograd instead
    ),
    "silu": (lambda z: z * _sig(z), lambda z: _sig(z) * (1 + z * (1 - _sig(z)))),
    "sigmoid": (_sig, lambda z: _sig(z) * (1 - _sig(z))),
    "tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2),
}


def _tol(dtype) -> float:
    return TOL[np.dtype(dtype)] * 10  # a few roundings per element beyond the last


@pytest.fixture(params=FLOATS, ids=["float32", "float64"])
def dtype(request):
    return request.param


@pytest.mark.parametrize("activation", gk.kernels.ACTIVATIONS)
def test_bias_activation_matches_formula(backend, rng, dtype, activation):
    x = (rng.standard_normal((4, 3, 9)) * 3).astype(dtype)
    b = rng.standard_normal(9).astype(dtype)
    gy = rng.standard_normal(x.shape).astype(dtype)
    f, df = FORMULAS[activation]
    z = x.astype(np.float64) + b
    y = gk.kernels.bias_activation(x, b, activation, negative_slope=0.2)
    assert y.dtype == dtype and y.shape == x.shape
    assert rel_err(y, f(z)) < _tol(dtype)
    gx, gb = gk.kernels.bias_activation_backward(gy, x, b, activation, negative_slope=0.2)
    assert gx.shape == x.shape and gb.shape == b.shape and gb.dtype == dtype
    if df is not None:
        want = gy * df(z)
        assert rel_err(gx, want) < _tol(dtype)
        assert rel_err(gb, want.sum(axis=(0, 1))) < _tol(dtype)


@pytest.mark.parametrize("activation", ["relu", "gelu", "tanh"])
def test_bias_gradient_over_many_rows_is_exact_and_repeatable(backend, rng, dtype, activation):
    """Many rows of few columns: on a GPU the rows are split over blocks whose column sums
    the last block adds in order (a ticket each launch leaves at 0), so the bias gradient
    matches the float64 column sums and is the same bits on every call, from ``x`` and
    from the forward output."""
    x = (rng.standard_normal((1500, 40)) * 2).astype(dtype)
    b = rng.standard_normal(40).astype(dtype)
    gy = rng.standard_normal(x.shape).astype(dtype)
    _, df = FORMULAS[activation]
    z = x.astype(np.float64) + b
    want = gy * df(z)
    xp = backend.xp
    ins = [xp.asarray(v) for v in (gy, x, b)]
    y = gk.kernels.bias_activation(ins[1], ins[2], activation)
    gx, gb = gk.kernels.bias_activation_backward(*ins, activation)
    assert rel_err(gx, want) < _tol(dtype)
    assert rel_err(gb, want.sum(axis=0)) < _tol(dtype)
    again = gk.kernels.bias_activation_backward(*ins, activation)
    assert np.array_equal(gk.to_numpy(again[1]), gk.to_numpy(gb))
    if activation != "gelu":  # a derivative of the output: read from y
        gx2, gb2 = gk.kernels.bias_activation_backward(*ins, activation, output=y)
        assert rel_err(gx2, want) < 10 * _tol(dtype)
        assert rel_err(gb2, want.sum(axis=0)) < 10 * _tol(dtype)


@pytest.mark.parametrize("host", ["compiled", "ufuncs"])
@pytest.mark.parametrize("shape", [(3, 5), (1500, 40), (2, 3, 7), (0, 4)])
def test_identity_backward_passes_grad_y_through(backend, rng, dtype, shape, host):
    """The identity's ``grad_x`` is ``grad_y`` itself, not a copy (PyTorch's autograd
    passes the gradient through, as gk.nn's layers do): only the bias gradient is
    computed, from ``grad_y`` alone, which is left as it was (read-only on the host),
    with or without the forward output."""
    from gpukit._host import native

    if host == "ufuncs" and backend.name != "numpy":
        pytest.skip("the NumPy-ufunc kernels are the numpy backend's")
    host_gy = rng.standard_normal(shape).astype(dtype)
    xp = backend.xp
    gy = xp.asarray(host_gy)
    x = xp.asarray(rng.standard_normal(shape).astype(dtype))
    b = xp.asarray(rng.standard_normal(shape[-1]).astype(dtype))
    if xp is np:
        gy.flags.writeable = False
    want = host_gy.astype(np.float64).reshape(-1, shape[-1]).sum(axis=0)
    with native.disabled() if host == "ufuncs" else contextlib.nullcontext():
        for output in (None, x):
            gx, gb = gk.kernels.bias_activation_backward(gy, x, b, "identity", output=output)
            assert gx is gy
            assert np.array_equal(gk.to_numpy(gy), host_gy)
            assert gb.shape == (shape[-1],) and gb.dtype == dtype
            if want.any():
                assert rel_err(gb, want) < _tol(dtype)
            else:
                assert not gk.to_numpy(gb).any()


TORCH_ACTS = {
    "identity": lambda F, z: z,
    "relu": lambda F, z: F.relu(z),
    "leaky_relu": lambda F, z: F.leaky_relu(z, 0.2),
    "gelu": lambda F, z: F.gelu(z),
    "gelu_tanh": lambda F, z: F.gelu(z, approximate="tanh"),
    "silu": lambda F, z: F.silu(z),
    "sigmoid": lambda F, z: F.sigmoid(z),
    "tanh": lambda F, z: F.tanh(z),
}


@pytest.mark.parametrize("activation", gk.kernels.ACTIVATIONS)
def test_bias_activation_matches_torch(backend, rng, dtype, activation):
    torch = oracle("torch")
    x = (rng.standard_normal((33, 17)) * 3).astype(dtype)
    b = rng.standard_normal(17).astype(dtype)
    gy = rng.standard_normal(x.shape).astype(dtype)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    ty = TORCH_ACTS[activation](torch.nn.functional, tx + tb)
    ty.backward(torch.tensor(gy, dtype=torch.float64))
    y = gk.kernels.bias_activation(x, b, activation, negative_slope=0.2)
    gx, gb = gk.kernels.bias_activation_backward(gy, x, b, activation, negative_slope=0.2)
    assert rel_err(y, ty.detach().numpy()) < _tol(dtype)
    assert rel_err(gx, tx.grad.numpy()) < _tol(dtype)
    assert rel_err(gb, tb.grad.numpy()) < _tol(dtype)


def test_bias_activation_1d_and_extremes(backend, dtype):
    x = np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=dtype)
    b = np.zeros(5, dtype=dtype)
    for act in gk.kernels.ACTIVATIONS:
        y = gk.to_numpy(gk.kernels.bias_activation(x, b, act))
        gx, gb = gk.kernels.bias_activation_backward(np.ones_like(x), x, b, act)
        assert np.isfinite(y).all(), act
        assert np.isfinite(gk.to_numpy(gx)).all(), act
        assert rel_err(gb, gk.to_numpy(gx)) == 0.0  # 1-D: nothing to sum over


def test_leaky_relu_gradient_at_nan_is_torchs_on_every_backend(backend, dtype):
    """``z > 0 ? 1 : slope``: a NaN input takes the slope, as in PyTorch (the CUDA kernel
    wrote ``z <= 0 ? slope : 1`` and gave 1), in the kernels and in the nn layer alike."""
    torch = oracle("torch")
    x = np.array([np.nan, -2.0, 3.0], dtype=dtype)
    gy = np.array([2.0, 2.0, 2.0], dtype=dtype)
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.leaky_relu(tx, 0.25).backward(torch.tensor(gy))
    want = tx.grad.numpy()  # [0.5, 0.5, 2]
    b = np.zeros(3, dtype)
    gx, _ = gk.kernels.bias_activation_backward(gy, x, b, "leaky_relu", negative_slope=0.25)
    layer = gk.nn.LeakyReLU(0.25)
    layer(gk.asarray(x))
    for got in (gx, layer.backward(gk.asarray(gy))):
        assert np.array_equal(gk.to_numpy(got), want)


def test_relu_at_nan_and_signed_zero_is_torchs_on_every_backend(backend, dtype):
    """``relu(z) = z < 0 ? 0 : z``: NaN and -0.0 pass through, and the gradient
    (``grad * (z <= 0 ? 0 : 1)``) passes at NaN, as in PyTorch; in the kernels, the nn layer and
    the host's NumPy path alike (the compiled host kernel gave 0 for NaN, +0 for -0.0)."""
    torch = oracle("torch")
    from gpukit._host import native

    x = np.array([[np.nan, -0.0, 0.0, -1.5, 2.0]], dtype=dtype)
    gy = np.full_like(x, -3.0)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.relu(tx)
    ty.backward(torch.tensor(gy))
    want_y, want_g = ty.detach().numpy(), tx.grad.numpy()  # [nan, -0, 0, 0, 2], [-3, 0, 0, 0, -3]
    b = np.full(5, -0.0, dtype)  # x + -0.0 is x, signed zeros too

    def same(got, want, signs=True):
        got = gk.to_numpy(got)
        return np.array_equal(got, want, equal_nan=True) and (
            not signs or np.array_equal(np.signbit(got), np.signbit(want))
        )

    switches = [contextlib.nullcontext]
    if not backend.is_device:
        switches.append(native.disabled)
    for switch in switches:
        with switch():
            y = gk.kernels.bias_activation(x, b, "relu")
            gx, _ = gk.kernels.bias_activation_backward(gy, x, b, "relu")
            gx_out, _ = gk.kernels.bias_activation_backward(gy, x, b, "relu", output=y)
            layer = gk.nn.ReLU()
            ly = layer(gk.asarray(x))
            lg = layer.backward(gk.asarray(gy))
        assert same(y, want_y) and same(ly, want_y), switch
        # grad_y * 0 keeps the product's sign (the docstring): PyTorch selects +0
        for g in (gx, gx_out, lg):
            assert same(g, want_g, signs=False), switch


def test_gelu_keeps_its_relative_accuracy_in_the_tail(backend, dtype):
    """gelu(z) = z Phi(z) as 0.5 z (1 + erf(z / sqrt2)) cancels for z << 0: float32 gelu(-10)
    was 0 (true -7.6e-23) and float64 gelu(-5) 4e-11 off (the fuzz test at 6,000 examples).
    With erfc, each value is as accurate as Phi's conditioning allows: rounding z / sqrt2
    costs about z**2 ulps (d log Phi / d log z ~ z**2), the layer's and derivative's too."""
    z = np.array([-12.0, -10.0, -5.0, -3.0, -1.0, 0.5, 4.0], dtype=dtype)
    z64 = z.astype(np.float64)
    want = z64 * special.ndtr(z64)
    dwant = special.ndtr(z64) + z64 * np.exp(-z64 * z64 / 2) / math.sqrt(2 * np.pi)
    eps = float(np.finfo(dtype).eps)
    y = gk.to_numpy(gk.kernels.bias_activation(z[None, :], np.zeros(7, dtype), "gelu"))[0]
    layer = gk.to_numpy(gk.nn.GELU()(gk.asarray(z)))
    gz, _ = gk.kernels.bias_activation_backward(
        np.ones((1, 7), dtype), z[None, :], np.zeros(7, dtype), "gelu"
    )
    for got, ref in ((y, want), (layer, want), (gk.to_numpy(gz)[0], dwant)):
        rel = np.abs(np.asarray(got, np.float64) - ref) / np.abs(ref)
        assert np.all(rel < 4 * (1 + z64**2) * eps), (got, ref)


def _gelu_tanh_derivative(z):
    k, c = math.sqrt(2 / np.pi), 0.044715
    t = np.tanh(k * (z + c * z**3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * k * (1 + 3 * c * z * z)


@pytest.mark.parametrize("activation", gk.kernels.ACTIVATIONS)
def test_bias_activation_over_many_blockswith_tails(backend, rng, dtype, activation):
    """Sizes the host splits over its threads and cache-sized blocks (an odd number of
    rows, a row count per block that does not divide it), with the tails in the input."""
    x = with_tails(rng, (389, 347), dtype)
    b = rng.standard_normal(347).astype(dtype)
    b[:60] = 0  # keep the subnormals and signed zeros of these columns in z
    gy = rng.standard_normal(x.shape).astype(dtype)
    f, df = FORMULAS[activation]
    df = _gelu_tanh_derivative if activation == "gelu_tanh" else df
    z = flushed(x, backend).astype(np.float64) + b
    with np.errstate(over="ignore"):
        want_y, want_gx = f(z), gy * df(z)
    y = gk.kernels.bias_activation(x, b, activation, negative_slope=0.2)
    gx, gb = gk.kernels.bias_activation_backward(gy, x, b, activation, negative_slope=0.2)
    assert rel_err(y, want_y) < _tol(dtype)
    assert rel_err(gx, want_gx) < _tol(dtype)
    assert rel_err(gb, want_gx.sum(axis=0)) < _tol(dtype)


#: act'(z) written with y = act(z), in float64, where the derivative is a function of y.
OF_OUTPUT = {
    "identity": lambda y: np.ones_like(y),
    "relu": lambda y: (y > 0).astype(float),
    "sigmoid": lambda y: y * (1 - y),
    "tanh": lambda y: 1 - y * y,
}


@pytest.mark.parametrize("host", ["compiled", "ufuncs"])
@pytest.mark.parametrize("activation", gk.kernels.ACTIVATIONS)
def test_bias_activation_backward_from_the_output(backend, rng, dtype, activation, host):
    """``output=``: the derivative written with the forward result where it is a function
    of it, on the tails too; ``output`` checked and not used for the others. On the host,
    the compiled kernels and their NumPy-ufunc twins alike."""
    from gpukit._host import native

    if host == "ufuncs" and backend.name != "numpy":
        pytest.skip("the NumPy-ufunc kernels are the numpy backend's")
    x = with_tails(rng, (389, 347), dtype)
    b = rng.standard_normal(347).astype(dtype)
    b[:60] = 0  # keep the subnormals and signed zeros of these columns in z
    gy = rng.standard_normal(x.shape).astype(dtype)
    gy[::7] *= -0.0  # signed zero incoming gradients: the signs of the products
    df = _gelu_tanh_derivative if activation == "gelu_tanh" else FORMULAS[activation][1]
    z = flushed(x, backend).astype(np.float64) + b
    with np.errstate(over="ignore"):
        want_x = gy * df(z)  # the true gradient
    y = gk.kernels.bias_activation(x, b, activation, negative_slope=0.2)
    # any array of x's shape in (-1, 1): shows whether the output is read
    other = gk.asarray(np.tanh(rng.standard_normal(x.shape)).astype(dtype))
    with native.disabled() if host == "ufuncs" else contextlib.nullcontext():
        plain = gk.kernels.bias_activation_backward(gy, x, b, activation, negative_slope=0.2)
        kept = gk.kernels.bias_activation_backward(
            gy, x, b, activation, negative_slope=0.2, output=y
        )
        odd = gk.kernels.bias_activation_backward(
            gy, x, b, activation, negative_slope=0.2, output=other
        )
    plain, kept, odd = ([gk.to_numpy(a) for a in pair] for pair in (plain, kept, odd))
    assert kept[0].dtype == kept[1].dtype == dtype and kept[1].shape == b.shape
    if activation not in OF_OUTPUT:
        for got in (kept, odd):
            assert np.array_equal(got[0], plain[0]) and np.array_equal(got[1], plain[1])
        return
    d = OF_OUTPUT[activation]
    for out, (gx, gb) in ((y, kept), (other, odd)):
        want = gy * d(flushed(gk.to_numpy(out), backend).astype(np.float64))
        assert rel_err(gx, want) < _tol(dtype)
        assert rel_err(gb, want.sum(axis=0)) < _tol(dtype)
    # from the output kept by the forward pass: the true gradient, in norm
    assert rel_err(kept[0], want_x) < _tol(dtype)
    if activation in ("identity", "relu"):  # exactly the x path's, signed zeros included
        assert np.array_equal(kept[0], plain[0])
        assert np.array_equal(np.signbit(kept[0]), np.signbit(plain[0]))


def test_gelu_is_accurate_element_by_element_over_its_range(backend, dtype):
    """A dense grid from -14 to 14 and the subnormals: Phi and the derivative to within
    rounding z / sqrt2 allows (~z**2 ulps, test_gelu_keeps_its_relative_accuracy_in_the_tail)
    at every point, not only in norm (float32 uses gpukit's own vectorised erfc)."""
    tiny = float(np.finfo(dtype).smallest_subnormal)
    z = np.concatenate([np.linspace(-14, 14, 140_001), [tiny, -tiny, 0.0, -0.0]]).astype(dtype)
    z64 = flushed(z, backend).astype(np.float64)
    phi = special.ndtr(z64)
    pdf_term = z64 * np.exp(-z64 * z64 / 2) / math.sqrt(2 * np.pi)
    eps = float(np.finfo(dtype).eps)
    bound = 4 * (1 + z64**2) * eps
    zero = np.zeros(1, dtype)
    y = gk.to_numpy(gk.kernels.bias_activation(z[:, None], zero, "gelu"))[:, 0]
    g, _ = gk.kernels.bias_activation_backward(
        np.ones((z.size, 1), dtype), z[:, None], zero, "gelu"
    )
    g = gk.to_numpy(g)[:, 0].astype(np.float64)
    # the smallest magnitude the backend keeps: a flushing backend (CuPy, float32) zeroes
    # subnormal intermediates too, Phi(z) itself below z = -13.03
    flushes = backend.flushes_single_subnormals and dtype == np.float32
    floor = float(np.finfo(dtype).tiny) if flushes else tiny
    ok = (phi * np.abs(z64) > np.finfo(dtype).tiny) & (phi > floor)  # gelu not underflowed
    rel = np.abs(y.astype(np.float64) - z64 * phi)[ok] / (np.abs(z64) * phi)[ok]
    assert np.all(rel < bound[ok]), z[ok][np.argmax(rel / bound[ok])]
    # against the derivative's terms (it crosses 0 near z = -0.75), plus a few units of
    # the last place of the subnormals where they underflow (z < -13 in float32)
    scale = phi + np.abs(pdf_term)
    assert np.all(np.abs(g - (phi + pdf_term)) < bound * scale + 16 * floor)


def test_relu_and_leaky_relu_gradients_at_signed_zero_and_subnormals(backend, dtype):
    """The gradient at +tiny is the positive side's, where the backend keeps subnormals
    (a flushing backend reads +tiny as +0: the zero side's)."""
    tiny = float(np.finfo(dtype).smallest_subnormal)
    x = np.array([[-0.0, 0.0, tiny, -tiny, np.nan]], dtype=dtype)
    gy = np.array([[-3.0, -3.0, -3.0, -3.0, -3.0]], dtype=dtype)
    b = np.zeros(5, dtype)
    positive = 0.0 if backend.flushes_single_subnormals and dtype == np.float32 else 1.0
    gx, _ = gk.kernels.bias_activation_backward(gy, x, b, "relu")
    assert np.array_equal(np.abs(gk.to_numpy(gx)), [[0.0, 0.0, 3.0 * positive, 0.0, 3.0]])
    gx, _ = gk.kernels.bias_activation_backward(gy, x, b, "leaky_relu", negative_slope=0.25)
    tiny_side = -3.0 if positive else -0.75
    want = np.array([[-0.75, -0.75, tiny_side, -0.75, -0.75]], dtype)
    assert np.array_equal(gk.to_numpy(gx), want)


def test_host_threads_follow_the_blas_limit_and_give_the_same_result(rng, dtype):
    """Host kernels use no more threads than a threadpoolctl limit gives BLAS, and their
    element-wise results do not depend on how many threads computed them."""
    threadpoolctl = oracle("threadpoolctl")
    from gpukit._host import parallel

    x = rng.standard_normal((600, 301)).astype(dtype)
    b = rng.standard_normal(301).astype(dtype)
    with gk.use_backend("numpy"):
        many = gk.kernels.bias_activation(x, b, "gelu")
        gmany, _ = gk.kernels.bias_activation_backward(x, x, b, "silu")
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            assert parallel.n_threads() == 1
            one = gk.kernels.bias_activation(x, b, "gelu")
            gone, _ = gk.kernels.bias_activation_backward(x, x, b, "silu")
    assert parallel.n_threads() <= parallel.max_threads()
    assert np.array_equal(many, one) and np.array_equal(gmany, gone)


def test_host_spans_have_all_ended_when_one_raises():
    """When the caller's span raises, the pool's spans have finished before the error
    reaches the caller: none goes on writing into arrays the caller now holds."""
    from gpukit._host import parallel

    started, out = threading.Event(), np.zeros(2)

    def work(k, lo, hi):
        if k == 0:
            started.wait(5)
            raise ValueError("span 0 failed")
        started.set()
        time.sleep(0.2)  # still running when span 0 raises
        out[k] = 1.0

    with pytest.raises(ValueError, match="span 0 failed"):
        parallel.run(work, 2, threads=2)
    assert out[1] == 1.0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_host_kernels_run_in_a_forked_child(rng):
    """A child forked after the host pool started (a fork-based DataLoader) gets a pool of
    its own: the parent's threads do not exist there, and work queued to them never ran."""
    x = rng.standard_normal((700, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    with gk.use_backend("numpy"):
        y = gk.kernels.bias_activation(x, b, "silu")  # starts the pool (210K elements)
        pid = os.fork()
        if pid == 0:  # the child: exit 0 if the same result came back within 60 s
            signal.alarm(60)
            same = np.array_equal(gk.kernels.bias_activation(x, b, "silu"), y)
            os._exit(0 if same else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _sgd_formula(p, g, buf, steps, lr, momentum=0.0, dampening=0.0, nesterov=False, wd=0.0):
    p, buf = p.astype(np.float64), None if buf is None else buf.astype(np.float64)
    for i, gi in enumerate(steps):
        d = gi + wd * p
        if momentum:
            buf = d.copy() if i == 0 else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p, buf


SGD_CONFIGS = [
    {"lr": 0.1},
    {"lr": 0.1, "weight_decay": 0.05},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1},
]


@pytest.mark.parametrize("cfg", SGD_CONFIGS, ids=str)
def test_sgd_matches_formula_and_torch(backend, rng, dtype, cfg):
    p0 = rng.standard_normal(1001).astype(dtype)
    grads = [rng.standard_normal(1001).astype(dtype) for _ in range(3)]
    p, buf = gk.asarray(p0.copy()), gk.asarray(np.zeros_like(p0))
    for i, g in enumerate(grads):
        gk.kernels.sgd_update(p, gk.asarray(g), buf, first_step=i == 0, **cfg)
    wd = cfg.get("weight_decay", 0.0)
    kw = {k: v for k, v in cfg.items() if k != "weight_decay"}
    want, want_buf = _sgd_formula(p0, None, None, grads, wd=wd, **kw)
    assert rel_err(p, want) < _tol(dtype)
    if cfg.get("momentum"):
        assert rel_err(buf, want_buf) < _tol(dtype)
    torch = oracle("torch")
    tp = torch.tensor(p0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([tp], **cfg)
    for g in grads:
        tp.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
    assert rel_err(p, tp.detach().numpy()) < _tol(dtype)


ADAM_CONFIGS = [
    {"lr": 1e-2},
    {"lr": 1e-2, "betas": (0.5, 0.9), "eps": 1e-6},
    {"lr": 1e-2, "weight_decay": 0.1},
    {"lr": 1e-2, "weight_decay": 0.1, "decoupled": True},
]


@pytest.mark.parametrize("cfg", ADAM_CONFIGS, ids=str)
def test_adam_matches_formula_and_torch(backend, rng, dtype, cfg):
    cfg = dict(cfg)
    decoupled = cfg.pop("decoupled", False)
    beta1, beta2 = cfg.pop("betas", (0.9, 0.999))
    lr, wd, eps = cfg["lr"], cfg.get("weight_decay", 0.0), cfg.get("eps", 1e-8)
    p0 = rng.standard_normal(777).astype(dtype)
    grads = [rng.standard_normal(777).astype(dtype) for _ in range(4)]
    p, m, v = (gk.asarray(a) for a in (p0.copy(), np.zeros_like(p0), np.zeros_like(p0)))
    for t, g in enumerate(grads, 1):
        gk.kernels.adam_update(
            p, gk.asarray(g), m, v, step=t, beta1=beta1, beta2=beta2, decoupled=decoupled, **cfg
        )
    # The textbook update (Kingma & Ba; Loshchilov & Hutter for the decoupled decay).
    wp, wm, wv = p0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if decoupled:
            wp = wp * (1 - lr * wd)
        else:
            g = g + wd * wp
        wm = beta1 * wm + (1 - beta1) * g
        wv = beta2 * wv + (1 - beta2) * g * g
        mhat, vhat = wm / (1 - beta1**t), wv / (1 - beta2**t)
        wp = wp - lr * mhat / (np.sqrt(vhat) + eps)
    assert rel_err(p, wp) < _tol(dtype)
    assert rel_err(m, wm) < _tol(dtype)
    assert rel_err(v, wv) < _tol(dtype)
    torch = oracle("torch")
    tp = torch.tensor(p0, dtype=torch.float64, requires_grad=True)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = cls([tp], betas=(beta1, beta2), weight_decay=wd, lr=lr, eps=eps)
    for g in grads:
        tp.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
    assert rel_err(p, tp.detach().numpy()) < _tol(dtype)


def _xent_formula(logits, labels, eps):
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n, c = z.shape
    target = np.full((n, c), eps / c)
    target[np.arange(n), labels] += 1 - eps
    return -(target * logp).sum(axis=1), np.exp(logp), target


@pytest.mark.parametrize("classes", [1, 2, 10, 1000])
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_softmax_cross_entropy_matches_formula(backend, rng, dtype, classes, eps):
    n = 37
    logits = (rng.standard_normal((n, classes)) * 4).astype(dtype)
    labels = rng.integers(0, classes, n)
    grad_loss = rng.random(n).astype(dtype)
    loss, probs = gk.kernels.softmax_cross_entropy(logits, labels, label_smoothing=eps)
    want_loss, want_probs, target = _xent_formula(logits, labels, eps)
    assert loss.shape == (n,) and loss.dtype == dtype and probs.dtype == dtype
    assert rel_err(probs, want_probs) < _tol(dtype)
    if classes > 1 or eps:  # one class without smoothing: loss 0 exactly
        assert rel_err(loss, want_loss) < _tol(dtype)
    else:
        assert np.all(gk.to_numpy(loss) == 0)
    grad = gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing=eps)
    want = grad_loss[:, None] * (want_probs - target)
    assert grad.shape == (n, classes)
    if np.linalg.norm(want):
        assert rel_err(grad, want) < _tol(dtype)
    else:
        assert np.all(gk.to_numpy(grad) == 0)


def test_updates_and_cross_entropy_over_many_blocks(backend, rng, dtype):
    """Sizes the host splits over its threads and cache-sized blocks (odd lengths)."""
    n = 600_001
    p0, g = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    m0, v0 = rng.standard_normal(n).astype(dtype), rng.random(n).astype(dtype)
    p, m, v = (gk.asarray(a.copy()) for a in (p0, m0, v0))
    gk.kernels.adam_update(p, gk.asarray(g), m, v, step=3, lr=0.01, weight_decay=0.1)
    g64, p64 = g.astype(np.float64) + 0.1 * p0, p0.astype(np.float64)
    wm, wv = 0.9 * m0 + 0.1 * g64, 0.999 * v0 + 0.001 * g64 * g64
    wp = p64 - 0.01 / (1 - 0.9**3) * wm / (np.sqrt(wv / (1 - 0.999**3)) + 1e-8)
    assert rel_err(p, wp) < _tol(dtype) and rel_err(v, wv) < _tol(dtype)
    q, buf = gk.asarray(p0.copy()), gk.asarray(m0.copy())
    gk.kernels.sgd_update(q, gk.asarray(g), buf, lr=0.1, momentum=0.9, weight_decay=0.01)
    wbuf = 0.9 * m0 + g + 0.01 * p64
    assert rel_err(q, p64 - 0.1 * wbuf) < _tol(dtype) and rel_err(buf, wbuf) < _tol(dtype)
    logits = (rng.standard_normal((1201, 173)) * 4).astype(dtype)
    labels = rng.integers(0, 173, 1201)
    grad_loss = rng.random(1201).astype(dtype)
    loss, probs = gk.kernels.softmax_cross_entropy(logits, labels, label_smoothing=0.1)
    want_loss, want_probs, target = _xent_formula(logits, labels, 0.1)
    assert rel_err(loss, want_loss) < _tol(dtype) and rel_err(probs, want_probs) < _tol(dtype)
    grad = gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing=0.1)
    assert rel_err(grad, grad_loss[:, None] * (want_probs - target)) < _tol(dtype)


@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_softmax_cross_entropy_matches_torch(backend, rng, dtype, eps):
    torch = oracle("torch")
    logits = (rng.standard_normal((23, 11)) * 4).astype(dtype)
    labels = rng.integers(0, 11, 23)
    grad_loss = np.full(23, 1 / 23, dtype=dtype)  # a mean
    t = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(
        t, torch.tensor(labels), reduction="none", label_smoothing=eps
    )
    tl.mean().backward()
    loss, probs = gk.kernels.softmax_cross_entropy(logits, labels, label_smoothing=eps)
    grad = gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing=eps)
    assert rel_err(loss, tl.detach().numpy()) < _tol(dtype)
    assert rel_err(grad, t.grad.numpy()) < _tol(dtype)


def test_softmax_cross_entropy_is_stable_and_marks_bad_labels(backend, dtype):
    logits = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4 + 1, -1e4], [0.0, 1.0, 2.0]], dtype=dtype)
    labels = np.array([1, 1, 3])  # the last row's label is out of range
    loss, probs = gk.kernels.softmax_cross_entropy(logits, labels)
    loss, probs = gk.to_numpy(loss), gk.to_numpy(probs)
    assert np.isfinite(probs).all()
    assert loss[0] == pytest.approx(1e4, rel=1e-6)
    want1 = -math.log(math.e / (2 + math.e))
    assert loss[1] == pytest.approx(want1, rel=1e-6)
    assert np.isnan(loss[2])
    grad = gk.to_numpy(gk.kernels.softmax_cross_entropy_backward(probs, labels, np.ones(3, dtype)))
    assert np.isnan(grad[2]).all() and np.isfinite(grad[:2]).all()


# on a GPU of 132 multiprocessors (an H100, an H200, the simulator's): the 32x32 tile, then
# the 64x64 one (256 tiles of 64) and the 128x128 one (169 tiles of 128)
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 7), (130, 70, 129), (1001, 33, 1003),
                                   (1537, 17, 1601)])  # fmt: skip
def test_matmul_tiled_matches_formula(backend, rng, shape):
    m, k, n = shape
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = gk.kernels.matmul_tiled(a, b)
    assert c.dtype == np.float32 and c.shape == (m, n)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < TOL[np.dtype(np.float32)]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_warm_matmul_tiled_raises_what_a_cold_one_raises(backend, xp, rng):
    # planned for the operands' types, dtypes and shapes: other shapes, dtypes and kinds
    # are checked afresh, and a warm call takes any layout of planned shapes
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    xa, xb = xp.asarray(a), xp.asarray(b)
    mm = gk.kernels.matmul_tiled
    same_errors_warm_as_cold(
        [lambda: mm(xa, xb), lambda: mm(xb, xa), lambda: mm(xa[:1], xb)],
        [
            lambda: mm(xa, xa),  # inner dimensions
            lambda: mm(xa[0], xb),  # not 2-D
            lambda: mm(xa, xb[None]),
            lambda: mm(xa.astype(np.float64), xb),  # dtypes
            lambda: mm(xa, xb.astype(np.int32)),
            lambda: mm(None, xb),  # foreign types
            lambda: mm(np.matrix(a), xb),
        ],
    )
    for x, y in [(xa, xb), (xb.T, xa.T), (xa[:, ::-1], xb[::-1])]:  # the planned shapes
        got = gk.to_numpy(mm(x, y))
        want = gk.to_numpy(x).astype(np.float64) @ gk.to_numpy(y).astype(np.float64)
        assert rel_err(got, want) < TOL[np.dtype(np.float32)]


def test_a_warm_matmul_tiled_still_guards_transfers(cupy_backend):
    import cupy

    a, b = cupy.ones((3, 4), np.float32), cupy.ones((4, 3), np.float32)
    with gk.transfer_guard("disallow"):
        same_errors_warm_as_cold(
            [lambda: gk.kernels.matmul_tiled(a, b)],
            [lambda: gk.kernels.matmul_tiled(a, np.ones((4, 3), np.float32))],
        )


def test_matmul_tiled_past_65535_row_blocks(backend, rng):
    # 65,536 blocks of 128 rows and one more: past the 65,535 a grid's y dimension allows
    m = 65_535 * 128 + 1
    a = rng.standard_normal((m, 2)).astype(np.float32)
    b = rng.standard_normal((2, 1)).astype(np.float32)
    c = gk.kernels.matmul_tiled(a, b)
    assert c.shape == (m, 1)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < TOL[np.dtype(np.float32)]


def test_empty_inputs(backend):
    x = np.zeros((0, 4))
    assert gk.kernels.bias_activation(x, np.zeros(4), "gelu").shape == (0, 4)
    gx, gb = gk.kernels.bias_activation_backward(x, x, np.zeros(4), "gelu")
    assert gx.shape == (0, 4) and np.all(gk.to_numpy(gb) == 0)
    loss, probs = gk.kernels.softmax_cross_entropy(np.zeros((0, 3)), np.zeros(0, np.int64))
    assert loss.shape == (0,) and probs.shape == (0, 3)
    assert gk.kernels.matmul_tiled(
        np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)
    ).shape == (2, 3)


F32 = np.ones(3, np.float32)
F64 = np.ones(3)
V, T = ValueError, TypeError


def _own(a):
    """``a`` as an array of the active backend: the arguments a kernel updates in place
    must be (a host array given for one is refused before any other check on cupy)."""
    return gk.xp.asarray(a)


# (kernel, call, exception type, message): a dtype problem is a TypeError, as in every
# numerical front-end; a shape, layout or value problem a ValueError.
BAD_CALLS = [
    ("bias_activation", lambda: gk.kernels.bias_activation(F64, F64, "swish"), V,
     "activation must be one of"),
    ("bias_activation", lambda: gk.kernels.bias_activation(F64.astype(int), F64, "relu"), T,
     "argument 'x' has dtype int64; expected float32 or float64"),
    ("bias_activation", lambda: gk.kernels.bias_activation(F64, np.ones(2), "relu"), V,
     r"bias must have shape \(3,\)"),
    ("bias_activation", lambda: gk.kernels.bias_activation(F64, F32, "relu"), T,
     "bias has dtype float32"),
    ("bias_activation", lambda: gk.kernels.bias_activation(np.float64(1.0), F64, "relu"), V,
     "at least one axis"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F32, F64, F64, "relu"), T,
     "grad_y has dtype float32"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F64, F64, F64, "nope"), V,
     "activation must be one of"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F64, F64, F64, "sigmoid", output=np.ones(2)),
     V, r"output has shape \(2,\) but x has shape \(3,\)"),
    ("bias_activation_backward",  # checked even where it is not used
     lambda: gk.kernels.bias_activation_backward(F64, F64, F64, "gelu", output=np.ones(2)),
     V, r"output has shape \(2,\)"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F64, F64, F64, "tanh", output=F32), T,
     "output has dtype float32 but x has dtype float64"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F64, F64, F64, "relu", output=F64 > 0), T,
     "argument 'output' has dtype bool; expected float32 or float64"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=-1.0), V, "lr must be >= 0"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr="0.1"), T,
     "lr must be a real number"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=float("inf")), V,
     "lr must be finite"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=None), T,
     "lr must be a real number"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=float("nan")), V,
     "lr must be finite"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=1.0, weight_decay=-0.5), V,
     "weight_decay must be >= 0"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=1.0, first_step=1), T,
     "first_step must be a bool"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64.copy(), F64, F64.copy(), lr=1.0,
                                                 momentum=0.9, nesterov="False"), T,
     "nesterov must be a bool"),
    ("sgd_update", lambda: gk.kernels.sgd_update(None, F64, lr=1.0), T,
     "argument 'param' must be an array, got None"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=1.0, momentum=0.9), V,
     "momentum_buffer is required"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64, lr=1.0, nesterov=True), V,
     "Nesterov"),
    ("sgd_update", lambda: gk.kernels.sgd_update(_own(F64), np.ones(4), lr=1.0), V,
     "grad has shape"),
    ("sgd_update", lambda: gk.kernels.sgd_update(_own(np.ones((3, 2)))[:, 0], F64, lr=1.0), V,
     "C-contiguous"),
    ("sgd_update", lambda: gk.kernels.sgd_update(F64, F64.astype(np.float16), lr=1.0), T,
     "argument 'grad' has dtype float16"),
    ("adam_update", lambda: gk.kernels.adam_update(F64, F64, F64, F64, step=0, lr=1.0), V,
     "step must be"),
    ("adam_update", lambda: gk.kernels.adam_update(F64, F64, F64, F64, step=1.5, lr=1.0), T,
     "step must be"),
    ("adam_update",
     lambda: gk.kernels.adam_update(F64, F64, F64, F64, step=1, lr=1, beta2=1.0), V, "beta2"),
    ("adam_update",
     lambda: gk.kernels.adam_update(F64, F64, F64, F64, step=1, lr=1, eps=float("nan")), V,
     "eps must be finite"),
    ("adam_update", lambda: gk.kernels.adam_update(F64, F64, F64, F64, step=True, lr=1), T,
     "step must be"),
    ("adam_update", lambda: gk.kernels.adam_update(F64, None, F64, F64, step=1, lr=1), T,
     "argument 'grad' must be an array, got None"),
    ("adam_update",
     lambda: gk.kernels.adam_update(*map(_own, (F64, F64, F32, F64)), step=1, lr=1.0), T,
     "exp_avg has dtype"),
    ("softmax_cross_entropy",
     lambda: gk.kernels.softmax_cross_entropy(np.ones((2, 3)), np.ones(2)), T,
     "argument 'labels' has dtype float64; expected int8, uint8"),
    ("softmax_cross_entropy",
     lambda: gk.kernels.softmax_cross_entropy(np.ones((2, 3)), np.ones(3, int)), V,
     r"labels must have shape \(2,\)"),
    ("softmax_cross_entropy",
     lambda: gk.kernels.softmax_cross_entropy(F64, np.ones(3, int)), V, r"shape \(n, c\)"),
    ("softmax_cross_entropy",
     lambda: gk.kernels.softmax_cross_entropy(
         np.ones((2, 3)), np.ones(2, int), label_smoothing=2
     ), V, "label_smoothing"),
    ("softmax_cross_entropy_backward",
     lambda: gk.kernels.softmax_cross_entropy_backward(np.ones((2, 3)), np.ones(2, int), F64),
     V, r"grad_loss must have shape \(2,\)"),
    ("softmax_cross_entropy_backward",
     lambda: gk.kernels.softmax_cross_entropy_backward(
         np.ones((2, 3)), np.ones(2, int), np.ones(2, np.float32)
     ), T, "grad_loss has dtype float32 but probs has dtype float64"),
    ("matmul_tiled", lambda: gk.kernels.matmul_tiled(np.ones((2, 2)), np.ones((2, 2))), T,
     "argument 'a' has dtype float64; expected float32"),
    ("matmul_tiled",
     lambda: gk.kernels.matmul_tiled(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)),
     V, "inner dimensions"),
    ("matmul_tiled", lambda: gk.kernels.matmul_tiled(F32, F32), V, "must be 2-D"),
    ("matmul_tiled", lambda: gk.kernels.matmul_tiled(None, F32), T,
     "argument 'a' must be an array, got None"),
    ("bias_activation", lambda: gk.kernels.bias_activation(None, F64), T,
     "argument 'x' must be an array, got None"),
    ("bias_activation_backward",
     lambda: gk.kernels.bias_activation_backward(F64, F64, None, "relu"), T,
     "argument 'bias' must be an array, got None"),
    ("softmax_cross_entropy", lambda: gk.kernels.softmax_cross_entropy(None, None), T,
     "argument 'logits' must be an array, got None"),
    ("softmax_cross_entropy_backward",
     lambda: gk.kernels.softmax_cross_entropy_backward(np.ones((2, 3)), None, F64), T,
     "argument 'labels' must be an array, got None"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "error", "match"), BAD_CALLS)
def test_bad_arguments_raise_with_the_kernel_name(backend, name, call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert type(info.value) is error
    assert str(info.value).startswith(f"gk.kernels.{name}: ")


STRINGS, OBJECTS = np.array(["a", "b", "c"]), np.array([1.0, 2.0, 3.0], dtype=object)
# Each kernel's first array argument replaced by a non-numeric one.
NON_NUMERIC_CALLS = {
    "bias_activation": lambda bad: gk.kernels.bias_activation(bad, F64),
    "bias_activation_backward": lambda bad: gk.kernels.bias_activation_backward(
        bad, F64, F64, "relu"
    ),
    "sgd_update": lambda bad: gk.kernels.sgd_update(bad, F64, lr=0.1),
    "adam_update": lambda bad: gk.kernels.adam_update(bad, F64, F64, F64, step=1, lr=0.1),
    "softmax_cross_entropy": lambda bad: gk.kernels.softmax_cross_entropy(
        bad.reshape(1, 3), np.zeros(1, int)
    ),
    "softmax_cross_entropy_backward": lambda bad: gk.kernels.softmax_cross_entropy_backward(
        bad.reshape(1, 3), np.zeros(1, int), np.ones(1)
    ),
    "matmul_tiled": lambda bad: gk.kernels.matmul_tiled(bad.reshape(1, 3), F32.reshape(3, 1)),
}


def test_every_kernel_has_a_non_numeric_dtype_case():
    assert set(NON_NUMERIC_CALLS) == set(gk.kernels.KERNELS)


@pytest.mark.parametrize("bad", [STRINGS, OBJECTS], ids=["str", "object"])
@pytest.mark.parametrize("name", sorted(NON_NUMERIC_CALLS))
def test_non_numeric_dtypes_raise_typeerror_before_any_backend(backend, name, bad):
    with pytest.raises(TypeError, match=rf"^gk\.kernels\.{name}: argument '\w+' has dtype "):
        NON_NUMERIC_CALLS[name](bad)


def test_in_place_update_refuses_a_copy(fake_device):
    with pytest.raises(
        ValueError,
        match=r"^gk\.kernels\.sgd_update: param is updated in place, so it must be an array "
        r"of the 'fakedevice'",
    ):
        gk.kernels.sgd_update(np.ones(3), np.ones(3), lr=0.1)


def test_kernels_is_lazy_and_compiles_nothing_at_import():
    import subprocess
    import sys

    code = (
        "import sys, gpukit as gk; assert 'gpukit.kernels' not in sys.modules; "
        "gk.kernels.sgd_update; assert 'cupy' not in sys.modules, 'cupy imported'; "
        "assert 'scipy.special' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_sgd_update_makes_no_temporary(rng, dtype):
    import tracemalloc

    n = 1 << 20
    p0 = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    p, buf = p0.copy(), np.zeros(n, dtype)
    strided = np.repeat(g, 2)[::2]  # not contiguous: the ufunc path
    with gk.use_backend("numpy"):
        gk.kernels.sgd_update(p, g, buf, lr=0.1, momentum=0.9, first_step=True)
        tracemalloc.start()
        try:
            gk.kernels.sgd_update(p, g, lr=0.1)
            gk.kernels.sgd_update(p, g, buf, lr=0.1, momentum=0.9, dampening=0.5)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        gk.kernels.sgd_update(p, strided, lr=0.1)
    assert peak < p.nbytes // 8  # no lr * grad array (n elements) was allocated
    b64 = g.astype(np.float64)
    want = p0 - 0.1 * b64 - 0.1 * b64 - 0.1 * (0.9 * b64 + 0.5 * b64) - 0.1 * b64
    assert rel_err(p, want) < _tol(np.dtype(dtype))


def test_warm_updates_refuse_overlap_of_owning_arrays_and_of_views(rng):
    """Arrays that each own their memory are told apart without NumPy's bounds test; after
    warm calls an array passed twice, overlapping views of one buffer and a read-only view
    of the parameter are still refused, naming both arguments, and the refused call changes
    nothing; adjacent views of one buffer are accepted and updated as a float64 reference."""
    p, g, m, v = (rng.standard_normal(8) for _ in range(4))
    v = np.abs(v)
    with gk.use_backend("numpy"):
        for _ in range(3):
            gk.kernels.sgd_update(p, g, lr=0.1)
            gk.kernels.adam_update(p, g, m, v, step=1, lr=0.1)
        before = [a.copy() for a in (p, m, v)]
        flat = np.zeros(16)
        seen = p.view()
        seen.flags.writeable = False
        refused = [
            (lambda: gk.kernels.sgd_update(p, p, lr=0.1), "param and grad"),
            (
                lambda: gk.kernels.sgd_update(p, g, p, lr=0.1, momentum=0.9),
                "param and momentum_buffer",
            ),
            (
                lambda: gk.kernels.sgd_update(flat[:8], flat[4:12], lr=0.1),
                "param and grad",
            ),
            (lambda: gk.kernels.adam_update(p, seen, m, v, step=2, lr=0.1), "param and grad"),
            (lambda: gk.kernels.adam_update(p, g, m, p, step=2, lr=0.1), "param and exp_avg_sq"),
            (lambda: gk.kernels.adam_update(p, g, v, v, step=2, lr=0.1), "exp_avg and exp_avg_sq"),
        ]
        for call, match in refused:
            with pytest.raises(ValueError, match=match + " overlap in memory"):
                call()
        for got, want in zip((p, m, v), before, strict=True):
            assert np.array_equal(got, want)
        flat[:8], flat[8:] = p, g
        gk.kernels.sgd_update(flat[:8], flat[8:], lr=0.25)
    assert rel_err(flat[:8], p.astype(np.float64) - 0.25 * g) < 1e-12


def test_warm_updates_still_refuse_strided_and_read_only_arrays(rng):
    """Contiguity and writeability are read from one flags object per updated array; after
    warm calls (their placement planned) each refusal still fires, naming the argument,
    and the refused call changes nothing."""
    p, g, m, v = (rng.standard_normal(8) for _ in range(4))
    v = np.abs(v)
    with gk.use_backend("numpy"):
        for _ in range(3):
            gk.kernels.sgd_update(p, g, m, lr=0.1, momentum=0.9)
            gk.kernels.adam_update(p, g, m, v, step=1, lr=0.1)
        before = [a.copy() for a in (p, m, v)]
        strided = np.zeros(16)[::2]
        frozen = v.copy()
        frozen.flags.writeable = False
        refused = [
            (lambda: gk.kernels.sgd_update(strided, g, lr=0.1), "param .*C-contiguous"),
            (
                lambda: gk.kernels.sgd_update(p, g, strided, lr=0.1, momentum=0.9),
                "momentum_buffer .*C-contiguous",
            ),
            (
                lambda: gk.kernels.adam_update(p, g, strided, v, step=2, lr=0.1),
                "exp_avg .*C-contiguous",
            ),
            (
                lambda: gk.kernels.adam_update(p, g, m, frozen, step=2, lr=0.1),
                "exp_avg_sq is updated in place but is read-only",
            ),
            (
                lambda: gk.kernels.adam_update(p, g, m, m, step=2, lr=0.1),
                "exp_avg and exp_avg_sq overlap in memory",
            ),
        ]
        for call, match in refused:
            with pytest.raises(ValueError, match=match):
                call()
    for got, want in zip((p, m, v), before, strict=True):
        assert np.array_equal(got, want)


def test_a_warm_kernel_raises_what_a_cold_one_raises(backend, xp):
    # a warm call skips the checks its plan made for these types, dtypes, shapes and
    # options; the checks of values (hyper-parameters, in-place layouts, overlap) stay
    f4 = np.float32
    x, b, gy = xp.ones((4, 8), f4), xp.ones(8, f4), xp.ones((4, 8), f4)
    labels, gl = xp.zeros(4, dtype=np.int64), xp.full(4, 0.25, f4)
    p, g, m, v = (xp.ones(64, f4) for _ in range(4))
    ro = np.ones(64, f4)
    ro.flags.writeable = False
    k = gk.kernels
    warm = [
        lambda: k.bias_activation(x, b, "relu"),
        lambda: k.bias_activation_backward(gy, x, b, "relu"),
        lambda: k.bias_activation_backward(gy, x, b, "relu", output=x),
        lambda: k.softmax_cross_entropy(x, labels),
        lambda: k.softmax_cross_entropy_backward(x, labels, gl),
        lambda: k.sgd_update(p, g, lr=0.0),
        lambda: k.sgd_update(p, g, m, lr=0.0, momentum=0.5),
        lambda: k.adam_update(p, g, m, v, step=1, lr=0.0),
    ]
    failing = [
        lambda: k.bias_activation(x, b, "nope"),  # options
        lambda: k.bias_activation(x, b, ["relu"]),
        lambda: k.bias_activation(x, b, "relu", negative_slope="a"),
        lambda: k.bias_activation(x, xp.ones(4, f4), "relu"),  # shapes, dtypes
        lambda: k.bias_activation(x, xp.ones(8), "relu"),
        lambda: k.bias_activation(xp.ones((4, 8), dtype=np.int32), b, "relu"),
        lambda: k.bias_activation_backward(xp.ones((2, 8), f4), x, b, "relu"),
        lambda: k.bias_activation_backward(gy, x, b, "relu", output=xp.ones((4, 8))),
        lambda: k.bias_activation_backward(gy, x, b, "gelu_x", output=x),
        lambda: k.softmax_cross_entropy(x, labels, label_smoothing=1.5),
        lambda: k.softmax_cross_entropy(x, labels, label_smoothing="a"),
        lambda: k.softmax_cross_entropy(x, xp.zeros(4, f4)),
        lambda: k.softmax_cross_entropy(x[0], labels),
        lambda: k.softmax_cross_entropy_backward(x, labels, xp.ones(4)),
        lambda: k.softmax_cross_entropy_backward(x, labels, gl, label_smoothing=-0.1),
        lambda: k.sgd_update(p, g, lr=-1.0),  # hyper-parameters
        lambda: k.sgd_update(p, g, lr=math.nan),
        lambda: k.sgd_update(p, g, lr=0.0, nesterov=1),
        lambda: k.sgd_update(p, g, lr=0.0, momentum=0.5),
        lambda: k.sgd_update(p, g, m, lr=0.0, momentum=0.5, dampening=0.1, nesterov=True),
        lambda: k.sgd_update(p, p, lr=0.0),  # overlap, layout, writeability
        lambda: k.sgd_update(p, g, p, lr=0.0, momentum=0.5),
        lambda: k.sgd_update(xp.ones(128, f4)[::2], g, lr=0.0),
        lambda: k.sgd_update(ro, np.ones(64, f4), lr=0.0),
        lambda: k.sgd_update(p, xp.ones(63, f4), lr=0.0),
        lambda: k.sgd_update(p.tolist(), g, lr=0.0),
        lambda: k.adam_update(p, g, m, v, step=0, lr=0.0),
        lambda: k.adam_update(p, g, m, v, step=1.0, lr=0.0),
        lambda: k.adam_update(p, g, m, v, step=1, lr=0.0, beta1=1.0),
        lambda: k.adam_update(p, g, m, m, step=1, lr=0.0),
        lambda: k.adam_update(p, g, m, xp.ones(64), step=1, lr=0.0),
        lambda: k.adam_update(
            ro, np.ones(64, f4), np.ones(64, f4), np.ones(64, f4), step=1, lr=0.0
        ),
    ]
    same_errors_warm_as_cold(warm, failing)


def test_updates_take_numbers_of_any_real_type_and_refuse_each_bound_warm(rng):
    """The update kernels test Python floats and bools directly and leave other types to
    the full checks: ints, NumPy scalars and 0-d arrays compute what Python floats do (a
    float64 reference); each hyper-parameter out of range, not finite or not a number
    raises on a warm call what it raises on a cold one, and changes nothing."""
    p0, g, m0 = (rng.standard_normal(16) for _ in range(3))
    v0 = np.abs(rng.standard_normal(16))
    k = gk.kernels

    def sgd_floats(step):
        return {"lr": 0.5, "momentum": 0.75, "dampening": 0.0, "weight_decay": 0.125,
                "nesterov": True, "first_step": step == 1}  # fmt: skip

    def sgd_others(step):
        return {"lr": np.float32(0.5), "momentum": np.array(0.75), "dampening": 0,
                "weight_decay": np.float64(0.125), "nesterov": np.True_,
                "first_step": np.bool_(step == 1)}  # fmt: skip

    def adam_floats(step):
        return {"step": step, "lr": 0.5, "beta1": 0.75, "beta2": 0.875, "eps": 1.0,
                "weight_decay": 0.0, "decoupled": False}  # fmt: skip

    def adam_others(step):
        return {"step": np.int64(step), "lr": np.array(0.5), "beta1": np.float32(0.75),
                "beta2": np.float64(0.875), "eps": 1, "weight_decay": 0,
                "decoupled": np.False_}  # fmt: skip

    # float64 references: SGD with Nesterov momentum and weight decay, Adam
    wp, wq, wm, wv = p0.copy(), p0.copy(), m0.copy(), v0.copy()
    wbuf = None
    for t in (1, 2):
        d = g + 0.125 * wp
        wbuf = d if wbuf is None else 0.75 * wbuf + d
        wp = wp - 0.5 * (d + 0.75 * wbuf)
        wm = 0.75 * wm + 0.25 * g
        wv = 0.875 * wv + 0.125 * g * g
        wq = wq - 0.5 / (1 - 0.75**t) * wm / (np.sqrt(wv / (1 - 0.875**t)) + 1.0)
    with gk.use_backend("numpy"):
        for sgd_kw, adam_kw in ((sgd_floats, adam_floats), (sgd_others, adam_others)):
            p, buf, q, m, v = p0.copy(), np.zeros(16), p0.copy(), m0.copy(), v0.copy()
            for t in (1, 2):  # the second call on the plan the first kept
                k.sgd_update(p, g, buf, **sgd_kw(t))
                k.adam_update(q, g, m, v, **adam_kw(t))
            for got, want in zip((p, buf, q, m, v), (wp, wbuf, wq, wm, wv), strict=True):
                assert rel_err(got, want) < 1e-12
        warm = [
            lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5),
            lambda: k.adam_update(q, g, m, v, step=3, lr=0.0),
        ]
        refused = [  # (what the message names, the call)
            ("momentum", lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=-0.5)),
            ("momentum", lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=math.inf)),
            (
                "dampening",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, dampening=math.nan),
            ),
            ("dampening", lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, dampening=-1.0)),
            (
                "dampening",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, dampening=math.inf),
            ),
            (
                "weight_decay",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, weight_decay=math.inf),
            ),
            (
                "weight_decay",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, weight_decay=-1.0),
            ),
            (
                "weight_decay",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, weight_decay="0"),
            ),
            ("lr", lambda: k.sgd_update(p, g, buf, lr=math.inf, momentum=0.5)),
            ("lr", lambda: k.sgd_update(p, g, buf, lr=True, momentum=0.5)),
            ("first_step", lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, first_step="yes")),
            (
                "Nesterov",
                lambda: k.sgd_update(p, g, buf, lr=0.0, momentum=0.5, dampening=0.5, nesterov=True),
            ),
            ("step", lambda: k.adam_update(q, g, m, v, step=np.int64(0), lr=0.0)),
            ("step", lambda: k.adam_update(q, g, m, v, step=-1, lr=0.0)),
            ("lr", lambda: k.adam_update(q, g, m, v, step=3, lr=-1e-3)),
            ("beta1", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, beta1=-0.1)),
            ("beta1", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, beta1=1.0)),
            ("beta2", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, beta2=math.nan)),
            ("beta2", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, beta2=1.5)),
            ("eps", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, eps=-1e-8)),
            ("eps", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, eps=math.inf)),
            (
                "weight_decay",
                lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, weight_decay=math.nan),
            ),
            ("decoupled", lambda: k.adam_update(q, g, m, v, step=3, lr=0.0, decoupled=0)),
        ]
        failing = [call for _, call in refused]
        for call in warm:
            call(), call()
        before = [a.copy() for a in (p, buf, q, m, v)]
        for name, call in refused:
            with pytest.raises((TypeError, ValueError), match=rf"^gk\.kernels\.\w+: {name}"):
                call()
        for got, want in zip((p, buf, q, m, v), before, strict=True):
            assert np.array_equal(got, want)
        same_errors_warm_as_cold(warm, failing)


def test_a_warm_kernel_takes_any_layout_of_its_arrays(rng):
    # a plan is kept for types, dtypes and shapes: strided, read-only and unaligned
    # arrays of those still compute what a cold call computes, from the arrays given
    from gpukit._runtime import plans

    def unaligned(a):
        raw = np.empty(a.nbytes + 1, np.uint8)[1:].view(a.dtype).reshape(a.shape)
        raw[...] = a
        return raw

    x = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    variants = [np.asfortranarray(x), unaligned(x), x.copy()]
    variants[-1].flags.writeable = False
    k = gk.kernels
    for make in (  # on the host, the only backend whose kernels see these layouts
        lambda a: k.bias_activation(a, b, "leaky_relu", negative_slope=0.2),
        lambda a: k.bias_activation_backward(a, a, b, "silu"),
        lambda a: k.softmax_cross_entropy(a, np.arange(4) % 8),
    ):
        with gk.use_backend("numpy"):
            expected = []
            for a in variants:  # each planned afresh
                plans.forget()
                expected.append(make(a))
            make(x), make(x)  # the plan of a plain C-contiguous array
            results = [make(a) for a in variants]
        for got, want in zip(results, expected, strict=True):
            for u, w in zip(
                *(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True
            ):
                np.testing.assert_array_equal(u, w)


def test_a_warm_kernel_still_guards_transfers(cupy_backend):
    import cupy

    x, b = cupy.ones((4, 8), np.float32), cupy.ones(8, np.float32)
    p, g = cupy.ones(64, np.float32), cupy.ones(64, np.float32)
    with gk.transfer_guard("disallow"):
        same_errors_warm_as_cold(
            [
                lambda: gk.kernels.bias_activation(x, b, "relu"),
                lambda: gk.kernels.sgd_update(p, g, lr=0.0),
            ],
            [
                lambda: gk.kernels.bias_activation(x, np.ones(8, np.float32), "relu"),
                lambda: gk.kernels.sgd_update(p, np.ones(64, np.float32), lr=0.0),
            ],
        )
