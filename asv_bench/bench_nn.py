"""gk.nn: one training step of a 784-256-10 ReLU MLP (forward, backward, SGD step).

Beside gpukit, in the same suite: the same step hand-written in the backend's own
namespace (NumPy on the host, CuPy on the GPU) and PyTorch (CPU with the numpy
backend, CUDA with the cupy backend) when importable, with the same weights and data.
"""

from __future__ import annotations

import itertools

import numpy as np

import gpukit as gk

from .common import BACKENDS, have, sync, use

SIZES = (784, 256, 10)
LR = 0.01


def _weights():
    rng = np.random.default_rng(0)
    out = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        bound = 1 / np.sqrt(fan_in)
        out.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        out.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return out


def _gpukit_step(x, y):
    model = gk.nn.Sequential(
        gk.nn.Linear(SIZES[0], SIZES[1]), gk.nn.ReLU(), gk.nn.Linear(SIZES[1], SIZES[2])
    )
    model.load_state_dict(dict(zip(model.state_dict(), _weights(), strict=True)))
    loss_fn = gk.nn.CrossEntropyLoss()
    opt = gk.optim.SGD(model.parameters(), lr=LR)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y)
        model.backward(loss_fn.backward(), need_input_grad=False)
        opt.step()

    return step


def _hand_step(xp, x, y):
    w1, b1, w2, b2 = (gk.asarray(w) for w in _weights())
    rows = xp.arange(x.shape[0])
    scale = np.float32(1 / x.shape[0])

    def step():
        h = x @ w1.T
        h += b1
        xp.maximum(h, 0, out=h)
        o = h @ w2.T
        o += b2
        o -= o.max(axis=1, keepdims=True)
        xp.exp(o, out=o)
        o /= o.sum(axis=1, keepdims=True)
        o[rows, y] -= 1
        o *= scale
        gw2, gb2 = o.T @ h, o.sum(axis=0)
        gh = o @ w2
        gh *= h > 0
        gw1, gb1 = gh.T @ x, gh.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            g *= np.float32(LR)
            p -= g

    return step


def _torch_step(backend, x, y):
    import torch

    device = "cuda" if backend.is_device else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise NotImplementedError("PyTorch sees no GPU")
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(), torch.nn.Linear(SIZES[1], SIZES[2])
    ).to(device)
    with torch.no_grad():
        for p, w in zip(model.parameters(), _weights(), strict=True):
            p.copy_(torch.from_numpy(w))
    xt = torch.from_numpy(gk.to_numpy(x)).to(device)
    yt = torch.from_numpy(gk.to_numpy(y)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()

    return step


class TrainStep:
    """Seconds per training step; ``impl`` gpukit, the hand-written step, or PyTorch."""

    params = (BACKENDS, [32, 256, 2048], ["gpukit", "hand", "torch"])
    param_names = ("backend", "batch", "impl")

    def setup(self, backend, batch, impl):
        self.backend = use(backend)
        if impl == "torch" and not have("torch"):
            raise NotImplementedError("torch is not importable")
        rng = np.random.default_rng(1)
        x = gk.asarray(rng.standard_normal((batch, SIZES[0])).astype(np.float32))
        y = gk.asarray(rng.integers(0, SIZES[-1], batch))
        if impl == "gpukit":
            self.step = _gpukit_step(x, y)
        elif impl == "hand":
            self.step = _hand_step(self.backend.xp, x, y)
        else:
            self.step = _torch_step(self.backend, x, y)
        self.step()
        sync(self.backend)

    def time_step(self, backend, batch, impl):
        self.step()
        sync(self.backend)
