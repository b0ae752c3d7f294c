"""One MLP training step: gpukit vs PyTorch and vs hand-written NumPy.

A step is forward, cross-entropy loss, backward (no gradient for the network's input:
PyTorch computes none either) and a plain SGD update, on float32 batches of 32, 256 and
2048, of a 784-256-10 ReLU MLP and of 784-256-256-10 GELU and SiLU MLPs. PyTorch runs
with as many threads as NumPy's BLAS. Same-run ratios, fair timing
(tools/compare/timing.py). On a GPU (cupy backend usable), gpukit on cupy is compared
with PyTorch CUDA when PyTorch sees a GPU.

    python tools/compare/nn_step.py [--threads N]
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import gpukit as gk
from gpukit._bench import mlp
from tools.compare.timing import compare, table

BATCHES = (32, 256, 2048)
TARGETS = {32: "<= 0.9", 256: "<= 1.0", 2048: "<= 1.25"}
#: The activation models' targets (GELU and SiLU, 784-256-256-10).
DEEP_TARGETS = {32: "<= 1.2", 256: "<= 1.0", 2048: "<= 1.0"}


def gpukit_step(backend: str, x, y, act: str = "ReLU", sizes=mlp.SIZES):
    """The shared benchmark step (gpukit/_bench/mlp.py) with gk.nn on ``backend``."""
    with gk.use_backend(backend):
        return mlp.gpukit_step(gk.asarray(x), gk.asarray(y), act, sizes)


def numpy_step(x, y):
    """The same step hand-written in NumPy."""
    return mlp.hand_step(np, x, y, np.asarray)


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
        x, y = mlp.data(batch)
        ours = gpukit_step("numpy", x, y)
        rows.append(
            (f"numpy  b={batch:<5} vs hand-written NumPy", compare(ours, numpy_step(x, y)), "")
        )
        if torch is not None:
            torch.set_num_threads(threads)
            peer = mlp.torch_step(torch, x, y, "cpu")
            rows.append(
                (f"numpy  b={batch:<5} vs PyTorch CPU", compare(ours, peer), TARGETS[batch])
            )
            rows.append(
                (f"(hand NumPy b={batch:<5} vs PyTorch CPU)", compare(numpy_step(x, y), peer), "")
            )
    if torch is not None:
        for act in ("GELU", "SiLU"):
            for batch in BATCHES:
                x, y = mlp.data(batch)
                ours = gpukit_step("numpy", x, y, act, mlp.DEEP)
                peer = mlp.torch_step(torch, x, y, "cpu", act, mlp.DEEP)
                label = f"numpy  {act} 784-256-256-10 b={batch:<5} vs PyTorch CPU"
                rows.append((label, compare(ours, peer), DEEP_TARGETS[batch]))
    if gk.available_backends()["cupy"].available:
        with gk.use_backend("cupy") as b:
            sync = b.synchronize
            for batch in BATCHES:
                x, y = mlp.data(batch)
                ours = gpukit_step("cupy", x, y)
                if torch is not None and torch.cuda.is_available():
                    peer = mlp.torch_step(torch, x, y, "cuda")

                    def both_sync(sync=sync):
                        sync()
                        torch.cuda.synchronize()

                    pair = compare(ours, peer, sync=both_sync)
                    rows.append((f"cupy   b={batch:<5} vs PyTorch CUDA", pair, "<= 1.0"))
    print(f"one SGD training step, float32; BLAS threads: {threads}; load: {os.getloadavg()}")
    print(table(rows))


if __name__ == "__main__":
    main()
