"""Probe: gk.fft.fft2 on small batched planes against CuPy, host and device time apart."""

import cupy
import cupyx.scipy.fft
from cupyx.profiler import benchmark

import gpukit as gk

for n in (128, 256, 512):
    rng = cupy.random.default_rng(n)
    x = (
        rng.standard_normal((8, n, n), dtype=cupy.float32)
        + 1j * rng.standard_normal((8, n, n), dtype=cupy.float32)
    ).astype(cupy.complex64)
    for name, fn in [
        ("gk.fft.fft2", lambda: gk.fft.fft2(x)),
        ("cupy.fft.fft2", lambda: cupy.fft.fft2(x)),
        ("cupyx.scipy.fft.fft2", lambda: cupyx.scipy.fft.fft2(x)),
    ]:
        r = benchmark(fn, n_repeat=200, n_warmup=20)
        print(
            f"8x{n}x{n} {name:22s} cpu {r.cpu_times.mean() * 1e6:8.1f} us  gpu {r.gpu_times.mean() * 1e6:8.1f} us",
            flush=True,
        )
