"""The benchmark MLP training step, defined once for every harness that times it.

``gpukit bench`` and the asv suite (``asv_bench/bench_nn.py``: ``TrainStep``, and the
same-run ratios of ``TrainStepRatio`` that ``python -m tools.peers`` prints) time one step
-- forward, cross-entropy loss, backward, plain SGD update -- of a 784-256-10 ReLU MLP (or
a deeper GELU or SiLU one) on float32 batches, written three ways: with
gk.nn, by hand in the array library (the bar gk.nn must meet), and with PyTorch. None of
them computes the gradient of the network's input: PyTorch does not when nobody asks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

SIZES = (784, 256, 10)
#: The deeper model of the activation comparisons (GELU, SiLU): two hidden layers.
DEEP = (784, 256, 256, 10)
LR = 0.01

Step = Callable[[], Any]


def weights(seed: int = 0, sizes: tuple[int, ...] = SIZES) -> list[np.ndarray]:
    """Fresh initial weights ``[W1, b1, W2, b2, ...]`` in PyTorch's layout and init bounds."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        bound = 1 / np.sqrt(fan_in)
        out.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        out.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return out


def data(batch: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A host batch: float32 inputs and integer class labels."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    return x, rng.integers(0, SIZES[-1], batch)


def flops(batch: int) -> float:
    """Floating-point operations of one step: the forward GEMMs, both layers' weight
    gradients and the second layer's input gradient (the network's input gradient is not
    computed)."""
    n_in, hidden, n_out = SIZES
    return 2 * batch * (n_in * hidden + hidden * n_out) * 2 + 2 * batch * hidden * n_out


def _layers(nn: Any, act: str, sizes: tuple[int, ...]) -> list[Any]:
    """Linear layers of ``sizes`` with the activation ``act`` (a gk.nn / torch.nn class
    name: "ReLU", "GELU", "SiLU") between them."""
    layers: list[Any] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [nn.Linear(fan_in, fan_out), getattr(nn, act)()]
    return layers[:-1]


def gpukit_step(x: Any, y: Any, act: str = "ReLU", sizes: tuple[int, ...] = SIZES) -> Step:
    """The step with gk.nn and gk.optim, on the active backend (``x``, ``y`` placed there);
    ``act`` and ``sizes`` choose another model than the 784-256-10 ReLU one."""
    import gpukit as gk

    model = gk.nn.Sequential(*_layers(gk.nn, act, sizes))
    model.load_state_dict(dict(zip(model.state_dict(), weights(sizes=sizes), strict=True)))
    return loop_step(model, gk.nn.CrossEntropyLoss(), gk.optim.SGD(model.parameters(), lr=LR), x, y)


def loop_step(model: Any, loss_fn: Any, opt: Any, x: Any, y: Any) -> Step:
    """One training step as docs/nn.rst writes the loop: zero the gradients, the loss,
    backward, the optimizer's step; returns the loss."""

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        model.backward(loss_fn.backward())
        opt.step()
        return loss

    return step


def hand_step(xp: Any, x: Any, y: Any, place: Callable[[np.ndarray], Any]) -> Step:
    """The step a NumPy (or CuPy, ``xp``) user writes by hand, in place where it can be.

    ``place`` puts a host array where ``x`` lives (``np.asarray``, ``cupy.asarray``). The
    loss value is not computed: only its gradient, which is what the update needs.
    """
    w1, b1, w2, b2 = (place(w) for w in weights())
    rows = xp.arange(x.shape[0])
    scale, lr = np.float32(1 / x.shape[0]), np.float32(LR)

    def step():
        h = x @ w1.T
        h += b1
        xp.maximum(h, 0, out=h)
        o = h @ w2.T
        o += b2
        o -= o.max(axis=1, keepdims=True)
        xp.exp(o, out=o)
        o /= o.sum(axis=1, keepdims=True)
        o[rows, y] -= 1  # gradient of the mean cross-entropy, times n
        o *= scale
        gw2, gb2 = o.T @ h, o.sum(axis=0)
        gh = o @ w2
        gh *= h > 0
        gw1, gb1 = gh.T @ x, gh.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            g *= lr
            p -= g

    return step


def torch_step(
    torch: Any,
    x_host: np.ndarray,
    y_host: np.ndarray,
    device: str,
    act: str = "ReLU",
    sizes: tuple[int, ...] = SIZES,
) -> Step:
    """The step with torch.nn and torch.optim on ``device`` ("cpu" or "cuda"); ``act`` and
    ``sizes`` as in :func:`gpukit_step`.

    On CUDA the step ends with a synchronisation, so a timer around it measures the work.
    """
    model = torch.nn.Sequential(*_layers(torch.nn, act, sizes)).to(device)
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights(sizes=sizes), strict=True):
            p.copy_(torch.from_numpy(w))
    x, y = torch.from_numpy(x_host).to(device), torch.from_numpy(y_host).to(device)
    cuda = str(device).startswith("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        return loss

    return step
