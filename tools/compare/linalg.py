"""Same-run ratios for gk.linalg on the numpy backend (issue 3's targets).

Run from the repository root: ``python -m tools.compare.linalg``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

import gpukit as gk

from .timing import compare, table


def dense_rows(label: str) -> list:
    rng = np.random.default_rng(0)
    rows = []
    for n in (256, 1000):
        x = rng.standard_normal((n, n))
        a = x @ x.T + n * np.eye(n)
        b = rng.standard_normal((n, 1))
        rows.append(
            (
                f"{label}solve n={n} vs numpy.linalg.solve",
                compare(
                    lambda a=a, b=b: gk.linalg.solve(a, b), lambda a=a, b=b: np.linalg.solve(a, b)
                ),
                "within 5% (ratio <= 1.05)",
            )
        )
        rows.append(
            (
                f"{label}solve pos n={n} vs numpy.linalg.solve",
                compare(
                    lambda a=a, b=b: gk.linalg.solve(a, b, assume_a="pos"),
                    lambda a=a, b=b: np.linalg.solve(a, b),
                ),
                ">= 20% faster (ratio <= 0.80)",
            )
        )
    return rows


def main() -> None:
    """Print the ratios; the dense ones also with BLAS limited to one thread.

    NumPy and SciPy each ship their own OpenBLAS pool; on a small, busy machine the two
    pools' spinning workers distort multi-threaded ratios, so the one-thread rows show
    the algorithmic difference alone.
    """
    from threadpoolctl import threadpool_limits

    gk.set_backend("numpy")
    rng = np.random.default_rng(1)
    rows = dense_rows("")
    with threadpool_limits(1):
        rows += dense_rows("[1 thread] ")
    A = gk.sparse.poisson2d(256)
    rhs = rng.standard_normal(A.shape[0])
    x, info = gk.linalg.cg(A, rhs, rtol=1e-8)
    xs, code = spla.cg(A, rhs, rtol=1e-8)
    print(
        f"cg 256x256 Poisson: gpukit {info.iterations} iterations, residual "
        f"{info.residual_norm:.3e}; scipy info={code}, residual "
        f"{np.linalg.norm(rhs - A @ xs):.3e}; |x - x_scipy|/|x| = "
        f"{np.linalg.norm(x - xs) / np.linalg.norm(xs):.2e}"
    )
    rows.append(
        (
            "cg Poisson 256x256 rtol=1e-8 vs scipy cg",
            compare(
                lambda: gk.linalg.cg(A, rhs, rtol=1e-8),
                lambda: spla.cg(A, rhs, rtol=1e-8),
                repeats=5,
            ),
            "no slower (ratio <= 1.00)",
        )
    )
    print(table(rows))


if __name__ == "__main__":
    main()
