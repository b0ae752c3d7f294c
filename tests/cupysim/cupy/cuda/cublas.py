"""``cupy.cuda.cublas`` (simulated): the part of cupy_backends/cuda/libs/cublas.pyx that sets
a cuBLAS handle's math mode (``cublasGetMathMode``/``cublasSetMathMode``).

CuPy's handles are per thread and per device (cupy/cuda/device.pyx ``_get_handle``), so a
mode set on one thread's handle never reaches another thread's. The mode decides whether
cuBLAS may use TF32 tensor cores where the compute type allows it (cupysim.mathmode).
Loading this module loads cuBLAS (ImportError under ``CUPYSIM_FAIL=libs``).
"""

from __future__ import annotations

from cupysim import libs as _libs
from cupysim import mathmode as _mathmode

_libs.require("cublas")

# cupy_backends/cuda/libs/cublas.pxd: the two modes CuPy names (cublas_api.h has more:
# CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3)
CUBLAS_DEFAULT_MATH = 0
CUBLAS_TENSOR_OP_MATH = 1


class CUBLASError(RuntimeError):
    """cupy_backends/cuda/libs/cublas.pyx: the status's name as the message."""

    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__({7: "CUBLAS_STATUS_INVALID_VALUE"}.get(status, str(status)))

    def __reduce__(self):
        return (type(self), (self.status,))


# CuPy defines it in cupy_backends.cuda.libs.cublas, a package the simulator does not
# provide: the module named here is one pickle can import (CuPy's errors pickle).
CUBLASError.__module__ = "cupy.cuda.cublas"


def getMathMode(handle: int) -> int:
    return _mathmode.mode_of(handle)


def setMathMode(handle: int, mode: int) -> None:
    if not _mathmode.valid(mode):
        raise CUBLASError(7)  # CUBLAS_STATUS_INVALID_VALUE
    _mathmode.set_mode(handle, mode)
