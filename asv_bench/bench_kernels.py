"""gk.kernels: fused kernels against the unfused expression and a device copy.

Every memory-bound kernel is timed beside (a) the unfused expression it replaces,
written in the backend's own namespace (CuPy on the GPU, NumPy on the host), and
(b) a device-to-device copy of the same bytes measured in the same run: the
``track_*`` results give GB/s (minimum bytes read plus written over time) and the
fraction of the copy's bandwidth. On the host the kernels are the NumPy
references and the peer is hand-written NumPy; ``HostVsTorch`` times every host
kernel beside its PyTorch CPU peer. The tiled matmul reports TFLOP/s
against cuBLAS float32 (CuPy's ``a @ b``; TF32 stays off unless CUPY_TF32=1).
"""

from __future__ import annotations

import math
import statistics
import time
from typing import ClassVar

import numpy as np

import gpukit as gk
from gpukit._bench.kernels import KERNELS as HOST_KERNELS
from gpukit._bench.kernels import OPTIMIZERS, erf, pair, unfused_bias_gelu

from . import peers
from .common import BACKENDS, have, random, sync, use

KERNELS = [
    "bias_relu",
    "bias_gelu",
    "bias_gelu_backward",
    "sgd_momentum",
    "adam",
    "xent",
    "xent_backward",
]
IMPLS = ["gk", "unfused", "copy"]


def _gelu_backward_unfused(xp, gy, x, b):
    z = x + b
    d = 0.5 * (1 + erf(xp)(z / math.sqrt(2))) + z * xp.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    gx = gy * d
    return gx, gx.sum(axis=0)


def _adam_unfused(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    # torch.optim.Adam's single-tensor sequence, one library call per operation
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    denom = (v**0.5) / math.sqrt(1 - b2**t)
    denom += eps
    p -= (lr / (1 - b1**t)) * (m / denom)


def _xent_unfused(xp, logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = xp.log(s[:, 0]) - z[xp.arange(z.shape[0]), labels]
    return loss, e / s


def _xent_backward_unfused(xp, probs, labels, grad_loss):
    g = probs.copy()
    g[xp.arange(g.shape[0]), labels] -= 1
    g *= grad_loss[:, None]
    return g


class MemoryBound:
    """Time per call (``time_``) and GB/s and fraction of copy bandwidth (``track_``)."""

    params: ClassVar[list] = [BACKENDS, KERNELS, IMPLS]
    param_names: ClassVar[list] = ["backend", "kernel", "impl"]
    timeout = 300

    def setup(self, backend, kernel, impl):
        self.b = use(backend)
        xp = self.b.xp
        # 2**25 float32 (128 MiB) exceeds any GPU's L2; the host gets 2**22.
        n = 2**25 if self.b.is_device else 2**22
        rows, cols = n // 4096, 4096
        f = {}
        if kernel.startswith("bias"):
            x, b, gy = (
                random(self.b, s, seed=i) for i, s in enumerate([(rows, cols), cols, (rows, cols)])
            )
            # backward: grad_y, x and grad_x, then grad_x reread by the bias-gradient sum
            arrays, moved = [x, gy], (4 if kernel.endswith("backward") else 2)
            f["gk"] = {
                "bias_relu": lambda: gk.kernels.bias_activation(x, b, "relu"),
                "bias_gelu": lambda: gk.kernels.bias_activation(x, b, "gelu"),
                "bias_gelu_backward": lambda: gk.kernels.bias_activation_backward(gy, x, b, "gelu"),
            }[kernel]
            f["unfused"] = {
                "bias_relu": lambda: xp.maximum(x + b, 0),
                "bias_gelu": lambda: unfused_bias_gelu(xp, x, b),
                "bias_gelu_backward": lambda: _gelu_backward_unfused(xp, gy, x, b),
            }[kernel]
        elif kernel in ("sgd_momentum", "adam"):
            p, g, m, v = (random(self.b, n, seed=i) for i in range(4))
            v *= v
            arrays, moved = [p], (5 if kernel == "sgd_momentum" else 7)
            if kernel == "sgd_momentum":
                f["gk"] = lambda: gk.kernels.sgd_update(p, g, m, lr=1e-3, momentum=0.9)

                def sgd_unfused():
                    m.__imul__(0.9)
                    m.__iadd__(g)
                    p.__isub__(1e-3 * m)

                f["unfused"] = sgd_unfused
            else:
                f["gk"] = lambda: gk.kernels.adam_update(p, g, m, v, step=10, lr=1e-3)
                f["unfused"] = lambda: _adam_unfused(p, g, m, v, 10)
        else:
            logits = random(self.b, (rows, cols), seed=0)
            labels = xp.asarray(np.random.default_rng(1).integers(0, cols, rows))
            probs = gk.kernels.softmax_cross_entropy(logits, labels)[1]
            grad_loss = xp.full(rows, 1.0 / rows, dtype=xp.float32)
            arrays, moved = [logits], 2
            if kernel == "xent":
                f["gk"] = lambda: gk.kernels.softmax_cross_entropy(logits, labels)
                f["unfused"] = lambda: _xent_unfused(xp, logits, labels)
            else:
                f["gk"] = lambda: gk.kernels.softmax_cross_entropy_backward(
                    probs, labels, grad_loss
                )
                f["unfused"] = lambda: _xent_backward_unfused(xp, probs, labels, grad_loss)
        src = arrays[0]
        dst = xp.empty_like(src)
        f["copy"] = lambda: xp.copyto(dst, src)
        self.fn = f[impl]
        # bytes the fused kernel must move at least; the copy moves 2 arrays
        self.nbytes = (2 if impl == "copy" else moved) * src.nbytes
        self.fn()  # warm up: compile, plan, allocate
        sync(self.b)

    def time_call(self, backend, kernel, impl):
        self.fn()
        sync(self.b)

    def _seconds(self) -> float:
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            self.fn()
            sync(self.b)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def track_gbps(self, backend, kernel, impl):
        return self.nbytes / self._seconds() / 1e9

    track_gbps.unit = "GB/s"


class HostVsTorch:
    """Every host kernel (numpy backend) and its PyTorch CPU peer, in the same suite, at
    PyTorch's default thread count and BLAS's (gpukit._bench.kernels defines the pairs;
    ``HostVsTorchRatio`` gives the same-run ratios). ``size``: the side of the square
    input, or for the updates ``size**2`` parameters (1M, 4M, 16M). ``gpukit-ufuncs``:
    gpukit without its compiled host kernels (an install without a C compiler)."""

    params: ClassVar[list] = [
        HOST_KERNELS,
        ["gpukit", "gpukit-ufuncs", "torch"],
        ["float32", "float64"],
        [64, 256, 1024, 2048, 4096],
    ]
    param_names: ClassVar[list] = ["kernel", "impl", "dtype", "size"]
    timeout = 300

    def setup(self, kernel, impl, dtype, size):
        from gpukit._host import native

        ours, peer = _host_pair(kernel, dtype, size)
        self.fn = peer if impl == "torch" else ours
        if impl == "gpukit-ufuncs":
            self.fn = _with(native.disabled, ours)
        self.fn()

    def time_kernel(self, kernel, impl, dtype, size):
        self.fn()


def _with(context, fn):
    """``fn`` called inside ``context()``."""

    def call():
        with context():
            return fn()

    return call


def _host_pair(kernel: str, dtype: str, size: int):
    """``(gpukit, pytorch)`` calls of a host kernel on the numpy backend; NotImplementedError
    without PyTorch, and for the updates below 1M parameters."""
    if not have("torch"):
        raise NotImplementedError("torch not installed")
    if kernel in OPTIMIZERS and size < 1024:
        raise NotImplementedError("the updates are timed at 1M-16M parameters")
    import torch

    use("numpy")
    n = size * size if kernel in OPTIMIZERS else size
    return pair(torch, kernel, n, np.dtype(dtype).type)


class HostVsTorchRatio(peers.Comparison):
    """Every host kernel's time over its PyTorch CPU peer's (``HostVsTorch``'s pairs), same
    run, PyTorch with as many threads as NumPy's BLAS. Target: 1.5x at every size."""

    params: ClassVar[list] = [HostVsTorch.params[0], *HostVsTorch.params[2:]]
    param_names: ClassVar[list] = ["kernel", "dtype", "size"]

    def setup(self, kernel, dtype, size):
        self.ours, self.peer = _host_pair(kernel, dtype, size)
        import torch

        self.torch_threads_as_blas(torch)

    def track_ratio(self, kernel, dtype, size):
        return self.ratio(self.ours, self.peer)

    track_ratio.unit = "ratio"

    def target(self, kernel, dtype, size):
        return 1.5


class MatmulTiled:
    """TFLOP/s of gk.kernels.matmul_tiled against cuBLAS float32 (numpy: BLAS)."""

    params: ClassVar[list] = [BACKENDS, ["gk", "library"], [1024, 4096]]
    param_names: ClassVar[list] = ["backend", "impl", "n"]

    def setup(self, backend, impl, n):
        self.b = use(backend)
        if not self.b.is_device and n > 1024:
            raise NotImplementedError("host BLAS at n=4096 is not what this benchmark is about")
        a, b = random(self.b, (n, n), seed=0), random(self.b, (n, n), seed=1)
        self.fn = (lambda: gk.kernels.matmul_tiled(a, b)) if impl == "gk" else (lambda: a @ b)
        self.flops = 2.0 * n**3
        self.fn()
        sync(self.b)

    def time_matmul(self, backend, impl, n):
        self.fn()
        sync(self.b)

    def track_tflops(self, backend, impl, n):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            self.fn()
            sync(self.b)
            times.append(time.perf_counter() - t0)
        return self.flops / statistics.median(times) / 1e12

    track_tflops.unit = "TFLOP/s"
