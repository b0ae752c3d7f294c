"""gk.matmul (NumPy's OpenBLAS pool) and gk.linalg.solve (SciPy's pool), alone and
alternating: ``python poolwar.py N`` prints the median time of each, in ms."""

import sys
import time

import numpy as np

import gpukit as gk


def median_ms(f, k=200):
    f()
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n))
    a = (x + x.T) / (2 * np.sqrt(n)) + 3 * np.eye(n)
    b = rng.standard_normal((n, 1))
    v = rng.standard_normal((n, n))

    def solve():
        return gk.linalg.solve(a, b, assume_a="pos")

    def matmul():
        return gk.matmul(v, v)

    def both():
        return matmul(), solve()

    s, m, pair = median_ms(solve), median_ms(matmul), median_ms(both)
    print(
        f"n={n}: solve alone {s:.3f} ms, matmul alone {m:.3f} ms, "
        f"alternating pair {pair:.3f} ms (sum of alone {s + m:.3f})"
    )


if __name__ == "__main__":
    main()
