"""Solve the 2D Poisson equation -Δu = f with conjugate gradients on Dask.

The problem of examples/poisson_cg.py, distributed: zero Dirichlet boundary, 5-point
finite differences on an n x n interior grid, so A u = h² f with A the 5-point
stencil (the matrix of gk.sparse.poisson2d). A is never built: it is a stencil applied chunk
by chunk (``map_overlap`` exchanges one grid row with each neighbouring chunk), and the
vectors are Dask arrays chunked by whole grid rows, so the n² unknowns are spread over
the workers (the dense matrix would hold n⁴ numbers: 34 GB at the default n = 256).

It runs on ``gk.distributed.client()``: the cluster at GPUKIT_DASK_SCHEDULER when that
is set, otherwise an in-process cluster on this machine. The exact solution
u = x(1-x) y(1-y) makes the stencil exact, so the script checks itself.

    python examples/dask_poisson.py [n] [--rows ROWS] [--save FILE.npy]
"""

from __future__ import annotations

import argparse
import time

import dask.array as da
import numpy as np

import gpukit as gk


def _stencil_rows(u: np.ndarray) -> np.ndarray:
    """The 5-point stencil on a block of grid rows with one halo row above and below."""
    out = 4 * u
    out[1:] -= u[:-1]
    out[:-1] -= u[1:]
    out[:, 1:] -= u[:, :-1]
    out[:, :-1] -= u[:, 1:]
    return out


def laplacian(n: int):
    """``v -> A v`` for a Dask vector of n*n unknowns chunked by whole grid rows."""

    def apply(v):
        grid = v.reshape(n, n)  # chunks of whole rows: no data moves
        out = grid.map_overlap(_stencil_rows, depth={0: 1, 1: 0}, boundary=0, meta=grid._meta)
        return out.reshape(n * n)

    return apply


def main(n: int = 256, rows: int = 32, save: str | None = None) -> float:
    client = gk.distributed.client()
    print(f"Dask: {client}")
    h = 1.0 / (n + 1)
    grid = da.linspace(h, 1.0 - h, n, chunks=n)
    x = grid[:, None].rechunk((rows, n))
    y = grid[None, :]
    u_true = x * (1 - x) * y * (1 - y)
    # Persisted: computed once on the workers, used by the solve and the check below.
    b = (h * h * 2.0 * (x * (1 - x) + y * (1 - y))).reshape(n * n).persist()

    A = laplacian(n)
    t0 = time.perf_counter()
    u, info = gk.linalg.cg(A, b, rtol=1e-8)
    elapsed = time.perf_counter() - t0

    residual = da.linalg.norm(b - A(u)) / da.linalg.norm(b)
    error = abs(u - u_true.reshape(n * n)).max()
    residual, error, values = da.compute(residual, error, u)
    print(
        f"{n}x{n} grid ({n * n} unknowns, {len(b.chunks[0])} chunks): CG {info.iterations} "
        f"iterations in {elapsed:.2f} s"
    )
    print(
        f"relative residual {float(residual):.2e}, max error vs exact solution {float(error):.2e}"
    )
    if save:
        np.save(save, gk.to_numpy(values))
    gk.distributed.close()
    return float(error)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=256, help="grid points per side")
    parser.add_argument("--rows", type=int, default=32, help="grid rows per chunk")
    parser.add_argument("--save", help="write the solution to this .npy file")
    args = parser.parse_args()
    main(args.n, args.rows, args.save)
