"""gk.matmul against raw NumPy, raw CuPy and PyTorch, with GFLOP/s."""

from __future__ import annotations

import numpy as np

import gpukit as gk

from . import common, peers
from .common import BACKENDS, have, random, sync, use

SIZES = [8, 512, 2048]
DTYPES = ["float32", "float64"]


def _flops(n: int) -> float:
    return 2.0 * n**3


class Matmul:
    """``gk.matmul`` of two n x n matrices (8: per-call overhead; 512, 2048: throughput)."""

    params = (BACKENDS, SIZES, DTYPES)
    param_names = ("backend", "n", "dtype")

    def setup(self, backend, n, dtype):
        self.backend = use(backend)
        self.a = random(self.backend, (n, n), dtype, seed=1)
        self.b = random(self.backend, (n, n), dtype, seed=2)

    def time_gpukit(self, backend, n, dtype):
        gk.matmul(self.a, self.b)
        sync(self.backend)

    def time_raw(self, backend, n, dtype):
        self.backend.xp.matmul(self.a, self.b)
        sync(self.backend)

    def track_gflops(self, backend, n, dtype):
        import time

        repeats = max(1, int(2e8 / _flops(n)))
        gk.matmul(self.a, self.b)
        sync(self.backend)
        t0 = time.perf_counter()
        for _ in range(repeats):
            gk.matmul(self.a, self.b)
        sync(self.backend)
        return _flops(n) * repeats / (time.perf_counter() - t0) / 1e9

    track_gflops.unit = "GFLOP/s"


class MatmulBatched:
    """A batch of 64 matrices of 128 x 128 against one, broadcast."""

    params = (BACKENDS, DTYPES)
    param_names = ("backend", "dtype")

    def setup(self, backend, dtype):
        self.backend = use(backend)
        self.a = random(self.backend, (64, 128, 128), dtype, seed=1)
        self.b = random(self.backend, (128, 128), dtype, seed=2)

    def time_gpukit(self, backend, dtype):
        gk.matmul(self.a, self.b)
        sync(self.backend)


class MatmulTorch:
    """PyTorch CPU peer for the host figures (same sizes and dtypes)."""

    params = (SIZES, DTYPES)
    param_names = ("n", "dtype")

    def setup(self, n, dtype):
        if not have("torch"):
            raise NotImplementedError("torch not installed")
        import torch

        rng = np.random.default_rng(0)
        self.a = torch.from_numpy(rng.standard_normal((n, n)).astype(dtype))
        self.b = torch.from_numpy(rng.standard_normal((n, n)).astype(dtype))
        self.torch = torch

    def time_torch_cpu(self, n, dtype):
        self.torch.matmul(self.a, self.b)


class MatmulSmall:
    """8x8 float32 ``matmul``, gpukit and its peers on one axis (issue 20: per-call cost).

    Nothing but per-call overhead shows at this size; ``MatmulRatio`` measures the ratio
    to the backend's own ``matmul`` fairly.
    """

    params = [common.IMPLS]
    param_names = ["impl"]

    def setup(self, name):
        self.impl = common.impl(name)
        self.a = self.impl.put(common.host_random((8, 8)).astype(np.float32))
        family = self.impl.family
        self.op = gk.matmul if family == "gpukit" else self.impl.xp.matmul

    def time_matmul(self, name):
        self.op(self.a, self.a)
        self.impl.sync()


class MatmulRatio(peers.Comparison):
    """``gk.matmul`` over the backend's own ``matmul`` (NumPy, CuPy), float32, same run.

    Targets on the host: within 1.3x at 8x8, where only per-call overhead shows, and
    within 5% at 512x512, where the BLAS call is all that should show.
    """

    params = [BACKENDS, [8, 512]]
    param_names = ["backend", "n"]

    def setup(self, backend, n):
        self.backend = use(backend)
        a = random(self.backend, (n, n), "float32", seed=1)
        xp_matmul = self.backend.xp.matmul
        self.ours = lambda: gk.matmul(a, a)
        self.peer = lambda: xp_matmul(a, a)

    def track_ratio(self, backend, n):
        return self.ratio(self.ours, self.peer, self.backend.synchronize)

    track_ratio.unit = "ratio"

    def target(self, backend, n):
        return {8: 1.3, 512: 1.05}[n] if backend == "numpy" else None
