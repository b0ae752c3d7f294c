"""``cupy.cuda.driver``: the driver API errors (cupy_backends/cuda/api/driver.pyx)."""

from __future__ import annotations

from cupysim.errors import DRIVER_STATUS, CUDADriverError  # noqa: F401

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = DRIVER_STATUS["CUDA_ERROR_INVALID_VALUE"]
CUDA_ERROR_NOT_FOUND = DRIVER_STATUS["CUDA_ERROR_NOT_FOUND"]


def get_build_version() -> int:
    from cupysim import profile

    return profile.RUNTIME_VERSION


def driverGetVersion() -> int:
    from . import runtime

    return runtime.driverGetVersion()


def check_status(status: int) -> None:
    if status != 0:
        raise CUDADriverError(status)
