"""``cupyx.profiler`` (simulated): ``benchmark`` only.

cupyx/profiler/_time.py times each repeat with host ``perf_counter`` and, per device, CUDA
events around the call. Simulated kernels run on the host as they are issued, so both
clocks read host time here: the API and the result's shape are CuPy's, the numbers say
nothing about a GPU (what the simulator cannot show, docs/contributing_gpu.rst).
"""

from __future__ import annotations

import math
import time

import cupy
import numpy as np

__all__ = ["benchmark"]


class _PerfCaseResult:
    """cupyx/profiler/_time.py ``_PerfCaseResult``: row 0 CPU times, then one row per device."""

    def __init__(self, name: str, ts: np.ndarray, devices: tuple[int, ...]) -> None:
        self.name = name
        self._ts = ts
        self._devices = devices

    @property
    def cpu_times(self) -> np.ndarray:
        return self._ts[0]

    @property
    def gpu_times(self) -> np.ndarray:
        return self._ts[1:]

    def __repr__(self) -> str:
        us = self._ts * 1e6
        parts = [f"CPU: {us[0].mean():9.03f} us"]
        parts += [f"GPU-{d}: {us[1 + i].mean():9.03f} us" for i, d in enumerate(self._devices)]
        return f"{self.name:<20s}:" + " ".join(f"    {p}" for p in parts)


def benchmark(
    func, args=(), kwargs={}, n_repeat=10000, *, name=None, n_warmup=10,  # noqa: B006 (CuPy's)
    max_duration=math.inf, devices=None,
):  # fmt: skip
    """cupyx/profiler/_time.py ``benchmark``: warm up, then time each call, synchronising
    the timed devices after it (the events' ``synchronize``)."""
    name = func.__name__ if name is None else name
    devices = (cupy.cuda.Device().id,) if devices is None else tuple(devices)
    for _ in range(n_warmup):
        func(*args, **kwargs)
    times: list[float] = []
    start_all = time.perf_counter()
    for _ in range(n_repeat):
        t0 = time.perf_counter()
        func(*args, **kwargs)
        for d in devices:
            cupy.cuda.Device(d).synchronize()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start_all > max_duration:
            break
    ts = np.array([times] * (1 + len(devices)))
    return _PerfCaseResult(name, ts, devices)
