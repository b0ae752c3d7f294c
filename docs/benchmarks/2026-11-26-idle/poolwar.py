"""gk.matmul (NumPy's OpenBLAS pool) then gk.linalg.solve (SciPy's pool), alternating."""
import time, sys
import numpy as np, gpukit as gk
rng = np.random.default_rng(0)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
x = rng.standard_normal((n, n)); a = (x + x.T) / (2 * np.sqrt(n)) + 3 * np.eye(n)
b = rng.standard_normal((n, 1)); v = rng.standard_normal((n, n))
def t(f, k=200):
    f(); ts = []
    for _ in range(k):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return np.median(ts) * 1e3
solve = lambda: gk.linalg.solve(a, b, assume_a="pos")
mm = lambda: gk.matmul(v, v)
both = lambda: (mm(), solve())
s, m, bth = t(solve), t(mm), t(both)
print(f"n={n}: solve alone {s:.3f} ms, matmul alone {m:.3f} ms, alternating pair {bth:.3f} ms (sum of alone {s+m:.3f})")
