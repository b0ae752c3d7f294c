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

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import gpukit as gk
from gpukit._bench.kernels import KERNELS, OPTIMIZERS, pair
from tools.compare.timing import compare, table

TARGET = "<= 1.5"


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
                    ours, peer = pair(torch, kernel, size, dtype)
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
