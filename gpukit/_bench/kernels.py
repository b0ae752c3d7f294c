"""The kernels' peers, defined once for every harness: PyTorch CPU and the unfused expression.

The asv suite (``asv_bench/bench_kernels.py``: ``HostVsTorch`` times, ``HostVsTorchRatio``
same-run ratios, which ``python -m tools.peers`` prints) times the same pairs: bias + each
activation forward (``act(x + b)``) and backward (input and bias gradients, against
PyTorch's backward from what its autograd saves; gpukit is given the same: the forward
output, ``output=``, where PyTorch's backward reads it), softmax cross-entropy forward and
backward, and the SGD-momentum, Adam and AdamW updates (against ``torch.optim`` with
``fused=True``, its fastest CPU path). gk.kernels run on the active backend (the numpy
one for these comparisons). :func:`unfused_bias_gelu` is the expression a NumPy or CuPy
user writes without the fused kernel, which ``gpukit bench`` and the suite's
``MemoryBound`` both time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit as gk

__all__ = ["ACTS", "KERNELS", "OPTIMIZERS", "erf", "pair", "torch_act", "unfused_bias_gelu"]

ACTS = ("identity", "relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
OPTIMIZERS = ("sgd_momentum", "adam", "adamw")
KERNELS = (
    *(f"bias_{a}" for a in ACTS),
    *(f"bias_{a}_backward" for a in ACTS),
    "xent",
    "xent_backward",
    *OPTIMIZERS,
)


#: The activations whose PyTorch backward reads the output autograd saved (``torch_act``).
_READS_OUTPUT = ("relu", "sigmoid", "tanh")


def torch_act(torch, name: str) -> tuple[Callable, Callable]:
    """PyTorch's forward ``act(z)`` and backward ``(grad, z, y) -> grad_z``, the latter
    from the tensor autograd saves (the input, or the output where PyTorch keeps that)."""
    F, aten = torch.nn.functional, torch.ops.aten
    return {
        "identity": (lambda z: z, lambda g, z, y: g),
        "relu": (F.relu, lambda g, z, y: aten.threshold_backward(g, y, 0)),
        "leaky_relu": (
            lambda z: F.leaky_relu(z, 0.01),
            lambda g, z, y: aten.leaky_relu_backward(g, z, 0.01, False),
        ),
        "gelu": (F.gelu, lambda g, z, y: aten.gelu_backward(g, z)),
        "gelu_tanh": (
            lambda z: F.gelu(z, approximate="tanh"),
            lambda g, z, y: aten.gelu_backward(g, z, approximate="tanh"),
        ),
        "silu": (F.silu, lambda g, z, y: aten.silu_backward(g, z)),
        "sigmoid": (torch.sigmoid, lambda g, z, y: aten.sigmoid_backward(g, y)),
        "tanh": (torch.tanh, lambda g, z, y: aten.tanh_backward(g, y)),
    }[name]


def _pair_bias(torch, kernel: str, n: int, dtype) -> tuple[Callable, Callable]:
    rng = np.random.default_rng(0)
    x, gy = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    b = rng.standard_normal(n).astype(dtype)
    act = kernel.removeprefix("bias_").removesuffix("_backward")
    fwd, bwd = torch_act(torch, act)
    tx, tb, tg = torch.from_numpy(x), torch.from_numpy(b), torch.from_numpy(gy)
    if not kernel.endswith("_backward"):
        return (lambda: gk.kernels.bias_activation(x, b, act), lambda: fwd(tx + tb))
    tz = tx + tb
    ty = fwd(tz)

    def peer():
        gz = bwd(tg, tz, ty)
        return gz, gz.sum(0)

    # where PyTorch's backward reads the output it saved, gpukit is given it too
    y = ty.numpy() if act in _READS_OUTPUT else None
    return (lambda: gk.kernels.bias_activation_backward(gy, x, b, act, output=y), peer)


def _pair_xent(torch, kernel: str, n: int, dtype) -> tuple[Callable, Callable]:
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((n, n)) * 4).astype(dtype)
    labels = rng.integers(0, n, n)
    grad_loss = np.full(n, 1.0 / n, dtype)
    t, tl, tgl = torch.from_numpy(logits), torch.from_numpy(labels), torch.from_numpy(grad_loss)
    if kernel == "xent":
        return (
            lambda: gk.kernels.softmax_cross_entropy(logits, labels),
            lambda: torch.nn.functional.cross_entropy(t, tl, reduction="none"),
        )
    probs = gk.kernels.softmax_cross_entropy(logits, labels)[1]
    logp = torch.log_softmax(t, 1)

    def peer():  # cross_entropy's backward: nll_loss's, then log_softmax's
        g = torch.ops.aten.nll_loss_backward(tgl, logp, tl, None, 0, -100, torch.tensor(1.0))
        return torch.ops.aten._log_softmax_backward_data(g, logp, 1, logp.dtype)

    return (lambda: gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss), peer)


def _pair_optim(torch, kernel: str, n: int, dtype) -> tuple[Callable, Callable]:
    rng = np.random.default_rng(0)
    p, g = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    m, v = np.zeros(n, dtype), np.zeros(n, dtype)
    tp = torch.from_numpy(p.copy())
    tp.grad = torch.from_numpy(g)
    if kernel == "sgd_momentum":
        ours = lambda: gk.kernels.sgd_update(p, g, m, lr=1e-3, momentum=0.9)  # noqa: E731
        opt = torch.optim.SGD([tp], lr=1e-3, momentum=0.9, fused=True)
    else:
        step = [0]
        decoupled = kernel == "adamw"

        def ours():
            step[0] += 1
            gk.kernels.adam_update(
                p, g, m, v, step=step[0], lr=1e-3, weight_decay=0.01, decoupled=decoupled
            )

        cls = torch.optim.AdamW if decoupled else torch.optim.Adam
        opt = cls([tp], lr=1e-3, weight_decay=0.01, fused=True)
    return ours, opt.step


def pair(torch: Any, kernel: str, size: int, dtype: Any) -> tuple[Callable, Callable]:
    """``(gpukit, pytorch)``: zero-argument calls of ``kernel`` on fresh host inputs,
    ``size`` x ``size`` (bias kernels, cross-entropy) or ``size`` parameters (updates)."""
    if kernel.startswith("bias_"):
        return _pair_bias(torch, kernel, size, dtype)
    if kernel.startswith("xent"):
        return _pair_xent(torch, kernel, size, dtype)
    return _pair_optim(torch, kernel, size, dtype)


def erf(xp: Any) -> Callable[[Any], Any]:
    """The error function of the array library ``xp`` (SciPy's, or cupyx's for CuPy)."""
    if xp is np:
        from scipy.special import erf as host_erf

        return host_erf
    from cupyx.scipy.special import erf as device_erf

    return device_erf


def unfused_bias_gelu(xp: Any, x: Any, b: Any) -> Any:
    """``gelu(x + b)`` (exact, erf) as array operations of ``xp``, one pass each."""
    z = x + b
    return 0.5 * z * (1 + erf(xp)(z / math.sqrt(2)))
