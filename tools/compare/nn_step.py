"""One training step of a 784-256-10 ReLU MLP: gpukit vs PyTorch and vs hand-written NumPy.

A step is forward, cross-entropy loss, backward (no gradient for the network's input:
PyTorch computes none either) and a plain SGD update, on float32 batches of 32, 256 and
2048. PyTorch runs with as many threads as NumPy's BLAS. Same-run ratios, fair timing
(tools/compare/timing.py). On a GPU (cupy backend usable), gpukit on cupy is compared
with PyTorch CUDA when PyTorch sees a GPU.

    python tools/compare/nn_step.py [--threads N]
"""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import gpukit as gk
from tools.compare.timing import compare, table

SIZES = (784, 256, 10)
BATCHES = (32, 256, 2048)
TARGETS = {32: "<= 0.9", 256: "<= 1.0", 2048: "<= 1.25"}
LR = 0.01


def weights(seed: int = 0) -> list[np.ndarray]:
    """Shared initial weights: W1, b1, W2, b2 (PyTorch's layout)."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        bound = 1 / np.sqrt(fan_in)
        out.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        out.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return out


def data(batch: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    return x, rng.integers(0, SIZES[-1], batch)


def gpukit_step(backend: str, x, y):
    with gk.use_backend(backend):
        model = gk.nn.Sequential(
            gk.nn.Linear(SIZES[0], SIZES[1]), gk.nn.ReLU(), gk.nn.Linear(SIZES[1], SIZES[2])
        )
        model.load_state_dict(dict(zip(model.state_dict(), weights(), strict=True)))
        x, y = gk.asarray(x), gk.asarray(y)
    loss_fn = gk.nn.CrossEntropyLoss()
    opt = gk.optim.SGD(model.parameters(), lr=LR)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y)
        model.backward(loss_fn.backward(), need_input_grad=False)
        opt.step()

    return step


def numpy_step(x, y):
    w1, b1, w2, b2 = weights()
    rows = np.arange(len(x))

    def step():
        h = x @ w1.T
        h += b1
        np.maximum(h, 0, out=h)
        o = h @ w2.T
        o += b2
        o -= o.max(axis=1, keepdims=True)
        np.exp(o, out=o)
        o /= o.sum(axis=1, keepdims=True)
        o[rows, y] -= 1  # gradient of the mean cross-entropy, times n
        o *= np.float32(1 / len(x))
        gw2, gb2 = o.T @ h, o.sum(axis=0)
        gh = o @ w2
        gh *= h > 0
        gw1, gb1 = gh.T @ x, gh.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            g *= np.float32(LR)
            p -= g

    return step


def torch_step(torch, x, y, device: str = "cpu"):
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(), torch.nn.Linear(SIZES[1], SIZES[2])
    ).to(device)
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights(), strict=True):
            p.copy_(torch.from_numpy(w))
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    return step


def main() -> None:
    import argparse

    from threadpoolctl import threadpool_info, threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="BLAS and PyTorch threads (default: BLAS's)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    if args.threads:
        threadpool_limits(args.threads, user_api="blas")
    threads = max(
        (i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1
    )
    rows = []
    for batch in BATCHES:
        x, y = data(batch)
        ours = gpukit_step("numpy", x, y)
        rows.append(
            (f"numpy  b={batch:<5} vs hand-written NumPy", compare(ours, numpy_step(x, y)), "")
        )
        if torch is not None:
            torch.set_num_threads(threads)
            peer = torch_step(torch, x, y)
            rows.append(
                (f"numpy  b={batch:<5} vs PyTorch CPU", compare(ours, peer), TARGETS[batch])
            )
            rows.append(
                (f"(hand NumPy b={batch:<5} vs PyTorch CPU)", compare(numpy_step(x, y), peer), "")
            )
    if gk.available_backends()["cupy"].available:
        backend = gk.available_backends()["cupy"]
        with gk.use_backend("cupy") as b:
            sync = b.synchronize
            for batch in BATCHES:
                x, y = data(batch)
                ours = gpukit_step("cupy", x, y)
                if torch is not None and torch.cuda.is_available():
                    peer = torch_step(torch, x, y, "cuda")

                    def both_sync(sync=sync):
                        sync()
                        torch.cuda.synchronize()

                    pair = compare(ours, peer, sync=both_sync)
                    rows.append((f"cupy   b={batch:<5} vs PyTorch CUDA", pair, "<= 1.0"))
        del backend
    print(f"one SGD training step, 784-256-10 ReLU MLP, float32; BLAS threads: {threads}")
    print(table(rows))


if __name__ == "__main__":
    main()
