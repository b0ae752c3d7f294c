"""``gpukit bench``: a quick benchmark of the main operations on every backend and peer.

Each case (matmul, fft2, solve, cg, a fused kernel, an nn training step) runs at a few
sizes on every implementation available here -- gpukit on each backend, and raw
NumPy/SciPy, raw CuPy and PyTorch CPU/CUDA as same-run peers -- and is reported as time,
throughput (GFLOP/s or GB/s) and the fraction of this machine's measured ceilings (a
large copy for GB/s, a large float32 matmul for GFLOP/s, per device). Only NumPy and
SciPy are required; every other library is used when importable. The asv suite in
``asv_bench/`` is the durable history, and its ``track_ratio`` benchmarks the same-run
comparisons with peers; this command is the five-minute answer for a machine without the
repository. Both share what they would otherwise write twice: the implementations
(``runners``), the interleaved timing (``timing``) and the workloads they have in common
(``mlp``, ``kernels``).
"""

from __future__ import annotations

from .run import run

__all__ = ["run"]
