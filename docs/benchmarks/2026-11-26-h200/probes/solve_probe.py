"""Probe: gk.linalg.solve's rcond on a GPU, exact (one n-RHS solve) against the estimate."""

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gpukit as gk
import gpukit_cupy.linalg as cl

for dtype in (np.float64, np.float32):
    for n in (4, 64, 256, 1000, 2048, 4096):
        rng = np.random.default_rng(n)
        m = rng.standard_normal((n, n))
        a = cupy.asarray((m + n * np.eye(n)).astype(dtype))
        spd = cupy.asarray((m @ m.T / n + np.eye(n)).astype(dtype))
        b = cupy.asarray(rng.standard_normal(n).astype(dtype))
        reps = 200 if n <= 256 else (40 if n <= 2048 else 10)
        row = {}
        for assume_a, mat in (("gen", a), ("pos", spd)):
            for mode, limit in (("exact", 10**9), ("estimate", 0)):
                cl.EXACT_RCOND_MAX = limit
                r = benchmark(
                    lambda: gk.linalg.solve(mat, b, assume_a=assume_a), n_repeat=reps, n_warmup=3
                )
                row[f"{assume_a}-{mode}"] = r.gpu_times.mean() * 1e6
            peer = (lambda: cupy.linalg.solve(mat, b)) if assume_a == "gen" else None
            if peer:
                row["gen-cupy"] = benchmark(peer, n_repeat=reps, n_warmup=3).gpu_times.mean() * 1e6
        print(
            f"{np.dtype(dtype).name} n={n:5d} "
            + "  ".join(f"{k} {v:9.1f}" for k, v in row.items()),
            flush=True,
        )
