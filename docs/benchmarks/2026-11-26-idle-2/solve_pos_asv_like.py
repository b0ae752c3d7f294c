"""Solve.time_solve_pos('numpy', 256) with its setup before every call, as asv runs it,
alternating NumPy's LAPACK (the default past 64x64) and SciPy's, in one process."""

import sys
import time

import numpy as np

sys.path.insert(0, "/work/main")
import gpukit_numpy.linalg as L
from asv_bench import bench_linalg as B

orig = L._ONE_THREAD
for rep in range(4):
    for label, lim in (("numpy-lib", orig), ("scipy-lib", 10**9)):
        L._ONE_THREAD = lim
        bench = B.Solve()
        ts = []
        for _ in range(60):
            bench.setup("numpy", 256, "float64")  # asv re-runs setup before each sample
            t0 = time.perf_counter()
            bench.time_solve_pos("numpy", 256, "float64")
            ts.append(time.perf_counter() - t0)
        print(rep, label, f"{np.median(ts) * 1e6:.0f} us", flush=True)
