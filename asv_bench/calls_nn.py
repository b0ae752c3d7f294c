"""The ``gk.nn`` rows of the per-call comparison (``calls.py``): each layer's and loss's
forward and backward pass on 4x8 float32, on NumPy or on CuPy arrays, against the calls
of the array library the layer makes, so the difference is gpukit's own cost.

On the host the peers are the NumPy/SciPy code computing the same (the layers run
compiled host passes or those ufuncs). On a device the peers of the activation layers
launch the layer's own kernel (``gpukit_cupy.kernels._elementwise``: the very objects
gpukit calls) and that of ``CrossEntropyLoss`` its compiled training kernel; the other
layers are CuPy ufuncs and reductions, the same calls as on the host.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit as gk

Row = tuple[str, Callable[[], object], Callable[[], object]]

#: The activation layers of the rows, with the name of their kernel and their slope.
ACTIVATIONS = {
    "ReLU": ("relu", 0.0),
    "LeakyReLU": ("leaky_relu", 0.01),
    "Sigmoid": ("sigmoid", 0.0),
    "Tanh": ("tanh", 0.0),
    "SiLU": ("silu", 0.0),
    "GELU": ("gelu", 0.0),
}


def layer_rows(xp: Any, rng: Any) -> list[Row]:
    """The forward passes of ``gk.nn``'s layers and losses."""
    host = xp is np
    f = np.float32
    x = xp.asarray(rng.standard_normal((4, 8)).astype(f))
    t = xp.asarray(rng.random((4, 8)).astype(f))
    labels = xp.asarray(rng.integers(0, 8, 4))
    draw = xp.random.default_rng(0)
    linear = gk.nn.Linear(8, 8, seed=0)
    norm = gk.nn.LayerNorm(8)
    w, lb, nw, nb = linear.weight.data, linear.bias.data, norm.weight.data, norm.bias.data
    dropout = gk.nn.Dropout(0.5, seed=0)
    peers = _activation_peers(xp, x) if host else _activation_kernels(x)
    out: list[Row] = [
        (f"nn.{name} forward 4x8", functools.partial(getattr(gk.nn, name)(), x), peers[name])
        for name in ACTIVATIONS
    ]

    def linear_peer() -> object:
        y = x @ w.T
        y += lb
        return y

    # each peer makes the calls the layer makes (LayerNorm: the corrected two-pass
    # variance, and on the host the finite check of its overflow rescue)
    def softmax() -> object:
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        return e

    def layer_norm() -> object:
        xc = x - x.mean(axis=-1, keepdims=True)
        xc -= xc.mean(axis=-1, keepdims=True)
        var = (xc * xc).mean(axis=-1, keepdims=True)
        rstd = 1 / xp.sqrt(var + f(1e-5))
        if host:
            np.isfinite(var).all()
        y = xc * rstd * nw
        y += nb
        return y

    def dropout_peer() -> object:
        mask = (draw.random(x.shape, dtype=f) >= 0.5).astype(f)
        mask *= f(2)
        return x * mask

    def mse_peer() -> object:
        d = x - t
        return (d * d).sum() / d.size

    def bce() -> object:
        per = xp.maximum(x, 0) - x * t + xp.log1p(xp.exp(-xp.abs(x)))
        return per.sum() / per.size

    mse, xent, bce_loss = gk.nn.MSELoss(), gk.nn.CrossEntropyLoss(), gk.nn.BCEWithLogitsLoss()
    soft = gk.nn.Softmax()
    return [
        *out,
        ("nn.Linear 4x8 forward", lambda: linear(x), linear_peer),
        ("nn.Softmax forward 4x8", lambda: soft(x), softmax),
        ("nn.LayerNorm forward 4x8", lambda: norm(x), layer_norm),
        ("nn.Dropout forward 4x8, training", lambda: dropout(x), dropout_peer),
        ("nn.MSELoss 4x8", lambda: mse(x, t), mse_peer),
        ("nn.CrossEntropyLoss 4x8", lambda: xent(x, labels), _xent_peer(xp, x, labels)),
        ("nn.BCEWithLogitsLoss 4x8", lambda: bce_loss(x, t), bce),
    ]


def backward_rows(xp: Any, rng: Any) -> list[Row]:
    """The backward passes of ``gk.nn``'s layers and losses, each after one forward pass,
    against the code computing the same gradients from what the forward pass kept (a
    parameter's gradient added to the one it holds)."""
    host = xp is np
    f = np.float32
    x = xp.asarray(rng.standard_normal((4, 8)).astype(f))
    g = xp.asarray(rng.standard_normal((4, 8)).astype(f))
    t = xp.asarray(rng.random((4, 8)).astype(f))
    labels = xp.asarray(rng.integers(0, 8, 4))
    linear = gk.nn.Linear(8, 8, seed=0)
    norm = gk.nn.LayerNorm(8)
    dropout = gk.nn.Dropout(0.5, seed=0)
    softmax = gk.nn.Softmax()
    acts = {name: getattr(gk.nn, name)() for name in ACTIVATIONS}
    outputs = {name: layer(x) for name, layer in acts.items()}
    soft = softmax(x)
    norm(x), linear(x)
    mask = dropout(x) / x  # the scaled mask the layer kept (x has no zeros)
    mse, xent, bce = gk.nn.MSELoss(), gk.nn.CrossEntropyLoss(), gk.nn.BCEWithLogitsLoss()
    mse(x, t), xent(x, labels), bce(x, t)
    w, gw, gb = linear.weight.data, xp.zeros((8, 8), f), xp.zeros(8, f)
    nw, ngw, ngb = norm.weight.data, xp.zeros(8, f), xp.zeros(8, f)
    xc = x - x.mean(axis=-1, keepdims=True)
    rstd = 1 / xp.sqrt((xc * xc).mean(axis=-1, keepdims=True) + f(1e-5))
    xhat = xc * rstd
    diff = x - t
    peers = _activation_gradients(g, x, outputs) if host else _activation_kernels(x, g)

    # the parameters' gradients are added once the pass has computed everything (a
    # failed pass adds none), as the layers do
    def linear_peer() -> object:
        dw, db, gx = g.T @ x, g.sum(axis=0), g @ w
        gw.__iadd__(dw)
        gb.__iadd__(db)
        return gx

    def softmax_peer() -> object:
        r = g - (g * soft).sum(axis=-1, keepdims=True)
        r *= soft
        return r

    def layer_norm() -> object:
        dw, db = (g * xhat).sum(axis=0), g.sum(axis=0)
        gn = g * nw
        gx = gn - gn.mean(axis=-1, keepdims=True)
        gx -= xhat * (gn * xhat).mean(axis=-1, keepdims=True)
        gx *= rstd
        ngw.__iadd__(dw)
        ngb.__iadd__(db)
        return gx

    def bce_peer() -> object:
        half = f(0.5)
        r = half + half * xp.tanh(half * x) - t
        r *= f(1 / 32)
        return r

    return [
        ("nn.Linear 4x8 backward", lambda: linear.backward(g), linear_peer),
        *[
            (f"nn.{name} backward 4x8", functools.partial(layer.backward, g), peers[name])
            for name, layer in acts.items()
        ],
        ("nn.Softmax backward 4x8", lambda: softmax.backward(g), softmax_peer),
        ("nn.LayerNorm backward 4x8", lambda: norm.backward(g), layer_norm),
        ("nn.Dropout backward 4x8, training", lambda: dropout.backward(g), lambda: g * mask),
        ("nn.MSELoss backward 4x8", mse.backward, lambda: diff * f(2 / 32)),
        (
            "nn.CrossEntropyLoss backward 4x8",
            xent.backward,
            _xent_backward_peer(xp, x, labels),
        ),
        ("nn.BCEWithLogitsLoss backward 4x8", bce.backward, bce_peer),
    ]


def _activation_peers(xp: Any, x: Any) -> dict[str, Callable[[], object]]:
    """The NumPy/SciPy formula of each activation on ``x``."""
    from scipy.special import erfc

    f = np.float32
    return {
        "ReLU": lambda: np.maximum(x, f(0)),
        "LeakyReLU": lambda: np.where(x > 0, x, f(0.01) * x),
        "Sigmoid": lambda: 1 / (1 + np.exp(-x)),
        "Tanh": lambda: np.tanh(x),
        "SiLU": lambda: x / (1 + np.exp(-x)),
        "GELU": lambda: x * erfc(x * f(-(0.5**0.5))) * f(0.5),
    }


def _activation_gradients(
    g: np.ndarray, x: np.ndarray, outputs: dict[str, Any]
) -> dict[str, Callable[[], object]]:
    """The NumPy/SciPy formula of each activation's input gradient, from what its layer
    kept (the output of those whose derivative is written with it)."""
    from scipy.special import erfc

    f = np.float32
    sig, tanh = np.asarray(outputs["Sigmoid"]), np.asarray(outputs["Tanh"])

    def silu() -> object:
        s = 1 / (1 + np.exp(-x))
        return g * s * (1 + x * (1 - s))

    def gelu() -> object:
        cdf = f(0.5) * erfc(x * f(-(0.5**0.5)))
        return g * (cdf + x * np.exp(x * x * f(-0.5)) * f((2 * np.pi) ** -0.5))

    return {
        "ReLU": lambda: g * (x > 0),
        "LeakyReLU": lambda: np.where(x > 0, g, f(0.01) * g),
        "Sigmoid": lambda: g * sig * (1 - sig),
        "Tanh": lambda: g * (1 - tanh * tanh),
        "SiLU": silu,
        "GELU": gelu,
    }


def _activation_kernels(x: Any, g: Any = None) -> dict[str, Callable[[], object]]:
    """Each activation layer's kernel on the device array ``x``: the forward one, or
    with ``g`` the gradient one (from the input, which a device layer keeps)."""
    from gpukit_cupy.kernels import _elementwise as ew

    out = {}
    for name, (kernel, slope) in ACTIVATIONS.items():
        s = np.float32(slope)
        if g is None:
            out[name] = functools.partial(ew.act_forward(kernel), x, s)
        else:
            out[name] = functools.partial(ew.act_backward(kernel, False), g, x, s)
    return out


def _xent_peer(xp: Any, x: Any, labels: Any) -> Callable[[], object]:
    """``CrossEntropyLoss``'s forward pass: on the host the NumPy formula; on a device the
    training kernel gpukit launches (the loss, the row losses and the gradient in one
    launch, a label out of range flagged in a status buffer), launched directly."""
    if xp is np:

        def numpy_xent() -> object:
            shifted = x - x.max(axis=1, keepdims=True)
            logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            return -logp[np.arange(4), labels].mean()

        return numpy_xent
    launch = _xent_kernel(xp, x, labels)

    def device_xent() -> object:
        f32 = np.float32  # allocated in the launcher's order
        loss, grad, rows = xp.empty((), f32), xp.empty((4, 8), f32), xp.empty(4, f32)
        launch(loss, grad, rows)
        return loss

    return device_xent


def _xent_kernel(xp: Any, x: Any, labels: Any) -> Callable[[Any, Any, Any], None]:
    """The launch of ``CrossEntropyLoss``'s training kernel on ``x`` and ``labels`` (4x8
    float32, int64) into ``loss``, ``grad`` and the row losses ``rows``."""
    from gpukit_cupy.kernels._launch import BLOCK, function

    f32, i64 = np.float32, np.int64
    kernel = function("softmax_xent.cu", "softmax_xent_train<float, long long>")
    ticket, status = xp.zeros(1, np.uint32), xp.zeros(8, i64)

    def launch(loss: Any, grad: Any, rows: Any) -> None:
        args = (x, labels, rows, grad, loss, i64(4), i64(8), f32(0.0), f32(0.25), i64(4))
        kernel((4,), (BLOCK,), (*args, status, i64(0), ticket))

    return launch


def _xent_backward_peer(xp: Any, x: Any, labels: Any) -> Callable[[], object]:
    """``CrossEntropyLoss``'s backward pass: on the host from the probabilities; on a device
    the forward kernel wrote the gradient, which a second call copies."""
    f = np.float32
    if xp is not np:
        grad = xp.empty((4, 8), f)
        _xent_kernel(xp, x, labels)(xp.empty((), f), grad, xp.empty(4, f))
        return grad.copy
    e = np.exp(x - x.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    rows = np.arange(4)

    def numpy_xent() -> object:
        r = probs.copy()
        r[rows, labels] -= f(1)
        r *= f(0.25)
        return r

    return numpy_xent
