"""Solve the 2D Poisson equation -Δu = f on the unit square with conjugate gradients.

Zero Dirichlet boundary, 5-point finite differences on an n x n interior grid, so
(1/h²) A u = f with A = gk.sparse.poisson2d(n). The right-hand side is built from a
known solution u = x(1-x) y(1-y) (f = 2[x(1-x) + y(1-y)]), for which the 5-point
stencil is exact, so the script checks its own residual and the error against u.
Runs on whatever backend is active (GPUKIT_BACKEND).

    python examples/poisson_cg.py [n]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import gpukit as gk


def main(n: int = 256) -> None:
    h = 1.0 / (n + 1)
    grid = np.linspace(h, 1.0 - h, n)
    x, y = np.meshgrid(grid, grid, indexing="ij")
    u_true = x * (1 - x) * y * (1 - y)
    f = 2.0 * (x * (1 - x) + y * (1 - y))

    A = gk.sparse.poisson2d(n)  # on the active backend
    b = gk.asarray((h * h * f).ravel())
    backend = gk.get_backend().name

    t0 = time.perf_counter()
    u, info = gk.linalg.cg(A, b, rtol=1e-8)
    gk.synchronize()
    elapsed = time.perf_counter() - t0

    residual = float(gk.linalg.norm(b - A @ u) / gk.linalg.norm(b))
    error = float(np.abs(gk.to_numpy(u) - u_true.ravel()).max())
    print(f"backend {backend}: {n}x{n} grid, CG {info.iterations} iterations in {elapsed:.3f} s")
    print(f"relative residual {residual:.2e}, max error vs exact u {error:.2e}")
    if not (info.converged and residual <= 1e-8 and error < 1e-6):
        sys.exit("poisson_cg: residual or discretisation error too large")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
