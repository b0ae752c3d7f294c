"""Probe: where gk.linalg's time goes on a real GPU (cProfile, 300 warm calls each)."""

import cProfile
import io
import pstats

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gpukit as gk

rng = np.random.default_rng(1)
m = rng.standard_normal((4, 4))
a = cupy.asarray(m @ m.T + 4 * np.eye(4))
b = cupy.asarray(rng.standard_normal(4))
v = cupy.asarray(rng.standard_normal(1024))
x = cupy.asarray(rng.standard_normal((4, 4)))
calls = {
    "isfinite.all sync": lambda: bool(cupy.isfinite(a).all()),
    "cupy.linalg.solve": lambda: cupy.linalg.solve(a, b),
    "gk.linalg.solve": lambda: gk.linalg.solve(a, b),
    "gk.linalg.inv": lambda: gk.linalg.inv(a),
    "gk.linalg.cholesky": lambda: gk.linalg.cholesky(a),
    "gk.linalg.eigh": lambda: gk.linalg.eigh(a),
    "gk.linalg.norm": lambda: gk.linalg.norm(v),
    "cupy.linalg.norm": lambda: cupy.linalg.norm(v),
    "gk.matmul": lambda: gk.matmul(x, x),
    "cupy.matmul": lambda: cupy.matmul(x, x),
}
for name, fn in calls.items():
    r = benchmark(fn, n_repeat=300, n_warmup=30)
    print(
        f"{name:22s} cpu {r.cpu_times.mean() * 1e6:8.1f} us  gpu {r.gpu_times.mean() * 1e6:8.1f} us",
        flush=True,
    )
for name in ("gk.linalg.solve", "gk.linalg.cholesky", "gk.linalg.norm", "gk.matmul"):
    fn = calls[name]
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        fn()
    cupy.cuda.Device().synchronize()
    pr.disable()
    for key in ("tottime", "cumtime"):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(20)
        print(f"==== {name} by {key}\n" + "\n".join(s.getvalue().splitlines()[4:30]), flush=True)
