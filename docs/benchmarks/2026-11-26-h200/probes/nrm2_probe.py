"""Probe: cupyx.scipy.fft's host cost by how axes are given; cuBLAS nrm2's range and specials."""

import cupy
import cupy.cublas
import numpy as np
import scipy.linalg.blas as sb
from cupyx.profiler import benchmark

import gpukit as gk

cases = {
    "huge f32": np.full(1024, 1e30, np.float32),
    "tiny f32": np.full(1024, 1e-30, np.float32),
    "subnormal f32": np.full(1024, 1e-40, np.float32),
    "huge f64": np.full(1024, 1e200),
    "tiny f64": np.full(1024, 1e-200),
    "subnormal f64": np.full(1024, 1e-310),
    "inf": np.r_[np.ones(10), np.inf],
    "-inf": np.r_[np.ones(10), -np.inf],
    "nan": np.r_[np.ones(10), np.nan],
    "inf,nan": np.r_[np.inf, np.nan, 1.0],
    "nan,inf": np.r_[np.nan, np.inf, 1.0],
    "zeros": np.zeros(16),
    "mixed": np.r_[1e300, 1e-300, 3.0],
    "c64 huge": np.full(64, 1e30 + 1e30j, np.complex64),
    "c128 inf": np.r_[1 + 1j, complex(np.inf, 0)],
}
for name, h in cases.items():
    d = cupy.cublas.nrm2(cupy.asarray(h))
    host = {"f": sb.snrm2, "d": sb.dnrm2, "F": sb.scnrm2, "D": sb.dznrm2}[h.dtype.char](h)
    print(
        f"nrm2 {name:14s} cublas {float(d)!r:24s} scipy {float(host)!r:24s} type {type(d).__name__} {d.dtype} shape {d.shape}",
        flush=True,
    )
v = cupy.asarray(np.random.default_rng(1).standard_normal(1024))
for name, fn in [
    ("cupy.cublas.nrm2", lambda: cupy.cublas.nrm2(v)),
    ("cupy.linalg.norm", lambda: cupy.linalg.norm(v)),
    ("gk.linalg.norm", lambda: gk.linalg.norm(v)),
]:
    r = benchmark(fn, n_repeat=300, n_warmup=30)
    print(
        f"{name:18s} cpu {r.cpu_times.mean() * 1e6:7.1f} us  gpu {r.gpu_times.mean() * 1e6:7.1f} us",
        flush=True,
    )
