"""The simulator's configuration: ``CUPYSIM_*`` environment variables, read once at import.

=====================  =========================================================================
``CUPYSIM_DEVICES``    number of simulated GPUs (default 2; 0 = a driver that sees no device)
``CUPYSIM_PEER_ACCESS`` 1 (default): every pair of devices can access each other's memory; 0: none
``CUPYSIM_NCCL``       1 (default): ``cupy.cuda.nccl`` is available; 0: as a CuPy without libnccl
``CUPYSIM_MEMORY``     bytes per device (default an H100 80GB: 81,559 MiB); real storage is host RAM
``CUPYSIM_SANITIZE``   ``address`` or ``thread``: kernels are built with that sanitizer; under
                       ``address`` every allocation is its own exact-size ``malloc``
``CUPYSIM_FAIL``       ``driver``: no usable driver (``cudaErrorInsufficientDriver``);
                       ``libs``: driver and devices present, cuBLAS/cuFFT/cuSOLVER/NVRTC missing
``CUPYSIM_KERNEL_THREADS`` host threads running a kernel launch's blocks (default: one per
                       usable core)
``CUPYSIM_CACHE``      directory of compiled kernel libraries (default ``~/.cache/cupysim``)
``CUPYSIM_DEFER``      1: each stream's work is queued and runs only when something needs it,
                       streams interleaved at random (cupysim/defer.py); 0 (default): at once
``CUPYSIM_DEFER_SEED`` the seed of that random interleaving (default 0)
=====================  =========================================================================

``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1`` (CuPy's own variable) makes the per-thread default
stream the default stream, as ``cupy_backends/cuda/stream.pyx`` reads it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: An H100 SXM5 80GB reports 81,559 MiB of global memory (``nvidia-smi``, ``totalGlobalMem``).
H100_MEMORY = 81_559 * 2**20


def _flag(env: dict[str, str], name: str, default: bool) -> bool:
    value = env.get(name, "").strip()
    if value == "":
        return default
    if value not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, not {value!r}")
    return value == "1"


def _choice(env: dict[str, str], name: str, allowed: tuple[str, ...]) -> str | None:
    value = env.get(name, "").strip()
    if value == "":
        return None
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)} (or unset), not {value!r}")
    return value


def _count(env: dict[str, str], name: str, default: int, minimum: int) -> int:
    value = env.get(name, "").strip()
    if value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {number}")
    return number


@dataclass(frozen=True)
class Config:
    devices: int = 2
    peer_access: bool = True
    nccl: bool = True
    memory: int = H100_MEMORY
    sanitize: str | None = None
    fail: str | None = None
    per_thread_default_stream: bool = False
    kernel_threads: int | None = None
    cache: str | None = None
    defer: bool = False
    defer_seed: int = 0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ if env is None else env)
        return cls(
            devices=_count(env, "CUPYSIM_DEVICES", 2, 0),
            peer_access=_flag(env, "CUPYSIM_PEER_ACCESS", True),
            nccl=_flag(env, "CUPYSIM_NCCL", True),
            memory=_count(env, "CUPYSIM_MEMORY", H100_MEMORY, 1),
            sanitize=_choice(env, "CUPYSIM_SANITIZE", ("address", "thread")),
            fail=_choice(env, "CUPYSIM_FAIL", ("driver", "libs")),
            # cupy_backends/cuda/stream.pyx: _ptds = int(os.environ.get(...)) != 0, read once
            per_thread_default_stream=int(env.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0")) != 0,
            kernel_threads=_count(env, "CUPYSIM_KERNEL_THREADS", 0, 1) or None,
            cache=env.get("CUPYSIM_CACHE", "").strip() or None,
            defer=_flag(env, "CUPYSIM_DEFER", False),
            defer_seed=_count(env, "CUPYSIM_DEFER_SEED", 0, 0),
        )


config = Config.from_env()
