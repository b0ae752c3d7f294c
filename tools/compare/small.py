"""Issue 20's four figures in one command: gpukit against its peer on small problems.

    python -m tools.compare.small [--threads N]

Rows (ratio = gpukit seconds / peer seconds, same run, tools/compare/timing.py: both
sides interleaved, an idle pause before each side's block so the other's BLAS threads
stop spinning, median of per-pair ratios):

* ``gk.matmul`` 8x8 float32 / ``numpy.matmul`` (target <= 1.3);
* ``gk.linalg.cg`` / ``scipy.sparse.linalg.cg`` on the 5-point Poisson operator of a
  256x256 grid, rtol 1e-8, both running the same iterations (target <= 0.8); for
  information, the same on that operator with its unknowns renumbered at random, which has
  no band for gpukit's diagonal storage (docs/linalg.rst);
* one training step of a 784-256-10 ReLU MLP written as users write it (model, loss,
  ``backward``, ``optimizer.step``) / the same step in PyTorch CPU, at batch 32, 256 and
  2048 (targets <= 0.8, <= 0.9, <= 1.0); skipped when PyTorch is not importable.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import scipy.sparse.linalg as spla

import gpukit as gk
from gpukit._bench import mlp

from .timing import compare, table

NN_TARGETS = {32: "<= 0.8", 256: "<= 0.9", 2048: "<= 1.0"}
# Interleaved pairs per row: this 2-core VM drifts between speed states within a run (a
# step taking 0.24 or 0.35 ms), which moved a 7-pair median by 0.1; the median of more
# pairs is the same estimate with less spread. cg's pairs are whole solves (~0.2 s).
PAIRS = 15


def matmul_row() -> tuple:
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    pair = compare(lambda: gk.matmul(a, a), lambda: np.matmul(a, a), repeats=PAIRS)
    return "matmul 8x8 float32 vs numpy.matmul", pair, "<= 1.3"


def cg_row(renumbered: bool = False) -> tuple:
    A = gk.sparse.poisson2d(256)
    if renumbered:  # the same operator without its band: gpukit keeps the CSR product
        order = np.random.default_rng(2).permutation(A.shape[0])
        A = A[order][:, order].tocsr()
        A.sort_indices()
    rhs = np.random.default_rng(1).standard_normal(A.shape[0])
    _, info = gk.linalg.cg(A, rhs, rtol=1e-8)
    iterations = []
    spla.cg(A, rhs, rtol=1e-8, callback=lambda xk: iterations.append(1))
    if info.iterations != len(iterations):
        raise RuntimeError(f"iterations differ: gpukit {info.iterations}, scipy {len(iterations)}")
    pair = compare(
        lambda: gk.linalg.cg(A, rhs, rtol=1e-8), lambda: spla.cg(A, rhs, rtol=1e-8), repeats=9
    )
    if renumbered:
        return f"cg renumbered, no band ({info.iterations} it)", pair, "(information)"
    return f"cg Poisson 256x256 ({info.iterations} it) vs scipy cg", pair, "<= 0.8"


def nn_rows(torch) -> list[tuple]:
    rows = []
    for batch in (32, 256, 2048):
        x, y = mlp.data(batch)
        ours = mlp.gpukit_step(x, y)
        peer = mlp.torch_step(torch, x, y, "cpu")
        pair = compare(ours, peer, repeats=PAIRS)
        rows.append((f"MLP step b={batch} vs PyTorch CPU", pair, NN_TARGETS[batch]))
    return rows


def main() -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="BLAS and PyTorch threads (default: BLAS's)")
    args = parser.parse_args()
    if args.threads:
        threadpool_limits(args.threads, user_api="blas")
    threads = max(
        (i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1
    )
    gk.set_backend("numpy")
    rows = [matmul_row(), cg_row(), cg_row(renumbered=True)]
    try:
        import torch
    except ImportError:
        print("PyTorch is not importable: the MLP rows are skipped")
    else:
        torch.set_num_threads(threads)
        rows += nn_rows(torch)
    print(f"issue 20: small problems, numpy backend; BLAS and PyTorch threads: {threads}")
    # the kernels each BLAS copy runs (an OPENBLAS_CORETYPE in the environment picks them)
    kernels = sorted(
        f"{os.path.basename(i['filepath'])} {i.get('architecture')}"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    )
    print(f"BLAS: {', '.join(kernels)}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}")
    print(table(rows))


if __name__ == "__main__":
    main()
