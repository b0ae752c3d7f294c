"""gk.nn: one training step of a 784-256-10 ReLU MLP (forward, backward, SGD step).

Beside gpukit, in the same suite: the same step hand-written in the backend's own
namespace (NumPy on the host, CuPy on the GPU) and PyTorch (CPU with the numpy
backend, CUDA with the cupy backend) when importable, with the same weights and data.
"""

from __future__ import annotations

import gpukit as gk
from gpukit._bench import mlp

from .common import BACKENDS, have, sync, use


def _torch_step(backend, x, y):
    import torch

    if backend.is_device and not torch.cuda.is_available():
        raise NotImplementedError("PyTorch sees no GPU")
    device = "cuda" if backend.is_device else "cpu"
    return mlp.torch_step(torch, gk.to_numpy(x), gk.to_numpy(y), device)


class TrainStep:
    """Seconds per training step; ``impl`` gpukit, the hand-written step, or PyTorch."""

    params = (BACKENDS, [32, 256, 2048], ["gpukit", "hand", "torch"])
    param_names = ("backend", "batch", "impl")

    def setup(self, backend, batch, impl):
        self.backend = use(backend)
        if impl == "torch" and not have("torch"):
            raise NotImplementedError("torch is not importable")
        x_host, y_host = mlp.data(batch)
        x, y = gk.asarray(x_host), gk.asarray(y_host)
        if impl == "gpukit":
            self.step = mlp.gpukit_step(x, y)
        elif impl == "hand":
            self.step = mlp.hand_step(self.backend.xp, x, y, gk.asarray)
        else:
            self.step = _torch_step(self.backend, x, y)
        self.step()
        sync(self.backend)

    def time_step(self, backend, batch, impl):
        self.step()
        sync(self.backend)
