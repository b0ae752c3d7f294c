"""gk.elementwise / gk.reduction against the same expression in array operations.

Each user kernel (``impl="kernel"``) is timed beside the expression it is written from,
as array operations of the backend's own namespace (``impl="array_ops"``: NumPy on the
host, CuPy on the GPU, one pass over memory per operation). ``track_gbps`` reports the
bytes the fused kernel must move at least (inputs read once, output written once) over
the time, for both, so the two figures compare directly. CuPy skips without a GPU
(``NotImplementedError`` in ``setup``).
"""

from __future__ import annotations

import statistics
import time
from typing import ClassVar

import gpukit as gk

from .common import BACKENDS, random, sync, use


@gk.elementwise
def softplus(x):
    return log1p(exp(-abs(x))) + maximum(x, 0.0)  # noqa: F821 (the kernel language's names)


@gk.elementwise
def mish_grad(x, g):
    sp = log1p(exp(-abs(x))) + maximum(x, 0.0)  # noqa: F821
    t = tanh(sp)  # noqa: F821
    return g * (t + x * (1.0 - t * t) / (1.0 + exp(-x)))  # noqa: F821


@gk.reduction
def weighted_norm(x, w):
    return sqrt(sum(w * x * x))  # noqa: F821


def _softplus_ops(xp, x, g, w):
    return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0)


def _mish_grad_ops(xp, x, g, w):
    sp = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0)
    t = xp.tanh(sp)
    return g * (t + x * (1 - t * t) / (1 + xp.exp(-x)))


def _weighted_norm_ops(xp, x, g, w):
    return xp.sqrt(xp.sum(w * x * x))


#: name -> (the kernel's call, the array operations, arrays read, arrays written)
CASES = {
    "softplus": (lambda x, g, w: softplus(x), _softplus_ops, 1, 1),
    "mish_grad": (lambda x, g, w: mish_grad(x, g), _mish_grad_ops, 2, 1),
    "weighted_norm": (lambda x, g, w: weighted_norm(x, w), _weighted_norm_ops, 1, 0),
}


class UserKernels:
    """Time per call (``time_``) and GB/s of the bytes a fused pass moves (``track_``)."""

    params: ClassVar[list] = [BACKENDS, list(CASES), ["kernel", "array_ops"], ["float32"]]
    param_names: ClassVar[list] = ["backend", "case", "impl", "dtype"]
    timeout = 300

    def setup(self, backend, case, impl, dtype):
        self.b = use(backend)
        xp = self.b.xp
        # 2**25 elements (128 MiB of float32) exceed any GPU's L2; the host gets 2**22
        n = 2**25 if self.b.is_device else 2**22
        rows, cols = n // 4096, 4096
        x, g = (random(self.b, (rows, cols), dtype, seed=i) for i in range(2))
        w = xp.abs(random(self.b, cols, dtype, seed=2))  # weights of a norm: not negative
        kernel, ops, read, written = CASES[case]
        self.fn = (lambda: kernel(x, g, w)) if impl == "kernel" else (lambda: ops(xp, x, g, w))
        self.nbytes = (read + written) * x.nbytes
        self.fn()  # warm up: compile, allocate
        sync(self.b)

    def time_call(self, backend, case, impl, dtype):
        self.fn()
        sync(self.b)

    def track_gbps(self, backend, case, impl, dtype):
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            self.fn()
            sync(self.b)
            times.append(time.perf_counter() - t0)
        return self.nbytes / statistics.median(times) / 1e9

    track_gbps.unit = "GB/s"
