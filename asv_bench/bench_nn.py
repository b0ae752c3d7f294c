"""gk.nn: one training step of an MLP (forward, backward, SGD step).

Beside gpukit, in the same suite: the same step hand-written in the backend's own
namespace (NumPy on the host, CuPy on the GPU) and PyTorch (CPU with the numpy
backend, CUDA with the cupy backend) when importable, with the same weights and data
(``gpukit._bench.mlp``, which ``gpukit bench`` times too). ``TrainStep`` times the
784-256-10 ReLU model; ``TrainStepRatio`` compares it, and 784-256-256-10 GELU and SiLU
models, with its peers in the same run.
"""

from __future__ import annotations

import gpukit as gk
from gpukit._bench import mlp

from . import peers
from .common import BACKENDS, have, sync, use

BATCHES = [32, 256, 2048]

#: activation -> the layer sizes of its model
MODELS = {"ReLU": mlp.SIZES, "GELU": mlp.DEEP, "SiLU": mlp.DEEP}


def _step(backend, impl: str, batch: int, act: str = "ReLU"):
    """One training step of the ``act`` model on ``backend``: ``impl`` "gpukit", "hand"
    (written in the backend's namespace) or "torch" (CPU or CUDA as the backend);
    NotImplementedError where that cannot run here."""
    x_host, y_host = mlp.data(batch)
    if impl == "torch":
        if not have("torch"):
            raise NotImplementedError("torch is not importable")
        import torch

        if backend.is_device and not torch.cuda.is_available():
            raise NotImplementedError("PyTorch sees no GPU")
        device = "cuda" if backend.is_device else "cpu"
        return mlp.torch_step(torch, x_host, y_host, device, act, MODELS[act])
    x, y = gk.asarray(x_host), gk.asarray(y_host)
    if impl == "gpukit":
        return mlp.gpukit_step(x, y, act, MODELS[act])
    if act != "ReLU":
        raise NotImplementedError("the hand-written step is the ReLU model's")
    return mlp.hand_step(backend.xp, x, y, gk.asarray)


class TrainStep:
    """Seconds per training step; ``impl`` gpukit, the hand-written step, or PyTorch."""

    params = (BACKENDS, BATCHES, ["gpukit", "hand", "torch"])
    param_names = ("backend", "batch", "impl")

    def setup(self, backend, batch, impl):
        self.backend = use(backend)
        self.step = _step(self.backend, impl, batch)
        self.step()
        sync(self.backend)

    def time_step(self, backend, batch, impl):
        self.step()
        sync(self.backend)

    # asv keeps one series per version, by default a hash of the source: pinned, because
    # ``_step`` builds the same steps the committed results measured
    time_step.version = "2a0ef38651102dd69e41130250527cc3bd0341675cf93c1431fff53f9f016bb7"


class TrainStepRatio(peers.Comparison):
    """gpukit's training step over the hand-written one or PyTorch's, same run, PyTorch
    with as many threads as NumPy's BLAS.

    Targets against PyTorch: on the host, the ReLU model at 0.8, 0.9 and 1.0 of its time
    at batch 32, 256 and 2048, the GELU and SiLU models at 1.2, 1.0 and 1.0; on a GPU,
    no slower than PyTorch CUDA.
    """

    params = [BACKENDS, ["hand", "torch"], list(MODELS), BATCHES]
    param_names = ["backend", "peer", "act", "batch"]
    pairs = 15  # a step's time wanders between speed states on a small VM: more pairs

    def setup(self, backend, peer, act, batch):
        self.backend = use(backend)
        self.peer = _step(self.backend, peer, batch, act)
        if peer == "torch":
            import torch

            self.torch_threads_as_blas(torch)
        self.ours = _step(self.backend, "gpukit", batch, act)

    def track_ratio(self, backend, peer, act, batch):
        return self.ratio(self.ours, self.peer, self.backend.synchronize)

    track_ratio.unit = "ratio"

    def target(self, backend, peer, act, batch):
        if peer != "torch":
            return None
        if backend != "numpy":
            return 1.0
        return {32: 0.8, 256: 0.9, 2048: 1.0}[batch] if act == "ReLU" else {32: 1.2}.get(batch, 1.0)
