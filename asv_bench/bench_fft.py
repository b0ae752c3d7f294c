"""gk.fft against raw numpy.fft, scipy.fft (all cores), raw cupy.fft and PyTorch; the host
engines' first call of a new shape and their steady state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from unittest import mock

import numpy as np

import gpukit as gk

from .common import BACKENDS, Undoable, have, random, sync, use

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


_FIRST_CALL = """
import time
import numpy as np
import gpukit as gk
gk.set_backend("numpy")
x = np.random.default_rng(0).standard_normal({shape}) + 0j
t0 = time.perf_counter()
gk.fft.fft2(x)
print(time.perf_counter() - t0)
"""

#: engine -> the environment selecting it (wisdom off: every process plans from cold)
ENGINES = {
    "scipy": {"GPUKIT_FFT_ENGINE": "scipy"},
    "pyfftw": {"GPUKIT_FFT_ENGINE": "pyfftw", "GPUKIT_FFTW_PLANNER": "estimate"},
    "pyfftw-measure": {"GPUKIT_FFT_ENGINE": "pyfftw", "GPUKIT_FFTW_PLANNER": "measure"},
}


class FFTEngines(Undoable):
    """The numpy backend's engines: the first call of a new shape, and the calls after it.

    ``track_first_call`` runs one ``gk.fft.fft2`` in a fresh interpreter (gpukit already
    imported): the engine's imports and planning, what a script pays once per shape. An
    optional engine must never make the default slower here (it once took seconds per
    shape with FFTW_MEASURE); ``time_fft2`` is the steady state after that call.
    """

    params = (list(ENGINES), ["512x512", "16x256x256"])
    param_names = ("engine", "shape")

    def setup(self, engine, shape):
        if engine.startswith("pyfftw") and not have("pyfftw"):
            raise NotImplementedError("pyFFTW is not installed (the gpukit[fftw] extra)")
        self.env = {**ENGINES[engine], "GPUKIT_FFTW_WISDOM": "off"}
        self.cleanup.enter_context(mock.patch.dict(os.environ, self.env))
        self.backend = use("numpy")
        self.x = random(self.backend, _shape(shape), "complex128")

    def teardown(self, engine, shape):
        self.clean_up()

    def time_fft2(self, engine, shape):
        gk.fft.fft2(self.x)

    def track_first_call(self, engine, shape):
        code = _FIRST_CALL.format(shape=_shape(shape))
        env = {**os.environ, **self.env, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return float(done.stdout.split()[-1])

    track_first_call.unit = "seconds"
