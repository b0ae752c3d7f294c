"""Probe: matmul_tiled's tile shapes on the MLP step's products (the GEMMs of a graph)."""

import cupy
import numpy as np
from cupyx.profiler import benchmark

from gpukit_cupy.cuda_sources import source

CONFIGS = [
    (64, 64, 8, 4, 4),
    (128, 128, 8, 8, 8),
    (64, 64, 16, 4, 4),
    (64, 64, 32, 4, 4),
    (32, 32, 32, 2, 2),
    (32, 64, 32, 2, 4),
    (32, 32, 16, 2, 2),
    (64, 32, 32, 4, 2),
]
names = [f"matmul_tiled<{bm}, {bn}, {bk}, {tm}, {tn}>" for bm, bn, bk, tm, tn in CONFIGS]
mod = cupy.RawModule(
    code=source("matmul_tiled.cu"), options=("--std=c++17",), name_expressions=names
)
SHAPES = [
    (256, 784, 256),
    (256, 256, 256),
    (256, 256, 10),
    (784, 256, 256),
    (256, 256, 784),
    (256, 10, 256),
    (2048, 784, 256),
    (32, 784, 256),
]
rng = np.random.default_rng(0)
for m, k, n in SHAPES:
    a = cupy.asarray(rng.standard_normal((m, k), dtype=np.float32))
    b = cupy.asarray(rng.standard_normal((k, n), dtype=np.float32))
    ref = cupy.asarray(a.get().astype(np.float64) @ b.get().astype(np.float64))
    row = [f"{m}x{k}x{n}:"]
    t = benchmark(lambda: cupy.matmul(a, b), n_repeat=200, n_warmup=20).gpu_times.mean() * 1e6
    row.append(f"cuBLAS {t:6.1f}")
    for cfg, name in zip(CONFIGS, names, strict=True):
        bm, bn, bk, tm, tn = cfg
        fn = mod.get_function(name)
        c = cupy.empty((m, n), np.float32)
        grid = (-(-n // bn) * -(-m // bm),)

        def call():
            fn(grid, ((bm // tm) * (bn // tn),), (a, b, c, np.int64(m), np.int64(n), np.int64(k)))

        call()
        err = float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref))
        t = benchmark(call, n_repeat=200, n_warmup=20).gpu_times.mean() * 1e6
        row.append(f"{cfg} {t:6.1f}{'' if err < 1e-5 else f' ERR {err:.1e}'}")
    print("  ".join(row), flush=True)
