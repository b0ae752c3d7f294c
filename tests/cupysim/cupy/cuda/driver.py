"""``cupy.cuda.driver``: the driver API errors (cupy_backends/cuda/api/driver.pyx)."""

from __future__ import annotations

from cupysim.errors import DRIVER_STATUS as _STATUS
from cupysim.errors import CUDADriverError

CUDA_ERROR_INVALID_VALUE = _STATUS["CUDA_ERROR_INVALID_VALUE"]


def get_build_version() -> int:
    from cupysim import profile

    return profile.RUNTIME_VERSION


def check_status(status: int) -> None:
    if status != 0:
        raise CUDADriverError(status)


def _is_cuda_python() -> bool:
    """driver.pyx ``_is_cuda_python``: False, CuPy's bindings are its own Cython ones."""
    return False
