"""STAND-IN for sim-core's ``cupysim.runtime`` (same signatures, SIM_CONTRACT.md).

sim-kernels codes against this interface; sim-core's real module replaces this
file when the branches merge. It models only what the kernel side needs to run:
a per-thread current device, the H100 profile, operands of the stand-in arrays,
CuPy's peer-access placement rule at launch, and driver errors.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Operand",
    "allocate",
    "config",
    "current_device",
    "device_profile",
    "launch",
    "operand",
    "raise_cuda_driver_error",
]


class _Config:
    def __init__(self) -> None:
        env = os.environ
        self.devices = int(env.get("CUPYSIM_DEVICES", "2"))
        self.peer_access = env.get("CUPYSIM_PEER_ACCESS", "1") == "1"
        self.nccl = env.get("CUPYSIM_NCCL", "1") == "1"
        self.memory = int(env.get("CUPYSIM_MEMORY", str(80 * 2**30)))
        self.sanitize = env.get("CUPYSIM_SANITIZE") or None
        self.fail = env.get("CUPYSIM_FAIL") or None


config = _Config()
_state = threading.local()


def current_device() -> int:
    return getattr(_state, "device", 0)


def set_current_device(device: int) -> None:
    _state.device = device


_H100 = {
    "MultiProcessorCount": 132,
    "MaxThreadsPerBlock": 1024,
    "MaxBlockDimX": 1024,
    "MaxBlockDimY": 1024,
    "MaxBlockDimZ": 64,
    "MaxGridDimX": 2**31 - 1,
    "MaxGridDimY": 65535,
    "MaxGridDimZ": 65535,
    "MaxSharedMemoryPerBlock": 49152,
    "MaxSharedMemoryPerBlockOptin": 232448,
    "WarpSize": 32,
}


def device_profile(device: int) -> dict:
    return dict(_H100)


@dataclass(frozen=True)
class Operand:
    ptr: int
    nbytes: int
    device: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    buffer: Any


def operand(x: Any) -> Operand:
    base = x
    while isinstance(base.base, np.ndarray):
        base = base.base
    return Operand(
        x.ctypes.data, x.nbytes, x._device_id, tuple(x.shape), tuple(x.strides), x.dtype, id(base)
    )


@contextlib.contextmanager
def launch(name: str, reads: list, writes: list):
    # cupy/_core/_kernel.pyx: _check_peer_access
    dev = current_device()
    for x in (*reads, *writes):
        if x._device_id != dev and not config.peer_access:
            raise ValueError(
                f"The device where the array resides ({x._device_id}) is different from the "
                f"current device ({dev}). Peer access is unavailable between these devices."
            )
    yield


def raise_cuda_driver_error(status_name: str, message: str) -> None:
    from cupy.cuda import driver

    raise driver.CUDADriverError(f"{status_name}: {message}")


def allocate(nbytes: int, device: int) -> np.ndarray:
    return np.empty(nbytes, dtype=np.uint8)
