"""``gpukit bench``: a quick benchmark of the main operations on every backend and peer.

Each case (matmul, fft2, solve, cg, a fused kernel, an nn training step) runs at a few
sizes on every implementation available here -- gpukit on each backend, and raw
NumPy/SciPy, raw CuPy and PyTorch CPU/CUDA as same-run peers -- and is reported as time,
throughput (GFLOP/s or GB/s) and the fraction of this machine's measured ceilings (a
large copy for GB/s, a large float32 matmul for GFLOP/s, per device). Only NumPy and
SciPy are required; every other library is used when importable. The asv suite in
``asv_bench/`` is the durable history; this command is the five-minute answer.
"""

from __future__ import annotations

from .run import run

__all__ = ["run"]
