"""Sharded operations on 1..N devices, and their parallel efficiency.

Devices are the backend's: on numpy, N virtual CPU devices (the machine's cores
bound the speed-up, so these figures measure sharding's overhead); on cupy, the
GPUs present (a count above them is skipped). Parallel efficiency is
``T(1 device) / (N * T(N devices))``; the multi-GPU target is 0.9 for matmul and
batched FFT at sizes that fill each device (docs/multi_device.rst). Peers: the
unsharded raw NumPy / CuPy call in the same suite.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import gpukit as gk
from gpukit import _registry

from .common import BACKENDS, sync, use

DEVICES = [1, 2, 4]
OPS = ["matmul", "fft", "sum"]
SHAPES = {"matmul": (2048, 2048), "fft": (4096, 1024), "sum": (4096, 4096)}


def _backend(name: str, devices: int):
    base = use(name)
    if name == "numpy":
        return type(_registry.load("numpy"))(devices)
    if base.device_count() < devices:
        raise NotImplementedError(f"{devices} devices asked, {base.device_count()} present")
    return base


def _setup_op(backend, op: str, devices: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPES[op]).astype(np.float32)
    with gk.use_backend(backend):
        sx = gk.shard(x, devices=range(devices))
        b = gk.asarray(rng.standard_normal((x.shape[1], x.shape[1])).astype(np.float32))
        run = {
            "matmul": lambda: gk.sharding.matmul(sx, b),
            "fft": lambda: gk.sharding.fft(sx, axis=-1),
            "sum": lambda: gk.sharding.sum(sx),
        }[op]
        run()  # replicas, plans, worker threads
    return run, x, b


class ShardedOps:
    params = (BACKENDS, OPS, DEVICES)
    param_names = ("backend", "op", "devices")

    def setup(self, name, op, devices):
        self.backend = _backend(name, devices)
        self.run, _, _ = _setup_op(self.backend, op, devices)

    def time_sharded(self, name, op, devices):
        with gk.use_backend(self.backend):
            self.run()
            sync(self.backend)


class Unsharded:
    """The raw library call on one device: the peer every sharded figure is read against."""

    params = (BACKENDS, OPS)
    param_names = ("backend", "op")

    def setup(self, name, op):
        backend = use(name)
        _, x, b = _setup_op(_backend(name, 1), op, 1)
        xp = backend.xp
        x = xp.asarray(x)
        b = xp.asarray(b)
        self.backend = backend
        self.run = {
            "matmul": lambda: x @ b,
            "fft": lambda: xp.fft.fft(x, axis=-1),
            "sum": lambda: xp.sum(x),
        }[op]

    def time_raw(self, name, op):
        self.run()
        sync(self.backend)


def _median_time(backend, run, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with gk.use_backend(backend):
            run()
            sync(backend)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class ParallelEfficiency:
    params = (BACKENDS, ["matmul", "fft"], [2, 4])
    param_names = ("backend", "op", "devices")
    unit = "T1 / (N * TN)"

    def setup(self, name, op, devices):
        self.one = _backend(name, 1)
        self.many = _backend(name, devices)

    def track_efficiency(self, name, op, devices):
        run1, _, _ = _setup_op(self.one, op, 1)
        run_n, _, _ = _setup_op(self.many, op, devices)
        return _median_time(self.one, run1) / (devices * _median_time(self.many, run_n))
