"""gk.kernels on the host against PyTorch CPU with the same thread count.

Every host kernel: bias + each activation, forward (``act(x + b)``) and backward (the
input gradient and the bias gradient, against PyTorch's backward from what its autograd
saves), softmax cross-entropy forward and backward, and the SGD-momentum, Adam and AdamW
updates (against ``torch.optim`` with ``fused=True``, its fastest CPU path). Same-run
ratios, interleaved, with an idle pause before each timed block (tools/compare/timing.py);
the target is the issue's: each ratio <= 1.5.

    python tools/compare/kernels.py [--threads N] [--full] [--kernels bias_gelu,adam,...]

Without ``--full`` it prints the issue's rows (float32, 1024x1024, 4M parameters); with
it, float32 and float64 at 64x64 to 4096x4096 and 1M to 16M parameters.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import gpukit as gk
from tools.compare.timing import compare, table

ACTS = ("identity", "relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
OPTIMIZERS = ("sgd_momentum", "adam", "adamw")
KERNELS = (
    *(f"bias_{a}" for a in ACTS),
    *(f"bias_{a}_backward" for a in ACTS),
    "xent",
    "xent_backward",
    *OPTIMIZERS,
)
TARGET = "<= 1.5"


def _torch_act(torch, name: str) -> tuple[Callable, Callable]:
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
    fwd, bwd = _torch_act(torch, act)
    tx, tb, tg = torch.from_numpy(x), torch.from_numpy(b), torch.from_numpy(gy)
    if not kernel.endswith("_backward"):
        return (lambda: gk.kernels.bias_activation(x, b, act), lambda: fwd(tx + tb))
    tz = tx + tb
    ty = fwd(tz)

    def peer():
        gz = bwd(tg, tz, ty)
        return gz, gz.sum(0)

    return (lambda: gk.kernels.bias_activation_backward(gy, x, b, act), peer)


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


def _pair(torch, kernel: str, size: int, dtype) -> tuple[Callable, Callable]:
    if kernel.startswith("bias_"):
        return _pair_bias(torch, kernel, size, dtype)
    if kernel.startswith("xent"):
        return _pair_xent(torch, kernel, size, dtype)
    return _pair_optim(torch, kernel, size, dtype)


def main() -> None:
    import argparse

    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="BLAS and PyTorch threads (default: BLAS's)")
    parser.add_argument("--full", action="store_true", help="every size and both dtypes")
    parser.add_argument("--kernels", help=f"comma-separated subset of {', '.join(KERNELS)}")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved pairs per row")
    args = parser.parse_args()
    kernels = args.kernels.split(",") if args.kernels else list(KERNELS)
    unknown = set(kernels) - set(KERNELS)
    if unknown:
        parser.error(f"unknown kernels {sorted(unknown)}; choose from {', '.join(KERNELS)}")
    if args.threads:
        threadpool_limits(args.threads, user_api="blas")
    threads = max(
        (i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1
    )
    torch.set_num_threads(threads)
    dtypes = (np.float32, np.float64) if args.full else (np.float32,)
    sides = (64, 256, 1024, 4096) if args.full else (1024,)
    params = (1 << 20, 1 << 22, 1 << 24) if args.full else (1 << 22,)
    rows = []
    with gk.use_backend("numpy"):
        for dtype in dtypes:
            for kernel in kernels:
                for size in params if kernel in OPTIMIZERS else sides:
                    ours, peer = _pair(torch, kernel, size, dtype)
                    shape = f"{size >> 20}M" if kernel in OPTIMIZERS else f"{size}x{size}"
                    label = f"{kernel} {np.dtype(dtype).name} {shape}"
                    rows.append((label, compare(ours, peer, repeats=args.repeats), TARGET))
                    print(table(rows[-1:]).splitlines()[1], flush=True)
    print(
        f"\ngk.kernels (numpy backend) vs PyTorch CPU; threads: {threads}; load: {os.getloadavg()}"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
