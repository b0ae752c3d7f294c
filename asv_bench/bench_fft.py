"""gk.fft against raw numpy.fft, scipy.fft (all cores), raw cupy.fft and PyTorch."""

from __future__ import annotations

import time

import numpy as np

import gpukit as gk

from . import peers
from .common import BACKENDS, have, host_random, random, sync, use

# (batch, n): a stack of n x n 2-D transforms
SHAPES = ["16x512x512", "1x2048x2048", "256x64x64"]
DTYPES = ["complex64", "complex128"]


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split("x"))


def _flops(shape: tuple[int, ...]) -> float:
    """The conventional 5 N log2 N flop count of a complex FFT over the last two axes."""
    n = shape[-1] * shape[-2]
    return 5.0 * n * np.log2(n) * int(np.prod(shape[:-2]))


class FFT2:
    """``gk.fft.fft2`` of a batch, and the backend's own library on the same data."""

    params = (BACKENDS, SHAPES, DTYPES)
    param_names = ("backend", "shape", "dtype")

    def setup(self, backend, shape, dtype):
        self.backend = use(backend)
        self.x = random(self.backend, _shape(shape), dtype)

    def time_gpukit(self, backend, shape, dtype):
        gk.fft.fft2(self.x)
        sync(self.backend)

    def time_raw_xp_fft(self, backend, shape, dtype):
        """numpy.fft (single-threaded pocketfft) on the host, cupy.fft on the GPU."""
        self.backend.xp.fft.fft2(self.x)
        sync(self.backend)

    def time_scipy_fft_all_workers(self, backend, shape, dtype):
        if self.backend.is_device:
            raise NotImplementedError("scipy.fft is the host peer")
        import scipy.fft

        scipy.fft.fft2(self.x, workers=-1)

    def track_gflops(self, backend, shape, dtype):
        gk.fft.fft2(self.x)
        sync(self.backend)
        t0 = time.perf_counter()
        for _ in range(3):
            gk.fft.fft2(self.x)
        sync(self.backend)
        return 3 * _flops(_shape(shape)) / (time.perf_counter() - t0) / 1e9

    track_gflops.unit = "GFLOP/s"


class RFFT2:
    """``gk.fft.rfft2`` of a float32/float64 batch (complex64/complex128 half spectra)."""

    params = (BACKENDS, ["16x512x512"], ["float32", "float64"])
    param_names = ("backend", "shape", "dtype")

    def setup(self, backend, shape, dtype):
        self.backend = use(backend)
        self.x = random(self.backend, _shape(shape), dtype)

    def time_gpukit(self, backend, shape, dtype):
        gk.fft.rfft2(self.x)
        sync(self.backend)

    def time_raw_xp_fft(self, backend, shape, dtype):
        self.backend.xp.fft.rfft2(self.x)
        sync(self.backend)


class FFT2Torch:
    """PyTorch CPU peer for the host figures."""

    params = (SHAPES, DTYPES)
    param_names = ("shape", "dtype")

    def setup(self, shape, dtype):
        if not have("torch"):
            raise NotImplementedError("torch not installed")
        import torch

        rng = np.random.default_rng(0)
        s = _shape(shape)
        x = (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
        self.x = torch.from_numpy(x)
        self.torch = torch

    def time_torch_cpu(self, shape, dtype):
        self.torch.fft.fft2(self.x)


#: peer -> (the ``IMPLS`` entry it runs as, its fft2 given that runner's module)
FFT2_PEERS = {
    "numpy.fft": ("numpy", lambda xp: xp.fft.fft2),
    "scipy.fft": ("numpy", lambda xp: _scipy_fft2_all_workers),
    "torch-cpu": ("torch-cpu", lambda xp: xp.fft.fft2),
    "cupy.fft": ("cupy", lambda xp: xp.fft.fft2),
    "torch-cuda": ("torch-cuda", lambda xp: xp.fft.fft2),
}


def _scipy_fft2_all_workers(x):
    import scipy.fft

    return scipy.fft.fft2(x, workers=-1)


class FFT2Ratio(peers.Comparison):
    """``gk.fft.fft2`` over a peer's on the same batch (gpukit on the peer's device).

    Targets: a third of single-threaded ``numpy.fft``'s time (gpukit uses every core) and
    within 5% of ``scipy.fft`` on all workers, the library it calls.
    """

    params = [list(FFT2_PEERS), ["16x512x512"], ["complex64"]]
    param_names = ["peer", "shape", "dtype"]

    def setup(self, peer, shape, dtype):
        name, fft2 = FFT2_PEERS[peer]
        ours, other = peers.sides(name)
        host = host_random(_shape(shape), dtype)
        x, y = ours.put(host), other.put(host)
        peer_fft2 = fft2(other.xp)
        self.ours = lambda: gk.fft.fft2(x)
        self.peer = lambda: peer_fft2(y)
        self.sync = peers.sync_both(ours, other)

    def track_ratio(self, peer, shape, dtype):
        return self.ratio(self.ours, self.peer, self.sync)

    track_ratio.unit = "ratio"

    def target(self, peer, shape, dtype):
        return {"numpy.fft": 0.333, "scipy.fft": 1.05}.get(peer)
